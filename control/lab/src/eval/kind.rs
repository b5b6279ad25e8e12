//! The localizers `canary eval` knows, by their command-line names, and what telemetry each
//! needs: apart from the run so the CLI and calibration can name localizers without running one.

use crate::{Error, Result};
use std::str::FromStr;

/// The localizers `canary eval` knows, by their command-line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Canary,
    CanaryCd1,
    FlockCanary,
    NetBouncer,
    NetBouncerStage,
    NetBouncerPaper,
    Flock,
    FlockA2,
    Vote007,
    Detector,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Canary,
        Kind::CanaryCd1,
        Kind::FlockCanary,
        Kind::NetBouncer,
        Kind::NetBouncerStage,
        Kind::NetBouncerPaper,
        Kind::Flock,
        Kind::FlockA2,
        Kind::Vote007,
        Kind::Detector,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Canary => "canary",
            Kind::CanaryCd1 => "canary-cd1",
            Kind::FlockCanary => "flock-canary",
            Kind::NetBouncer => "netbouncer",
            Kind::NetBouncerStage => "netbouncer-stage",
            Kind::NetBouncerPaper => "netbouncer-paper",
            Kind::Flock => "flock",
            Kind::FlockA2 => "flock-a2",
            Kind::Vote007 => "007",
            Kind::Detector => "detector",
        }
    }

    /// Needs Canary's packet-level run.
    pub(super) fn needs_canary_run(self) -> bool {
        matches!(self, Kind::Canary | Kind::CanaryCd1 | Kind::FlockCanary)
    }

    /// Fed bounce probes (or a Flock trace).
    pub(super) fn needs_probes(self) -> bool {
        matches!(
            self,
            Kind::NetBouncer | Kind::NetBouncerStage | Kind::NetBouncerPaper | Kind::Flock
        )
    }

    /// Fed 007's TCP epoch.
    pub(super) fn needs_tcp_epoch(self) -> bool {
        matches!(self, Kind::Vote007 | Kind::FlockA2)
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown localizer `{s}` (known: {})", names.join(", "))
            })
    }
}

/// Parses `canary,netbouncer,...`.
pub fn parse_kinds(list: &str) -> Result<Vec<Kind>> {
    let mut kinds = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let k: Kind = name
            .parse()
            .map_err(|e: String| Error::arg("--localizers", e))?;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    if kinds.is_empty() {
        return Err(Error::arg("--localizers", "name at least one localizer"));
    }
    Ok(kinds)
}
