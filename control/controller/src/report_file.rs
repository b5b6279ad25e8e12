//! The report file: one JSON line per epoch, appended as the daemon runs.
//!
//! A line is whole or absent, whatever kills the daemon: each line goes out in one `write` on a
//! file opened for appending, a write that fails part way is cut back off, and a line cut short
//! by a kill is cut off when the file is next opened (and said so). A full disk or an unwritable
//! file is an error naming the file, and nothing more is written. The file also tells a
//! controller that starts after another (restarted, or a standby taking over) which epoch was
//! reported last, so the report goes on with no epoch written twice.

use crate::error::{Error, Result};
use crate::report::EpochReport;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub struct ReportFile {
    file: File,
    path: PathBuf,
    /// The last epoch in the file.
    last: Option<u64>,
    /// A write failed: the file is left as it was before it, and nothing more is written.
    failed: bool,
}

/// The epoch of one report line, if it is one.
fn epoch_of(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Epoch {
        epoch: u64,
    }
    serde_json::from_slice::<Epoch>(line).ok().map(|e| e.epoch)
}

impl ReportFile {
    /// Opens `path` for appending (creating it), cutting off a last line a kill left unfinished.
    pub fn open(path: &Path) -> Result<Self> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(|e| {
                Error::io(
                    format!("--report {}: cannot open for appending", path.display()),
                    e,
                )
            })?;
        let mut me = ReportFile {
            file: file
                .try_clone()
                .map_err(|e| Error::io(format!("--report {}", path.display()), e))?,
            path: path.to_path_buf(),
            last: None,
            failed: false,
        };
        // A pipe or a device (a FIFO a collector reads) has no lines to recover.
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Ok(me);
        }
        let mut text = Vec::new();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut text))
            .map_err(|e| Error::io(format!("--report {}: cannot read", path.display()), e))?;
        let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole < text.len() {
            tracing::warn!(
                "{}: cutting off an unfinished last line ({} bytes) left by a daemon that was killed",
                path.display(),
                text.len() - whole
            );
            me.file.set_len(whole as u64).map_err(|e| {
                Error::io(
                    format!(
                        "--report {}: cannot cut off its unfinished last line",
                        path.display()
                    ),
                    e,
                )
            })?;
        }
        me.last = text[..whole]
            .split(|&b| b == b'\n')
            .rev()
            .find_map(epoch_of);
        Ok(me)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last epoch the file holds.
    pub fn last_epoch(&self) -> Option<u64> {
        self.last
    }

    /// Reads the last epoch again: another controller may have written since (a standby about
    /// to take over).
    pub fn reread(&mut self) -> Result<Option<u64>> {
        *self = ReportFile::open(&self.path)?;
        Ok(self.last)
    }

    /// Appends `r` as one line. An epoch the file already holds is not written again (`Ok(false)`).
    pub fn append(&mut self, r: &EpochReport) -> Result<bool> {
        if self.failed {
            return Err(Error::given(
                self.path.display(),
                "not written after an earlier failure",
            ));
        }
        if self.last.is_some_and(|l| r.epoch <= l) {
            tracing::warn!(
                "{}: epoch {} is reported already (up to {}): not written again",
                self.path.display(),
                r.epoch,
                self.last.unwrap_or_default()
            );
            return Ok(false);
        }
        let mut line = serde_json::to_vec(r).expect("a report serialises");
        line.push(b'\n');
        let before = self.file.metadata().map(|m| m.len()).ok();
        if let Err(e) = self.file.write_all(&line) {
            self.failed = true;
            // Cut back what part of the line got out, so the file ends with a whole line.
            let undone = before.is_some_and(|len| self.file.set_len(len).is_ok());
            return Err(Error::io(
                format!(
                    "writing epoch {} to {}{}; the daemon stops writing the report",
                    r.epoch,
                    self.path.display(),
                    if undone {
                        ""
                    } else {
                        " (a partial line may remain and is cut off when the file is next \
                         opened)"
                    }
                ),
                e,
            ));
        }
        self.last = Some(r.epoch);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(epoch: u64) -> EpochReport {
        EpochReport::missed(epoch, 4, "test".into())
    }

    #[test]
    fn an_unfinished_last_line_is_cut_off_and_the_last_whole_epoch_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut f = ReportFile::open(&path).unwrap();
        assert_eq!(f.last_epoch(), None);
        assert!(f.append(&report(3)).unwrap());
        assert!(f.append(&report(4)).unwrap());
        // A kill in the middle of a line.
        let mut text = std::fs::read(&path).unwrap();
        text.extend_from_slice(br#"{"epoch":5,"parity":"#);
        std::fs::write(&path, &text).unwrap();
        let mut f = ReportFile::open(&path).unwrap();
        assert_eq!(f.last_epoch(), Some(4));
        let kept = std::fs::read_to_string(&path).unwrap();
        assert!(kept.ends_with('\n') && kept.lines().count() == 2, "{kept}");
        assert!(f.append(&report(5)).unwrap());
        let lines: Vec<u64> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| epoch_of(l.as_bytes()).unwrap())
            .collect();
        assert_eq!(lines, [3, 4, 5]);
    }

    #[test]
    fn an_epoch_already_reported_is_not_written_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut a = ReportFile::open(&path).unwrap();
        a.append(&report(7)).unwrap();
        // Another controller took over and wrote 8.
        let mut b = ReportFile::open(&path).unwrap();
        assert!(b.append(&report(8)).unwrap());
        assert_eq!(a.reread().unwrap(), Some(8));
        assert!(!a.append(&report(8)).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    }

    #[test]
    fn a_full_disk_is_an_error_naming_the_file_and_nothing_more_is_written() {
        // /dev/full takes the open and refuses every write with ENOSPC.
        let path = Path::new("/dev/full");
        let lacks: Vec<_> = (!path.exists())
            .then(|| canary_testkit::Lack::new("/dev/full", "a Linux device"))
            .into_iter()
            .collect();
        if !canary_testkit::runnable("report_file on a full disk", &lacks) {
            return;
        }
        let mut f = ReportFile::open(path).unwrap();
        let e = f.append(&report(1)).unwrap_err().to_string();
        assert!(e.contains("/dev/full") && e.contains("epoch 1"), "{e}");
        assert!(e.to_lowercase().contains("no space"), "{e}");
        let again = f.append(&report(2)).unwrap_err().to_string();
        assert!(again.contains("earlier failure"), "{again}");
    }
}
