//! Workers SIGKILLed mid-run on one NATS server: the reports are the single process's.

use super::*;

#[test]
fn a_cluster_of_workers_reports_what_one_process_does_through_worker_kills() {
    let Some(_one) = cluster_test() else { return };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();

    // The single process.
    let single = single_run(dir);

    // The cluster.
    let (_nats, url, monitor) = nats_server(dir);
    let (mut harvest, mut joins) = stage_workers(dir, &url);
    let _reporter = worker(dir, &url, "reporter", "report", 0);
    let mut controller = controller(dir, &url, &[]);

    // Mid-run: harvest partition 1 dies, so every join partition holds the other harvest
    // partitions' records of the next epoch; then join-and-localize worker 0 dies holding them.
    wait_for_reports(dir, 6, "before the kills");
    sigkill(&mut harvest[1]);
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
    sigkill(&mut joins[0]);
    std::thread::sleep(Duration::from_millis(500));
    harvest[1] = worker(dir, &url, "harvest1", "harvest", 1);
    joins[0] = worker(dir, &url, "join-localize0", "join,localize", 0);

    wait_finished(&mut controller, dir);
    let lines = same_as_single(dir, &single, "worker kills");

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
