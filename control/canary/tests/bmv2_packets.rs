//! Packet tests of the v1model Canary program on BMv2, held to the Rust reference model.
//!
//! A line h1 — s1 (monitor) — s2 (transit) — s3 (monitor) — h2, each in its own network
//! namespace; tables programmed with simple_switch_CLI over Thrift. Checks: hosts get their
//! packets byte for byte; the shim arriving at s3 carries the pathBF and mark of the model
//! (`canary_core::pathbf::encode_hop`, the simulator's per-hop logic); after a packet sequence
//! with a parity flip, every USM/DSM/HashPipe register equals `canary_core::sketch` fed the same
//! packets; the HH report fires for exactly the packets the model reports.
//! Skips (printing `SKIP: ...`) without p4c, simple_switch_grpc, simple_switch_CLI or root.

mod bmv2;

use bmv2::{Lab, Names, RawSocket};
use canary_core::pathbf::{encode_hop, PathBfParams};
use canary_core::sketch::{hashpipe_index, meter_index, Dsm, FlowHashes, HashPipe, Usm};
use canary_core::FlowId;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const H1_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const H2_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];

/// One switch of the model: the simulator's per-hop logic (`SimFabric::walk`).
struct ModelSwitch {
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
    fn new(ns: String, monitor: bool, id: u32) -> Self {
        ModelSwitch {
            ns,
            monitor,
            mask: PathBfParams::default().mask(id),
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
}

fn ip(a: u32) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

fn flow_keys(f: &FlowId) -> String {
    format!(
        "{} {} {} {} {}",
        ip(f.src),
        ip(f.dst),
        f.proto,
        f.sport,
        f.dport
    )
}

/// An Ethernet/IPv4/{UDP,TCP} frame of `f` with a payload tagged by `seq`.
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
    iph.extend_from_slice(&f.src.to_be_bytes());
    iph.extend_from_slice(&f.dst.to_be_bytes());
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

fn udp(sport: u16) -> FlowId {
    FlowId {
        src: 0x0a00_0101,
        dst: 0x0a00_0202,
        proto: 17,
        sport,
        dport: 2000,
    }
}

#[test]
fn bmv2_line_matches_the_reference_model() {
    if let Some(what) = bmv2::missing() {
        eprintln!("SKIP: bmv2_packets: {what}");
        return;
    }
    let mut lab = Lab::new();
    let json = bmv2::build(lab.dir.path());
    let names = Names::load(&json);

    // Topology: every switch has port 1 west (towards h1) and port 2 east (towards h2).
    let h1 = lab.netns("h1");
    let h2 = lab.netns("h2");
    let mut sw: Vec<ModelSwitch> = [(true, 101), (false, 102), (true, 103)]
        .into_iter()
        .enumerate()
        .map(|(i, (monitor, id))| ModelSwitch::new(lab.netns(&format!("s{}", i + 1)), monitor, id))
        .collect();
    lab.veth(&h1, "eth0", &sw[0].ns, "west");
    lab.veth(&sw[0].ns, "east", &sw[1].ns, "west");
    lab.veth(&sw[1].ns, "east", &sw[2].ns, "west");
    lab.veth(&sw[2].ns, "east", &h2, "eth0");
    for (i, s) in sw.iter().enumerate() {
        lab.switch(&s.ns, &json, i as u32 + 1, &[(1, "west"), (2, "east")]);
    }

    // Forwarding and per-switch configuration.
    let n = |s: &str| names.get(s).to_string();
    for (i, s) in sw.iter().enumerate() {
        let mut c = format!(
            "table_set_default {} {} {} {} 0\n",
            n("switch_config"),
            n("set_config"),
            u8::from(s.monitor),
            s.mask
        );
        c += &format!(
            "table_add {} {} 10.0.2.0/24 => 1 1\n",
            n("ipv4_route"),
            n("set_group")
        );
        c += &format!(
            "table_add {} {} 10.0.1.0/24 => 2 1\n",
            n("ipv4_route"),
            n("set_group")
        );
        c += &format!("table_add {} {} 1 0 => 2\n", n("ecmp_group"), n("set_port"));
        c += &format!("table_add {} {} 2 0 => 1\n", n("ecmp_group"), n("set_port"));
        let host_port = match i {
            0 => Some(1),
            2 => Some(2),
            _ => None,
        };
        if let Some(p) = host_port {
            c += &format!(
                "table_add {} {} {p} =>\n",
                n("host_port_in"),
                n("host_port")
            );
            c += &format!("table_add {} {} {p} =>\n", n("host_port_out"), n("to_host"));
        }
        lab.cli(&s.ns, &c);
    }

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
    let bf_at_s3 = encode_hop(sw[0].mask, sw[1].mask, false);
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

    // Monitoring rules: USM at s1, DSM at s3 (c's rule has a wrong pathBF, e has no USM), HH.
    for f in [a, b, d] {
        sw[0].usm_rules.insert(f);
        lab.cli(
            &sw[0].ns,
            &format!(
                "table_add {} {} {} =>\n",
                n("usm_table"),
                n("usm_count"),
                flow_keys(&f)
            ),
        );
    }
    for (f, bf) in [
        (a, bf_at_s3),
        (b, bf_at_s3),
        (d, bf_at_s3),
        (e, bf_at_s3),
        (c, bf_at_s3 ^ 1),
    ] {
        sw[2].dsm_rules.insert((f, bf));
        lab.cli(
            &sw[2].ns,
            &format!(
                "table_add {} {} {} {bf} =>\n",
                n("dsm_table"),
                n("dsm_hit"),
                flow_keys(&f)
            ),
        );
    }
    for (s, bf, eta) in [(2usize, bf_at_s3, 3u32), (0, 0, 4)] {
        sw[s].hh_rules.insert(bf, eta);
        lab.cli(
            &sw[s].ns,
            &format!(
                "table_add {} {} {bf} => {eta}\n",
                n("hh_table"),
                n("hh_watch")
            ),
        );
    }

    let tx = RawSocket::open(&h1, "eth0");
    let rx = RawSocket::open(&h2, "eth0");
    let tap = RawSocket::open(&sw[2].ns, "west");
    let hh_ctr = n("hh_report_ctr");
    let phase1 = [
        a, a, b, c, a, d, c, c, b, a, c, d, a, c, p, p, p, q, r, p, q, q, r, p, r, r, r, q,
    ];
    let phase2 = [a, c, e, b, c, e, a, c, c, e, b, d];
    let mut seq = 0u16;
    for (phase, flows) in [phase1.as_slice(), phase2.as_slice()]
        .into_iter()
        .enumerate()
    {
        if phase == 1 {
            // The controller flips the epoch: rewrite the config's default action.
            for s in sw.iter_mut().filter(|s| s.monitor) {
                s.parity = 1;
                lab.cli(
                    &s.ns,
                    &format!(
                        "table_set_default {} {} 1 {} 1\n",
                        n("switch_config"),
                        n("set_config"),
                        s.mask
                    ),
                );
            }
        }
        for f in flows {
            seq += 1;
            let pkt = frame(f, seq);
            let (mut bf, mut mark) = (0u32, 0u8);
            let last = sw.len() - 1;
            for (i, s) in sw.iter_mut().enumerate().take(last) {
                s.hop(f, &mut bf, &mut mark, i == last);
            }
            tx.send(&pkt);
            let got = rx.recv_until(Duration::from_secs(3), |fr| {
                fr.len() >= 20 && fr[18..20] == seq.to_be_bytes()
            });
            assert_eq!(
                got.as_deref(),
                Some(pkt.as_slice()),
                "h2 got packet {seq} ({f}) byte for byte"
            );
            let shim = tap
                .recv_until(Duration::from_secs(1), |fr| {
                    fr.len() >= 28 && fr[26..28] == seq.to_be_bytes()
                })
                .unwrap_or_else(|| panic!("s3 did not see packet {seq}"));
            let mut expect = pkt[..12].to_vec();
            expect.extend_from_slice(&[0x88, 0xb5]);
            expect.extend_from_slice(&bf.to_be_bytes());
            let flags = if mark > 0 {
                0x80 | ((mark - 1) << 6)
            } else {
                0
            };
            expect.extend_from_slice(&[flags, 0, 0x08, 0x00]);
            expect.extend_from_slice(&pkt[14..]);
            assert_eq!(
                shim, expect,
                "shim of packet {seq} ({f}) at s3: pathBF {bf:#x}, mark {mark}"
            );
            sw[last].hop(f, &mut bf, &mut mark, true);
            let fired = lab.counter(&sw[last].ns, &hh_ctr, 0);
            assert_eq!(
                fired, sw[last].reports,
                "HH reports at s3 after packet {seq} ({f})"
            );
        }
    }
    assert!(
        sw[2].reports > 0 && sw[0].reports > 0,
        "the sequence must exercise the HH report"
    );
    assert_eq!(
        lab.counter(&sw[0].ns, &hh_ctr, 0),
        sw[0].reports,
        "HH reports at s1"
    );

    for s in sw.iter().filter(|s| s.monitor) {
        compare_registers(&lab, &names, s);
    }

    // Harvest: register_reset clears the finished instance and leaves the other one.
    let rows: Vec<String> = (0..3)
        .flat_map(|r| METER_FIELDS.iter().map(move |f| (r, f)))
        .map(|(r, f)| n(&format!("upstream_meter.parity0.row{r}.{f}_reg")))
        .collect();
    let cmds: String = rows
        .iter()
        .map(|r| format!("register_reset {r}\n"))
        .collect();
    lab.cli(&sw[0].ns, &cmds);
    sw[0].usm[0].reset();
    compare_registers(&lab, &names, &sw[0]);
}

const METER_FIELDS: [&str; 7] = [
    "used", "src_addr", "dst_addr", "ports", "protocol", "dirty", "count",
];

/// Every bucket of both parity instances of the USM and DSM, and every HashPipe slot.
fn compare_registers(lab: &Lab, names: &Names, s: &ModelSwitch) {
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
            let v = lab.registers(&s.ns, &refs);
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
                let ctx = format!("{} {meter} parity {parity} row {row} col {col}", s.ns);
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
                        u64::from(f.src),
                        u64::from(f.dst),
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
        let v = lab.registers(&s.ns, &refs);
        for (i, &count) in v[&reg("count")].iter().enumerate() {
            let count = count as u32;
            let got = (count != 0).then(|| {
                let ports = v[&reg("ports")][i] as u32;
                let f = FlowId {
                    src: v[&reg("src_addr")][i] as u32,
                    dst: v[&reg("dst_addr")][i] as u32,
                    proto: v[&reg("protocol")][i] as u8,
                    sport: (ports >> 16) as u16,
                    dport: ports as u16,
                };
                (f, count)
            });
            assert_eq!(
                got,
                model.get(&(stage, i)).copied(),
                "{} HashPipe stage {stage} entry {i}",
                s.ns
            );
        }
    }
}
