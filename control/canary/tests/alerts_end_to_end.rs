//! Alerts end to end, with the real parts: `canary run --target tofino --metrics --serve` over
//! twenty BF Runtime model switches with one lossy link, a real Prometheus (Debian
//! `prometheus`) with `deploy/`'s alert rules, a real Alertmanager (Debian
//! `prometheus-alertmanager`) and a webhook receiver of the test's own. The lossy link's alert
//! arrives at the receiver with its incident and its place on the page; the link is repaired
//! and the alert's resolution arrives too.

mod tofino_fabric;

use canary_controller::setup::load_topology;
use canary_core::fault::LinkLoss;
use canary_testkit::{free_port, prometheus, repo_root, runnable, tools_lacking, KillOnDrop};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tofino_fabric::TofinoLab;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// A webhook receiver: each POST's JSON body, as Alertmanager sends it.
async fn receiver() -> (u16, mpsc::UnboundedReceiver<Value>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // The headers, then as much body as Content-Length says.
                let body_at = loop {
                    let Ok(n) = s.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..body_at]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < body_at + len {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
                if let Ok(v) = serde_json::from_slice(&buf[body_at..body_at + len]) {
                    let _ = tx.send(v);
                }
            });
        }
    });
    (port, rx)
}

/// The first CanaryLinkLossy alert of `status` for edge1_0→agg1_1 the receiver gets.
async fn wait_for(
    rx: &mut mpsc::UnboundedReceiver<Value>,
    status: &str,
    within: Duration,
) -> Value {
    let until = Instant::now() + within;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(Some(msg)) = tokio::time::timeout(left, rx.recv()).await else {
            panic!("no {status} CanaryLinkLossy alert for edge1_0→agg1_1 within {within:?}");
        };
        let found = msg["alerts"].as_array().and_then(|alerts| {
            alerts
                .iter()
                .find(|a| {
                    a["status"] == status
                        && a["labels"]["alertname"] == "CanaryLinkLossy"
                        && a["labels"]["from"] == "edge1_0"
                        && a["labels"]["to"] == "agg1_1"
                })
                .cloned()
        });
        if let Some(a) = found {
            return a;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lossy_links_alert_arrives_with_its_incident_and_resolves_after_the_all_clear() {
    let lacks = tools_lacking(
        &["prometheus", "prometheus-alertmanager"],
        "Debian prometheus, prometheus-alertmanager",
    );
    if !runnable("alerts_end_to_end", &lacks) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lab = TofinoLab::start(dir.path()).await;
    let switches = dir.path().join("switches.yaml");
    std::fs::write(&switches, &lab.switches_yaml).unwrap();
    let report = dir.path().join("report.jsonl");
    let (metrics, page, web, am) = (free_port(), free_port(), free_port(), free_port());
    let _canary = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_canary"))
            .args(["run", "--target", "tofino", "--topology", "fattree:4"])
            .arg("--switches")
            .arg(&switches)
            .arg("--report")
            .arg(&report)
            .args(["--epochs", "150", "--epoch-ms", "1000", "--drain-ms", "20"])
            .args(["--alpha", "300", "--beta", "20", "--quiet"])
            .args(["--metrics", &format!("127.0.0.1:{metrics}")])
            .args(["--serve", &format!("127.0.0.1:{page}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    let (hook, mut alerts) = receiver().await;
    // The shipped Alertmanager configuration, its webhook pointed here and its waits shortened.
    let shipped =
        std::fs::read_to_string(repo_root().join("deploy/alertmanager/alertmanager.example.yml"))
            .unwrap();
    let mut am_text = shipped.clone();
    for (from, to) in [
        ("group_wait: 30s", "group_wait: 1s".to_string()),
        ("group_interval: 5m", "group_interval: 1s".to_string()),
        (
            "url: http://127.0.0.1:5001/canary",
            format!("url: http://127.0.0.1:{hook}/"),
        ),
    ] {
        assert!(am_text.contains(from), "the shipped file has `{from}`");
        am_text = am_text.replace(from, &to);
    }
    let am_config = dir.path().join("alertmanager.yml");
    std::fs::write(&am_config, am_text).unwrap();
    let _alertmanager = KillOnDrop(
        Command::new("prometheus-alertmanager")
            .arg(format!("--config.file={}", am_config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("am").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{am}"))
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let _prometheus = prometheus(dir.path(), web, metrics, Some(am));

    // Blamed ten epochs in a row: the alert fires, with the link's incident and its page.
    let firing = wait_for(&mut alerts, "firing", Duration::from_secs(100)).await;
    let incident = firing["labels"]["incident"].as_str().unwrap_or_default();
    assert!(
        !incident.is_empty(),
        "the alert names its incident: {firing}"
    );
    assert_eq!(
        firing["annotations"]["page"],
        format!("http://127.0.0.1:{page}/#incident={incident}"),
        "{firing}"
    );
    assert!(
        firing["annotations"]["description"]
            .as_str()
            .is_some_and(|d| d.contains(&format!("canary incidents show {incident}"))),
        "{firing}"
    );
    // The incident is the one Canary keeps for that link.
    let db = dir.path().join("report.incidents.sqlite");
    let out = canary_testkit::succeeded(
        Command::new(env!("CARGO_BIN_EXE_canary"))
            .arg("incidents")
            .arg(&db)
            .arg("--json"),
    );
    let kept: Value = serde_json::from_slice(&out.stdout).unwrap();
    let of_link = kept
        .as_array()
        .unwrap()
        .iter()
        .find(|i| {
            i["id"]
                .as_u64()
                .is_some_and(|id| id.to_string() == incident)
        })
        .unwrap_or_else(|| panic!("incident {incident} not in {db:?}: {kept}"));
    assert_eq!(
        of_link["subject"]["link"],
        serde_json::json!(["edge1_0", "agg1_1"]),
        "{of_link}"
    );

    // While the link loses, the alert stays firing: nothing resolved it in between.
    while let Ok(msg) = alerts.try_recv() {
        let early = msg["alerts"].as_array().into_iter().flatten().find(|a| {
            a["status"] == "resolved"
                && a["labels"]["from"] == "edge1_0"
                && a["labels"]["to"] == "agg1_1"
        });
        assert!(
            early.is_none(),
            "resolved while the link still lost packets: {msg}"
        );
    }

    // The link repaired: once Canary gives the all-clear, the alert resolves.
    let links = load_topology("fattree:4", None).unwrap().links.len();
    let healthy = vec![LinkLoss { p: 0.0, flows: 1.0 }; links];
    let repaired_after = epochs(&report)
        .last()
        .map_or(0, |e| e["epoch"].as_u64().unwrap());
    lab.plane.lock().unwrap().set_losses(&healthy);
    let repaired = Instant::now();
    let resolved = wait_for(&mut alerts, "resolved", Duration::from_secs(60)).await;
    assert_eq!(resolved["labels"]["incident"], incident, "{resolved}");
    let all_clear = epochs(&report)
        .into_iter()
        .find(|e| {
            e["cleared"].as_array().into_iter().flatten().any(|c| {
                c["link"] == serde_json::json!(["edge1_0", "agg1_1"])
                    && c.get("corrected_to").is_none()
            })
        })
        .map(|e| e["epoch"].as_u64().unwrap())
        .expect("the report has the link's all-clear");
    assert!(
        all_clear > repaired_after,
        "all-clear in epoch {all_clear}, before the repair after epoch {repaired_after}"
    );
    eprintln!(
        "alert firing; repaired after epoch {repaired_after}, all-clear in epoch {all_clear}, \
         resolved at the webhook {:.1} s after the repair",
        repaired.elapsed().as_secs_f64()
    );
}

/// The epochs of the daemon's report file so far.
fn epochs(report: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(report)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
