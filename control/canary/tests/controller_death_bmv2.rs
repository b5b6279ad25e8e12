//! The controller's own death on real switches: `canary run` SIGKILLed at a random point of an
//! epoch on a leaf-spine fabric of BMv2 switches with real traffic, then restarted, or taken
//! over by a standby `canary run` that was waiting (a lossy link stays blamed through the takeover,
//! one incident throughout). The switches keep their pipeline, meters,
//! rules and monitored flows; the report file goes on, every epoch once.
//!
//! Needs root, p4c and BMv2 on PATH; each test prints `SKIP: ...` and passes when something is
//! missing. The chaos-driven versions, which run everywhere, are in `controller_death`.

mod bmv2;
mod fabric_lab;

use canary_controller::setup::load_topology;
use canary_switch::contract::{Program, Table};
use canary_switch::entries::{read_rule, ReadRule};
use canary_switch::p4info::P4InfoFile;
use fabric_lab::{http_get_in_ns, wait_child, FabricLab};
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

const EPOCH_MS: u64 = 1000;
/// The standby test's lossy link (10 % one way): blamed before the kill, through the takeover
/// and after, one incident throughout.
const LOSSY: [&str; 2] = ["leaf1", "spine0"];

fn missing() -> bool {
    !bmv2::runnable("controller_death_bmv2", &bmv2::missing())
}

fn topology() -> String {
    bmv2::repo_root()
        .join("topologies/leaf-spine.yaml")
        .display()
        .to_string()
}

fn run_args<'a>(topology: &'a str, report: &'a str, election: &'a str) -> Vec<&'a str> {
    vec![
        "--topology",
        topology,
        "--epoch-ms",
        "1000",
        "--alpha",
        "100",
        "--beta",
        "3",
        "--eta",
        "4",
        "--report",
        report,
        "--election-id",
        election,
    ]
}

fn report_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every report line is whole JSON"))
        .collect()
}

/// Waits up to `limit` for `done`; whether it came.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// A random point of an epoch: an offset within one epoch, seeded from the clock and printed
/// so that a failure can be replayed.
fn random_point() -> Duration {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let ms = rand_chacha::ChaCha8Rng::seed_from_u64(seed).random_range(0..EPOCH_MS);
    eprintln!("killing {ms} ms into the epoch (seed {seed})");
    Duration::from_millis(ms)
}

/// Canary's rules on every switch, read over P4Runtime (a read needs no primary).
fn rules_on(lab: &FabricLab) -> BTreeSet<(usize, ReadRule)> {
    let idx = P4InfoFile::load(&lab.p4dir.join("canary.p4info.bin")).unwrap();
    let prog = Program::from_p4info(&idx.path, &idx.info).unwrap();
    let (fab, n) = (lab.fab.clone(), lab.topo.switches.len());
    std::thread::spawn(move || {
        bmv2::enter_netns(&fab);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            use bfrt_proto::p4rt::{entity, Entity, TableEntry};
            use canary_switch::p4rt::{P4RtClient, P4RtConfig};
            let mut out = BTreeSet::new();
            for s in 0..n {
                let addr = format!("127.0.0.1:{}", fabric_lab::GRPC_BASE + s as u16);
                let mut cfg = P4RtConfig::new("reader", &addr, s as u64 + 1);
                // Below any controller's id, above the standby probe's: never primary over one.
                cfg.election_id = 2;
                let mut c = P4RtClient::connect(cfg).await.unwrap();
                for t in [Table::Usm, Table::Dsm, Table::Hh] {
                    let e = Entity {
                        entity: Some(entity::Entity::TableEntry(TableEntry {
                            table_id: prog.table(t).id,
                            ..Default::default()
                        })),
                    };
                    for got in c.read(vec![e]).await.unwrap() {
                        let Some(entity::Entity::TableEntry(te)) = got.entity else {
                            continue;
                        };
                        let entry =
                            canary_switch::drivers::p4runtime::entry_of(&prog, t, &te).unwrap();
                        out.insert((s, read_rule(&entry).unwrap()));
                    }
                }
            }
            out
        })
    })
    .join()
    .unwrap()
}

/// The epoch the new controller found running (marked incomplete: it began before it took
/// over).
fn resumed_at(lines: &[Value]) -> usize {
    lines
        .iter()
        .position(|l| {
            l["incomplete"]
                .as_str()
                .is_some_and(|w| w.contains("began before"))
        })
        .expect("an epoch found running by the new controller")
}

/// Every epoch once and in order; one epoch marked as found running by the new controller, and
/// at most one before it that nobody harvested; nothing blamed but `lossy` (nothing at all on a
/// fabric without faults), and `lossy` in every whole epoch after the takeover; the epochs
/// after the takeover count packets and flows.
fn assert_report_goes_on(lines: &[Value], after: usize, lossy: Option<[&str; 2]>) {
    let epochs: Vec<u64> = lines.iter().map(|l| l["epoch"].as_u64().unwrap()).collect();
    let want: Vec<u64> = (0..lines.len() as u64).collect();
    assert_eq!(epochs, want, "epochs lost or repeated");
    let marked = |what: &str| {
        lines
            .iter()
            .filter(|l| l["incomplete"].as_str().is_some_and(|w| w.contains(what)))
            .count()
    };
    assert_eq!(marked("began before"), 1, "{lines:#?}");
    assert!(marked("no controller harvested") <= 1);
    let blamed = |l: &Value| -> Vec<[String; 2]> {
        l["blamed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| serde_json::from_value(b["link"].clone()).unwrap())
            .collect()
    };
    let lossy: Option<[String; 2]> = lossy.map(|[a, b]| [a.into(), b.into()]);
    for l in lines {
        let wrong: Vec<_> = blamed(l)
            .into_iter()
            .filter(|b| Some(b) != lossy.as_ref())
            .collect();
        assert!(wrong.is_empty(), "epoch {} blamed {wrong:?}", l["epoch"]);
    }
    let resumed = resumed_at(lines);
    let later = &lines[resumed + 1..];
    assert!(
        later.len() >= after,
        "{} epochs after the takeover",
        later.len()
    );
    for l in later {
        assert!(l["incomplete"].is_null(), "epoch {}", l["epoch"]);
        if let Some(link) = &lossy {
            assert!(
                blamed(l).contains(link),
                "epoch {} after the takeover: {link:?} not blamed",
                l["epoch"]
            );
        }
        assert!(
            l["packets_counted"].as_u64().unwrap() > 0 && l["flows_counted"].as_u64().unwrap() > 0,
            "epoch {} counted nothing",
            l["epoch"]
        );
    }
    assert!(
        lines[resumed]["flows_monitored"].as_u64().unwrap() > 0,
        "the monitored flows were carried over"
    );
}

#[test]
fn a_sigkilled_controller_restarts_without_wiping_the_switches() {
    if missing() {
        return;
    }
    let topo = topology();
    let lab = FabricLab::new(load_topology(&topo, None).unwrap());
    let traffic = lab.traffic(100, 8, 200.0, 11);
    let report = lab.path("epochs.jsonl");
    let report_s = report.display().to_string();
    let mut a = lab.daemon_named("a", &run_args(&topo, &report_s, "10"));
    assert!(
        wait_for(Duration::from_secs(60), || report_lines(&report).len() >= 4),
        "{}",
        lab.output_of("a")
    );
    std::thread::sleep(random_point());
    a.0.kill().unwrap();
    a.0.wait().unwrap();
    let at_kill = rules_on(&lab);
    assert!(!at_kill.is_empty(), "no rules on the switches at the kill");

    let mut args = run_args(&topo, &report_s, "10");
    args.extend(["--epochs", "6"]);
    let mut b = lab.daemon_named("b", &args);
    assert!(
        wait_for(Duration::from_secs(30), || lab
            .output_of("b")
            .contains("resuming what an earlier controller left")),
        "{}",
        lab.output_of("b")
    );
    // Before its first epoch ends it has written nothing but the removal of rules that make
    // no monitored flow (a DSM rule whose USM rule was retired the epoch before).
    let resumed = rules_on(&lab);
    let usm_hh: BTreeSet<_> = at_kill
        .iter()
        .filter(|(_, r)| !matches!(r, ReadRule::Dsm { .. }))
        .copied()
        .collect();
    assert!(resumed.is_subset(&at_kill), "the restart wrote new rules");
    assert!(
        usm_hh.is_subset(&resumed),
        "USM or HH rules were lost in the restart ({} of {} kept)",
        usm_hh.intersection(&resumed).count(),
        usm_hh.len()
    );
    let status = wait_child(&mut b.0, Duration::from_secs(60));
    traffic.stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "{}",
        lab.output_of("b")
    );
    assert!(
        lab.output_of("b").contains("0 configured afresh"),
        "every switch adopted: {}",
        lab.output_of("b")
    );
    eprintln!(
        "rules at the kill {}, after the restart {}",
        at_kill.len(),
        resumed.len()
    );
    assert_report_goes_on(&report_lines(&report), 4, None);
}

#[test]
fn a_standby_takes_over_within_two_epochs_and_the_old_primary_does_not_fight() {
    if missing() {
        return;
    }
    let topo = topology();
    let lab = FabricLab::new(load_topology(&topo, None).unwrap());
    lab.link_loss(LOSSY[0], LOSSY[1], 10.0);
    let traffic = lab.traffic(100, 16, 200.0, 12);
    let report = lab.path("epochs.jsonl");
    let report_s = report.display().to_string();
    let mut primary = lab.daemon_named("primary", &run_args(&topo, &report_s, "10"));
    assert!(
        wait_for(Duration::from_secs(60), || report_lines(&report).len() >= 3),
        "{}",
        lab.output_of("primary")
    );
    let mut args = run_args(&topo, &report_s, "5");
    args.extend(["--epochs", "8", "--metrics", "127.0.0.1:9471"]);
    let mut standby = lab.daemon_named("standby", &args);
    assert!(
        wait_for(Duration::from_secs(20), || lab
            .output_of("standby")
            .contains("standing by")),
        "{}",
        lab.output_of("standby")
    );
    let metric = |name: &str| {
        let text = http_get_in_ns(&lab.fab, "127.0.0.1:9471", "/metrics").unwrap_or_default();
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    assert_eq!(
        metric("canary_controller_primary "),
        Some(0.0),
        "standing by"
    );
    // The primary goes on while the standby watches.
    let n = report_lines(&report).len();
    assert!(wait_for(Duration::from_secs(10), || report_lines(&report)
        .len()
        >= n + 2));
    std::thread::sleep(random_point());
    primary.0.kill().unwrap();
    primary.0.wait().unwrap();
    let killed = Instant::now();
    let took_over = |lines: &[Value]| {
        lines.iter().any(|l| {
            l["incomplete"]
                .as_str()
                .is_some_and(|w| w.contains("began before"))
        })
    };
    assert!(
        wait_for(Duration::from_secs(20), || took_over(&report_lines(
            &report
        ))),
        "{}",
        lab.output_of("standby")
    );
    let takeover = killed.elapsed();
    eprintln!("the standby's first epoch report {takeover:?} after the primary's death");
    assert_eq!(
        metric("canary_controller_primary "),
        Some(1.0),
        "primary now"
    );
    assert_eq!(metric("canary_controller_takeovers_total "), Some(1.0));
    assert!(metric("canary_epochs_incomplete_total ").is_some_and(|n| n >= 1.0));

    // The old primary comes back with its higher id: it must stand by, not take over.
    let mut back = lab.daemon_named("back", &run_args(&topo, &report_s, "10"));
    assert!(
        wait_for(Duration::from_secs(20), || lab
            .output_of("back")
            .contains("standing by")),
        "--- back\n{}\n--- standby\n{}",
        lab.output_of("back"),
        lab.output_of("standby")
    );
    let n = report_lines(&report).len();
    assert!(wait_for(Duration::from_secs(10), || report_lines(&report)
        .len()
        >= n + 2));
    back.0.kill().unwrap();
    back.0.wait().unwrap();
    let status = wait_child(&mut standby.0, Duration::from_secs(60));
    traffic.stop();
    let out = lab.output_of("standby");
    assert!(status.is_some_and(|s| s.success()), "{out}");
    assert!(!out.contains("another controller took over"), "{out}");
    let back_out = lab.output_of("back");
    assert!(!back_out.contains("is gone: taking over"), "{back_out}");
    let lines = report_lines(&report);
    assert_report_goes_on(&lines, 6, Some(LOSSY));
    // The lossy link is one incident from before the primary's death to the standby's last
    // epoch: the standby took up the database beside the report and went on with it.
    let found = |l: &Value| {
        l["blamed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["link"] == serde_json::json!(LOSSY))
    };
    let first = lines
        .iter()
        .position(found)
        .expect("the lossy link blamed before the kill");
    let resumed = resumed_at(&lines);
    assert!(
        first < resumed,
        "blamed first in epoch {first}, after the takeover ({resumed})"
    );
    let db = lab.path("epochs.incidents.sqlite");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(["incidents", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let of_link: Vec<&Value> = all
        .iter()
        .filter(|i| i["subject"]["link"] == serde_json::json!(LOSSY))
        .collect();
    assert_eq!(of_link.len(), 1, "one incident of the lossy link: {all:#?}");
    assert_eq!(of_link[0]["first_epoch"], first as u64, "{all:#?}");
    assert_eq!(of_link[0]["last_epoch"], lines.len() as u64 - 1, "{all:#?}");
    assert_eq!(all.len(), 1, "no other incident: {all:#?}");
    // Two epochs of the dead primary's: it died at most one epoch before the flip that ended
    // the epoch the standby found running, which the standby reported a drain later.
    assert!(
        takeover <= Duration::from_millis(2 * EPOCH_MS + 200),
        "the standby took {takeover:?} to report its first epoch"
    );
}
