//! One monitor's meters reduced to records as they are harvested: every clean DSM record decoded
//! to the segment its pathBF names, and every clean USM flow. The register images can then be
//! dropped switch by switch; what the minus meters need of an epoch is the records, a few dozen
//! bytes per monitored flow, wherever the meters come from and however wide they are.

use super::Anomalies;
use crate::fabric::MeterSnapshot;
use crate::pathbf::{DecodedId, PathBfCodec};
use crate::sketch::{CleanLookup, FlowHashes};
use crate::topo::{SegmentId, Segments, SwitchIx};
use crate::FlowId;
use serde::{Deserialize, Serialize};

/// A clean DSM record decoded to its segment, waiting for its upstream count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsmEntry {
    pub flow: FlowId,
    pub segment: SegmentId,
    /// The segment's upstream monitor, whose USM holds the flow's sent count.
    pub upstream: SwitchIx,
    pub count: u32,
    /// The flow was expected on this segment and the DSM proves none of its packets arrived
    /// ([`SwitchRecords::decode_expecting`]): whatever its USM counted was lost on the way.
    /// Always written: records cross the cluster in postcard, which has no optional fields.
    #[serde(default)]
    pub vanished: bool,
}

/// A monitored flow the controller expects at its segment's downstream monitor: its rules were
/// in place for the whole epoch and it was last seen arriving on this segment, on forwarding
/// that has not changed since.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Expected {
    pub flow: FlowId,
    pub segment: SegmentId,
}

/// A flow with clean USM buckets: their count, or `torn` when they disagree (the meter was read
/// while still counting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsmEntry {
    pub flow: FlowId,
    pub count: u32,
    pub torn: bool,
}

impl UsmEntry {
    pub fn lookup(&self) -> CleanLookup {
        if self.torn {
            CleanLookup::Torn
        } else {
            CleanLookup::Count(self.count)
        }
    }
}

/// A monitor's records of one epoch, or a part of them (see [`SwitchRecords::split`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SwitchRecords {
    pub switch: SwitchIx,
    pub epoch: u64,
    /// The switch answered, and this part carries its USM and its own anomalies. A part that
    /// only carries DSM records for other upstream switches has `answered: false`.
    pub answered: bool,
    /// Clean DSM records, in the order of each flow's first clean bucket.
    pub dsm: Vec<DsmEntry>,
    /// Clean USM flows, in the order of each flow's first clean bucket.
    pub usm: Vec<UsmEntry>,
    /// Dirty buckets of both meters, DSM records that decode to no segment or to several, DSM
    /// flows read torn.
    pub anomalies: Anomalies,
}

impl SwitchRecords {
    /// Reads a harvested snapshot into records.
    pub fn decode(segments: &Segments, codec: &PathBfCodec, snap: &MeterSnapshot) -> Self {
        let mut a = Anomalies {
            dirty_dsm_buckets: snap.dsm.dirty_buckets() as u64,
            dirty_usm_buckets: snap.usm.dirty_buckets() as u64,
            ..Default::default()
        };
        let flows = snap.dsm.clean_flows_scan();
        a.torn += flows.torn();
        let mut dsm = Vec::with_capacity(flows.len());
        for i in 0..flows.len() {
            let (rec, _) = flows.get(i);
            let segment = match codec.decode_id(snap.switch, rec.path_bf) {
                DecodedId::Segment(s) => s,
                DecodedId::Ambiguous => {
                    a.ambiguous += 1;
                    continue;
                }
                DecodedId::Unknown => {
                    a.undecodable += 1;
                    continue;
                }
            };
            dsm.push(DsmEntry {
                flow: rec.flow,
                segment,
                upstream: segments.get(segment).upstream(),
                count: rec.count,
                vanished: false,
            });
        }
        let usm = snap
            .usm
            .clean_flows()
            .into_iter()
            .map(|(flow, found)| match found {
                CleanLookup::Count(count) => UsmEntry {
                    flow,
                    count,
                    torn: false,
                },
                _ => UsmEntry {
                    flow,
                    count: 0,
                    torn: true,
                },
            })
            .collect();
        SwitchRecords {
            switch: snap.switch,
            epoch: snap.epoch,
            answered: true,
            dsm,
            usm,
            anomalies: a,
        }
    }

    /// [`SwitchRecords::decode`], and for every flow `expected` here (on a segment into this
    /// switch) that its DSM proves never arrived ([`Dsm::proves_absent`]), a record of 0
    /// packets marked [`DsmEntry::vanished`]: the join charges what its USM counted to the
    /// segment as lost. A flow whose buckets all turned dirty proves nothing and gives no
    /// record, as a flow without a clean bucket never does.
    ///
    /// [`Dsm::proves_absent`]: crate::sketch::Dsm::proves_absent
    pub fn decode_expecting(
        segments: &Segments,
        codec: &PathBfCodec,
        snap: &MeterSnapshot,
        expected: &[Expected],
    ) -> Self {
        let mut r = Self::decode(segments, codec, snap);
        r.dsm.extend(vanished(segments, snap, expected));
        r
    }

    /// The records as the join partitions need them, `part_of` naming the partition of a
    /// switch: the switch's own partition gets its USM, its anomalies and the DSM records of
    /// segments that start in that partition; every other partition with segments into this
    /// switch gets their DSM records. Joining the parts of every partition gives what joining the
    /// whole gives. Parts come in partition order, the own part always among them.
    pub fn split(self, part_of: impl Fn(SwitchIx) -> u32) -> Vec<(u32, SwitchRecords)> {
        let own = part_of(self.switch);
        let mut parts: std::collections::BTreeMap<u32, SwitchRecords> = Default::default();
        parts.insert(
            own,
            SwitchRecords {
                switch: self.switch,
                epoch: self.epoch,
                answered: self.answered,
                dsm: Vec::new(),
                usm: self.usm,
                anomalies: self.anomalies,
            },
        );
        for e in self.dsm {
            parts
                .entry(part_of(e.upstream))
                .or_insert_with(|| SwitchRecords {
                    switch: self.switch,
                    epoch: self.epoch,
                    ..Default::default()
                })
                .dsm
                .push(e);
        }
        parts.into_iter().collect()
    }

    /// Flows these records carry (DSM and USM), for sizing.
    pub fn len(&self) -> usize {
        self.dsm.len() + self.usm.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dsm.is_empty() && self.usm.is_empty()
    }
}

/// The records of the flows `expected` at `snap`'s switch that its DSM proves absent.
pub fn vanished<'a>(
    segments: &'a Segments,
    snap: &'a MeterSnapshot,
    expected: &'a [Expected],
) -> impl Iterator<Item = DsmEntry> + 'a {
    expected
        .iter()
        .filter(move |e| segments.get(e.segment).downstream() == snap.switch)
        .filter(move |e| snap.dsm.proves_absent(&e.flow, FlowHashes::of(&e.flow)))
        .map(move |e| DsmEntry {
            flow: e.flow,
            segment: e.segment,
            upstream: segments.get(e.segment).upstream(),
            count: 0,
            vanished: true,
        })
}
