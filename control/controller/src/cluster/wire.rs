//! What crosses the cluster, as `postcard` bytes: one type per subject. Every message names its
//! epoch; every decode error names the subject it came on.

use super::ClusterError;
use canary_core::detect::{
    Anomalies, FlowCount, MmEntry, Observations, ObservedSegment, SegmentCount, SwitchRecords,
};
use canary_core::fabric::{MeterSnapshot, Parity};
use canary_core::localize::{CanaryParams, SubVerdict};
use canary_core::pathbf::PathBfParams;
use canary_core::sketch::{Bucket, Meter, MeterConfig};
use canary_core::topo::{Host, SegmentId, Switch, SwitchIx, Topology};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    postcard::to_allocvec(msg).expect("our messages serialise")
}

pub fn decode<T: DeserializeOwned>(subject: &str, bytes: &[u8]) -> Result<T, ClusterError> {
    postcard::from_bytes(bytes).map_err(|e| ClusterError::Decode {
        subject: subject.to_string(),
        what: std::any::type_name::<T>()
            .rsplit("::")
            .next()
            .unwrap_or("message")
            .to_string(),
        error: e.to_string(),
    })
}

/// What every worker needs to know of the run, published once by the coordinator.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Setup {
    /// The topology as prepared (switch IDs as the pathBF audit left them, monitors placed).
    pub topology: WireTopology,
    pub pathbf: PathBfParams,
    pub canary: CanaryParams,
    pub parts: Parts,
    /// Segments the coordinator counts and the sum of their pathBFs: a worker that builds
    /// anything else refuses to work.
    pub segments: usize,
    pub segment_bf_sum: u64,
    /// Where the harvest workers read the switches themselves; `None`: the controller reads
    /// them and publishes their registers.
    pub reads: Option<SwitchReads>,
}

/// What a harvest worker needs to read its switches' meters itself (BF Runtime).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchReads {
    /// Every monitor.
    pub switches: Vec<ReadSwitch>,
    /// The program's name as `bf_switchd` loaded it.
    pub p4_name: String,
    /// Deadline of connecting and of every call.
    pub timeout_ms: u64,
    /// A read slower than this is late, as the controller's own harvest would be.
    pub deadline_ms: u64,
    /// [`program_fingerprint`] of the program the controller resolved: a switch that runs
    /// another one is not read.
    pub program: u64,
}

/// A monitor as its harvest worker reaches it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadSwitch {
    pub switch: SwitchIx,
    pub name: String,
    /// `host:port` of its BF Runtime server.
    pub grpc: String,
    pub device_id: u64,
}

/// A fingerprint of a resolved program (every table, register and field ID and size), the same
/// in every process that resolves the same `bfrt.json`.
pub fn program_fingerprint(p: &canary_switch::contract::Program) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_ECMA_182).checksum(format!("{p:?}").as_bytes())
}

/// How each stage is partitioned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parts {
    /// Harvest partitions: switch `s` is harvested by partition `s mod harvest`.
    pub harvest: u32,
    /// Join partitions: a segment is joined by the partition of its upstream switch.
    pub join: u32,
    /// Localizer partitions: sub-problem `p` is solved by partition `p mod localize`.
    pub localize: u32,
}

/// A topology as its parts, rebuilt with [`Topology::new`] (directed links come back in the
/// same order, so link indices agree).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireTopology {
    pub name: String,
    pub switches: Vec<Switch>,
    pub hosts: Vec<Host>,
    pub links: Vec<(SwitchIx, SwitchIx)>,
}

impl WireTopology {
    pub fn of(t: &Topology) -> Self {
        WireTopology {
            name: t.name.clone(),
            switches: t.switches.clone(),
            hosts: t.hosts.clone(),
            // `Topology::new` lays each undirected link out as (a, b), (b, a).
            links: t.links.iter().step_by(2).map(|l| (l.from, l.to)).collect(),
        }
    }

    pub fn build(self) -> Result<Topology, ClusterError> {
        let t = Topology::new(self.name, self.switches, self.hosts, &self.links)
            .map_err(|e| ClusterError::Setup(format!("the run's topology: {e}")))?;
        Ok(t)
    }
}

/// A meter as its occupied buckets: what a switch's registers hold, without the empty ones.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SparseMeter<B> {
    pub rows: u32,
    pub width: u32,
    pub used: Vec<(u32, B)>,
}

impl<B: Bucket + Serialize> SparseMeter<B> {
    pub fn of(m: &Meter<B>) -> Self {
        let c = m.config();
        SparseMeter {
            rows: c.rows as u32,
            width: c.width as u32,
            used: m
                .buckets()
                .iter()
                .enumerate()
                .filter(|(_, b)| b.flow().is_some())
                .map(|(i, b)| (i as u32, b.clone()))
                .collect(),
        }
    }

    pub fn meter(self, subject: &str) -> Result<Meter<B>, ClusterError> {
        let bad = |what: String| ClusterError::Decode {
            subject: subject.to_string(),
            what: "meter".into(),
            error: what,
        };
        let config = MeterConfig::new(self.rows as usize, self.width as usize)
            .map_err(|e| bad(e.to_string()))?;
        let mut buckets = vec![B::default(); config.num_buckets()];
        for (i, b) in self.used {
            *buckets
                .get_mut(i as usize)
                .ok_or_else(|| bad(format!("bucket {i} beyond {}", config.num_buckets())))? = b;
        }
        Meter::from_buckets(config, buckets).map_err(|e| bad(e.to_string()))
    }
}

/// One switch's registers of one epoch.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireSnapshot {
    pub switch: SwitchIx,
    pub epoch: u64,
    pub usm: SparseMeter<canary_core::sketch::UsmBucket>,
    pub dsm: SparseMeter<canary_core::sketch::DsmBucket>,
    /// The DSM records of the flows expected at this switch that its DSM proves never arrived
    /// (`detect::vanished`, found by the controller, which holds the snapshot: far fewer bytes
    /// than the expected flows themselves).
    pub vanished: Vec<canary_core::detect::DsmEntry>,
}

impl WireSnapshot {
    pub fn of(s: &MeterSnapshot) -> Self {
        WireSnapshot {
            switch: s.switch,
            epoch: s.epoch,
            usm: SparseMeter::of(&s.usm),
            dsm: SparseMeter::of(&s.dsm),
            vanished: Vec::new(),
        }
    }

    /// The snapshot, and the records of its vanished flows.
    pub fn snapshot(
        self,
        subject: &str,
    ) -> Result<(MeterSnapshot, Vec<canary_core::detect::DsmEntry>), ClusterError> {
        let snap = MeterSnapshot {
            switch: self.switch,
            epoch: self.epoch,
            parity: Parity::of_epoch(self.epoch),
            usm: self.usm.meter(subject)?,
            dsm: self.dsm.meter(subject)?,
        };
        Ok((snap, self.vanished))
    }
}

/// What `regs.<h>` carries: the registers the controller read, or what to read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum HarvestInput {
    Registers(Registers),
    Reads(ReadOrders),
}

/// `regs.<h>` when the workers read the switches: what each of partition `h`'s monitors'
/// reads takes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReadOrders {
    pub epoch: u64,
    pub part: u32,
    /// A partition's orders go in chunks that fit a NATS message: this one of `chunks`.
    pub chunk: u32,
    pub chunks: u32,
    /// This chunk's place among all partitions' chunks of the epoch (its `harvested` answer's).
    pub index: u32,
    pub switches: Vec<SwitchOrder>,
}

/// One monitor's read: its rule IDs (as a change to a table on `ids.<switch>`), from which the
/// worker finds the cells to read as the controller would (`meters::harvest_cells`), and the
/// flows expected there (those its DSM proves vanished are loss).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SwitchOrder {
    pub switch: SwitchIx,
    pub ids: IdsSince,
    pub expected: Vec<canary_core::detect::Expected>,
}

/// A switch's rule IDs now: the table of version `keyframe` on `ids.<switch>`, with the IDs
/// assigned (or reassigned) and freed since. Rules change every epoch while flows are picked and
/// watched in rounds; the whole table is published again only when the change since would be
/// more than half of it, so an order carries at most that.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IdsSince {
    pub keyframe: u64,
    pub added: Vec<(u32, canary_switch::rule_ids::RuleKey)>,
    pub removed: Vec<u32>,
    pub unknown_ok: bool,
}

/// `ids.<switch>`: a switch's whole rule-ID table, published when the change since the last
/// one grew past half of it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireIds {
    pub switch: SwitchIx,
    pub version: u64,
    pub table: canary_switch::rule_ids::IdTable,
}

impl IdsSince {
    /// The change from `keyframe` (version `version`) to `now`.
    pub fn between(
        version: u64,
        keyframe: &canary_switch::rule_ids::IdTable,
        now: &canary_switch::rule_ids::IdTable,
    ) -> Self {
        let old: BTreeMap<u32, canary_switch::rule_ids::RuleKey> =
            keyframe.by_id.iter().copied().collect();
        let new: BTreeMap<u32, canary_switch::rule_ids::RuleKey> =
            now.by_id.iter().copied().collect();
        IdsSince {
            keyframe: version,
            added: new
                .iter()
                .filter(|(i, k)| old.get(i) != Some(k))
                .map(|(&i, &k)| (i, k))
                .collect(),
            removed: old
                .keys()
                .filter(|i| !new.contains_key(i))
                .copied()
                .collect(),
            unknown_ok: now.unknown_ok,
        }
    }

    /// `keyframe` with this change applied: the table now.
    pub fn apply(
        &self,
        keyframe: &canary_switch::rule_ids::IdTable,
    ) -> canary_switch::rule_ids::IdTable {
        let mut t: BTreeMap<u32, canary_switch::rule_ids::RuleKey> =
            keyframe.by_id.iter().copied().collect();
        for i in &self.removed {
            t.remove(i);
        }
        t.extend(self.added.iter().copied());
        canary_switch::rule_ids::IdTable {
            by_id: t.into_iter().collect(),
            unknown_ok: self.unknown_ok,
        }
    }

    /// IDs this change names.
    pub fn len(&self) -> usize {
        self.added.len() + self.removed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `harvested`: how the reads of one chunk of orders went; `part` is the chunk's
/// [`ReadOrders::index`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Harvested {
    pub epoch: u64,
    pub part: u32,
    pub delivered: u64,
    pub retries: u32,
    pub outcomes: Vec<(SwitchIx, canary_switch::fabric::ReadOutcome)>,
}

/// `regs.<h>`: the registers of harvest partition `h`'s switches that answered.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Registers {
    pub epoch: u64,
    pub part: u32,
    pub switches: Vec<WireSnapshot>,
}

/// `records.<j>`: what harvest partition `from` read for join partition `part`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Records {
    pub epoch: u64,
    pub from: u32,
    /// Which of harvest partition `from`'s chunks of the epoch this comes from, of `chunks`
    /// (one where the controller read the registers).
    pub chunk: u32,
    pub chunks: u32,
    pub part: u32,
    /// Times the harvest worker was handed its input (more than 1: a worker was lost).
    pub delivered: u64,
    /// Times the worker took its inputs' pull up again, connected to another server or
    /// published again before this was stored (a server died, or its servers were electing a
    /// leader).
    pub retries: u32,
    pub records: Vec<SwitchRecords>,
}

/// `joined`: join partition `part`'s share of the epoch's minus meters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Joined {
    pub epoch: u64,
    pub part: u32,
    /// The most times any input of this result was delivered, harvest and join alike.
    pub delivered: u64,
    /// The most [`Records::retries`] of its inputs, or the join worker's own.
    pub retries: u32,
    /// Entries grouped by upstream switch, in the order the join made them.
    pub entries: Vec<(SwitchIx, Vec<MmEntry>)>,
    pub segments: BTreeMap<SegmentId, SegmentCount>,
    pub anomalies: Anomalies,
    pub torn_at: BTreeMap<SwitchIx, u64>,
    /// Of the entries, flows that never arrived.
    pub vanished: u64,
}

/// `localize.<l>`: the observed segments of localizer partition `part`'s sub-problems.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Localize {
    pub epoch: u64,
    pub part: u32,
    /// Pins give way by likelihood this epoch (`CanaryParams::likelihood_ties`).
    pub ties: bool,
    /// The links blamed the epoch before (`Canary::incumbents`).
    #[serde(default)]
    pub incumbents: Vec<u32>,
    pub segments: Vec<WireSegment>,
}

/// An observed segment, every field on the wire.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireSegment {
    pub segment: SegmentId,
    pub subproblem: u32,
    pub links: Vec<u32>,
    pub sent: u64,
    pub lost: u64,
    pub success: f64,
    pub background: bool,
    pub flows: Vec<FlowCount>,
}

impl From<ObservedSegment> for WireSegment {
    fn from(s: ObservedSegment) -> Self {
        WireSegment {
            segment: s.segment,
            subproblem: s.subproblem,
            links: s.links,
            sent: s.sent,
            lost: s.lost,
            success: s.success,
            background: s.background,
            flows: s.flows,
        }
    }
}

impl Localize {
    pub fn observations(self) -> Observations {
        Observations {
            segments: self
                .segments
                .into_iter()
                .map(|s| ObservedSegment {
                    segment: s.segment,
                    subproblem: s.subproblem,
                    links: s.links,
                    sent: s.sent,
                    lost: s.lost,
                    success: s.success,
                    background: s.background,
                    flows: s.flows,
                })
                .collect(),
        }
    }
}

/// `verdicts`: localizer partition `part`'s diagnoses.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Verdicts {
    pub epoch: u64,
    pub part: u32,
    pub delivered: u64,
    /// As [`Records::retries`].
    pub retries: u32,
    pub subs: Vec<SubVerdict>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::FlowId;
    use canary_switch::rule_ids::{IdTable, RuleKey};

    fn key(n: u32) -> RuleKey {
        RuleKey::Usm(FlowId::v4(n, 0x0a00_0001, 6, 1000, 80))
    }

    #[test]
    fn a_change_since_a_keyframe_rebuilds_the_table() {
        let keyframe = IdTable {
            by_id: vec![(1, key(1)), (2, key(2)), (3, key(3))],
            unknown_ok: true,
        };
        // 2 freed, 3 reassigned to another rule, 4 new.
        let now = IdTable {
            by_id: vec![(1, key(1)), (3, key(9)), (4, key(4))],
            unknown_ok: false,
        };
        let since = IdsSince::between(7, &keyframe, &now);
        assert_eq!(since.keyframe, 7);
        assert_eq!(since.removed, vec![2]);
        assert_eq!(since.added, vec![(3, key(9)), (4, key(4))]);
        assert_eq!(since.apply(&keyframe), now);
        assert!(IdsSince::between(7, &now, &now).is_empty());
    }
}
