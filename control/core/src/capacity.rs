//! What one switch holds: the table sizes and meter shapes of the compiled data plane.
//!
//! Read from the program, never retyped: the simulator takes them from the program's own source
//! (`p4src/include/defines.p4`, [`Capacity::of_program`]), the controller from the P4Info or
//! `bfrt.json` of the program a switch runs (`canary-switch`). Flow selection never installs
//! more rules than a switch holds.

use crate::sketch::{HashPipeConfig, MeterConfig, SketchConfigError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Table sizes and meter shapes of one switch's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    /// USM and DSM: rows × buckets per parity.
    pub meter: MeterConfig,
    pub hashpipe: HashPipeConfig,
    /// Entries of `usm_table`, `dsm_table`, `hh_table`.
    pub usm_rules: usize,
    pub dsm_rules: usize,
    pub hh_rules: usize,
    /// Entries of `ip_route` (IPv4 and IPv6).
    pub routes: usize,
    /// Entries of `ecmp_group`.
    pub ecmp_entries: usize,
}

/// The program source the simulator takes its sizes from.
pub const PROGRAM_DEFINES: &str = include_str!("../../../p4src/include/defines.p4");

/// Why a program's sizes are unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapacityError {
    #[error("{source_name}: no `#define {name}`")]
    Missing {
        source_name: String,
        name: &'static str,
    },
    #[error("{source_name}: `#define {name} {value}` is not a number")]
    NotANumber {
        source_name: String,
        name: &'static str,
        value: String,
    },
    #[error("{source_name}: meter or HashPipe shape: {detail}")]
    Shape {
        source_name: String,
        detail: SketchConfigError,
    },
}

impl Capacity {
    /// The sizes of the program in this repository (`p4src/include/defines.p4`).
    pub fn of_program() -> Self {
        Self::from_defines("p4src/include/defines.p4", PROGRAM_DEFINES)
            .expect("the program's own defines are complete")
    }

    /// Parses `#define NAME VALUE` lines (decimal or 0x hex) of `text`, named `source_name` in
    /// errors.
    pub fn from_defines(source_name: &str, text: &str) -> Result<Self, CapacityError> {
        let defines: HashMap<&str, &str> = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                (w.next()? == "#define").then_some(())?;
                Some((w.next()?, w.next()?))
            })
            .collect();
        let get = |name: &'static str| -> Result<usize, CapacityError> {
            let v = defines.get(name).ok_or_else(|| CapacityError::Missing {
                source_name: source_name.into(),
                name,
            })?;
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => usize::from_str_radix(hex, 16).ok(),
                None => v.parse().ok(),
            };
            parsed.ok_or_else(|| CapacityError::NotANumber {
                source_name: source_name.into(),
                name,
                value: v.to_string(),
            })
        };
        let shape = |detail| CapacityError::Shape {
            source_name: source_name.into(),
            detail,
        };
        let meter = MeterConfig::new(get("METER_ROWS")?, get("METER_WIDTH")?).map_err(shape)?;
        let hashpipe = HashPipeConfig::new(get("HP_STAGES")?, get("HP_ENTRIES")?, meter.width)
            .map_err(shape)?;
        Ok(Capacity {
            meter,
            hashpipe,
            usm_rules: get("USM_TABLE_SIZE")?,
            dsm_rules: get("DSM_TABLE_SIZE")?,
            hh_rules: get("HH_TABLE_SIZE")?,
            routes: get("ROUTE_TABLE_SIZE")?,
            ecmp_entries: get("ECMP_TABLE_SIZE")?,
        })
    }

    /// No table limit (the simulator's experiments that study the algorithms, not a switch).
    pub fn unlimited(meter: MeterConfig, hashpipe: HashPipeConfig) -> Self {
        Capacity {
            meter,
            hashpipe,
            usm_rules: usize::MAX,
            dsm_rules: usize::MAX,
            hh_rules: usize::MAX,
            routes: usize::MAX,
            ecmp_entries: usize::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_sizes_are_read_from_its_source() {
        let c = Capacity::of_program();
        assert_eq!(c.meter, MeterConfig::new(3, 1024).unwrap());
        assert_eq!((c.hashpipe.stages, c.hashpipe.entries), (3, 32));
        assert!(c.usm_rules > 0 && c.dsm_rules > 0 && c.hh_rules > 0);
        assert!(c.routes > 0 && c.ecmp_entries > 0);
    }

    #[test]
    fn a_missing_or_bad_define_is_named() {
        let text = PROGRAM_DEFINES.replace("#define HH_TABLE_SIZE", "#define HH_TABLE_SIZ");
        let e = Capacity::from_defines("d.p4", &text)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "d.p4: no `#define HH_TABLE_SIZE`");
        let text = PROGRAM_DEFINES.replace("#define METER_WIDTH 1024", "#define METER_WIDTH 1000");
        let e = Capacity::from_defines("d.p4", &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("power of two"), "{e}");
        let text =
            PROGRAM_DEFINES.replace("#define USM_TABLE_SIZE 4096", "#define USM_TABLE_SIZE many");
        let e = Capacity::from_defines("d.p4", &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("USM_TABLE_SIZE many"), "{e}");
    }
}
