//! P4Runtime reads: a counter cell, `switch_config`'s default action (whether the switch kept
//! Canary's state), and the rules installed in the monitoring tables.

use super::{from_p4rt, Bmv2Driver};
use crate::contract::Table;
use crate::driver::{DriverError, Installed};
use crate::drivers::p4runtime;

impl Bmv2Driver {
    /// Packets counted in cell `index` of the indirect counter `counter_id` (P4Runtime read).
    pub async fn read_counter(&mut self, counter_id: u32, index: i64) -> Result<u64, DriverError> {
        use bfrt_proto::p4rt::{entity, CounterEntry, Entity, Index};
        let e = Entity {
            entity: Some(entity::Entity::CounterEntry(CounterEntry {
                counter_id,
                index: Some(Index { index }),
                data: None,
            })),
        };
        let got = self.client()?.read(vec![e]).await.map_err(from_p4rt)?;
        p4runtime::counter_packets(&got).ok_or_else(|| {
            DriverError::Refused(format!(
                "counter {counter_id}[{index}]: no counter entry in the answer"
            ))
        })
    }

    /// `switch_config`'s default action arguments in the contract's order; empty when the
    /// table is back at the program's default (a restart or a new pipeline).
    pub(super) async fn read_config(&mut self) -> Result<Vec<u128>, DriverError> {
        use bfrt_proto::p4rt::{entity, Entity, TableEntry};
        let t = self.prog.program.table(Table::SwitchConfig).clone();
        let e = Entity {
            entity: Some(entity::Entity::TableEntry(TableEntry {
                table_id: t.id,
                is_default_action: true,
                ..Default::default()
            })),
        };
        let got = self.client()?.read(vec![e]).await.map_err(from_p4rt)?;
        // The program's own default (no action of ours) reads as "not configured".
        Ok(p4runtime::default_action_args(&t, got).unwrap_or_default())
    }

    /// Whether `switch_config` holds this switch's configuration: after a restart or a new
    /// pipeline its default action reads back as the program's, not Canary's.
    pub(super) async fn holds_config(&mut self) -> Result<bool, DriverError> {
        let args = self.read_config().await?;
        Ok(crate::entries::holds_config(&args, self.monitor, self.mask))
    }

    /// The configuration and the rules of the USM, DSM and HH tables, as the switch holds them.
    pub(super) async fn read_installed_entries(&mut self) -> Result<Installed, DriverError> {
        use bfrt_proto::p4rt::{entity, Entity, TableEntry};
        let prog = self.prog.clone();
        let mut out = Installed {
            config: self.read_config().await?,
            ..Default::default()
        };
        for table in [Table::Usm, Table::Dsm, Table::Hh] {
            // A table id alone reads every entry of the table.
            let e = Entity {
                entity: Some(entity::Entity::TableEntry(TableEntry {
                    table_id: prog.program.table(table).id,
                    ..Default::default()
                })),
            };
            for got in self.client()?.read(vec![e]).await.map_err(from_p4rt)? {
                let Some(entity::Entity::TableEntry(te)) = got.entity else {
                    continue;
                };
                let rule = p4runtime::entry_of(&prog.program, table, &te)
                    .and_then(|e| crate::entries::read_rule(&e))
                    .map_err(|e| DriverError::Program(format!("{}: {e}", self.bound.name)))?;
                out.rules.push(rule);
            }
        }
        Ok(out)
    }
}
