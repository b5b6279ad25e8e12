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
    if let Some(f) = all.iter().find(|f| !f.out_of_service) {
        let [a, b] = topo.link_names(f.link);
        return Err(Error::given(
            what(),
            format!(
                "the entry for {a} → {b} is a fault: only `out_of_service: true` entries belong \
                 here"
            ),
        ));
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::topo::{fattree::fattree, MonitorPlacement};

    /// A drain file with a fault in it is refused naming the entry; a good one gives both
    /// directions' links in its epochs; an edit that does not parse keeps what was read.
    #[test]
    fn a_drain_file_is_checked_and_read_again_when_it_changes() {
        let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("drained.yaml");
        std::fs::write(
            &path,
            "faults:\n  - {link: [agg1_0, core0], out_of_service: true}\n  - {link: [edge0_0, agg0_0], loss: 0.1}\n",
        )
        .unwrap();
        let e = OutOfServiceFile::load(&path, &topo)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("the entry for edge0_0 → agg0_0 is a fault"),
            "{e}"
        );
        std::fs::write(
            &path,
            "faults:\n  - {link: [agg1_0, core0], out_of_service: true, from_epoch: 3}\n",
        )
        .unwrap();
        let mut f = OutOfServiceFile::load(&path, &topo).unwrap();
        assert!(f.links_at(&topo, 2).is_empty());
        let up = topo.link_by_names("agg1_0", "core0").unwrap();
        let l = vec![up, topo.reverse(up)];
        assert_eq!(f.links_at(&topo, 3), l);
        // A broken edit (with a later modification time) is refused; the drain stays.
        std::fs::write(&path, "faults: [{link: [agg1_0]}]\n").unwrap();
        f.modified = None;
        assert_eq!(f.links_at(&topo, 4), l);
        std::fs::write(&path, "faults: []\n").unwrap();
        f.modified = None;
        assert!(
            f.links_at(&topo, 5).is_empty(),
            "put back by editing the file"
        );
    }
}
