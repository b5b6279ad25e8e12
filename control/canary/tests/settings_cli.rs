//! The settings every command shares (`canary_controller::config::Pipeline`) as a user meets
//! them: each bad value and each conflict refused with the flag named and the exit status (1 a
//! setting, 2 a malformed command line), and `simulate` and `run` on the same defaults.

use std::process::{Command, Output};

fn canary(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("runs canary")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn status(out: &Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn bad_values_are_refused_naming_the_flag() {
    // Ranges clap checks: a bad command line, status 2.
    for (args, flag) in [
        (&["simulate", "--epochs", "0"][..], "--epochs"),
        (&["simulate", "--epoch-ms", "0"][..], "--epoch-ms"),
        (&["simulate", "--noise", "2"][..], "--noise"),
    ] {
        let out = canary(args);
        assert_eq!(status(&out), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    }
    // The pipeline's own checks, shared with `run`: status 1, before anything runs.
    for (flag, value) in [
        ("--alpha", "0"),
        ("--beta", "0"),
        ("--groups", "0"),
        ("--window", "0"),
        ("--background", "2"),
    ] {
        let out = canary(&["simulate", flag, value]);
        assert_eq!(status(&out), Some(1), "{flag}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{flag} {value}: ")),
            "{flag}: {}",
            stderr(&out)
        );
        assert!(stdout(&out).is_empty(), "nothing ran: {}", stdout(&out));
    }
    let out = canary(&[
        "run",
        "--topology",
        "fattree:4",
        "--switches",
        "s",
        "--p4",
        "p",
        "--epoch-ms",
        "0",
    ]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--epoch-ms 0: an epoch lasts at least 1 ms"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn conflicting_flags_are_refused_with_a_reason() {
    let out = canary(&["simulate", "--synth-meters", "--serve", "127.0.0.1:0"]);
    assert_eq!(status(&out), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("'--synth-meters' cannot be used with '--serve"),
        "{}",
        stderr(&out)
    );
    let out = canary(&["simulate", "--pace-ms", "5"]);
    assert_eq!(status(&out), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--serve"), "{}", stderr(&out));
    let out = canary(&["simulate", "--decision", "floor", "--background", "0.01"]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--background 0.01: only used with --decision sequential"),
        "{}",
        stderr(&out)
    );
    let out = canary(&["simulate", "--floor", "0.01"]);
    assert!(
        stderr(&out).contains("--floor 0.01: only used with --decision floor"),
        "{}",
        stderr(&out)
    );
    let out = canary(&[
        "run",
        "--topology",
        "fattree:4",
        "--switches",
        "s",
        "--target",
        "tofino",
        "--p4",
        "/p4",
    ]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--p4 /p4: only for --target bmv2"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn simulate_and_run_read_the_same_pipeline_defaults() {
    let sim = canary(&["simulate", "--print-config"]);
    assert_eq!(status(&sim), Some(0), "{}", stderr(&sim));
    let run = canary(&[
        "run",
        "--topology",
        "fattree:4",
        "--switches",
        "s",
        "--p4",
        "p",
        "--print-config",
    ]);
    assert_eq!(status(&run), Some(0), "{}", stderr(&run));
    // The `pipeline:` section of run's configuration, as simulate prints its own.
    let run_text = stdout(&run);
    let section: Vec<&str> = run_text
        .lines()
        .skip_while(|l| *l != "pipeline:")
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with(' '))
        .map(|(_, l)| l)
        .collect();
    let sim_text = stdout(&sim);
    assert_eq!(section.join("\n"), sim_text.trim_end(), "{run_text}");
    // And they are the paper's: α = 1000, β = 20 (Table III).
    assert!(
        sim_text.contains("  alpha: 1000\n  beta: 20\n"),
        "{sim_text}"
    );
}

/// One default fabric for every command that takes a topology (it differed in `eval`).
#[test]
fn every_command_takes_the_same_default_topology() {
    for cmd in ["simulate", "eval", "audit"] {
        let help = stdout(&canary(&[cmd, "--help"]));
        let line = help
            .split("--topology")
            .nth(1)
            .and_then(|rest| rest.split("\n      --").next())
            .unwrap_or_default()
            .to_string();
        assert!(
            line.contains("[default: fattree:4]"),
            "{cmd} --help: --topology{line}"
        );
    }
}
