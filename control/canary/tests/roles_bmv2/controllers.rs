//! The test's controllers: the forwarding controller (default role), and the probes a
//! controller of role `canary` makes before and during the daemon's run.

use crate::{bmv2, OWNER_ELECTION};
use canary_controller::setup::{load_topology, prepare};
use canary_core::model::SwitchConfig;
use canary_core::topo::{FloodTree, ForwardingState, Routing};
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program};
use canary_switch::entries::{self, Change, Write};
use canary_switch::p4rt::{P4RtClient, P4RtConfig};
use canary_switch::switches::{port_map, SwitchesFile};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// What the forwarding controller saw when it tried to write Canary's entities.
#[derive(Debug)]
pub(crate) struct OwnerProbe {
    /// Per attempt: the error the write got, if any.
    pub(crate) config_write: Option<String>,
    pub(crate) rule_write: Option<String>,
    /// The pipeline cookie at the end (unchanged: nobody else pushed one).
    pub(crate) cookie_before: Option<u64>,
    pub(crate) cookie_after: Option<u64>,
}

pub(crate) enum ToOwner {
    /// Push the pipeline and forwarding of switch `i` again (its operator reloads it).
    Repush(usize),
    Probe,
    Stop,
}

/// Where the test's controllers find the fabric.
#[derive(Clone)]
pub(crate) struct Setup {
    pub(crate) fab: String,
    pub(crate) switches: String,
    pub(crate) topology: String,
    pub(crate) p4dir: std::path::PathBuf,
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
    pub(crate) fn in_fabric<T: Send + 'static, F: std::future::Future<Output = T>>(
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
pub(crate) async fn forwarding_controller(
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
pub(crate) fn canary_role_limits(setup: &Setup) -> (bool, String, String) {
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
pub(crate) fn canary_backup_write(setup: &Setup) -> (bool, String) {
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
