//! The testbed's loss injectors in the real kernel: `testbed/check_dropper.py` puts each
//! classic-BPF program of `testbed/dropper.py` on a veth's clsact egress in a throwaway network
//! namespace, sends frames of 64 flows through it from a packet socket and counts them per flow
//! at the other end. Asserts that a fault on a share of flows (`flows:` in a fault file) drops
//! whole flows, the same ones with and without the Canary shim, IPv4 and IPv6, other ones on
//! another link, lets ARP through, and that the plain random dropper drops its rate.
//!
//! Needs root, `ip`, `tc` and python3. Prints `SKIP: <what is missing>` otherwise. About 5 s.

use std::collections::BTreeSet;
use std::process::Command;

use canary_testkit::{repo_root, root_lacking, runnable, tools_lacking, Lack};

fn missing() -> Vec<Lack> {
    let mut lacks: Vec<Lack> = root_lacking("network namespaces, veths, tc")
        .into_iter()
        .collect();
    lacks.extend(tools_lacking(&["ip", "tc"], "Debian iproute2"));
    lacks.extend(tools_lacking(&["python3"], "Debian python3"));
    lacks
}

struct Case {
    name: String,
    kind: String,
    /// (sent, received) per flow.
    flows: Vec<(u64, u64)>,
}

impl Case {
    fn dropped_flows(&self) -> BTreeSet<usize> {
        (0..self.flows.len())
            .filter(|&f| self.flows[f].1 == 0)
            .collect()
    }
    fn received(&self) -> u64 {
        self.flows.iter().map(|f| f.1).sum()
    }
    fn sent(&self) -> u64 {
        self.flows.iter().map(|f| f.0).sum()
    }
}

fn cases() -> Vec<Case> {
    let out = Command::new("python3")
        .arg(repo_root().join("testbed/check_dropper.py"))
        .output()
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "check_dropper.py failed: {stderr}");
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("JSON from check_dropper");
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            name: c["case"].as_str().unwrap().into(),
            kind: c["kind"].as_str().unwrap().into(),
            flows: c["flows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["sent"].as_u64().unwrap(), f["received"].as_u64().unwrap()))
                .collect(),
        })
        .collect()
}

#[test]
fn a_share_of_flows_loses_whole_flows_and_plain_loss_its_rate() {
    if !runnable("testbed_dropper", &missing()) {
        return;
    }
    let cases = cases();
    let find = |name: &str, kind: &str| {
        cases
            .iter()
            .find(|c| c.name == name && c.kind == kind)
            .unwrap_or_else(|| panic!("no case {name} / {kind}"))
    };
    let (seed_a, seed_b) = (
        "share 0.5, loss 1, seed x->y",
        "share 0.5, loss 1, seed y->x",
    );
    for family in ["v4", "v6"] {
        let shimmed = format!("{family}_shim");
        for seed in [seed_a, seed_b] {
            for kind in [family, shimmed.as_str()] {
                let c = find(seed, kind);
                assert_eq!(c.flows.len(), 64);
                // Loss 1 on the chosen flows: each flow arrives whole or not at all.
                for (f, &(sent, got)) in c.flows.iter().enumerate() {
                    assert!(
                        got == 0 || got == sent,
                        "{seed} {kind}: flow {f} lost {} of {sent}",
                        sent - got
                    );
                }
                // Half of the flows, give or take four standard deviations (64 flows: σ = 4).
                let n = c.dropped_flows().len();
                assert!(
                    (16..=48).contains(&n),
                    "{seed} {kind}: {n} of 64 flows dropped"
                );
            }
            // The shim moves the IP header; the flows chosen stay the same.
            assert_eq!(
                find(seed, family).dropped_flows(),
                find(seed, &shimmed).dropped_flows(),
                "{seed}: {family} with and without the shim"
            );
        }
        // Another link's seed picks other flows.
        assert_ne!(
            find(seed_a, family).dropped_flows(),
            find(seed_b, family).dropped_flows(),
            "{family}: two links drop the same flows"
        );
    }
    // Frames without a 5-tuple pass.
    let arp = find(seed_a, "arp");
    assert_eq!(arp.received(), arp.sent(), "ARP dropped");
    // Loss 0.5 on a quarter of the flows: untouched flows are most, and the drops stay within
    // the chosen flows' share (64 × 20 frames, expected 160 dropped; σ ≈ 14 over flows and draws).
    let quarter = find("share 0.25, loss 0.5", "v4_shim");
    let hit = quarter.flows.iter().filter(|f| f.1 < f.0).count();
    assert!((4..=28).contains(&hit), "{hit} of 64 flows lost frames");
    let lost = quarter.sent() - quarter.received();
    assert!((40..=320).contains(&lost), "{lost} of 1280 frames lost");
    // The plain dropper: 320 frames at 30 %, expected 96 lost, σ ≈ 8.2.
    let plain = find("random 0.3", "v4_shim");
    let lost = plain.sent() - plain.received();
    assert!(
        (60..=132).contains(&lost),
        "{lost} of 320 frames lost at 30 %"
    );
}
