//! Resolving Canary's names in a P4Info: the compiled program resolves; a program that
//! disagrees with the controller fails at start with the table, field or action named.

mod common;

use bfrt_proto::p4info::{self, match_field, P4Info};
use canary_switch::p4info::P4InfoIndex;
use canary_switch::program::CanaryProgram;
use prost::Message;
use std::path::Path;

fn compiled() -> Option<P4InfoIndex> {
    let have_p4c = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("p4c").is_file()));
    if !have_p4c {
        common::skip("p4c missing from PATH");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bmv2/build.sh");
    let out = std::process::Command::new(script)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    Some(P4InfoIndex::load(&dir.path().join("canary.p4info.bin")).unwrap())
}

#[test]
fn the_compiled_program_resolves() {
    let Some(idx) = compiled() else { return };
    let prog = CanaryProgram::resolve(&idx).unwrap();
    assert_eq!(prog.dsm_table.fields.len(), 6);
    assert_eq!(prog.set_config.params, vec![(1, 1), (2, 32), (3, 1)]);
    assert_ne!(prog.hh_digest, 0);
}

/// The compiled P4Info with one change, re-encoded.
fn altered(idx: &P4InfoIndex, change: impl FnOnce(&mut P4Info)) -> P4InfoIndex {
    let mut info = idx.info.clone();
    change(&mut info);
    P4InfoIndex::decode("altered.p4info.bin", info.encode_to_vec()).unwrap()
}

fn table<'a>(info: &'a mut P4Info, alias: &str) -> &'a mut p4info::Table {
    info.tables
        .iter_mut()
        .find(|t| t.preamble.as_ref().unwrap().alias == alias)
        .unwrap()
}

/// An edit of the P4Info.
type Change = Box<dyn FnOnce(&mut P4Info)>;

#[test]
fn a_program_that_disagrees_is_refused_with_the_name() {
    let Some(idx) = compiled() else { return };
    let cases: Vec<(Change, &[&str])> = vec![
        (
            Box::new(|i| table(i, "dsm_table").match_fields[5].name = "bloom".into()),
            &["dsm_table", "path_bf:EXACT/32", "bloom:EXACT/32"],
        ),
        (
            Box::new(|i| {
                table(i, "ipv4_route").match_fields[0].r#match = Some(
                    match_field::Match::MatchType(match_field::MatchType::Exact as i32),
                )
            }),
            &["ipv4_route", "dst_addr:LPM/32"],
        ),
        (
            Box::new(|i| {
                i.tables
                    .retain(|t| t.preamble.as_ref().unwrap().alias != "hh_table")
            }),
            &["table `hh_table` not found"],
        ),
        (
            Box::new(|i| {
                let a = i
                    .actions
                    .iter_mut()
                    .find(|a| a.preamble.as_ref().unwrap().alias == "set_config")
                    .unwrap();
                a.params[1].bitwidth = 16;
            }),
            &["set_config", "mask/16", "mask/32"],
        ),
        (
            Box::new(|i| i.digests.clear()),
            &["digest `hh_digest_t` not found"],
        ),
    ];
    for (change, want) in cases {
        let e = CanaryProgram::resolve(&altered(&idx, change))
            .expect_err("a mismatched program must be refused")
            .to_string();
        assert!(e.contains("altered.p4info.bin"), "{e}");
        for w in want {
            assert!(e.contains(w), "`{e}` should mention `{w}`");
        }
    }
}

#[test]
fn a_text_p4info_is_refused_with_the_file_named() {
    let e = P4InfoIndex::decode(
        "canary.p4info.txtpb",
        b"pkg_info {\n  arch: \"v1model\"\n}\n".to_vec(),
    )
    .expect_err("text is not the binary encoding")
    .to_string();
    assert!(
        e.contains("canary.p4info.txtpb") && e.contains("binary"),
        "{e}"
    );
}
