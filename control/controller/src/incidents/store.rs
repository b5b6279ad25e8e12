//! The incidents' SQLite file: one row per incident (the incident as JSON in `doc`, its main
//! fields as columns for anyone who queries the file), and the last epoch taken. Each epoch's
//! changes go in one transaction, so a controller killed at any point leaves the file as it
//! was after some whole epoch.

use super::error::IncidentsError;
use super::track::{TrackConfig, Tracker};
use super::Incident;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::Duration;

type Result<T> = std::result::Result<T, IncidentsError>;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS incidents (
    id INTEGER PRIMARY KEY,
    subject TEXT NOT NULL,
    state TEXT NOT NULL,
    episodes INTEGER NOT NULL,
    blamed_now INTEGER NOT NULL,
    first_epoch INTEGER NOT NULL,
    first_at TEXT,
    last_epoch INTEGER NOT NULL,
    last_at TEXT,
    cleared_epoch INTEGER,
    cleared_at TEXT,
    peak_loss REAL NOT NULL,
    current_loss REAL NOT NULL,
    doc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tracker (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
PRAGMA user_version = 1;
";

/// The database beside a report or run file: `run.jsonl` → `run.incidents.sqlite`.
pub fn default_path(beside: &Path) -> PathBuf {
    let stem = beside
        .file_stem()
        .map_or_else(|| "canary".into(), |s| s.to_string_lossy().into_owned());
    beside.with_file_name(format!("{stem}.incidents.sqlite"))
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating it if need be) the database at `path` for a controller to write.
    pub fn open(path: &Path) -> Result<Self> {
        let conn = Connection::open(path).map_err(IncidentsError::db(path, "cannot open"))?;
        let me = Self::with(conn, path)?;
        me.conn
            .execute_batch(SCHEMA)
            .map_err(IncidentsError::db(path, "cannot create its tables"))?;
        Ok(me)
    }

    /// A new, empty database at `path`, replacing any file there (a new simulated run).
    pub fn create(path: &Path) -> Result<Self> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(IncidentsError::Run {
                    path: path.display().to_string(),
                    why: format!("cannot replace it: {e}"),
                })
            }
            _ => {}
        }
        Self::open(path)
    }

    /// Opens an existing database to read (a live controller may be writing it).
    pub fn open_read_only(path: &Path) -> Result<Self> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(IncidentsError::db(path, "cannot open to read"))?;
        Self::with(conn, path)
    }

    fn with(conn: Connection, path: &Path) -> Result<Self> {
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(IncidentsError::db(path, "cannot set its busy timeout"))?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last epoch a controller gave the incidents.
    pub fn last_epoch(&self) -> Result<Option<u64>> {
        let v: Option<i64> = self
            .conn
            .query_row(
                "SELECT value FROM tracker WHERE key = 'last_epoch'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(IncidentsError::db(&self.path, "cannot read its last epoch"))?;
        Ok(v.map(|e| e as u64))
    }

    /// A tracker that goes on where the database's left off: the same live incidents, ids
    /// counted on.
    pub fn resume(&self, cfg: TrackConfig) -> Result<Tracker> {
        let last = self.last_epoch()?;
        let next: i64 = self
            .conn
            .query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM incidents", [], |r| {
                r.get(0)
            })
            .map_err(IncidentsError::db(&self.path, "cannot read its ids"))?;
        let live = self.select(
            "WHERE blamed_now = 1 OR (state != 'corrected' AND cleared_epoch IS NOT NULL \
             AND cleared_epoch + ?1 >= ?2)",
            params![cfg.flap_window as i64, last.map_or(i64::MAX, |l| l as i64)],
        )?;
        Ok(Tracker::resume(cfg, live, next as u64, last))
    }

    /// Writes one epoch's changed incidents and the epoch taken, in one transaction.
    pub fn save(&mut self, changed: &[Incident], last_epoch: Option<u64>) -> Result<()> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction()
            .map_err(IncidentsError::db(&path, "cannot begin a transaction"))?;
        for i in changed {
            let doc = serde_json::to_string(i).expect("an incident serializes");
            tx.execute(
                "INSERT OR REPLACE INTO incidents (id, subject, state, episodes, blamed_now, \
                 first_epoch, first_at, last_epoch, last_at, cleared_epoch, cleared_at, \
                 peak_loss, current_loss, doc) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    i.id as i64,
                    i.subject.to_string(),
                    i.state.name(),
                    i.episodes,
                    i.blamed_now,
                    i.first_epoch as i64,
                    i.first_at,
                    i.last_epoch as i64,
                    i.last_at,
                    i.cleared_epoch.map(|e| e as i64),
                    i.cleared_at,
                    i.peak.loss,
                    i.current.loss,
                    doc,
                ],
            )
            .map_err(IncidentsError::db(
                &path,
                format!("cannot write incident {}", i.id),
            ))?;
        }
        if let Some(e) = last_epoch {
            tx.execute(
                "INSERT OR REPLACE INTO tracker (key, value) VALUES ('last_epoch', ?1)",
                params![e as i64],
            )
            .map_err(IncidentsError::db(&path, "cannot write its last epoch"))?;
        }
        tx.commit().map_err(IncidentsError::db(
            &path,
            "cannot commit an epoch's incidents",
        ))
    }

    /// Every incident, by id.
    pub fn all(&self) -> Result<Vec<Incident>> {
        self.select("", [])
    }

    /// One incident.
    pub fn get(&self, id: u64) -> Result<Option<Incident>> {
        Ok(self
            .select("WHERE id = ?1", params![id as i64])?
            .into_iter()
            .next())
    }

    fn select(&self, filter: &str, p: impl rusqlite::Params) -> Result<Vec<Incident>> {
        let sql = format!("SELECT id, doc FROM incidents {filter} ORDER BY id");
        let what = "cannot read its incidents";
        let mut stmt = self
            .conn
            .prepare(&sql)
            .map_err(IncidentsError::db(&self.path, what))?;
        let rows = stmt
            .query_map(p, |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(IncidentsError::db(&self.path, what))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, doc) = row.map_err(IncidentsError::db(&self.path, what))?;
            let i = serde_json::from_str(&doc).map_err(|e| IncidentsError::Row {
                path: self.path.display().to_string(),
                id,
                why: format!("its doc is not an incident: {e}"),
            })?;
            out.push(i);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Journal, State};
    use super::*;
    use crate::report::{EpochReport, LinkReport};

    fn epoch(e: u64, blamed: &[(&str, &str)]) -> EpochReport {
        let mut r = EpochReport::missed(e, 8, String::new());
        r.incomplete = None;
        r.blamed = blamed
            .iter()
            .map(|(a, b)| LinkReport {
                link: [a.to_string(), b.to_string()],
                loss: 0.1,
                stage: Some(1),
                ci95: None,
                since: None,
                flows: None,
                held: false,
            })
            .collect();
        r
    }

    #[test]
    fn the_default_database_is_beside_the_report() {
        assert_eq!(
            default_path(Path::new("/var/lib/canary/run.jsonl")),
            Path::new("/var/lib/canary/run.incidents.sqlite")
        );
        assert_eq!(
            default_path(Path::new("run.json")),
            Path::new("run.incidents.sqlite")
        );
    }

    #[test]
    fn a_reopened_database_continues_the_same_incidents() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.incidents.sqlite");
        let cfg = TrackConfig::default();
        let mut j = Journal::open(&path, cfg).unwrap();
        j.observe(&epoch(0, &[("a", "b")]), Some("2026-11-27T10:42:00Z"))
            .unwrap();
        j.observe(&epoch(1, &[("a", "b"), ("c", "d")]), None)
            .unwrap();
        j.observe(&epoch(2, &[("c", "d")]), None).unwrap();
        drop(j);
        // A new process: the same ids go on, and a→b, clear since epoch 2, flaps.
        let mut j = Journal::open(&path, cfg).unwrap();
        let out = j
            .observe(&epoch(3, &[("a", "b"), ("c", "d")]), None)
            .unwrap();
        let got: Vec<(u64, State, u32)> = out.iter().map(|i| (i.id, i.state, i.episodes)).collect();
        assert_eq!(got, [(1, State::Flapping, 2), (2, State::Ongoing, 1)]);
        // Epoch 3 again (the report read twice) changes nothing.
        assert!(j.observe(&epoch(3, &[]), None).unwrap().is_empty());
        let read = Store::open_read_only(&path).unwrap();
        assert_eq!(read.last_epoch().unwrap(), Some(3));
        let all = read.all().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].first_at.as_deref(), Some("2026-11-27T10:42:00Z"));
        assert_eq!(read.get(2).unwrap().unwrap().state, State::Ongoing);
        assert!(read.get(3).unwrap().is_none());
    }

    #[test]
    fn a_restart_catches_up_the_epochs_the_report_has_and_the_database_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.incidents.sqlite");
        let report = dir.path().join("r.jsonl");
        let mut j = Journal::open(&path, TrackConfig::default()).unwrap();
        j.observe(&epoch(0, &[("a", "b")]), None).unwrap();
        // Killed after writing epoch 1's report line, before its incidents.
        let lines: String = [epoch(0, &[("a", "b")]), epoch(1, &[])]
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(&report, lines).unwrap();
        let mut j = Journal::open(&path, TrackConfig::default()).unwrap();
        j.resume(Some(&report)).unwrap();
        let all = j.all().unwrap();
        assert_eq!(
            (all[0].state, all[0].cleared_epoch),
            (State::Cleared, Some(1))
        );
    }

    #[test]
    fn a_file_that_is_no_database_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not.sqlite");
        std::fs::write(&path, "{\"epoch\": 1}\n".repeat(100)).unwrap();
        let e = Store::open_read_only(&path)
            .and_then(|s| s.all())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not.sqlite"), "{e}");
        let missing = dir.path().join("missing.sqlite");
        let e = Store::open_read_only(&missing).err().unwrap().to_string();
        assert!(e.contains("missing.sqlite"), "{e}");
    }
}
