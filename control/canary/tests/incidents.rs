//! `canary incidents` as an operator runs it: on a finished simulated run (its database and
//! its JSON), and on a live `canary run` daemon (against the Tofino BF Runtime models, no
//! hardware) that is SIGKILLed and restarted and goes on with the same incidents.

mod tofino_fabric;

use canary_testkit::KillOnDrop;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use tofino_fabric::TofinoLab;

fn canary(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args)
        .output()
        .expect("runs canary")
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "canary failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn incidents_json(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["incidents", "--json"];
    all.extend(args);
    serde_json::from_str::<Value>(&ok(canary(&all)))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn subject(i: &Value) -> String {
    let l = &i["subject"]["link"];
    format!(
        "{}->{}",
        l[0].as_str().unwrap_or("?"),
        l[1].as_str().unwrap_or("?")
    )
}

/// A fault that comes and goes (3 epochs on, 3 off) is one incident, named flapping with its
/// episodes; a steady fault beside it is one ongoing incident. The database `canary simulate`
/// wrote beside its JSON and the incidents replayed from the JSON agree.
#[test]
fn a_flapping_fault_is_one_incident_named_flapping() {
    let dir = tempfile::tempdir().unwrap();
    let faults = dir.path().join("flap.yaml");
    std::fs::write(
        &faults,
        "faults:\n  - {link: [agg1_0, core1], loss: 0.1, period: 6, duty: 0.5}\n  \
         - {link: [edge0_0, agg0_1], loss: 0.2}\n",
    )
    .unwrap();
    let json = dir.path().join("run.json");
    let out = canary(&[
        "simulate",
        "--faults",
        faults.to_str().unwrap(),
        "--epochs",
        "20",
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    ok(out);
    let db = dir.path().join("run.incidents.sqlite");
    assert!(db.exists(), "no database beside the JSON: {stderr}");
    assert!(stderr.contains("1 flapping"), "{stderr}");

    let table = ok(canary(&["incidents", db.to_str().unwrap()]));
    let line = |link: &str| {
        table
            .lines()
            .find(|l| l.contains(link))
            .unwrap_or_else(|| panic!("no incident of {link}:\n{table}"))
            .to_string()
    };
    let flap = line("agg1_0→core1");
    assert!(flap.contains("flapping (4 episodes)"), "{table}");
    assert!(line("edge0_0→agg0_1").contains("ongoing"), "{table}");
    assert_eq!(
        table.lines().count(),
        3,
        "a header and two incidents:\n{table}"
    );

    let from_db = incidents_json(&[db.to_str().unwrap()]);
    let from_json = incidents_json(&[json.to_str().unwrap()]);
    let brief = |v: &[Value]| -> Vec<(String, Value, Value, Value)> {
        v.iter()
            .map(|i| {
                (
                    subject(i),
                    i["state"].clone(),
                    i["episodes"].clone(),
                    i["first_at"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(brief(&from_db), brief(&from_json));
    let flapping = from_db
        .iter()
        .find(|i| subject(i) == "agg1_0->core1")
        .unwrap();
    assert_eq!(flapping["episodes"], 4);
    assert!(flapping["first_at"].as_str().unwrap().ends_with('Z'));

    // --state, --since and show.
    let only = incidents_json(&["--state", "flapping", db.to_str().unwrap()]);
    assert_eq!(only.len(), 1);
    let id = only[0]["id"].to_string();
    let shown = ok(canary(&[
        "incidents",
        "show",
        &id,
        "--db",
        db.to_str().unwrap(),
    ]));
    assert!(
        shown.contains("agg1_0→core1") && shown.contains("flapping"),
        "{shown}"
    );
    let late = incidents_json(&["--since", "100", db.to_str().unwrap()]);
    let open = from_db.iter().filter(|i| i["blamed_now"] == true).count();
    assert_eq!(
        late.len(),
        open,
        "only open incidents are open after epoch 100"
    );
    let since = from_db[0]["first_at"].as_str().unwrap();
    assert_eq!(
        incidents_json(&["--since", since, db.to_str().unwrap()]).len(),
        2
    );
    let bad = canary(&["incidents", faults.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && e.contains("flap.yaml"), "{e}");
}

/// `canary run` on the lab's switches, its stderr to `log`.
fn daemon(dir: &Path, switches: &Path, epochs: u32, log: &str) -> KillOnDrop {
    let log = std::fs::File::create(dir.join(log)).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(["run", "--target", "tofino", "--topology", "fattree:4"])
        .arg("--switches")
        .arg(switches)
        .args(["--epochs", &epochs.to_string(), "--epoch-ms", "1000"])
        .args([
            "--drain-ms",
            "20",
            "--alpha",
            "300",
            "--beta",
            "20",
            "--quiet",
        ])
        .arg("--report")
        .arg(dir.join("run.jsonl"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    KillOnDrop(child)
}

/// The open incident of the lossy link in the live daemon's database, once there is one.
fn wait_for_open(db: &Path, limit: Duration) -> Option<Value> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if db.exists() {
            let out = canary(&["incidents", "--json", "--db", db.to_str().unwrap()]);
            if out.status.success() {
                let all: Value = serde_json::from_slice(&out.stdout).unwrap();
                let open = all.as_array().unwrap().iter().find(|i| {
                    subject(i) == "edge1_0->agg1_1"
                        && i["blamed_now"] == true
                        && i["last_epoch"]
                            .as_u64()
                            .zip(i["first_epoch"].as_u64())
                            .is_some_and(|(l, f)| l > f)
                });
                if let Some(i) = open {
                    return Some(i.clone());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

/// `canary incidents` on a live daemon lists the lossy link's incident; after a SIGKILL and a
/// restart, the new process continues that incident: same id, same first epoch and time, later
/// epochs, no second incident of the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_and_restarted_continues_the_same_incidents() {
    let dir = tempfile::tempdir().unwrap();
    let lab = TofinoLab::start(dir.path()).await;
    let switches = dir.path().join("switches.yaml");
    std::fs::write(&switches, &lab.switches_yaml).unwrap();
    let db = dir.path().join("run.incidents.sqlite");
    let log = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    let mut first = daemon(dir.path(), &switches, 0, "first.log");
    let db2 = db.clone();
    let before = tokio::task::spawn_blocking(move || wait_for_open(&db2, Duration::from_secs(90)))
        .await
        .unwrap();
    first.0.kill().unwrap(); // SIGKILL
    first.0.wait().unwrap();
    let before = before
        .unwrap_or_else(|| panic!("no open incident of edge1_0->agg1_1:\n{}", log("first.log")));
    let last_before = before["last_epoch"].as_u64().unwrap();

    let mut second = daemon(dir.path(), &switches, 6, "second.log");
    let status = tokio::task::spawn_blocking(move || second.0.wait().unwrap())
        .await
        .unwrap();
    let stderr = log("second.log");
    assert!(status.success(), "the restarted daemon failed:\n{stderr}");
    let all = incidents_json(&["--db", db.to_str().unwrap()]);
    let of_link: Vec<&Value> = all
        .iter()
        .filter(|i| subject(i) == "edge1_0->agg1_1")
        .collect();
    assert_eq!(of_link.len(), 1, "{all:#?}");
    let after = of_link[0];
    assert_eq!(after["id"], before["id"], "{all:#?}");
    assert_eq!(after["first_epoch"], before["first_epoch"]);
    assert_eq!(after["first_at"], before["first_at"]);
    assert!(
        after["last_epoch"].as_u64().unwrap() > last_before + 1,
        "not blamed after the restart: {after:#}\n{stderr}"
    );
    assert_eq!(after["blamed_now"], true, "{after:#}");
    let table = ok(canary(&["incidents", "--db", db.to_str().unwrap()]));
    eprintln!("{table}");
}
