use super::*;
use crate::run_document::RunDocument;
use canary_core::topo::{fattree::fattree, MonitorPlacement};

fn k4() -> Topology {
    fattree(4, MonitorPlacement::TopAndBottom).unwrap()
}

/// A run document on k=4 with these faults and blamed links (JSON lists).
fn doc(faults: &str, blamed: &str) -> RunDocument {
    serde_json::from_str(&format!(
        r#"{{"format":"canary-run","version":1,"kind":"packets","topology":"fattree:4","seed":1,
            "faults":{faults},"epochs":[],
            "summary":{{"epochs":3,"blamed":{blamed},"precision":0.5,"recall":0.5,"f1":0.5,
                "tp":1,"fp":1,"fn":1,"accuracy":0.9,"stages":[],"missed":[],
                "false_positives":[],"localize_ms":0}}}}"#
    ))
    .unwrap()
}

#[test]
fn marks_follow_truth_and_verdict() {
    let d = doc(
        r#"[{"link":["agg0_0","core0"],"loss":0.01},{"link":["edge1_0","agg1_1"],"loss":0.1}]"#,
        r#"[{"link":["agg0_0","core0"],"loss":0.012},{"link":["core1","agg2_0"],"loss":0.05}]"#,
    );
    let (m, score) = marks_of(&d);
    assert_eq!(
        m[&("agg0_0".into(), "core0".into())],
        Mark::Found(0.01, 0.012)
    );
    assert_eq!(m[&("edge1_0".into(), "agg1_1".into())], Mark::Missed(0.1));
    assert_eq!(
        m[&("core1".into(), "agg2_0".into())],
        Mark::FalsePositive(0.05)
    );
    assert!(score.contains("F1 0.50"), "{score}");
    let svg = render(&k4(), &m, "t").unwrap();
    assert_eq!(svg.matches("stroke-width=\"4\" fill=\"none\"").count(), 3);
    assert!(svg.contains("agg0_0 → core0: injected 1.0% · blamed 1.2%"));
    assert!(svg.contains("edge1_0 → agg1_1: injected 10% · missed"));
    // 32 undirected links = 64 directed lines, 61 unmarked.
    assert_eq!(svg.matches("marker-mid=\"url(#a-gray)\"").count(), 61);
    assert_eq!(svg.matches("<title>h").count(), 16);
}

#[test]
fn errors_name_the_link() {
    let mut m = Marks::new();
    m.insert(("edge0_0".into(), "core0".into()), Mark::Missed(0.1));
    let e = render(&k4(), &m, "t").unwrap_err().to_string();
    assert!(e.contains("[edge0_0, core0]"), "{e}");
}
