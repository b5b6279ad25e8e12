//! The fault file, schedules and the random fault sets.

use super::*;
use crate::topo::LinkIx;
use crate::topo::{fattree::fattree, MonitorPlacement};
use rand::SeedableRng;

#[test]
fn paper_mix_for_k8() {
    let t = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let f = random(&t, 10.0, &mut rng);
    assert_eq!(f.len(), 52);
    for (lo, hi, n) in PAPER_MIX {
        assert_eq!(
            f.iter().filter(|x| x.loss >= lo && x.loss < hi).count(),
            n as usize
        );
    }
    // Both directions of 26 links.
    assert!(f
        .iter()
        .all(|x| f.iter().any(|y| y.link == t.reverse(x.link))));
}

#[test]
fn pick_gives_n_links_in_the_asked_directions_and_rates() {
    let t = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let f = pick(&t, 5, false, Rates::Fixed(0.01), &mut rng);
    assert_eq!(f.len(), 5);
    assert!(f.iter().all(|x| x.loss == 0.01));
    assert!(f
        .iter()
        .all(|x| !f.iter().any(|y| y.link == t.reverse(x.link))));
    let f = pick(&t, 4, true, Rates::Uniform(0.001, 0.01), &mut rng);
    assert_eq!(f.len(), 8);
    assert!(f.iter().all(|x| (0.001..0.01).contains(&x.loss)));
    assert!(f
        .iter()
        .all(|x| f.iter().any(|y| y.link == t.reverse(x.link))));
}

#[test]
fn fault_file_errors_name_the_entry() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let ok = "faults:\n  - {link: [agg1_1, core2], loss: 0.002}\n  - {link: [edge0_0, agg0_1], loss: 0.3, both_directions: true}\n";
    assert_eq!(parse("f.yaml", ok, &t).unwrap().len(), 3);
    let e = parse("f.yaml", &ok.replace("core2", "core0"), &t).unwrap_err();
    assert_eq!(e.field, "faults[0].link");
    assert!(e.msg.contains("no link between `agg1_1` and `core0`"));
    let e = parse("f.yaml", &ok.replace("core2", "core9"), &t).unwrap_err();
    assert!(e.msg.contains("unknown switch `core9`"));
    let e = parse("f.yaml", &ok.replace("0.3", "1.3"), &t).unwrap_err();
    assert_eq!(e.field, "faults[1].loss");
    let e = parse("f.yaml", &ok.replace("loss: 0.002", "loss: high"), &t).unwrap_err();
    assert_eq!(e.field, "faults[0].loss");
    assert!(e.to_string().starts_with("f.yaml: faults[0].loss:"), "{e}");
}

#[test]
fn a_fault_file_gives_time_shape_devices_and_flows() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let text = "faults:
  - {link: [agg0_0, core0], loss: 0.01, from_epoch: 10, until_epoch: 30}
  - {link: [agg1_0, core1], loss: 0.05, period: 8, duty: 0.25}
  - {device: agg2_1, loss: 0.01}
  - {device: agg3_0, ports: [core0, edge3_1], loss: 0.02}
  - {link: [edge1_0, agg1_1], loss: 0.1, flows: 0.25, corruption: true}
";
    let f = parse("f.yaml", text, &t).unwrap();
    // 1 + 1 + every neighbour of agg2_1 (2 edges, 2 cores) + 2 + 1.
    assert_eq!(f.len(), 9);
    let w = f[0].when;
    assert!(!w.active(9) && w.active(10) && w.active(29) && !w.active(30));
    assert_eq!(w.onsets(100), vec![10]);
    assert_eq!(w.repairs(100), vec![30]);
    let flap = f[1].when;
    let on: Vec<u64> = (0..17).filter(|&e| flap.active(e)).collect();
    assert_eq!(on, vec![0, 1, 8, 9, 16]);
    assert_eq!(flap.onsets(17), vec![0, 8, 16]);
    assert_eq!(flap.repairs(17), vec![2, 10]);
    let agg2_1 = t.switch("agg2_1").unwrap();
    let dev: Vec<&Fault> = f.iter().filter(|x| x.device == Some(agg2_1)).collect();
    assert_eq!(dev.len(), 4);
    assert!(dev.iter().all(|x| t.links[x.link as usize].from == agg2_1));
    let ports: Vec<[&str; 2]> = f[6..8].iter().map(|x| t.link_names(x.link)).collect();
    assert_eq!(ports[0], ["agg3_0", "core0"]);
    assert_eq!(ports[1], ["agg3_0", "edge3_1"]);
    assert_eq!(f[7].flows, 1.0);
    let last = f.last().unwrap();
    assert!(last.corruption && last.flows == 0.25);
}

#[test]
fn every_bad_field_is_named() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let cases = [
        (
            "{link: [agg0_0, core0], loss: 0.1, from_epoch: 5, until_epoch: 5}",
            "faults[0].until_epoch",
            "not after",
        ),
        (
            "{link: [agg0_0, core0], loss: 0.1, period: 4}",
            "faults[0].duty",
            "missing",
        ),
        (
            "{link: [agg0_0, core0], loss: 0.1, duty: 0.5}",
            "faults[0].period",
            "missing",
        ),
        (
            "{link: [agg0_0, core0], loss: 0.1, period: 0, duty: 0.5}",
            "faults[0].period",
            "0 epochs",
        ),
        (
            "{link: [agg0_0, core0], loss: 0.1, period: 4, duty: 1.5}",
            "faults[0].duty",
            "(0, 1]",
        ),
        (
            "{link: [agg0_0, core0], loss: 0.1, period: 10, duty: 0.01}",
            "faults[0].duty",
            "no lossy epoch",
        ),
        (
            "{link: [agg0_0, core0], loss: 0.1, flows: 0}",
            "faults[0].flows",
            "(0, 1]",
        ),
        (
            "{link: [agg0_0, core0], loss: 0.1, flows: 1.5}",
            "faults[0].flows",
            "(0, 1]",
        ),
        (
            "{device: agg9_9, loss: 0.1}",
            "faults[0].device",
            "unknown switch `agg9_9`",
        ),
        (
            "{device: agg0_0, ports: [core2], loss: 0.1}",
            "faults[0].ports[0]",
            "no port to `core2`",
        ),
        (
            "{device: agg0_0, ports: [core0, core0], loss: 0.1}",
            "faults[0].ports[1]",
            "twice",
        ),
        (
            "{device: agg0_0, ports: [], loss: 0.1}",
            "faults[0].ports",
            "empty",
        ),
        (
            "{device: agg0_0, loss: 0.1, both_directions: true}",
            "faults[0].both_directions",
            "own links",
        ),
        (
            "{link: [agg0_0, core0], device: agg0_0, loss: 0.1}",
            "faults[0].device",
            "either",
        ),
        (
            "{link: [agg0_0, core0], ports: [core0], loss: 0.1}",
            "faults[0].ports",
            "only a `device`",
        ),
        ("{loss: 0.1}", "faults[0].link", "missing"),
        (
            "{link: [agg0_0, core0], loss: 0.1, from_epoch: -1}",
            "faults[0].from_epoch",
            "",
        ),
        (
            "{link: [agg0_0, core0], loss: 0.1, flaps: 3}",
            "faults[0].flaps",
            "unknown field",
        ),
    ];
    for (entry, field, msg) in cases {
        let e = parse("f.yaml", &format!("faults:\n  - {entry}\n"), &t).unwrap_err();
        assert_eq!(e.field, field, "{entry}: {e}");
        assert!(e.msg.contains(msg), "{entry}: {e}");
    }
}

#[test]
fn one_link_may_fail_twice_but_not_in_the_same_epochs() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let twice = "faults:
  - {link: [agg0_0, core0], loss: 0.1, until_epoch: 10}
  - {link: [agg0_0, core0], loss: 0.2, from_epoch: 10}
";
    let f = parse("f.yaml", twice, &t).unwrap();
    assert_eq!(active_links(&f, 9), vec![f[0].link]);
    assert_eq!(
        link_losses(&vec![0.0; t.links.len()], &f, 12)[f[1].link as usize].p,
        0.2
    );
    let e = parse(
        "f.yaml",
        &twice.replace("from_epoch: 10", "from_epoch: 9"),
        &t,
    )
    .unwrap_err();
    assert_eq!(e.field, "faults[1]");
    assert!(e.msg.contains("same epochs"), "{e}");
    let both = "faults:\n  - {link: [agg0_0, core0], loss: 0.1}\n  - {link: [core0, agg0_0], loss: 0.1, both_directions: true}\n";
    assert!(parse("f.yaml", both, &t).unwrap_err().msg.contains("twice"));
}

#[test]
fn link_losses_follow_the_schedule_over_the_background() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let l = t.link_by_names("agg0_0", "core0").unwrap() as usize;
    let mut f = Fault::constant(l as LinkIx, 0.3);
    f.when = When {
        from: 5,
        until: Some(7),
        flap: None,
    };
    f.flows = 0.5;
    let bg = vec![1e-5; t.links.len()];
    assert_eq!(
        link_losses(&bg, &[f], 4)[l],
        LinkLoss {
            p: 1e-5,
            flows: 1.0
        }
    );
    assert_eq!(
        link_losses(&bg, &[f], 5)[l],
        LinkLoss { p: 0.3, flows: 0.5 }
    );
    assert_eq!(link_losses(&bg, &[f], 7)[l].p, 1e-5);
    // A device fault and a link fault on one link at once drop independently.
    let mut g = Fault::constant(l as LinkIx, 0.5);
    g.device = Some(0);
    let p = link_losses(&bg, &[f, g], 6)[l].p;
    assert!((p - (1.0 - 0.7 * 0.5)).abs() < 1e-12, "{p}");
    assert!(!scheduled(&[g]) && scheduled(&[f, g]));
}

#[test]
fn a_share_of_flows_is_hit_and_always_the_same_flows() {
    let hit = (0..100_000u32)
        .filter(|&h| hits_flow(h.wrapping_mul(2_654_435_761), 7, 0.25))
        .count();
    assert!((24_000..26_000).contains(&hit), "{hit}");
    assert!((0..1000).all(|h| hits_flow(h, 3, 1.0)));
    assert_eq!(hits_flow(12345, 3, 0.5), hits_flow(12345, 3, 0.5));
    // Another link picks other flows.
    let same = (0..10_000u32)
        .filter(|&h| hits_flow(h, 1, 0.5) == hits_flow(h, 2, 0.5))
        .count();
    assert!((4_500..5_500).contains(&same), "{same}");
}

#[test]
fn a_link_out_of_service_is_both_directions_and_no_fault() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let text = "faults:
  - {link: [agg0_0, core0], loss: 0.1}
  - {link: [agg0_0, core0], out_of_service: true, from_epoch: 3, until_epoch: 6}
";
    let all = parse("f.yaml", text, &t).unwrap();
    let (faults, out) = split_out_of_service(all);
    assert_eq!(faults.len(), 1);
    assert!(!faults[0].out_of_service);
    let l = t.link_by_names("agg0_0", "core0").unwrap();
    let mut both = vec![l, t.reverse(l)];
    both.sort_unstable();
    assert_eq!(out_of_service_at(&out, 3), both);
    assert!(out_of_service_at(&out, 2).is_empty());
    assert!(out_of_service_at(&out, 6).is_empty());
    // It drops nothing.
    assert!(link_losses(&[0.0; 64], &out, 4).iter().all(|l| l.p == 0.0));
    assert!(active_links(&out, 4).is_empty());
}

#[test]
fn an_out_of_service_entry_with_a_loss_or_a_shape_is_refused_by_field() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    for (entry, field) in [
        (
            "{link: [agg0_0, core0], out_of_service: true, loss: 0.1}",
            "faults[0].loss",
        ),
        (
            "{link: [agg0_0, core0], out_of_service: true, flows: 0.5}",
            "faults[0].flows",
        ),
        ("{device: agg0_0, out_of_service: true}", "faults[0].device"),
        (
            "{link: [agg0_0, core0], out_of_service: true, period: 4, duty: 0.5}",
            "faults[0].period",
        ),
        ("{link: [agg0_0, core0]}", "faults[0].loss"),
    ] {
        let e = parse("f.yaml", &format!("faults:\n  - {entry}\n"), &t).unwrap_err();
        assert_eq!(e.field, field, "{entry}: {e}");
    }
}
