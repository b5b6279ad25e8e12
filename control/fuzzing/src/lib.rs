//! The bodies of Canary's fuzz targets, one per decoder of outside input.
//!
//! Each body hands one input to the real decoder, exactly as the controller does, and checks
//! cheap invariants of whatever decodes; an error is a fine answer, a panic is a bug. `fuzz/`
//! runs them under libFuzzer on nightly (`fuzz/run.sh`); `tests/replay.rs` feeds them every
//! file of `fuzz/corpus` and `fuzz/regressions` on stable, so `cargo test` keeps found crashes
//! fixed. Where one body covers several decoders, the input's first byte picks which.

use bfrt_proto::{bfrt, p4rt};
use canary_core::fault;
use canary_core::localize::flock_trace::FlockTrace;
use canary_core::model::epoch_tag;
use canary_core::pathbf::{self, Decoded, DecodedId, PathBfCodec, PathBfParams};
use canary_core::topo::{
    default_switch_id, fattree::fattree, yaml, MonitorPlacement, Routing, Segments, Topology,
};
use canary_core::FlowId;
use canary_lab::eval::trace::{failing_links, read_probes};
use canary_lab::overhead::traffic::read_pcap;
use canary_switch::bmv2_thrift::{decode_reply, Call, Outcome, Reply};
use canary_switch::contract::{Program, Table, DIGEST_P4INFO, TABLES};
use canary_switch::driver::Digests;
use canary_switch::drivers::{bfruntime, bmv2, p4runtime};
use canary_switch::meters::{self, MeterCells};
use canary_switch::p4info::P4InfoIndex;
use canary_switch::rule_ids::{RuleIds, RuleKey};
use canary_switch::switches::SwitchesFile;
use prost::Message;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target: its name (its directory under `fuzz/corpus` and `fuzz/regressions`, and its
/// file under `fuzz/fuzz_targets`) and its body.
pub const TARGETS: [(&str, Target); 8] = [
    ("yaml", yaml),
    ("program", program),
    ("thrift", thrift),
    ("digest", digest),
    ("read_responses", read_responses),
    ("pathbf", pathbf),
    ("flock_trace", flock_trace),
    ("pcap", pcap),
];

/// The input's first byte modulo `n` (which decoder), and the rest (its input).
fn pick(data: &[u8], n: u8) -> Option<(u8, &[u8])> {
    let (&first, rest) = data.split_first()?;
    Some((first % n, rest))
}

fn le32(b: &[u8]) -> u32 {
    let mut a = [0; 4];
    a[..b.len().min(4)].copy_from_slice(&b[..b.len().min(4)]);
    u32::from_le_bytes(a)
}

// ---------------------------------------------------------------- fixtures

/// The k = 4 fat-tree (top and bottom monitors): faults, Flock traces and pathBFs refer to it.
pub fn fattree4() -> &'static Topology {
    static T: OnceLock<Topology> = OnceLock::new();
    T.get_or_init(|| fattree(4, MonitorPlacement::TopAndBottom).expect("k = 4 is valid"))
}

/// `topologies/line2.yaml`: the switches files are bound to it (two switches, two hosts).
pub fn line2() -> &'static Topology {
    static T: OnceLock<Topology> = OnceLock::new();
    T.get_or_init(|| {
        let text = include_str!("../../../topologies/line2.yaml");
        yaml::parse("topologies/line2.yaml", text).expect("the repository's file parses")
    })
}

/// The v1model program's contract, resolved from the P4Info p4c compiled.
pub fn v1model() -> &'static Program {
    static P: OnceLock<Program> = OnceLock::new();
    P.get_or_init(|| {
        let bytes = include_bytes!("../../switch/testdata/v1model/canary.p4info.bin");
        let idx = P4InfoIndex::decode("canary.p4info.bin", bytes.to_vec()).expect("P4Info");
        Program::from_p4info(&idx.path, &idx.info).expect("the contract resolves")
    })
}

/// The TNA program's contract, resolved from the `bfrt.json` bf-p4c wrote.
pub fn tna() -> &'static Program {
    static P: OnceLock<Program> = OnceLock::new();
    P.get_or_init(|| {
        let json = include_bytes!("../../switch/testdata/tna/bfrt.json");
        Program::from_bfrt_json("bfrt.json", json).expect("the contract resolves")
    })
}

/// Rule IDs a controller assigned: USM flows get IDs 1, 3, …, DSM rules 2, 4, ….
pub fn rule_ids() -> &'static RuleIds {
    static R: OnceLock<RuleIds> = OnceLock::new();
    R.get_or_init(|| {
        let mut ids = RuleIds::default();
        for i in 0..16u32 {
            let f = FlowId::v4(0x0a00_0002 + i, 0x0a01_0002, 6, 1000 + i as u16, 80);
            ids.install(RuleKey::Usm(f)).expect("IDs are free");
            ids.install(RuleKey::Dsm(f, 0x1234_5678 ^ i))
                .expect("IDs are free");
        }
        ids
    })
}

// ---------------------------------------------------------------- yaml

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

// ---------------------------------------------------------------- program

/// A P4Info and the contract resolved against it (0), a program's `bfrt.json` and the contract
/// (1), the non-P4 `bfrt.json` of the packet replication engine (2).
pub fn program(data: &[u8]) {
    let Some((which, rest)) = pick(data, 3) else {
        return;
    };
    match which {
        0 => {
            let Ok(idx) = P4InfoIndex::decode("fuzz.p4info.bin", rest.to_vec()) else {
                return;
            };
            let _ = idx.table("dsm_table");
            let _ = idx.action("dsm_hit");
            let _ = idx.digest_id(DIGEST_P4INFO);
            let _ = idx.registers();
            if let Ok(p) = Program::from_p4info(&idx.path, &idx.info) {
                resolved(&p);
            }
        }
        1 => {
            if let Ok(p) = Program::from_bfrt_json("fuzz.bfrt.json", rest) {
                resolved(&p);
            }
        }
        _ => {
            let _ = bfruntime::PreTables::from_json("fuzz.json", rest);
        }
    }
}

/// What the drivers rely on in a resolved program.
fn resolved(p: &Program) {
    for spec in TABLES {
        let t = p.table(spec.table);
        assert_eq!(t.keys.len(), spec.keys.len());
        assert_eq!(t.params.len(), spec.params.len());
    }
    let width = p.meters.width;
    for row in p.meters.rows() {
        assert_eq!(row.id.size, 2 * width);
        assert_eq!(row.count.size, 2 * width);
    }
    assert_eq!(p.meters.usm.len(), p.meters.dsm.len());
    let _ = p.capacity();
}

// ---------------------------------------------------------------- thrift

/// The sequence number the thrift target's replies answer.
pub const THRIFT_SEQ: i32 = 0;

/// One BMv2 Thrift reply, to the call the first byte picks.
pub fn thrift(data: &[u8]) {
    let Some((which, rest)) = pick(data, 5) else {
        return;
    };
    let (cxt_id, name) = (0, "MyIngress.reg");
    let call = match which {
        0 => Call::ReadAll { cxt_id, name },
        1 => Call::Read {
            cxt_id,
            name,
            idx: 0,
        },
        2 => Call::Write {
            cxt_id,
            name,
            index: 0,
            value: 0,
        },
        3 => Call::WriteRange {
            cxt_id,
            name,
            start: 0,
            end: 1,
            value: 0,
        },
        _ => Call::Reset { cxt_id, name },
    };
    if let Ok(Outcome::Ok(Reply::Values(v))) = decode_reply(&call, THRIFT_SEQ, rest) {
        // Every value came from eight bytes of the reply.
        assert!(v.len() * 8 <= rest.len());
    }
}

// ---------------------------------------------------------------- digest

/// A P4Runtime digest list from BMv2 (0) or a BF Runtime learn list from Tofino (1), as the
/// stream delivers them, decoded with the programs' digest layouts.
pub fn digest(data: &[u8]) {
    let Some((which, rest)) = pick(data, 2) else {
        return;
    };
    let mut out = Digests::default();
    let expected = if which == 0 {
        let Ok(list) = p4rt::DigestList::decode(rest) else {
            return;
        };
        p4runtime::decode_digest_list(v1model(), &list, &mut out);
        list.data.len()
    } else {
        let Ok(list) = bfrt::DigestList::decode(rest) else {
            return;
        };
        bfruntime::decode_digest_list(tna(), &list, &mut out);
        if list.digest_id == tna().digest.id {
            list.data.len()
        } else {
            1
        }
    };
    // Every digest is either a report or a reason.
    assert_eq!(out.reports.len() + out.bad.len(), expected);
}

// ---------------------------------------------------------------- read_responses

/// Read answers: BF-RT register tables into meters (0), a P4Runtime counter cell and default
/// entry (1), a BF-RT default entry (2), and BMv2's register arrays into meters (3).
pub fn read_responses(data: &[u8]) {
    let Some((which, rest)) = pick(data, 4) else {
        return;
    };
    match which {
        0 => bfrt_registers(rest),
        1 => p4rt_reads(rest),
        2 => bfrt_default_entry(rest),
        _ => bmv2_registers(rest),
    }
}

fn bfrt_registers(rest: &[u8]) {
    let Ok(answer) = bfrt::ReadResponse::decode(rest) else {
        return;
    };
    let prog = tna();
    let mut by_table = HashMap::new();
    bfruntime::entries_by_table(answer, &mut by_table);
    if let Ok(pipes) = bfruntime::meter_cells(prog, &by_table) {
        harvest(prog, &pipes, 0);
    }
}

fn p4rt_reads(rest: &[u8]) {
    let Ok(answer) = p4rt::ReadResponse::decode(rest) else {
        return;
    };
    let _ = p4runtime::counter_packets(&answer.entities);
    let t = v1model().table(Table::SwitchConfig);
    if let Some(args) = p4runtime::default_action_args(t, answer.entities) {
        assert_eq!(args.len(), t.params.len());
        let _ = canary_switch::entries::holds_config(&args, true, 1);
    }
}

fn bfrt_default_entry(rest: &[u8]) {
    let Ok(answer) = bfrt::ReadResponse::decode(rest) else {
        return;
    };
    let t = tna().table(Table::SwitchConfig);
    if let Some(args) = bfruntime::default_entry_args(t, answer) {
        assert_eq!(args.len(), t.params.len());
        let _ = canary_switch::entries::holds_config(&args, true, 1);
    }
}

/// BMv2's arrays hold thousands of cells, more than an input should: every array is read back
/// at its program size, all zero but for the cells the input writes, 11 bytes each: array (1),
/// cell (2, little-endian), value (8, little-endian). The first byte picks the epoch; with its
/// top bit set, the arrays come back one cell short (a register of another program).
fn bmv2_registers(rest: &[u8]) {
    let Some((&head, writes)) = rest.split_first() else {
        return;
    };
    let prog = v1model();
    let m = &prog.meters;
    let len = 2 * m.width - usize::from(head >> 7);
    let mut arrays = vec![vec![0i64; len]; 2 * (m.usm.len() + m.dsm.len())];
    let n = arrays.len();
    for w in writes.chunks_exact(11) {
        let cell = usize::from(u16::from_le_bytes([w[1], w[2]])) % len;
        let value = i64::from_le_bytes(w[3..11].try_into().expect("8 bytes"));
        arrays[usize::from(w[0]) % n][cell] = value;
    }
    let cells = bmv2::meter_cells(&arrays, m.usm.len());
    harvest(prog, std::slice::from_ref(&cells), head & 0x7f);
}

/// The harvest's decoding of every pipe's cells (epoch `epoch`), and the merge of pipes.
fn harvest(prog: &Program, pipes: &[MeterCells], epoch: u8) {
    let layout = &prog.meters;
    let config = layout.config();
    let mut decoded = Vec::new();
    for cells in pipes {
        let Ok(d) = meters::decode(layout, cells, epoch_tag(epoch.into()), rule_ids(), "fuzz")
        else {
            return;
        };
        assert_eq!(d.usm.buckets().len(), config.num_buckets());
        assert_eq!(d.dsm.buckets().len(), config.num_buckets());
        assert!(d.stale.iter().all(|c| c.index < 2 * layout.width));
        decoded.push(d);
    }
    let merged = meters::merge_pipes(decoded);
    if !pipes.is_empty() {
        assert_eq!(merged.usm.buckets().len(), config.num_buckets());
    }
}

// ---------------------------------------------------------------- pathbf

/// pathBF parameters, then which fabric and what to run, then (downstream switch, pathBF)
/// values to decode: bits (4 bytes, little-endian), hashes (4), flags (1: bit 0 bottom-only
/// monitors, bit 1 audit, bit 2 repair), then records of 9 bytes: mode (1; bit 0 takes a
/// segment's own value), switch (4), value (4).
pub fn pathbf(data: &[u8]) {
    if data.len() < 9 {
        return;
    }
    let params = PathBfParams {
        bits: le32(&data[0..4]),
        hashes: le32(&data[4..8]),
    };
    let flags = data[8];
    let (topo, segments) = pathbf_fabric(flags & 1 == 1);
    let codec = match PathBfCodec::new(topo, segments, params) {
        Ok(c) => c,
        Err(e) => {
            assert_eq!(params.validate(), Err(e));
            return;
        }
    };
    let full = if params.bits == 32 {
        u32::MAX
    } else {
        (1 << params.bits) - 1
    };
    for &m in &codec.masks {
        assert!(m != 0 && m & !full == 0 && m.count_ones() <= params.hashes);
    }
    let n = topo.switches.len() as u32 + 2;
    for r in data[9..].chunks_exact(9) {
        let sw = le32(&r[1..5]) % n;
        let raw = le32(&r[5..9]);
        let bf = if r[0] & 1 == 1 && !codec.segment_bf.is_empty() {
            codec.segment_bf[raw as usize % codec.segment_bf.len()]
        } else {
            raw
        };
        let decoded = codec.decode(sw, bf);
        let short = match &decoded {
            Decoded::Segment(s) => DecodedId::Segment(*s),
            Decoded::Ambiguous(_) => DecodedId::Ambiguous,
            Decoded::Unknown => DecodedId::Unknown,
        };
        assert_eq!(codec.decode_id(sw, bf), short);
        if let Decoded::Segment(s) = decoded {
            assert_eq!(segments.get(s).downstream(), sw);
            assert_eq!(codec.segment_bf[s as usize], bf);
            assert!(codec.passes(segments, s, bf));
        }
    }
    if flags & 2 != 0 {
        let a = pathbf::audit(topo, segments, params).expect("valid parameters");
        assert_eq!(a.segments, segments.len());
    }
    if flags & 4 != 0 {
        let mut t = topo.clone();
        let a = pathbf::repair(&mut t, segments, params, 50).expect("valid parameters");
        let ids: HashSet<u32> = t.switches.iter().map(|s| s.id).collect();
        assert_eq!(ids.len(), t.switches.len(), "repair keeps IDs unique");
        assert!(a.reassigned.len() <= 50 * t.switches.len());
    }
}

/// The k = 4 fat-tree and its segments, with top and bottom monitors or bottom only.
fn pathbf_fabric(bottom_only: bool) -> (&'static Topology, &'static Segments) {
    static F: OnceLock<[(Topology, Segments); 2]> = OnceLock::new();
    let f = F.get_or_init(|| {
        [MonitorPlacement::TopAndBottom, MonitorPlacement::Bottom].map(|p| {
            let t = fattree(4, p).expect("k = 4 is valid");
            let s = Segments::new(&t, &Routing::new(&t));
            (t, s)
        })
    });
    let (t, s) = &f[usize::from(bottom_only)];
    (t, s)
}

// ---------------------------------------------------------------- flock_trace

/// A Flock trace (`canary eval --flock-trace`), read as text, against the k = 4 fat-tree.
pub fn flock_trace(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let topo = fattree4();
    let probes = read_probes(topo, text, "fuzz.trace");
    let Ok(trace) = FlockTrace::parse(text) else {
        assert!(probes.is_err(), "read_probes took what parse rejects");
        return;
    };
    // What `--export-flock-trace` writes reads back as the same trace.
    let written = trace.to_text();
    let again = FlockTrace::parse(&written)
        .unwrap_or_else(|e| panic!("to_text wrote what parse rejects: {e}\n{written}"));
    assert_eq!(again.to_text(), written);
    for f in failing_links(topo, &trace) {
        assert!((f.link as usize) < topo.links.len());
    }
    if let Ok(probes) = probes {
        for p in probes {
            assert!(p.received <= p.sent);
            assert!(p.links.iter().all(|&l| (l as usize) < topo.links.len()));
        }
    }
}

// ---------------------------------------------------------------- pcap

/// A capture file (`canary overhead --pcap`).
pub fn pcap(data: &[u8]) {
    let Ok((packets, stats)) = read_pcap(data) else {
        return;
    };
    // Every record is a packet or a skip, and takes its 16-byte header at least.
    assert_eq!(packets.len() as u64 + stats.skipped, stats.packets);
    assert!(24 + stats.packets * 16 <= data.len() as u64);
}
