//! NATS servers SIGKILLed mid-run under a three-replica stream: the reports are the single
//! process's, each epoch once and in order.

use super::nats_cluster::NatsCluster;
use super::*;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// When each report line appeared in the reporter's file, watched from a thread.
struct Arrivals {
    times: Arc<Mutex<Vec<Instant>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Arrivals {
    fn watch(path: PathBuf) -> Self {
        let times = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (times.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let n = std::fs::read_to_string(&path)
                    .unwrap_or_default()
                    .lines()
                    .count();
                let mut t = t.lock().unwrap();
                while t.len() < n {
                    t.push(Instant::now());
                }
                drop(t);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Arrivals {
            times,
            stop,
            thread: Some(thread),
        }
    }

    fn count(&self) -> usize {
        self.times.lock().unwrap().len()
    }

    /// How the run went past `at`: the wait from it to the next report, and the longest gap
    /// between consecutive reports from the one before it to `until`.
    fn stall(&self, at: Instant, until: Instant) -> (f64, f64) {
        let t = self.times.lock().unwrap();
        let next = t.iter().find(|&&x| x > at).map(|&x| (x - at).as_secs_f64());
        let from = t.iter().rposition(|&x| x <= at).unwrap_or(0);
        let longest = t[from..]
            .windows(2)
            .take_while(|w| w[1] <= until)
            .map(|w| (w[1] - w[0]).as_secs_f64())
            .fold(0.0, f64::max);
        (next.unwrap_or(f64::NAN), longest)
    }

    /// The median gap between consecutive reports.
    fn median_gap(&self) -> f64 {
        let t = self.times.lock().unwrap();
        let mut gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        gaps.sort_by(f64::total_cmp);
        gaps.get(gaps.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

impl Drop for Arrivals {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One server's death and return: which, when, and how the run and the server came through.
pub(super) struct Kill {
    pub(super) what: String,
    pub(super) reported: usize,
    pub(super) at: Instant,
    pub(super) current_after: f64,
}

/// SIGKILLs server `i`, starts it again (same name and store) after a moment and waits until it
/// is current again in every group it is in.
pub(super) fn kill_and_restart(
    nats: &mut NatsCluster,
    i: usize,
    what: &str,
    reported: usize,
) -> Kill {
    let at = Instant::now();
    nats.kill(i);
    std::thread::sleep(Duration::from_millis(1500));
    nats.restart(i);
    let restarted = Instant::now();
    while !nats.current(i) {
        assert!(
            restarted.elapsed() < Duration::from_secs(120),
            "NATS server {} never came back current after its restart",
            nats.nodes[i].name
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Kill {
        what: format!("{} ({what})", nats.nodes[i].name),
        reported,
        at,
        current_after: restarted.elapsed().as_secs_f64(),
    }
}

#[test]
fn reports_stay_the_single_process_s_through_a_nats_server_and_the_meta_leader_killed() {
    let Some(_one) = cluster_test() else { return };
    let seed = std::env::var("CANARY_CLUSTER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let said = format!("seed {seed} (CANARY_CLUSTER_SEED={seed} repeats the kills' points)");
    eprintln!("node_kills: {said}");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let single = single_run(dir);

    let mut nats = NatsCluster::start(dir);
    let urls = nats.urls();
    let (_harvest, _joins) = stage_workers(dir, &urls);
    let _reporter = worker(dir, &urls, "reporter", "report", 0);
    let mut controller = controller(dir, &urls, &["--stream-replicas", "3"]);
    let arrivals = Arrivals::watch(dir.join("epochs.jsonl"));

    // A server that is not the meta leader (the stream's leader if it is not), at a seeded
    // point: after 2 to 5 epochs and up to a second.
    let first = rng.random_range(2..=5);
    wait_for_reports(dir, first, "before the first kill");
    std::thread::sleep(Duration::from_millis(rng.random_range(0..1000)));
    let meta = nats.meta_leader().expect("a meta leader");
    let (victim, not_meta) = match nats.stream_leader() {
        Some(s) if s != meta => (s, "not the meta leader; the stream's leader"),
        _ => ((meta + rng.random_range(1..=2)) % 3, "not the meta leader"),
    };
    let one = kill_and_restart(&mut nats, victim, not_meta, arrivals.count());

    // Then the meta leader, one to three epochs on.
    let second = (arrivals.count() + rng.random_range(1..=3)).min(EPOCHS - 2);
    wait_for_reports(dir, second, "before the meta leader's kill");
    std::thread::sleep(Duration::from_millis(rng.random_range(0..1000)));
    let meta = nats.meta_leader().expect("a meta leader");
    let two = kill_and_restart(&mut nats, meta, "the meta leader", arrivals.count());

    wait_finished(&mut controller, dir);
    let lines = same_as_single(dir, &single, &said);
    let median = arrivals.median_gap();
    let ends = [two.at, two.at + Duration::from_secs(30)];
    for (k, until) in [&one, &two].into_iter().zip(ends) {
        // Killed once the run was over, it would have shown nothing.
        assert!(
            k.reported < EPOCHS,
            "{}: killed after the last epoch was reported ({said})",
            k.what
        );
        let (next, gap) = arrivals.stall(k.at, until);
        eprintln!(
            "node_kills: killed {} after {} epochs reported: the reporter's next line {next:.2} s \
             later, its longest gap from the kill to the next (or 30 s) {gap:.2} s (median \
             {median:.2} s); current again {:.1} s after its restart",
            k.what, k.reported, k.current_after
        );
    }
    // What the controller waited for on the cluster, epoch by epoch: the kills' stalls.
    let waited = |l: &Value| {
        let c = &l["cluster"];
        c["detect_ms"].as_f64().unwrap_or(0.0) + c["localize_ms"].as_f64().unwrap_or(0.0)
    };
    let mut all: Vec<f64> = lines.iter().map(waited).collect();
    all.sort_by(f64::total_cmp);
    let typical = all[all.len() / 2];
    // An epoch the kills held up says why: the late ones say so.
    let mut late_epochs = 0;
    for l in &lines {
        let late = l["cluster"]["redelivered"].as_array();
        // Before the first kill (the first epoch waits for the consumers to be made) nothing
        // is late.
        let slow = l["epoch"].as_u64().unwrap() as usize >= one.reported
            && waited(l) > 3.0 * typical + 1000.0;
        if slow || late.is_some() {
            eprintln!(
                "node_kills: epoch {} waited {:.0} ms on the cluster (typical {typical:.0} ms): \
                 {}",
                l["epoch"],
                waited(l),
                late.map_or("nothing said late".to_string(), |r| format!("{r:?}"))
            );
        }
        assert!(
            !slow || late.is_some_and(|r| !r.is_empty()),
            "epoch {} waited {:.0} ms on the cluster (typical {typical:.0} ms) and does not say \
             why ({said})",
            l["epoch"],
            waited(l)
        );
        late_epochs += usize::from(late.is_some());
    }
    assert!(
        late_epochs >= 1,
        "two NATS servers killed mid-run and no epoch says it was late ({said})"
    );
}
