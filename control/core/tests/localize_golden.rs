//! Data-driven golden tests of the localizers' small cases, in the way of raft-rs's
//! `datadriven`: every file in `testdata/localize/` holds a case — a topology, a localizer and
//! what it observed, one path per line — then a `----` line and the verdict the localizer gave.
//! A changed verdict fails with a diff of the file. `CANARY_REWRITE_GOLDEN=1 cargo test -p canary-core
//! --test localize_golden` rewrites the expected verdicts instead; review them with `git diff`.
//!
//! The case format (`#` starts a comment):
//!
//! ```text
//! topology fattree:4
//! localizer canary        # canary, canary-cd1, netbouncer, netbouncer-stage, flock, 007, detector
//! path edge0_0 agg0_0 core0 sent 1000 lost 300   # the switches crossed, packets sent and lost
//! ----
//! ```
//!
//! What a path is to each localizer: a monitored segment (Canary: it must be one of the
//! topology's segments), a bounce or probe path walked out and back (NetBouncer, deTector: give
//! the whole walk), a flow with a known path (Flock, directed links), a TCP flow whose
//! retransmissions are its lost packets and which is traced when it has any (007).

use canary_core::detect::{Observations, ObservedSegment};
use canary_core::localize::{
    Canary, CdOnSegments, Detector, Flock, FlockFlow, FlockInput, FlowReport007, Granularity,
    Localizer, NetBouncer, NetBouncerParams, PathProbe, ProbePath, Verdict, Vote007,
};
use canary_core::topo::fattree::fattree;
use canary_core::topo::{LinkIx, MonitorPlacement, Routing, Segments, Topology};
use canary_testkit::golden;
use std::fmt::Write;
use std::path::Path;

/// One observed path of a case file.
struct Observed {
    switches: Vec<String>,
    sent: u64,
    lost: u64,
}

struct Case {
    topology: String,
    localizer: String,
    paths: Vec<Observed>,
}

fn parse(file: &Path, input: &str) -> Case {
    let mut case = Case {
        topology: String::new(),
        localizer: String::new(),
        paths: Vec::new(),
    };
    for (n, raw) in input.lines().enumerate() {
        let line = raw.split('#').next().unwrap().trim();
        let at = format!("{}:{}", file.display(), n + 1);
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            ["topology", spec] => case.topology = spec.to_string(),
            ["localizer", name] => case.localizer = name.to_string(),
            ["path", rest @ ..] => {
                let cut = rest
                    .iter()
                    .position(|w| *w == "sent")
                    .unwrap_or_else(|| panic!("{at}: `path S1 S2 … sent N lost M`"));
                let number = |i: usize, name: &str| -> u64 {
                    assert_eq!(rest.get(i), Some(&name), "{at}: expected `{name}`");
                    rest.get(i + 1)
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| panic!("{at}: `{name}` needs a number"))
                };
                case.paths.push(Observed {
                    switches: rest[..cut].iter().map(|s| s.to_string()).collect(),
                    sent: number(cut, "sent"),
                    lost: number(cut + 2, "lost"),
                });
            }
            _ => panic!("{at}: cannot read `{line}`"),
        }
    }
    case
}

fn topology(at: &Path, spec: &str) -> Topology {
    let k = spec
        .strip_prefix("fattree:")
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("{}: topology `{spec}`: only fattree:K", at.display()));
    fattree(k, MonitorPlacement::TopAndBottom).expect("a fat-tree")
}

fn links(at: &Path, topo: &Topology, switches: &[String]) -> Vec<LinkIx> {
    switches
        .windows(2)
        .map(|w| {
            topo.link_by_names(&w[0], &w[1])
                .unwrap_or_else(|| panic!("{}: no link {} -> {}", at.display(), w[0], w[1]))
        })
        .collect()
}

fn segment_observations(at: &Path, topo: &Topology, case: &Case) -> Observations {
    let segments = Segments::new(topo, &Routing::new(topo));
    let segments = case
        .paths
        .iter()
        .map(|p| {
            let ids: Vec<_> = p
                .switches
                .iter()
                .map(|s| topo.switch(s).expect("a switch of the topology"))
                .collect();
            let id = segments.find(&ids).unwrap_or_else(|| {
                panic!(
                    "{}: {} is not a segment",
                    at.display(),
                    p.switches.join(" ")
                )
            });
            ObservedSegment {
                segment: id,
                subproblem: segments.subproblem_of[id as usize],
                links: segments.get(id).links.clone(),
                sent: p.sent,
                lost: p.lost,
                success: 1.0 - p.lost as f64 / p.sent as f64,
                background: false,
                flows: Vec::new(),
            }
        })
        .collect();
    Observations { segments }
}

fn run(at: &Path, topo: &Topology, case: &Case) -> Verdict {
    let walks: Vec<Vec<LinkIx>> = case
        .paths
        .iter()
        .map(|p| links(at, topo, &p.switches))
        .collect();
    let sent_lost = || case.paths.iter().map(|p| (p.sent, p.lost));
    match case.localizer.as_str() {
        "canary" => Canary::default().localize(topo, &segment_observations(at, topo, case)),
        "canary-cd1" => {
            CdOnSegments::default().localize(topo, &segment_observations(at, topo, case))
        }
        "netbouncer" | "netbouncer-stage" => {
            let params = if case.localizer == "netbouncer" {
                NetBouncerParams::default()
            } else {
                NetBouncerParams::staged()
            };
            let probes: Vec<ProbePath> = walks
                .iter()
                .zip(sent_lost())
                .map(|(l, (sent, lost))| ProbePath {
                    links: l.clone(),
                    sent: sent as u32,
                    received: (sent - lost) as u32,
                })
                .collect();
            NetBouncer { params }.localize(topo, &probes)
        }
        "flock" => {
            let flows = walks
                .iter()
                .zip(sent_lost())
                .map(|(l, (sent, lost))| FlockFlow {
                    paths: vec![l.clone()],
                    sent,
                    lost,
                })
                .collect();
            let input = FlockInput {
                granularity: Granularity::Directed,
                flows,
            };
            Flock::default().localize(topo, &input)
        }
        "007" => {
            let flows: Vec<FlowReport007> = walks
                .iter()
                .zip(sent_lost())
                .map(|(l, (sent, lost))| FlowReport007 {
                    path: (lost > 0).then(|| l.clone()),
                    packets: sent as u32,
                    retransmissions: lost as u32,
                })
                .collect();
            Vote007::default().localize(topo, &flows)
        }
        "detector" => {
            let probes: Vec<PathProbe> = walks
                .iter()
                .zip(sent_lost())
                .map(|(l, (sent, lost))| PathProbe {
                    links: l.clone(),
                    sent: sent as u32,
                    lost: lost as u32,
                })
                .collect();
            Detector::default().localize(topo, &probes)
        }
        other => panic!("{}: no localizer `{other}`", at.display()),
    }
}

/// The verdict as the case files hold it: one line per blamed link, then the stages.
fn render(topo: &Topology, v: &Verdict) -> String {
    let mut out = String::new();
    if v.blamed.is_empty() {
        out.push_str("nothing blamed\n");
    }
    for b in &v.blamed {
        let [from, to] = topo.link_names(b.link);
        let _ = writeln!(
            out,
            "blamed {from}->{to} loss {:.4} stage {}",
            b.loss, b.stage
        );
    }
    for (i, s) in v.stages.iter().enumerate() {
        let names: Vec<String> = s
            .iter()
            .map(|&l| {
                let [a, b] = topo.link_names(l);
                format!("{a}->{b}")
            })
            .collect();
        let _ = writeln!(out, "stage {i}: {}", names.join(" "));
    }
    out
}

#[test]
fn every_localizer_case_gives_its_recorded_verdict() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/localize");
    golden(&dir, 7, |file, input| {
        let case = parse(file, input);
        let topo = topology(file, &case.topology);
        render(&topo, &run(file, &topo, &case))
    });
}
