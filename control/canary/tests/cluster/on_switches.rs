//! `canary run --cluster` on model switches.

use super::*;

/// `canary run --cluster` over the model switches of `switches`, `epochs` 1-second epochs, its
/// run document to `json`; `cluster` says which NATS servers and how many stream copies.
fn run_on_model_switches(
    dir: &Path,
    switches: &Path,
    epochs: usize,
    json: &Path,
    cluster: &[&str],
) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_canary"));
    cmd.args(["run", "--target", "tofino", "--topology", "fattree:4"])
        .arg("--switches")
        .arg(switches)
        .args(["--epochs", &epochs.to_string(), "--epoch-ms", "1000"])
        .args(["--drain-ms", "20", "--alpha", "300", "--beta", "20", "-q"])
        .arg("--faults")
        .arg(dir.join("faults.yaml"))
        .arg("--json")
        .arg(json)
        .args(cluster)
        .args(["--run", "t", "--partitions", "3,2,2"]);
    cmd
}

/// The run succeeded, blamed the lossy link and nothing else, and the reporter wrote each of its
/// `epochs` once and in order: its run document.
async fn reported_once_blaming_the_lossy_link(
    out: &std::process::Output,
    dir: &Path,
    json: &Path,
    epochs: usize,
) -> Value {
    assert!(
        out.status.success(),
        "canary run --cluster failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs(dir)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    let blamed: Vec<String> = canary_testkit::blamed_links(&v["summary"]["blamed"]);
    assert_eq!(blamed, vec!["edge1_0->agg1_1".to_string()], "{}", logs(dir));
    let reports = dir.join("epochs.jsonl");
    let t = Instant::now();
    while report_lines(&reports).len() < epochs && t.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let written: Vec<u64> = report_lines(&reports)
        .iter()
        .map(|l| l["epoch"].as_u64().unwrap())
        .collect();
    assert_eq!(
        written,
        (0..epochs as u64).collect::<Vec<_>>(),
        "{}",
        logs(dir)
    );
    v
}

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
    let (_harvest, _joins) = stage_workers(dir, &url);
    let _reporter = worker(dir, &url, "reporter", "report", 0);
    let json = dir.join("run.json");
    let mut cmd = run_on_model_switches(dir, &switches, RUN_EPOCHS, &json, &["--cluster", &url]);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    let v = reported_once_blaming_the_lossy_link(&out, dir, &json, RUN_EPOCHS).await;
    // Every epoch the daemon reported went through the cluster's stages.
    let (mut out_b, mut in_b) = (0, 0);
    for e in v["epochs"].as_array().unwrap() {
        assert!(e["cluster"]["bytes_out"].as_u64().unwrap() > 0, "{e}");
        out_b += e["cluster"]["bytes_out"].as_u64().unwrap();
        in_b += e["cluster"]["bytes_in"].as_u64().unwrap();
    }
    eprintln!(
        "on_switches: the controller published {} B and took {} B on the cluster an epoch",
        out_b / RUN_EPOCHS as u64,
        in_b / RUN_EPOCHS as u64
    );
    // No one process read every switch: the controller (BF Runtime client 1) touched no
    // switch's registers; each monitor's were read and synced by its own harvest worker
    // (client 1000 + partition, partition = switch mod 3) and by nobody else.
    let topo = canary_controller::setup::load_topology("fattree:4", None).unwrap();
    for (i, sw) in lab.switches.iter().enumerate() {
        let by_client = sw.register_requests();
        let name = &topo.switches[i].name;
        if !topo.switches[i].monitor {
            assert!(by_client.is_empty(), "{name}: {by_client:?}");
            continue;
        }
        let own = 1000 + (i as u32 % 3);
        let clients: Vec<u32> = by_client.keys().copied().collect();
        assert_eq!(
            clients,
            vec![own],
            "{name}: register requests by client {by_client:?}"
        );
        // A Sync and a Read a harvest, every epoch.
        assert!(
            by_client[&own] >= 2 * RUN_EPOCHS as u64,
            "{name}: {by_client:?}"
        );
    }
}

/// The same run on a cluster of three NATS servers, the run's stream on all three: one server,
/// then the JetStream meta leader, SIGKILLed while the switches' epochs go on in real time and
/// started again. Every epoch is reported once and in order, the lossy link is blamed and
/// nothing else, and an epoch the kills held up says why.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_run_on_switches_goes_on_through_a_nats_server_and_the_meta_leader_killed() {
    use super::nats_cluster::NatsCluster;
    use super::node_kills::kill_and_restart;
    let Some(_one) = cluster_test() else { return };
    const RUN_EPOCHS: usize = 14;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let lab = tofino_fabric::TofinoLab::start(&dir).await;
    let switches = dir.join("switches.yaml");
    std::fs::write(&switches, &lab.switches_yaml).unwrap();
    let mut nats = NatsCluster::start(&dir);
    let urls = nats.urls();
    let (_harvest, _joins) = stage_workers(&dir, &urls);
    let _reporter = worker(&dir, &urls, "reporter", "report", 0);
    let json = dir.join("run.json");
    let mut cmd = run_on_model_switches(
        &dir,
        &switches,
        RUN_EPOCHS,
        &json,
        &["--cluster", &urls, "--stream-replicas", "3"],
    );
    let run = tokio::task::spawn_blocking(move || cmd.output());
    let kills_dir = dir.clone();
    // Each kill at a point of an epoch drawn from the clock, printed so a failure can be replayed.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("on_switches: kill points drawn with seed {seed}");
    let kills = tokio::task::spawn_blocking(move || {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let dir = kills_dir;
        wait_for_reports(&dir, 3, "before the first kill");
        std::thread::sleep(Duration::from_millis(rng.random_range(0..1000)));
        let meta = nats.meta_leader().expect("a meta leader");
        let one = kill_and_restart(&mut nats, (meta + 1) % 3, "not the meta leader", 3);
        let n = report_lines(&dir.join("epochs.jsonl")).len();
        wait_for_reports(&dir, n + 2, "before the meta leader's kill");
        std::thread::sleep(Duration::from_millis(rng.random_range(0..1000)));
        let meta = nats.meta_leader().expect("a meta leader");
        let two = kill_and_restart(&mut nats, meta, "the meta leader", n + 2);
        (nats, [one, two])
    });
    let out = run.await.unwrap().unwrap();
    let (_nats, kills) = kills.await.unwrap();
    assert!(
        out.status.success(),
        "canary run --cluster failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs(&dir)
    );
    for k in &kills {
        assert!(k.reported < RUN_EPOCHS, "{}: killed after the run", k.what);
        eprintln!(
            "on_switches: killed {} after {} epochs reported; current again {:.1} s after its \
             restart",
            k.what, k.reported, k.current_after
        );
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let blamed: Vec<String> = canary_testkit::blamed_links(&v["summary"]["blamed"]);
    assert_eq!(
        blamed,
        vec!["edge1_0->agg1_1".to_string()],
        "{}",
        logs(&dir)
    );
    let reports = dir.join("epochs.jsonl");
    let t = Instant::now();
    while report_lines(&reports).len() < RUN_EPOCHS && t.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let lines = report_lines(&reports);
    let epochs: Vec<u64> = lines.iter().map(|l| l["epoch"].as_u64().unwrap()).collect();
    assert_eq!(
        epochs,
        (0..RUN_EPOCHS as u64).collect::<Vec<_>>(),
        "every epoch once and in order\n{}",
        logs(&dir)
    );
    // What the controller waited for on the cluster: an epoch the kills held up says why.
    let waited = |l: &Value| {
        let c = &l["cluster"];
        c["detect_ms"].as_f64().unwrap_or(0.0) + c["localize_ms"].as_f64().unwrap_or(0.0)
    };
    let mut all: Vec<f64> = v["epochs"].as_array().unwrap().iter().map(waited).collect();
    all.sort_by(f64::total_cmp);
    let typical = all[all.len() / 2];
    for e in v["epochs"].as_array().unwrap() {
        let late = e["cluster"]["redelivered"].as_array();
        let slow = e["epoch"].as_u64().unwrap() as usize >= kills[0].reported
            && waited(e) > 3.0 * typical + 1000.0;
        if slow || late.is_some() {
            eprintln!(
                "on_switches: epoch {} waited {:.0} ms on the cluster (typical {typical:.0} ms): {}",
                e["epoch"],
                waited(e),
                late.map_or("nothing said late".to_string(), |r| format!("{r:?}"))
            );
        }
        assert!(
            !slow || late.is_some_and(|r| !r.is_empty()),
            "epoch {} waited {:.0} ms on the cluster and does not say why",
            e["epoch"],
            waited(e)
        );
    }
}

/// The same run with harvest worker 1 frozen until JetStream has handed it the read of an
/// epoch, then SIGKILLed and started again: the read goes to the new worker as a repeat, which
/// reads nothing (the registers may already count a later epoch), so partition 1's switches
/// sit that epoch out and the epoch says why. Every epoch is reported once and in order, the
/// lossy link is blamed and nothing else.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harvest_worker_killed_holding_its_switches_read_costs_them_that_epoch_only() {
    let Some(_one) = cluster_test() else { return };
    const RUN_EPOCHS: usize = 10;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let lab = tofino_fabric::TofinoLab::start(&dir).await;
    let switches = dir.join("switches.yaml");
    std::fs::write(&switches, &lab.switches_yaml).unwrap();
    let (_nats, url, monitor) = nats_server(&dir);
    let (mut harvest, _joins) = stage_workers(&dir, &url);
    let _reporter = worker(&dir, &url, "reporter", "report", 0);
    let json = dir.join("run.json");
    let mut cmd = run_on_model_switches(&dir, &switches, RUN_EPOCHS, &json, &["--cluster", &url]);
    let run = tokio::task::spawn_blocking(move || cmd.output());
    let kill_dir = dir.clone();
    let kill_url = url.clone();
    let killed_after = tokio::task::spawn_blocking(move || {
        let dir = kill_dir;
        wait_for_reports(&dir, 3, "before the kill");
        let pid = harvest[1].0.id().to_string();
        let signal = |s: &str| {
            assert!(Command::new("kill")
                .args([s, &pid])
                .status()
                .unwrap()
                .success());
        };
        // Frozen, it cannot ack what it is handed: the next epoch's read stays with it.
        signal("-STOP");
        let t = Instant::now();
        while ack_pending(monitor, "harvest-1") == 0 {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "harvest worker 1 was never handed a read\n{}",
                logs(&dir)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let reported = report_lines(&dir.join("epochs.jsonl")).len();
        sigkill(&mut harvest[1]);
        std::thread::sleep(Duration::from_millis(1500));
        harvest[1] = worker(&dir, &kill_url, "harvest1", "harvest", 1);
        (harvest, reported)
    });
    let out = run.await.unwrap().unwrap();
    let (_harvest, killed_after) = killed_after.await.unwrap();
    assert!(killed_after < RUN_EPOCHS, "killed after the run");
    let v = reported_once_blaming_the_lossy_link(&out, &dir, &json, RUN_EPOCHS).await;
    // The epoch whose read was handed out again says so, and sat its switches out.
    let held: Vec<&Value> = v["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["cluster"]["redelivered"].as_array().is_some_and(|r| {
                r.iter().any(|x| {
                    x.as_str()
                        .unwrap()
                        .contains("switch reads of harvest partition 1")
                })
            })
        })
        .collect();
    assert_eq!(
        held.len(),
        1,
        "one epoch's read was handed out again\n{}",
        logs(&dir)
    );
    let text = held[0].to_string();
    assert!(
        text.contains("handed out again (a harvest worker was lost)"),
        "its switches sit the epoch out, saying why: {text}"
    );
}
