use super::*;
use crate::contract::{Program, Register, Table};
use crate::entries::{Change, McGroup, Write};
use bfrt_proto::bfrt::{table_entry, TableData, TableEntry, TableKey};
use canary_core::fabric::RuleOp;
use canary_core::FlowId;

pub(crate) fn program() -> Program {
    let json = include_bytes!("../../../testdata/tna/bfrt.json");
    Program::from_bfrt_json("bfrt.json", json).unwrap()
}

#[test]
fn a_dsm_rule_is_an_entry_of_the_compiled_ids() {
    let prog = program();
    let f = FlowId::v6(0xfd00 << 112 | 5, 0xfd00 << 112 | 6, 6, 1000, 80);
    let op = RuleOp::InstallDsm {
        switch: 0,
        flow: f,
        path_bf: 0xabcd,
    };
    let u = write_update(&prog, &crate::entries::rule(&op, 42, false)).unwrap();
    assert_eq!(u.r#type, update::Type::Insert as i32);
    let Some(entity::Entity::TableEntry(te)) = u.entity.unwrap().entity else {
        panic!()
    };
    let t = prog.table(Table::Dsm);
    assert_eq!(te.table_id, t.id);
    let Some(table_entry::Value::Key(k)) = te.value else {
        panic!()
    };
    assert_eq!(k.fields.len(), 6);
    let Some(key_field::MatchType::Exact(src)) = &k.fields[0].match_type else {
        panic!()
    };
    assert_eq!(src.value, f.src.0.to_vec());
    let d = te.data.unwrap();
    assert_eq!(d.action_id, t.action_id);
    assert_eq!(d.fields, vec![stream(t.params[0].id, vec![0, 0, 0, 42])]);
}

#[test]
fn the_epoch_flip_modifies_the_default_entry() {
    let prog = program();
    let e = crate::entries::config(canary_core::model::SwitchConfig {
        monitor: true,
        mask: 7,
        epoch: 9,
    });
    let u = write_update(
        &prog,
        &Write {
            change: Change::Insert,
            entry: e,
        },
    )
    .unwrap();
    assert_eq!(u.r#type, update::Type::Modify as i32);
    let Some(entity::Entity::TableEntry(te)) = u.entity.unwrap().entity else {
        panic!()
    };
    assert!(te.is_default_entry && te.value.is_none());
    let widths: Vec<usize> = te
        .data
        .unwrap()
        .fields
        .iter()
        .map(|f| match &f.value {
            Some(data_field::Value::Stream(b)) => b.len(),
            _ => 0,
        })
        .collect();
    assert_eq!(
        widths,
        [1, 4, 2, 2, 2],
        "monitor, mask, epoch and its neighbours"
    );
}

/// Registers read back as written, per pipe; a read with a missing cell keeps fewer cells (the
/// harvest's decoder then refuses it, naming the register).
#[test]
fn register_entries_decode_per_pipe() {
    let prog = program();
    let row = &prog.meters.dsm[1];
    let entry = |reg: &Register, i: usize, per_pipe: &[&[u32]]| TableEntry {
        table_id: reg.id,
        value: Some(table_entry::Value::Key(TableKey {
            fields: vec![exact(
                reg.index.unwrap().id,
                (i as u32).to_be_bytes().to_vec(),
            )],
        })),
        data: Some(TableData {
            action_id: 0,
            fields: reg
                .members
                .iter()
                .enumerate()
                .flat_map(|(m, (_, f))| {
                    per_pipe
                        .iter()
                        .map(move |vals| stream(f.id, vals[m].to_be_bytes().to_vec()))
                })
                .collect(),
        }),
        ..Default::default()
    };
    let n = row.id.size;
    let ids: Vec<TableEntry> = (0..n)
        .map(|i| entry(&row.id, i, &[&[5, i as u32], &[0, 0]]))
        .collect();
    let got = register_cells(&row.id, &ids).unwrap();
    assert_eq!(got.len(), 2, "tag and id");
    assert_eq!(got[1].len(), 2, "two pipes");
    assert_eq!(got[1][0][77], 77);
    assert_eq!(got[0][1][77], 0);
    let short = register_cells(&row.id, &ids[..n - 1]).unwrap();
    assert_eq!(short[0][0].len(), n - 1);
}

#[test]
fn a_multicast_group_is_its_nodes_then_its_mgid() {
    // The replication engine's tables as bf_switchd serves them.
    let json = include_str!("../../../testdata/pre_bfrt.json");
    let pre = PreTables::from_json("fixed.json", json.as_bytes()).unwrap();
    let g = McGroup {
        id: 3,
        replicas: vec![(1, 1), (4, 0), (2, 1)],
    };
    let u = group_updates(&pre, &g, update::Type::Insert);
    let tables: Vec<u32> = u
        .iter()
        .map(|u| match &u.entity.as_ref().unwrap().entity {
            Some(entity::Entity::TableEntry(te)) => te.table_id,
            _ => 0,
        })
        .collect();
    assert_eq!(
        tables,
        [11, 11, 12],
        "two nodes (rid 0, rid 1), then the group"
    );
    let missing = serde_json::json!({"tables": []});
    let e = PreTables::from_json("fixed.json", missing.to_string().as_bytes()).unwrap_err();
    assert_eq!(e.to_string(), "fixed.json: no fixed table `$pre.node`");
}
