//! What can go wrong with incidents: their database, or a file given as a run.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum IncidentsError {
    /// The SQLite file could not be opened, read or written.
    #[error("incident database {path}: {what}: {error}")]
    Db {
        path: String,
        what: String,
        error: rusqlite::Error,
    },
    /// A row of the database that is not an incident (written by something else, or damaged).
    #[error("incident database {path}: incident {id}: {why}")]
    Row { path: String, id: i64, why: String },
    /// A file given as a run that is neither a run's JSON, a report file nor a database.
    #[error("{path}: {why}")]
    Run { path: String, why: String },
}

impl IncidentsError {
    pub(super) fn db(path: &Path, what: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> Self {
        let path = path.display().to_string();
        let what = what.into();
        move |error| IncidentsError::Db { path, what, error }
    }
}
