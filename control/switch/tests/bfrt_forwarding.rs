//! The TNA forwarding tables over BF-RT, at the message level. There is no Tofino (and no
//! bf-p4c output) here: bfrt.json is written by hand from p4src/tna/forwarding.p4 (table, key,
//! action and parameter names and widths as the program declares them, ids made up), and the
//! switch is an in-process BF-RT server on a loopback socket that records every request.
//!
//! The main check decodes the generated updates back into lookup tables and replays on them the
//! data plane's ECMP computation exactly as forwarding.p4 does it; the port it reaches must be
//! the one v1model picks (`ecmp_member`) for every route, flow hash and mask tried.

use bfrt_proto::bfrt::{
    bf_runtime_server, data_field, entity, key_field, stream_message_request,
    stream_message_response, table_entry, update, write_request,
    GetForwardingPipelineConfigRequest, GetForwardingPipelineConfigResponse, ReadRequest,
    ReadResponse, SetForwardingPipelineConfigRequest, SetForwardingPipelineConfigResponse,
    StreamMessageRequest, StreamMessageResponse, TargetDevice, Update, WriteRequest, WriteResponse,
};
use canary_core::pathbf::PathBfParams;
use canary_core::sketch::ecmp_member;
use canary_core::topo::fattree::fattree;
use canary_core::topo::{mix64, MonitorPlacement, Routing, SwitchIx, Topology};
use canary_switch::bfrt::{
    BfrtClient, BfrtConfig, BfrtError, ResolveError, TnaForwardingTables, FORWARDING_BATCH,
};
use canary_switch::forwarding::{ForwardingState, Route};
use canary_switch::switches::{BoundSwitch, SwitchEndpoint};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

const P4_NAME: &str = "canary";

// ---------------------------------------------------------------------------------------------
// bfrt.json of p4src/tna/forwarding.p4, by hand

const HOST_PORT_IN: u32 = 0x0200_0101;
const IPV4_ROUTE: u32 = 0x0200_0102;
const MUL: [u32; 4] = [0x0200_0103, 0x0200_0104, 0x0200_0105, 0x0200_0106];
const MOD_HI: u32 = 0x0200_0107;
const MOD_LO: u32 = 0x0200_0108;
const ECMP_GROUP: u32 = 0x0200_0109;
const HOST_PORT_OUT: u32 = 0x0200_010a;

/// Key fields (name, id, width, match type), the installed action (name, id) and its
/// parameters (name, id, width) of one table.
struct TableSpec {
    name: String,
    id: u32,
    keys: Vec<(&'static str, u32, u32, &'static str)>,
    action: (String, u32),
    params: Vec<(&'static str, u32, u32)>,
}

fn specs() -> Vec<TableSpec> {
    let ing = |s: &str| format!("pipe.CanaryIngress.{s}");
    let act = |s: &str, id| (format!("CanaryIngress.{s}"), id);
    let mut v = vec![
        TableSpec {
            name: ing("host_port.host_port_in"),
            id: HOST_PORT_IN,
            keys: vec![("port", 1, 9, "Exact")],
            action: act("host_port.host_port", 0x2000_0101),
            params: vec![],
        },
        TableSpec {
            name: ing("forwarding.ipv4_route"),
            id: IPV4_ROUTE,
            keys: vec![("dst_addr", 1, 32, "LPM")],
            action: act("forwarding.set_group", 0x2000_0102),
            params: vec![("group", 1, 16), ("group_size", 2, 16)],
        },
    ];
    for (i, &id) in MUL.iter().enumerate() {
        v.push(TableSpec {
            name: ing(&format!("forwarding.ecmp_mul{i}")),
            id,
            keys: vec![("byte", 1, 8, "Exact")],
            action: act(&format!("forwarding.mul{i}"), 0x2000_0103 + i as u32),
            params: vec![("term", 1, 32)],
        });
    }
    for (hl, id, action_id) in [("hi", MOD_HI, 0x2000_0107), ("lo", MOD_LO, 0x2000_0108)] {
        v.push(TableSpec {
            name: ing(&format!("forwarding.ecmp_mod_{hl}")),
            id,
            keys: vec![("size", 1, 16, "Exact"), ("byte", 2, 8, "Exact")],
            action: act(&format!("forwarding.mod_{hl}"), action_id),
            params: vec![("r", 1, 16)],
        });
    }
    v.push(TableSpec {
        name: ing("forwarding.ecmp_group"),
        id: ECMP_GROUP,
        keys: vec![("group", 1, 16, "Exact"), ("member", 2, 16, "Exact")],
        action: act("forwarding.set_port", 0x2000_0109),
        params: vec![("port", 1, 9)],
    });
    v.push(TableSpec {
        name: ing("forwarding.host_port_out"),
        id: HOST_PORT_OUT,
        keys: vec![("port", 1, 9, "Exact")],
        action: act("forwarding.to_host", 0x2000_010a),
        params: vec![],
    });
    v
}

fn bytes(name: &str, id: u32, width: u32) -> Value {
    json!({"id": id, "name": name, "repeated": false, "annotations": [],
           "type": {"type": "bytes", "width": width}})
}

fn table_json(t: &TableSpec) -> Value {
    let keys: Vec<Value> = t
        .keys
        .iter()
        .map(|&(n, id, w, m)| {
            let mut k = bytes(n, id, w);
            k["mandatory"] = json!(true);
            k["match_type"] = json!(m);
            k
        })
        .collect();
    let params: Vec<Value> = t.params.iter().map(|&(n, id, w)| bytes(n, id, w)).collect();
    // Every table also lists the program's other actions (NoAction, drop), as bf-p4c does.
    let actions = json!([
        {"id": t.action.1, "name": t.action.0, "action_scope": "TableAndDefault",
         "annotations": [], "data": params},
        {"id": 0x2000_0001, "name": "NoAction", "action_scope": "DefaultOnly",
         "annotations": [], "data": []},
        {"id": 0x2000_0002, "name": "CanaryIngress.forwarding.drop",
         "action_scope": "TableAndDefault", "annotations": [], "data": []},
    ]);
    json!({"name": t.name, "id": t.id, "table_type": "MatchAction_Direct", "size": 4096,
           "annotations": [], "depends_on": [], "key": keys, "action_specs": actions,
           "data": [], "supported_operations": [], "attributes": ["EntryScope"]})
}

fn bfrt_json() -> Value {
    let mut tables: Vec<Value> = specs().iter().map(table_json).collect();
    // A table of the program that is not a forwarding table.
    tables.push(table_json(&TableSpec {
        name: "pipe.CanaryIngress.hh_report.hh_table".into(),
        id: 0x0200_0013,
        keys: vec![("path_bf", 1, 32, "Exact")],
        action: ("CanaryIngress.hh_report.hh_watch".into(), 0x2000_0023),
        params: vec![("eta", 1, 32)],
    }));
    json!({"schema_version": "1.0.0", "tables": tables, "learn_filters": []})
}

fn json_bytes(j: &Value) -> Vec<u8> {
    serde_json::to_vec(j).unwrap()
}

fn tables() -> TnaForwardingTables {
    TnaForwardingTables::resolve(&json_bytes(&bfrt_json())).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The updates, decoded back into tables

/// Table id -> key values -> action parameter values. LPM keys are /32 and keyed by address.
struct Decoded(HashMap<u32, HashMap<Vec<u64>, Vec<u64>>>);

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0, |a, &x| a << 8 | u64::from(x))
}

/// Checks every update against the fixture (INSERT_OR_MODIFY, the table's action, every key
/// field and parameter once, in the field's byte width, /32 routes, no key twice) and collects
/// the entries.
fn decode(updates: &[Update]) -> Decoded {
    let specs: HashMap<u32, TableSpec> = specs().into_iter().map(|s| (s.id, s)).collect();
    let mut out: HashMap<u32, HashMap<Vec<u64>, Vec<u64>>> = HashMap::new();
    for u in updates {
        assert_eq!(u.r#type, update::Type::InsertOrModify as i32);
        let Some(entity::Entity::TableEntry(te)) = u.entity.as_ref().and_then(|e| e.entity.clone())
        else {
            panic!("not a table entry: {u:?}")
        };
        let spec = &specs[&te.table_id];
        let Some(table_entry::Value::Key(key)) = &te.value else {
            panic!("{}: no key", spec.name)
        };
        assert_eq!(key.fields.len(), spec.keys.len(), "{}", spec.name);
        let keys: Vec<u64> = spec
            .keys
            .iter()
            .zip(&key.fields)
            .map(|(&(n, id, w, m), f)| {
                assert_eq!(f.field_id, id, "{} key {n}", spec.name);
                let (v, lpm) = match (&f.match_type, m) {
                    (Some(key_field::MatchType::Exact(e)), "Exact") => (&e.value, None),
                    (Some(key_field::MatchType::Lpm(l)), "LPM") => (&l.value, Some(l.prefix_len)),
                    other => panic!("{} key {n}: {other:?}", spec.name),
                };
                assert_eq!(v.len(), w.div_ceil(8) as usize, "{} key {n}", spec.name);
                assert!(lpm.is_none() || lpm == Some(32), "{} key {n}", spec.name);
                be(v)
            })
            .collect();
        let data = te.data.as_ref().expect("an action");
        assert_eq!(data.action_id, spec.action.1, "{}", spec.name);
        assert_eq!(data.fields.len(), spec.params.len(), "{}", spec.name);
        let params = spec
            .params
            .iter()
            .zip(&data.fields)
            .map(|(&(n, id, w), f)| {
                assert_eq!(f.field_id, id, "{} parameter {n}", spec.name);
                let Some(data_field::Value::Stream(b)) = &f.value else {
                    panic!("{} parameter {n}: {:?}", spec.name, f.value)
                };
                assert_eq!(
                    b.len(),
                    w.div_ceil(8) as usize,
                    "{} parameter {n}",
                    spec.name
                );
                be(b)
            })
            .collect();
        let prev = out
            .entry(te.table_id)
            .or_default()
            .insert(keys.clone(), params);
        assert!(prev.is_none(), "{}: key {keys:?} twice", spec.name);
    }
    Decoded(out)
}

impl Decoded {
    fn get(&self, table: u32, keys: &[u64]) -> Option<&[u64]> {
        self.0.get(&table)?.get(keys).map(Vec::as_slice)
    }

    fn len(&self, table: u32) -> usize {
        self.0.get(&table).map_or(0, HashMap::len)
    }

    /// The egress port forwarding.p4 reaches for a packet to `dst` with flow hash `c32`, `None`
    /// when dropped. Each table miss takes the program's default action: mul(0), mod(0), drop.
    fn port(&self, dst: u32, c32: u32) -> Option<u64> {
        let &[group, size] = self.get(IPV4_ROUTE, &[dst.into()])? else {
            panic!("set_group has two parameters")
        };
        let term = |i: usize| {
            let byte = u64::from((c32 >> (8 * i)) as u8);
            self.get(MUL[i], &[byte]).map_or(0, |p| p[0] as u32)
        };
        let p01 = term(0).wrapping_add(term(1));
        let p23 = term(2).wrapping_add(term(3));
        let prod = p01.wrapping_add(p23);
        let rem = |t, byte: u32| {
            let byte = u64::from(byte & 0xff);
            self.get(t, &[size, byte]).map_or(0, |p| p[0] as u16)
        };
        let rh = rem(MOD_HI, prod >> 24);
        let rl = rem(MOD_LO, prod >> 16);
        let member = rh.wrapping_add(rl);
        self.get(ECMP_GROUP, &[group, member.into()]).map(|p| p[0])
    }
}

/// Asserts the decoded tables send every route's flows to `members[ecmp_member(..)]` of its
/// group, for each `c32`; returns how many (route, c32) pairs were checked.
fn assert_v1model_member(d: &Decoded, state: &ForwardingState, mask: u32, c32s: &[u32]) -> usize {
    let groups: HashMap<u16, &Vec<u32>> = state.groups.iter().map(|(g, m)| (*g, m)).collect();
    let mut checked = 0;
    for r in &state.routes {
        let members = groups[&r.group];
        assert_eq!(members.len(), r.size as usize, "route {:#x}", r.addr);
        for &c32 in c32s {
            let want = members[ecmp_member(c32, mask, r.size) as usize];
            assert_eq!(
                d.port(r.addr, c32),
                Some(u64::from(want)),
                "dst {:#x}, group {}, size {}, mask {mask:#x}, c32 {c32:#x}",
                r.addr,
                r.group,
                r.size
            );
            checked += 1;
        }
    }
    checked
}

/// 20 000 pseudo-random flow hashes and the edge cases.
fn flow_hashes() -> Vec<u32> {
    let mut v: Vec<u32> = (0..20_000u64).map(|i| mix64(i) as u32).collect();
    v.extend([
        0,
        1,
        u32::MAX,
        0x8000_0000,
        0x0000_ffff,
        0xffff_0000,
        0x00ff_ff00,
    ]);
    v
}

// ---------------------------------------------------------------------------------------------
// Fat-tree switches

/// Switch `name` with Tofino-like device ports (128, 132, ...) given in reverse neighbor order,
/// then hosts, so the member lists' port sorting is not neighbor order.
fn bound(topo: &Topology, name: &str) -> BoundSwitch {
    let ix = topo.switch(name).unwrap();
    let ns = topo.neighbors(ix);
    let switch_ports: HashMap<SwitchIx, u32> = ns
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &n)| (n, 128 + 4 * i as u32))
        .collect();
    let host_ports = topo
        .hosts_of(ix)
        .iter()
        .enumerate()
        .map(|(i, &h)| (h, 128 + 4 * (ns.len() + i) as u32))
        .collect();
    BoundSwitch {
        ix,
        name: name.into(),
        endpoint: SwitchEndpoint {
            grpc: "127.0.0.1:1".into(),
            device_id: 0,
            thrift: None,
            ports: Default::default(),
            tls: None,
        },
        switch_ports,
        host_ports,
    }
}

fn state_of(topo: &Topology, name: &str) -> ForwardingState {
    ForwardingState::of(topo, &Routing::new(topo), &bound(topo, name))
}

fn switch_mask(topo: &Topology, name: &str) -> u32 {
    let ix = topo.switch(name).unwrap();
    PathBfParams::default().mask(topo.switches[ix as usize].id)
}

// ---------------------------------------------------------------------------------------------

#[test]
fn fat_tree_switches_pick_the_v1model_member_for_every_flow() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let t = tables();
    let c32s = flow_hashes();
    for name in ["edge0_0", "agg1_1", "core2"] {
        let state = state_of(&topo, name);
        let masks = [switch_mask(&topo, name), 0, 1, 0x8000_0000, u32::MAX];
        for mask in masks {
            let d = decode(&t.updates(&state, mask).unwrap());
            assert_eq!(d.len(IPV4_ROUTE), topo.hosts.len(), "{name}");
            let checked = assert_v1model_member(&d, &state, mask, &c32s);
            assert_eq!(checked, topo.hosts.len() * c32s.len());
            for &p in &state.host_ports {
                assert_eq!(d.get(HOST_PORT_IN, &[p.into()]), Some(&[][..]), "{name}");
                assert_eq!(d.get(HOST_PORT_OUT, &[p.into()]), Some(&[][..]), "{name}");
            }
        }
    }
    // The edge's uplink group really spreads flows over both aggs.
    let state = state_of(&topo, "edge0_0");
    let d = decode(&t.updates(&state, switch_mask(&topo, "edge0_0")).unwrap());
    let far = topo.hosts.iter().find(|h| h.name == "h3_1_0").unwrap().addr;
    let mut ports: Vec<u64> = c32s.iter().filter_map(|&c| d.port(far, c)).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 2);
}

/// Groups of sizes 1, 2 (twice), 3, 5 and 7: random flow hashes under several masks, and with
/// mask 1 (product = c32) every one of the 2^16 values of `x` the remainder tables see.
#[test]
fn groups_of_any_size_pick_the_v1model_member() {
    let members: [&[u32]; 6] = [
        &[7],
        &[1, 2],
        &[300, 301],
        &[4, 9, 17],
        &[10, 11, 12, 13, 14],
        &[20, 21, 22, 23, 24, 25, 26],
    ];
    let state = ForwardingState {
        host_ports: vec![7],
        groups: (1..).zip(members.iter().map(|m| m.to_vec())).collect(),
        routes: (1..)
            .zip(&members)
            .map(|(g, m)| Route {
                addr: 0x0a00_0000 | u32::from(g),
                group: g,
                size: m.len() as u16,
            })
            .collect(),
    };
    assert_eq!(state.sizes(), [1, 2, 3, 5, 7]);
    let t = tables();
    for mask in [0x0004_0201, 0x9e37_79b9, u32::MAX] {
        let d = decode(&t.updates(&state, mask).unwrap());
        assert_v1model_member(&d, &state, mask, &flow_hashes());
    }
    let d = decode(&t.updates(&state, 1).unwrap());
    let every_x: Vec<u32> = (0..1u32 << 16)
        .map(|x| x << 16 | (mix64(x.into()) as u32 & 0xffff))
        .collect();
    assert_v1model_member(&d, &state, 1, &every_x);
    // Remainders once per distinct size; 2s - 1 group entries per group.
    assert_eq!(d.len(MOD_HI), 256 * 5);
    assert_eq!(d.len(MOD_LO), 256 * 5);
    assert_eq!(d.len(ECMP_GROUP), 1 + 3 + 3 + 5 + 9 + 13);
    // Group 6 (7 members): entries 0..=12, entry j -> member j mod 7.
    assert_eq!(d.get(ECMP_GROUP, &[6, 7]), Some(&[20][..]));
    assert_eq!(d.get(ECMP_GROUP, &[6, 12]), Some(&[25][..]));
    assert_eq!(d.get(ECMP_GROUP, &[6, 13]), None);
}

#[test]
fn mul_updates_are_the_product_tables_alone_and_follow_the_mask() {
    let t = tables();
    let mask = 0x0010_2001;
    let muls = t.mul_updates(mask).unwrap();
    assert_eq!(muls.len(), 4 * 256);
    let state = state_of(
        &fattree(4, MonitorPlacement::TopAndBottom).unwrap(),
        "agg0_0",
    );
    let all = t.updates(&state, mask).unwrap();
    let in_all = all.iter().filter(|u| muls.contains(u)).count();
    assert_eq!(
        in_all,
        muls.len(),
        "updates() carries the same product entries"
    );
    let d = decode(&muls);
    for (i, &table) in MUL.iter().enumerate() {
        assert_eq!(d.len(table), 256);
        for b in [0u64, 1, 0x80, 0xff] {
            let want = ((b as u32) << (8 * i)).wrapping_mul(mask | 1);
            assert_eq!(
                d.get(table, &[b]),
                Some(&[u64::from(want)][..]),
                "ecmp_mul{i} byte {b}"
            );
        }
    }
    assert_ne!(t.mul_updates(mask ^ 0x100).unwrap(), muls);
}

/// Entry counts per switch: 4 x 256 products + 2 x 256 per distinct group size + sum(2s - 1)
/// group entries + one route per host + 2 per host port (the figures in docs/dataplane.md).
#[test]
fn entry_counts_of_k4_and_k8_fat_tree_switches() {
    let t = tables();
    let mut got = Vec::new();
    for k in [4, 8] {
        let topo = fattree(k, MonitorPlacement::TopAndBottom).unwrap();
        for name in ["edge0_0", "agg0_0", "core0"] {
            let state = state_of(&topo, name);
            let updates = t.updates(&state, switch_mask(&topo, name)).unwrap();
            let d = decode(&updates);
            let groups: usize = state.groups.iter().map(|(_, m)| 2 * m.len() - 1).sum();
            assert_eq!(MUL.iter().map(|&m| d.len(m)).sum::<usize>(), 4 * 256);
            assert_eq!(d.len(MOD_HI) + d.len(MOD_LO), 2 * 256 * state.sizes().len());
            assert_eq!(d.len(ECMP_GROUP), groups);
            assert_eq!(d.len(IPV4_ROUTE), topo.hosts.len());
            assert_eq!(
                d.len(HOST_PORT_IN) + d.len(HOST_PORT_OUT),
                2 * state.host_ports.len()
            );
            got.push((k, name, state.sizes(), groups, updates.len()));
        }
    }
    assert_eq!(
        got,
        [
            (
                4,
                "edge0_0",
                vec![1, 2],
                1 + 1 + 3,
                1024 + 1024 + 5 + 16 + 4
            ),
            (4, "agg0_0", vec![1, 2], 1 + 1 + 3, 1024 + 1024 + 5 + 16),
            (4, "core0", vec![1], 4, 1024 + 512 + 4 + 16),
            (8, "edge0_0", vec![1, 4], 4 + 7, 1024 + 1024 + 11 + 128 + 8),
            (8, "agg0_0", vec![1, 4], 4 + 7, 1024 + 1024 + 11 + 128),
            (8, "core0", vec![1], 8, 1024 + 512 + 8 + 128),
        ]
    );
    let totals: Vec<usize> = got.iter().map(|g| g.4).collect();
    assert_eq!(totals, [2073, 2069, 1556, 2195, 2187, 1672]);
}

#[test]
fn resolve_errors_name_the_table_or_field() {
    let t = tables();
    assert_eq!(
        t.ipv4_route.name,
        "pipe.CanaryIngress.forwarding.ipv4_route"
    );
    assert_eq!((t.ecmp_mul[2].id, t.ecmp_group.id), (MUL[2], ECMP_GROUP));
    assert_eq!(t.ecmp_group.params[0].field.bits, 9);

    let bad = |edit: &dyn Fn(&mut Vec<Value>)| {
        let mut j = bfrt_json();
        edit(j["tables"].as_array_mut().unwrap());
        TnaForwardingTables::resolve(&json_bytes(&j)).unwrap_err()
    };
    let named = |v: &[Value], suffix: &str| -> usize {
        v.iter()
            .position(|t| t["name"].as_str().unwrap().ends_with(suffix))
            .unwrap()
    };
    let e = bad(&|v| {
        let i = named(v, ".ecmp_mul2");
        v.remove(i);
    });
    assert!(
        matches!(&e, ResolveError::NoTable { name } if name == "forwarding.ecmp_mul2"),
        "{e}"
    );
    let e = bad(&|v| {
        let i = named(v, ".host_port_in");
        v.remove(i);
    });
    assert!(e.to_string().contains("host_port.host_port_in"), "{e}");
    let e = bad(&|v| {
        let i = named(v, ".ecmp_group");
        v[i]["key"][1]["name"] = json!("index");
    });
    assert!(
        matches!(&e, ResolveError::NoKeyField { table, field, .. }
            if table == "pipe.CanaryIngress.forwarding.ecmp_group" && field == "member"),
        "{e}"
    );
    let e = bad(&|v| {
        let i = named(v, ".ipv4_route");
        v[i]["key"][0]["match_type"] = json!("Exact");
    });
    assert!(
        e.to_string()
            .contains("forwarding.ipv4_route: key field dst_addr is Exact, Canary needs LPM"),
        "{e}"
    );
    let e = bad(&|v| {
        let i = named(v, ".ecmp_mod_lo");
        v[i]["action_specs"][0]["name"] = json!("CanaryIngress.forwarding.mod_low");
    });
    assert!(
        matches!(&e, ResolveError::NoAction { table, action, .. }
            if table.ends_with("ecmp_mod_lo") && action == "mod_lo"),
        "{e}"
    );
    let e = bad(&|v| {
        let i = named(v, ".ecmp_mul3");
        v[i]["action_specs"][0]["data"][0]["name"] = json!("t");
    });
    assert!(
        matches!(&e, ResolveError::NoParam { table, param, .. }
            if table.ends_with("ecmp_mul3") && param == "term"),
        "{e}"
    );
    let e = bad(&|v| {
        let mut egress = v[named(v, ".ipv4_route")].clone();
        egress["name"] = json!("pipe.CanaryEgress.forwarding.ipv4_route");
        v.push(egress);
    });
    assert!(
        matches!(&e, ResolveError::AmbiguousTable { name, matches }
            if name == "forwarding.ipv4_route" && matches.len() == 2),
        "{e}"
    );
    let e = TnaForwardingTables::resolve(b"{").unwrap_err();
    assert!(matches!(e, ResolveError::Json(_)), "{e}");
}

#[test]
fn a_value_wider_than_its_field_is_a_value_error_naming_it() {
    let t = tables();
    let state = |host_ports: Vec<u32>, members: Vec<u32>| ForwardingState {
        host_ports,
        routes: vec![Route {
            addr: 0x0a00_0002,
            group: 1,
            size: members.len() as u16,
        }],
        groups: vec![(1, members)],
    };
    // Ports are 9 bits on Tofino.
    let e = t.updates(&state(vec![512], vec![1]), 0).unwrap_err();
    assert_eq!(
        (e.table.as_str(), e.field.as_str(), e.value, e.bits),
        (
            "pipe.CanaryIngress.host_port.host_port_in",
            "key field port",
            512,
            9
        )
    );
    let e = t.updates(&state(vec![], vec![1, 600]), 0).unwrap_err();
    assert_eq!(
        (e.table.as_str(), e.field.as_str(), e.value, e.bits),
        (
            "pipe.CanaryIngress.forwarding.ecmp_group",
            "action parameter port",
            600,
            9
        )
    );
    assert!(e.to_string().contains("does not fit in 9 bits"), "{e}");
    // A product term narrower than 32 bits cannot hold the product.
    let mut j = bfrt_json();
    let v = j["tables"].as_array_mut().unwrap();
    let mul1 = v.iter_mut().find(|t| t["id"] == MUL[1]).unwrap();
    mul1["action_specs"][0]["data"][0]["type"]["width"] = json!(16);
    let narrow = TnaForwardingTables::resolve(&json_bytes(&j)).unwrap();
    let e = narrow.mul_updates(0x0102_0304).unwrap_err();
    assert_eq!(
        (e.table.as_str(), e.field.as_str(), e.bits),
        (
            "pipe.CanaryIngress.forwarding.ecmp_mul1",
            "action parameter term",
            16
        )
    );
}

// ---------------------------------------------------------------------------------------------
// A BF-RT server that records Writes (and acknowledges the subscription)

#[derive(Default)]
struct Recorded {
    writes: Vec<WriteRequest>,
    /// Refuse the Write with this index (0-based), to see the install stop there.
    fail_write: Option<usize>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Recorded>>);

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl bf_runtime_server::BfRuntime for Recorder {
    async fn write(&self, req: Request<WriteRequest>) -> Result<Response<WriteResponse>, Status> {
        let mut r = self.0.lock().unwrap();
        r.writes.push(req.into_inner());
        if r.fail_write == Some(r.writes.len() - 1) {
            return Err(Status::resource_exhausted("table full"));
        }
        Ok(Response::new(WriteResponse::default()))
    }

    type ReadStream = BoxStream<ReadResponse>;
    async fn read(&self, _: Request<ReadRequest>) -> Result<Response<Self::ReadStream>, Status> {
        Err(Status::unimplemented("read"))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        _: Request<SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<SetForwardingPipelineConfigResponse>, Status> {
        Err(Status::unimplemented("set_forwarding_pipeline_config"))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        _: Request<GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<GetForwardingPipelineConfigResponse>, Status> {
        Err(Status::unimplemented("get_forwarding_pipeline_config"))
    }

    type StreamChannelStream = BoxStream<StreamMessageResponse>;
    async fn stream_channel(
        &self,
        req: Request<Streaming<StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let mut incoming = req.into_inner();
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            while let Ok(Some(m)) = incoming.message().await {
                if let Some(stream_message_request::Update::Subscribe(mut s)) = m.update {
                    s.status = Some(bfrt_proto::google::rpc::Status::default());
                    let ack = StreamMessageResponse {
                        update: Some(stream_message_response::Update::Subscribe(s)),
                    };
                    let _ = tx.send(Ok(ack)).await;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

impl Recorder {
    /// Serves on a free loopback port; returns a client connected to it.
    async fn client(&self) -> BfrtClient {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(bf_runtime_server::BfRuntimeServer::new(self.clone()))
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        BfrtClient::connect(BfrtConfig {
            switch: "edge0_0".into(),
            endpoint: format!("http://{addr}"),
            client_id: 7,
            device_id: 3,
            p4_name: P4_NAME.into(),
            timeout: Duration::from_secs(5),
        })
        .await
        .unwrap()
    }

    fn writes(&self) -> Vec<WriteRequest> {
        std::mem::take(&mut self.0.lock().unwrap().writes)
    }
}

#[tokio::test]
async fn install_forwarding_sends_every_update_in_bounded_writes() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let state = state_of(&topo, "edge0_0");
    let mask = switch_mask(&topo, "edge0_0");
    let t = tables();
    let want = t.updates(&state, mask).unwrap();
    assert_eq!(want.len(), 2073);

    let server = Recorder::default();
    let mut c = server.client().await;
    c.install_forwarding(&t, &state, mask).await.unwrap();
    let writes = server.writes();
    let sizes: Vec<usize> = writes.iter().map(|w| w.updates.len()).collect();
    assert_eq!(FORWARDING_BATCH, 1000);
    assert_eq!(sizes, [1000, 1000, 73]);
    for w in &writes {
        assert_eq!(
            w.target,
            Some(TargetDevice {
                device_id: 3,
                pipe_id: 0xffff,
                direction: 0xff,
                prsr_id: 0xff,
            })
        );
        assert_eq!((w.client_id, w.p4_name.as_str()), (7, P4_NAME));
        assert_eq!(
            w.atomicity,
            write_request::Atomicity::ContinueOnError as i32
        );
    }
    let sent: Vec<Update> = writes.into_iter().flat_map(|w| w.updates).collect();
    assert_eq!(sent, want, "every update once, in order");
    // Routes go last: the final 16 updates are the routes.
    let d = decode(&sent[sent.len() - 16..]);
    assert_eq!(d.len(IPV4_ROUTE), 16);

    // A refused Write stops the install and names the switch.
    server.0.lock().unwrap().fail_write = Some(1);
    let e = c.install_forwarding(&t, &state, mask).await.unwrap_err();
    assert!(
        matches!(&e, BfrtError::Rpc { switch, rpc: "Write", .. } if switch == "edge0_0"),
        "{e}"
    );
    assert_eq!(server.writes().len(), 2);
    // A value that does not fit is refused before anything is sent.
    let mut wide = state.clone();
    wide.host_ports.push(511 + 1);
    let e = c.install_forwarding(&t, &wide, mask).await.unwrap_err();
    assert!(
        matches!(&e, BfrtError::Value { switch, source } if switch == "edge0_0" && source.field == "key field port"),
        "{e}"
    );
    assert!(server.writes().is_empty());
}
