//! The bodies of Canary's fuzz targets, one per decoder of outside input.
//!
//! Each body hands one input to the real decoder, exactly as the controller does, and checks
//! cheap invariants of whatever decodes; an error is a fine answer, a panic is a bug. `fuzz/`
//! runs them under libFuzzer on nightly (`fuzz/run.sh`); `tests/replay.rs` feeds them every
//! file of `fuzz/corpus` and `fuzz/regressions` on stable, so `cargo test` keeps found crashes
//! fixed. Where one body covers several decoders, the input's first byte picks which.

mod fixtures;
mod programs;
mod traces;
mod wire;
mod yaml_files;

pub use fixtures::{fattree4, line2, rule_ids, tna, v1model};
pub use programs::program;
pub use traces::{flock_trace, pathbf, pcap};
pub use wire::{digest, read_responses, thrift, THRIFT_SEQ};
pub use yaml_files::yaml;

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target: its name (its directory under `fuzz/corpus` and `fuzz/regressions`, and its
/// file under `fuzz/fuzz_targets`) and its body.
pub const TARGETS: [(&str, Target); 8] = [
    ("yaml", yaml),
    ("program", program),
    ("thrift", thrift),
    ("digest", digest),
    ("read_responses", read_responses),
    ("pathbf", pathbf),
    ("flock_trace", flock_trace),
    ("pcap", pcap),
];

/// The input's first byte modulo `n` (which decoder), and the rest (its input).
fn pick(data: &[u8], n: u8) -> Option<(u8, &[u8])> {
    let (&first, rest) = data.split_first()?;
    Some((first % n, rest))
}
