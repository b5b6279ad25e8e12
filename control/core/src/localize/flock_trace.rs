//! The text trace format of Flock's reference implementation (`netarch/FaultLocalization`), as
//! its code reads and writes it: writing ([`FlockTrace::to_text`]) and parsing
//! ([`FlockTrace::parse`]). Whitespace-separated records, in this order:
//!
//! 1. `Failing_link u v rate` — ground truth (directed link `u→v`, drop rate); all come first.
//! 2. `FP s1 … sn` — a candidate path between ToRs `s1` and `sn` (switch IDs); before any flow.
//!    A flow's candidate set is every FP line from its `src_tor` to its `dst_tor`.
//! 3. Per flow: `FID src dst src_tor dst_tor nbytes start_ms`, then `FPT s1 … sn` (path taken,
//!    ToR to ToR), optional `FPRT …` (reverse path), and any number of cumulative
//!    `SS time_ms sent lost randomly_lost` snapshots.
//!
//! Pure: strings in, strings out. It does not read the companion topology file, map switch IDs
//! to [`crate::topo::LinkIx`], or drop flows (the reference reader discards flows with 0 packets
//! sent or without exactly one FPT; [`TraceFlow::latest`] helps a caller do the same).

use std::fmt::Write as _;

/// Host IDs start here; a flow whose `src` or `dst` is below it is an active probe.
pub const OFFSET_HOST: u32 = 10_000;
/// Most links a path line may have (the reference reader's `MAX_PATH_LENGTH`).
pub const MAX_PATH_LINKS: usize = 10;

#[derive(Clone, Debug, PartialEq)]
pub struct FailingLink {
    pub from: u32,
    pub to: u32,
    pub rate: f64,
}

/// One cumulative `SS` record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Snapshot {
    pub time_ms: f64,
    pub sent: u64,
    pub lost: u64,
    pub randomly_lost: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TraceFlow {
    pub src: u32,
    pub dst: u32,
    pub src_tor: u32,
    pub dst_tor: u32,
    pub nbytes: u64,
    pub start_ms: f64,
    /// `FPT`: switch IDs from source ToR to destination ToR.
    pub path: Option<Vec<u32>>,
    /// `FPRT`: the reverse path, if written.
    pub reverse_path: Option<Vec<u32>>,
    pub snapshots: Vec<Snapshot>,
}

impl TraceFlow {
    /// An active probe (one end is a switch, not a host).
    pub fn is_probe(&self) -> bool {
        self.src < OFFSET_HOST || self.dst < OFFSET_HOST
    }

    /// The latest snapshot at or before `end_ms` (the one the localizers use).
    pub fn latest(&self, end_ms: f64) -> Option<&Snapshot> {
        self.snapshots
            .iter()
            .filter(|s| s.time_ms <= end_ms)
            .max_by(|a, b| a.time_ms.total_cmp(&b.time_ms))
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlockTrace {
    pub failing: Vec<FailingLink>,
    /// `FP` lines, in file order.
    pub candidate_paths: Vec<Vec<u32>>,
    pub flows: Vec<TraceFlow>,
}

/// A malformed trace; `line` is 1-based.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("line {line}: unknown record `{op}`")]
    UnknownRecord { line: usize, op: String },
    #[error("line {line}: `{op}` expects {expected}")]
    BadFields {
        line: usize,
        op: &'static str,
        expected: &'static str,
    },
    #[error("line {line}: `{op}` must come before {before}")]
    OutOfOrder {
        line: usize,
        op: &'static str,
        before: &'static str,
    },
    #[error("line {line}: `{op}` outside a flow (no FID yet)")]
    NoFlow { line: usize, op: &'static str },
    #[error("line {line}: a flow has at most one `{op}`")]
    Duplicate { line: usize, op: &'static str },
    #[error("line {line}: path has {links} links, more than {MAX_PATH_LINKS}")]
    PathTooLong { line: usize, links: usize },
}

fn write_path(out: &mut String, op: &str, path: &[u32]) {
    out.push_str(op);
    for s in path {
        let _ = write!(out, " {s}");
    }
    out.push('\n');
}

impl FlockTrace {
    /// Every candidate (`FP`) path from `src_tor` to `dst_tor`.
    pub fn candidates(&self, src_tor: u32, dst_tor: u32) -> impl Iterator<Item = &Vec<u32>> {
        self.candidate_paths
            .iter()
            .filter(move |p| p.first() == Some(&src_tor) && p.last() == Some(&dst_tor))
    }

    /// The trace as text, records in the order the reference reader requires. Floats use
    /// Rust's shortest round-trip form (so parsing gives back the same values).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for f in &self.failing {
            let _ = writeln!(out, "Failing_link {} {} {:?}", f.from, f.to, f.rate);
        }
        for p in &self.candidate_paths {
            write_path(&mut out, "FP", p);
        }
        for f in &self.flows {
            let _ = writeln!(
                out,
                "FID {} {} {} {} {} {:?}",
                f.src, f.dst, f.src_tor, f.dst_tor, f.nbytes, f.start_ms
            );
            if let Some(p) = &f.path {
                write_path(&mut out, "FPT", p);
            }
            if let Some(p) = &f.reverse_path {
                write_path(&mut out, "FPRT", p);
            }
            for s in &f.snapshots {
                let _ = writeln!(
                    out,
                    "SS {:?} {} {} {}",
                    s.time_ms, s.sent, s.lost, s.randomly_lost
                );
            }
        }
        out
    }

    /// Parses a trace; blank lines are skipped, anything else out of place is an error.
    pub fn parse(text: &str) -> Result<Self, TraceError> {
        let mut trace = Self::default();
        for (i, raw) in text.lines().enumerate() {
            let mut it = raw.split_whitespace();
            let Some(op) = it.next() else { continue };
            let rec = Record {
                line: i + 1,
                fields: it.collect(),
            };
            let line = rec.line;
            match op {
                "Failing_link" => {
                    if !trace.candidate_paths.is_empty() || !trace.flows.is_empty() {
                        let before = "FP and FID records";
                        return Err(TraceError::OutOfOrder {
                            line,
                            op: "Failing_link",
                            before,
                        });
                    }
                    trace.failing.push(rec.failing_link()?);
                }
                "FP" => {
                    if !trace.flows.is_empty() {
                        let before = "the first FID";
                        return Err(TraceError::OutOfOrder {
                            line,
                            op: "FP",
                            before,
                        });
                    }
                    trace.candidate_paths.push(rec.path("FP")?);
                }
                "FID" => trace.flows.push(rec.flow()?),
                "FPT" | "FPRT" | "SS" => rec.add_to_flow(op, &mut trace.flows)?,
                other => {
                    return Err(TraceError::UnknownRecord {
                        line,
                        op: other.to_string(),
                    })
                }
            }
        }
        Ok(trace)
    }
}

/// One non-blank line of a trace: its 1-based number and the fields after the record name.
struct Record<'a> {
    line: usize,
    fields: Vec<&'a str>,
}

impl Record<'_> {
    fn bad(&self, op: &'static str, expected: &'static str) -> TraceError {
        TraceError::BadFields {
            line: self.line,
            op,
            expected,
        }
    }

    /// The fields as a path line `op s1 … sn`: at least one switch ID, at most
    /// [`MAX_PATH_LINKS`] links.
    fn path(&self, op: &'static str) -> Result<Vec<u32>, TraceError> {
        let p = self
            .fields
            .iter()
            .map(|f| f.parse::<u32>())
            .collect::<Result<Vec<u32>, _>>()
            .map_err(|_| self.bad(op, "switch IDs"))?;
        if p.is_empty() {
            return Err(self.bad(op, "at least one switch ID"));
        }
        if p.len() - 1 > MAX_PATH_LINKS {
            return Err(TraceError::PathTooLong {
                line: self.line,
                links: p.len() - 1,
            });
        }
        Ok(p)
    }

    /// `Failing_link u v rate`.
    fn failing_link(&self) -> Result<FailingLink, TraceError> {
        let expected = "`u v rate`";
        let [u, v, r] = self.fields[..] else {
            return Err(self.bad("Failing_link", expected));
        };
        let (from, to, rate) = (u.parse(), v.parse(), r.parse());
        let (Ok(from), Ok(to), Ok(rate)) = (from, to, rate) else {
            return Err(self.bad("Failing_link", expected));
        };
        Ok(FailingLink { from, to, rate })
    }

    /// `FID src dst src_tor dst_tor nbytes start_ms`: a flow without paths or snapshots yet.
    fn flow(&self) -> Result<TraceFlow, TraceError> {
        let expected = "`src dst src_tor dst_tor nbytes start_ms`";
        let [a, b, c, d, n, t] = self.fields[..] else {
            return Err(self.bad("FID", expected));
        };
        let ids: Result<Vec<u32>, _> = [a, b, c, d].iter().map(|s| s.parse()).collect();
        let (Ok(ids), Ok(nbytes), Ok(start_ms)) = (ids, n.parse(), t.parse()) else {
            return Err(self.bad("FID", expected));
        };
        Ok(TraceFlow {
            src: ids[0],
            dst: ids[1],
            src_tor: ids[2],
            dst_tor: ids[3],
            nbytes,
            start_ms,
            path: None,
            reverse_path: None,
            snapshots: Vec::new(),
        })
    }

    /// `SS time_ms sent lost randomly_lost`.
    fn snapshot(&self) -> Result<Snapshot, TraceError> {
        let expected = "`time_ms sent lost randomly_lost`";
        let [t, s, l, r] = self.fields[..] else {
            return Err(self.bad("SS", expected));
        };
        let v = (t.parse(), s.parse(), l.parse(), r.parse());
        let (Ok(time_ms), Ok(sent), Ok(lost), Ok(randomly_lost)) = v else {
            return Err(self.bad("SS", expected));
        };
        Ok(Snapshot {
            time_ms,
            sent,
            lost,
            randomly_lost,
        })
    }

    /// An `FPT`, `FPRT` or `SS` record, which belongs to the latest flow. A path is checked
    /// before there must be a flow, so a bad path is reported as such even outside one.
    fn add_to_flow(&self, op: &str, flows: &mut [TraceFlow]) -> Result<(), TraceError> {
        let op: &'static str = match op {
            "FPT" => "FPT",
            "FPRT" => "FPRT",
            _ => "SS",
        };
        let parsed = if op == "SS" {
            None
        } else {
            Some(self.path(op)?)
        };
        let line = self.line;
        let flow = flows.last_mut().ok_or(TraceError::NoFlow { line, op })?;
        match (op, parsed) {
            ("FPT", Some(p)) if flow.path.is_none() => flow.path = Some(p),
            ("FPRT", Some(p)) if flow.reverse_path.is_none() => flow.reverse_path = Some(p),
            ("SS", _) => flow.snapshots.push(self.snapshot()?),
            _ => return Err(TraceError::Duplicate { line, op }),
        }
        Ok(())
    }
}
