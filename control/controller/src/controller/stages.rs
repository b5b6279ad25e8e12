//! Where an epoch's decoding, joins and localization run, chosen once: here, or on a cluster's
//! workers ([`ClusterStages`]). The loop asks the stages; it never branches on where they are.

use crate::cluster::ClusterStages;
use crate::report::{ClusterReport, EpochReport};
use canary_core::detect::{join, vanished, EpochDetection, Expected, Observations, SwitchRecords};
use canary_core::fabric::MeterSnapshot;
use canary_core::localize::{name_sick_switches, Canary, Localizer, Verdict};
use canary_core::pathbf::PathBfCodec;
use canary_core::topo::{Segments, SwitchIx, Topology};
use std::collections::{HashMap, HashSet};

pub(super) enum Stages {
    Here,
    Cluster(Box<ClusterStages>),
}

impl Stages {
    /// Takes one switch's harvest: decoded into `records` here, or kept for its harvest
    /// partition with the `expected` flows it proves vanished.
    pub(super) fn take(
        &mut self,
        snap: &MeterSnapshot,
        expected: &[Expected],
        (segments, codec): (&Segments, &PathBfCodec),
        records: &mut Vec<SwitchRecords>,
    ) {
        match self {
            Stages::Here => records.push(SwitchRecords::decode_expecting(
                segments, codec, snap, expected,
            )),
            Stages::Cluster(c) => c.harvested(snap, vanished(segments, snap, expected).collect()),
        }
    }

    /// Before the harvest: the flows expected at each monitor and the monitors that missed the
    /// flip, for reads made elsewhere (a cluster's harvest workers).
    pub(super) fn expecting<H: std::hash::BuildHasher>(
        &mut self,
        expected: &HashMap<SwitchIx, Vec<Expected>, H>,
        skip: &HashSet<SwitchIx>,
    ) {
        if let Stages::Cluster(c) = self {
            c.expecting(expected, skip);
        }
    }

    /// The monitors harvested this epoch.
    pub(super) fn answered(&self, records: &[SwitchRecords]) -> HashSet<SwitchIx> {
        match self {
            Stages::Here => records.iter().map(|r| r.switch).collect(),
            Stages::Cluster(c) => c.answered().into_iter().collect(),
        }
    }

    /// The epoch's minus meters, joined into segment counts.
    pub(super) async fn detect(
        &mut self,
        epoch: u64,
        segments: &Segments,
        records: &[SwitchRecords],
    ) -> EpochDetection {
        match self {
            Stages::Here => join(segments, records),
            Stages::Cluster(c) => c.detect(epoch).await,
        }
    }

    /// `localizer`'s verdict on `obs`.
    pub(super) async fn localize(
        &mut self,
        epoch: u64,
        obs: &Observations,
        localizer: Canary,
        topo: &Topology,
    ) -> Verdict {
        match self {
            Stages::Here => localizer.localize(topo, obs),
            Stages::Cluster(c) => {
                let ties = localizer.params.likelihood_ties;
                let mut v = c.localize(epoch, obs, ties, &localizer.incumbents).await;
                name_sick_switches(topo, obs, &mut v);
                v
            }
        }
    }

    /// Hands the finished epoch's report on (to the cluster's reporter).
    pub(super) async fn report(&mut self, r: &EpochReport) {
        if let Stages::Cluster(c) = self {
            c.report(r).await;
        }
    }

    /// What the epoch waited for on the cluster.
    pub(super) fn epoch_report(&self) -> Option<ClusterReport> {
        match self {
            Stages::Here => None,
            Stages::Cluster(c) => Some(c.epoch_report()),
        }
    }
}
