//! A real Prometheus (Debian `prometheus`) scraping `canary run --target tofino --metrics` over
//! twenty BF Runtime model switches with one lossy link, with `deploy/`'s alert rules loaded:
//! the blamed link's estimated loss is read back through Prometheus's HTTP API, as a Grafana
//! panel or an alert reads it. Prints `SKIP` and passes where `prometheus` is missing.

mod tofino_fabric;

use canary_testkit::{free_port, http_get as get, prometheus, runnable, tools_lacking, KillOnDrop};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tofino_fabric::TofinoLab;

/// The samples of an instant query: (labels, value).
fn query(port: u16, q: &str) -> Vec<(Value, f64)> {
    let Some(body) = get(port, &format!("/api/v1/query?query={q}")) else {
        return vec![];
    };
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    v["data"]["result"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|s| {
                    let x = s["value"][1].as_str()?.parse().ok()?;
                    Some((s["metric"].clone(), x))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_reads_the_blamed_links_loss_from_canary() {
    if !runnable(
        "prometheus_scrape",
        &tools_lacking(&["prometheus"], "Debian prometheus"),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lab = TofinoLab::start(dir.path()).await;
    let switches = dir.path().join("switches.yaml");
    std::fs::write(&switches, &lab.switches_yaml).unwrap();
    let (metrics, web, http) = (free_port(), free_port(), free_port());
    let canary = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_canary"))
            .args([
                "run",
                "--target",
                "tofino",
                "--topology",
                "fattree:4",
                "--quiet",
            ])
            .arg("--switches")
            .arg(&switches)
            .args(["--epochs", "30", "--epoch-ms", "1000", "--drain-ms", "20"])
            .args(["--alpha", "300", "--beta", "20"])
            .args(["--metrics", &format!("127.0.0.1:{metrics}")])
            .args(["--serve", &format!("127.0.0.1:{http}")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let _prometheus = prometheus(dir.path(), web, metrics, None);

    // Once the selected flows cover the fabric, the lossy link is blamed every epoch.
    let t0 = Instant::now();
    let blamed = loop {
        let got = query(web, "canary_link_loss_estimate");
        let link = got
            .iter()
            .find(|(m, _)| m["from"] == "edge1_0" && m["to"] == "agg1_1")
            .cloned();
        if let Some(l) = link {
            break l;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(40),
            "Prometheus never saw a blamed link: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let (labels, loss) = blamed;
    assert_eq!(labels["job"], "canary");
    assert!(
        (0.05..0.2).contains(&loss),
        "estimated loss {loss} of a 10 % link"
    );
    // Its 95 % interval brackets the estimate, and it says since when it has been blamed.
    let of_link = |name: &str| {
        query(web, name)
            .into_iter()
            .find(|(m, _)| m["from"] == "edge1_0" && m["to"] == "agg1_1")
            .map(|(_, v)| v)
    };
    let (lo, hi) = (
        of_link("canary_link_loss_ci95_lower").expect("lower end scraped"),
        of_link("canary_link_loss_ci95_upper").expect("upper end scraped"),
    );
    assert!(
        lo < hi && lo > 0.0 && hi < 1.0,
        "[{lo}, {hi}] around {loss}"
    );
    let since = of_link("canary_link_blamed_since_epoch").expect("since scraped");
    assert!(since >= 1.0, "blamed since epoch {since}");
    let up = query(web, "up");
    assert!(
        up.iter().any(|(m, v)| m["job"] == "canary" && *v == 1.0),
        "{up:?}"
    );
    let primary = query(web, "canary_controller_primary");
    assert_eq!(primary.first().map(|p| p.1), Some(1.0), "{primary:?}");
    let rules_loaded = get(web, "/api/v1/rules").unwrap_or_default();
    assert!(rules_loaded.contains("CanaryLinkLossy"), "{rules_loaded}");
    eprintln!(
        "Prometheus read edge1_0 -> agg1_1 at {:.3} after {:.1} s",
        loss,
        t0.elapsed().as_secs_f64()
    );
    // The daemon's live page has the same epochs, the link blamed in the latest.
    let epochs: Value = serde_json::from_str(&get(http, "/api/epochs").unwrap()).unwrap();
    let latest = epochs.as_array().unwrap().last().unwrap();
    assert!(
        latest["blamed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["link"][0] == "edge1_0" && b["link"][1] == "agg1_1"),
        "{latest}"
    );
    assert!(get(http, "/").unwrap().contains("<title>Canary</title>"));
    drop(canary);
    assert_eq!(lab.violations(), Vec::<String>::new());
}
