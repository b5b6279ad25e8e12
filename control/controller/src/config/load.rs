//! `canary run --config FILE`: the file read and checked, the flags laid over it.

use super::{Names, Pipeline, RunConfig};
use crate::error::{Error, Result};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A checked configuration, and how to name its settings in later errors.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub config: RunConfig,
    pub names: Names,
}

/// The configuration of a run: `flags.config`'s file if given, with the settings given on the
/// command line (`given`: their keys, e.g. `alpha`, `epoch_ms`, `url`) laid over it; relative
/// paths in the file are taken from the file's directory. Everything is checked; an error
/// names the flag, or the file, the key and the line.
pub fn load(flags: RunConfig, given: &[String]) -> Result<Loaded> {
    let mut names = Names {
        given: given.iter().cloned().collect(),
        ..Names::default()
    };
    let config = match &flags.config {
        None => flags,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::io(format!("--config {}: cannot read", path.display()), e))?;
            let mut file = parse(path, &text)?;
            relative_to(&mut file, path.parent().unwrap_or(Path::new(".")));
            names.file = Some(path.clone());
            names.text = Some(text);
            overlay(file, &flags, given)?
        }
    };
    if let Some(e) = names.error(&config.check()) {
        return Err(e);
    }
    Ok(Loaded { config, names })
}

/// The file's settings; an error names the file, the key and the line.
pub fn parse(path: &Path, text: &str) -> Result<RunConfig> {
    let de = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        let line = inner
            .location()
            .map(|l| format!(" (line {})", l.line()))
            .unwrap_or_default();
        let key = if key == "." {
            String::new()
        } else {
            format!(" {key}")
        };
        Error::given(
            format!("{}:{key}{line}", path.display()),
            canary_core::yaml_error::without_location(&inner.to_string()),
        )
    })
}

/// Paths in the file, taken from the file's directory when relative.
fn relative_to(c: &mut RunConfig, dir: &Path) {
    let fix = |p: &mut PathBuf| {
        if p.is_relative() {
            *p = dir.join(&*p);
        }
    };
    for p in [
        &mut c.switches,
        &mut c.p4,
        &mut c.report,
        &mut c.json,
        &mut c.out_of_service,
    ]
    .into_iter()
    .flatten()
    {
        fix(p);
    }
    for spec in [&mut c.topology, &mut c.faults, &mut c.incidents]
        .into_iter()
        .flatten()
    {
        let special = spec.starts_with("fattree:") || spec == "none";
        if !special && Path::new(spec.as_str()).is_relative() {
            *spec = dir.join(spec.as_str()).display().to_string();
        }
    }
}

/// `file` with each setting given on the command line taken from `flags` instead.
fn overlay(file: RunConfig, flags: &RunConfig, given: &[String]) -> Result<RunConfig> {
    let ser = |c: &RunConfig| serde_json::to_value(c).expect("a configuration serializes");
    let mut merged = ser(&file);
    let from = ser(flags);
    for key in given {
        if let Some(section) = section_of(&from, key) {
            let v = match section {
                None => from[key.as_str()].clone(),
                Some(s) => from[s][key.as_str()].clone(),
            };
            match section {
                None => merged[key.as_str()] = v,
                Some(s) => merged[s][key.as_str()] = v,
            }
        }
    }
    let mut out: RunConfig = serde_json::from_value(merged)
        .map_err(|e| Error::given("the command line over --config", e))?;
    out.config = flags.config.clone();
    out.print_config = flags.print_config;
    Ok(out)
}

/// Where `key` is in a serialized configuration: at the top (`Some(None)`) or in a section.
fn section_of<'a>(v: &'a Value, key: &str) -> Option<Option<&'a str>> {
    let top = v.as_object()?;
    if top.contains_key(key) {
        return Some(None);
    }
    top.iter()
        .find(|(_, s)| s.as_object().is_some_and(|o| o.contains_key(key)))
        .map(|(name, _)| Some(name.as_str()))
}

/// A pipeline as the `pipeline:` section of a configuration file (`--print-config`).
pub fn pipeline_yaml(p: &Pipeline) -> String {
    #[derive(Serialize)]
    struct Section<'a> {
        pipeline: &'a Pipeline,
    }
    serde_norway::to_string(&Section { pipeline: p }).expect("a pipeline serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Decision;

    #[test]
    fn flags_given_override_the_file_and_the_rest_come_from_it() {
        let file = parse(
            Path::new("c.yaml"),
            "topology: fattree:4\nepoch_ms: 500\npipeline: {alpha: 7, decision: floor}\n",
        )
        .unwrap();
        let flags = RunConfig {
            epoch_ms: 50,
            pipeline: crate::config::Pipeline {
                alpha: 9,
                ..Default::default()
            },
            ..Default::default()
        };
        let c = overlay(file, &flags, &["alpha".into()]).unwrap();
        assert_eq!(c.pipeline.alpha, 9, "given on the command line");
        assert_eq!(c.epoch_ms, 500, "not given: the file's");
        assert_eq!(c.pipeline.decision, Decision::Floor);
        assert_eq!(c.topology.as_deref(), Some("fattree:4"));
    }

    #[test]
    fn an_unknown_key_is_named_with_its_file_and_line() {
        let e = parse(
            Path::new("c.yaml"),
            "topology: fattree:4\npipeline:\n  alfa: 3\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.yaml: pipeline.alfa (line 3): unknown field `alfa`"),
            "{e}"
        );
        assert_eq!(e.matches("alfa").count(), 2, "said once: {e}");
    }

    #[test]
    fn relative_paths_are_taken_from_the_files_directory() {
        let mut c = parse(
            Path::new("/etc/canary/canary.yaml"),
            "topology: k4.yaml\nswitches: switches.yaml\np4: /usr/share/canary/bmv2\nfaults: none\n",
        )
        .unwrap();
        relative_to(&mut c, Path::new("/etc/canary"));
        assert_eq!(c.topology.as_deref(), Some("/etc/canary/k4.yaml"));
        assert_eq!(c.switches, Some(PathBuf::from("/etc/canary/switches.yaml")));
        assert_eq!(c.p4, Some(PathBuf::from("/usr/share/canary/bmv2")));
        assert_eq!(c.faults.as_deref(), Some("none"));
    }
}
