//! Shared by the switch tests.

/// Prints `SKIP: <what>` where `cargo test` shows it: straight to stderr, since libtest keeps
/// what `eprintln!` prints from a passing test to itself, and a skip must never pass silently.
pub fn skip(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP: {what}");
}
