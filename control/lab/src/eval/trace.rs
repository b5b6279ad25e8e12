//! Bounce probes to and from Flock's trace format ([`canary_core::localize::flock_trace`]).
//!
//! Switch IDs in the trace are the topology's switch indices (all below `OFFSET_HOST`, so every
//! flow reads as an active probe). A bounce probe visiting switches `s0 s1 … sn` (`s0 = sn`, its
//! edge switch) becomes one flow `FID s0 sn s1 s(n−1) nbytes 0.0`, `FPT s1 … s(n−1)` and one
//! `SS 0.0 sent lost 0`; nbytes = 1500 × sent. That is how the repository's own flow simulator
//! writes a flow whose ends are switches (`flow_simulator/utils.py`, `PrintLogsSilentDrop`: the
//! FID's rack fields are the complete path's second and next-to-last nodes, FPT is the path
//! without its two ends), and how its reader puts the path together again
//! (`localization/c++/utils/utils.cpp`, `GetCompletePaths`: FID src, then FPT, then FID dst).
//! Every distinct FPT is also written as an `FP` candidate, every fault as
//! `Failing_link from to rate`, and [`topology_text`] gives the companion topology file the
//! reader needs (`GetLinkMappings`: one `a b` line per undirected link).
//!
//! (An earlier layout wrote `FID e e e e` with the whole path in FPT. Checked against the
//! reference reader built by hand, that adds a self-hop `e→e` at both ends, which the reader takes
//! for device `e`'s link; with Flock's device links on, the path then overflows its fixed path
//! buffer, `MAX_PATH_LENGTH` = 10. See docs/eval.md.)
//!
//! Reading back follows the reference reader: the path is FID src, FPT, FID dst; a self-hop
//! (the reader's device link) is not a link and is dropped, so both layouts read back. Each
//! remaining hop must be a link of the same topology. Flows with no `FPT` or nothing sent are
//! skipped, as Flock's reader does.

use crate::{Error, Result};
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

/// Where the companion topology file of trace `trace` goes: `<trace>.topo`.
pub fn topology_path(trace: &std::path::Path) -> std::path::PathBuf {
    let mut name = trace.as_os_str().to_os_string();
    name.push(".topo");
    std::path::PathBuf::from(name)
}

/// The companion topology file of Flock's reader: one `a b` line per undirected switch link.
pub fn topology_text(topo: &Topology) -> String {
    let mut out = String::new();
    for l in &topo.links {
        if l.from < l.to {
            out.push_str(&format!("{} {}\n", l.from, l.to));
        }
    }
    out
}

/// A Flock trace holding `probes` and the ground truth `faults`. Paths of fewer than two links
/// have no FPT in this layout and are left out (bounce probes always have four).
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
    for p in probes.iter().filter(|p| p.links.len() >= 2) {
        let path = switch_path(topo, &p.links);
        let n = path.len();
        let inner = path[1..n - 1].to_vec();
        if !candidate_paths.contains(&inner) {
            candidate_paths.push(inner.clone());
        }
        flows.push(TraceFlow {
            src: path[0],
            dst: path[n - 1],
            src_tor: path[1],
            dst_tor: path[n - 2],
            nbytes: BYTES_PER_PACKET * u64::from(p.sent),
            start_ms: 0.0,
            path: Some(inner),
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
    let trace = FlockTrace::parse(text).map_err(|error| Error::Trace {
        file: file.into(),
        error,
    })?;
    let lines = fpt_lines(text);
    let n = topo.switches.len() as u32;
    let mut probes = Vec::new();
    for (f, line) in trace.flows.iter().zip(lines) {
        let (Some(fpt), Some(line)) = (&f.path, line) else {
            continue;
        };
        let at_line = |message: String| Error::TraceFlow {
            file: file.into(),
            line,
            message,
        };
        // FID src, FPT, FID dst (the reference reader's GetCompletePaths); self-hops dropped.
        let mut path: Vec<u32> = Vec::with_capacity(fpt.len() + 2);
        for &s in std::iter::once(&f.src)
            .chain(fpt)
            .chain(std::iter::once(&f.dst))
        {
            if path.last() != Some(&s) {
                path.push(s);
            }
        }
        if let Some(&bad) = path.iter().find(|&&s| s >= n) {
            let message = format!("switch {bad} is not in {} ({n} switches)", topo.name);
            return Err(at_line(message));
        }
        let links = path
            .windows(2)
            .map(|h| {
                topo.link(h[0] as SwitchIx, h[1] as SwitchIx)
                    .ok_or_else(|| {
                        at_line(format!(
                            "no link {}→{} ({}→{}) in {}",
                            h[0],
                            h[1],
                            topo.name_of(h[0]),
                            topo.name_of(h[1]),
                            topo.name
                        ))
                    })
            })
            .collect::<Result<Vec<LinkIx>>>()?;
        let Some(ss) = f.latest(f64::INFINITY).filter(|s| s.sent > 0) else {
            continue;
        };
        let sent = u32::try_from(ss.sent)
            .map_err(|_| at_line("the flow of this FPT sent too many packets".into()))?;
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
                .map(|link| Fault::constant(link, f.rate))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::localize::flock_trace::MAX_PATH_LINKS;
    use canary_core::topo::{fattree::fattree, MonitorPlacement};
    use canary_sim::bounce_probes::bounce_probes;
    use rand::SeedableRng;

    #[test]
    fn probes_survive_a_round_trip_through_text() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let mut loss = vec![0.0; t.links.len()];
        let bad = t.link_by_names("agg1_0", "core1").unwrap();
        loss[bad as usize] = 0.2;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let probes = bounce_probes(&t, &loss, 100, &mut rng);
        let faults = [Fault::constant(bad, 0.2)];
        let text = write_probes(&t, &probes, &faults).to_text();
        assert!(text.starts_with("Failing_link "));
        assert_eq!(read_probes(&t, &text, "x").unwrap(), probes);
        let trace = FlockTrace::parse(&text).unwrap();
        assert_eq!(failing_links(&t, &trace), faults);
    }

    /// Follows the reference reader on one flow, with device links on as its Flock
    /// (`BayesianNet`) sets them: `localization/c++/utils/utils.cpp` `ReadPath` (each FPT node
    /// twice, a device link between), `GetCompletePaths` (FID src before, FID dst after, each
    /// again if it is a switch), then `utils/logdata.cpp` `GetLinkIdPath` (first hop, the hops
    /// between, last hop). Returns every hop, first and last included, and the number of hops
    /// between, which go into a path of at most `MAX_PATH_LENGTH` (`utils/defs.h`, 10) entries.
    fn reference_hops(f: &TraceFlow) -> (Vec<(u32, u32)>, usize) {
        use canary_core::localize::flock_trace::OFFSET_HOST;
        let mut nodes: Vec<u32> = Vec::new();
        for &s in f.path.as_ref().expect("FPT") {
            nodes.extend([s, s]);
        }
        if nodes.is_empty() {
            nodes.push(f.src_tor);
        }
        nodes.insert(0, f.src);
        nodes.push(f.dst);
        if f.src < OFFSET_HOST {
            nodes.insert(0, f.src);
        }
        if f.dst < OFFSET_HOST {
            nodes.push(f.dst);
        }
        assert!(nodes.len() > 2);
        let hops: Vec<(u32, u32)> = nodes.windows(2).map(|w| (w[0], w[1])).collect();
        let between = hops.len() - 2;
        (hops, between)
    }

    #[test]
    fn exported_flows_read_by_the_reference_reader_give_the_probe_links() {
        let t = fattree(8, MonitorPlacement::TopAndBottom).unwrap();
        let loss = vec![0.01; t.links.len()];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let probes = bounce_probes(&t, &loss, 20, &mut rng);
        let trace = write_probes(&t, &probes, &[]);
        assert_eq!(trace.flows.len(), probes.len());
        for (f, p) in trace.flows.iter().zip(&probes) {
            let (hops, between) = reference_hops(f);
            // Within the reader's fixed path buffer.
            assert!(between <= MAX_PATH_LINKS, "{between} hops: {f:?}");
            // Self-hops are device links; the others are the probe's links, in order.
            let links: Vec<LinkIx> = hops
                .iter()
                .filter(|(a, b)| a != b)
                .map(|&(a, b)| t.link(a, b).expect("a link of the topology"))
                .collect();
            assert_eq!(links, p.links);
            // Devices: the edge switch at both ends, each switch between once per visit.
            let devices = hops.iter().filter(|(a, b)| a == b).count();
            assert_eq!(devices, p.links.len() + 1);
        }
        // The earlier layout (FID e e e e, whole path in FPT) overflowed that buffer.
        let f = &trace.flows[0];
        let old = TraceFlow {
            src_tor: f.src,
            dst_tor: f.dst,
            path: Some(switch_path(&t, &probes[0].links)),
            ..f.clone()
        };
        assert_eq!(reference_hops(&old).1, 11);
        // Both layouts read back to the same probe.
        let mut text = trace.to_text();
        text.push_str(
            &FlockTrace {
                flows: vec![old],
                ..Default::default()
            }
            .to_text(),
        );
        let back = read_probes(&t, &text, "x").unwrap();
        assert_eq!(back.last(), back.first());
        assert_eq!(back[0], probes[0]);
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
