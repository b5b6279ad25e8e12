//! Two controllers on one fabric of real BMv2 switches, each primary for its own P4Runtime role:
//! a forwarding controller of ours (the default role) pushes the pipeline and owns forwarding;
//! `canary run --role canary` attaches without pushing anything and writes only its own tables.
//! BMv2's P4Runtime server has no roles, so each switch is reached through `canary
//! role-gateway`, which enforces them (`canary_switch::role_gateway`).
//!
//! Needs root, p4c and BMv2 on PATH, and nft or tc for the loss; prints `SKIP: ...` otherwise.

#[path = "../bmv2/mod.rs"]
mod bmv2;
#[path = "../fabric_lab/mod.rs"]
mod fabric_lab;

mod controllers;

use canary_controller::setup::load_topology;
use controllers::{canary_backup_write, canary_role_limits, forwarding_controller, Setup, ToOwner};
use fabric_lab::{read_json, wait_child, Daemon, FabricLab};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const GATEWAY_BASE: u16 = 50300;
/// The forwarding controller's election id (default role) and Canary's (role `canary`).
const OWNER_ELECTION: u128 = 10;
const CANARY_ELECTION: u64 = 1;

fn topo_file(name: &str) -> String {
    bmv2::repo_root()
        .join("topologies")
        .join(name)
        .display()
        .to_string()
}

/// Canary with `--role canary` beside the fabric's own controller: each is primary for its role
/// on every switch at once; Canary pushes no pipeline and writes no forwarding, yet localizes the
/// 10 % loss on s1→s2; neither controller can write the other's entities; when the owner reloads
/// a switch's pipeline mid-run, Canary reports it and configures its own state there again.
#[test]
fn canary_role_runs_beside_the_forwarding_controller_and_neither_writes_the_other() {
    if !bmv2::runnable("roles_bmv2", &bmv2::loss_missing()) {
        return;
    }
    let topology = topo_file("line2.yaml");
    let lab = FabricLab::new(load_topology(&topology, None).unwrap());
    // Every controller reaches switch i through its gateway.
    let n = lab.topo.switches.len();
    let mut yaml = std::fs::read_to_string(&lab.switches_yaml).unwrap();
    for i in 0..n as u16 {
        yaml = yaml.replace(
            &format!("grpc: 127.0.0.1:{}", fabric_lab::GRPC_BASE + i),
            &format!("grpc: 127.0.0.1:{}", GATEWAY_BASE + i),
        );
    }
    std::fs::write(&lab.switches_yaml, yaml).unwrap();
    let switches = lab.switches_yaml.to_str().unwrap().to_string();
    let _gateways: Vec<Daemon> = (0..n)
        .map(|i| {
            let log = std::fs::File::create(lab.path(&format!("gateway{i}.log"))).unwrap();
            Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &lab.fab,
                    env!("CARGO_BIN_EXE_canary"),
                    "role-gateway",
                ])
                .args([
                    "--listen",
                    &format!("127.0.0.1:{}", GATEWAY_BASE + i as u16),
                ])
                .args([
                    "--switch",
                    &format!("127.0.0.1:{}", fabric_lab::GRPC_BASE + i as u16),
                ])
                .args(["--device-id", &(i + 1).to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map(Daemon)
                .unwrap()
        })
        .collect();

    let (ready_tx, ready) = mpsc::channel();
    let (orders, orders_rx) = mpsc::channel();
    let (probes_tx, probes) = mpsc::channel();
    let setup = Setup {
        fab: lab.fab.clone(),
        switches: switches.clone(),
        topology: topology.clone(),
        p4dir: lab.p4dir.clone(),
    };
    let owner =
        setup.in_fabric(move |setup| forwarding_controller(setup, ready_tx, orders_rx, probes_tx));
    ready
        .recv_timeout(Duration::from_secs(60))
        .expect("the forwarding controller answers")
        .expect("the forwarding controller configures the fabric");

    let (primary, route_err, push_err) = canary_role_limits(&setup);
    assert!(
        primary,
        "role `canary` has its own primary beside the default role's"
    );
    assert!(
        route_err.contains("PermissionDenied")
            && route_err.contains("ip_route")
            && route_err.contains("not in role `canary`"),
        "{route_err}"
    );
    assert!(
        push_err.contains("PermissionDenied") && push_err.contains("may not push a pipeline"),
        "{push_err}"
    );

    lab.link_loss("s1", "s2", 10.0);
    let faults = lab.path("faults.yaml");
    std::fs::write(&faults, "faults:\n  - {link: [s1, s2], loss: 0.1}\n").unwrap();
    let traffic = lab.traffic(200, 8, 200.0, 7);
    let json = lab.path("run.json");
    let mut d = lab.daemon(&[
        "--topology",
        &topology,
        "--role",
        "canary",
        "--election-id",
        &CANARY_ELECTION.to_string(),
        "--epochs",
        "12",
        "--epoch-ms",
        "1000",
        "--alpha",
        "200",
        "--beta",
        "4",
        "--eta",
        "4",
        "--faults",
        faults.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    // Mid-run the owner reloads s2 with the same program (same cookie): Canary's rules and
    // meters there are gone although its connection is not.
    std::thread::sleep(Duration::from_secs(6));
    orders.send(ToOwner::Repush(1)).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    orders.send(ToOwner::Probe).unwrap();
    let (backup_primary, backup_err) = canary_backup_write(&setup);
    let probe = probes.recv_timeout(Duration::from_secs(30)).unwrap();
    let status = wait_child(&mut d.0, Duration::from_secs(120));
    let _ = traffic.stop();
    let _ = orders.send(ToOwner::Stop);
    owner.join().unwrap();
    assert!(
        status.is_some_and(|s| s.success()),
        "daemon failed: {}",
        lab.daemon_output()
    );

    if std::env::var_os("ROLES_PRINT").is_some() {
        eprintln!("{probe:?}\n{}", lab.daemon_output());
    }
    // The forwarding controller cannot touch Canary's configuration or rules.
    for (what, err) in [
        ("switch_config", &probe.config_write),
        ("hh_table", &probe.rule_write),
    ] {
        let err = err
            .as_ref()
            .unwrap_or_else(|| panic!("the forwarding controller wrote Canary's {what}"));
        assert!(
            err.contains("PermissionDenied")
                && err.contains(what)
                && err.contains("belongs to role `canary`"),
            "{what}: {err}"
        );
    }
    // Within role `canary`, the daemon (election id 1) stays primary over a later 0.
    assert!(!backup_primary);
    assert!(
        backup_err.contains("PermissionDenied")
            && backup_err.contains("is not the primary of role `canary`"),
        "{backup_err}"
    );
    // Canary never pushed a pipeline: the switch still runs the owner's.
    assert_eq!(probe.cookie_after, probe.cookie_before);

    let v = read_json(&json);
    let epochs = v["epochs"].as_array().expect("epochs in --json");
    assert_eq!(epochs.len(), 12, "{}", lab.daemon_output());
    let blamed: Vec<String> = canary_testkit::blamed_links(&v["summary"]["blamed"]);
    assert_eq!(
        blamed,
        vec!["s1->s2".to_string()],
        "{}",
        lab.daemon_output()
    );
    assert_eq!(
        v["summary"]["fp"].as_u64(),
        Some(0),
        "{}",
        lab.daemon_output()
    );
    // The reload is reported, and Canary's state put back: s2 counts again afterwards.
    let reload =
        epochs
            .iter()
            .position(|e| {
                e["disturbed"].as_array().unwrap().iter().any(|d| {
                    d["switch"] == "s2" && d["detail"].as_str().unwrap().contains("restarted")
                })
            })
            .unwrap_or_else(|| panic!("the reload of s2 is not reported\n{}", lab.daemon_output()));
    assert!(
        epochs[reload + 3..]
            .iter()
            .all(|e| e["disturbed"].as_array().unwrap().is_empty()),
        "{}",
        lab.daemon_output()
    );
    let counted: u64 = epochs
        .iter()
        .map(|e| e["packets_counted"].as_u64().unwrap())
        .sum();
    assert!(counted > 0, "Canary's rules counted packets");
}
