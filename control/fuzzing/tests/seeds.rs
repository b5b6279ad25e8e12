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

use bfrt_proto::{bfrt, p4rt};
use canary_core::localize::flock_trace::FlockTrace;
use canary_core::model::{epoch_tag, EPOCH_TAGS};
use canary_core::topo::{fattree::fattree, MonitorPlacement, PortMap};
use canary_core::FlowId;
use canary_fuzzing::{line2, rule_ids, tna, v1model, THRIFT_SEQ};
use canary_switch::contract::Table;
use canary_switch::rule_ids::RuleKey;
use prost::Message;
use std::path::{Path, PathBuf};
use thrift::protocol::{
    TBinaryOutputProtocol, TFieldIdentifier, TListIdentifier, TMessageIdentifier, TMessageType,
    TOutputProtocol, TStructIdentifier, TType,
};

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
const PRE_JSON: &str = include_str!("../../switch/testdata/pre_bfrt.json");

/// Flock's reference implementation writes this (note the double spaces).
const REFERENCE_TRACE: &str = "Failing_link 44 14 0.018601207825701044\nFP 0 32 1\n\
    FP 32 0 33 68 37\nFID  10118 10005 29 1 16500 0.0\nFPT 29 61 70 33 1\n\
    SS  836.8020503044971 11 0 0\n";

/// A `<method>_result` reply message with the fields `body` writes, strict binary protocol.
fn reply(
    method: &str,
    body: impl FnOnce(&mut dyn TOutputProtocol) -> thrift::Result<()>,
) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut o = TBinaryOutputProtocol::new(&mut buf, true);
        let write = |o: &mut dyn TOutputProtocol| -> thrift::Result<()> {
            o.write_message_begin(&TMessageIdentifier::new(
                method,
                TMessageType::Reply,
                THRIFT_SEQ,
            ))?;
            o.write_struct_begin(&TStructIdentifier::new(format!("{method}_result")))?;
            body(o)?;
            o.write_field_stop()?;
            o.write_struct_end()?;
            o.write_message_end()?;
            o.flush()
        };
        write(&mut o).expect("writes to memory");
    }
    buf
}

/// An application exception in reply to `method` (an unknown method, say).
fn exception(method: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let mut o = TBinaryOutputProtocol::new(&mut buf, true);
        let e = thrift::ApplicationError::new(
            thrift::ApplicationErrorKind::UnknownMethod,
            "no such method",
        );
        o.write_message_begin(&TMessageIdentifier::new(
            method,
            TMessageType::Exception,
            THRIFT_SEQ,
        ))
        .and_then(|_| thrift::Error::write_application_error_to_out_protocol(&e, &mut o))
        .and_then(|_| o.write_message_end())
        .and_then(|_| o.flush())
        .expect("writes to memory");
    }
    buf
}

/// An HH digest member as BMv2's P4Runtime server sends it.
fn p4rt_digest(f: &FlowId, path_bf: u32, canonical: bool) -> p4rt::P4Data {
    let bits = |v: u128, n: usize| {
        let mut b = v.to_be_bytes()[16 - n..].to_vec();
        if canonical {
            let zeros = b.iter().take_while(|&&x| x == 0).count().min(b.len() - 1);
            b.drain(..zeros);
        }
        p4rt::P4Data {
            data: Some(p4rt::p4_data::Data::Bitstring(b)),
        }
    };
    p4rt::P4Data {
        data: Some(p4rt::p4_data::Data::Struct(p4rt::P4StructLike {
            members: vec![
                bits(f.src.to_u128(), 16),
                bits(f.dst.to_u128(), 16),
                bits(f.proto.into(), 1),
                bits(f.sport.into(), 2),
                bits(f.dport.into(), 2),
                bits(path_bf.into(), 4),
            ],
        })),
    }
}

/// An HH digest as bf_switchd sends it in a learn list.
fn bfrt_digest(f: &FlowId, path_bf: u32) -> bfrt::TableData {
    let vals = [
        f.src.to_u128(),
        f.dst.to_u128(),
        f.proto.into(),
        f.sport.into(),
        f.dport.into(),
        path_bf.into(),
    ];
    bfrt::TableData {
        action_id: 0,
        fields: tna()
            .digest
            .fields
            .iter()
            .zip(vals)
            .map(|(fd, v)| bfrt::DataField {
                field_id: fd.id,
                value: Some(bfrt::data_field::Value::Stream(
                    v.to_be_bytes()[16 - fd.bytes()..].to_vec(),
                )),
            })
            .collect(),
    }
}

/// One cell of a BF-RT register table: its index key and each member's value per pipe.
fn register_entry<const M: usize>(
    reg: &canary_switch::contract::Register,
    index: usize,
    per_pipe: &[[u32; M]],
) -> bfrt::Entity {
    let ix = reg.index.expect("a BF-RT register");
    let fields = reg
        .members
        .iter()
        .enumerate()
        .flat_map(|(m, (_, f))| {
            per_pipe.iter().map(move |vals| bfrt::DataField {
                field_id: f.id,
                value: Some(bfrt::data_field::Value::Stream(
                    vals[m.min(M - 1)].to_be_bytes().to_vec(),
                )),
            })
        })
        .collect();
    bfrt::Entity {
        entity: Some(bfrt::entity::Entity::TableEntry(bfrt::TableEntry {
            table_id: reg.id,
            value: Some(bfrt::table_entry::Value::Key(bfrt::TableKey {
                fields: vec![bfrt::KeyField {
                    field_id: ix.id,
                    match_type: Some(bfrt::key_field::MatchType::Exact(bfrt::key_field::Exact {
                        value: (index as u32).to_be_bytes().to_vec(),
                    })),
                }],
            })),
            data: Some(bfrt::TableData {
                action_id: 0,
                fields,
            }),
            ..Default::default()
        })),
    }
}

/// `switch_config`'s default entry holding {monitor 1, mask 1, epoch 5}.
fn p4rt_config() -> p4rt::Entity {
    let t = v1model().table(Table::SwitchConfig);
    let params = t
        .params
        .iter()
        .zip([1u128, 1, 5])
        .map(|(p, v)| p4rt::action::Param {
            param_id: p.id,
            value: v.to_be_bytes()[16 - p.bytes()..].to_vec(),
        })
        .collect();
    p4rt::Entity {
        entity: Some(p4rt::entity::Entity::TableEntry(p4rt::TableEntry {
            table_id: t.id,
            is_default_action: true,
            action: Some(p4rt::TableAction {
                r#type: Some(p4rt::table_action::Type::Action(p4rt::Action {
                    action_id: t.action_id,
                    params,
                })),
            }),
            ..Default::default()
        })),
    }
}

fn bfrt_config() -> bfrt::Entity {
    let t = tna().table(Table::SwitchConfig);
    let fields = t
        .params
        .iter()
        .zip([1u128, 1, 5])
        .map(|(p, v)| bfrt::DataField {
            field_id: p.id,
            value: Some(bfrt::data_field::Value::Stream(
                v.to_be_bytes()[16 - p.bytes()..].to_vec(),
            )),
        })
        .collect();
    bfrt::Entity {
        entity: Some(bfrt::entity::Entity::TableEntry(bfrt::TableEntry {
            table_id: t.id,
            is_default_entry: true,
            data: Some(bfrt::TableData {
                action_id: t.action_id,
                fields,
            }),
            ..Default::default()
        })),
    }
}

/// The read_responses target's BMv2 input: `head` (epoch, top bit: short arrays), then cell
/// writes holding buckets of that epoch for rule IDs the fixture assigned.
fn bmv2_cells(head: u8) -> Vec<u8> {
    let tag = u64::from(epoch_tag(u64::from(head & 0x7f)));
    let width = v1model().meters.width;
    let base = (tag & 1) as usize * width;
    let rows = v1model().meters.usm.len();
    let ids = rule_ids();
    let usm = |i: u32| FlowId::v4(0x0a00_0002 + i, 0x0a01_0002, 6, 1000 + i as u16, 80);
    let mut b = vec![head];
    let mut write = |array: usize, cell: usize, value: u64| {
        b.push(array as u8);
        b.extend((cell as u16).to_le_bytes());
        b.extend(value.to_le_bytes());
    };
    for i in 0..3u32 {
        let uid = ids.id(&RuleKey::Usm(usm(i))).expect("installed");
        let did = ids
            .id(&RuleKey::Dsm(usm(i), 0x1234_5678 ^ i))
            .expect("installed");
        let cell = base + 17 * i as usize;
        // USM row i: arrays 2i (IDs) and 2i + 1 (counts); DSM rows follow.
        write(2 * i as usize, cell, tag << 32 | u64::from(uid));
        write(2 * i as usize + 1, cell, 10 + u64::from(i));
        write(
            2 * (rows + i as usize),
            cell,
            tag << 32 | u64::from(did) | 1 << 31,
        );
        write(2 * (rows + i as usize) + 1, cell, 9);
    }
    // A bucket of an epoch half a wrap old: stale, to be zeroed.
    let epoch = u64::from(head & 0x7f);
    let old = u64::from(epoch_tag(epoch + EPOCH_TAGS / 2 - 1));
    write(0, base + 5, (old << 32) | 1);
    b
}

fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend(ethertype.to_be_bytes());
    f.extend(payload);
    f
}

/// An 802.1Q tag inserted after the MAC addresses.
fn vlan(frame: &[u8]) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend([0x81, 0x00, 0x00, 0x0a]);
    f.extend(&frame[12..]);
    f
}

fn ipv4(proto: u8, src: u32, dst: u32, frag: u16) -> Vec<u8> {
    let mut p = vec![0x45, 0, 0, 40, 0, 1];
    p.extend(frag.to_be_bytes());
    p.extend([64, proto, 0, 0]);
    p.extend(src.to_be_bytes());
    p.extend(dst.to_be_bytes());
    p.extend([0x9c, 0x40, 0x00, 0x50]);
    p.extend([0u8; 16]);
    p
}

fn ipv6(proto: u8) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0, 0, 20, proto, 64];
    p.extend((0xfd00u128 << 112 | 2).to_be_bytes());
    p.extend((0xfd00u128 << 112 | 3).to_be_bytes());
    p.extend([0x14, 0xe9, 0x00, 0x35]);
    p.extend([0u8; 16]);
    p
}

/// A classic libpcap file of `frames`, one per millisecond.
fn pcap(big_endian: bool, nanos: bool, linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let w32 = |b: &mut Vec<u8>, v: u32| {
        b.extend(if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        })
    };
    let w16 = |b: &mut Vec<u8>, v: u16| {
        b.extend(if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        })
    };
    let mut b = Vec::new();
    w32(&mut b, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
    w16(&mut b, 2);
    w16(&mut b, 4);
    w32(&mut b, 0);
    w32(&mut b, 0);
    w32(&mut b, 65535);
    w32(&mut b, linktype);
    for (i, f) in frames.iter().enumerate() {
        w32(&mut b, 1_700_000_000);
        w32(
            &mut b,
            (i as u32 + 1) * if nanos { 1_000_000 } else { 1000 },
        );
        w32(&mut b, f.len() as u32);
        w32(&mut b, f.len() as u32);
        b.extend(f);
    }
    b
}
