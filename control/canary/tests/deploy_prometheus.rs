//! `deploy/`: the Prometheus config, alert rules and Grafana dashboard operators install.
//! Checked with the real `promtool` (Debian `prometheus`): the config and rules are valid, the
//! rules' unit tests fire on series shaped like Canary's; and every metric the rules and the
//! dashboard use is one `canary run --metrics` exports.

use canary_controller::metrics::Metrics;
use canary_testkit::{repo_root, runnable, tools_lacking};
use std::collections::BTreeSet;
use std::process::Command;

fn promtool(args: &[&str]) {
    let dir = repo_root().join("deploy/prometheus");
    let out = Command::new("promtool")
        .args(args)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool {}:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_rules_and_config_are_valid_and_the_alerts_fire_on_canarys_series() {
    if !runnable(
        "deploy_prometheus",
        &tools_lacking(&["promtool"], "Debian prometheus"),
    ) {
        return;
    }
    promtool(&["check", "config", "prometheus.yml"]);
    promtool(&["check", "rules", "canary-alerts.yml"]);
    promtool(&["test", "rules", "canary-alerts.test.yml"]);
}

/// Metric names as samples carry them (counters with `_total`), after a simulated k=4 run with
/// faults, so that every family has series: links blamed, segments counted, and a report that
/// names an unreachable (disturbed) switch and a full table.
fn exported() -> BTreeSet<String> {
    use canary_controller::controller::{Controller, ControllerConfig};
    use canary_controller::report::{ClearedLink, TableFull};
    use canary_controller::setup::{load_topology, prepare};
    use canary_sim::{SimConfig, SimFabric};
    let topo = load_topology("fattree:4", None).unwrap();
    let prep = prepare(topo, Default::default()).unwrap();
    let mut loss = vec![0.0; prep.topo.links.len()];
    loss[3] = 0.2;
    let mut fabric = SimFabric::new(prep.topo.clone(), &prep.codec, loss, SimConfig::default());
    let cfg = ControllerConfig {
        drain: fabric.drain_time(),
        ..Default::default()
    };
    let mut ctl = Controller::new(prep.topo, prep.segments, prep.codec, cfg);
    let metrics = Metrics::new();
    metrics.set_primary(true);
    metrics.set_epoch_length(std::time::Duration::from_millis(100));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut r = rt.block_on(async {
        ctl.start(&mut fabric).await;
        let mut r = ctl.run_epoch(&mut fabric).await;
        for _ in 0..5 {
            r = ctl.run_epoch(&mut fabric).await;
        }
        r
    });
    assert!(!r.blamed.is_empty(), "the lossy link is blamed");
    r.unreachable.push("core0".into());
    r.disturbed.push(canary_controller::report::SwitchEvent {
        switch: "core0".into(),
        detail: "unreachable: a test".into(),
    });
    r.tables_full.push(TableFull {
        switch: "edge0_0".into(),
        table: "dsm_table".into(),
        size: 4096,
        refused: 3,
    });
    r.incomplete = Some("a test".into());
    // One blame held, one moved to it, one cleared.
    r.blamed[0].held = true;
    let on = r.blamed[0].link.clone();
    r.cleared.push(ClearedLink {
        link: ["agg0_0".into(), "core0".into()],
        since: 1,
        last: 4,
        corrected_to: Some(on.clone()),
    });
    r.cleared.push(ClearedLink {
        link: ["edge0_0".into(), "agg0_0".into()],
        since: 1,
        last: 3,
        corrected_to: None,
    });
    // A loss the counts could not place: each candidate link is a series.
    r.undecided.push(vec![
        ["edge1_0".into(), "agg1_1".into()],
        ["agg1_1".into(), "core3".into()],
    ]);
    metrics.observe(&ctl, &r, 2);
    // The blamed links' incidents, as the daemon's journal has them after this epoch, with the
    // page served.
    metrics.set_page("127.0.0.1:8080");
    let mut counted = r.clone();
    counted.incomplete = None;
    let incidents = canary_controller::incidents::rebuild(Default::default(), &[counted]);
    metrics.observe_incidents(incidents.iter());
    let text = metrics.render();
    evidence_is_exported(&r, &text);
    let held = &r.blamed[0].link;
    let incident = incidents
        .iter()
        .find(|i| {
            i.blamed_now
                && i.subject == canary_controller::incidents::Subject::Link { link: held.clone() }
        })
        .map(|i| i.id)
        .expect("an open incident");
    let line = format!(
        "canary_link_incident{{from=\"{a}\",to=\"{b}\",incident=\"{incident}\",\
         page=\"http://127.0.0.1:8080/#incident={incident}\"}} 1",
        a = held[0],
        b = held[1]
    );
    assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
    // A held blame is a series of its own; a correction counts as one, not as an all-clear.
    for series in [
        format!(
            "canary_link_blame_held{{from=\"{}\",to=\"{}\"}} 1",
            on[0], on[1]
        ),
        format!(
            "canary_link_blame_corrected_total{{from=\"agg0_0\",to=\"core0\",now_on=\"{}->{}\"}} 1",
            on[0], on[1]
        ),
        "canary_link_all_clear_total{from=\"edge0_0\",to=\"agg0_0\"} 1".to_string(),
        "canary_link_loss_undecided{from=\"edge1_0\",to=\"agg1_1\"} 1".to_string(),
        "canary_link_loss_undecided{from=\"agg1_1\",to=\"core3\"} 1".to_string(),
    ] {
        assert!(text.lines().any(|l| l == series), "no {series} in\n{text}");
    }
    assert!(
        !text.contains("canary_link_all_clear_total{from=\"agg0_0\",to=\"core0\"}"),
        "a correction counted as an all-clear:\n{text}"
    );
    let mut names = BTreeSet::new();
    for l in text.lines() {
        let mut w = l.split_whitespace();
        if let (Some("#"), Some("TYPE"), Some(name), Some(kind)) =
            (w.next(), w.next(), w.next(), w.next())
        {
            names.insert(if kind == "counter" {
                format!("{name}_total")
            } else {
                name.to_string()
            });
        }
    }
    names
}

/// Every directed link's evidence bound is a `canary_link_evidence_min_loss` sample with the
/// value the epoch report gives it.
fn evidence_is_exported(r: &canary_controller::report::EpochReport, text: &str) {
    let map = &r.evidence_map;
    assert_eq!(map.links.len() + map.unwatched.len(), 64, "{map:?}");
    for l in &map.links {
        let series = format!(
            "canary_link_evidence_min_loss{{from=\"{}\",to=\"{}\"}} ",
            l.link[0], l.link[1]
        );
        let line = text
            .lines()
            .find(|x| x.starts_with(&series))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"));
        let v: f64 = line[series.len()..].trim().parse().unwrap();
        assert_eq!(v, l.min_loss, "{line}");
        assert!(l.packets > 0 && v < 0.01, "{line}: {} packets", l.packets);
    }
}

/// Every `canary_*` name in `text`.
fn used(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("canary_") {
        let start = i + at;
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            end += 1;
        }
        // Not a longer identifier that merely contains the prefix.
        if start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            out.insert(text[start..end].to_string());
        }
        i = end;
    }
    out
}

/// Every rule's `expr`, on one line or folded over the lines indented under it.
fn rule_exprs(rules: &str) -> Vec<String> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let lines: Vec<&str> = rules.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.trim_start().starts_with("expr:") {
            continue;
        }
        let more = lines[i + 1..]
            .iter()
            .take_while(|m| m.trim().is_empty() || indent(m) > indent(l));
        out.push(
            std::iter::once(*l)
                .chain(more.copied())
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    out
}

#[test]
fn the_alerts_and_the_dashboard_use_only_metrics_canary_exports() {
    let exported = exported();
    assert!(
        exported.contains("canary_link_loss_estimate"),
        "{exported:?}"
    );
    let root = repo_root().join("deploy");
    let rules = std::fs::read_to_string(root.join("prometheus/canary-alerts.yml")).unwrap();
    let dashboard = std::fs::read_to_string(root.join("grafana/canary-dashboard.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let exprs: Vec<String> = json["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    assert!(exprs.len() >= 8, "{exprs:?}");
    let in_rules: BTreeSet<String> = rule_exprs(&rules).iter().flat_map(|e| used(e)).collect();
    let in_dashboard: BTreeSet<String> = exprs.iter().flat_map(|e| used(e)).collect();
    for (what, names) in [("alert rules", &in_rules), ("dashboard", &in_dashboard)] {
        let unknown: Vec<&String> = names.difference(&exported).collect();
        assert!(
            unknown.is_empty(),
            "the {what} use metrics Canary does not export: {unknown:?}"
        );
    }
    // What the issue asks each to cover.
    for m in [
        "canary_link_blamed_epochs",
        "canary_switch_up",
        "canary_harvest_errors_total",
        "canary_epoch_phase_seconds",
        "canary_rules_refused_total",
    ] {
        assert!(in_rules.contains(m), "no alert on {m}");
    }
    assert!(
        exported.contains("canary_link_evidence_min_loss"),
        "{exported:?}"
    );
    for m in [
        "canary_segment_lost_packets",
        "canary_link_loss_estimate",
        "canary_epoch_phase_seconds",
        "canary_switch_up",
    ] {
        assert!(in_dashboard.contains(m), "no panel on {m}");
    }
}
