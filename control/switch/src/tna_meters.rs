//! The register layout of Canary's meters on TNA, and the decode of one pipe's registers into a
//! [`MeterSnapshot`].
//!
//! On TNA a meter row is two registers of `2 × width` cells (`p4src/tna/meter_row.p4`), shared
//! by both parities: cell `parity × width + column` is that parity's bucket.
//! `<control>.{upstream,downstream}_meter.meter.row{r}.id_reg` holds the ID of the rule that
//! owns the bucket (0 = empty; [`RuleIds`] maps it back to the flow, and for the DSM to the
//! pathBF too), `...state_reg` the pair `{dirty, count}`. HashPipe is
//! `<control>.hashpipe.stage{s}.count_reg` for every stage, and `fp_reg` copies under
//! `stage{s}` or `stage{s}_fp` where a stage keeps one (`p4src/tna/hashpipe.p4`); all are cleared
//! every epoch and never read.
//!
//! [`TnaMeterLayout`] resolves those names once from the register tables of `bfrt.json` and
//! refuses a program with a meter register it does not understand, as the BMv2 layout does.

use canary_core::fabric::{MeterSnapshot, Parity};
use canary_core::sketch::{Dsm, DsmBucket, MeterConfig, Usm, UsmBucket};
use canary_core::topo::SwitchIx;

use crate::bmv2_meters::{classify_all, field as register, numbered, HarvestError, LayoutError};
use crate::rule_ids::{RuleIds, RuleKey};

/// Registers of a meter row, in the order of [`TnaMeterLayout::meter_names`].
pub const ROW_REGISTERS: [&str; 2] = ["id", "state"];
/// Registers of a HashPipe stage (`count` in every stage, `fp` in some).
pub const HASHPIPE_REGISTERS: [&str; 2] = ["fp", "count"];

const USM_CONTROL: &str = "upstream_meter";
const DSM_CONTROL: &str = "downstream_meter";
const HASHPIPE_CONTROL: &str = "hashpipe";
/// The meter instance inside each meter control (`CanaryMeter() meter;`).
const METER_INSTANCE: &str = "meter";

/// Where a register sits.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    /// (is DSM, row, register).
    Meter(bool, usize, &'static str),
    /// (stage, register).
    HashPipe(usize, &'static str),
}

impl Slot {
    fn key(&self) -> String {
        match self {
            Slot::Meter(dsm, r, f) => {
                let c = if *dsm { DSM_CONTROL } else { USM_CONTROL };
                format!("{c}.{METER_INSTANCE}.row{r}.{f}_reg")
            }
            Slot::HashPipe(s, f) => format!("{HASHPIPE_CONTROL}.stage{s}.{f}_reg"),
        }
    }
}

/// Classifies a fully qualified register name. `Ok(None)`: not one of ours.
fn classify(name: &str) -> Result<Option<Slot>, LayoutError> {
    let segs: Vec<&str> = name.split('.').collect();
    let Some(at) = segs
        .iter()
        .position(|s| [USM_CONTROL, DSM_CONTROL, HASHPIPE_CONTROL].contains(s))
    else {
        return Ok(None);
    };
    let rest = &segs[at + 1..];
    let slot = match (segs[at], rest) {
        (HASHPIPE_CONTROL, [stage, f]) => numbered(stage.trim_end_matches("_fp"), "stage")
            .zip(register(f, &HASHPIPE_REGISTERS))
            .map(|(s, f)| Slot::HashPipe(s, f)),
        (HASHPIPE_CONTROL, _) => None,
        (control, [inst, row, f]) if *inst == METER_INSTANCE => numbered(row, "row")
            .zip(register(f, &ROW_REGISTERS))
            .map(|(r, f)| Slot::Meter(control == DSM_CONTROL, r, f)),
        _ => None,
    };
    slot.map(Some).ok_or_else(|| LayoutError::Unexpected {
        register: name.to_string(),
        expected: match segs[at] {
            HASHPIPE_CONTROL => format!(
                "{HASHPIPE_CONTROL}.stage<n>.{{{}}}_reg",
                HASHPIPE_REGISTERS.join(",")
            ),
            c => format!(
                "{c}.{METER_INSTANCE}.row<n>.{{{}}}_reg",
                ROW_REGISTERS.join(",")
            ),
        },
    })
}

/// The resolved register names of the TNA meters and HashPipe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TnaMeterLayout {
    usm: MeterConfig,
    dsm: MeterConfig,
    /// USM rows × [`ROW_REGISTERS`], then DSM rows × [`ROW_REGISTERS`].
    meters: Vec<String>,
    hashpipe: Vec<String>,
}

impl TnaMeterLayout {
    /// From `(fully qualified name, size)` of every register table in the program.
    pub fn from_registers<'a>(
        registers: impl IntoIterator<Item = (&'a str, usize)>,
    ) -> Result<Self, LayoutError> {
        let found = classify_all(registers, classify, Slot::key)?;
        let take = |slot: Slot| {
            found
                .get(&slot)
                .copied()
                .ok_or_else(|| LayoutError::Missing { key: slot.key() })
        };
        let mut meters = Vec::new();
        let mut configs = Vec::new();
        for (dsm, meter) in [(false, "USM"), (true, "DSM")] {
            let rows = (0..)
                .take_while(|&r| found.contains_key(&Slot::Meter(dsm, r, "id")))
                .count();
            let mut cells = None;
            for r in 0..rows.max(1) {
                for &f in &ROW_REGISTERS {
                    let (name, size) = take(Slot::Meter(dsm, r, f))?;
                    let want = *cells.get_or_insert(size);
                    if size != want || size % 2 != 0 {
                        return Err(LayoutError::Size {
                            register: name.to_string(),
                            size,
                            expected: want + want % 2,
                        });
                    }
                    meters.push(name.to_string());
                }
            }
            // Two parity halves per register.
            let config = MeterConfig::new(rows, cells.unwrap_or(0) / 2)
                .map_err(|source| LayoutError::Config { meter, source })?;
            configs.push(config);
        }
        let stages = (0..)
            .take_while(|&s| found.contains_key(&Slot::HashPipe(s, "count")))
            .count();
        let mut hashpipe = Vec::new();
        for s in 0..stages.max(1) {
            hashpipe.push(take(Slot::HashPipe(s, "count"))?.0.to_string());
            if let Some((name, _)) = found.get(&Slot::HashPipe(s, "fp")) {
                hashpipe.push(name.to_string());
            }
        }
        if let Some((_, (extra, _))) = found
            .iter()
            .find(|(_, (n, _))| !meters.iter().chain(&hashpipe).any(|m| m == n))
        {
            return Err(LayoutError::Unexpected {
                register: extra.to_string(),
                expected: "rows and stages numbered from 0 without gaps".into(),
            });
        }
        Ok(TnaMeterLayout {
            usm: configs[0],
            dsm: configs[1],
            meters,
            hashpipe,
        })
    }

    pub fn usm_config(&self) -> MeterConfig {
        self.usm
    }

    pub fn dsm_config(&self) -> MeterConfig {
        self.dsm
    }

    /// Every meter register (both parities live in each): USM rows × [`ROW_REGISTERS`], then
    /// DSM rows × [`ROW_REGISTERS`].
    pub fn meter_names(&self) -> &[String] {
        &self.meters
    }

    /// HashPipe's registers: cleared every epoch, never read.
    pub fn hashpipe_names(&self) -> &[String] {
        &self.hashpipe
    }

    /// The cells of `parity` in the USM's registers (`dsm` false) or the DSM's.
    pub fn parity_cells(&self, dsm: bool, parity: Parity) -> std::ops::Range<usize> {
        let w = if dsm { self.dsm.width } else { self.usm.width };
        parity.index() * w..(parity.index() + 1) * w
    }

    /// The cells of `parity` in meter register `name` (`None`: not a meter register).
    pub fn parity_cells_of(&self, name: &str, parity: Parity) -> Option<std::ops::Range<usize>> {
        let i = self.meters.iter().position(|m| m == name)?;
        Some(self.parity_cells(i >= self.usm.rows * ROW_REGISTERS.len(), parity))
    }

    /// Builds one pipe's snapshot of `parity` from `rows` (USM rows, then DSM rows, in the
    /// order of [`Self::meter_names`]), mapping every bucket's rule ID through `ids`.
    pub fn decode(
        &self,
        switch_name: &str,
        switch: SwitchIx,
        parity: Parity,
        rows: &[RowCells],
        ids: &RuleIds,
    ) -> Result<MeterSnapshot, HarvestError> {
        assert_eq!(
            rows.len(),
            self.usm.rows + self.dsm.rows,
            "one RowCells per meter row"
        );
        let names = |i: usize| &self.meters[i * ROW_REGISTERS.len()..][..ROW_REGISTERS.len()];
        let mut usm = Vec::with_capacity(self.usm.num_buckets());
        let mut dsm = Vec::with_capacity(self.dsm.num_buckets());
        for (i, row) in rows.iter().enumerate() {
            let is_dsm = i >= self.usm.rows;
            let cells = self.parity_cells(is_dsm, parity);
            let at = RowAt {
                switch: switch_name,
                names: names(i),
                row,
            };
            at.check_lengths(cells.end)?;
            for col in cells {
                let b = at.bucket(col, ids)?;
                match (b, is_dsm) {
                    (None, false) => usm.push(UsmBucket::default()),
                    (None, true) => dsm.push(DsmBucket::default()),
                    (Some((RuleKey::Usm(flow), dirty, count)), false) => usm.push(UsmBucket {
                        dirty,
                        flow: Some(flow),
                        count,
                    }),
                    (Some((RuleKey::Dsm(flow, path_bf), dirty, count)), true) => {
                        dsm.push(DsmBucket {
                            dirty,
                            flow: Some(flow),
                            path_bf,
                            count,
                        })
                    }
                    (Some(_), _) => {
                        return Err(at.bad(
                            0,
                            col,
                            row.id[col] as i64,
                            if is_dsm {
                                "DSM rule ID (it is a USM rule's)"
                            } else {
                                "USM rule ID (it is a DSM rule's)"
                            },
                        ))
                    }
                }
            }
        }
        Ok(MeterSnapshot {
            switch,
            parity,
            usm: Usm::from_buckets(self.usm, usm).expect("config validated at load"),
            dsm: Dsm::from_buckets(self.dsm, dsm).expect("config validated at load"),
        })
    }
}

/// One meter row as read from one pipe: every cell of `id_reg` and of `state_reg`'s two fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowCells {
    pub id: Vec<u64>,
    pub dirty: Vec<u64>,
    pub count: Vec<u64>,
}

struct RowAt<'a> {
    switch: &'a str,
    /// [id_reg, state_reg].
    names: &'a [String],
    row: &'a RowCells,
}

impl RowAt<'_> {
    fn check_lengths(&self, at_least: usize) -> Result<(), HarvestError> {
        for (reg, len) in [
            (0, self.row.id.len()),
            (1, self.row.dirty.len()),
            (1, self.row.count.len()),
        ] {
            if len < at_least {
                return Err(HarvestError::Length {
                    switch: self.switch.to_string(),
                    register: self.names[reg].clone(),
                    got: len,
                    expected: at_least,
                });
            }
        }
        Ok(())
    }

    fn bad(&self, reg: usize, index: usize, value: i64, field: &'static str) -> HarvestError {
        HarvestError::Value {
            switch: self.switch.to_string(),
            register: self.names[reg].clone(),
            index,
            value,
            field,
        }
    }

    /// (rule, dirty, count) of the bucket in cell `col`, `None` if empty. An empty bucket's
    /// state is not looked at: the data plane changes it only with the ID.
    fn bucket(
        &self,
        col: usize,
        ids: &RuleIds,
    ) -> Result<Option<(RuleKey, bool, u32)>, HarvestError> {
        let id = self.row.id[col];
        if id == 0 {
            return Ok(None);
        }
        let id32 = u32::try_from(id).map_err(|_| self.bad(0, col, id as i64, "32-bit rule ID"))?;
        let key = ids
            .key(id32)
            .ok_or_else(|| self.bad(0, col, id as i64, "rule ID this controller assigned"))?;
        let dirty = match self.row.dirty[col] {
            0 => false,
            1 => true,
            v => return Err(self.bad(1, col, v as i64, "dirty flag")),
        };
        let count = u32::try_from(self.row.count[col])
            .map_err(|_| self.bad(1, col, self.row.count[col] as i64, "32-bit count"))?;
        Ok(Some((key, dirty, count)))
    }
}

#[cfg(test)]
mod tests;
