//! The P4 program the daemon gives BMv2: the compiled program's directory, as `bmv2/build.sh DIR`
//! writes it and an install puts it (docs/run.md). Nothing is compiled at run time. Apart from
//! the run because the packet tests load it too.

use crate::error::{Error, Result};
use canary_switch::p4info::P4InfoFile;
use std::path::Path;

/// The compiled program: BMv2 JSON and binary P4Info.
pub struct P4Artifacts {
    pub device_config: Vec<u8>,
    pub p4info: P4InfoFile,
}

/// The files of a compiled program's directory.
pub const BMV2_FILES: [&str; 2] = ["canary.json", "canary.p4info.bin"];

/// Reads the compiled program in `dir`; an error names the directory and the file missing.
pub fn load_p4(dir: &Path) -> Result<P4Artifacts> {
    let what = || format!("--p4 {}", dir.display());
    if !dir.is_dir() {
        return Err(Error::given(
            what(),
            format!(
                "no such directory: give the compiled program's directory, with {} \
                 (`bmv2/build.sh DIR` writes them)",
                BMV2_FILES.join(" and ")
            ),
        ));
    }
    if let Some(missing) = BMV2_FILES.iter().find(|f| !dir.join(f).is_file()) {
        return Err(Error::given(
            what(),
            format!("no {missing} in it (`bmv2/build.sh DIR` writes the compiled program)"),
        ));
    }
    let json = dir.join(BMV2_FILES[0]);
    let device_config = std::fs::read(&json)
        .map_err(|e| Error::io(format!("cannot read the BMv2 JSON {}", json.display()), e))?;
    let p4info = P4InfoFile::load(&dir.join(BMV2_FILES[1])).map_err(Error::switches)?;
    Ok(P4Artifacts {
        device_config,
        p4info,
    })
}
