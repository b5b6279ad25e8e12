//! The P4 program the daemon gives BMv2: read from a directory, or compiled from `p4src/`
//! when none is given. Apart from the run because the packet tests load it too.

use crate::error::{Error, Result};
use canary_switch::p4info::P4InfoIndex;
use std::path::Path;

/// The compiled program: BMv2 JSON and binary P4Info.
pub struct P4Artifacts {
    pub device_config: Vec<u8>,
    pub p4info: P4InfoIndex,
    _tmp: Option<tempfile::TempDir>,
}

/// Reads `dir`, or compiles `p4src/` with `bmv2/build.sh` when no directory is given.
pub fn load_p4(dir: Option<&Path>) -> Result<P4Artifacts> {
    let (dir, tmp) = match dir {
        Some(d) => (d.to_path_buf(), None),
        None => {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bmv2/build.sh");
            if !script.exists() {
                return Err(Error::given(
                    "--p4",
                    "no --p4 DIR given and no bmv2/build.sh next to this build to compile one",
                ));
            }
            let tmp =
                tempfile::tempdir().map_err(|e| Error::io("a directory for the P4 build", e))?;
            let out = std::process::Command::new(&script)
                .arg(tmp.path())
                .output()
                .map_err(|e| Error::io(format!("running {}", script.display()), e))?;
            let json = tmp.path().join("canary.json");
            if !out.status.success() || !json.exists() {
                return Err(Error::given(
                    script.display(),
                    format!(
                        "compiling the P4 program failed (is p4c on PATH?):\n{}",
                        String::from_utf8_lossy(&out.stderr)
                    ),
                ));
            }
            (tmp.path().to_path_buf(), Some(tmp))
        }
    };
    let json = dir.join("canary.json");
    let device_config = std::fs::read(&json)
        .map_err(|e| Error::io(format!("cannot read the BMv2 JSON {}", json.display()), e))?;
    let p4info = P4InfoIndex::load(&dir.join("canary.p4info.bin")).map_err(Error::switches)?;
    Ok(P4Artifacts {
        device_config,
        p4info,
        _tmp: tmp,
    })
}
