//! The generic fabric over BMv2 drivers, driven step by step against real switches (two-switch
//! line), for the failure modes an epoch loop cannot show on its own: a harvest slower than its
//! deadline, a digest flood, and a counter that wraps.
//!
//! Needs root, p4c and BMv2 (`sudo -E cargo test -p canary --test fabric_bmv2`); each test
//! prints `SKIP: ...` and passes when something is missing.

mod bmv2;
mod fabric_lab;

use bmv2::RawSocket;
use canary_controller::setup::{load_topology, prepare, Prepared};
use canary_core::detect::minus_meters;
use canary_core::fabric::{Fabric, MeterSnapshot, RuleOp};
use canary_core::model::epoch_tag;
use canary_core::pathbf::PathBfParams;
use canary_core::sketch::FlowHashes;
use canary_core::FlowId;
use canary_switch::bmv2_thrift::{ThriftClient, Timeouts};
use canary_switch::contract::MeterRegisters;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program, CXT_ID};
use canary_switch::fabric::{FabricOptions, SwitchFabric};
use canary_switch::p4info::P4InfoFile;
use canary_switch::rule_ids::RuleKey;
use canary_switch::switches::{port_map, SwitchesFile};
use fabric_lab::{udp_frame, FabricLab, THRIFT_BASE};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

struct Line {
    lab: FabricLab,
    prep: Prepared,
    h1: RawSocket,
    s1: u32,
    s2: u32,
    /// pathBF of packets from s1 arriving at s2.
    bf: u32,
}

fn line() -> Option<Line> {
    if !bmv2::runnable("fabric_bmv2", &bmv2::missing()) {
        return None;
    }
    let file = bmv2::repo_root().join("topologies/line2.yaml");
    let topo = load_topology(file.to_str().unwrap(), None).unwrap();
    let lab = FabricLab::new(topo.clone());
    let prep = prepare(topo, PathBfParams::default()).unwrap();
    let s1 = prep.topo.switch("s1").unwrap();
    let s2 = prep.topo.switch("s2").unwrap();
    let seg = prep
        .segments
        .list
        .iter()
        .position(|s| s.upstream() == s1 && s.downstream() == s2)
        .unwrap();
    let bf = prep.codec.segment_bf[seg];
    let h1 = RawSocket::open(&lab.hosts[0].0, "eth0");
    Some(Line {
        lab,
        prep,
        h1,
        s1,
        s2,
        bf,
    })
}

impl Line {
    fn program(&self) -> Arc<Bmv2Program> {
        let p4info = P4InfoFile::load(&self.lab.p4dir.join("canary.p4info.bin")).unwrap();
        let json = std::fs::read(self.lab.p4dir.join("canary.json")).unwrap();
        Arc::new(Bmv2Program::new(p4info, json).unwrap())
    }

    fn fabric(&self, opts: Bmv2Options) -> SwitchFabric<Bmv2Driver> {
        let path = self.lab.switches_yaml.display().to_string();
        let bound = SwitchesFile::load(&path)
            .unwrap()
            .bind(&path, &self.prep.topo)
            .unwrap();
        let ports = port_map(&bound);
        let prog = self.program();
        let topo = &self.prep.topo;
        let drivers = bound
            .into_iter()
            .map(|b| {
                let monitor = topo.switches[b.ix as usize].monitor;
                Bmv2Driver::new(b, monitor, prog.clone(), opts.clone())
            })
            .collect();
        SwitchFabric::new(
            topo,
            &ports,
            &self.prep.codec.masks,
            drivers,
            prog.program.capacity(),
            FabricOptions::default(),
        )
    }

    fn send(&self, flow: &FlowId, n: u16) {
        for i in 0..n {
            self.h1.send(&udp_frame(
                flow.src.as_v4().unwrap(),
                flow.dst.as_v4().unwrap(),
                flow.sport,
                flow.dport,
                i,
            ));
        }
    }

    /// Runs `f` on a runtime whose thread lives in the fabric namespace (where the switches'
    /// servers listen).
    fn in_fabric<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        let ns = self.lab.fab.clone();
        std::thread::spawn(move || {
            bmv2::enter_netns(&ns);
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
                .block_on(f)
        })
        .join()
        .unwrap()
    }
}

fn flow(sport: u16) -> FlowId {
    FlowId::v4(
        u32::from(std::net::Ipv4Addr::new(10, 0, 1, 2)),
        u32::from(std::net::Ipv4Addr::new(10, 0, 2, 2)),
        17,
        sport,
        5001,
    )
}

fn usm_count(snaps: &[MeterSnapshot], s: u32, f: &FlowId) -> Option<u32> {
    snaps
        .iter()
        .find(|x| x.switch == s)?
        .usm
        .clean_count(f, FlowHashes::of(f))
}

fn dsm_count(snaps: &[MeterSnapshot], s: u32, f: &FlowId) -> Option<u32> {
    snaps
        .iter()
        .find(|x| x.switch == s)?
        .dsm
        .clean_flows()
        .into_iter()
        .find(|r| r.flow == *f)
        .map(|r| r.count)
}

/// Rules that count `f` from `s1` (USM) to `s2` (DSM, packets arriving with `bf`).
async fn monitor(fabric: &mut SwitchFabric<Bmv2Driver>, f: FlowId, s1: u32, s2: u32, bf: u32) {
    let failed = fabric
        .apply(&[
            RuleOp::InstallUsm {
                switch: s1,
                flow: f,
            },
            RuleOp::InstallDsm {
                switch: s2,
                flow: f,
                path_bf: bf,
            },
        ])
        .await;
    assert!(failed.is_empty(), "{failed:?}");
}

const SETTLE: Duration = Duration::from_millis(400);

/// A harvest that misses its deadline skips that epoch for the switch, and nothing needs
/// repair: the next epoch in that parity holds only its own packets, never the skipped epoch's
/// (its buckets carry the other epoch's tag).
#[test]
fn late_harvest_is_skipped_and_never_mixed_into_the_next_epoch() {
    let Some(line) = line() else { return };
    let f = flow(4000);
    let (s1, s2, bf) = (line.s1, line.s2, line.bf);
    let mut fabric = line.fabric(Bmv2Options::default());
    let line = std::sync::Arc::new(line);
    let l = line.clone();
    let (late, odd, even) = line.in_fabric(async move {
        fabric.connect(Duration::from_secs(20)).await.unwrap();
        monitor(&mut fabric, f, s1, s2, bf).await;
        // Epoch A (even): 30 packets; its harvest misses a deadline no switch can meet.
        l.send(&f, 30);
        tokio::time::sleep(SETTLE).await;
        assert!(fabric.set_epoch(1).await.iter().all(|r| r.1.is_ok()));
        tokio::time::sleep(SETTLE).await;
        fabric.set_harvest_deadline(Duration::from_micros(1));
        let late = fabric.harvest(0).await;
        fabric.set_harvest_deadline(Duration::from_secs(5));
        // Epoch B (odd): 20 packets, harvested normally.
        l.send(&f, 20);
        tokio::time::sleep(SETTLE).await;
        assert!(fabric.set_epoch(2).await.iter().all(|r| r.1.is_ok()));
        tokio::time::sleep(SETTLE).await;
        let odd = fabric.harvest(1).await;
        // Epoch C (even again): 10 packets.
        l.send(&f, 10);
        tokio::time::sleep(SETTLE).await;
        assert!(fabric.set_epoch(3).await.iter().all(|r| r.1.is_ok()));
        tokio::time::sleep(SETTLE).await;
        let even = fabric.harvest(2).await;
        (late, odd, even)
    });
    for (s, r) in &late {
        let e = r.as_ref().expect_err("a 1 µs deadline cannot be met");
        assert!(
            e.to_string().contains("slower than its deadline"),
            "{s}: {e}"
        );
    }
    let ok = |v: Vec<(u32, Result<MeterSnapshot, _>)>| -> Vec<MeterSnapshot> {
        v.into_iter()
            .map(|(s, r)| r.unwrap_or_else(|e| panic!("switch {s}: {e}")))
            .collect()
    };
    let (odd, even) = (ok(odd), ok(even));
    assert_eq!(usm_count(&odd, s1, &f), Some(20));
    assert_eq!(dsm_count(&odd, s2, &f), Some(20));
    assert_eq!(
        (usm_count(&even, s1, &f), dsm_count(&even, s2, &f)),
        (Some(10), Some(10)),
        "epoch C must not contain the 30 packets of the skipped epoch A"
    );
}

/// Every HH digest is acknowledged; beyond the rate limit they are dropped and counted, and
/// the controller keeps working.
#[test]
fn digest_flood_is_rate_limited_and_counted() {
    let Some(line) = line() else { return };
    let (s2, bf) = (line.s2, line.bf);
    let mut fabric = line.fabric(Bmv2Options {
        digest_rate: 50,
        digest_queue: 16,
        ..Default::default()
    });
    let line = std::sync::Arc::new(line);
    let l = line.clone();
    let (reports, counters, after) = line.in_fabric(async move {
        fabric.connect(Duration::from_secs(20)).await.unwrap();
        // eta 0: every packet of every unmonitored flow into s2 from s1 is reported.
        let failed = fabric
            .apply(&[RuleOp::InstallHh {
                switch: s2,
                path_bf: bf,
                eta: 0,
            }])
            .await;
        assert!(failed.is_empty(), "{failed:?}");
        // 400 new flows per second for 2 s: paced so that BMv2 itself drops nothing.
        for sport in 0..800u16 {
            l.send(&flow(20000 + sport), 1);
            tokio::time::sleep(Duration::from_micros(2500)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let reports = fabric.take_reports().await;
        let counters = fabric.counters.clone();
        // Still in control: a flip works after the flood.
        let after = fabric.set_epoch(1).await;
        (reports, counters, after)
    });
    eprintln!(
        "digest flood: {} reports delivered, {} dropped",
        reports.len(),
        counters.digests_dropped
    );
    assert!(!reports.is_empty());
    assert!(reports.iter().all(|r| r.switch == s2 && r.path_bf == bf));
    // One second's burst plus the refill over ~3 s, at 50 per second.
    assert!(reports.len() <= 250, "{} delivered", reports.len());
    assert!(counters.digests_dropped > 0, "the flood was not limited");
    assert!(
        reports.len() as u64 + counters.digests_dropped >= 700,
        "reports {} + dropped {} account for the ~800 digests",
        reports.len(),
        counters.digests_dropped
    );
    assert!(after.iter().all(|r| r.1.is_ok()), "{after:?}");
}

/// 32-bit packet counters wrap; loss is their difference modulo 2^32. Buckets preloaded just
/// below the wrap on both switches (epoch 0's tag, the rules' IDs), then 10 packets: the USM
/// wraps to 5 and the DSM, 3 behind, to 2; detection reads 3 lost, not four billion.
#[test]
fn wrapping_counters_give_the_true_difference() {
    let Some(line) = line() else { return };
    let f = flow(4100);
    let (s1, s2, bf) = (line.s1, line.s2, line.bf);
    let mut fabric = line.fabric(Bmv2Options::default());
    let layout = line.program().program.meters.clone();
    let line = std::sync::Arc::new(line);
    let l = line.clone();
    let snap = line.in_fabric(async move {
        fabric.connect(Duration::from_secs(20)).await.unwrap();
        monitor(&mut fabric, f, s1, s2, bf).await;
        let (ns1, ns2) = (s1, s2);
        let id1 = fabric.rule_ids(s1).id_of(&RuleKey::Usm(f)).unwrap();
        let id2 = fabric.rule_ids(s2).id_of(&RuleKey::Dsm(f, bf)).unwrap();
        tokio::task::spawn_blocking(move || {
            preload(&layout, ns1, false, &f, id1, u32::MAX - 4);
            preload(&layout, ns2, true, &f, id2, u32::MAX - 7);
        })
        .await
        .unwrap();
        l.send(&f, 10);
        tokio::time::sleep(SETTLE).await;
        assert!(fabric.set_epoch(1).await.iter().all(|r| r.1.is_ok()));
        tokio::time::sleep(SETTLE).await;
        fabric.harvest(0).await
    });
    let snaps_ok: Vec<MeterSnapshot> = snap
        .into_iter()
        .map(|(s, r)| r.unwrap_or_else(|e| panic!("switch {s}: {e}")))
        .collect();
    assert_eq!(usm_count(&snaps_ok, s1, &f), Some(5));
    assert_eq!(dsm_count(&snaps_ok, s2, &f), Some(2));
    let det = minus_meters(&line.prep.segments, &line.prep.codec, &snaps_ok);
    let e = det
        .entries
        .iter()
        .find(|e| e.flow == f)
        .expect("the flow is measured");
    assert_eq!(e.lost, 3);
    assert_eq!(det.anomalies.negative_loss, 0);
}

/// Writes `f`'s buckets (every row) of switch `s`'s USM (or DSM) in epoch 0 as if `count`
/// packets of the rule with ID `id` had been counted.
fn preload(layout: &MeterRegisters, s: u32, dsm: bool, f: &FlowId, id: u32, count: u32) {
    let mut t = ThriftClient::connect(
        format!("s{s}"),
        format!("127.0.0.1:{}", THRIFT_BASE + s as u16),
        Timeouts::default(),
    )
    .unwrap();
    let cfg = layout.config();
    let h = FlowHashes::of(f);
    let rows = if dsm { &layout.dsm } else { &layout.usm };
    let tag = u64::from(epoch_tag(0));
    for (r, row) in rows.iter().enumerate() {
        // Epoch 0's parity (even): the first half of each register.
        let col = canary_core::sketch::meter_index(h, r, cfg.width) as i32;
        t.register_write(
            CXT_ID,
            &row.id.name,
            col,
            (tag << 32 | u64::from(id)) as i64,
        )
        .unwrap();
        t.register_write(CXT_ID, &row.count.name, col, i64::from(count))
            .unwrap();
    }
}
