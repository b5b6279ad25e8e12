//! A harvest worker's own reads of its switches' meters (BF Runtime, as a reader: no
//! mastership, no writes). It reads what the controller's order names, decodes with the rule
//! IDs the controller published, and makes the switch's records as the controller's own harvest
//! would. What a harvest writes to a switch (stale cells, HashPipe) stays with the controller.

use crate::cluster::wire::{self, program_fingerprint, IdsSince, ReadOrders, SwitchReads, WireIds};
use crate::cluster::ClusterConfig;
use async_nats::jetstream::Context;
use canary_core::detect::SwitchRecords;
use canary_core::fabric::SwitchError;
use canary_core::pathbf::PathBfCodec;
use canary_core::topo::{Segments, SwitchIx, SwitchPorts};
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::tofino::{self, TofinoDriver, TofinoOptions};
use canary_switch::fabric::{read_harvest, ReadOutcome};
use canary_switch::meters;
use canary_switch::rule_ids::{IdTable, RuleIds};
use canary_switch::switches::{BoundSwitch, SwitchEndpoint};
use futures::stream::{FuturesUnordered, StreamExt};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// BF Runtime client IDs of the harvest workers: this plus the partition (the controller's is
/// `--client-id`, 1 unless given).
const READER_CLIENT_IDS: u32 = 1000;

/// One switch as this worker reads it.
struct Reader {
    bound: BoundSwitch,
    driver: Option<TofinoDriver>,
}

/// The switches of one harvest partition, connected as they are first read.
pub(super) struct Readers {
    setup: SwitchReads,
    opts: TofinoOptions,
    switches: HashMap<SwitchIx, Reader>,
    /// Each switch's rule-ID table as last fetched from `ids.<switch>`, and its version.
    keyframes: HashMap<SwitchIx, (u64, IdTable)>,
}

impl Readers {
    pub(super) fn new(setup: SwitchReads, partition: u32) -> Self {
        let opts = TofinoOptions {
            p4_name: setup.p4_name.clone(),
            client_id: READER_CLIENT_IDS + partition,
            timeout: Duration::from_millis(setup.timeout_ms),
            reader: true,
            ..Default::default()
        };
        let switches = setup
            .switches
            .iter()
            .map(|s| {
                let bound = BoundSwitch {
                    ix: s.switch,
                    name: s.name.clone(),
                    endpoint: SwitchEndpoint {
                        grpc: s.grpc.clone(),
                        device_id: s.device_id,
                        thrift: None,
                        ports: Default::default(),
                        tls: None,
                    },
                    ports: SwitchPorts::default(),
                };
                (
                    s.switch,
                    Reader {
                        bound,
                        driver: None,
                    },
                )
            })
            .collect();
        Readers {
            setup,
            opts,
            switches,
            keyframes: HashMap::new(),
        }
    }

    /// Reads every switch `orders` names, at once: the records of those read, and how each
    /// read went. `again`: the order was handed out before (its worker was lost), so the
    /// registers may already count a later epoch: nothing is read, every switch is late.
    pub(super) async fn read(
        &mut self,
        js: &Context,
        cfg: &ClusterConfig,
        (segments, codec): (&Segments, &PathBfCodec),
        orders: &ReadOrders,
        again: bool,
    ) -> (Vec<SwitchRecords>, Vec<(SwitchIx, ReadOutcome)>) {
        let mut outcomes = Vec::new();
        let mut wanted = HashMap::new();
        for o in &orders.switches {
            let failed = |error: SwitchError, late| (o.switch, ReadOutcome::Failed { error, late });
            if again {
                let why = "its read was handed out again (a harvest worker was lost): the \
                           registers may already count a later epoch";
                outcomes.push(failed(SwitchError::Other(why.into()), true));
                continue;
            }
            if !self.switches.contains_key(&o.switch) {
                let why = "not a monitor of the run's setup";
                outcomes.push(failed(SwitchError::Other(why.into()), false));
                continue;
            }
            match self.rule_ids(js, cfg, o.switch, &o.ids).await {
                Ok(ids) => {
                    wanted.insert(o.switch, (o, ids));
                }
                Err(e) => outcomes.push(failed(SwitchError::Other(e), false)),
            }
        }
        let (epoch, deadline) = (orders.epoch, Duration::from_millis(self.setup.deadline_ms));
        let (opts, program) = (&self.opts, self.setup.program);
        let mut reads: FuturesUnordered<_> = self
            .switches
            .iter_mut()
            .filter_map(|(s, r)| wanted.remove(s).map(|w| (r, w)))
            .map(|(r, (o, ids))| async move {
                let ids = &ids;
                let read = match r.connected(opts, program).await {
                    Ok(driver) => {
                        // The cells the controller's own harvest would read.
                        let cells = driver
                            .program()
                            .and_then(|p| meters::harvest_cells(&p.meters, ids.keys(), epoch));
                        read_harvest(driver, o.switch, epoch, cells.as_deref(), ids, deadline).await
                    }
                    Err(e) => Err((e, false)),
                };
                (o, read)
            })
            .collect();
        let mut records = Vec::new();
        while let Some((o, read)) = reads.next().await {
            match read {
                Ok((snap, stale)) => {
                    records.push(SwitchRecords::decode_expecting(
                        segments,
                        codec,
                        &snap,
                        &o.expected,
                    ));
                    outcomes.push((o.switch, ReadOutcome::Read { stale }));
                }
                Err((error, late)) => {
                    outcomes.push((o.switch, ReadOutcome::Failed { error, late }));
                }
            }
        }
        records.sort_by_key(|r| r.switch);
        outcomes.sort_by_key(|o| o.0);
        (records, outcomes)
    }

    /// Switch `s`'s rule IDs as `since` says: its table of that version on `ids.<s>` (fetched
    /// when this worker holds another) with the change applied.
    async fn rule_ids(
        &mut self,
        js: &Context,
        cfg: &ClusterConfig,
        s: SwitchIx,
        since: &IdsSince,
    ) -> Result<RuleIds, String> {
        if self
            .keyframes
            .get(&s)
            .is_none_or(|(v, _)| *v != since.keyframe)
        {
            let subject = cfg.ids(s);
            let stream = js
                .get_stream(cfg.stream())
                .await
                .map_err(|e| format!("the run's stream: {e}"))?;
            let m = stream
                .get_last_raw_message_by_subject(&subject)
                .await
                .map_err(|e| format!("{subject}: {e}"))?;
            let w: WireIds = wire::decode(&subject, &m.payload).map_err(|e| e.to_string())?;
            if w.version != since.keyframe || w.switch != s {
                return Err(format!(
                    "{subject}: rule IDs of version {} where the read names {}",
                    w.version, since.keyframe
                ));
            }
            self.keyframes.insert(s, (w.version, w.table));
        }
        Ok(RuleIds::for_decoding(&since.apply(&self.keyframes[&s].1)))
    }
}

impl Reader {
    /// The driver, connected as a reader to a switch that runs the controller's program.
    async fn connected(
        &mut self,
        opts: &TofinoOptions,
        program: u64,
    ) -> Result<&mut TofinoDriver, SwitchError> {
        let up = self.driver.as_ref().is_some_and(|d| d.connected());
        if !up {
            self.driver = None;
            let name = &self.bound.name;
            let unreachable = |e: canary_switch::driver::DriverError| {
                SwitchError::Unreachable(format!("{name}: {e}"))
            };
            let p = tofino::fetch_program(&self.bound, opts)
                .await
                .map_err(unreachable)?;
            if program_fingerprint(&p) != program {
                return Err(SwitchError::Other(format!(
                    "{name}: runs another build of the program than the controller resolved"
                )));
            }
            let mut d = TofinoDriver::new(self.bound.clone(), true, 0, Arc::new(p), opts.clone());
            d.connect().await.map_err(unreachable)?;
            self.driver = Some(d);
        }
        Ok(self.driver.as_mut().expect("connected above"))
    }
}
