//! Packet tests of Canary's P4 program on BMv2, held to the reference model
//! (`canary_core::model`) frame for frame, bucket for bucket and digest for digest.
//!
//! A fabric of `simple_switch_grpc` processes runs the v1model program, configured the way
//! `canary run` configures it (the generic fabric over the BMv2 driver: pipeline, forwarding,
//! flood groups, epoch, rules with their IDs). A model of every switch ([`Net`]) gets the same
//! tables and the same frames. For every frame a host sends, every copy is followed: each frame
//! on every fabric link must be the model's (shim, pathBF, mark, epoch tag) and each host must
//! get the model's frame byte for byte; the HH digest counters of the monitors must equal the
//! model's after every frame. At the end every meter bucket of every epoch the switches hold, as
//! decoded by the controller, equals the model's; every HashPipe slot too; the HH digests that
//! reached the controller are the model's; and no frame went anywhere else.
//!
//! One link can be a relay: a namespace with two veths between the switches across which the
//! test carries each frame itself, so it can hold frames in flight while switches start new
//! epochs.
//!
//! Scenarios: the two-switch line (both monitors) and the three-switch line (a transit in the
//! middle) with IPv4 and IPv6 flows (collisions, a DSM rule with a wrong pathBF, a flow without
//! USM, HashPipe evictions, flips of one switch at a time with frames held in flight, an epoch tag
//! reused), ARP, IPv6 neighbour solicitation, LLDP, other EtherTypes, a host's own frame of the
//! shim's EtherType, and frames arriving from the fabric without a shim (a neighbour not running
//! Canary); and a diamond where a flow changes path.
//!
//! Skips (printing `SKIP: ...`) without p4c, simple_switch_grpc, simple_switch_CLI or root.
//! `bmv2_monitoring_throughput` is a benchmark, `#[ignore]`d (see docs/dataplane.md).

mod bmv2;
mod fabric_lab;

use bmv2::RawSocket;
use canary_controller::setup::{prepare, Prepared};
use canary_core::fabric::{Fabric, RuleOp};
use canary_core::model::net::{Event, Net};
use canary_core::model::wire::{self, Macs};
use canary_core::model::{epoch_tag, Digest, SwitchConfig, SwitchModel};
use canary_core::pathbf::{encode_hop, PathBfParams};
use canary_core::sketch::{ecmp_member, hashpipe_index, meter_index, FlowHashes};
use canary_core::topo::{
    yaml, FloodTree, ForwardingState, PortMap, Prefix, Routing, SwitchIx, Topology,
};
use canary_core::FlowId;
use canary_switch::bmv2_thrift::{ThriftClient, Timeouts};
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Program, CXT_ID};
use canary_switch::entries::{self, Change, Entry, Key, Write};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use fabric_lab::{FabricLab, LabOptions, THRIFT_BASE};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

const M: Macs = Macs {
    dst: [2, 0, 0, 0, 0, 2],
    src: [2, 0, 0, 0, 0, 1],
};

const LINE2: &str = "name: line2\nmonitors: top+bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, s2]\n";
const LINE3: &str = "name: line3\nmonitors: bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: t, layer: 1}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, t]\n  - [t, s2]\n";
const DIAMOND: &str = "name: diamond\nmonitors: bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: s2a, layer: 1}\n  - {name: s2b, layer: 1}\n  - {name: s3, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, s2a]\n  - [s1, s2b]\n  - [s2a, s3]\n  - [s2b, s3]\n";

/// The fabric, its model, and the sockets the test sends and taps frames with.
struct Packets {
    // Sockets before the lab: they close before the namespaces go.
    hosts: Vec<RawSocket>,
    /// The receiving end of every link direction: (switch, port) -> its interface.
    taps: HashMap<(SwitchIx, u32), RawSocket>,
    /// The relayed link (switch, port) and its two ends.
    relay: Option<((SwitchIx, u32), RawSocket, RawSocket)>,
    held: Vec<Vec<u8>>,
    rt: tokio::runtime::Runtime,
    fabric: SwitchFabric<Bmv2Driver>,
    net: Net<'static>,
    prog: Arc<Bmv2Program>,
    prep: &'static Prepared,
    /// Digests the model sent, and those that reached the controller.
    expected_digests: Vec<(SwitchIx, Digest)>,
    seq: u16,
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
    fn start(test: &str, yaml_text: &str, relay: Option<(&str, &str)>) -> Option<Packets> {
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

    fn topo(&self) -> &'static Topology {
        &self.prep.topo
    }

    fn sw(&self, name: &str) -> SwitchIx {
        self.topo().switch(name).unwrap()
    }

    fn model(&self, s: SwitchIx) -> &SwitchModel {
        &self.net.switches[s as usize]
    }

    /// Installs rules on the switches (through the fabric, which gives them their IDs) and in
    /// the model.
    fn rules(&mut self, ops: &[RuleOp]) {
        let failed = self.rt.block_on(self.fabric.apply(ops));
        assert!(failed.is_empty(), "{failed:?}");
        for op in ops {
            self.net.switches[op.switch() as usize].apply(op).unwrap();
        }
    }

    /// Switch `s` alone starts epoch `epoch`.
    fn flip(&mut self, s: SwitchIx, epoch: u64) {
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
    fn hold(&mut self, on: bool) {
        self.net.hold = if on {
            self.relay.as_ref().map(|r| r.0)
        } else {
            None
        };
    }

    /// Host `host` sends `frame`; every copy is followed through BMv2 and the model.
    fn send(&mut self, host: u32, frame: &[u8]) {
        self.hosts[host as usize].send(frame);
        let events = self.net.send(host, frame);
        self.follow(events);
        self.check_counters();
    }

    /// Host 0 sends one frame of IP flow `f`.
    fn send_flow(&mut self, f: FlowId) {
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
    fn release(&mut self) {
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
    fn inject_on_relay(&mut self, frame: &[u8]) {
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
    fn verify(&mut self) {
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

fn udp(sport: u16) -> FlowId {
    FlowId::v4(0x0a00_0102, 0x0a00_0202, 17, sport, 2000)
}

fn udp6(sport: u16) -> FlowId {
    let a = canary_core::topo::default_ipv6;
    FlowId::v6(a(0x0a00_0102), a(0x0a00_0202), 17, sport, 2000)
}

/// The line scenario: collisions, a DSM rule with a wrong pathBF, a flow without USM, HashPipe
/// evictions, IPv6 flows; frames held in flight on the link out of s1 across flips of s1 alone
/// and of the last switch alone; an epoch reusing a parity; ARP, ND, LLDP and another EtherType.
fn line_scenario(test: &str, topo: &str, relay_to: &str) {
    let Some(mut fab) = Packets::start(test, topo, Some(("s1", relay_to))) else {
        return;
    };
    let (s1, last) = (fab.sw("s1"), fab.sw("s2"));
    let t = fab.topo();

    // d collides with a in meter row 0 only (dirties that bucket, not the others).
    let (a, b, e) = (udp(1000), udp(1001), udp(1003));
    let c = FlowId::v4(0x0a00_0102, 0x0a00_0202, 6, 1002, 80);
    let ha = FlowHashes::of(&a);
    let d = (1100..u16::MAX)
        .map(udp)
        .find(|f| {
            let h = FlowHashes::of(f);
            (0..3)
                .map(|r| meter_index(h, r, 1024) == meter_index(ha, r, 1024))
                .eq([true, false, false])
        })
        .unwrap();
    // p, q, r share their HashPipe stage-0 and stage-1 slots: evictions, carries, swaps and
    // pass-ons down to stage 2.
    let slots = |f: &FlowId| {
        let h = FlowHashes::of(f);
        (
            hashpipe_index(h, 0, 32, 1024),
            hashpipe_index(h, 1, 32, 1024),
        )
    };
    let p = udp(3000);
    let mut same = (3001..u16::MAX).map(udp).filter(|f| slots(f) == slots(&p));
    let (q, r) = (same.next().unwrap(), same.next().unwrap());
    let (x6, y6, z6) = (udp6(5000), udp6(5001), udp6(5002));

    // pathBF at the last switch: s1's mask, and the transit's in line3.
    let mut bf_down = fab.prep.codec.masks[s1 as usize];
    for (i, sw) in t.switches.iter().enumerate() {
        if !sw.monitor {
            bf_down = encode_hop(bf_down, fab.prep.codec.masks[i], false);
        }
    }
    let mut ops = Vec::new();
    for f in [a, b, d, x6, y6] {
        ops.push(RuleOp::InstallUsm {
            switch: s1,
            flow: f,
        });
    }
    for (f, bf) in [
        (a, bf_down),
        (b, bf_down),
        (d, bf_down),
        (e, bf_down),
        (c, bf_down ^ 1),
        (x6, bf_down),
        (y6, bf_down),
    ] {
        ops.push(RuleOp::InstallDsm {
            switch: last,
            flow: f,
            path_bf: bf,
        });
    }
    ops.push(RuleOp::InstallHh {
        switch: last,
        path_bf: bf_down,
        eta: 3,
    });
    ops.push(RuleOp::InstallHh {
        switch: s1,
        path_bf: 0,
        eta: 4,
    });
    fab.rules(&ops);

    for f in [
        a, a, b, c, a, d, c, c, b, a, c, d, a, c, p, p, p, q, r, p, q, q, r, p, r, r, r, q, x6, y6,
        z6, x6, z6, z6, z6, z6, y6,
    ] {
        fab.send_flow(f);
    }

    // Frames in flight across the flip: a, b, a, d, x6 leave s1 marked with epoch 0 and are held
    // on the link out of s1. s1 flips alone to epoch 1: a, b now leave marked 1 and reach the last
    // switch, still in epoch 0, where they count in epoch 1's buckets (the mark decides, not the
    // local epoch). The last switch flips too; then the held frames arrive marked 0 at a switch in
    // epoch 1, after newer ones, and count in epoch 0's buckets.
    fab.hold(true);
    for f in [a, b, a, d, x6] {
        fab.send_flow(f);
    }
    fab.hold(false);
    fab.flip(s1, 1);
    for f in [a, b, a, y6] {
        fab.send_flow(f);
    }
    fab.flip(last, 1);
    fab.release();
    let (_, d0) = fab.model(last).meters_of(epoch_tag(0));
    let (_, d1) = fab.model(last).meters_of(epoch_tag(1));
    let count = |dsm: &canary_core::sketch::Dsm, f: &FlowId| {
        dsm.clean_flows()
            .iter()
            .find(|r| r.flow == *f)
            .map(|r| r.count)
    };
    assert_eq!(
        count(&d1, &a),
        Some(2),
        "a's two frames after s1's flip, in epoch 1"
    );
    assert!(
        count(&d0, &a).is_some_and(|n| n >= 6),
        "a's held frames counted in epoch 0"
    );
    for f in [a, c, e, b, c, e, a, c, c, e, b, d, x6, z6] {
        fab.send_flow(f);
    }

    // Epoch 2 reuses epoch 0's parity: its first packets find epoch 0's buckets stale.
    fab.flip(s1, 2);
    fab.flip(last, 2);
    for f in [a, b, x6, a] {
        fab.send_flow(f);
    }
    let (_, d2) = fab.model(last).meters_of(epoch_tag(2));
    assert_eq!(count(&d2, &a), Some(2), "epoch 2 starts afresh in parity 0");
    assert!(count(&d2, &x6).is_some(), "an IPv6 flow is counted");

    // Not routed, never dropped: ARP, IPv6 neighbour solicitation, LLDP, a broadcast of
    // another EtherType, IPv4 multicast; all reach h2 as h1 sent them.
    let h1 = t.hosts[0].clone();
    let others = [
        wire::arp_request(M.src, h1.addr, 0x0a00_0263),
        wire::neighbour_solicitation(M.src, h1.addr6, t.hosts[1].addr6 + 0x99),
        wire::lldp(M.src, "eth0"),
        [
            vec![0xff; 6],
            M.src.to_vec(),
            vec![0x12, 0x34],
            vec![0xab; 46],
        ]
        .concat(),
        wire::ip_frame(
            M,
            &FlowId::v4(h1.addr, 0xe000_00fb, 17, 5353, 5353),
            9,
            b"mdns",
        ),
        // A host's own frame of the shim's EtherType: carried whole, inside a shim of ours.
        [
            M.dst.to_vec(),
            M.src.to_vec(),
            vec![0x88, 0xb5],
            vec![0x5a; 50],
        ]
        .concat(),
    ];
    for fr in others {
        fab.send(0, &fr);
    }
    // From a neighbour not running Canary (a rollout): frames without a shim arrive on the last
    // switch's fabric port. IP unicast of monitored flows is forwarded unmonitored (no bucket
    // changes, no digest); ARP is flooded; all reach h2 unchanged.
    fab.seq += 1;
    let plain = [
        wire::ip_frame(M, &a, fab.seq, b"no shim"),
        wire::ip_frame(M, &x6, fab.seq, b"no shim"),
        wire::arp_request(M.src, h1.addr, 0x0a00_0264),
    ];
    for fr in plain {
        fab.inject_on_relay(&fr);
    }

    assert!(
        fab.model(last).counters.hh_reports > 0 && fab.model(s1).counters.hh_reports > 0,
        "the sequence must exercise the HH report"
    );
    fab.verify();
}

#[test]
fn two_switch_line_matches_the_reference_model() {
    line_scenario("two_switch_line", LINE2, "s2");
}

#[test]
fn three_switch_line_matches_the_reference_model() {
    line_scenario("three_switch_line", LINE3, "t");
}

/// A flow changing path: s1's route to h2's rack first points at a one-member group (via s2a),
/// then back at the topology's two-member group (s2a, s2b). Flows whose ECMP member is s2b move:
/// their pathBF at s3 changes, so x's DSM rule (keyed on the old pathBF) stops matching and x goes
/// to HashPipe and fires the HH digest watched on the new pathBF; y has DSM rules for both
/// pathBFs, so its DSM buckets see a second rule and turn dirty; z (member s2a) stays on s2a and
/// stays clean.
#[test]
fn diamond_path_change_matches_the_reference_model() {
    let Some(mut fab) = Packets::start("diamond_path_change", DIAMOND, None) else {
        return;
    };
    let t = fab.topo();
    let (s1, s2a, s2b, s3) = (fab.sw("s1"), fab.sw("s2a"), fab.sw("s2b"), fab.sw("s3"));
    let ports = fab.net.ports;
    let (pa, pb) = (
        ports.of(s1).switch_ports[&s2a],
        ports.of(s1).switch_ports[&s2b],
    );
    // The route to h2's rack, and the one-member group standing in for it at first.
    let rack: Prefix = "10.0.2.0/24".parse().unwrap();
    let state = fab.model(s1).forwarding().clone();
    let route = *state.routes.iter().find(|r| r.prefix == rack).unwrap();
    let members = state
        .groups
        .iter()
        .find(|g| g.0 == route.group)
        .unwrap()
        .1
        .clone();
    assert_eq!(members, {
        let mut m = vec![pa, pb];
        m.sort_unstable();
        m
    });
    let single = 100u16;
    let set_route = |fab: &mut Packets, group: u16, size: u16, extra: Vec<Write>| {
        let mut w = extra;
        w.push(Write {
            change: Change::Modify,
            entry: Entry {
                table: canary_switch::contract::Table::IpRoute,
                keys: vec![Key::Lpm(rack.addr.to_u128(), u32::from(rack.len128()))],
                args: vec![group.into(), size.into()],
                default: false,
            },
        });
        let failed = fab.rt.block_on(fab.fabric.driver_mut(s1).write_now(&w));
        assert!(failed.is_empty(), "{failed:?}");
        let mut st = fab.model(s1).forwarding().clone();
        if !st.groups.iter().any(|g| g.0 == single) {
            st.groups.push((single, vec![pa]));
        }
        for r in st.routes.iter_mut().filter(|r| r.prefix == rack) {
            r.group = group;
            r.size = size;
        }
        fab.net.switches[s1 as usize].set_forwarding(st);
    };
    let group_entry = Write {
        change: Change::Insert,
        entry: Entry {
            table: canary_switch::contract::Table::EcmpGroup,
            keys: vec![Key::Exact(single.into()), Key::Exact(0)],
            args: vec![pa.into()],
            default: false,
        },
    };
    set_route(&mut fab, single, 1, vec![group_entry]);

    let mask = fab.prep.codec.masks[s1 as usize];
    let member_b = members.iter().position(|&p| p == pb).unwrap() as u16;
    let goes_b = |f: &FlowId| ecmp_member(FlowHashes::of(f).c32, mask, 2) == member_b;
    let mut moving = (4000..u16::MAX).map(udp).filter(goes_b);
    let (x, y) = (moving.next().unwrap(), moving.next().unwrap());
    let z = (4000..u16::MAX).map(udp).find(|f| !goes_b(f)).unwrap();
    let bf_a = encode_hop(
        fab.prep.codec.masks[s1 as usize],
        fab.prep.codec.masks[s2a as usize],
        false,
    );
    let bf_b = encode_hop(
        fab.prep.codec.masks[s1 as usize],
        fab.prep.codec.masks[s2b as usize],
        false,
    );
    assert_ne!(bf_a, bf_b, "s2a and s2b must leave different pathBFs");
    let mut ops = Vec::new();
    for f in [x, y, z] {
        ops.push(RuleOp::InstallUsm {
            switch: s1,
            flow: f,
        });
        ops.push(RuleOp::InstallDsm {
            switch: s3,
            flow: f,
            path_bf: bf_a,
        });
    }
    ops.push(RuleOp::InstallDsm {
        switch: s3,
        flow: y,
        path_bf: bf_b,
    });
    ops.push(RuleOp::InstallHh {
        switch: s3,
        path_bf: bf_b,
        eta: 2,
    });
    fab.rules(&ops);

    for f in [x, y, z, x, y, x, z, x] {
        fab.send_flow(f);
    }
    assert_eq!(fab.model(s3).counters.hh_reports, 0);
    set_route(&mut fab, route.group, route.size, vec![]);
    for f in [x, y, z, x, x, y, x, z, x, y] {
        fab.send_flow(f);
    }

    // What the model says happened, so the scenario cannot pass vacuously.
    let m = fab.model(s3);
    assert_eq!(
        m.counters.hh_reports, 3,
        "x's 3rd..5th packets via s2b exceed eta = 2"
    );
    assert_eq!(
        m.hashpipe().estimate(FlowHashes::of(&x)),
        5,
        "x's packets via s2b went to HashPipe"
    );
    let (_, dsm) = m.meters_of(epoch_tag(0));
    let (hx, hy, hz) = (FlowHashes::of(&x), FlowHashes::of(&y), FlowHashes::of(&z));
    for row in 0..3 {
        let bx = dsm.bucket(row, meter_index(hx, row, 1024));
        assert_eq!((bx.count, bx.dirty), (4, false), "x's DSM row {row}");
        let by = dsm.bucket(row, meter_index(hy, row, 1024));
        assert!(by.dirty, "y's DSM row {row} dirty after its path changed");
        let bz = dsm.bucket(row, meter_index(hz, row, 1024));
        assert_eq!((bz.count, bz.dirty), (4, false), "z's DSM row {row}");
    }
    let _ = t;
    fab.verify();
}

// ---------------------------------------------------------------------------------------------
// Benchmark: forwarding rate with monitoring on vs off

/// A `usize` from the environment, or `default`.
fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Packets {
    /// Canary on (both switches monitors, USM rules at s1 and DSM rules at s2 for `monitored`,
    /// HH rules whose eta is never exceeded, so HashPipe runs for every other packet but no
    /// digest is sent) or off (monitor 0, mask 0, no Canary rules): the same program.
    fn monitoring(&mut self, on: bool, monitored: &[FlowId]) {
        let (s1, s2) = (self.sw("s1"), self.sw("s2"));
        let bf = self.prep.codec.masks[s1 as usize];
        let mut ops = vec![
            RuleOp::InstallHh {
                switch: s2,
                path_bf: bf,
                eta: u32::MAX,
            },
            RuleOp::InstallHh {
                switch: s1,
                path_bf: 0,
                eta: u32::MAX,
            },
        ];
        for &f in monitored {
            ops.push(RuleOp::InstallUsm {
                switch: s1,
                flow: f,
            });
            ops.push(RuleOp::InstallDsm {
                switch: s2,
                flow: f,
                path_bf: bf,
            });
        }
        if !on {
            ops = ops.iter().map(RuleOp::as_removal).collect();
        }
        let failed = self.rt.block_on(self.fabric.apply(&ops));
        assert!(failed.is_empty(), "{failed:?}");
        for s in [s1, s2] {
            let c = SwitchConfig {
                monitor: on,
                mask: if on {
                    self.prep.codec.masks[s as usize]
                } else {
                    0
                },
                epoch: epoch_tag(0),
            };
            let w = Write {
                change: Change::Modify,
                entry: entries::config(c),
            };
            let failed = self.rt.block_on(self.fabric.driver_mut(s).write_now(&[w]));
            assert!(failed.is_empty(), "{failed:?}");
        }
    }

    /// Sends `frames` from h1 keeping at most `window` of them inside the fabric (so BMv2 is
    /// always busy and never overrun); returns (delivered to h2, packets per second from the
    /// first send to the last arrival).
    fn blast(&self, frames: &[Vec<u8>], window: usize) -> (usize, f64) {
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        let got = AtomicUsize::new(0);
        let (rx, tx, got) = (&self.hosts[1], &self.hosts[0], &got);
        let start = Instant::now();
        let last = std::thread::scope(|sc| {
            let rx = sc.spawn(move || {
                let mut last = Instant::now();
                while got.load(Relaxed) < frames.len() {
                    match rx.recv_timeout(Duration::from_secs(5)) {
                        Some(fr) if fr.len() >= 14 && fr[12..14] == [0x08, 0x00] => {
                            got.fetch_add(1, Relaxed);
                            last = Instant::now();
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
                last
            });
            for (sent, fr) in frames.iter().enumerate() {
                // A lost packet would hold the window forever: give up waiting after 200 ms.
                let wait = Instant::now();
                while sent - got.load(Relaxed).min(sent) >= window
                    && wait.elapsed() < Duration::from_millis(200)
                {
                    std::thread::sleep(Duration::from_micros(20));
                }
                tx.send(fr);
            }
            rx.join().unwrap()
        });
        let n = got.load(Relaxed);
        (n, n as f64 / (last - start).as_secs_f64())
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Benchmark, not a test: BMv2's forwarding rate on the two-switch line with Canary monitoring
/// on against the same program with monitoring off, interleaved in one run (the order alternates
/// per round); prints every round and the median of the per-round on/off ratios.
/// Run as root (docs/dataplane.md records a result):
/// `cargo test -p canary --test bmv2_packets -- --ignored --nocapture bmv2_monitoring_throughput`
/// Environment: CANARY_BENCH_ROUNDS (15), CANARY_BENCH_PACKETS (3000 per round and
/// configuration), CANARY_BENCH_WINDOW (16 packets in flight; BMv2 drops from bursts of ~32
/// back-to-back frames on its veth, so more in flight measures loss, not forwarding).
#[test]
#[ignore = "benchmark; see docs/dataplane.md"]
fn bmv2_monitoring_throughput() {
    let rounds = env_or("CANARY_BENCH_ROUNDS", 15);
    let packets = env_or("CANARY_BENCH_PACKETS", 3000);
    let window = env_or("CANARY_BENCH_WINDOW", 16);
    let Some(mut fab) = Packets::start("bmv2_monitoring_throughput", LINE2, None) else {
        return;
    };
    // No per-hop taps: they would copy every frame into a socket nobody reads.
    fab.taps.clear();
    // 32 UDP flows; half of them monitored (USM at s1, DSM at s2), the other half go through
    // HashPipe at both switches (all of them do at s1, which has no DSM rules).
    let flows: Vec<FlowId> = (0..32).map(|i| udp(5000 + i)).collect();
    let monitored = &flows[..16];
    let frames: Vec<Vec<u8>> = (0..packets)
        .map(|i| wire::ip_frame(M, &flows[i % flows.len()], i as u16, &[0xab; 18]))
        .collect();
    fab.hosts[1].set_recv_buffer(8 << 20);
    // Warm-up, not counted.
    fab.monitoring(true, monitored);
    fab.blast(&frames[..packets.min(2000)], window);
    fab.monitoring(false, monitored);

    let (mut on, mut off, mut ratios, mut lost) = (Vec::new(), Vec::new(), Vec::new(), 0);
    eprintln!("round  config  delivered/sent  packets/s");
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        let mut rate = [0.0; 2];
        for monitoring in order {
            fab.monitoring(monitoring, monitored);
            let (n, pps) = fab.blast(&frames, window);
            if monitoring {
                fab.monitoring(false, monitored);
            }
            let name = if monitoring { "on" } else { "off" };
            eprintln!("{round:5}  {name:6}  {n:>7}/{packets:<7}  {pps:9.0}");
            lost += packets - n;
            rate[usize::from(!monitoring)] = pps;
        }
        on.push(rate[0]);
        off.push(rate[1]);
        ratios.push(rate[0] / rate[1]);
    }
    // The "on" rounds really counted: s1's USM and s2's DSM hold packets.
    fab.monitoring(true, monitored);
    fab.blast(&frames[..100], window);
    let (s1, s2) = (fab.sw("s1"), fab.sw("s2"));
    let (usm, _) = fab
        .rt
        .block_on(fab.fabric.peek_meters(s1, epoch_tag(0)))
        .unwrap();
    let (_, dsm) = fab
        .rt
        .block_on(fab.fabric.peek_meters(s2, epoch_tag(0)))
        .unwrap();
    assert!(
        usm.occupied() > 0 && dsm.occupied() > 0,
        "the on rounds counted nothing"
    );
    let (mon, moff) = (median(&mut on), median(&mut off));
    let mut sorted = ratios.clone();
    let ratio = median(&mut sorted);
    eprintln!(
        "median packets/s: monitoring on {mon:.0}, off {moff:.0}; per-round on/off ratios {:?}",
        ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>()
    );
    eprintln!(
        "packets lost in all rounds: {lost} of {}",
        2 * rounds * packets
    );
    eprintln!("RESULT on/off throughput ratio (median of {rounds} rounds): {ratio:.3}");
}
