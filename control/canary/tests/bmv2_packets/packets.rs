//! [`Packets`]: the BMv2 fabric of a test, its reference model, and the sockets that send
//! and tap frames; every frame followed through both, and the final comparison.

use crate::bmv2::{self, RawSocket};
use crate::fabric_lab::{FabricLab, LabOptions, THRIFT_BASE};
use crate::M;
use canary_controller::setup::{prepare, Prepared};
use canary_core::fabric::{Fabric, RuleOp};
use canary_core::model::net::{Event, Net};
use canary_core::model::wire;
use canary_core::model::{epoch_tag, Digest, SwitchConfig, SwitchModel};
use canary_core::pathbf::PathBfParams;
use canary_core::topo::{yaml, FloodTree, ForwardingState, PortMap, Routing, SwitchIx, Topology};
use canary_core::FlowId;
use canary_switch::bmv2_thrift::{ThriftClient, Timeouts};
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Program, CXT_ID};
use canary_switch::entries::{self, Change, Write};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// The fabric, its model, and the sockets the test sends and taps frames with.
pub(crate) struct Packets {
    // Sockets before the lab: they close before the namespaces go.
    pub(crate) hosts: Vec<RawSocket>,
    /// The receiving end of every link direction: (switch, port) -> its interface.
    pub(crate) taps: HashMap<(SwitchIx, u32), RawSocket>,
    /// The relayed link (switch, port) and its two ends.
    relay: Option<((SwitchIx, u32), RawSocket, RawSocket)>,
    held: Vec<Vec<u8>>,
    pub(crate) rt: tokio::runtime::Runtime,
    pub(crate) fabric: SwitchFabric<Bmv2Driver>,
    pub(crate) net: Net<'static>,
    prog: Arc<Bmv2Program>,
    pub(crate) prep: &'static Prepared,
    /// Digests the model sent, and those that reached the controller.
    expected_digests: Vec<(SwitchIx, Digest)>,
    pub(crate) seq: u16,
    /// Kept for its Drop: kills the switches and removes the namespaces.
    _lab: FabricLab,
}

/// Is `fr` the frame `want` (maybe with another shim)?
fn same_frame(fr: &[u8], want: &[u8]) -> bool {
    wire::split(fr).0 == wire::split(want).0
}

impl Packets {
    /// Starts the switches of `yaml_text` in one namespace and configures them as `canary run`
    /// does; `relay`: the link (by switch names) whose frames the test carries. `None` (after
    /// printing `SKIP: ...`) when the tools or root are missing.
    pub(crate) fn start(
        test: &str,
        yaml_text: &str,
        relay: Option<(&str, &str)>,
    ) -> Option<Packets> {
        if !bmv2::runnable(&format!("bmv2_packets {test}"), &bmv2::missing()) {
            return None;
        }
        let topo = yaml::parse("topology.yaml", yaml_text).unwrap();
        let prep: &'static Prepared =
            Box::leak(Box::new(prepare(topo, PathBfParams::default()).unwrap()));
        let t = &prep.topo;
        let relay_link = relay.map(|(a, b)| (t.switch(a).unwrap(), t.switch(b).unwrap()));
        let lab = FabricLab::with(
            t.clone(),
            LabOptions {
                relay: relay_link,
                live_hosts: false,
            },
        );
        // The switches' servers listen in the fabric namespace; so does this thread from now
        // on (sockets elsewhere are opened by threads of their own).
        bmv2::enter_netns(&lab.fab);
        let (drivers, ports, prog) = lab.bmv2_drivers(t);
        let ports: &'static PortMap = Box::leak(Box::new(ports));
        let mut fabric = SwitchFabric::new(
            t,
            ports,
            &prep.codec.masks,
            drivers,
            prog.program.capacity(),
            FabricOptions::default(),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(fabric.connect(Duration::from_secs(30)))
            .unwrap();

        let routing = Routing::new(t);
        let tree = FloodTree::new(t);
        let models = (0..t.switches.len() as SwitchIx)
            .map(|s| {
                let mut m = SwitchModel::new(prog.program.capacity());
                m.set_config(SwitchConfig {
                    monitor: t.switches[s as usize].monitor,
                    mask: prep.codec.masks[s as usize],
                    epoch: epoch_tag(0),
                });
                m.set_forwarding(ForwardingState::of(t, &routing, &tree, s, ports.of(s)));
                m
            })
            .collect();
        let net = Net::new(t, ports, models);

        let hosts = lab
            .hosts
            .iter()
            .map(|(ns, _)| RawSocket::open(ns, "eth0"))
            .collect();
        let mut taps = HashMap::new();
        for &(from, to) in lab.link_iface.keys() {
            // The receiving end of from -> to is `to`'s interface of the link.
            let iface = &lab.link_iface[&(to, from)];
            let port = ports.of(to).switch_ports[&from];
            taps.insert((to, port), RawSocket::open(&lab.fab, iface));
        }
        let relay = relay_link.map(|(a, b)| {
            let ns = format!("{}relay", lab.lab.tag);
            (
                (a, ports.of(a).switch_ports[&b]),
                RawSocket::open(&ns, "rin"),
                RawSocket::open(&ns, "rout"),
            )
        });
        Some(Packets {
            hosts,
            taps,
            relay,
            held: Vec::new(),
            rt,
            fabric,
            net,
            prog,
            prep,
            expected_digests: Vec::new(),
            seq: 0,
            _lab: lab,
        })
    }

    pub(crate) fn topo(&self) -> &'static Topology {
        &self.prep.topo
    }

    pub(crate) fn sw(&self, name: &str) -> SwitchIx {
        self.topo().switch(name).unwrap()
    }

    pub(crate) fn model(&self, s: SwitchIx) -> &SwitchModel {
        &self.net.switches[s as usize]
    }

    /// Installs rules on the switches (through the fabric, which gives them their IDs) and in
    /// the model.
    pub(crate) fn rules(&mut self, ops: &[RuleOp]) {
        let failed = self.rt.block_on(self.fabric.apply(ops));
        assert!(failed.is_empty(), "{failed:?}");
        for op in ops {
            self.net.switches[op.switch() as usize].apply(op).unwrap();
        }
    }

    /// Switch `s` alone starts epoch `epoch`.
    pub(crate) fn flip(&mut self, s: SwitchIx, epoch: u64) {
        let m = &mut self.net.switches[s as usize];
        let mut c = m.config();
        c.epoch = epoch_tag(epoch);
        m.set_config(c);
        let w = Write {
            change: Change::Modify,
            entry: entries::config(c),
        };
        let failed = self.rt.block_on(self.fabric.driver_mut(s).write_now(&[w]));
        assert!(failed.is_empty(), "{failed:?}");
    }

    /// Frames leaving through the relay are held from now on (`true`), or carried at once.
    pub(crate) fn hold(&mut self, on: bool) {
        self.net.hold = if on {
            self.relay.as_ref().map(|r| r.0)
        } else {
            None
        };
    }

    /// Host `host` sends `frame`; every copy is followed through BMv2 and the model.
    pub(crate) fn send(&mut self, host: u32, frame: &[u8]) {
        self.hosts[host as usize].send(frame);
        let events = self.net.send(host, frame);
        self.follow(events);
        self.check_counters();
    }

    /// Host 0 sends one frame of IP flow `f`.
    pub(crate) fn send_flow(&mut self, f: FlowId) {
        self.seq += 1;
        let frame = wire::ip_frame(M, &f, self.seq, &self.seq.to_be_bytes());
        self.send(0, &frame);
    }

    fn follow(&mut self, events: Vec<Event>) {
        for e in events {
            match e {
                Event::Link {
                    switch,
                    port,
                    frame,
                } => {
                    if self.relay.as_ref().is_some_and(|r| r.0 == (switch, port)) {
                        let got = self.relay_in(&frame);
                        self.relay.as_ref().unwrap().2.send(&got);
                    }
                    let next = self.net.ports.of(switch).neighbor(port).unwrap();
                    let back = self.net.ports.of(next).switch_ports[&switch];
                    let name = self.topo().name_of(next).to_string();
                    let got = self.taps[&(next, back)]
                        .recv_until(Duration::from_secs(3), |fr| same_frame(fr, &frame))
                        .unwrap_or_else(|| panic!("{name} port {back} did not see {frame:02x?}"));
                    assert_eq!(got, frame, "frame arriving at {name} port {back}");
                }
                Event::Held { frame, .. } => {
                    self.relay_in(&frame);
                    self.held.push(frame);
                }
                Event::Delivered { host, frame } => {
                    let got = self.hosts[host as usize]
                        .recv_until(Duration::from_secs(3), |fr| same_frame(fr, &frame))
                        .unwrap_or_else(|| panic!("host {host} did not get {frame:02x?}"));
                    assert_eq!(got, frame, "host {host} gets the frame byte for byte");
                }
                Event::Digest { switch, digest } => self.expected_digests.push((switch, digest)),
                Event::NoRoute { .. } => {}
            }
        }
    }

    /// The frame arriving at the relay from its first switch: the model's.
    fn relay_in(&self, want: &[u8]) -> Vec<u8> {
        let got = self
            .relay
            .as_ref()
            .unwrap()
            .1
            .recv_until(Duration::from_secs(3), |fr| same_frame(fr, want))
            .unwrap_or_else(|| panic!("the relay did not get {want:02x?}"));
        assert_eq!(got, want, "frame leaving through the relay");
        got
    }

    /// Carries the held frames on, oldest first, each to the end of its journey.
    pub(crate) fn release(&mut self) {
        assert!(!self.held.is_empty(), "nothing held");
        let (switch, port) = self.relay.as_ref().unwrap().0;
        for frame in std::mem::take(&mut self.held) {
            self.relay.as_ref().unwrap().2.send(&frame);
            let events = self.net.release(switch, port, frame);
            self.follow(events);
        }
        self.check_counters();
    }

    /// A frame arrives over the relay as if its first switch had sent it (a neighbour that
    /// does not run Canary sends frames without a shim).
    pub(crate) fn inject_on_relay(&mut self, frame: &[u8]) {
        let (switch, port) = self.relay.as_ref().unwrap().0;
        self.relay.as_ref().unwrap().2.send(frame);
        // The tap on the receiving switch's end of the link sees it arrive.
        let next = self.net.ports.of(switch).neighbor(port).unwrap();
        let back = self.net.ports.of(next).switch_ports[&switch];
        let got = self.taps[&(next, back)]
            .recv_until(Duration::from_secs(3), |fr| same_frame(fr, frame))
            .expect("the injected frame on the link");
        assert_eq!(got, frame);
        let events = self.net.release(switch, port, frame.to_vec());
        self.follow(events);
        self.check_counters();
    }

    /// The HH digest counter of every monitor equals the model's.
    fn check_counters(&mut self) {
        let id = self.prog.program.hh_counter.expect("hh_report_ctr");
        for s in self.topo().monitors() {
            let got = self
                .rt
                .block_on(self.fabric.driver_mut(s).read_counter(id, 0))
                .unwrap();
            let want = self.model(s).counters.hh_reports;
            assert_eq!(
                got,
                want,
                "HH digests sent by {} after frame {}",
                self.topo().name_of(s),
                self.seq
            );
        }
    }

    /// Every meter bucket of every epoch each monitor holds, every HashPipe slot and the
    /// digests that reached the controller equal the model's; no frame went anywhere else.
    pub(crate) fn verify(&mut self) {
        assert!(self.held.is_empty(), "frames still held");
        for s in self.topo().monitors() {
            let name = self.topo().name_of(s).to_string();
            let m = &self.net.switches[s as usize];
            let mut tags = BTreeSet::new();
            for p in 0..2 {
                let ((_, usm_tag), (_, dsm_tag)) = m.meters_raw(p);
                tags.extend(usm_tag);
                tags.extend(dsm_tag);
            }
            for &tag in &tags {
                let (usm, dsm) = self.rt.block_on(self.fabric.peek_meters(s, tag)).unwrap();
                let (mu, md) = m.meters_of(tag);
                assert_eq!(usm, mu, "{name}: USM of epoch tag {tag}");
                assert_eq!(dsm, md, "{name}: DSM of epoch tag {tag}");
            }
            let mut t = ThriftClient::connect(
                name.clone(),
                ("127.0.0.1", THRIFT_BASE + s as u16),
                Timeouts::default(),
            )
            .unwrap();
            let want: HashMap<(usize, usize), (u32, u32)> = m
                .hashpipe()
                .entries()
                .map(|(st, i, fp, c)| ((st, i), (fp, c)))
                .collect();
            for (stage, reg) in self.prog.program.hashpipe.iter().enumerate() {
                let v = t.register_read_all(CXT_ID, &reg.name).unwrap();
                for (i, &x) in v.iter().enumerate() {
                    let x = x as u64;
                    // count ++ fingerprint (v1model/hashpipe.p4)
                    let got = (x != 0).then_some((x as u32, (x >> 32) as u32));
                    assert_eq!(
                        got,
                        want.get(&(stage, i)).copied(),
                        "{name} HashPipe stage {stage} slot {i}"
                    );
                }
            }
        }
        // Digest lists leave a switch within its max_timeout (10 ms).
        self.rt
            .block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
        let reports = self.rt.block_on(self.fabric.take_reports());
        eprintln!("fabric counters: {:?}", self.fabric.counters);
        let got: BTreeSet<(SwitchIx, FlowId, u32)> = reports
            .iter()
            .map(|r| (r.switch, r.flow, r.path_bf))
            .collect();
        let want: BTreeSet<(SwitchIx, FlowId, u32)> = self
            .expected_digests
            .iter()
            .map(|(s, d)| (*s, d.flow, d.path_bf))
            .collect();
        assert_eq!(got, want, "the HH digests that reached the controller");
        let mut sockets: Vec<(String, &RawSocket)> = self
            .taps
            .iter()
            .map(|(&(s, p), t)| (format!("{} port {p}", self.topo().name_of(s)), t))
            .collect();
        if let Some((_, rin, _)) = &self.relay {
            sockets.push(("the relay".into(), rin));
        }
        for (i, h) in self.hosts.iter().enumerate() {
            sockets.push((format!("host {i}"), h));
        }
        for (what, sock) in sockets {
            let stray = sock.recv_timeout(Duration::from_millis(100));
            assert_eq!(stray, None, "unexpected frame at {what}");
        }
    }
}
