//! `--out-of-service FILE`: the links the operator takes out of service in the forwarding
//! Canary owns (a drain for maintenance), in the fault file's syntax, `out_of_service: true`
//! entries only, with `from_epoch` and `until_epoch` if the drain is planned. The file is read
//! again whenever it changes, so a link is drained or put back by editing it; an edit that does
//! not parse is refused with its line and the links stay as they were.

use crate::error::{Error, Result};
use canary_core::fault::{self, Fault};
use canary_core::topo::{LinkIx, Topology};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub(super) struct OutOfServiceFile {
    path: PathBuf,
    modified: Option<SystemTime>,
    entries: Vec<Fault>,
}

impl OutOfServiceFile {
    /// Reads the file; at start, a file that does not parse stops the daemon.
    pub(super) fn load(path: &Path, topo: &Topology) -> Result<Self> {
        let modified = modified(path);
        Ok(Self {
            path: path.to_path_buf(),
            modified,
            entries: read(path, topo)?,
        })
    }

    /// The directed links out of service in `epoch`, after reading the file again if it
    /// changed.
    pub(super) fn links_at(&mut self, topo: &Topology, epoch: u64) -> Vec<LinkIx> {
        let now = modified(&self.path);
        if now != self.modified {
            self.modified = now;
            match read(&self.path, topo) {
                Ok(entries) => {
                    tracing::info!(
                        file = %self.path.display(),
                        entries = entries.len(),
                        "links out of service read again"
                    );
                    self.entries = entries;
                }
                Err(e) => tracing::error!("{e}: the links out of service stay as they were"),
            }
        }
        fault::out_of_service_at(&self.entries, epoch)
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn read(path: &Path, topo: &Topology) -> Result<Vec<Fault>> {
    let what = || format!("--out-of-service {}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(what(), e))?;
    let all = fault::parse(&path.display().to_string(), &text, topo)?;
    if let Some((i, f)) = all.iter().enumerate().find(|(_, f)| !f.out_of_service) {
        let [a, b] = topo.link_names(f.link);
        return Err(Error::given(
            what(),
            format!(
                "entry {} ({a} → {b}) is a fault: only `out_of_service: true` entries belong here",
                i + 1
            ),
        ));
    }
    Ok(all)
}
