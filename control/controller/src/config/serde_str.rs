//! Settings written as strings in the configuration file, as on the command line: the monitor
//! placement (`top+bottom`) and the cluster's partitions (`3,2,2`).

use crate::cluster::wire::Parts;
use serde::{Deserialize, Deserializer, Serializer};

/// `Option<T>` as its `Display` / `FromStr` string.
pub mod opt {
    use super::*;
    use std::fmt::Display;
    use std::str::FromStr;

    pub fn serialize<T: Display, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&v.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr<Err = String>,
        D: Deserializer<'de>,
    {
        Option::<String>::deserialize(d)?
            .map(|s| s.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// [`Parts`] as `H,J,L`.
pub mod parts {
    use super::*;

    pub fn serialize<S: Serializer>(p: &Parts, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{},{},{}", p.harvest, p.join, p.localize))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Parts, D::Error> {
        partitions(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// `H,J,L`: three partition counts, each at least 1.
pub fn partitions(s: &str) -> Result<Parts, String> {
    let n: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse::<u32>().map_err(|e| format!("{x:?}: {e}")))
        .collect::<Result<_, _>>()?;
    match n[..] {
        [harvest, join, localize] if harvest > 0 && join > 0 && localize > 0 => Ok(Parts {
            harvest,
            join,
            localize,
        }),
        _ => Err(format!(
            "{s:?}: three partition counts H,J,L, each at least 1"
        )),
    }
}
