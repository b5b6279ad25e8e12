//! `canary decision`: the decision's statistics on counts the testbed measured.
//!
//! `testbed/score.py` asks, for a finished run, whether a segment's counts cross the decision
//! ([`lossy_in_total`]), how many packets a segment must carry for a loss to cross it (the
//! smallest count whose [`smallest_shown`] reaches that loss), and a healthy segment's loss
//! ([`DecisionParams::p0`]), with the decision's own defaults: it computes none of them itself.
//!
//! The query (a JSON file, or `-` for stdin):
//! `{"segments": 80, "links": 64, "declares": [{"sent": 1000, "lost": 9, "links": 3}],
//!   "pooled": [[{"sent": 300, "lost": 4, "links": 2}, {"sent": 200, "lost": 3, "links": 2}]],
//!   "needed": [{"loss": 0.01, "links": 2}], "p0": [2]}`:
//! the fabric's segments and the links they cross (together, how many tests the run's decision
//! makes: [`total_tests`]), segments' counts to test, one link's segments to test together
//! ([`link_lossy_in_total`]), losses to ask the packets of, and segment lengths to ask p0 of.
//! The answer has the parameters, the threshold and one answer per question, in order
//! (`needed` is null where no count would do: a loss at or below the background).

use anyhow::{bail, Context, Result};
use canary_core::decide::{
    link_lossy_in_total, lossy_in_total, smallest_shown, total_tests, DecisionParams,
};
use canary_core::detect::SegmentCount;
use clap::Args;
use serde_json::{json, Value};
use std::io::Read;

#[derive(Args)]
pub struct DecisionArgs {
    /// The query: a JSON file, or `-` for stdin. Without it, only the parameters are printed.
    #[arg(long)]
    query: Option<String>,
    /// The most a healthy link loses, per packet (the controller's default if not given).
    #[arg(long)]
    background: Option<f64>,
    /// Expected false alarms per epoch over the fabric (the controller's default if not given).
    #[arg(long)]
    false_alarms: Option<f64>,
}

pub fn command(a: DecisionArgs) -> Result<()> {
    let d = DecisionParams::default();
    let params = DecisionParams {
        background: a.background.unwrap_or(d.background),
        false_alarms: a.false_alarms.unwrap_or(d.false_alarms),
    };
    params.validate().map_err(|e| anyhow::anyhow!("--{e}"))?;
    let query: Value = match a.query.as_deref() {
        None => json!({}),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            serde_json::from_str(&text).context("--query -: not JSON")?
        }
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("--query {path}"))?;
            serde_json::from_str(&text).with_context(|| format!("--query {path}: not JSON"))?
        }
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&answer(&query, &params)?)?
    );
    Ok(())
}

/// The answer to one query.
pub fn answer(q: &Value, params: &DecisionParams) -> Result<Value> {
    let segments = uint(q, "segments", 1)?.max(1) as usize;
    let tests = total_tests(segments, uint(q, "links", 0)? as usize, params);
    // The tests' threshold: the false alarms spread over all of them.
    let h = (tests as f64 / params.false_alarms).ln().max(0.0);
    let links = |v: &Value| uint(v, "links", 1).map(|l| l.max(1) as usize);
    let count = |v: &Value| -> Result<SegmentCount> {
        Ok(SegmentCount {
            sent: uint(v, "sent", 0)?,
            lost: uint(v, "lost", 0)?,
            flows: 0,
        })
    };
    let mut declares = Vec::new();
    for v in list(q, "declares")? {
        declares.push(lossy_in_total(&count(v)?, links(v)?, tests, params));
    }
    let mut pooled = Vec::new();
    for v in list(q, "pooled")? {
        let Some(segs) = v.as_array() else {
            bail!("pooled: each question is a list of segments' counts, got {v}");
        };
        let through = segs
            .iter()
            .map(|g| Ok((count(g)?, links(g)?)))
            .collect::<Result<Vec<_>>>()?;
        pooled.push(link_lossy_in_total(&through, tests, params));
    }
    let mut needed = Vec::new();
    for v in list(q, "needed")? {
        let Some(loss) = v.get("loss").and_then(Value::as_f64) else {
            bail!("needed: each question needs a `loss`: {v}");
        };
        needed.push(packets_needed(loss, params.p0(links(v)?), h));
    }
    let mut p0 = Vec::new();
    for v in list(q, "p0")? {
        let Some(l) = v.as_u64() else {
            bail!("p0: expected numbers of links, got {v}");
        };
        p0.push(params.p0(l.max(1) as usize));
    }
    Ok(json!({
        "background": params.background,
        "false_alarms": params.false_alarms,
        "segments": segments,
        "tests": tests,
        "threshold": h,
        "declares": declares,
        "pooled": pooled,
        "needed": needed,
        "p0": p0,
    }))
}

/// The fewest packets whose evidence shows a loss of `loss` over the background `p0` at
/// threshold `h` ([`smallest_shown`] falls as packets grow); None when no count would.
fn packets_needed(loss: f64, p0: f64, h: f64) -> Option<u64> {
    if !(loss > p0 && loss <= 1.0) {
        return None;
    }
    // 1 is also what it says when no loss would show: not an answer.
    let shows = |n: u64| {
        let s = smallest_shown(n, p0, h);
        s < 1.0 && s <= loss
    };
    let mut hi = 1u64;
    while !shows(hi) {
        if hi >= 1 << 62 {
            return None;
        }
        hi *= 2;
    }
    let mut lo = hi / 2; // does not show (or 0)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if shows(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

fn uint(v: &Value, field: &str, default: u64) -> Result<u64> {
    match v.get(field) {
        None => Ok(default),
        Some(x) => x
            .as_u64()
            .with_context(|| format!("{field}: {x} is not a count")),
    }
}

fn list<'a>(q: &'a Value, field: &str) -> Result<&'a [Value]> {
    match q.get(field) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(x) => bail!("{field}: expected a list, got {x}"),
    }
}
