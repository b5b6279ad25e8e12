//! What each switch lost during a phase, from the testbed's nftables counters.

use super::Action;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub(super) struct Phase {
    pub(super) round: u32,
    pub(super) action: Action,
    pub(super) epochs: u64,
    /// Frames the switches' ports took in during the phase.
    pub(super) frames_in: u64,
    /// Took in less sent, per switch (only the switches where it is not 0).
    pub(super) lost: BTreeMap<String, i64>,
    pub(super) lost_total: i64,
    /// The slowest epoch's calls, all monitors at once, milliseconds.
    pub(super) slowest_calls_ms: u64,
    /// Heavy-hitter digests the monitors sent during the phase.
    pub(super) digests: usize,
}

/// Every counter of the testbed's table: name to packets.
pub(super) fn counters(table: &str) -> Result<BTreeMap<String, u64>> {
    let out = std::process::Command::new("nft")
        .args(["-j", "list", "counters", "table", "netdev", table])
        .output()
        .context("running nft (the testbed's packet counters)")?;
    if !out.status.success() {
        bail!(
            "nft list counters table netdev {table}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    counters_of(&out.stdout)
}

/// Packets per counter name from `nft -j list counters`.
fn counters_of(json: &[u8]) -> Result<BTreeMap<String, u64>> {
    let doc: serde_json::Value = serde_json::from_slice(json).context("nft's JSON")?;
    let items = doc["nftables"].as_array().cloned().unwrap_or_default();
    Ok(items
        .iter()
        .filter_map(|i| {
            let c = i.get("counter")?;
            Some((c["name"].as_str()?.to_string(), c["packets"].as_u64()?))
        })
        .collect())
}

/// What each switch took in less what it sent between two readings. A switch's counters are
/// `c_<switch>_eth<N>_in` and `_out` (the testbed names a switch's ports `<switch>-eth<N>`).
pub(super) fn phase_loss(
    switches: &[String],
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    round: u32,
    action: Action,
    epochs: u64,
) -> Phase {
    let delta = |name: &str| {
        after
            .get(name)
            .unwrap_or(&0)
            .saturating_sub(*before.get(name).unwrap_or(&0))
    };
    let mut lost = BTreeMap::new();
    let mut frames_in = 0;
    for s in switches {
        let prefix = format!("c_{}_eth", s.replace('-', "_"));
        let (mut took, mut sent) = (0u64, 0u64);
        for name in after.keys().filter(|k| k.starts_with(&prefix)) {
            if name.ends_with("_in") {
                took += delta(name);
            } else if name.ends_with("_out") {
                sent += delta(name);
            }
        }
        frames_in += took;
        let l = took as i64 - sent as i64;
        if l != 0 {
            lost.insert(s.clone(), l);
        }
    }
    Phase {
        round,
        action,
        epochs,
        frames_in,
        lost_total: lost.values().sum(),
        lost,
        slowest_calls_ms: 0,
        digests: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harvest_cost::Action;

    #[test]
    fn a_switch_loses_what_its_ports_took_in_and_did_not_send() {
        let json = |a: u64, b: u64, c: u64| {
            format!(
                r#"{{"nftables": [{{"metainfo": {{}}}},
                {{"counter": {{"family": "netdev", "name": "c_edge0_0_eth1_in", "packets": {a}, "bytes": 0}}}},
                {{"counter": {{"family": "netdev", "name": "c_edge0_0_eth2_out", "packets": {b}, "bytes": 0}}}},
                {{"counter": {{"family": "netdev", "name": "c_edge0_1_eth1_in", "packets": {c}, "bytes": 0}}}},
                {{"counter": {{"family": "netdev", "name": "c_edge0_1_eth1_out", "packets": {c}, "bytes": 0}}}}]}}"#
            )
        };
        let before = counters_of(json(10, 10, 5).as_bytes()).unwrap();
        let after = counters_of(json(110, 107, 50).as_bytes()).unwrap();
        let names = vec!["edge0_0".to_string(), "edge0_1".to_string()];
        let p = phase_loss(&names, &before, &after, 1, Action::Read, 10);
        // edge0_0 took in 100 and sent 97; edge0_1 sent all 45 it took in. `edge0_1`'s counters
        // do not count for `edge0_0`, though the one name begins the other.
        assert_eq!(p.lost, BTreeMap::from([("edge0_0".to_string(), 3)]));
        assert_eq!((p.lost_total, p.frames_in), (3, 145));
    }
}
