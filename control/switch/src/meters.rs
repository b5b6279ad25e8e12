//! The meters' registers as a switch holds them, and the harvest that decodes one epoch's
//! buckets into `canary_core` meters: one decoder for every target (BMv2 reads cells over
//! Thrift, Tofino over BF Runtime, the chaos driver from the model).
//!
//! A meter row is two registers of `2 × width` cells (p4src/include/meters.p4), cell
//! `parity × width + column`: `id_reg` holds {tag, rule ID} with the dirty flag in bit 31 of the
//! ID, `count_reg` the count. A bucket belongs to the epoch whose tag it holds
//! (`canary_core::model::epoch_tag`); any other tag means empty, so nothing is cleared between
//! epochs. Rule IDs map back to flows through the controller's [`RuleIds`]. The ID register is
//! read before the count register: a packet that takes a bucket between the two reads is seen
//! as not there yet, never as another epoch's count under this epoch's tag.
//!
//! Tags wrap after `EPOCH_TAGS` epochs; a bucket nobody touched for that long would look fresh.
//! So the harvest also names cells of the finished parity whose tag is more than half a wrap
//! old ([`Decoded::stale`]), and the fabric zeroes them: a few cells now and then, never a whole
//! register while it counts.

use crate::contract::MeterRegisters;
use crate::rule_ids::{RuleIds, RuleKey};
use canary_core::model::EPOCH_TAGS;
use canary_core::sketch::{Dsm, DsmBucket, MeterConfig, Usm, UsmBucket};

mod wanted;
pub use wanted::{harvest_cells, sweep_columns, sweep_period};

/// One meter row as read from one pipe: every cell of its two registers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowCells {
    pub id_tag: Vec<u32>,
    /// Rule ID, bit 31 the dirty flag.
    pub id: Vec<u32>,
    pub count: Vec<u32>,
}

/// The dirty flag in an ID cell.
pub const DIRTY: u32 = 1 << 31;

impl RowCells {
    /// An all-zero row of `cells` cells (what a switch holds after it boots).
    pub fn zeroed(cells: usize) -> Self {
        RowCells {
            id_tag: vec![0; cells],
            id: vec![0; cells],
            count: vec![0; cells],
        }
    }

    /// From BMv2's registers: the ID pair as a 64-bit value (tag in the upper half), the count.
    pub fn from_bmv2(id_reg: &[u64], count_reg: &[u64]) -> Self {
        RowCells {
            id_tag: id_reg.iter().map(|&x| (x >> 32) as u32).collect(),
            id: id_reg.iter().map(|&x| x as u32).collect(),
            count: count_reg.iter().map(|&x| x as u32).collect(),
        }
    }
}

/// Every meter row of one pipe: USM rows, then DSM rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeterCells {
    pub usm: Vec<RowCells>,
    pub dsm: Vec<RowCells>,
}

impl MeterCells {
    /// Every register of `layout` all zero (empty buckets): a read of some cells fills these in.
    pub fn zeroed(layout: &MeterRegisters) -> Self {
        let rows = |n: usize| (0..n).map(|_| RowCells::zeroed(2 * layout.width)).collect();
        MeterCells {
            usm: rows(layout.usm.len()),
            dsm: rows(layout.dsm.len()),
        }
    }

    /// The row cell `c` is in, if the meters have that row.
    pub fn row_mut(&mut self, c: &Cell) -> Option<&mut RowCells> {
        if c.dsm {
            self.dsm.get_mut(c.row)
        } else {
            self.usm.get_mut(c.row)
        }
    }
}

/// A meter cell (both registers of it): (is DSM, row, register index). What a harvest reads and
/// what it zeroes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Cell {
    pub dsm: bool,
    pub row: usize,
    pub index: usize,
}

/// One epoch's meters, decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    pub usm: Usm,
    pub dsm: Dsm,
    /// Cells of the finished parity old enough to be taken for a fresh epoch after the tags
    /// wrap: to be zeroed.
    pub stale: Vec<Cell>,
}

/// Why a harvest could not be decoded. Every variant names the switch and the register.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HarvestError {
    #[error("switch {switch}: {register}: {got} cells, the program says {expected}")]
    Length {
        switch: String,
        register: String,
        got: usize,
        expected: usize,
    },
    #[error("switch {switch}: {register}[{index}] holds rule ID {id}, which is {problem}")]
    RuleId {
        switch: String,
        register: String,
        index: usize,
        id: u32,
        problem: &'static str,
    },
}

/// Whether some epoch has tag `t` (`epoch_tag`: 2 to EPOCH_TAGS + 1). A register holds whatever
/// its switch sends; any other value is no epoch's, so it is an empty bucket no epoch takes.
fn is_epoch_tag(t: u32) -> bool {
    (2..2 + EPOCH_TAGS).contains(&u64::from(t))
}

/// Tags apart, going forward from `old` to `new` (both epoch tags).
fn age(new: u32, old: u32) -> u64 {
    let (n, o) = (u64::from(new) - 2, u64::from(old) - 2);
    (n + EPOCH_TAGS - o) % EPOCH_TAGS
}

/// Decodes the buckets of the epoch with tag `tag` from one pipe's `cells`, mapping rule IDs
/// through `ids`. `switch` names the switch in errors.
pub fn decode(
    layout: &MeterRegisters,
    cells: &MeterCells,
    tag: u16,
    ids: &RuleIds,
    switch: &str,
) -> Result<Decoded, HarvestError> {
    let w = layout.config().width;
    for (got, want, name) in [
        (cells.usm.len(), layout.usm.len(), "USM rows"),
        (cells.dsm.len(), layout.dsm.len(), "DSM rows"),
    ] {
        if got != want {
            return Err(length(switch, name, got, want));
        }
    }
    let mut d = Decoder {
        tag: u32::from(tag),
        ids,
        switch,
        usm: Vec::with_capacity(layout.config().num_buckets()),
        dsm: Vec::with_capacity(layout.config().num_buckets()),
        stale: Vec::new(),
    };
    let parity = usize::from(tag & 1);
    for (is_dsm, rows, regs) in [
        (false, &cells.usm, &layout.usm),
        (true, &cells.dsm, &layout.dsm),
    ] {
        for (r, (row, reg)) in rows.iter().zip(regs).enumerate() {
            for (len, name) in [
                (row.id_tag.len(), &reg.id.name),
                (row.id.len(), &reg.id.name),
                (row.count.len(), &reg.count.name),
            ] {
                if len != 2 * w {
                    return Err(length(switch, name, len, 2 * w));
                }
            }
            for col in 0..w {
                d.cell(is_dsm, r, row, &reg.id.name, parity * w + col)?;
            }
        }
    }
    let shape = |rows| MeterConfig { rows, width: w };
    Ok(Decoded {
        usm: Usm::from_buckets(shape(cells.usm.len()), d.usm)
            .expect("the contract validated the shape"),
        dsm: Dsm::from_buckets(shape(cells.dsm.len()), d.dsm)
            .expect("the contract validated the shape"),
        stale: d.stale,
    })
}

fn length(switch: &str, register: &str, got: usize, expected: usize) -> HarvestError {
    HarvestError::Length {
        switch: switch.into(),
        register: register.into(),
        got,
        expected,
    }
}

/// The buckets decoded so far, in row order.
struct Decoder<'a> {
    tag: u32,
    ids: &'a RuleIds,
    switch: &'a str,
    usm: Vec<UsmBucket>,
    dsm: Vec<DsmBucket>,
    stale: Vec<Cell>,
}

impl Decoder<'_> {
    fn empty(&mut self, is_dsm: bool) {
        if is_dsm {
            self.dsm.push(DsmBucket::default());
        } else {
            self.usm.push(UsmBucket::default());
        }
    }

    /// Cell `i` of `row` (its ID register named `register`): a bucket of this epoch, or empty.
    fn cell(
        &mut self,
        is_dsm: bool,
        r: usize,
        row: &RowCells,
        register: &str,
        i: usize,
    ) -> Result<(), HarvestError> {
        let t = row.id_tag[i];
        if t != self.tag {
            if is_epoch_tag(t) && row.id[i] != 0 && age(self.tag, t) >= EPOCH_TAGS / 2 {
                self.stale.push(Cell {
                    dsm: is_dsm,
                    row: r,
                    index: i,
                });
            }
            self.empty(is_dsm);
            return Ok(());
        }
        let dirty = row.id[i] & DIRTY != 0;
        let id = row.id[i] & !DIRTY;
        let count = row.count[i];
        let bad = |problem| HarvestError::RuleId {
            switch: self.switch.into(),
            register: register.into(),
            index: i,
            id,
            problem,
        };
        let Some(key) = self.ids.key(id) else {
            if self.ids.unknown_ok() {
                // An earlier controller's removed rule: its packets are no flow we watch.
                self.empty(is_dsm);
                return Ok(());
            }
            return Err(bad("not one this controller assigned"));
        };
        match (key, is_dsm) {
            (RuleKey::Usm(flow), false) => self.usm.push(UsmBucket {
                dirty,
                flow: Some(flow),
                count,
            }),
            (RuleKey::Dsm(flow, path_bf), true) => self.dsm.push(DsmBucket {
                dirty,
                flow: Some(flow),
                path_bf,
                count,
            }),
            (_, true) => return Err(bad("a USM rule's, in a DSM register")),
            (_, false) => return Err(bad("a DSM rule's, in a USM register")),
        }
        Ok(())
    }
}

/// One meter of a switch from its pipes' meters (Tofino keeps registers per pipe; a flow's
/// packets are counted in the pipe of the port they arrive on). A bucket one pipe holds is
/// taken; the same flow in several pipes adds up; different flows make it dirty.
pub fn merge_pipes(mut pipes: Vec<Decoded>) -> Decoded {
    if pipes.len() <= 1 {
        return pipes.pop().unwrap_or_else(|| Decoded {
            usm: Usm::new(MeterConfig::default()).expect("valid"),
            dsm: Dsm::new(MeterConfig::default()).expect("valid"),
            stale: Vec::new(),
        });
    }
    let first = pipes.remove(0);
    let (mut usm, mut dsm) = (first.usm.buckets().to_vec(), first.dsm.buckets().to_vec());
    let mut stale = first.stale;
    for p in &pipes {
        for (a, b) in usm.iter_mut().zip(p.usm.buckets()) {
            match (a.flow, b.flow) {
                (_, None) => {}
                (None, Some(_)) => *a = *b,
                (Some(x), Some(y)) => {
                    a.dirty |= b.dirty || x != y;
                    a.count = a.count.wrapping_add(b.count);
                }
            }
        }
        for (a, b) in dsm.iter_mut().zip(p.dsm.buckets()) {
            match (a.flow, b.flow) {
                (_, None) => {}
                (None, Some(_)) => *a = *b,
                (Some(x), Some(y)) => {
                    a.dirty |= b.dirty || x != y || a.path_bf != b.path_bf;
                    a.count = a.count.wrapping_add(b.count);
                }
            }
        }
        stale.extend(&p.stale);
    }
    stale.sort_unstable();
    stale.dedup();
    Decoded {
        usm: Usm::from_buckets(first.usm.config(), usm).expect("same shape"),
        dsm: Dsm::from_buckets(first.dsm.config(), dsm).expect("same shape"),
        stale,
    }
}

/// [`encode`], or all-zero registers of meter shape `shape` when there is nothing to encode.
pub fn encode_or_zero(
    shape: MeterConfig,
    parts: &[(u16, &Usm, &Dsm)],
    id_of: impl Fn(RuleKey) -> Option<u32>,
) -> MeterCells {
    if parts.is_empty() {
        let zero = || {
            (0..shape.rows)
                .map(|_| RowCells::zeroed(2 * shape.width))
                .collect()
        };
        return MeterCells {
            usm: zero(),
            dsm: zero(),
        };
    }
    encode(shape.width, parts, id_of)
}

/// The registers that hold `usm` and `dsm` as the meters of the epoch with tag `tag` in its
/// parity, every other cell zero: what a switch's registers are when they counted exactly that.
/// `id_of` gives each rule's ID. (The chaos driver's switch, and tests.)
pub fn encode(
    width: usize,
    parts: &[(u16, &Usm, &Dsm)],
    id_of: impl Fn(RuleKey) -> Option<u32>,
) -> MeterCells {
    let rows = parts.first().map_or(0, |p| p.1.config().rows);
    let mut cells = MeterCells {
        usm: (0..rows).map(|_| RowCells::zeroed(2 * width)).collect(),
        dsm: (0..rows).map(|_| RowCells::zeroed(2 * width)).collect(),
    };
    for &(tag, usm, dsm) in parts {
        let base = usize::from(tag & 1) * width;
        let t = u32::from(tag);
        let put = |row: &mut RowCells, col: usize, key: RuleKey, dirty: bool, count: u32| {
            let i = base + col;
            row.id_tag[i] = t;
            row.id[i] = id_of(key).unwrap_or(0) | if dirty { DIRTY } else { 0 };
            row.count[i] = count;
        };
        for (i, b) in usm.buckets().iter().enumerate() {
            if let Some(f) = b.flow {
                put(
                    &mut cells.usm[i / width],
                    i % width,
                    RuleKey::Usm(f),
                    b.dirty,
                    b.count,
                );
            }
        }
        for (i, b) in dsm.buckets().iter().enumerate() {
            if let Some(f) = b.flow {
                let key = RuleKey::Dsm(f, b.path_bf);
                put(&mut cells.dsm[i / width], i % width, key, b.dirty, b.count);
            }
        }
    }
    cells
}

#[cfg(test)]
mod tests;
