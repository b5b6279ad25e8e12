//! What one epoch costs on the BF Runtime wire, per switch: the Tofino driver's requests to the
//! model switches of `tofino_lab` (the compiled `bfrt.json`, the program's real meter and table
//! sizes), counted by the server as gRPC messages and protobuf bytes. Deterministic counts, not
//! timings. Beside them, what clearing the finished parity cell by cell would cost (the previous
//! driver's 12,288 MODIFY updates per switch per epoch at the previous sizes).
//!
//! `cargo bench -p canary-switch --bench bfrt_epoch_cost`

#[path = "../tests/tofino_lab/mod.rs"]
mod tofino_lab;

use bfrt_proto::bfrt::WriteRequest;
use canary_core::fabric::Fabric;
use canary_core::topo::SwitchIx;
use canary_doubles::bfrt_model::Wire;
use canary_switch::contract::Program;
use canary_switch::drivers::bfruntime;
use prost::Message;
use std::time::Duration;

const EPOCHS: u64 = 8;

fn row(what: &str, w: Wire, per: f64) {
    let msgs = (w.writes + w.reads + w.read_responses + w.digests) as f64 / per;
    let bytes =
        (w.write_bytes + w.read_bytes + w.read_response_bytes + w.digest_bytes) as f64 / per;
    println!(
        "{what:<34} {msgs:>9.1} msgs {bytes:>11.0} B   (writes {:.1} with {:.1} updates, reads {:.1}, \
         read responses {:.1} with {:.0} entities, learn lists {:.1})",
        w.writes as f64 / per,
        w.updates as f64 / per,
        w.reads as f64 / per,
        w.read_responses as f64 / per,
        w.read_entities as f64 / per,
        w.digests as f64 / per,
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let lab = tofino_lab::lab(0.0).await;
        let n = lab.switches.len() as f64;
        let take = |lab: &tofino_lab::Lab| {
            let mut w = Wire::default();
            for s in &lab.switches {
                w += s.take_wire();
            }
            w
        };
        let mut fabric = lab.fabric();
        fabric.connect(Duration::from_secs(10)).await.unwrap();
        let configure = take(&lab);
        // Monitor every flow between the hosts, as in the driver's test.
        let s2 = 1 as SwitchIx;
        let hh = lab.hh_everywhere();
        assert!(fabric.apply(&hh).await.is_empty());
        lab.run(Duration::from_millis(20)).await;
        let mut flows = Vec::new();
        for _ in 0..50 {
            flows.extend(
                fabric
                    .take_reports()
                    .await
                    .into_iter()
                    .filter(|r| r.switch == s2)
                    .map(|r| r.flow),
            );
            if !flows.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        flows.sort();
        flows.dedup();
        let ops = lab.monitor(&flows);
        let _ = take(&lab);
        assert!(fabric.apply(&ops).await.is_empty());
        let rules = take(&lab);
        let (mut flip, mut harvest, mut digests, mut whole) = (
            Wire::default(),
            Wire::default(),
            Wire::default(),
            Wire::default(),
        );
        for epoch in 0..EPOCHS {
            lab.run(Duration::from_millis(30)).await;
            digests += take(&lab);
            let _ = fabric.take_reports().await;
            for (s, r) in fabric.set_epoch(epoch + 1).await {
                assert!(r.is_ok(), "switch {s}: {r:?}");
            }
            flip += take(&lab);
            // What the previous harvest read: every cell of every meter register.
            for s in 0..lab.switches.len() {
                let tag = canary_core::model::epoch_tag(epoch);
                fabric.peek_meters(s as SwitchIx, tag).await.unwrap();
            }
            whole += take(&lab);
            for (s, r) in fabric.harvest(epoch).await {
                assert!(r.is_ok(), "switch {s}: {r:?}");
            }
            harvest += take(&lab);
        }
        assert_eq!(lab.violations(), Vec::<String>::new());

        let program = Program::from_bfrt_json("bfrt.json", tofino_lab::BFRT).unwrap();
        let m = &program.meters;
        let mut cells = Vec::new();
        for (dsm, rows) in [(false, &m.usm), (true, &m.dsm)] {
            for (r, row) in rows.iter().enumerate() {
                for index in 0..row.id.size {
                    cells.push(canary_switch::meters::Cell {
                        dsm,
                        row: r,
                        index,
                    });
                }
            }
        }
        let updates = bfruntime::zero_cells(&program, &cells);
        let per_cell = WriteRequest {
            target: None,
            client_id: 1,
            updates,
            atomicity: 0,
            p4_name: "canary".into(),
        };
        println!(
            "BF Runtime per switch (line of 2 switches; meters {} USM + {} DSM rows of {} cells; {} flows monitored)",
            m.usm.len(),
            m.dsm.len(),
            m.usm.first().map_or(0, |r| r.id.size),
            flows.len()
        );
        row("configure (once)", configure, n);
        row(
            &format!("install {} rules (once)", ops.len()),
            rules,
            n,
        );
        let per_epoch = n * EPOCHS as f64;
        row("per epoch: flip", flip, per_epoch);
        row("per epoch: harvest (sync + read)", harvest, per_epoch);
        row("ref: the registers read whole", whole, per_epoch);
        // What the cells the harvest read hold: each entity read is one cell of one register,
        // its data fields once per pipe.
        let reg_bytes = |r: &canary_switch::contract::Register| -> usize {
            r.members.iter().map(|(_, f)| f.bytes()).sum()
        };
        let cell_bytes = m.usm.first().map_or(0, |r| reg_bytes(&r.id) + reg_bytes(&r.count));
        let cells_read = harvest.read_entities as f64 / 2.0 / per_epoch;
        let info = cells_read * cell_bytes as f64 * tofino_lab::PIPES as f64;
        let harvest_bytes = (harvest.write_bytes
            + harvest.read_bytes
            + harvest.read_response_bytes) as f64
            / per_epoch;
        println!(
            "{:<34} {:>9.1} cells {:>10.0} B   ({cell_bytes} B a cell in each of {} pipes); harvest / information {:.1}x, whole registers / harvest {:.0}x",
            "information in the cells read",
            cells_read,
            info,
            tofino_lab::PIPES,
            harvest_bytes / info,
            (whole.write_bytes + whole.read_bytes + whole.read_response_bytes) as f64
                / per_epoch
                / harvest_bytes,
        );
        row("per epoch: HH learn lists", digests, per_epoch);
        let mut total = flip;
        total += harvest;
        row("per epoch: flip + harvest", total, per_epoch);
        println!(
            "{:<34} {:>9} msgs {:>11} B   ({} MODIFY updates: every cell of both registers of every row)",
            "ref: clearing cell by cell",
            1,
            per_cell.encoded_len(),
            per_cell.updates.len()
        );
    });
}
