//! Small `canary` subcommands as a user runs them: `audit`, its output and its errors (exit
//! status and stderr).

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
