use super::*;
use bfrt_proto::p4info::P4Info;
use prost::Message;

/// The P4Info p4c wrote for p4src/v1model (kept beside the tests; `tests/program_artifacts.rs`
/// recompiles the program and compares when p4c is on PATH).
pub(crate) fn v1model_p4info() -> P4Info {
    let bytes = include_bytes!("../../testdata/v1model/canary.p4info.bin");
    P4Info::decode(bytes.as_slice()).expect("a binary P4Info")
}

fn resolve(p: &P4Info) -> Result<Program, ContractError> {
    Program::from_p4info("canary.p4info.bin", p)
}

#[test]
fn the_v1model_program_resolves_and_its_sizes_are_the_defines() {
    let prog = resolve(&v1model_p4info()).unwrap();
    for spec in TABLES {
        let t = prog.table(spec.table);
        assert!(t.name.ends_with(spec.name), "{}", t.name);
        assert_eq!(t.keys.len(), spec.keys.len());
        assert_eq!(t.params.len(), spec.params.len());
        assert!(t.size > 0, "{}", t.name);
    }
    assert_eq!(prog.capacity(), Capacity::of_program());
    assert_eq!(prog.meters.usm.len(), 3);
    assert_eq!(prog.hashpipe.len(), 3);
    assert!(prog.hh_counter.is_some());
    assert_eq!(prog.digest.fields.len(), 6);
}

fn rename_table(p: &mut P4Info, from: &str, to: &str) {
    for t in &mut p.tables {
        let pre = t.preamble.as_mut().unwrap();
        if pre.name.ends_with(from) {
            pre.name = pre.name.replace(from, to);
        }
    }
}

#[test]
fn a_renamed_table_is_named_with_the_closest_one() {
    let mut p = v1model_p4info();
    rename_table(&mut p, "usm_table", "usm_tabel");
    let e = resolve(&p).unwrap_err().to_string();
    assert_eq!(
        e,
        "canary.p4info.bin: no table `usm_table` (did you mean `CanaryIngress.core.upstream_meter.usm_tabel`?)"
    );
}

#[test]
fn a_key_of_another_width_or_kind_is_named() {
    let mut p = v1model_p4info();
    let t = p
        .tables
        .iter_mut()
        .find(|t| t.preamble.as_ref().unwrap().name.ends_with("dsm_table"))
        .unwrap();
    t.match_fields[5].bitwidth = 16;
    let e = resolve(&p).unwrap_err().to_string();
    assert!(
        e.contains("dsm_table`, key field `path_bf`: is exact/16, Canary needs exact/32"),
        "{e}"
    );
    let mut p = v1model_p4info();
    let t = p
        .tables
        .iter_mut()
        .find(|t| t.preamble.as_ref().unwrap().name.ends_with("hh_table"))
        .unwrap();
    t.match_fields[0].name = "pathbf".into();
    let e = resolve(&p).unwrap_err().to_string();
    assert!(
        e.contains(
            "no key field `CanaryIngress.core.hh_report.hh_table.path_bf` (did you mean `pathbf`?)"
        ),
        "{e}"
    );
}

#[test]
fn an_action_with_other_parameters_is_named() {
    let mut p = v1model_p4info();
    let a = p
        .actions
        .iter_mut()
        .find(|a| a.preamble.as_ref().unwrap().name.ends_with("set_config"))
        .unwrap();
    a.params[2].bitwidth = 1;
    let e = resolve(&p).unwrap_err().to_string();
    assert!(
        e.contains(
            "set_config`: has parameters [monitor/1, mask/32, epoch/1, epoch_prev/15, \
             epoch_next/15], Canary passes [monitor/1, mask/32, epoch/15, epoch_prev/15, \
             epoch_next/15]"
        ),
        "{e}"
    );
}

#[test]
fn missing_or_misshapen_registers_and_digests_are_named() {
    let mut p = v1model_p4info();
    p.registers.retain(|r| {
        !r.preamble
            .as_ref()
            .unwrap()
            .name
            .ends_with("downstream_meter.buckets.row0.count_reg")
    });
    let e = resolve(&p).unwrap_err().to_string();
    assert!(
        e.contains("no register `downstream_meter.buckets.row0.count_reg`"),
        "{e}"
    );

    let mut p = v1model_p4info();
    for r in &mut p.registers {
        if r.preamble
            .as_ref()
            .unwrap()
            .name
            .contains("upstream_meter.buckets.row1")
        {
            r.size = 1000;
        }
    }
    let e = resolve(&p).unwrap_err().to_string();
    assert!(
        e.contains("upstream_meter.buckets.row1.id_reg`: 1000 cells"),
        "{e}"
    );

    let mut p = v1model_p4info();
    let s = p
        .type_info
        .as_mut()
        .unwrap()
        .structs
        .get_mut(DIGEST_P4INFO)
        .unwrap();
    s.members.pop();
    let e = resolve(&p).unwrap_err().to_string();
    assert!(e.contains("digest `hh_digest_t`: has members"), "{e}");
}

#[test]
fn closest_names_ignore_the_control_path_and_give_up_when_nothing_is_close() {
    let names = ["a.b.ip_route", "a.b.ecmp_group", "x.hh_table"];
    assert_eq!(closest("ip_rout", names).as_deref(), Some("a.b.ip_route"));
    assert_eq!(closest("c.hh_tabel", names).as_deref(), Some("x.hh_table"));
    assert_eq!(closest("zzz", names), None);
}

/// The `bfrt.json` bf-p4c wrote for p4src/tna, as JSON to edit.
fn tna_bfrt() -> serde_json::Value {
    let json = include_bytes!("../../testdata/tna/bfrt.json");
    serde_json::from_slice(json).expect("a bfrt.json")
}

fn resolve_bfrt(v: &serde_json::Value) -> Result<Program, ContractError> {
    Program::from_bfrt_json("bfrt.json", &serde_json::to_vec(v).unwrap())
}

/// The table of `v` whose name ends with `suffix`.
fn bfrt_table<'a>(v: &'a mut serde_json::Value, suffix: &str) -> &'a mut serde_json::Value {
    v["tables"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"].as_str().unwrap().ends_with(suffix))
        .unwrap()
}

#[test]
fn the_tna_program_resolves_with_bf_runtimes_register_fields() {
    let prog = resolve_bfrt(&tna_bfrt()).unwrap();
    assert_eq!(prog.target, Target::BfRuntime);
    assert_eq!(prog.meters.usm.len(), prog.meters.dsm.len());
    for row in prog.meters.rows() {
        assert!(row.id.index.is_some() && row.count.index.is_some());
        let members: Vec<&str> = row.id.members.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(members, ID_REGISTER.1);
    }
    assert!(prog.hashpipe.iter().all(|r| r.index.is_some()));
    assert_eq!(prog.digest.fields.len(), DIGEST_FIELDS.len());
}

#[test]
fn bfrt_json_differences_are_named_like_p4infos() {
    let mut v = tna_bfrt();
    let t = bfrt_table(&mut v, "switch_config");
    t["action_specs"][0]["data"][2]["type"]["width"] = 1.into();
    let e = resolve_bfrt(&v).unwrap_err().to_string();
    assert!(
        e.contains("set_config`: has parameters [monitor/1, mask/32, epoch/1, epoch_prev/15"),
        "{e}"
    );

    let mut v = tna_bfrt();
    let t = bfrt_table(&mut v, "upstream_meter.buckets.row0.id_reg");
    t["key"] = serde_json::json!([]);
    let e = resolve_bfrt(&v).unwrap_err().to_string();
    assert!(
        e.ends_with("upstream_meter.buckets.row0.id_reg`: has no key field $REGISTER_INDEX"),
        "{e}"
    );

    let mut v = tna_bfrt();
    v["learn_filters"][0]["fields"][5]["type"]["width"] = 16.into();
    let e = resolve_bfrt(&v).unwrap_err().to_string();
    assert!(
        e.ends_with("hh_digest`, field `path_bf`: is 16 bits, Canary decodes 32"),
        "{e}"
    );
}
