//! The Tofino driver over real gRPC against model switches that speak BF Runtime
//! (`canary_doubles::bfrt_model`) and hold every request to the compiler's `bfrt.json` of the TNA
//! program (`testdata/tna/bfrt.json`, kept equal to a fresh compile by `tna_compile`).
//!
//! No Tofino (hardware or model) can be had here, so this is the closest check of the Tofino
//! path: the ids, field widths, register data names and operations the driver sends are the
//! compiled program's, and what it reads back decodes to the reference model's meters.

use canary_core::fabric::Fabric;
use canary_core::model::epoch_tag;
use canary_core::topo::SwitchIx;
use canary_core::FlowId;
use canary_switch::contract::Program;
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bfruntime;
use canary_switch::drivers::tofino::{TofinoDriver, TofinoOptions};
use canary_switch::entries::{self, Change, Write};
use std::sync::Arc;
use std::time::Duration;

mod tofino_lab;

use tofino_lab::{lab, BFRT};

/// The whole epoch cycle through BF Runtime: configure, install rules, count traffic, start the
/// next epoch, harvest (Sync, Read, per-pipe values merged) and take digests. Every request fits
/// the compiled schema; every harvest equals the model's meters of that epoch, and a bf_switchd
/// restart is found and repaired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tofino_driver_runs_epochs_within_the_compiled_schema() {
    let lab = lab(0.0).await;
    let mut fabric = lab.fabric();
    fabric.connect(Duration::from_secs(10)).await.unwrap();
    assert_eq!(lab.violations(), Vec::<String>::new());
    let (s1, s2) = (0 as SwitchIx, 1 as SwitchIx);
    // Monitor every flow the hosts open: USM at s1, DSM at s2 on s1's pathBF, HH rules on both.
    let ops = lab.hh_everywhere();
    let failed = fabric.apply(&ops).await;
    assert!(failed.is_empty(), "{failed:?}");
    lab.run(Duration::from_millis(20)).await;
    // Learn lists arrive on each switch's stream in their own time.
    let mut reports = Vec::new();
    for _ in 0..100 {
        reports.extend(fabric.take_reports().await);
        if reports.iter().any(|r| r.switch == s2) && reports.iter().any(|r| r.switch == s1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!reports.is_empty(), "HH digests arrive as learn lists");
    assert!(
        reports.iter().any(|r| r.flow.src.as_v4().is_none()),
        "IPv6 flows reported"
    );
    let flows: Vec<FlowId> = reports
        .iter()
        .filter(|r| r.switch == s2)
        .map(|r| r.flow)
        .collect();
    assert!(!flows.is_empty());
    let ops = lab.monitor(&flows);
    let failed = fabric.apply(&ops).await;
    assert!(failed.is_empty(), "{failed:?}");
    let mut harvested = 0;
    let mut s2_after_restart = Vec::new();
    for epoch in 0..6u64 {
        lab.run(Duration::from_millis(30)).await;
        let flips = fabric.set_epoch(epoch + 1).await;
        for (s, r) in &flips {
            if epoch >= 2 && *s == s2 {
                s2_after_restart.push(r.clone());
            } else {
                assert!(r.is_ok(), "switch {s}, epoch {epoch}: {r:?}");
            }
        }
        lab.run(Duration::from_micros(200)).await;
        for (s, r) in fabric.harvest(epoch).await {
            let Ok(snap) = r else {
                assert!(s == s2 && epoch >= 2, "switch {s}, epoch {epoch}: {r:?}");
                continue;
            };
            let (usm, dsm) = lab
                .plane
                .lock()
                .unwrap()
                .switch_mut(s)
                .meters_of(epoch_tag(epoch));
            assert!(
                snap.usm == usm && snap.dsm == dsm,
                "switch {s}, epoch {epoch}"
            );
            harvested += usm.occupied() + dsm.occupied();
        }
        if epoch == 1 {
            // bf_switchd on s2 restarts: its connections, tables and registers are gone.
            lab.switches[1].restart();
        }
    }
    // The restart is found (the next call fails, or the stream closed first), the switch is
    // configured again once, and it is in step from then on.
    let restarted = s2_after_restart
        .iter()
        .position(|r| matches!(r, Err(canary_core::fabric::SwitchError::Restarted(_))))
        .unwrap_or_else(|| panic!("{s2_after_restart:?}"));
    assert!(restarted <= 1, "{s2_after_restart:?}");
    assert!(
        s2_after_restart[restarted + 1..].iter().all(Result::is_ok),
        "{s2_after_restart:?}"
    );
    assert!(harvested > 0, "buckets were counted and read back");
    assert_eq!(
        fabric.counters.repushes, 1,
        "the restarted switch was configured again"
    );
    assert_eq!(lab.violations(), Vec::<String>::new());
}

/// A request that breaks the compiled schema is refused with a message naming the table and the
/// field, as bf_switchd refuses it, and the driver reports that message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_break_the_schema_are_refused_naming_table_and_field() {
    let lab = lab(0.0).await;
    let program = Arc::new(Program::from_bfrt_json("bfrt.json", BFRT).unwrap());
    let mut d = TofinoDriver::new(
        lab.bound[0].clone(),
        true,
        lab.codec.masks[0],
        program.clone(),
        TofinoOptions::default(),
    );
    d.connect().await.unwrap();
    d.load_pipeline().await.unwrap();
    // What the driver writes goes in.
    let w = Write {
        change: Change::Modify,
        entry: entries::config(canary_core::model::SwitchConfig {
            monitor: true,
            mask: 5,
            epoch: epoch_tag(3),
        }),
    };
    assert!(d.write(std::slice::from_ref(&w)).await.is_empty());
    // The same entry with the mask one byte short.
    let mut u = bfruntime::write_update(&program, &w).unwrap();
    if let Some(bfrt_proto::bfrt::entity::Entity::TableEntry(te)) =
        u.entity.as_mut().and_then(|e| e.entity.as_mut())
    {
        if let Some(bfrt_proto::bfrt::data_field::Value::Stream(b)) =
            te.data.as_mut().unwrap().fields[1].value.as_mut()
        {
            b.pop();
        }
    }
    let (tx_name, sw) = (lab.bound[0].endpoint.grpc.clone(), &lab.switches[0]);
    let mut client =
        bfrt_proto::bfrt::bf_runtime_client::BfRuntimeClient::connect(format!("http://{tx_name}"))
            .await
            .unwrap();
    let err = client
        .write(bfrt_proto::bfrt::WriteRequest {
            target: None,
            client_id: 1,
            updates: vec![u],
            atomicity: 0,
            p4_name: "canary".into(),
        })
        .await
        .unwrap_err();
    assert!(
        err.message()
            .contains("switch_config: data field mask: 3 bytes, its width 32 needs 4"),
        "{}",
        err.message()
    );
    // Syncing a register with the operation name of older SDE examples.
    let reg = &program.meters.usm[0].count;
    let mut op = bfruntime::sync_update(reg);
    if let Some(bfrt_proto::bfrt::entity::Entity::TableOperation(o)) =
        op.entity.as_mut().and_then(|e| e.entity.as_mut())
    {
        o.table_operations_type = "SyncRegisters".into();
    }
    let err = client
        .write(bfrt_proto::bfrt::WriteRequest {
            target: None,
            client_id: 1,
            updates: vec![op],
            atomicity: 0,
            p4_name: "canary".into(),
        })
        .await
        .unwrap_err();
    assert!(
        err.message().contains(
            "row0.count_reg: operation \"SyncRegisters\" not supported (it has [\"Sync\"])"
        ),
        "{}",
        err.message()
    );
    assert_eq!(sw.violations().len(), 2);
}

/// A controller started again over BF Runtime adopts what the switches hold: connecting reads
/// Canary's rules and configuration back and writes nothing, the rules it finds are the ones
/// installed before, its epoch tags are the switches', and its first harvest equals the meters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_controller_adopts_the_switches_over_bf_runtime() {
    use std::collections::BTreeSet;
    let lab = lab(0.0).await;
    let mut first = lab.fabric();
    first.connect(Duration::from_secs(10)).await.unwrap();
    assert!(first.apply(&lab.hh_everywhere()).await.is_empty());
    lab.run(Duration::from_millis(20)).await;
    let mut flows = BTreeSet::new();
    for _ in 0..100 {
        flows.extend(
            first
                .take_reports()
                .await
                .into_iter()
                .filter(|r| r.switch == 1)
                .map(|r| r.flow),
        );
        if !flows.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let flows: Vec<FlowId> = flows.into_iter().collect();
    assert!(!flows.is_empty(), "HH digests arrived");
    assert!(first.apply(&lab.monitor(&flows)).await.is_empty());
    assert!(first.set_epoch(1).await.iter().all(|(_, r)| r.is_ok()));
    lab.run(Duration::from_millis(30)).await;
    let installed = |lab: &tofino_lab::Lab| -> Vec<Vec<canary_core::fabric::RuleOp>> {
        let mut plane = lab.plane.lock().unwrap();
        (0..2).map(|s| plane.switch_mut(s).installed()).collect()
    };
    let before = installed(&lab);
    drop(first);

    for s in &lab.switches {
        s.take_wire();
    }
    let mut second = lab.fabric();
    second.connect(Duration::from_secs(10)).await.unwrap();
    let writes: u64 = lab.switches.iter().map(|s| s.take_wire().writes).sum();
    assert_eq!(writes, 0, "connecting wrote to the switches");
    assert_eq!(installed(&lab), before, "the rules changed");
    let resumed = second.take_resumed().expect("the switches were adopted");
    assert_eq!(resumed.tags, vec![(0, epoch_tag(1)), (1, epoch_tag(1))]);
    assert!(resumed.fresh.is_empty());
    let found: BTreeSet<String> = resumed.rules.iter().map(|op| format!("{op:?}")).collect();
    let want: BTreeSet<String> = before
        .iter()
        .enumerate()
        .flat_map(|(s, ops)| {
            ops.iter()
                .map(move |op| format!("{:?}", op.clone().on(s as u32)))
        })
        .collect();
    assert_eq!(found, want);
    // The adopted rule IDs decode the meters the first controller's rules filled.
    assert!(second.set_epoch(2).await.iter().all(|(_, r)| r.is_ok()));
    lab.run(Duration::from_micros(200)).await;
    let mut counted = 0;
    for (s, r) in second.harvest(1).await {
        let snap = r.unwrap_or_else(|e| panic!("switch {s}: {e}"));
        let (usm, dsm) = lab
            .plane
            .lock()
            .unwrap()
            .switch_mut(s)
            .meters_of(epoch_tag(1));
        assert!(snap.usm == usm && snap.dsm == dsm, "switch {s}");
        counted += usm.occupied() + dsm.occupied();
    }
    assert!(counted > 0, "the epoch counted the monitored flows");
    assert_eq!(second.counters.repushes, 0);
    assert_eq!(lab.violations(), Vec::<String>::new());
}
