//! `canary overhead` end to end, small: Fig. 6 and Table II with 10 trials (the done-when
//! relation: Canary needs at most 5 % of FermatSketch's memory at loss 1e-2), and Fig. 7 and 11
//! on a short synthetic trace and on a pcap file.

use canary_testkit::{classic_pcap, eth_ipv4_tcp};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn canary(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .arg("overhead")
        .args(args)
        .output()
        .expect("canary runs");
    assert!(
        out.status.success(),
        "canary overhead {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn memory(row: &Value, system: &str) -> f64 {
    row[system]["memory_bytes"]
        .as_f64()
        .unwrap_or_else(|| panic!("{system} has a memory at loss {}", row["loss"]))
}

#[test]
fn fig6_and_table2_show_canary_far_below_the_sketches() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("o.json");
    let text = canary(&[
        "--only",
        "fig6,table2",
        "--trials",
        "10",
        "--losses",
        "1e-2",
        "--json",
        json.to_str().unwrap(),
        "--svg-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        text.contains("Fig. 6") && text.contains("Table II"),
        "{text}"
    );
    let v = read_json(&json);
    assert!(v.get("fig7").is_none() && v.get("fig11").is_none());
    let rows = v["fig6"]["rows"].as_array().unwrap();
    let losses: Vec<f64> = rows.iter().map(|r| r["loss"].as_f64().unwrap()).collect();
    assert_eq!(
        losses,
        vec![1e-3, 1e-2, 1e-1],
        "Table II adds its loss rates"
    );
    for r in rows {
        for s in ["flowradar", "lossradar", "fermat", "canary"] {
            assert!(r[s]["success_rate"].as_f64().unwrap() >= 0.99);
            assert!(r[s]["decode_us"].as_f64().unwrap() > 0.0);
        }
        assert!(r["canary_extra"]["detection_rate"].as_f64().unwrap() >= 0.9);
    }
    // The paper's shape: FlowRadar flat, LossRadar and FermatSketch growing with the loss
    // rate, Canary not growing.
    let col = |s| rows.iter().map(|r| memory(r, s)).collect::<Vec<_>>();
    let (fr, lr, fs, ca) = (
        col("flowradar"),
        col("lossradar"),
        col("fermat"),
        col("canary"),
    );
    assert!(fr.iter().all(|&m| (m / fr[0] - 1.0).abs() < 0.15), "{fr:?}");
    assert!(lr[0] < lr[1] && lr[1] < lr[2], "{lr:?}");
    assert!(fs[0] < fs[1] && fs[1] < fs[2], "{fs:?}");
    assert!(ca[2] <= ca[0], "{ca:?}");
    // Done-when: at 1e-2 Canary needs at most 5 % of FermatSketch's memory (paper: 2.3 %).
    let ratio = rows[1]["canary_over_fermat"].as_f64().unwrap();
    assert!((ratio - ca[1] / fs[1]).abs() < 1e-12);
    assert!(ratio <= 0.05, "Canary / FermatSketch at 1e-2 = {ratio}");

    let t = &v["table2"];
    let names: Vec<&str> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["system"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "FlowRadar",
            "LossRadar",
            "FermatSketch",
            "Canary (bottom)",
            "Canary (top+bottom)"
        ]
    );
    for r in t["rows"].as_array().unwrap() {
        let switches = r["switches"].as_f64().unwrap();
        assert!([80.0, 32.0, 48.0].contains(&switches));
        let kb = r["kb"].as_array().unwrap();
        assert_eq!(kb.len(), 3);
        assert_eq!(r["paper_kb"].as_array().unwrap().len(), 3);
        // Network-wide = per-switch memory of Fig. 6 times the switches hosting it.
        let sys = match r["system"].as_str().unwrap() {
            "FlowRadar" => "flowradar",
            "LossRadar" => "lossradar",
            "FermatSketch" => "fermat",
            _ => "canary",
        };
        for (i, row) in rows.iter().enumerate() {
            let want = memory(row, sys) * switches / 1024.0;
            assert!((kb[i].as_f64().unwrap() - want).abs() < 1e-6);
        }
    }
    let svg = std::fs::read_to_string(dir.path().join("fig6.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("FermatSketch"));
}

#[test]
fn fig7_and_fig11_run_on_a_synthetic_trace_and_on_a_pcap() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("o.json");
    canary(&[
        "--only",
        "fig7,fig11",
        "--epochs",
        "20",
        "--json",
        json.to_str().unwrap(),
        "--svg-dir",
        dir.path().to_str().unwrap(),
    ]);
    let v = read_json(&json);
    assert!(v.get("fig6").is_none());
    let series = v["fig7"]["series"].as_array().unwrap();
    let etas: Vec<u64> = series.iter().map(|s| s["eta"].as_u64().unwrap()).collect();
    assert_eq!(etas, [0, 8, 16, 32]);
    for s in series {
        let epochs = s["epochs"].as_array().unwrap();
        assert_eq!(epochs.len(), 20);
        let rules: u64 = epochs
            .iter()
            .map(|e| e["rules_installed"].as_u64().unwrap())
            .sum();
        assert_eq!(rules, s["total_rules"].as_u64().unwrap());
        assert!(rules > 0, "selection installed rules");
        let counted = epochs
            .iter()
            .filter(|e| e["packets_counted"].as_u64().unwrap() > 0)
            .count();
        assert!(counted >= 15, "η {}: counted in {counted} epochs", s["eta"]);
    }
    let points = v["fig11"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for p in points {
        let (c, h) = (
            p["canary_bytes"].as_f64().unwrap(),
            p["hashpipe_bytes"].as_f64().unwrap(),
        );
        assert!((c / h - 1.0).abs() < 0.01, "equal memory: {c} vs {h}");
        for t in p["topk"].as_array().unwrap() {
            for m in ["canary", "hashpipe"] {
                let f1 = t[m].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&f1));
            }
        }
    }
    for f in ["fig7.svg", "fig11.svg"] {
        assert!(std::fs::read_to_string(dir.path().join(f))
            .unwrap()
            .starts_with("<svg"));
    }

    // A pcap: 30 flows, flow i sends 10 + 5i packets over 2 s.
    let mut pkts = Vec::new();
    for i in 0..30u32 {
        let n = 10 + 5 * i as u64;
        for j in 0..n {
            let frame = eth_ipv4_tcp(0x0a00_0000 + i, 0x0a00_00ff, 1000 + i as u16, 80);
            pkts.push((j * 2_000_000 / n, frame));
        }
    }
    pkts.sort();
    let file = dir.path().join("t.pcap");
    std::fs::write(&file, classic_pcap(&pkts)).unwrap();
    let json = dir.path().join("p.json");
    canary(&[
        "--only",
        "fig11",
        "--epochs",
        "20",
        "--pcap",
        file.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    assert_eq!(v["fig11"]["flows"].as_u64().unwrap(), 30);
    assert!(v["fig11"]["trace"].as_str().unwrap().contains("t.pcap"));
    let top10 = &v["fig11"]["points"][0]["topk"][0];
    assert_eq!(top10["k"].as_u64().unwrap(), 10);
    // A light trace fits in either structure: both find the 10 largest flows exactly.
    assert_eq!(top10["hashpipe"].as_f64().unwrap(), 1.0);
}

/// On a terminal, a long part says which step it is on (issue 37: `--only fig6` was silent for
/// 85 s); off a terminal, standard error stays empty, so logs get only the figures. The
/// terminal is a real pseudo-terminal, from util-linux's `script`.
#[test]
fn a_long_part_shows_its_step_on_a_terminal_and_nothing_off_one() {
    // Each step takes about 0.4 s in a release build: long enough for each message to be drawn.
    let args = "overhead --only fig6 --trials 2 --losses 1e-2,1e-1 --flows 5000";
    let off = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args.split(' '))
        .output()
        .expect("canary runs");
    assert!(off.status.success());
    assert!(
        off.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&off.stderr)
    );
    let lacks = canary_testkit::tools_lacking(&["script"], "Debian util-linux");
    if !canary_testkit::runnable("overhead_cli, on a terminal", &lacks) {
        return;
    }
    let line = format!("{} {args}", env!("CARGO_BIN_EXE_canary"));
    let on = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .expect("script runs");
    assert!(
        on.status.success(),
        "{}",
        String::from_utf8_lossy(&on.stdout)
    );
    let seen = String::from_utf8_lossy(&on.stdout);
    for step in ["Fig. 6: loss 0.01, 1 of 2", "Fig. 6: loss 0.1, 2 of 2"] {
        assert!(seen.contains(step), "no {step:?} on the terminal:\n{seen}");
    }
}
