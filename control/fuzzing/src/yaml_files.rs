//! The YAML files Canary reads: topology, faults and switches; each checked for what its
//! readers rely on (unique hosts, one fault per link at a time, valid ports).

use crate::fixtures::{fattree4, line2};
use crate::pick;
use canary_core::fault;
use canary_core::topo::{default_switch_id, yaml, Topology};
use canary_switch::switches::SwitchesFile;
use std::collections::HashSet;

/// Topology (0), fault (1) and switches (2) files. Files are read as text, so only UTF-8 gets to
/// the parsers.
pub fn yaml(data: &[u8]) {
    let Some((which, rest)) = pick(data, 3) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which {
        0 => topology_file(text),
        1 => fault_file(text),
        _ => switches_file(text),
    }
}

fn topology_file(text: &str) {
    let Ok(t) = yaml::parse("fuzz.yaml", text) else {
        return;
    };
    let unique = |n: usize, what: &str| assert_eq!(n, t.hosts.len(), "duplicate host {what}");
    unique(
        t.hosts
            .iter()
            .map(|h| &h.name)
            .collect::<HashSet<_>>()
            .len(),
        "names",
    );
    unique(
        t.hosts.iter().map(|h| h.addr).collect::<HashSet<_>>().len(),
        "addresses",
    );
    unique(
        t.hosts
            .iter()
            .map(|h| h.addr6)
            .collect::<HashSet<_>>()
            .len(),
        "IPv6 addresses",
    );
    // What `canary topology` writes reads back as the same fabric. It leaves switch IDs out, so
    // only a file without its own IDs must come back with the same ones.
    let written = yaml::to_yaml(&t, t.monitor_placement());
    let back = yaml::parse("written.yaml", &written);
    if t.switches
        .iter()
        .any(|s| s.id != default_switch_id(&s.name))
    {
        return;
    }
    let back = back.unwrap_or_else(|e| panic!("to_yaml wrote what parse rejects: {e}\n{written}"));
    assert_eq!(back.switches, t.switches);
    assert_eq!(back.hosts, t.hosts);
    let sorted = |t: &Topology| {
        let mut l = t.links.clone();
        l.sort_unstable();
        l
    };
    assert_eq!(sorted(&back), sorted(&t));
}

fn fault_file(text: &str) {
    let topo = fattree4();
    let Ok(faults) = fault::parse("fuzz.yaml", text, topo) else {
        return;
    };
    for (i, f) in faults.iter().enumerate() {
        assert!((f.link as usize) < topo.links.len());
        assert!((0.0..=1.0).contains(&f.loss), "loss {}", f.loss);
        assert!(f.flows > 0.0 && f.flows <= 1.0, "flows {}", f.flows);
        assert!(f.when.ever(), "a fault that never drops: {:?}", f.when);
        // One link, one fault at a time: no epoch where two faults on a link are both active.
        for g in &faults[i + 1..] {
            if g.link == f.link {
                let both = (0..200).find(|&e| f.active(e) && g.active(e));
                assert!(
                    both.is_none(),
                    "link {} faulty twice in epoch {both:?}",
                    f.link
                );
            }
        }
    }
}

fn switches_file(text: &str) {
    let Ok(file) = SwitchesFile::parse("fuzz.yaml", text) else {
        return;
    };
    let topo = line2();
    let Ok(bound) = file.bind("fuzz.yaml", topo) else {
        return;
    };
    assert_eq!(bound.len(), topo.switches.len());
    for b in &bound {
        let ports: Vec<u32> = b
            .ports
            .switch_ports
            .values()
            .chain(b.ports.host_ports.values())
            .copied()
            .collect();
        assert!(ports.iter().all(|&p| p < 511));
        assert_eq!(ports.iter().collect::<HashSet<_>>().len(), ports.len());
    }
}
