//! The epoch's work on a cluster: a real `nats-server` with JetStream on loopback, three
//! harvest workers, two join-and-localize workers and a reporter, all `canary worker`
//! processes, and `canary simulate --cluster` as the controller over a simulated k = 8 fabric
//! with faults. The reports equal the single-process run's, epoch for epoch, and stay so when a
//! harvest worker and a localizer worker are SIGKILLed mid-run and started again. Prints `SKIP`
//! and passes where `nats-server` is missing (`.ci/run` installs Debian's).

mod tofino_fabric;

use canary_testkit::{free_port, http_get, runnable, tools_lacking, wait_listening, KillOnDrop};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The two tests each run a NATS server, seven workers and a real-time run of 1 s epochs on a
/// 2-core machine; run side by side, the run's epochs overran and its lossy link went unblamed
/// (2026-11-28: in CI and again here, both runs of this binary; it passed run alone). One at a
/// time, each has the machine it was written for.
static ONE_CLUSTER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const EPOCHS: usize = 20;
const RUN: [&str; 10] = [
    "simulate",
    "--topology",
    "fattree:8",
    "--faults",
    "random:10%",
    "--seed",
    "3",
    "--epochs",
    "20",
    "-q",
];

type Proc = KillOnDrop;

/// A JetStream server on loopback: the process, its client URL and its monitoring port.
fn nats_server(dir: &Path) -> (Proc, String, u16) {
    let port = free_port();
    let monitor = free_port();
    let log = std::fs::File::create(dir.join("nats.log")).unwrap();
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string()])
        .args(["-m", &monitor.to_string(), "-sd"])
        .arg(dir.join("jetstream"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("nats-server starts");
    assert!(
        wait_listening(port, Duration::from_secs(10)),
        "nats-server did not listen"
    );
    (
        KillOnDrop(child),
        format!("nats://127.0.0.1:{port}"),
        monitor,
    )
}

/// Messages the durable consumer `name` has handed out and not seen acknowledged, as
/// nats-server's monitoring (`/jsz`) counts them; 0 while it does not answer.
fn ack_pending(monitor: u16, name: &str) -> u64 {
    let Some(body) = http_get(monitor, "/jsz?consumers=true") else {
        return 0;
    };
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let streams = v["account_details"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["stream_detail"].as_array().into_iter().flatten());
    streams
        .flat_map(|s| s["consumer_detail"].as_array().into_iter().flatten())
        .filter(|c| c["name"] == name)
        .map(|c| c["num_ack_pending"].as_u64().unwrap_or(0))
        .sum()
}

/// `canary worker` with `roles` on `partition` of run `t`, logging to `dir/<name>.log`.
fn worker(dir: &Path, url: &str, name: &str, roles: &str, partition: u32) -> Proc {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{name}.log")))
        .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_canary"));
    cmd.args(["worker", "--cluster", url, "--run", "t", "--stages", roles])
        .args(["--partition", &partition.to_string()])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log);
    if roles == "report" {
        cmd.arg("--report").arg(dir.join("epochs.jsonl"));
    }
    KillOnDrop(cmd.spawn().expect("canary worker starts"))
}

fn report_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a report line is JSON"))
        .collect()
}

/// An epoch's report without what depends on the machine's speed: its phases' times and what
/// it waited for on the cluster.
fn deterministic(mut e: Value) -> Value {
    let o = e.as_object_mut().unwrap();
    o.remove("phases_ms");
    o.remove("cluster");
    // Wall-clock time: the single process dates its epochs, the cluster's reports do not.
    o.remove("at");
    e
}

fn logs(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p: PathBuf = entry.path();
        if p.extension().is_some_and(|x| x == "log") {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            out += &format!("── {} ──\n", p.display());
            for l in tail.into_iter().rev() {
                out += l;
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn a_cluster_of_workers_reports_what_one_process_does_through_worker_kills() {
    let _one = ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if !runnable(
        "cluster",
        &tools_lacking(&["nats-server"], "Debian nats-server"),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();

    // The single process.
    let single = dir.join("single.json");
    let out = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(RUN)
        .arg("--json")
        .arg(&single)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let single: Value = serde_json::from_slice(&std::fs::read(&single).unwrap()).unwrap();

    // The cluster.
    let (_nats, url, monitor) = nats_server(dir);
    let mut harvest: Vec<Proc> = (0..3)
        .map(|h| worker(dir, &url, &format!("harvest{h}"), "harvest", h))
        .collect();
    let mut joins: Vec<Proc> = (0..2)
        .map(|j| worker(dir, &url, &format!("join-localize{j}"), "join,localize", j))
        .collect();
    let _reporter = worker(dir, &url, "reporter", "report", 0);
    let dist = dir.join("dist.json");
    let controller_log = std::fs::File::create(dir.join("controller.log")).unwrap();
    let mut controller = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_canary"))
            .args(RUN)
            .args(["--cluster", &url, "--run", "t", "--partitions", "3,2,2"])
            .arg("--json")
            .arg(&dist)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(controller_log)
            .spawn()
            .unwrap(),
    );
    let reports = dir.join("epochs.jsonl");
    let wait_for = |n: usize, what: &str| {
        let t = Instant::now();
        while report_lines(&reports).len() < n {
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "{what}: {} of {n} epochs reported\n{}",
                report_lines(&reports).len(),
                logs(dir)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    // Mid-run: harvest partition 1 dies, so every join partition holds the other harvest
    // partitions' records of the next epoch; then join-and-localize worker 0 dies holding them.
    wait_for(6, "before the kills");
    let kill = |p: &mut Proc| {
        unsafe { libc::kill(p.0.id() as i32, libc::SIGKILL) };
        let _ = p.0.wait();
    };
    kill(&mut harvest[1]);
    // Join worker 0 now holds, unacknowledged, the other harvest partitions' records of the
    // next epoch it is given: kill it only once it does (under load that can take seconds).
    let t = Instant::now();
    while ack_pending(monitor, "join-0") == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "join worker 0 was never handed records to hold\n{}",
            logs(dir)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(&mut joins[0]);
    std::thread::sleep(Duration::from_millis(500));
    harvest[1] = worker(dir, &url, "harvest1", "harvest", 1);
    joins[0] = worker(dir, &url, "join-localize0", "join,localize", 0);

    let t = Instant::now();
    let status = loop {
        if let Some(s) = controller.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(180),
            "the controller did not finish\n{}",
            logs(dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "the controller failed\n{}", logs(dir));
    wait_for(EPOCHS, "after the run");
    std::thread::sleep(Duration::from_millis(500));

    // Every epoch reported exactly once, in order.
    let lines = report_lines(&reports);
    let epochs: Vec<u64> = lines.iter().map(|l| l["epoch"].as_u64().unwrap()).collect();
    assert_eq!(
        epochs,
        (0..EPOCHS as u64).collect::<Vec<_>>(),
        "{}",
        logs(dir)
    );

    // The same reports as the single process, and the same run document.
    let want: Vec<Value> = single["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .cloned()
        .map(deterministic)
        .collect();
    let got: Vec<Value> = lines.iter().cloned().map(deterministic).collect();
    assert!(
        want.iter()
            .any(|e| !e["blamed"].as_array().unwrap().is_empty()),
        "the faults are blamed in some epoch"
    );
    for (w, g) in want.iter().zip(&got) {
        assert!(
            w == g,
            "epoch {}: the cluster's report differs\n{w}\n{g}",
            w["epoch"]
        );
    }
    let dist: Value = serde_json::from_slice(&std::fs::read(&dist).unwrap()).unwrap();
    let summary = |v: &Value| {
        let mut s = v["summary"].clone();
        s.as_object_mut().unwrap().remove("localize_ms");
        s
    };
    assert!(
        summary(&dist) == summary(&single),
        "the run's summaries differ"
    );

    // The kills made epochs late, and the reports say which stages were handed out again.
    let late: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            l["cluster"]["redelivered"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        })
        .collect();
    assert!(!late.is_empty(), "no epoch says it was late\n{}", logs(dir));
    // Bytes crossed: every epoch's registers went out and its joins came back.
    for l in &lines {
        assert!(l["cluster"]["bytes_out"].as_u64().unwrap() > 0);
        assert!(l["cluster"]["bytes_in"].as_u64().unwrap() > 0);
    }
}

/// `canary run --cluster` on switches: twenty BF Runtime model switches of a k = 4 fat-tree
/// carrying traffic in real time with 10 % loss one way on edge1_0→agg1_1 (the `tofino_run`
/// test's lab), the stages on workers. The lossy link is blamed and nothing else; the reporter
/// writes every epoch once.
// The guard is held for the whole test on purpose; the only other holder is the synchronous
// test on its own thread, so no task of this runtime waits on it.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_run_on_switches_with_its_stages_on_workers_blames_the_lossy_link() {
    let _one = ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if !runnable(
        "cluster",
        &tools_lacking(&["nats-server"], "Debian nats-server"),
    ) {
        return;
    }
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
