//! Reads: the rule tables' entries, the configuration's default entry and the registers' cells
//! (one copy per pipe, all traffic in pipe 0), as `bf_switchd` would answer them.

use super::{lock, BfrtModelSwitch};
use bfrt_proto::bfrt::{
    data_field, key_field, table_entry, DataField, KeyField, TableData, TableEntry, TableKey,
};
use canary_switch::contract::Table;
use canary_switch::drivers::bfruntime;
use canary_switch::meters::MeterCells;
use tonic::Status;

impl BfrtModelSwitch {
    /// Every entry of a monitoring rule table (`usm_table`, `dsm_table`, `hh_table`), as the
    /// switch holds them; other match tables are not read by Canary.
    fn read_rules(&self, table_id: u32, name: &str) -> Result<Vec<TableEntry>, Status> {
        let table = self
            .program
            .tables()
            .iter()
            .find(|r| r.id == table_id)
            .map(|r| r.table)
            .filter(|t| matches!(t, Table::Usm | Table::Dsm | Table::Hh))
            .ok_or_else(|| Status::unimplemented(format!("{name}: reads of its match entries")))?;
        let installed = {
            let inner = lock(&self.inner);
            let mut plane = lock(&self.plane);
            inner.tables.read_installed(plane.switch_mut(self.ix))
        };
        let mut out = Vec::new();
        for r in installed.rules {
            let (op, id) = r.install(0);
            let entry = canary_switch::entries::rule(&op, id, false).entry;
            if entry.table == table {
                out.push(
                    bfruntime::table_entry(&self.program, &entry)
                        .map_err(|e| Status::internal(e.to_string()))?,
                );
            }
        }
        Ok(out)
    }

    /// The entries one entity of a read request names; `cells` holds the meters read once for
    /// the whole request.
    pub(super) fn read_entry(
        &self,
        te: &TableEntry,
        cells: &mut Option<MeterCells>,
    ) -> Result<Vec<TableEntry>, Status> {
        let t = self
            .schema
            .tables
            .get(&te.table_id)
            .ok_or_else(|| Status::not_found(format!("no table with id {}", te.table_id)))?;
        if te.is_default_entry {
            return self.read_default_entry(te.table_id, &t.name);
        }
        if t.kind != "Register" {
            return self.read_rules(te.table_id, &t.name);
        }
        let meters = cells.get_or_insert_with(|| {
            let inner = lock(&self.inner);
            let mut plane = lock(&self.plane);
            inner.tables.meter_cells(plane.switch_mut(self.ix))
        });
        let zeros: Vec<u32>;
        let (reg, values): (&canary_switch::contract::Register, Vec<&[u32]>) =
            if let Some((i, row)) = self
                .program
                .meters
                .usm
                .iter()
                .chain(&self.program.meters.dsm)
                .enumerate()
                .find(|(_, r)| r.id.id == te.table_id || r.count.id == te.table_id)
            {
                let rows = self.program.meters.usm.len();
                let cells = if i < rows {
                    &meters.usm[i]
                } else {
                    &meters.dsm[i - rows]
                };
                if row.id.id == te.table_id {
                    (&row.id, vec![&cells.id_tag[..], &cells.id[..]])
                } else {
                    (&row.count, vec![&cells.count[..]])
                }
            } else if let Some(r) = self.program.hashpipe.iter().find(|r| r.id == te.table_id) {
                zeros = vec![0; r.size];
                (r, r.members.iter().map(|_| &zeros[..]).collect())
            } else {
                return Err(Status::not_found(format!(
                    "{}: not a register of the program",
                    t.name
                )));
            };
        let only = keyed_index(reg, te)?;
        self.register_entries(reg, &values, only)
    }

    /// `switch_config`'s default entry (the only default entry a controller reads).
    fn read_default_entry(&self, table_id: u32, name: &str) -> Result<Vec<TableEntry>, Status> {
        let table = self
            .program
            .tables()
            .iter()
            .find(|r| r.id == table_id)
            .ok_or_else(|| Status::invalid_argument(format!("{name}: no default entry")))?;
        if table.table != Table::SwitchConfig {
            return Err(Status::unimplemented("default entries of other tables"));
        }
        let config = lock(&self.plane).switch_mut(self.ix).config();
        let e = canary_switch::entries::config(config);
        bfruntime::table_entry(&self.program, &e)
            .map(|x| vec![x])
            .map_err(|e| Status::internal(e.to_string()))
    }

    /// Every cell of register `reg` as an entry, or cell `only`: `values` per data field, in
    /// pipe 0 (the other pipes read zeros).
    fn register_entries(
        &self,
        reg: &canary_switch::contract::Register,
        values: &[&[u32]],
        only: Option<usize>,
    ) -> Result<Vec<TableEntry>, Status> {
        let ix = reg.index.ok_or_else(|| Status::internal("no index"))?;
        let mut out = Vec::with_capacity(reg.size);
        let cells = match only {
            Some(i) => i..i + 1,
            None => 0..reg.size,
        };
        for i in cells {
            let mut fields = Vec::new();
            for ((_, f), vals) in reg.members.iter().zip(values) {
                for p in 0..self.pipes {
                    let v = if p == 0 {
                        vals.get(i).copied().unwrap_or(0)
                    } else {
                        0
                    };
                    fields.push(DataField {
                        field_id: f.id,
                        value: Some(data_field::Value::Stream(
                            u128::from(v).to_be_bytes()[16 - f.bytes()..].to_vec(),
                        )),
                    });
                }
            }
            out.push(TableEntry {
                table_id: reg.id,
                value: Some(table_entry::Value::Key(TableKey {
                    fields: vec![KeyField {
                        field_id: ix.id,
                        match_type: Some(key_field::MatchType::Exact(key_field::Exact {
                            value: (i as u32).to_be_bytes()[4 - ix.bytes()..].to_vec(),
                        })),
                    }],
                })),
                data: Some(TableData {
                    action_id: 0,
                    fields,
                }),
                ..Default::default()
            });
        }
        Ok(out)
    }
}

/// The cell a register read names by its `$REGISTER_INDEX` key, `None` for a read of every
/// cell; an index out of range, or a key of another field, is refused as `bf_switchd` does.
fn keyed_index(
    reg: &canary_switch::contract::Register,
    te: &TableEntry,
) -> Result<Option<usize>, Status> {
    let Some(table_entry::Value::Key(k)) = &te.value else {
        return Ok(None);
    };
    let ix = reg.index.ok_or_else(|| Status::internal("no index"))?;
    let [f] = k.fields.as_slice() else {
        return Err(Status::invalid_argument(format!(
            "{}: a key of {} fields, the register has one",
            reg.name,
            k.fields.len()
        )));
    };
    let value = match (&f.match_type, f.field_id == ix.id) {
        (Some(key_field::MatchType::Exact(e)), true) if e.value.len() <= 8 => {
            e.value.iter().fold(0u64, |a, &b| a << 8 | u64::from(b))
        }
        _ => {
            return Err(Status::invalid_argument(format!(
                "{}: the key is not an exact $REGISTER_INDEX",
                reg.name
            )))
        }
    };
    match usize::try_from(value) {
        Ok(i) if i < reg.size => Ok(Some(i)),
        _ => Err(Status::out_of_range(format!(
            "{}: index {value}, the register has {} cells",
            reg.name, reg.size
        ))),
    }
}
