//! Where `canary incidents` takes incidents from: a database, or a finished run's epochs (its
//! JSON document or its report file) replayed.

use super::error::IncidentsError;
use super::store::Store;
use super::track::{rebuild, TrackConfig};
use super::Incident;
use crate::report::EpochReport;
use std::io::Read;
use std::path::Path;

type Result<T> = std::result::Result<T, IncidentsError>;

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

fn run_error(path: &Path, why: impl Into<String>) -> IncidentsError {
    IncidentsError::Run {
        path: path.display().to_string(),
        why: why.into(),
    }
}

/// Whether `path` is an SQLite database.
pub fn is_database(path: &Path) -> Result<bool> {
    let mut head = [0u8; 16];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| run_error(path, format!("cannot read: {e}")))?;
    Ok(&head[..n] == SQLITE_MAGIC)
}

/// The epochs of a run's JSON document (`epochs`), or of a report file (one epoch per line).
pub fn epochs_of(path: &Path) -> Result<Vec<EpochReport>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| run_error(path, format!("cannot read: {e}")))?;
    // A run document (one JSON object with `epochs`), read as `canary view` reads it: a newer
    // version or another format is refused by name, not misread.
    let doc_error = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) if v.get("epochs").is_some() => {
            let file = path.display().to_string();
            return crate::run_document::RunDocument::parse(&file, &text)
                .map(|d| d.epochs)
                .map_err(|e| {
                    // Said once: the error names the file, and so does `run_error`.
                    let said = e.to_string();
                    let why = said.strip_prefix(&format!("{file}: ")).unwrap_or(&said);
                    run_error(path, why)
                });
        }
        Ok(_) => "no `epochs` list".to_string(),
        Err(e) => e.to_string(),
    };
    let mut epochs = Vec::new();
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    for (n, line) in lines {
        match serde_json::from_str::<EpochReport>(line) {
            Ok(r) => epochs.push(r),
            Err(e) if epochs.is_empty() => {
                return Err(run_error(
                    path,
                    format!(
                        "neither a run's JSON (`epochs`: {doc_error}) nor a report file (line {}: \
                         {e}) nor an incidents database",
                        n + 1
                    ),
                ))
            }
            Err(e) => {
                return Err(run_error(
                    path,
                    format!("line {}: not an epoch report: {e}", n + 1),
                ))
            }
        }
    }
    Ok(epochs)
}

/// Every incident of `path`, by id: a database's, or those its epochs make.
pub fn load(path: &Path) -> Result<Vec<Incident>> {
    if is_database(path)? {
        return Store::open_read_only(path)?.all();
    }
    Ok(rebuild(TrackConfig::default(), &epochs_of(path)?))
}
