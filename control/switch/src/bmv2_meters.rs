//! The register layout of Canary's meters on BMv2, and the harvest that turns registers into a
//! [`MeterSnapshot`].
//!
//! On v1model a meter bucket is one index of seven (USM) or eight (DSM) register arrays, one
//! array per field and row, one set per parity (`docs/dataplane.md`):
//! `<control>.{upstream,downstream}_meter.parity{p}.row{r}.{used,src_addr,dst_addr,ports,protocol,
//! [path_bf,]dirty,count}_reg`, and HashPipe's `<control>.hashpipe.stage{s}.{src_addr,dst_addr,
//! ports,protocol,count}_reg`. [`MeterLayout`] resolves those names once, from the BMv2 JSON or
//! the P4Info, and reads the meter shape (rows, width) from the program instead of retyping it;
//! it refuses a program whose meter registers it does not fully understand, so a renamed or new
//! field fails at start-up rather than being silently left uncleared.
//!
//! Parity instances are separate arrays, so reading and resetting the finished parity never
//! touches the one counting.
//!
//! Not here: the Thrift transport ([`crate::bmv2_thrift`]) and when to harvest (the daemon).

use std::collections::BTreeMap;

use canary_core::fabric::{MeterSnapshot, Parity};
use canary_core::sketch::{Dsm, DsmBucket, MeterConfig, SketchConfigError, Usm, UsmBucket};
use canary_core::topo::SwitchIx;
use canary_core::FlowId;

use crate::bmv2_thrift::{ThriftClient, ThriftError};

/// Fields of a USM bucket, in the order of [`MeterLayout::meter_names`] within a row.
pub const USM_FIELDS: [&str; 7] = [
    "used", "src_addr", "dst_addr", "ports", "protocol", "dirty", "count",
];
/// Fields of a DSM bucket: the USM's and `path_bf`.
pub const DSM_FIELDS: [&str; 8] = [
    "used", "src_addr", "dst_addr", "ports", "protocol", "dirty", "count", "path_bf",
];
/// Fields of a HashPipe slot.
pub const HASHPIPE_FIELDS: [&str; 5] = ["src_addr", "dst_addr", "ports", "protocol", "count"];

/// The P4 control instances whose registers the layout owns.
const USM_CONTROL: &str = "upstream_meter";
const DSM_CONTROL: &str = "downstream_meter";
const HASHPIPE_CONTROL: &str = "hashpipe";

/// The BMv2 context (simple_switch has one pipeline, context 0).
pub const CXT_ID: i32 = 0;

/// Why the program's registers do not match what the control plane expects.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("BMv2 JSON: {0}")]
    Json(String),
    #[error(
        "register {register}: not a meter or HashPipe field Canary knows (expected {expected})"
    )]
    Unexpected { register: String, expected: String },
    #[error("registers {first} and {second} both are {key}")]
    Ambiguous {
        key: String,
        first: String,
        second: String,
    },
    #[error("no register *.{key}_reg in the program")]
    Missing { key: String },
    #[error(
        "register {register} has {size} cells, expected {expected} like the rest of its meter"
    )]
    Size {
        register: String,
        size: usize,
        expected: usize,
    },
    #[error("{meter} shape from the program: {source}")]
    Config {
        meter: &'static str,
        source: SketchConfigError,
    },
}

/// Why a harvest failed. Every variant names the switch; most the register.
#[derive(Debug, thiserror::Error)]
pub enum HarvestError {
    #[error("reading the parity {} meters: {source}", .parity.index())]
    Read { parity: Parity, source: ThriftError },
    /// The read succeeded but the reset did not: the snapshot is lost with it, since the
    /// instance would start its next epoch with stale counts.
    #[error("resetting the parity {} meters: {source}", .parity.index())]
    Reset { parity: Parity, source: ThriftError },
    #[error("switch {switch}: register {register} returned {got} cells, expected {expected}")]
    Length {
        switch: String,
        register: String,
        got: usize,
        expected: usize,
    },
    #[error("switch {switch}: register {register}[{index}] = {value} is not a valid {field}")]
    Value {
        switch: String,
        register: String,
        index: usize,
        value: i64,
        field: &'static str,
    },
}

/// Access to a switch's register arrays by name: the Thrift client, or a fake in tests.
pub trait RegisterAccess {
    /// The switch's name, for errors.
    fn switch_name(&self) -> &str;
    /// Whole arrays, in the order of `names`.
    fn read_arrays(&mut self, names: &[&str]) -> Result<Vec<Vec<i64>>, ThriftError>;
    /// Zeroes whole arrays, given as `(name, size)`.
    fn zero_arrays(&mut self, arrays: &[(&str, usize)]) -> Result<(), ThriftError>;
}

impl RegisterAccess for ThriftClient {
    fn switch_name(&self) -> &str {
        self.switch()
    }
    fn read_arrays(&mut self, names: &[&str]) -> Result<Vec<Vec<i64>>, ThriftError> {
        self.register_read_all_many(CXT_ID, names)
    }
    fn zero_arrays(&mut self, arrays: &[(&str, usize)]) -> Result<(), ThriftError> {
        self.register_zero_many(CXT_ID, arrays)
    }
}

/// Where a register sits: (control, instance path, field).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    /// (is DSM, parity, row, field).
    Meter(bool, usize, usize, &'static str),
    /// (stage, field).
    HashPipe(usize, &'static str),
}

impl Slot {
    fn key(&self) -> String {
        match self {
            Slot::Meter(dsm, p, r, f) => {
                let c = if *dsm { DSM_CONTROL } else { USM_CONTROL };
                format!("{c}.parity{p}.row{r}.{f}")
            }
            Slot::HashPipe(s, f) => format!("{HASHPIPE_CONTROL}.stage{s}.{f}"),
        }
    }
}

/// `prefix<n>` → n.
pub(crate) fn numbered(seg: &str, prefix: &str) -> Option<usize> {
    seg.strip_prefix(prefix)?.parse().ok()
}

/// `<field>_reg` → the field, if it is one of `fields`.
pub(crate) fn field(seg: &str, fields: &[&'static str]) -> Option<&'static str> {
    let f = seg.strip_suffix("_reg")?;
    fields.iter().copied().find(|&k| k == f)
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
    let slot = match segs[at] {
        HASHPIPE_CONTROL => match rest {
            [stage, f] => numbered(stage, "stage")
                .zip(field(f, &HASHPIPE_FIELDS))
                .map(|(s, f)| Slot::HashPipe(s, f)),
            _ => None,
        },
        control => {
            let dsm = control == DSM_CONTROL;
            let fields: &[&'static str] = if dsm { &DSM_FIELDS } else { &USM_FIELDS };
            match rest {
                [p, r, f] => match (numbered(p, "parity"), numbered(r, "row"), field(f, fields)) {
                    (Some(p @ 0..=1), Some(r), Some(f)) => Some(Slot::Meter(dsm, p, r, f)),
                    _ => None,
                },
                _ => None,
            }
        }
    };
    match slot {
        Some(s) => Ok(Some(s)),
        None => Err(LayoutError::Unexpected {
            register: name.to_string(),
            expected: match segs[at] {
                HASHPIPE_CONTROL => {
                    format!("hashpipe.stage<n>.{{{}}}_reg", HASHPIPE_FIELDS.join(","))
                }
                c if c == DSM_CONTROL => {
                    format!("{c}.parity{{0,1}}.row<n>.{{{}}}_reg", DSM_FIELDS.join(","))
                }
                c => format!("{c}.parity{{0,1}}.row<n>.{{{}}}_reg", USM_FIELDS.join(",")),
            },
        }),
    }
}

/// Classifies every register by `classify`, keeping (name, size) per slot; a slot claimed by
/// two registers is an error naming both. Shared by the BMv2 and TNA layouts.
pub(crate) fn classify_all<'a, S: Ord>(
    registers: impl IntoIterator<Item = (&'a str, usize)>,
    classify: impl Fn(&str) -> Result<Option<S>, LayoutError>,
    key: impl Fn(&S) -> String,
) -> Result<BTreeMap<S, (&'a str, usize)>, LayoutError> {
    let mut found: BTreeMap<S, (&'a str, usize)> = BTreeMap::new();
    for (name, size) in registers {
        let Some(slot) = classify(name)? else {
            continue;
        };
        if let Some((first, _)) = found.get(&slot) {
            return Err(LayoutError::Ambiguous {
                key: key(&slot),
                first: first.to_string(),
                second: name.to_string(),
            });
        }
        found.insert(slot, (name, size));
    }
    Ok(found)
}

/// The resolved register names of the meters and HashPipe of one program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeterLayout {
    usm: MeterConfig,
    dsm: MeterConfig,
    /// Per parity: USM rows × [`USM_FIELDS`], then DSM rows × [`DSM_FIELDS`].
    meters: [Vec<String>; 2],
    hashpipe: Vec<String>,
    /// The size of each array of `hashpipe`.
    hashpipe_sizes: Vec<usize>,
}

impl MeterLayout {
    /// From `(fully qualified name, size)` of every register array in the program.
    pub fn from_registers<'a>(
        registers: impl IntoIterator<Item = (&'a str, usize)>,
    ) -> Result<Self, LayoutError> {
        let found = classify_all(registers, classify, Slot::key)?;
        let take = |slot: Slot| -> Result<(&'a str, usize), LayoutError> {
            found
                .get(&slot)
                .copied()
                .ok_or_else(|| LayoutError::Missing { key: slot.key() })
        };
        // Rows: as many as parity 0's `used` arrays, contiguous from row 0.
        let rows = |dsm: bool| {
            (0..)
                .take_while(|&r| found.contains_key(&Slot::Meter(dsm, 0, r, "used")))
                .count()
        };
        let mut meters: [Vec<String>; 2] = Default::default();
        let mut configs = Vec::new();
        for (dsm, fields, meter) in [
            (false, &USM_FIELDS[..], "USM"),
            (true, &DSM_FIELDS[..], "DSM"),
        ] {
            let rows = rows(dsm);
            let mut width = None;
            for (p, names) in meters.iter_mut().enumerate() {
                // `rows.max(1)` so a program without meters reports the first missing array.
                for r in 0..rows.max(1) {
                    for &f in fields {
                        let (name, size) = take(Slot::Meter(dsm, p, r, f))?;
                        let w = *width.get_or_insert(size);
                        if size != w {
                            return Err(LayoutError::Size {
                                register: name.to_string(),
                                size,
                                expected: w,
                            });
                        }
                        names.push(name.to_string());
                    }
                }
            }
            let config = MeterConfig::new(rows, width.unwrap_or(0))
                .map_err(|source| LayoutError::Config { meter, source })?;
            configs.push(config);
        }
        // Every meter array found must have been placed (no row beyond the contiguous ones).
        let placed = meters.iter().map(Vec::len).sum::<usize>();
        let meter_arrays = found
            .iter()
            .filter(|(s, _)| matches!(s, Slot::Meter(..)))
            .count();
        if placed != meter_arrays {
            let extra = found
                .iter()
                .find(|(_, (n, _))| !meters.iter().flatten().any(|m| m == n))
                .map(|(_, (n, _))| n.to_string())
                .unwrap_or_default();
            return Err(LayoutError::Unexpected {
                register: extra,
                expected: "rows numbered from 0 without gaps, the same in both parities".into(),
            });
        }
        let stages = (0..)
            .take_while(|&s| found.contains_key(&Slot::HashPipe(s, "count")))
            .count();
        let (mut hashpipe, mut hashpipe_sizes) = (Vec::new(), Vec::new());
        for s in 0..stages.max(1) {
            for &f in &HASHPIPE_FIELDS {
                let (name, size) = take(Slot::HashPipe(s, f))?;
                hashpipe.push(name.to_string());
                hashpipe_sizes.push(size);
            }
        }
        let hp_arrays = found
            .keys()
            .filter(|s| matches!(s, Slot::HashPipe(..)))
            .count();
        if hp_arrays != hashpipe.len() {
            let extra = found
                .iter()
                .find(|(s, (n, _))| {
                    matches!(s, Slot::HashPipe(..)) && !hashpipe.iter().any(|h| h == n)
                })
                .map(|(_, (n, _))| n.to_string())
                .unwrap_or_default();
            return Err(LayoutError::Unexpected {
                register: extra,
                expected: "HashPipe stages numbered from 0 without gaps".into(),
            });
        }
        Ok(MeterLayout {
            usm: configs[0],
            dsm: configs[1],
            meters,
            hashpipe,
            hashpipe_sizes,
        })
    }

    /// From the BMv2 JSON `p4c` wrote (`register_arrays`: name, size).
    pub fn from_bmv2_json(json: &[u8]) -> Result<Self, LayoutError> {
        #[derive(serde::Deserialize)]
        struct Program {
            register_arrays: Vec<RegisterArray>,
        }
        #[derive(serde::Deserialize)]
        struct RegisterArray {
            name: String,
            size: usize,
        }
        let p: Program =
            serde_json::from_slice(json).map_err(|e| LayoutError::Json(e.to_string()))?;
        Self::from_registers(p.register_arrays.iter().map(|r| (r.name.as_str(), r.size)))
    }

    /// From the P4Info (register preamble names and sizes).
    pub fn from_p4info(p4info: &bfrt_proto::p4info::P4Info) -> Result<Self, LayoutError> {
        Self::from_registers(p4info.registers.iter().map(|r| {
            let name = r.preamble.as_ref().map_or("", |p| p.name.as_str());
            (name, r.size.max(0) as usize)
        }))
    }

    /// Shape of the USM (rows, width), as compiled.
    pub fn usm_config(&self) -> MeterConfig {
        self.usm
    }

    /// Shape of the DSM, as compiled.
    pub fn dsm_config(&self) -> MeterConfig {
        self.dsm
    }

    /// The arrays of one parity's USM and DSM, to read and then to reset: USM row-major with
    /// [`USM_FIELDS`] per row, then DSM with [`DSM_FIELDS`]. None belongs to the other parity.
    pub fn meter_names(&self, parity: Parity) -> &[String] {
        &self.meters[parity.index()]
    }

    /// HashPipe's arrays: reset every epoch, never harvested.
    pub fn hashpipe_names(&self) -> &[String] {
        &self.hashpipe
    }

    /// What [`harvest`] zeroes, as `(name, size)`: the parity's meters, then HashPipe.
    pub fn arrays_to_clear(&self, parity: Parity) -> Vec<(&str, usize)> {
        let usm_arrays = self.usm.rows * USM_FIELDS.len();
        let meters = self.meter_names(parity).iter().enumerate().map(|(i, n)| {
            let width = if i < usm_arrays {
                self.usm.width
            } else {
                self.dsm.width
            };
            (n.as_str(), width)
        });
        let hashpipe = self
            .hashpipe
            .iter()
            .zip(&self.hashpipe_sizes)
            .map(|(n, &size)| (n.as_str(), size));
        meters.chain(hashpipe).collect()
    }

    /// Builds the snapshot from `arrays`, read in the order of [`Self::meter_names`].
    pub fn decode(
        &self,
        switch_name: &str,
        switch: SwitchIx,
        parity: Parity,
        arrays: &[Vec<i64>],
    ) -> Result<MeterSnapshot, HarvestError> {
        let names = self.meter_names(parity);
        assert_eq!(arrays.len(), names.len(), "one array per meter register");
        let usm_len = self.usm.rows * USM_FIELDS.len();
        let cells = |base: usize, fields: &[&'static str], width: usize| Cells {
            switch: switch_name,
            names: &names[base..],
            arrays: &arrays[base..],
            fields: fields.len(),
            width,
        };
        let u = cells(0, &USM_FIELDS, self.usm.width);
        u.check_lengths()?;
        let mut usm = Vec::with_capacity(self.usm.num_buckets());
        for row in 0..self.usm.rows {
            for col in 0..self.usm.width {
                usm.push(match u.flow(row, col)? {
                    None => UsmBucket::default(),
                    Some(flow) => UsmBucket {
                        dirty: u.flag(row, 5, col, "dirty flag")?,
                        flow: Some(flow),
                        count: u.u32(row, 6, col, "count")?,
                    },
                });
            }
        }
        let d = cells(usm_len, &DSM_FIELDS, self.dsm.width);
        d.check_lengths()?;
        let mut dsm = Vec::with_capacity(self.dsm.num_buckets());
        for row in 0..self.dsm.rows {
            for col in 0..self.dsm.width {
                dsm.push(match d.flow(row, col)? {
                    None => DsmBucket::default(),
                    Some(flow) => DsmBucket {
                        dirty: d.flag(row, 5, col, "dirty flag")?,
                        flow: Some(flow),
                        path_bf: d.u32(row, 7, col, "pathBF")?,
                        count: d.u32(row, 6, col, "count")?,
                    },
                });
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

/// One meter's arrays: `fields` arrays per row, each `width` cells.
struct Cells<'a> {
    switch: &'a str,
    names: &'a [String],
    arrays: &'a [Vec<i64>],
    fields: usize,
    width: usize,
}

impl Cells<'_> {
    fn check_lengths(&self) -> Result<(), HarvestError> {
        let n = self.arrays.len().min(self.names.len());
        let rows = n / self.fields;
        for i in 0..rows * self.fields {
            if self.arrays[i].len() != self.width {
                return Err(HarvestError::Length {
                    switch: self.switch.to_string(),
                    register: self.names[i].clone(),
                    got: self.arrays[i].len(),
                    expected: self.width,
                });
            }
        }
        Ok(())
    }

    fn raw(
        &self,
        row: usize,
        field: usize,
        col: usize,
        max: i64,
        what: &'static str,
    ) -> Result<i64, HarvestError> {
        let i = row * self.fields + field;
        let v = self.arrays[i][col];
        if (0..=max).contains(&v) {
            Ok(v)
        } else {
            Err(HarvestError::Value {
                switch: self.switch.to_string(),
                register: self.names[i].clone(),
                index: col,
                value: v,
                field: what,
            })
        }
    }

    fn u32(
        &self,
        row: usize,
        field: usize,
        col: usize,
        what: &'static str,
    ) -> Result<u32, HarvestError> {
        Ok(self.raw(row, field, col, u32::MAX.into(), what)? as u32)
    }

    fn flag(
        &self,
        row: usize,
        field: usize,
        col: usize,
        what: &'static str,
    ) -> Result<bool, HarvestError> {
        Ok(self.raw(row, field, col, 1, what)? == 1)
    }

    /// The bucket's flow (fields 0-4: used, src, dst, sport‖dport, protocol), `None` if unused.
    /// An unused bucket's other cells are not looked at: the data plane writes them only
    /// together with `used`.
    fn flow(&self, row: usize, col: usize) -> Result<Option<FlowId>, HarvestError> {
        if !self.flag(row, 0, col, "used flag")? {
            return Ok(None);
        }
        let ports = self.u32(row, 3, col, "sport<<16|dport")?;
        Ok(Some(FlowId {
            src: self.u32(row, 1, col, "IPv4 source")?,
            dst: self.u32(row, 2, col, "IPv4 destination")?,
            proto: self.raw(row, 4, col, 255, "IP protocol")? as u8,
            sport: (ports >> 16) as u16,
            dport: ports as u16,
        }))
    }
}

/// Reads one parity's USM and DSM without resetting them.
pub fn read_meters<A: RegisterAccess + ?Sized>(
    access: &mut A,
    layout: &MeterLayout,
    switch: SwitchIx,
    parity: Parity,
) -> Result<MeterSnapshot, HarvestError> {
    let names: Vec<&str> = layout
        .meter_names(parity)
        .iter()
        .map(String::as_str)
        .collect();
    let arrays = access
        .read_arrays(&names)
        .map_err(|source| HarvestError::Read { parity, source })?;
    layout.decode(access.switch_name(), switch, parity, &arrays)
}

/// The end of an epoch on one switch (`Fabric::harvest`): reads the finished `parity`'s USM and
/// DSM, then resets them and HashPipe. The other parity's arrays are neither read nor reset.
/// Nothing is reset unless the read and decode succeeded, so a failed harvest can be retried.
pub fn harvest<A: RegisterAccess + ?Sized>(
    access: &mut A,
    layout: &MeterLayout,
    switch: SwitchIx,
    parity: Parity,
) -> Result<MeterSnapshot, HarvestError> {
    let snapshot = read_meters(access, layout, switch, parity)?;
    access
        .zero_arrays(&layout.arrays_to_clear(parity))
        .map_err(|source| HarvestError::Reset { parity, source })?;
    Ok(snapshot)
}

#[cfg(test)]
mod tests;
