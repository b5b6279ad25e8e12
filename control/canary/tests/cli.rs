//! Small `canary` subcommands as a user runs them: `audit` and `topology`, their output and their
//! errors (exit status and stderr).

use canary_testkit::repo_root;
use std::process::{Command, Output};

fn canary(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args)
        .output()
        .expect("runs canary")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit status 1 (an error `main` returned), not 101 (a panic).
fn assert_clean_error(out: &Output) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    assert!(!stderr(out).contains("panicked"), "{}", stderr(out));
}

#[test]
fn audit_rejects_zero_pathbf_bits_naming_the_flag() {
    let out = canary(&["audit", "--pathbf-bits", "0"]);
    assert_clean_error(&out);
    let e = stderr(&out);
    assert!(e.contains("--pathbf-bits 0"), "{e}");
    assert!(e.contains("power of two in 8..=32"), "{e}");
}

#[test]
fn audit_rejects_too_many_pathbf_hashes_naming_the_flag() {
    // 4294967295 × log2(32) overflowed the check itself.
    let out = canary(&["audit", "--pathbf-hashes", "4294967295"]);
    assert_clean_error(&out);
    let e = stderr(&out);
    assert!(e.contains("--pathbf-hashes 4294967295"), "{e}");
    assert!(e.contains("1..=6 for 32 bits"), "{e}");
}

#[test]
fn audit_accepts_valid_parameters() {
    let out = canary(&["audit", "--pathbf-bits", "16", "--pathbf-hashes", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("pathBF b=16 m=2"), "{text}");
}

#[test]
fn topology_keeps_the_files_monitor_placement() {
    let line3 = repo_root().join("topologies/line3.yaml");
    let line3 = line3.to_str().unwrap();
    let out = canary(&["topology", line3]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("monitors: bottom\n"), "{text}");
    // --monitors still overrides the file.
    let out = canary(&["topology", line3, "--monitors", "top+bottom"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("monitors: top+bottom\n"), "{text}");
}

#[test]
fn topology_of_a_fat_tree_follows_the_monitors_flag() {
    let out = canary(&["topology", "fattree:4"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("monitors: top+bottom\n"), "{text}");
    let out = canary(&["topology", "fattree:4", "--monitors", "bottom"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("monitors: bottom\n"), "{text}");
}

#[test]
fn a_topology_with_duplicate_hosts_is_rejected_by_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dup.yaml");
    std::fs::write(
        &file,
        "name: dup\nswitches:\n  - {name: s1, layer: 0, hosts: [a, b]}\n  \
         - {name: s2, layer: 0, hosts: [c, a]}\n  - {name: t, layer: 1}\n\
         links:\n  - [s1, t]\n  - [s2, t]\n",
    )
    .unwrap();
    let out = canary(&["topology", file.to_str().unwrap()]);
    assert_clean_error(&out);
    let e = stderr(&out);
    assert!(
        e.contains("switches[1].hosts[1]") && e.contains("switches[0].hosts[0]"),
        "{e}"
    );
}

/// `canary simulate | head -1`: the reader closes the pipe after one line, and the command ends
/// as a Unix filter does (SIGPIPE), not with a panic's backtrace.
#[test]
fn a_reader_that_closes_the_pipe_ends_the_command_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(["simulate", "--topology", "fattree:4", "--epochs", "40"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("epoch"), "{first}");
    // The reader is gone; the next epoch's lines meet a closed pipe.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}
