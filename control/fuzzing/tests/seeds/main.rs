//! Writes the fuzz targets' seeds into `fuzz/corpus/<target>/` (an ignored test, so it builds
//! with the tests' dependencies):
//!
//!     cargo test -p canary-fuzzing --test seeds -- --ignored
//!
//! Real files of the repository where there are some (topologies, fault files, the compiled
//! P4Info and `bfrt.json`), prefixed with the byte that picks their decoder; otherwise inputs made
//! by the encoders the other side uses (the thrift crate's binary protocol for BMv2's replies,
//! prost for P4Runtime and BF Runtime messages, Canary's own Flock trace writer) or, for pcap,
//! the libpcap layout written out here.

mod frames;
mod p4_messages;
mod thrift_replies;

use bfrt_proto::{bfrt, p4rt};
use canary_core::localize::flock_trace::FlockTrace;
use canary_core::topo::{fattree::fattree, MonitorPlacement, PortMap};
use canary_core::FlowId;
use canary_fuzzing::{line2, tna, v1model};
use frames::{eth, ipv4, ipv6, pcap, vlan};
use p4_messages::{bfrt_config, bfrt_digest, bmv2_cells, p4rt_config, p4rt_digest, register_entry};
use prost::Message;
use std::path::{Path, PathBuf};
use thrift::protocol::{TFieldIdentifier, TListIdentifier, TStructIdentifier, TType};
use thrift_replies::{exception, reply};

#[test]
#[ignore = "rewrites fuzz/corpus; run with --ignored"]
fn write_seeds() {
    let root = canary_testkit::repo_root();
    let corpus = root.join("fuzz/corpus");
    let mut n = 0;
    let mut put = |target: &str, name: &str, selector: Option<u8>, body: &[u8]| {
        let dir = corpus.join(target);
        std::fs::create_dir_all(&dir).expect("create corpus dir");
        let mut bytes = selector.map(|s| vec![s]).unwrap_or_default();
        bytes.extend(body);
        std::fs::write(dir.join(name), bytes).expect("write seed");
        n += 1;
    };
    let read = |p: &Path| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));

    // yaml: topologies (0), fault files (1), a switches file (2).
    for dir in ["topologies", "testbed/faults"] {
        for f in files(&root.join(dir)) {
            let sel = if dir == "topologies" { 0 } else { 1 };
            put("yaml", &stem(&f), Some(sel), &read(&f));
        }
    }
    let t = line2();
    let ports = PortMap::canonical(t);
    let mut switches = String::from("switches:\n");
    for s in 0..t.switches.len() as u32 {
        let grpc = format!("127.0.0.1:{}", 50001 + s);
        switches += &canary_switch::switches::entry_yaml(t, &ports, s, &grpc, u64::from(s) + 1);
    }
    put("yaml", "switches-line2", Some(2), switches.as_bytes());

    // program: the P4Info (0) and bfrt.json (1) of the compiled programs, a non-P4 bfrt.json (2).
    let testdata = root.join("control/switch/testdata");
    put(
        "program",
        "v1model-p4info",
        Some(0),
        &read(&testdata.join("v1model/canary.p4info.bin")),
    );
    put(
        "program",
        "tna-bfrt-json",
        Some(1),
        &read(&testdata.join("tna/bfrt.json")),
    );
    put("program", "pre-bfrt-json", Some(2), PRE_JSON.as_bytes());

    // thrift: replies to each call, as BMv2's server writes them.
    put(
        "thrift",
        "read-all",
        Some(0),
        &reply("bm_register_read_all", |o| {
            o.write_field_begin(&TFieldIdentifier::new("success", TType::List, 0))?;
            o.write_list_begin(&TListIdentifier::new(TType::I64, 4))?;
            for v in [0, 1, -1, 0x0000_0003_8000_0007] {
                o.write_i64(v)?;
            }
            o.write_list_end()?;
            o.write_field_end()
        }),
    );
    put(
        "thrift",
        "read-one",
        Some(1),
        &reply("bm_register_read", |o| {
            o.write_field_begin(&TFieldIdentifier::new("success", TType::I64, 0))?;
            o.write_i64(42)?;
            o.write_field_end()
        }),
    );
    put(
        "thrift",
        "write",
        Some(2),
        &reply("bm_register_write", |_| Ok(())),
    );
    put(
        "thrift",
        "write-range",
        Some(3),
        &reply("bm_register_write_range", |_| Ok(())),
    );
    put(
        "thrift",
        "invalid-register",
        Some(4),
        &reply("bm_register_reset", |o| {
            o.write_field_begin(&TFieldIdentifier::new("ouch", TType::Struct, 1))?;
            o.write_struct_begin(&TStructIdentifier::new("InvalidRegisterOperation"))?;
            o.write_field_begin(&TFieldIdentifier::new("code", TType::I32, 1))?;
            o.write_i32(1)?;
            o.write_field_end()?;
            o.write_field_stop()?;
            o.write_struct_end()?;
            o.write_field_end()
        }),
    );
    put(
        "thrift",
        "exception",
        Some(0),
        &exception("bm_register_read_all"),
    );

    // digest: HH digests of an IPv4 and an IPv6 flow, full-width and with leading zeros cut
    // (P4Runtime allows both).
    let flows = [
        FlowId::v4(0x0a00_0002, 0x0a01_0003, 6, 40000, 80),
        FlowId::v6(0xfd00 << 112 | 2, 0xfd00 << 112 | 0x0100_0003, 17, 5353, 53),
    ];
    for (name, canonical) in [("p4rt-full-width", false), ("p4rt-canonical", true)] {
        let list = p4rt::DigestList {
            digest_id: v1model().digest.id,
            list_id: 1,
            data: flows
                .iter()
                .map(|f| p4rt_digest(f, 0x1234, canonical))
                .collect(),
            timestamp: 0,
        };
        put("digest", name, Some(0), &list.encode_to_vec());
    }
    let list = bfrt::DigestList {
        digest_id: tna().digest.id,
        list_id: 1,
        data: flows.iter().map(|f| bfrt_digest(f, 0x1234)).collect(),
        target: None,
    };
    put("digest", "bfrt", Some(1), &list.encode_to_vec());

    // read_responses: register entries of two pipes (0), a counter cell and a default entry
    // over P4Runtime (1) and BF-RT (2), BMv2 cells holding this epoch's buckets (3).
    // Every meter register's first cells (a full read is 2048 cells per register and pipe).
    let entries: Vec<bfrt::Entity> = tna()
        .meters
        .rows()
        .flat_map(|row| {
            (0..4)
                .map(|i| register_entry(&row.id, i, &[[5, i as u32], [5, 0]]))
                .chain((0..4).map(|i| register_entry(&row.count, i, &[[9], [0]])))
        })
        .collect();
    put(
        "read_responses",
        "bfrt-registers",
        Some(0),
        &bfrt::ReadResponse {
            entities: entries,
            status: vec![],
        }
        .encode_to_vec(),
    );
    let counter = p4rt::Entity {
        entity: Some(p4rt::entity::Entity::CounterEntry(p4rt::CounterEntry {
            counter_id: v1model().hh_counter.unwrap_or(1),
            index: Some(p4rt::Index { index: 0 }),
            data: Some(p4rt::CounterData {
                byte_count: 1500,
                packet_count: 3,
            }),
        })),
    };
    put(
        "read_responses",
        "p4rt-counter",
        Some(1),
        &p4rt::ReadResponse {
            entities: vec![counter],
        }
        .encode_to_vec(),
    );
    put(
        "read_responses",
        "p4rt-default-entry",
        Some(1),
        &p4rt::ReadResponse {
            entities: vec![p4rt_config()],
        }
        .encode_to_vec(),
    );
    put(
        "read_responses",
        "bfrt-default-entry",
        Some(2),
        &bfrt::ReadResponse {
            entities: vec![bfrt_config()],
            status: vec![],
        }
        .encode_to_vec(),
    );
    put("read_responses", "bmv2-cells", Some(3), &bmv2_cells(7));
    put(
        "read_responses",
        "bmv2-short-arrays",
        Some(3),
        &bmv2_cells(0x80 | 7),
    );

    // pathbf: the default parameters and the smallest, on both placements, with every step.
    for (name, bits, hashes, flags) in [
        ("default-top-bottom", 32u32, 3u32, 0u8),
        ("default-bottom-audit", 32, 3, 1 | 2),
        ("small-bottom-repair", 8, 1, 1 | 4),
        ("invalid-bits", 0, 3, 0),
    ] {
        let mut b = bits.to_le_bytes().to_vec();
        b.extend(hashes.to_le_bytes());
        b.push(flags);
        for (mode, sw, v) in [
            (1u8, 0u32, 0u32),
            (1, 3, 17),
            (0, 5, 0xdead_beef),
            (1, 21, 2),
        ] {
            b.push(mode);
            b.extend(sw.to_le_bytes());
            b.extend(v.to_le_bytes());
        }
        put("pathbf", name, None, &b);
    }

    // flock_trace: what `canary eval --export-flock-trace` writes for a k = 4 fat-tree, and the
    // reference implementation's own example.
    let topo = fattree(4, MonitorPlacement::TopAndBottom).expect("k = 4");
    let bad = topo.link_by_names("agg1_0", "core1").expect("a link");
    let mut loss = vec![0.0; topo.links.len()];
    loss[bad as usize] = 0.2;
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(3);
    let probes = canary_sim::bounce_probes::bounce_probes(&topo, &loss, 3, &mut rng);
    let faults = [canary_core::fault::Fault::constant(bad, 0.2)];
    let trace =
        canary_lab::eval::trace::write_probes(&topo, &probes[..probes.len().min(12)], &faults);
    put(
        "flock_trace",
        "exported-k4",
        None,
        trace.to_text().as_bytes(),
    );
    put(
        "flock_trace",
        "reference-example",
        None,
        REFERENCE_TRACE.as_bytes(),
    );
    assert!(FlockTrace::parse(REFERENCE_TRACE).is_ok());

    // pcap: Ethernet (plain and VLAN-tagged) IPv4 TCP and UDP, IPv6, a fragment, raw IP and
    // Linux cooked captures, big-endian nanosecond headers.
    let v4 = ipv4(6, 0x0a00_0002, 0x0a01_0003, 0);
    let frames = vec![
        eth(0x0800, &v4),
        vlan(&eth(0x0800, &ipv4(17, 1, 2, 0))),
        eth(0x86dd, &ipv6(6)),
        eth(0x0800, &ipv4(6, 3, 4, 0x2000)),
    ];
    put(
        "pcap",
        "ethernet-le-usec",
        None,
        &pcap(false, false, 1, &frames),
    );
    put(
        "pcap",
        "ethernet-be-nsec",
        None,
        &pcap(true, true, 1, &frames),
    );
    put(
        "pcap",
        "raw-ip",
        None,
        &pcap(false, false, 101, &[v4.clone(), ipv6(17)]),
    );
    let mut cooked = vec![0u8; 14];
    cooked.extend(0x0800u16.to_be_bytes());
    cooked.extend(&v4);
    put(
        "pcap",
        "linux-cooked",
        None,
        &pcap(false, false, 113, &[cooked]),
    );

    eprintln!("wrote {n} seeds under {}", corpus.display());
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .expect("a file name")
        .to_string_lossy()
        .into_owned()
}

/// A non-P4 `bfrt.json` with the packet replication engine's tables, as bf_switchd serves it.
const PRE_JSON: &str = include_str!("../../../switch/testdata/pre_bfrt.json");

/// Flock's reference implementation writes this (note the double spaces).
const REFERENCE_TRACE: &str = "Failing_link 44 14 0.018601207825701044\nFP 0 32 1\n\
    FP 32 0 33 68 37\nFID  10118 10005 29 1 16500 0.0\nFPT 29 61 70 33 1\n\
    SS  836.8020503044971 11 0 0\n";
