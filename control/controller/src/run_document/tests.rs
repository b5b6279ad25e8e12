use super::*;
use canary_core::topo::MonitorPlacement;

const LEAF_SPINE: &str = "name: two-leaves\nswitches:\n  - {name: leaf0, layer: 0, hosts: 2}\n  \
                          - {name: leaf1, layer: 0, hosts: 2}\n  - {name: spine0, layer: 1}\n\
                          links:\n  - [leaf0, spine0]\n  - [leaf1, spine0]\n";

fn summary(blamed: &str) -> Summary {
    serde_json::from_str(&format!(
        r#"{{"epochs":0,"blamed":{blamed},"precision":1,"recall":1,"f1":1,"tp":0,"fp":0,"fn":0,
            "accuracy":1,"stages":[],"missed":[],"false_positives":[],"localize_ms":0}}"#
    ))
    .unwrap()
}

fn doc_on(topo: &Topology, blamed: &str) -> RunDocument {
    RunDocument::new(RunKind::Packets, topo, 1, &[], Vec::new(), summary(blamed))
}

fn round_trip(doc: &RunDocument) -> RunDocument {
    RunDocument::parse("run.json", &serde_json::to_string(doc).unwrap()).unwrap()
}

#[test]
fn a_fat_tree_is_kept_by_its_name_and_any_other_fabric_whole() {
    let k8 = fattree(8, MonitorPlacement::Bottom).unwrap();
    let doc = round_trip(&doc_on(&k8, "[]"));
    assert_eq!((doc.format.as_str(), doc.version), (FORMAT, VERSION));
    assert!(doc.topology_file.is_none(), "a fat-tree is its name");
    let back = doc.fabric("run.json").unwrap().unwrap();
    assert_eq!(back.name, "fattree:8");
    assert_eq!(
        back.monitors().count(),
        k8.monitors().count(),
        "bottom only"
    );

    let ls = yaml::parse("ls.yaml", LEAF_SPINE).unwrap();
    let doc = round_trip(&doc_on(&ls, r#"[{"link":["leaf0","spine0"],"loss":0.1}]"#));
    let back = doc.topology_for("run.json", None).unwrap();
    assert_eq!(back.name, "two-leaves");
    assert_eq!(
        yaml::to_file(&back, MonitorPlacement::TopAndBottom),
        yaml::to_file(&ls, MonitorPlacement::TopAndBottom),
        "the file is not needed to read the run"
    );
}

#[test]
fn a_topology_file_named_like_a_fat_tree_is_kept_whole() {
    let ls = LEAF_SPINE.replace("two-leaves", "fattree:4");
    let t = yaml::parse("ls.yaml", &ls).unwrap();
    let doc = round_trip(&doc_on(&t, "[]"));
    assert!(doc.topology_file.is_some());
    let back = doc.fabric("run.json").unwrap().unwrap();
    assert_eq!(back.switches.len(), 3);
}

#[test]
fn another_fabric_than_the_runs_is_refused() {
    let k8 = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
    let doc = doc_on(&k8, "[]");
    let e = doc
        .topology_for("run.json", Some("fattree:4"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--topology fattree:4") && e.contains("fattree:8"),
        "{e}"
    );
    assert!(doc.topology_for("run.json", Some("fattree:8")).is_ok());
}

#[test]
fn a_link_the_fabric_does_not_have_is_named_with_its_field() {
    let k4 = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let doc = doc_on(&k4, r#"[{"link":["agg3_1","core15"],"loss":0.1}]"#);
    let e = doc.topology_for("run.json", None).unwrap_err().to_string();
    assert!(
        e.contains("run.json: summary.blamed[0]") && e.contains("agg3_1→core15"),
        "{e}"
    );
}

#[test]
fn a_newer_or_foreign_document_is_refused_as_such() {
    let k4 = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let mut v = serde_json::to_value(doc_on(&k4, "[]")).unwrap();
    v["version"] = (VERSION + 1).into();
    let e = RunDocument::parse("run.json", &v.to_string())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("run.json: version") && e.contains("newer"),
        "{e}"
    );
    v["format"] = "something-else".into();
    let e = RunDocument::parse("run.json", &v.to_string())
        .unwrap_err()
        .to_string();
    assert!(e.contains("run.json: format"), "{e}");
    let e = RunDocument::parse("run.json", "[1, 2]")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("run.json") && e.contains("not a JSON run document"),
        "{e}"
    );
}

#[test]
fn a_bad_field_is_named_by_its_path() {
    let k4 = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let mut v = serde_json::to_value(doc_on(&k4, "[]")).unwrap();
    v["summary"]["blamed"] = serde_json::json!([{"link": ["edge0_0"], "loss": 0.1}]);
    let e = RunDocument::parse("run.json", &v.to_string())
        .unwrap_err()
        .to_string();
    assert!(e.contains("run.json: summary.blamed[0].link"), "{e}");
}

#[test]
fn a_document_from_before_versioning_still_reads() {
    let k4 = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let mut v = serde_json::to_value(doc_on(&k4, "[]")).unwrap();
    for key in ["format", "version", "kind", "monitors"] {
        v.as_object_mut().unwrap().remove(key);
    }
    let doc = RunDocument::parse("old.json", &v.to_string()).unwrap();
    assert_eq!((doc.version, doc.kind), (0, RunKind::Packets));
    assert_eq!(
        doc.topology_for("old.json", None).unwrap().name,
        "fattree:4"
    );
    // On a topology file it did not keep, the reader must be given it.
    v["topology"] = "two-leaves".into();
    let doc = RunDocument::parse("old.json", &v.to_string()).unwrap();
    let e = doc.topology_for("old.json", None).unwrap_err().to_string();
    assert!(e.contains("--topology"), "{e}");
}
