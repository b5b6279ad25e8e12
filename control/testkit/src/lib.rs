//! What the integration tests of every crate share (a dev-dependency only).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `tool` is an executable file in a directory of `PATH`.
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Prints `SKIP: <what>` where `cargo test` shows it: straight to stderr, since libtest keeps
/// what `eprintln!` prints from a passing test to itself, and a skip must never pass silently.
pub fn skip(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP: {what}");
}

/// Compiles `p4src/v1model` with `bmv2/build.sh` into `dir` (BMv2 JSON and P4Info); returns the
/// BMv2 JSON's path. Panics with the compiler's output when it fails.
pub fn build_bmv2(dir: &Path) -> PathBuf {
    let script = repo_root().join("bmv2/build.sh");
    let out = Command::new(&script)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {}{}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("canary.json")
}
