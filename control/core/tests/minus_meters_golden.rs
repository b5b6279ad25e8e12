//! Data-driven golden tests of the minus meters (Algorithm 3) on hand-made meters, in the way of
//! raft-rs's `datadriven`: every file in `testdata/minus_meters/` holds the meters of some
//! switches, a `----` line, and the entries, segment counts and anomalies the minus meters give.
//! `CANARY_REWRITE_GOLDEN=1 cargo test -p canary-core --test minus_meters_golden` rewrites the
//! expected output; review it with `git diff`.
//!
//! The case format (`#` starts a comment; flow `N` is 10.0.0.(2+N):(1000+N) → 10.3.1.2:80/TCP):
//!
//! ```text
//! topology fattree:4
//! meter 3x64                                  # rows x width of every meter
//! usm core0 flow 1 count 100                  # USM of core0 counts 100 packets of flow 1
//! dsm edge3_1 flow 1 segment core0 agg3_0 edge3_1 count 95   # with that segment's pathBF
//! dsm edge3_1 flow 7 pathbf 0xdeadbeef count 10              # with a raw pathBF
//! usm core3 collide 5                         # another flow in each of flow 5's USM buckets
//! bump edge3_1 dsm flow 1 row 2               # one bucket read one packet ahead (torn)
//! answered agg3_0                             # a switch that answered with empty meters
//! ```
//!
//! The switches harvested are those the lines name; any other switch did not answer.

use canary_core::detect::{minus_meters, observations, Window};
use canary_core::fabric::{MeterSnapshot, Parity};
use canary_core::pathbf::{PathBfCodec, PathBfParams};
use canary_core::sketch::{meter_index, Dsm, FlowHashes, Meter, MeterConfig, Usm};
use canary_core::topo::fattree::fattree;
use canary_core::topo::{MonitorPlacement, Routing, Segments, SwitchIx, Topology};
use canary_core::FlowId;
use canary_testkit::golden;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

fn flow(n: u32) -> FlowId {
    FlowId::v4(0x0a00_0002 + n, 0x0a03_0102, 6, 1000 + n as u16, 80)
}

struct Fabric {
    topo: Topology,
    segments: Segments,
    codec: PathBfCodec,
}

fn fabric(at: &str, spec: &str) -> Fabric {
    let k = spec
        .strip_prefix("fattree:")
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("{at}: topology `{spec}`: only fattree:K"));
    let topo = fattree(k, MonitorPlacement::TopAndBottom).expect("a fat-tree");
    let segments = Segments::new(&topo, &Routing::new(&topo));
    let codec = PathBfCodec::new(&topo, &segments, PathBfParams::default()).expect("a codec");
    Fabric {
        topo,
        segments,
        codec,
    }
}

/// Rebuilds a meter with `edit` applied to its buckets (what a read off a switch can be).
fn edited<B: canary_core::sketch::Bucket>(m: &Meter<B>, edit: impl FnOnce(&mut [B])) -> Meter<B> {
    let mut b = m.buckets().to_vec();
    edit(&mut b);
    Meter::from_buckets(m.config(), b).expect("same shape")
}

/// The snapshots a case describes.
fn snapshots(file: &Path, input: &str) -> (Fabric, Vec<MeterSnapshot>) {
    let mut fab: Option<Fabric> = None;
    let mut cfg = MeterConfig::default();
    let mut snaps: BTreeMap<SwitchIx, MeterSnapshot> = BTreeMap::new();
    for (n, raw) in input.lines().enumerate() {
        let at = format!("{}:{}", file.display(), n + 1);
        let line = raw.split('#').next().unwrap().trim();
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() {
            continue;
        }
        if let ["topology", spec] = w[..] {
            fab = Some(fabric(&at, spec));
            continue;
        }
        if let ["meter", shape] = w[..] {
            let (r, c) = shape
                .split_once('x')
                .unwrap_or_else(|| panic!("{at}: `meter ROWSxWIDTH`"));
            cfg = MeterConfig::new(r.parse().unwrap(), c.parse().unwrap())
                .unwrap_or_else(|e| panic!("{at}: {e}"));
            continue;
        }
        let f = fab
            .as_ref()
            .unwrap_or_else(|| panic!("{at}: `topology` comes first"));
        let sw = |name: &str| {
            f.topo
                .switch(name)
                .unwrap_or_else(|| panic!("{at}: no switch {name}"))
        };
        let num = |s: &str| -> u64 {
            match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => s.parse(),
            }
            .unwrap_or_else(|_| panic!("{at}: `{s}` is not a number"))
        };
        let snap = |s: SwitchIx, snaps: &mut BTreeMap<SwitchIx, MeterSnapshot>| {
            snaps.entry(s).or_insert_with(|| MeterSnapshot {
                switch: s,
                epoch: 0,
                parity: Parity::Even,
                usm: Usm::new(cfg).unwrap(),
                dsm: Dsm::new(cfg).unwrap(),
            });
        };
        match w[..] {
            ["answered", name] => snap(sw(name), &mut snaps),
            ["usm", name, "flow", n, "count", c] => {
                let s = sw(name);
                snap(s, &mut snaps);
                let fl = flow(num(n) as u32);
                let m = &mut snaps.get_mut(&s).unwrap().usm;
                m.update_n(&fl, FlowHashes::of(&fl), num(c) as u32);
            }
            ["usm", name, "collide", n] => {
                let s = sw(name);
                snap(s, &mut snaps);
                let h = FlowHashes::of(&flow(num(n) as u32));
                let m = &mut snaps.get_mut(&s).unwrap().usm;
                for row in 0..cfg.rows {
                    let target = meter_index(h, row, cfg.width);
                    let other = (100..100_000)
                        .map(flow)
                        .find(|o| meter_index(FlowHashes::of(o), row, cfg.width) == target)
                        .expect("a flow in that bucket");
                    m.update(&other, FlowHashes::of(&other));
                }
            }
            ["dsm", name, "flow", n, "segment", ref rest @ .., "count", c] => {
                let s = sw(name);
                snap(s, &mut snaps);
                let path: Vec<SwitchIx> = rest.iter().map(|x| sw(x)).collect();
                let seg = f
                    .segments
                    .find(&path)
                    .unwrap_or_else(|| panic!("{at}: {} is not a segment", rest.join(" ")));
                let fl = flow(num(n) as u32);
                let bf = f.codec.segment_bf[seg as usize];
                let m = &mut snaps.get_mut(&s).unwrap().dsm;
                m.update_n(&fl, FlowHashes::of(&fl), bf, num(c) as u32);
            }
            ["dsm", name, "flow", n, "pathbf", bf, "count", c] => {
                let s = sw(name);
                snap(s, &mut snaps);
                let fl = flow(num(n) as u32);
                let m = &mut snaps.get_mut(&s).unwrap().dsm;
                m.update_n(&fl, FlowHashes::of(&fl), num(bf) as u32, num(c) as u32);
            }
            ["bump", name, meter, "flow", n, "row", r] => {
                let s = sw(name);
                let h = FlowHashes::of(&flow(num(n) as u32));
                let row = num(r) as usize;
                let pos = row * cfg.width + meter_index(h, row, cfg.width);
                let sn = snaps
                    .get_mut(&s)
                    .unwrap_or_else(|| panic!("{at}: {name} has no meters yet"));
                match meter {
                    "usm" => sn.usm = edited(&sn.usm, |b| b[pos].count += 1),
                    "dsm" => sn.dsm = edited(&sn.dsm, |b| b[pos].count += 1),
                    _ => panic!("{at}: `bump SWITCH usm|dsm flow N row R`"),
                }
            }
            _ => panic!("{at}: cannot read `{line}`"),
        }
    }
    let f = fab.unwrap_or_else(|| panic!("{}: no topology", file.display()));
    (f, snaps.into_values().collect())
}

fn render(f: &Fabric, snaps: &[MeterSnapshot]) -> String {
    let det = minus_meters(&f.segments, &f.codec, snaps);
    let name = |seg: u32| -> String {
        let s = f.segments.get(seg);
        s.switches
            .iter()
            .map(|&x| f.topo.name_of(x).to_string())
            .collect::<Vec<_>>()
            .join(">")
    };
    let flow_no = |fl: &FlowId| (0..100u32).find(|&n| flow(n) == *fl).map_or(-1, i64::from);
    let mut out = String::new();
    for e in &det.entries {
        let _ = writeln!(
            out,
            "entry {} flow {} sent {} lost {}",
            name(e.segment),
            flow_no(&e.flow),
            e.sent,
            e.lost
        );
    }
    let mut w = Window::new(1);
    w.push(det.segments.clone());
    let obs = observations(&f.segments, &w.totals(), 1);
    for o in &obs.segments {
        let c = det.segments[&o.segment];
        let _ = writeln!(
            out,
            "segment {} sent {} lost {} flows {} success {:.6}",
            name(o.segment),
            c.sent,
            c.lost,
            c.flows,
            o.success
        );
    }
    let a = det.anomalies;
    let _ = writeln!(
        out,
        "anomalies undecodable {} ambiguous {} no_clean_usm {} upstream_missing {} \
         negative_loss {} torn {} dirty_dsm_buckets {} dirty_usm_buckets {}",
        a.undecodable,
        a.ambiguous,
        a.no_clean_usm,
        a.upstream_missing,
        a.negative_loss,
        a.torn,
        a.dirty_dsm_buckets,
        a.dirty_usm_buckets
    );
    for (s, n) in &det.torn_at {
        let _ = writeln!(out, "torn at {} {n}", f.topo.name_of(*s));
    }
    out
}

#[test]
fn every_minus_meters_case_gives_its_recorded_counts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/minus_meters");
    golden(&dir, 5, |file, input| {
        let (f, snaps) = snapshots(file, input);
        render(&f, &snaps)
    });
}
