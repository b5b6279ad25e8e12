//! Bounce probes to and from Flock's trace format ([`canary_core::localize::flock_trace`]).
//!
//! Switch IDs in the trace are the topology's switch indices (all below `OFFSET_HOST`, so every
//! flow reads as an active probe). A bounce probe from edge switch `e` becomes one flow
//! `FID e e e e nbytes 0.0` with `FPT` = its switch path (`e … top … e`) and one
//! `SS 0.0 sent lost 0`; nbytes = 1500 × sent as Flock's simulator writes. Every distinct path
//! is also written as an `FP` candidate, and every fault as `Failing_link from to rate`.
//!
//! Reading back needs the same topology: each `FPT` hop must be a link of it. Flows with no
//! `FPT` or nothing sent are skipped, as Flock's reader does.

use anyhow::{anyhow, bail, Result};
use canary_core::fault::Fault;
use canary_core::localize::flock_trace::{FailingLink, FlockTrace, Snapshot, TraceFlow};
use canary_core::localize::netbouncer::ProbePath;
use canary_core::topo::{LinkIx, SwitchIx, Topology};

const BYTES_PER_PACKET: u64 = 1500;

/// The switches a probe path visits, in order.
fn switch_path(topo: &Topology, links: &[LinkIx]) -> Vec<u32> {
    let mut p: Vec<u32> = links
        .first()
        .map(|&l| vec![topo.links[l as usize].from])
        .unwrap_or_default();
    p.extend(links.iter().map(|&l| topo.links[l as usize].to));
    p
}

/// A Flock trace holding `probes` and the ground truth `faults`.
pub fn write_probes(topo: &Topology, probes: &[ProbePath], faults: &[Fault]) -> FlockTrace {
    let failing = faults
        .iter()
        .map(|f| {
            let l = topo.links[f.link as usize];
            FailingLink {
                from: l.from,
                to: l.to,
                rate: f.loss,
            }
        })
        .collect();
    let mut candidate_paths: Vec<Vec<u32>> = Vec::new();
    let mut flows = Vec::new();
    for p in probes.iter().filter(|p| !p.links.is_empty()) {
        let path = switch_path(topo, &p.links);
        if !candidate_paths.contains(&path) {
            candidate_paths.push(path.clone());
        }
        let (src, dst) = (path[0], *path.last().expect("non-empty"));
        flows.push(TraceFlow {
            src,
            dst,
            src_tor: src,
            dst_tor: dst,
            nbytes: BYTES_PER_PACKET * u64::from(p.sent),
            start_ms: 0.0,
            path: Some(path),
            reverse_path: None,
            snapshots: vec![Snapshot {
                time_ms: 0.0,
                sent: u64::from(p.sent),
                lost: u64::from(p.sent.saturating_sub(p.received)),
                randomly_lost: 0,
            }],
        });
    }
    FlockTrace {
        failing,
        candidate_paths,
        flows,
    }
}

/// 1-based line of each flow's `FPT` record (`None` where a flow has none), in flow order.
fn fpt_lines(text: &str) -> Vec<Option<usize>> {
    let mut out: Vec<Option<usize>> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match line.split_whitespace().next() {
            Some("FID") => out.push(None),
            Some("FPT") => {
                if let Some(last) = out.last_mut() {
                    last.get_or_insert(i + 1);
                }
            }
            _ => {}
        }
    }
    out
}

/// Parses a trace and turns its flows into probe paths on `topo`; errors name `file` and line.
pub fn read_probes(topo: &Topology, text: &str, file: &str) -> Result<Vec<ProbePath>> {
    let trace = FlockTrace::parse(text).map_err(|e| anyhow!("{file}: {e}"))?;
    let lines = fpt_lines(text);
    let n = topo.switches.len() as u32;
    let mut probes = Vec::new();
    for (f, line) in trace.flows.iter().zip(lines) {
        let (Some(path), Some(line)) = (&f.path, line) else {
            continue;
        };
        if let Some(&bad) = path.iter().find(|&&s| s >= n) {
            bail!(
                "{file}: line {line}: switch {bad} is not in {} ({n} switches)",
                topo.name
            );
        }
        let links = path
            .windows(2)
            .map(|h| {
                topo.link(h[0] as SwitchIx, h[1] as SwitchIx)
                    .ok_or_else(|| {
                        anyhow!(
                            "{file}: line {line}: no link {}→{} ({}→{}) in {}",
                            h[0],
                            h[1],
                            topo.name_of(h[0]),
                            topo.name_of(h[1]),
                            topo.name
                        )
                    })
            })
            .collect::<Result<Vec<LinkIx>>>()?;
        let Some(ss) = f.latest(f64::INFINITY).filter(|s| s.sent > 0) else {
            continue;
        };
        let sent = u32::try_from(ss.sent)
            .map_err(|_| anyhow!("{file}: flow with FPT at line {line}: too many packets"))?;
        let lost = u32::try_from(ss.lost.min(ss.sent)).expect("at most sent");
        probes.push(ProbePath {
            links,
            sent,
            received: sent - lost,
        });
    }
    Ok(probes)
}

/// The trace's `Failing_link` ground truth as directed links of `topo` (unknown hops skipped).
pub fn failing_links(topo: &Topology, trace: &FlockTrace) -> Vec<Fault> {
    trace
        .failing
        .iter()
        .filter_map(|f| {
            let n = topo.switches.len() as u32;
            if f.from >= n || f.to >= n {
                return None;
            }
            topo.link(f.from, f.to)
                .map(|link| Fault { link, loss: f.rate })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::topo::{fattree::fattree, MonitorPlacement};
    use canary_sim::probes::bounce_probes;
    use rand::SeedableRng;

    #[test]
    fn probes_survive_a_round_trip_through_text() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let mut loss = vec![0.0; t.links.len()];
        let bad = t.link_by_names("agg1_0", "core1").unwrap();
        loss[bad as usize] = 0.2;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let probes = bounce_probes(&t, &loss, 100, &mut rng);
        let faults = [Fault {
            link: bad,
            loss: 0.2,
        }];
        let text = write_probes(&t, &probes, &faults).to_text();
        assert!(text.starts_with("Failing_link "));
        assert_eq!(read_probes(&t, &text, "x").unwrap(), probes);
        let trace = FlockTrace::parse(&text).unwrap();
        assert_eq!(failing_links(&t, &trace), faults);
    }

    #[test]
    fn errors_name_file_and_line() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let e = read_probes(&t, "FID 1 1 1 1 1500 0.0\nFPT 0 1\nSS 0 1 0 0\n", "t.txt");
        let msg = e.unwrap_err().to_string();
        assert!(msg.starts_with("t.txt: line 2: no link"), "{msg}");
        let e = read_probes(&t, "FID 1 1 1 1 1500 0.0\nFPT 0 999\n", "t.txt");
        assert!(e.unwrap_err().to_string().contains("line 2: switch 999"));
        let e = read_probes(&t, "FP 1 2\nbogus\n", "t.txt");
        assert_eq!(
            e.unwrap_err().to_string(),
            "t.txt: line 2: unknown record `bogus`"
        );
    }
}
