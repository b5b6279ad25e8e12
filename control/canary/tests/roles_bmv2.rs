//! Two controllers on one fabric of real BMv2 switches, each primary for its own P4Runtime role:
//! a forwarding controller of ours (the default role) pushes the pipeline and owns forwarding;
//! `canary run --role canary` attaches without pushing anything and writes only its own tables.
//! BMv2's P4Runtime server has no roles, so each switch is reached through `canary
//! role-gateway`, which enforces them (`canary_switch::role_gateway`).
//!
//! Needs root, p4c and BMv2 on PATH, and nft or tc for the loss; prints `SKIP: ...` otherwise.

mod bmv2;
mod fabric_lab;

use canary_controller::setup::{load_topology, prepare};
use canary_core::model::SwitchConfig;
use canary_core::topo::{FloodTree, ForwardingState, Routing};
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program};
use canary_switch::entries::{self, Change, Write};
use canary_switch::p4rt::{P4RtClient, P4RtConfig};
use canary_switch::switches::{port_map, SwitchesFile};
use fabric_lab::{read_json, wait_child, Daemon, FabricLab};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
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

/// What the forwarding controller saw when it tried to write Canary's entities.
#[derive(Debug)]
struct OwnerProbe {
    /// Per attempt: the error the write got, if any.
    config_write: Option<String>,
    rule_write: Option<String>,
    /// The pipeline cookie at the end (unchanged: nobody else pushed one).
    cookie_before: Option<u64>,
    cookie_after: Option<u64>,
}

enum ToOwner {
    /// Push the pipeline and forwarding of switch `i` again (its operator reloads it).
    Repush(usize),
    Probe,
    Stop,
}

/// Where the test's controllers find the fabric.
#[derive(Clone)]
struct Setup {
    fab: String,
    switches: String,
    topology: String,
    p4dir: std::path::PathBuf,
}

/// The fabric as a controller sees it: topology, switches, program.
struct View {
    prep: canary_controller::setup::Prepared,
    bound: Vec<canary_switch::switches::BoundSwitch>,
    program: Arc<Bmv2Program>,
}

impl Setup {
    fn view(&self) -> View {
        let prep = prepare(
            load_topology(&self.topology, None).unwrap(),
            Default::default(),
        )
        .unwrap();
        let bound = SwitchesFile::load(&self.switches)
            .unwrap()
            .bind(&self.switches, &prep.topo)
            .unwrap();
        let p4 = canary_controller::daemon::load_p4(&self.p4dir).unwrap();
        let program =
            Arc::new(Bmv2Program::new(p4.p4info.clone(), p4.device_config.clone()).unwrap());
        View {
            prep,
            bound,
            program,
        }
    }

    /// Runs `f` on a thread of its own in the fabric's namespace, on a runtime of its own.
    fn in_fabric<T: Send + 'static, F: std::future::Future<Output = T>>(
        &self,
        f: impl FnOnce(Setup) -> F + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let me = self.clone();
        std::thread::spawn(move || {
            bmv2::enter_netns(&me.fab);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(f(me))
        })
    }
}

impl View {
    /// Switch `s`'s forwarding, as its owner writes it.
    fn forwarding(&self, s: canary_core::topo::SwitchIx) -> entries::Forwarding {
        let topo = &self.prep.topo;
        let state = ForwardingState::of(
            topo,
            &Routing::new(topo),
            &FloodTree::new(topo),
            s,
            port_map(&self.bound).of(s),
        );
        entries::forwarding(&state, self.prep.codec.masks[s as usize])
    }

    /// A controller of role `canary` on the first switch.
    async fn canary_client(&self, election_id: u128, with_config: bool) -> P4RtClient {
        let b = &self.bound[0];
        let mut cfg = P4RtConfig::new(&b.name, &b.endpoint.grpc, b.endpoint.device_id);
        cfg.role = "canary".into();
        cfg.election_id = election_id;
        if with_config {
            cfg.role_config = Some(canary_switch::roles::pack(
                &canary_switch::roles::canary_role_config(&self.program.program),
            ));
        }
        P4RtClient::connect(cfg).await.unwrap()
    }
}

/// The forwarding controller: in the fabric's namespace, primary for the default role on
/// every switch through its gateway; pushes the pipeline and forwarding, then holds on until
/// told to probe Canary's entities and stop.
async fn forwarding_controller(
    setup: Setup,
    ready: mpsc::Sender<Result<(), String>>,
    orders: mpsc::Receiver<ToOwner>,
    probes: mpsc::Sender<OwnerProbe>,
) {
    {
        let view = setup.view();
        let bound = &view.bound;
        let program = view.program.clone();
        let opts = Bmv2Options {
            election_id: OWNER_ELECTION,
            ..Default::default()
        };
        // Pushes switch `i`'s pipeline and forwarding (again, for a reload).
        async fn configure(d: &mut Bmv2Driver, fwd: entries::Forwarding) -> Result<(), String> {
            d.load_pipeline().await.map_err(|e| e.to_string())?;
            d.write_groups(&fwd.groups)
                .await
                .map_err(|e| e.to_string())?;
            let inserts: Vec<Write> = fwd
                .entries
                .into_iter()
                .map(|entry| Write {
                    change: Change::Insert,
                    entry,
                })
                .collect();
            let failed = d.write(&inserts).await;
            if failed.is_empty() {
                Ok(())
            } else {
                Err(format!("forwarding: {failed:?}"))
            }
        }
        let mut drivers = Vec::new();
        for b in bound {
            let s = b.ix;
            // Not a monitor: it leaves Canary's digest alone.
            let mut d = Bmv2Driver::new(b.clone(), false, program.clone(), opts.clone());
            let mut tries = 0;
            while let Err(e) = d.connect().await {
                tries += 1;
                if tries > 50 {
                    let _ = ready.send(Err(format!("{}: {e}", b.name)));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            if let Err(e) = configure(&mut d, view.forwarding(s)).await {
                let _ = ready.send(Err(format!("{}: {e}", b.name)));
                return;
            }
            drivers.push(d);
        }
        let cookie_before = Some(program.cookie);
        let _ = ready.send(Ok(()));
        while let Ok(order) = orders.recv() {
            match order {
                ToOwner::Stop => break,
                ToOwner::Repush(i) => {
                    configure(&mut drivers[i], view.forwarding(bound[i].ix))
                        .await
                        .unwrap();
                }
                ToOwner::Probe => {
                    let d = &mut drivers[0];
                    let config = Write {
                        change: Change::Modify,
                        entry: entries::config(SwitchConfig {
                            monitor: true,
                            mask: 1,
                            epoch: 2,
                        }),
                    };
                    let rule = entries::rule(
                        &canary_core::fabric::RuleOp::InstallHh {
                            switch: 0,
                            path_bf: 0x1234,
                            eta: 3,
                        },
                        0,
                        false,
                    );
                    let first_error = |f: Vec<(usize, canary_switch::driver::DriverError)>| {
                        f.into_iter().next().map(|(_, e)| e.to_string())
                    };
                    let config_write = first_error(d.write_now(&[config]).await);
                    let rule_write = first_error(d.write_now(&[rule]).await);
                    let mut c = P4RtClient::connect(P4RtConfig::new(
                        "s1",
                        &bound[0].endpoint.grpc,
                        bound[0].endpoint.device_id,
                    ))
                    .await
                    .unwrap();
                    let cookie_after = c.pipeline_cookie().await.unwrap();
                    let _ = probes.send(OwnerProbe {
                        config_write,
                        rule_write,
                        cookie_before,
                        cookie_after,
                    });
                }
            }
        }
    }
}

/// What a controller of role `canary` is allowed, before the daemon runs: it is primary for its
/// role while the forwarding controller is primary for the default one, and it can neither
/// write forwarding nor push a pipeline.
fn canary_role_limits(setup: &Setup) -> (bool, String, String) {
    setup
        .in_fabric(|setup| async move {
            let view = setup.view();
            let mut c = view.canary_client(5, true).await;
            let route = view
                .forwarding(0)
                .entries
                .into_iter()
                .find(|e| e.table == canary_switch::contract::Table::IpRoute)
                .unwrap();
            let up = canary_switch::drivers::p4runtime::write_update(
                &view.program.program,
                &Write {
                    change: Change::Modify,
                    entry: route,
                },
            )
            .unwrap();
            let route_err = c.write(vec![up], 1).await.unwrap_err().to_string();
            let p = &view.program;
            let push_err = c
                .set_pipeline(&p.p4info.bytes, &p.device_config, 7)
                .await
                .unwrap_err()
                .to_string();
            (c.primary, route_err, push_err)
        })
        .join()
        .unwrap()
}

/// A second controller of role `canary` with a lower election id than the daemon's, mid-run:
/// whether it became primary, and what its write got.
fn canary_backup_write(setup: &Setup) -> (bool, String) {
    setup
        .in_fabric(|setup| async move {
            let view = setup.view();
            let mut c = view.canary_client(0, false).await;
            let rule = entries::rule(
                &canary_core::fabric::RuleOp::InstallHh {
                    switch: 0,
                    path_bf: 0x4321,
                    eta: 3,
                },
                0,
                false,
            );
            let up = canary_switch::drivers::p4runtime::write_update(&view.program.program, &rule)
                .unwrap();
            (
                c.primary,
                c.write(vec![up], 1).await.unwrap_err().to_string(),
            )
        })
        .join()
        .unwrap()
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
