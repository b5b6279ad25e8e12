//! Every input under `fuzz/corpus/<target>` and `fuzz/regressions/<target>` through its target's
//! body, on stable: the crashes fuzzing found stay fixed without nightly or libFuzzer.

use canary_fuzzing::TARGETS;
use canary_testkit::repo_root;
use std::path::Path;

/// The files of `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<_> = rd
        .map(|e| e.expect("readable directory").path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn every_corpus_and_regression_input_decodes_without_a_panic() {
    let fuzz = repo_root().join("fuzz");
    let mut failed = Vec::new();
    for (name, body) in TARGETS {
        let corpus = files(&fuzz.join("corpus").join(name));
        assert!(!corpus.is_empty(), "fuzz/corpus/{name} has no seed");
        for file in corpus
            .iter()
            .chain(&files(&fuzz.join("regressions").join(name)))
        {
            let data = std::fs::read(file).expect("readable input");
            if std::panic::catch_unwind(|| body(&data)).is_err() {
                failed.push(file.display().to_string());
            }
        }
    }
    assert!(failed.is_empty(), "panicked on: {failed:#?}");
}

#[test]
fn every_target_has_a_fuzz_target_file() {
    let dir = repo_root().join("fuzz/fuzz_targets");
    for (name, _) in TARGETS {
        let file = dir.join(format!("{name}.rs"));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            text.contains(&format!("canary_fuzzing::{name}(")),
            "{} does not call canary_fuzzing::{name}",
            file.display()
        );
    }
}
