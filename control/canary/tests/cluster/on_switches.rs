//! `canary run --cluster` on model switches.

use super::*;

/// `canary run --cluster` on switches: twenty BF Runtime model switches of a k = 4 fat-tree
/// carrying traffic in real time with 10 % loss one way on edge1_0→agg1_1 (the `tofino_run`
/// test's lab), the stages on workers. The lossy link is blamed and nothing else; the reporter
/// writes every epoch once.
// The guard is held for the whole test on purpose; the only other holders are the synchronous
// tests on their own threads, so no task of this runtime waits on it.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_run_on_switches_with_its_stages_on_workers_blames_the_lossy_link() {
    let Some(_one) = cluster_test() else { return };
    const RUN_EPOCHS: usize = 10;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let lab = tofino_fabric::TofinoLab::start(dir).await;
    let switches = dir.join("switches.yaml");
    std::fs::write(&switches, &lab.switches_yaml).unwrap();
    let (_nats, url, _) = nats_server(dir);
    let _workers: Vec<Proc> = (0..3)
        .map(|h| worker(dir, &url, &format!("harvest{h}"), "harvest", h))
        .chain((0..2).map(|j| worker(dir, &url, &format!("jl{j}"), "join,localize", j)))
        .chain(std::iter::once(worker(dir, &url, "reporter", "report", 0)))
        .collect();
    let json = dir.join("run.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_canary"));
    cmd.args(["run", "--target", "tofino", "--topology", "fattree:4"])
        .arg("--switches")
        .arg(&switches)
        .args(["--epochs", &RUN_EPOCHS.to_string(), "--epoch-ms", "1000"])
        .args(["--drain-ms", "20", "--alpha", "300", "--beta", "20", "-q"])
        .arg("--faults")
        .arg(dir.join("faults.yaml"))
        .arg("--json")
        .arg(&json)
        .args(["--cluster", &url, "--run", "t", "--partitions", "3,2,2"]);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "canary run --cluster failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs(dir)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let blamed: Vec<String> = canary_testkit::blamed_links(&v["summary"]["blamed"]);
    assert_eq!(blamed, vec!["edge1_0->agg1_1".to_string()], "{}", logs(dir));
    let reports = dir.join("epochs.jsonl");
    let t = Instant::now();
    while report_lines(&reports).len() < RUN_EPOCHS && t.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let epochs: Vec<u64> = report_lines(&reports)
        .iter()
        .map(|l| l["epoch"].as_u64().unwrap())
        .collect();
    assert_eq!(
        epochs,
        (0..RUN_EPOCHS as u64).collect::<Vec<_>>(),
        "{}",
        logs(dir)
    );
    // Every epoch the daemon reported went through the cluster's stages.
    for e in v["epochs"].as_array().unwrap() {
        assert!(e["cluster"]["bytes_out"].as_u64().unwrap() > 0, "{e}");
    }
}
