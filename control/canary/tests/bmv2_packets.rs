//! Packet tests of the v1model Canary program on BMv2, held to the Rust reference model.
//!
//! One driver ([`Fabric`]) runs a scenario on any topology given as data ([`Topo`]): each switch
//! and host in its own network namespace, switch ports on veth pairs, tables programmed with
//! simple_switch_CLI over Thrift, packets sent from h1 with a raw socket. A model of every switch
//! (the simulator's per-hop logic, `SimFabric::walk`, with `canary_core::sketch` meters) is fed
//! the same packets. For every packet the driver checks: the frame arriving on every hop carries
//! the model's pathBF and mark; h2 gets it byte for byte; the HH report counters of the monitors
//! it passed equal the model's. At the end every USM/DSM/HashPipe register equals the model and
//! no frame went anywhere else.
//!
//! Topologies: the two-switch line (both monitors), the three-switch line (a transit in the
//! middle), both with the same sequence (collisions, a DSM rule with a wrong pathBF, flips of one
//! switch at a time, packets held in flight across a flip), and a diamond whose first switch's
//! ECMP group is rewritten mid-sequence so flows change path.
//!
//! Packets in flight are held deterministically: a fabric link can be a *relay*, a namespace
//! with two veths between the switches across which the test itself carries each frame; holding
//! means not carrying it yet. Flips happen while frames are in the test's hands.
//!
//! Skips (printing `SKIP: ...`) without p4c, simple_switch_grpc, simple_switch_CLI or root.
//! `bmv2_monitoring_throughput` is a benchmark, `#[ignore]`d (see docs/dataplane.md).

mod bmv2;

use bmv2::{CliSession, Lab, Names, RawSocket};
use canary_core::pathbf::{encode_hop, PathBfParams};
use canary_core::sketch::{
    ecmp_member, hashpipe_index, meter_index, Dsm, FlowHashes, HashPipe, Usm,
};
use canary_core::FlowId;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

const H1_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const H2_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// h2's prefix: every route in these topologies points there (traffic flows h1 → h2).
const H2_PREFIX: &str = "10.0.2.0/24";

// ---------------------------------------------------------------------------------------------
// Topologies as data

/// A switch: its name, whether it is a monitor, and its switch ID (its pathBF mask).
struct SwitchSpec {
    name: &'static str,
    monitor: bool,
    id: u32,
}

/// A fabric link from switch port `from` to switch port `to` (switch index, port number).
/// With `relay` the test carries its frames itself (namespace `r{index}`, veths `rin` and `rout`; `ip` would read `a` as `address`),
/// so it can hold packets in flight.
struct Link {
    from: (usize, u32),
    to: (usize, u32),
    relay: bool,
}

struct Topo {
    switches: Vec<SwitchSpec>,
    /// The switch port h1 (h2) is attached to.
    h1: (usize, u32),
    h2: (usize, u32),
    links: Vec<Link>,
    /// Per switch, the ports of its ECMP group towards h2, in member order.
    routes: Vec<Vec<u32>>,
}

/// Where a switch port leads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Peer {
    H2,
    Link(usize),
}

impl Topo {
    /// h1 — s1 — … — sn — h2; port 1 faces h1, port 2 faces h2. With `relay`, the link
    /// s1 → s2 is a relay.
    fn line(monitors: &[bool], relay: bool) -> Topo {
        const NAMES: [&str; 4] = ["s1", "s2", "s3", "s4"];
        let n = monitors.len();
        Topo {
            switches: monitors
                .iter()
                .enumerate()
                .map(|(i, &monitor)| SwitchSpec {
                    name: NAMES[i],
                    monitor,
                    id: 101 + i as u32,
                })
                .collect(),
            h1: (0, 1),
            h2: (n - 1, 2),
            links: (0..n - 1)
                .map(|i| Link {
                    from: (i, 2),
                    to: (i + 1, 1),
                    relay: relay && i == 0,
                })
                .collect(),
            routes: vec![vec![2]; n],
        }
    }

    /// h1 — s1 — {s2a, s2b} — s3 — h2: s1 (monitor) ports 2 → s2a, 3 → s2b; the transits
    /// s2a, s2b forward port 1 → 2; s3 (monitor) receives on port 1 (from s2a) and 3 (from s2b)
    /// and sends to h2 on port 2. s1 starts with a one-member group (via s2a).
    fn diamond() -> Topo {
        let sw = |name, monitor, id| SwitchSpec { name, monitor, id };
        let link = |from, to| Link {
            from,
            to,
            relay: false,
        };
        Topo {
            switches: vec![
                sw("s1", true, 101),
                sw("s2a", false, 102),
                sw("s2b", false, 104),
                sw("s3", true, 103),
            ],
            h1: (0, 1),
            h2: (3, 2),
            links: vec![
                link((0, 2), (1, 1)),
                link((0, 3), (2, 1)),
                link((1, 2), (3, 1)),
                link((2, 2), (3, 3)),
            ],
            routes: vec![vec![2], vec![2], vec![2], vec![2]],
        }
    }

    fn peer(&self, s: usize, port: u32) -> Peer {
        if (s, port) == self.h2 {
            return Peer::H2;
        }
        let l = self.links.iter().position(|l| l.from == (s, port));
        Peer::Link(
            l.unwrap_or_else(|| panic!("{} port {port} leads nowhere", self.switches[s].name)),
        )
    }
}

// ---------------------------------------------------------------------------------------------
// The model

/// One switch of the model: the simulator's per-hop logic (`SimFabric::walk`).
struct ModelSwitch {
    name: &'static str,
    ns: String,
    monitor: bool,
    mask: u32,
    parity: usize,
    usm: [Usm; 2],
    dsm: [Dsm; 2],
    hp: HashPipe,
    usm_rules: HashSet<FlowId>,
    dsm_rules: HashSet<(FlowId, u32)>,
    hh_rules: HashMap<u32, u32>,
    reports: u64,
}

impl ModelSwitch {
    fn new(spec: &SwitchSpec, ns: String) -> Self {
        ModelSwitch {
            name: spec.name,
            ns,
            monitor: spec.monitor,
            mask: PathBfParams::default().mask(spec.id),
            parity: 0,
            usm: Default::default(),
            dsm: Default::default(),
            hp: HashPipe::default(),
            usm_rules: HashSet::new(),
            dsm_rules: HashSet::new(),
            hh_rules: HashMap::new(),
            reports: 0,
        }
    }

    /// One hop: `mark` is 0 (not counted) or 1 + parity, as in the simulator.
    fn hop(&mut self, f: &FlowId, bf: &mut u32, mark: &mut u8, last: bool) {
        let h = FlowHashes::of(f);
        if self.monitor {
            if self.dsm_rules.contains(&(*f, *bf)) {
                if *mark > 0 {
                    self.dsm[(*mark - 1) as usize].update(f, h, *bf);
                }
            } else {
                let count = self.hp.update(f, h);
                if self.hh_rules.get(bf).is_some_and(|&eta| count > eta) {
                    self.reports += 1;
                }
            }
            *mark = 0;
        }
        *bf = encode_hop(*bf, self.mask, self.monitor);
        if self.monitor && !last && self.usm_rules.contains(f) {
            self.usm[self.parity].update(f, h);
            *mark = 1 + self.parity as u8;
        }
    }

    /// The ECMP member the P4 program picks among `size` (`Forwarding` in
    /// p4src/v1model/forwarding.p4): `canary_core::sketch::ecmp_member`.
    fn member(&self, f: &FlowId, size: usize) -> usize {
        usize::from(ecmp_member(FlowHashes::of(f).c32, self.mask, size as u16))
    }
}

// ---------------------------------------------------------------------------------------------
// Frames

fn ip(a: u32) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

fn flow_keys(f: &FlowId) -> String {
    format!(
        "{} {} {} {} {}",
        ip(f.src.as_v4().unwrap()),
        ip(f.dst.as_v4().unwrap()),
        f.proto,
        f.sport,
        f.dport
    )
}

/// An Ethernet/IPv4/{UDP,TCP} frame of `f` with a payload tagged by `seq` (also the IPv4 ID).
fn frame(f: &FlowId, seq: u16) -> Vec<u8> {
    let payload: Vec<u8> = (0..18).map(|i| (seq as u8).wrapping_add(i)).collect();
    let l4_len = if f.proto == 6 { 20 } else { 8 };
    let total = 20 + l4_len + payload.len();
    let mut p = Vec::new();
    p.extend_from_slice(&H2_MAC);
    p.extend_from_slice(&H1_MAC);
    p.extend_from_slice(&[0x08, 0x00]);
    let mut iph = vec![0x45, 0, (total >> 8) as u8, total as u8];
    iph.extend_from_slice(&seq.to_be_bytes());
    iph.extend_from_slice(&[0x40, 0, 64, f.proto, 0, 0]);
    iph.extend_from_slice(&f.src.as_v4().unwrap().to_be_bytes());
    iph.extend_from_slice(&f.dst.as_v4().unwrap().to_be_bytes());
    let sum: u32 = iph
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(c[1]))
        .sum();
    let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
    iph[10..12].copy_from_slice(&sum.to_be_bytes());
    p.extend_from_slice(&iph);
    p.extend_from_slice(&f.sport.to_be_bytes());
    p.extend_from_slice(&f.dport.to_be_bytes());
    if f.proto == 6 {
        p.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    } else {
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
    }
    p.extend_from_slice(&payload);
    p
}

/// `pkt` as it travels inside the fabric: the shim with `bf` and `mark` after Ethernet.
fn with_shim(pkt: &[u8], bf: u32, mark: u8) -> Vec<u8> {
    let mut out = pkt[..12].to_vec();
    out.extend_from_slice(&[0x88, 0xb5]);
    out.extend_from_slice(&bf.to_be_bytes());
    let flags = if mark > 0 {
        0x80 | ((mark - 1) << 6)
    } else {
        0
    };
    out.extend_from_slice(&[flags, 0]);
    out.extend_from_slice(&pkt[12..14]);
    out.extend_from_slice(&pkt[14..]);
    out
}

/// Is `fr` packet `seq` inside the fabric (shim, IPv4 ID at 26..28)?
fn shim_seq(fr: &[u8], seq: u16) -> bool {
    fr.len() >= 28 && fr[12..14] == [0x88, 0xb5] && fr[26..28] == seq.to_be_bytes()
}

fn udp(sport: u16) -> FlowId {
    FlowId::v4(0x0a00_0101, 0x0a00_0202, 17, sport, 2000)
}

// ---------------------------------------------------------------------------------------------
// The driver

/// The compiled program, shared by the tests of this binary running at the same time (p4c
/// takes seconds); removed when the last of them drops it.
fn program() -> Arc<(tempfile::TempDir, PathBuf)> {
    static SHARED: Mutex<Weak<(tempfile::TempDir, PathBuf)>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = shared.upgrade() {
        return p;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = bmv2::build(dir.path());
    let p = Arc::new((dir, json));
    *shared = Arc::downgrade(&p);
    p
}

/// A packet inside the fabric: what the model says it carries now.
struct InFlight {
    seq: u16,
    flow: FlowId,
    pkt: Vec<u8>,
    bf: u32,
    mark: u8,
}

/// A running topology of BMv2 switches and its model, driven one packet at a time.
struct Fabric {
    // Sockets before the lab: they close before the namespaces go.
    tx: RawSocket,
    rx: RawSocket,
    /// The receiving end of every link (switch, port), where the test taps each hop.
    taps: HashMap<(usize, u32), RawSocket>,
    /// Per link: the relay's two sockets (frames arrive on `rin`, leave on `rout`).
    relays: Vec<Option<(RawSocket, RawSocket)>>,
    hold: bool,
    held: Vec<(InFlight, usize)>,
    topo: Topo,
    sw: Vec<ModelSwitch>,
    route_handle: Vec<u32>,
    next_group: u16,
    seq: u16,
    names: Names,
    /// One simple_switch_CLI session per switch.
    cli: Vec<RefCell<CliSession>>,
    /// Kept for its Drop: kills the switches and removes the namespaces.
    _lab: Lab,
    _program: Arc<(tempfile::TempDir, PathBuf)>,
}

/// The port's interface name inside its switch's namespace.
fn port_if(port: u32) -> String {
    format!("p{port}")
}

impl Fabric {
    /// Creates namespaces, veths and switches, and programs forwarding and switch_config.
    /// `None` (after printing `SKIP: ...`) when the tools or root are missing.
    fn start(test: &str, topo: Topo) -> Option<Fabric> {
        if let Some(what) = bmv2::missing() {
            bmv2::skip(&format!("bmv2_packets {test}: {what}"));
            return None;
        }
        let mut lab = Lab::new();
        let program = program();
        let json = program.1.clone();
        let names = Names::load(&json);
        let h1 = lab.netns("h1");
        let h2 = lab.netns("h2");
        let sw: Vec<ModelSwitch> = topo
            .switches
            .iter()
            .map(|s| ModelSwitch::new(s, lab.netns(s.name)))
            .collect();
        lab.veth(&h1, "eth0", &sw[topo.h1.0].ns, &port_if(topo.h1.1));
        lab.veth(&sw[topo.h2.0].ns, &port_if(topo.h2.1), &h2, "eth0");
        let mut relays = Vec::new();
        for (i, l) in topo.links.iter().enumerate() {
            let (from, to) = (&sw[l.from.0].ns, &sw[l.to.0].ns);
            if l.relay {
                let r = lab.netns(&format!("r{i}"));
                lab.veth(from, &port_if(l.from.1), &r, "rin");
                lab.veth(&r, "rout", to, &port_if(l.to.1));
                relays.push(Some((
                    RawSocket::open(&r, "rin"),
                    RawSocket::open(&r, "rout"),
                )));
            } else {
                lab.veth(from, &port_if(l.from.1), to, &port_if(l.to.1));
                relays.push(None);
            }
        }
        for (i, s) in sw.iter().enumerate() {
            let mut ports: BTreeSet<u32> = BTreeSet::new();
            for l in &topo.links {
                for (j, p) in [l.from, l.to] {
                    if j == i {
                        ports.insert(p);
                    }
                }
            }
            for (j, p) in [topo.h1, topo.h2] {
                if j == i {
                    ports.insert(p);
                }
            }
            let ifs: Vec<(u32, String)> = ports.iter().map(|&p| (p, port_if(p))).collect();
            let refs: Vec<(u32, &str)> = ifs.iter().map(|(p, n)| (*p, n.as_str())).collect();
            lab.switch(&s.ns, &json, i as u32 + 1, &refs);
        }
        let taps = topo
            .links
            .iter()
            .map(|l| (l.to, RawSocket::open(&sw[l.to.0].ns, &port_if(l.to.1))))
            .collect();
        let cli = sw
            .iter()
            .map(|s| RefCell::new(CliSession::open(&s.ns)))
            .collect();
        let mut fab = Fabric {
            cli,
            tx: RawSocket::open(&h1, "eth0"),
            rx: RawSocket::open(&h2, "eth0"),
            taps,
            relays,
            hold: false,
            held: Vec::new(),
            route_handle: Vec::new(),
            next_group: 1,
            seq: 0,
            sw,
            topo,
            names,
            _lab: lab,
            _program: program,
        };
        for i in 0..fab.sw.len() {
            let s = &fab.sw[i];
            let mut c = format!(
                "table_set_default {} {} {} {} 0\n",
                fab.n("switch_config"),
                fab.n("set_config"),
                u8::from(s.monitor),
                s.mask
            );
            for (j, p) in [fab.topo.h1, fab.topo.h2] {
                if j == i {
                    c += &format!(
                        "table_add {} {} {p} =>\n",
                        fab.n("host_port_in"),
                        fab.n("host_port")
                    );
                    c += &format!(
                        "table_add {} {} {p} =>\n",
                        fab.n("host_port_out"),
                        fab.n("to_host")
                    );
                }
            }
            fab.cli(i, &c);
            let ports = fab.topo.routes[i].clone();
            let g = fab.ecmp_group(i, &ports);
            let out = fab.cli(
                i,
                &format!(
                    "table_add {} {} {H2_PREFIX} => {g} {}\n",
                    fab.n("ipv4_route"),
                    fab.n("set_group"),
                    fab.topo.routes[i].len()
                ),
            );
            let handle = out
                .split("added with handle")
                .nth(1)
                .and_then(|t| t.split_whitespace().next())
                .and_then(|h| h.parse().ok())
                .unwrap_or_else(|| panic!("no handle in {out}"));
            fab.route_handle.push(handle);
        }
        Some(fab)
    }

    /// Runs simple_switch_CLI `commands` on switch `s`.
    fn cli(&self, s: usize, commands: &str) -> String {
        self.cli[s].borrow_mut().run(commands)
    }

    /// The fully qualified P4 name ending in `suffix`.
    fn n(&self, suffix: &str) -> String {
        self.names.get(suffix).to_string()
    }

    /// Installs a new ECMP group at switch `s` with `ports` as members; returns its id.
    fn ecmp_group(&mut self, s: usize, ports: &[u32]) -> u16 {
        let g = self.next_group;
        self.next_group += 1;
        let c: String = ports
            .iter()
            .enumerate()
            .map(|(m, p)| {
                format!(
                    "table_add {} {} {g} {m} => {p}\n",
                    self.n("ecmp_group"),
                    self.n("set_port")
                )
            })
            .collect();
        self.cli(s, &c);
        g
    }

    /// Rewrites switch `s`'s route towards h2 to a new group of `ports` (one table_modify: the
    /// switch moves from the old group to the new one between two packets).
    fn set_route(&mut self, s: usize, ports: &[u32]) {
        let g = self.ecmp_group(s, ports);
        let c = format!(
            "table_modify {} {} {} => {g} {}\n",
            self.n("ipv4_route"),
            self.n("set_group"),
            self.route_handle[s],
            ports.len()
        );
        self.cli(s, &c);
        self.topo.routes[s] = ports.to_vec();
    }

    fn add_usm(&mut self, s: usize, f: FlowId) {
        self.sw[s].usm_rules.insert(f);
        let c = format!(
            "table_add {} {} {} =>\n",
            self.n("usm_table"),
            self.n("usm_count"),
            flow_keys(&f)
        );
        self.cli(s, &c);
    }

    fn add_dsm(&mut self, s: usize, f: FlowId, bf: u32) {
        self.sw[s].dsm_rules.insert((f, bf));
        let c = format!(
            "table_add {} {} {} {bf} =>\n",
            self.n("dsm_table"),
            self.n("dsm_hit"),
            flow_keys(&f)
        );
        self.cli(s, &c);
    }

    fn add_hh(&mut self, s: usize, bf: u32, eta: u32) {
        self.sw[s].hh_rules.insert(bf, eta);
        let c = format!(
            "table_add {} {} {bf} => {eta}\n",
            self.n("hh_table"),
            self.n("hh_watch")
        );
        self.cli(s, &c);
    }

    /// The controller's epoch flip at switch `s` alone: rewrite its config's default action
    /// with the other parity.
    fn flip(&mut self, s: usize) {
        let parity = 1 - self.sw[s].parity;
        self.sw[s].parity = parity;
        let c = format!(
            "table_set_default {} {} {} {} {parity}\n",
            self.n("switch_config"),
            self.n("set_config"),
            u8::from(self.sw[s].monitor),
            self.sw[s].mask
        );
        self.cli(s, &c);
    }

    /// The pathBF a packet of `f` carries into switch `to` along the current routes.
    fn bf_into(&self, f: &FlowId, to: usize) -> u32 {
        let (mut s, mut bf) = (self.topo.h1.0, 0);
        while s != to {
            bf = encode_hop(bf, self.sw[s].mask, self.sw[s].monitor);
            match self.next(s, f) {
                (_, Peer::Link(l)) => s = self.topo.links[l].to.0,
                (_, Peer::H2) => panic!("{f} never reaches {}", self.sw[to].name),
            }
        }
        bf
    }

    /// Switch `s`'s egress port for `f` and where it leads.
    fn next(&self, s: usize, f: &FlowId) -> (u32, Peer) {
        let group = &self.topo.routes[s];
        let port = group[self.sw[s].member(f, group.len())];
        (port, self.topo.peer(s, port))
    }

    /// Sends one packet of `f` from h1 and follows it (model and BMv2) until h2 or a relay
    /// that holds it.
    fn send(&mut self, f: FlowId) {
        self.seq += 1;
        let pkt = frame(&f, self.seq);
        self.tx.send(&pkt);
        let p = InFlight {
            seq: self.seq,
            flow: f,
            pkt,
            bf: 0,
            mark: 0,
        };
        self.travel(p, self.topo.h1.0);
    }

    /// Relays from now on hold the frames they get (`true`) or carry them on at once.
    fn hold(&mut self, on: bool) {
        self.hold = on;
    }

    /// Carries the held frames on, oldest first, each to the end of its journey.
    fn release(&mut self) {
        assert!(!self.held.is_empty(), "nothing held");
        for (p, l) in std::mem::take(&mut self.held) {
            let (_, b) = self.relays[l].as_ref().unwrap();
            b.send(&with_shim(&p.pkt, p.bf, p.mark));
            self.arrive(p, l);
        }
    }

    fn travel(&mut self, mut p: InFlight, mut s: usize) {
        let mut monitors = Vec::new();
        loop {
            let (port, peer) = self.next(s, &p.flow);
            if self.sw[s].monitor {
                monitors.push(s);
            }
            self.sw[s].hop(&p.flow, &mut p.bf, &mut p.mark, peer == Peer::H2);
            let l = match peer {
                Peer::H2 => {
                    let seq = p.seq;
                    let got = self.rx.recv_until(Duration::from_secs(3), |fr| {
                        fr.len() >= 20 && fr[18..20] == seq.to_be_bytes()
                    });
                    assert_eq!(
                        got.as_deref(),
                        Some(p.pkt.as_slice()),
                        "h2 got packet {seq} ({}) byte for byte",
                        p.flow
                    );
                    break;
                }
                Peer::Link(l) => l,
            };
            if let Some((a, _)) = &self.relays[l] {
                let want = with_shim(&p.pkt, p.bf, p.mark);
                let got = a.recv_until(Duration::from_secs(3), |fr| shim_seq(fr, p.seq));
                assert_eq!(
                    got.as_deref(),
                    Some(want.as_slice()),
                    "packet {} ({}) leaving {} port {port}: pathBF {:#x}, mark {}",
                    p.seq,
                    p.flow,
                    self.sw[s].name,
                    p.bf,
                    p.mark
                );
                if self.hold {
                    self.held.push((p, l));
                    break;
                }
                self.relays[l].as_ref().unwrap().1.send(&want);
            }
            s = self.arrive_at(&p, l);
        }
        self.check_reports(&monitors);
    }

    /// Follows a released packet from the far end of link `l`.
    fn arrive(&mut self, p: InFlight, l: usize) {
        let s = self.arrive_at(&p, l);
        self.travel(p, s);
    }

    /// Checks `p` arriving on the far end of link `l` with the model's shim; returns that switch.
    fn arrive_at(&self, p: &InFlight, l: usize) -> usize {
        let to = self.topo.links[l].to;
        let want = with_shim(&p.pkt, p.bf, p.mark);
        let got = self.taps[&to]
            .recv_until(Duration::from_secs(3), |fr| shim_seq(fr, p.seq))
            .unwrap_or_else(|| {
                panic!(
                    "{} port {} did not see packet {} ({})",
                    self.sw[to.0].name, to.1, p.seq, p.flow
                )
            });
        assert_eq!(
            got, want,
            "packet {} ({}) arriving at {} port {}: pathBF {:#x}, mark {}",
            p.seq, p.flow, self.sw[to.0].name, to.1, p.bf, p.mark
        );
        to.0
    }

    /// The HH report counters of `monitors` equal the model's.
    fn check_reports(&self, monitors: &[usize]) {
        let ctr = self.n("hh_report_ctr");
        for &s in monitors {
            let fired = self.cli[s].borrow_mut().counter(&ctr, 0);
            assert_eq!(
                fired, self.sw[s].reports,
                "HH reports at {} after packet {}",
                self.sw[s].name, self.seq
            );
        }
    }

    /// Every register of every monitor equals the model; no frame is left anywhere (none took
    /// a path the model did not predict).
    fn verify(&self) {
        assert!(self.held.is_empty(), "frames still held");
        for (i, s) in self.sw.iter().enumerate().filter(|(_, s)| s.monitor) {
            compare_registers(&mut self.cli[i].borrow_mut(), &self.names, s);
        }
        let mut sockets: Vec<(String, &RawSocket)> = self
            .taps
            .iter()
            .map(|(&(s, p), t)| (format!("{} port {p}", self.sw[s].name), t))
            .collect();
        for (i, r) in self.relays.iter().enumerate() {
            if let Some((a, _)) = r {
                sockets.push((format!("relay of link {i}"), a));
            }
        }
        sockets.push(("h2".into(), &self.rx));
        for (what, sock) in sockets {
            let stray = sock.recv_timeout(Duration::from_millis(100));
            assert_eq!(stray, None, "unexpected frame at {what}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/// The line scenario on `monitors` (s1 and the last switch must be monitors): collisions, a DSM
/// rule with a wrong pathBF, a flow without USM, HashPipe evictions; then packets held in
/// flight on the link s1 → s2 across flips of s1 alone and of the last switch alone.
fn line_scenario(test: &str, monitors: &[bool]) {
    let Some(mut fab) = Fabric::start(test, Topo::line(monitors, true)) else {
        return;
    };
    let last = monitors.len() - 1;
    assert!(monitors[0] && monitors[last]);

    // Flows: d collides with a in meter row 0 only (dirties that bucket, not the others).
    let (a, b, e) = (udp(1000), udp(1001), udp(1003));
    let c = FlowId {
        proto: 6,
        sport: 1002,
        dport: 80,
        ..udp(0)
    };
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

    // Monitoring rules: USM at s1, DSM at the last switch (c's rule has a wrong pathBF, e has
    // no USM), HH at both.
    let bf_down = fab.bf_into(&a, last);
    for f in [a, b, d] {
        fab.add_usm(0, f);
    }
    for (f, bf) in [
        (a, bf_down),
        (b, bf_down),
        (d, bf_down),
        (e, bf_down),
        (c, bf_down ^ 1),
    ] {
        fab.add_dsm(last, f, bf);
    }
    fab.add_hh(last, bf_down, 3);
    fab.add_hh(0, 0, 4);

    for f in [
        a, a, b, c, a, d, c, c, b, a, c, d, a, c, p, p, p, q, r, p, q, q, r, p, r, r, r, q,
    ] {
        fab.send(f);
    }

    // Packets in flight across the flip: a, b, a, d leave s1 marked with parity 0 and are held
    // on the link s1 -> s2. s1 flips alone: a, b now leave marked 1 and reach the last switch,
    // still in parity 0, where they count in DSM instance 1 (the mark decides, not the local
    // parity). The last switch flips too; then the held packets arrive marked 0 at a switch in
    // parity 1, after newer packets, and count in DSM instance 0.
    fab.hold(true);
    for f in [a, b, a, d] {
        fab.send(f);
    }
    fab.hold(false);
    fab.flip(0);
    for f in [a, b, a] {
        fab.send(f);
    }
    fab.flip(last);
    let h = FlowHashes::of(&a);
    let col = meter_index(h, 2, 1024);
    let before = fab.sw[last].dsm[0].bucket(2, col).count;
    fab.release();
    assert_eq!(
        fab.sw[last].dsm[0].bucket(2, col).count,
        before + 2,
        "the model counts a's two held packets in DSM instance 0"
    );
    assert_eq!(fab.sw[last].dsm[1].bucket(2, col).count, 2);

    for f in [a, c, e, b, c, e, a, c, c, e, b, d] {
        fab.send(f);
    }
    assert!(
        fab.sw[last].reports > 0 && fab.sw[0].reports > 0,
        "the sequence must exercise the HH report"
    );
    fab.verify();

    // Harvest: register_reset clears the finished instance and leaves the other one.
    let rows: Vec<String> = (0..3)
        .flat_map(|r| METER_FIELDS.iter().map(move |f| (r, f)))
        .map(|(r, f)| fab.n(&format!("upstream_meter.parity0.row{r}.{f}_reg")))
        .collect();
    let cmds: String = rows
        .iter()
        .map(|r| format!("register_reset {r}\n"))
        .collect();
    fab.cli(0, &cmds);
    fab.sw[0].usm[0].reset();
    compare_registers(&mut fab.cli[0].borrow_mut(), &fab.names, &fab.sw[0]);
}

#[test]
fn two_switch_line_matches_the_reference_model() {
    line_scenario("two_switch_line", &[true, true]);
}

#[test]
fn three_switch_line_matches_the_reference_model() {
    line_scenario("three_switch_line", &[true, false, true]);
}

/// A flow changing path: s1's route towards h2 is rewritten mid-sequence from one member (via
/// s2a) to a group of two (s2a, s2b). Flows whose ECMP member is 1 move to s2b: their pathBF at
/// s3 changes, so x's DSM rule (keyed on the old pathBF) stops matching and x goes to HashPipe
/// and fires the HH report watched on the new pathBF; y has DSM rules for both pathBFs, so its
/// DSM buckets see a second pathBF and turn dirty; z (member 0) stays on s2a and stays clean.
#[test]
fn diamond_path_change_matches_the_reference_model() {
    let Some(mut fab) = Fabric::start("diamond_path_change", Topo::diamond()) else {
        return;
    };
    let (s1, s3) = (0, 3);
    let mut moving = (4000..u16::MAX)
        .map(udp)
        .filter(|f| fab.sw[s1].member(f, 2) == 1);
    let (x, y) = (moving.next().unwrap(), moving.next().unwrap());
    let z = (4000..u16::MAX)
        .map(udp)
        .find(|f| fab.sw[s1].member(f, 2) == 0)
        .unwrap();
    let bf_a = fab.bf_into(&x, s3);
    for f in [x, y, z] {
        fab.add_usm(s1, f);
        fab.add_dsm(s3, f, bf_a);
    }
    let bf_b = encode_hop(fab.sw[s1].mask, fab.sw[2].mask, false);
    assert_ne!(bf_a, bf_b, "s2a and s2b must leave different pathBFs");
    fab.add_dsm(s3, y, bf_b);
    fab.add_hh(s3, bf_b, 2);

    for f in [x, y, z, x, y, x, z, x] {
        fab.send(f);
    }
    assert_eq!(fab.sw[s3].reports, 0);
    fab.set_route(s1, &[2, 3]);
    assert_eq!(fab.bf_into(&x, s3), bf_b);
    assert_eq!(fab.bf_into(&z, s3), bf_a);
    for f in [x, y, z, x, x, y, x, z, x, y] {
        fab.send(f);
    }

    // What the model says happened, so the scenario cannot pass vacuously.
    let m = &fab.sw[s3];
    assert_eq!(m.reports, 3, "x's 3rd..5th packets via s2b exceed eta = 2");
    assert_eq!(m.hp.estimate(&x), 5, "x's packets via s2b went to HashPipe");
    let (hx, hy, hz) = (FlowHashes::of(&x), FlowHashes::of(&y), FlowHashes::of(&z));
    for row in 0..3 {
        let bx = m.dsm[0].bucket(row, meter_index(hx, row, 1024));
        assert_eq!((bx.count, bx.dirty), (4, false), "x's DSM row {row}");
        let by = m.dsm[0].bucket(row, meter_index(hy, row, 1024));
        assert!(by.dirty, "y's DSM row {row} dirty after its path changed");
        let bz = m.dsm[0].bucket(row, meter_index(hz, row, 1024));
        assert_eq!((bz.count, bz.dirty), (4, false), "z's DSM row {row}");
    }
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

impl Fabric {
    /// Canary on (both switches monitors, USM rules at s1 and DSM rules at s2 for `monitored`,
    /// HH rules whose eta is never exceeded, so HashPipe runs for every other packet but no
    /// digest is sent) or off (monitor = 0, mask 0, the three Canary tables cleared): the same
    /// program, one CLI call per switch.
    fn monitoring(&self, on: bool, monitored: &[FlowId]) {
        let never = u32::MAX;
        for (i, s) in self.sw.iter().enumerate() {
            let mut c = format!(
                "table_set_default {} {} {} {} 0\n",
                self.n("switch_config"),
                self.n("set_config"),
                u8::from(on),
                if on { s.mask } else { 0 }
            );
            for t in ["usm_table", "dsm_table", "hh_table"] {
                c += &format!("table_clear {}\n", self.n(t));
            }
            if on {
                let bf_in = if i == 0 { 0 } else { self.sw[0].mask };
                c += &format!(
                    "table_add {} {} {bf_in} => {never}\n",
                    self.n("hh_table"),
                    self.n("hh_watch")
                );
                for f in monitored {
                    c += &if i == 0 {
                        format!(
                            "table_add {} {} {} =>\n",
                            self.n("usm_table"),
                            self.n("usm_count"),
                            flow_keys(f)
                        )
                    } else {
                        format!(
                            "table_add {} {} {} {bf_in} =>\n",
                            self.n("dsm_table"),
                            self.n("dsm_hit"),
                            flow_keys(f)
                        )
                    };
                }
            }
            self.cli(i, &c);
        }
    }

    /// Sends `frames` from h1 keeping at most `window` of them inside the fabric (so BMv2 is
    /// always busy and never overrun); returns (delivered to h2, packets per second from the
    /// first send to the last arrival).
    fn blast(&self, frames: &[Vec<u8>], window: usize) -> (usize, f64) {
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        let got = AtomicUsize::new(0);
        let (rx, got) = (&self.rx, &got);
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
                self.tx.send(fr);
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
    let Some(mut fab) = Fabric::start(
        "bmv2_monitoring_throughput",
        Topo::line(&[true, true], false),
    ) else {
        return;
    };
    // No per-hop taps: they would copy every frame into a socket nobody reads.
    fab.taps.clear();
    // 32 UDP flows; half of them monitored (USM at s1, DSM at s2), the other half go through
    // HashPipe at both switches (all of them do at s1, which has no DSM rules).
    let flows: Vec<FlowId> = (0..32).map(|i| udp(5000 + i)).collect();
    let monitored = &flows[..16];
    let frames: Vec<Vec<u8>> = (0..packets)
        .map(|i| frame(&flows[i % flows.len()], i as u16))
        .collect();
    fab.rx.set_recv_buffer(8 << 20);
    // Warm-up, not counted.
    fab.monitoring(true, monitored);
    fab.blast(&frames[..packets.min(2000)], window);

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
            let name = if monitoring { "on" } else { "off" };
            eprintln!("{round:5}  {name:6}  {n:>7}/{packets:<7}  {pps:9.0}");
            lost += packets - n;
            rate[usize::from(!monitoring)] = pps;
        }
        on.push(rate[0]);
        off.push(rate[1]);
        ratios.push(rate[0] / rate[1]);
    }
    // The "on" rounds really counted: s1's USM, s2's DSM and both HashPipes hold packets.
    for (i, reg) in [
        (0, "upstream_meter.parity0.row0.count_reg"),
        (1, "downstream_meter.parity0.row0.count_reg"),
        (0, "hashpipe.stage0.count_reg"),
        (1, "hashpipe.stage0.count_reg"),
    ] {
        let name = fab.n(reg);
        let total: u64 = fab.cli[i].borrow_mut().registers(&[&name])[&name]
            .iter()
            .sum();
        assert!(
            total > 0,
            "{} {reg} is empty after the bench",
            fab.sw[i].name
        );
    }
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

// ---------------------------------------------------------------------------------------------
// Registers

const METER_FIELDS: [&str; 7] = [
    "used", "src_addr", "dst_addr", "ports", "protocol", "dirty", "count",
];

/// Every bucket of both parity instances of the USM and DSM, and every HashPipe slot.
fn compare_registers(cli: &mut CliSession, names: &Names, s: &ModelSwitch) {
    for (meter, parity) in [
        ("upstream_meter", 0),
        ("upstream_meter", 1),
        ("downstream_meter", 0),
        ("downstream_meter", 1),
    ] {
        let dsm = meter == "downstream_meter";
        for row in 0..3 {
            let reg = |f: &str| {
                names
                    .get(&format!("{meter}.parity{parity}.row{row}.{f}_reg"))
                    .to_string()
            };
            let mut fields = METER_FIELDS.to_vec();
            if dsm {
                fields.push("path_bf");
            }
            let regs: Vec<String> = fields.iter().map(|f| reg(f)).collect();
            let refs: Vec<&str> = regs.iter().map(String::as_str).collect();
            let v = cli.registers(&refs);
            let at = |f: &str, col: usize| v[&reg(f)][col];
            for col in 0..1024 {
                let (dirty, flow, count, bf) = if dsm {
                    let b = s.dsm[parity].bucket(row, col);
                    (b.dirty, b.flow, b.count, b.path_bf)
                } else {
                    let b = s.usm[parity].bucket(row, col);
                    (b.dirty, b.flow, b.count, 0)
                };
                let got = (
                    at("used", col) == 1,
                    at("dirty", col) == 1,
                    at("count", col) as u32,
                );
                let ctx = format!("{} {meter} parity {parity} row {row} col {col}", s.name);
                assert_eq!(
                    got,
                    (flow.is_some(), dirty, count),
                    "{ctx}: used, dirty, count"
                );
                if let Some(f) = flow {
                    let key = (
                        at("src_addr", col),
                        at("dst_addr", col),
                        at("ports", col),
                        at("protocol", col),
                    );
                    let want = (
                        u64::from(f.src.as_v4().unwrap()),
                        u64::from(f.dst.as_v4().unwrap()),
                        u64::from(f.sport) << 16 | u64::from(f.dport),
                        u64::from(f.proto),
                    );
                    assert_eq!(key, want, "{ctx}: flow ID");
                    if dsm {
                        assert_eq!(at("path_bf", col), u64::from(bf), "{ctx}: pathBF");
                    }
                }
            }
        }
    }
    let model: HashMap<(usize, usize), (FlowId, u32)> =
        s.hp.entries()
            .map(|(st, i, f, c)| ((st, i), (f, c)))
            .collect();
    for stage in 0..3 {
        let reg = |f: &str| {
            names
                .get(&format!("hashpipe.stage{stage}.{f}_reg"))
                .to_string()
        };
        let regs: Vec<String> = ["src_addr", "dst_addr", "ports", "protocol", "count"]
            .iter()
            .map(|f| reg(f))
            .collect();
        let refs: Vec<&str> = regs.iter().map(String::as_str).collect();
        let v = cli.registers(&refs);
        for (i, &count) in v[&reg("count")].iter().enumerate() {
            let count = count as u32;
            let got = (count != 0).then(|| {
                let ports = v[&reg("ports")][i] as u32;
                let f = FlowId::v4(
                    v[&reg("src_addr")][i] as u32,
                    v[&reg("dst_addr")][i] as u32,
                    v[&reg("protocol")][i] as u8,
                    (ports >> 16) as u16,
                    ports as u16,
                );
                (f, count)
            });
            assert_eq!(
                got,
                model.get(&(stage, i)).copied(),
                "{} HashPipe stage {stage} entry {i}",
                s.name
            );
        }
    }
}
