//! Reads: every entry of some tables, and `switch_config`'s default entry, which tells whether
//! the switch kept Canary's state.

use super::{from_status, unreachable, TofinoDriver};
use crate::contract::Table;
use crate::driver::DriverError;
use crate::drivers::bfruntime;
use bfrt_proto::bfrt::{self, entity, ReadRequest, TableEntry};
use std::collections::HashMap;

impl TofinoDriver {
    /// A Read of `entities`, answered as a stream of responses (the first awaited up to the
    /// timeout).
    async fn open_read(
        &mut self,
        entities: Vec<bfrt::Entity>,
    ) -> Result<tonic::Streaming<bfrt::ReadResponse>, DriverError> {
        let req = ReadRequest {
            target: Some(self.target()),
            client_id: self.opts.client_id,
            entities,
            p4_name: self.opts.p4_name.clone(),
        };
        let (name, timeout) = (self.bound.name.clone(), self.opts.timeout);
        let rpc = &mut self.session()?.rpc;
        Ok(tokio::time::timeout(timeout, rpc.read(req))
            .await
            .map_err(|_| unreachable(format!("{name}: no answer to Read")))?
            .map_err(|s| from_status(&name, "Read", s))?
            .into_inner())
    }

    /// Every entry of the tables `ids`, by table id.
    pub(super) async fn read_tables(
        &mut self,
        ids: &[u32],
    ) -> Result<HashMap<u32, Vec<TableEntry>>, DriverError> {
        let entities = ids.iter().map(|&id| bfruntime::read_all(id)).collect();
        self.read_entities(entities).await
    }

    /// The entries `entities` name (whole tables or single keys), by table id, in one Read.
    pub(super) async fn read_entities(
        &mut self,
        entities: Vec<bfrt::Entity>,
    ) -> Result<HashMap<u32, Vec<TableEntry>>, DriverError> {
        let (name, timeout) = (self.bound.name.clone(), self.opts.timeout);
        let mut stream = self.open_read(entities).await?;
        let mut out: HashMap<u32, Vec<TableEntry>> = HashMap::new();
        while let Some(msg) = tokio::time::timeout(timeout, stream.message())
            .await
            .map_err(|_| unreachable(format!("{name}: Read stalled")))?
            .map_err(|s| from_status(&name, "Read", s))?
        {
            bfruntime::entries_by_table(msg, &mut out);
        }
        Ok(out)
    }

    /// `switch_config`'s default entry arguments in the contract's order; empty when it is
    /// back at the program's default.
    pub(super) async fn read_config(&mut self) -> Result<Vec<u128>, DriverError> {
        let t = self.prog()?.table(Table::SwitchConfig).clone();
        let entities = vec![bfrt::Entity {
            entity: Some(entity::Entity::TableEntry(TableEntry {
                table_id: t.id,
                is_default_entry: true,
                ..Default::default()
            })),
        }];
        let name = self.bound.name.clone();
        let mut stream = self.open_read(entities).await?;
        let mut args: Vec<u128> = Vec::new();
        while let Some(msg) = stream
            .message()
            .await
            .map_err(|s| from_status(&name, "Read", s))?
        {
            if let Some(a) = bfruntime::default_entry_args(&t, msg) {
                args = a;
            }
        }
        Ok(args)
    }

    /// Whether `switch_config` holds this switch's configuration (Canary's state survived).
    pub(super) async fn holds_config(&mut self) -> Result<bool, DriverError> {
        let args = self.read_config().await?;
        Ok(crate::entries::holds_config(&args, self.monitor, self.mask))
    }
}
