//! The cells a harvest reads. A bucket's column is a slice of its flow's CRCs
//! (`canary_core::sketch::hash::meter_index`), and only packets that hit one of the switch's
//! rules reach a meter, so the finished epoch's buckets can only be in the cells of the rules
//! whose IDs a bucket may hold: three USM or DSM cells per rule in the finished parity. Those
//! are read every harvest, not the registers whole (at 3 × 1024 buckets a switch holds 24 576
//! cells, a few dozen rules use a few hundred of them).
//!
//! A cell no rule maps to any more still holds its last tag, and after the tags wrap it would
//! look fresh to the next rule that maps there. So each harvest also reads a few columns of
//! every row in turn ([`sweep_columns`]): every cell of a parity is seen within
//! [`sweep_period`] epochs, well inside the half wrap after which the decoder has it zeroed.

use super::Cell;
use crate::contract::MeterRegisters;
use crate::rule_ids::RuleKey;
use canary_core::model::{epoch_tag, EPOCH_TAGS};
use canary_core::sketch::hash::{meter_index, FlowHashes};

/// Columns of every row the sweep reads per harvest, for meters `width` wide: enough that a
/// parity is swept within a quarter of the tags' wrap (a cell is zeroed after half a wrap).
pub fn sweep_columns(width: usize) -> usize {
    let per_parity = (EPOCH_TAGS / 8).max(1) as usize; // harvests of one parity per quarter wrap
    width.div_ceil(per_parity).clamp(1, width.max(1))
}

/// Epochs within which the sweep reads every cell of both parities once.
pub fn sweep_period(width: usize) -> u64 {
    2 * width.div_ceil(sweep_columns(width)) as u64
}

/// The cells (register indexes, finished parity) the harvest of `epoch` reads on a switch whose
/// buckets may hold the rules `keys`: each rule's cell in each row of its meter, and the sweep's
/// columns of every row. Sorted, no repeats. `None` when the columns cannot be computed (a
/// meter of more rows than the flow's CRCs have slices for): then every cell is read.
pub fn harvest_cells(
    layout: &MeterRegisters,
    keys: impl IntoIterator<Item = RuleKey>,
    epoch: u64,
) -> Option<Vec<Cell>> {
    let w = layout.width;
    if !w.is_power_of_two() || w > 1 << 16 || layout.usm.len() > 3 || layout.dsm.len() > 3 {
        return None;
    }
    let base = usize::from(epoch_tag(epoch) & 1) * w;
    let mut out = Vec::new();
    for key in keys {
        let (dsm, flow, rows) = match key {
            RuleKey::Usm(f) => (false, f, layout.usm.len()),
            RuleKey::Dsm(f, _) => (true, f, layout.dsm.len()),
        };
        let h = FlowHashes::of(&flow);
        for row in 0..rows {
            out.push(Cell {
                dsm,
                row,
                index: base + meter_index(h, row, w),
            });
        }
    }
    // This parity's turn of the sweep.
    let per = sweep_columns(w);
    let first = ((epoch / 2) as usize).wrapping_mul(per) % w;
    for (dsm, rows) in [(false, layout.usm.len()), (true, layout.dsm.len())] {
        for row in 0..rows {
            for c in 0..per {
                out.push(Cell {
                    dsm,
                    row,
                    index: base + (first + c) % w,
                });
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}
