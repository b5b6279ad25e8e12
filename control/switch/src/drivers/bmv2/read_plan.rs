//! Which Thrift calls read a harvest's cells. BMv2's Thrift runtime reads a register whole
//! (`bm_register_read_all`, 8 bytes a cell) or one cell a call (`bm_register_read`, about 150
//! bytes of request and reply a cell), nothing in between; so each register is read cell by cell
//! when its cells asked for cost fewer bytes that way, and whole otherwise. Pure: the driver
//! sends the calls and fills the meters with [`fill`].

use crate::bmv2_thrift::{Call, SERVICE};
use crate::contract::MeterRegisters;
use crate::meters::{Cell, MeterCells, RowCells};

/// How one register is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read {
    Whole,
    Cells(Vec<usize>),
}

/// One register's read: the meter row it belongs to, whether it is the row's ID register, its
/// name and how it is read. In the order they are sent: per row, the ID register first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterRead {
    pub dsm: bool,
    pub row: usize,
    pub is_id: bool,
    pub name: String,
    pub read: Read,
}

/// Bytes of a Thrift message's envelope on the wire: strict binary header, the multiplexed
/// method name, sequence id, and the struct's stop byte.
fn envelope(method: &str) -> usize {
    4 + 4 + SERVICE.len() + 1 + method.len() + 4 + 1
}

/// Bytes of reading a register of `size` cells named `name` whole.
pub fn whole_bytes(name: &str, size: usize) -> usize {
    let m = Call::ReadAll { cxt_id: 0, name }.method();
    // Request: cxt_id (i32) and the name; reply: the list of i64.
    (envelope(m) + 7 + 7 + name.len()) + (envelope(m) + 3 + 5 + 8 * size)
}

/// Bytes of reading one cell of the register named `name`.
pub fn cell_bytes(name: &str) -> usize {
    let m = Call::Read {
        cxt_id: 0,
        name,
        idx: 0,
    }
    .method();
    // Request: cxt_id, the name and the index (i32); reply: one i64.
    (envelope(m) + 7 + 7 + name.len() + 7) + (envelope(m) + 11)
}

/// The reads of `cells` (sorted, as `meters::harvest_cells` gives them), the cheaper way for
/// each register. Rows without a cell asked for are not read.
pub fn plan(layout: &MeterRegisters, cells: &[Cell]) -> Vec<RegisterRead> {
    let mut out = Vec::new();
    for (dsm, rows) in [(false, &layout.usm), (true, &layout.dsm)] {
        for (r, row) in rows.iter().enumerate() {
            let mine: Vec<usize> = cells
                .iter()
                .filter(|c| c.dsm == dsm && c.row == r && c.index < 2 * layout.width)
                .map(|c| c.index)
                .collect();
            if mine.is_empty() {
                continue;
            }
            for (is_id, reg) in [(true, &row.id), (false, &row.count)] {
                let by_cell = mine.len() * cell_bytes(&reg.name);
                let read = if by_cell < whole_bytes(&reg.name, 2 * layout.width) {
                    Read::Cells(mine.clone())
                } else {
                    Read::Whole
                };
                out.push(RegisterRead {
                    dsm,
                    row: r,
                    is_id,
                    name: reg.name.clone(),
                    read,
                });
            }
        }
    }
    out
}

/// The calls of a plan, in its order.
pub fn calls<'a>(plan: &'a [RegisterRead], cxt_id: i32) -> Vec<Call<'a>> {
    let mut out = Vec::new();
    for r in plan {
        let name = r.name.as_str();
        match &r.read {
            Read::Whole => out.push(Call::ReadAll { cxt_id, name }),
            Read::Cells(ix) => out.extend(ix.iter().map(|&i| Call::Read {
                cxt_id,
                name,
                idx: i as i32,
            })),
        }
    }
    out
}

/// The meters from the plan's answers, one value list per call in the plan's order (a whole
/// register's list, or one cell's value): every cell not read zero. `Err` names the register
/// whose answer has the wrong length.
pub fn fill(
    layout: &MeterRegisters,
    plan: &[RegisterRead],
    answers: &[Vec<i64>],
) -> Result<MeterCells, String> {
    let mut cells = MeterCells::zeroed(layout);
    let mut next = answers.iter();
    for r in plan {
        let rows = if r.dsm {
            &mut cells.dsm
        } else {
            &mut cells.usm
        };
        let row: &mut RowCells = rows
            .get_mut(r.row)
            .ok_or_else(|| format!("{}: no meter row {}", r.name, r.row))?;
        let mut put = |i: usize, v: i64| {
            let v = v as u64;
            if r.is_id {
                row.id_tag[i] = (v >> 32) as u32;
                row.id[i] = v as u32;
            } else {
                row.count[i] = v as u32;
            }
        };
        let want = 2 * layout.width;
        match &r.read {
            Read::Whole => {
                let a = next
                    .next()
                    .ok_or_else(|| format!("{}: no answer", r.name))?;
                if a.len() != want {
                    return Err(format!(
                        "{}: {} cells, the program says {want}",
                        r.name,
                        a.len()
                    ));
                }
                a.iter().enumerate().for_each(|(i, &v)| put(i, v));
            }
            Read::Cells(ix) => {
                for &i in ix {
                    let a = next
                        .next()
                        .ok_or_else(|| format!("{}[{i}]: no answer", r.name))?;
                    let [v] = a.as_slice() else {
                        return Err(format!("{}[{i}]: {} values for one cell", r.name, a.len()));
                    };
                    put(i, *v);
                }
            }
        }
    }
    Ok(cells)
}
