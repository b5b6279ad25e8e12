//! The primary `canary run` cut off from the switch the standby probes (leaf0), with nftables:
//! the standby takes over, the old primary stands down, and every epoch is reported once.
//!
//! The cut: in the fabric's namespace, nftables resets every packet the primary's sockets (group
//! `PRIMARY_GID`) send to leaf0's gRPC and Thrift ports, and `ss -K` closes leaf0's end of the
//! primary's connection, as gRPC keepalive would once the silence lasted (BMv2 sets none, so a
//! silent drop alone leaves the switch holding the dead stream). The standby's connections are
//! untouched.

use super::*;
use std::process::Command;

/// The primary's sockets' group, which the nftables rule matches.
const PRIMARY_GID: u32 = 4242;
const TABLE: &str = "canary_partition";

fn in_fab(lab: &FabricLab, args: &[&str]) -> std::process::Output {
    let out = Command::new("ip")
        .args(["netns", "exec", &lab.fab])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    out
}

/// Cuts the primary off from switch `s` (its gRPC and Thrift ports).
fn cut(lab: &FabricLab, s: u16) {
    let (grpc, thrift) = (fabric_lab::GRPC_BASE + s, fabric_lab::THRIFT_BASE + s);
    let rules = format!(
        "table inet {TABLE} {{\n chain out {{\n  type filter hook output priority 0;\n  \
         meta skgid {PRIMARY_GID} tcp dport {{ {grpc}, {thrift} }} reject with tcp reset\n }}\n}}\n"
    );
    let path = lab.path("partition.nft");
    std::fs::write(&path, rules).unwrap();
    in_fab(lab, &["nft", "-f", path.to_str().unwrap()]);
    // The switch's end of every connection to its gRPC port: the standby's probes reconnect,
    // the primary cannot.
    in_fab(
        lab,
        &[
            "ss",
            "-K",
            "-tn",
            "state",
            "established",
            &format!("( sport = :{grpc} )"),
        ],
    );
}

fn heal(lab: &FabricLab) {
    in_fab(lab, &["nft", "delete", "table", "inet", TABLE]);
}

/// The epochs a daemon printed as it reported them.
fn printed_epochs(out: &str) -> Vec<u64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("epoch"))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn a_primary_cut_off_from_the_probed_switch_is_replaced_and_stands_down() {
    let mut lacks = bmv2::missing();
    lacks.extend(canary_testkit::tools_lacking(
        &["nft", "ss", "setpriv"],
        "Debian nftables, iproute2, util-linux",
    ));
    if !bmv2::runnable("controller_death_bmv2", &lacks) {
        return;
    }
    let topo = topology();
    let lab = FabricLab::new(load_topology(&topo, None).unwrap());
    lab.link_loss(LOSSY[0], LOSSY[1], 10.0);
    let traffic = lab.traffic(100, 16, 200.0, 13);
    let report = lab.path("epochs.jsonl");
    let report_s = report.display().to_string();
    let _primary = lab.daemon_in_group(
        "primary",
        Some(PRIMARY_GID),
        &run_args(&topo, &report_s, "10"),
    );
    assert!(
        wait_for(Duration::from_secs(60), || report_lines(&report).len() >= 3),
        "{}",
        lab.output_of("primary")
    );
    let mut args = run_args(&topo, &report_s, "5");
    args.extend(["--epochs", "8"]);
    let mut standby = lab.daemon_named("standby", &args);
    assert!(
        wait_for(Duration::from_secs(20), || lab
            .output_of("standby")
            .contains("standing by")),
        "{}",
        lab.output_of("standby")
    );
    let n = report_lines(&report).len();
    assert!(wait_for(Duration::from_secs(10), || report_lines(&report)
        .len()
        >= n + 2));
    std::thread::sleep(random_point());
    let probed = lab.topo.switch("leaf0").unwrap() as u16;
    assert_eq!(probed, 0, "the standby probes the first switch");
    cut(&lab, probed);
    let cut_at = Instant::now();
    assert!(
        wait_for(Duration::from_secs(20), || report_lines(&report)
            .iter()
            .any(found_running)),
        "--- standby\n{}\n--- primary\n{}",
        lab.output_of("standby"),
        lab.output_of("primary")
    );
    let handover = cut_at.elapsed();
    eprintln!("the standby's first epoch report {handover:?} after the cut");
    // The old primary learns it at its next write to a switch the standby took.
    assert!(
        wait_for(Duration::from_secs(10), || lab
            .output_of("primary")
            .contains("standing down")),
        "{}",
        lab.output_of("primary")
    );
    heal(&lab);
    // Healed, the old primary stands by: the switches hold a primary of a later generation.
    let status = wait_child(&mut standby.0, Duration::from_secs(60));
    traffic.stop();
    let out = lab.output_of("standby");
    assert!(status.is_some_and(|s| s.success()), "{out}");
    let old = lab.output_of("primary");
    assert!(!old.contains("is gone: taking over"), "{old}");
    // Every epoch once: the report file refuses a second line for an epoch, so each daemon's
    // own printout is compared: no epoch printed by both.
    let (by_old, by_new) = (printed_epochs(&old), printed_epochs(&out));
    eprintln!("epochs printed by the old primary {by_old:?}, by the standby {by_new:?}");
    assert!(!by_old.is_empty() && !by_new.is_empty());
    let both: Vec<u64> = by_old
        .iter()
        .filter(|e| by_new.contains(e))
        .copied()
        .collect();
    assert!(
        both.is_empty(),
        "epochs reported by both controllers: {both:?}"
    );
    let lines = report_lines(&report);
    assert_report_goes_on(&lines, 6, Some(LOSSY));
    assert!(
        handover <= Duration::from_millis(2 * EPOCH_MS + 500),
        "the standby took {handover:?} to report its first epoch after the cut"
    );
}
