//! A controller's incidents: the tracker and its database kept in step, epoch by epoch.

use super::error::IncidentsError;
use super::store::Store;
use super::track::{TrackConfig, Tracker};
use super::Incident;
use crate::report::EpochReport;
use std::collections::BTreeMap;
use std::path::Path;

type Result<T> = std::result::Result<T, IncidentsError>;

pub struct Journal {
    store: Store,
    tracker: Tracker,
    /// Incidents changed in epochs whose write failed: written with the next epoch's.
    unsaved: BTreeMap<u64, Incident>,
}

impl Journal {
    /// The database at `path` (created if need be), its incidents continued.
    pub fn open(path: &Path, cfg: TrackConfig) -> Result<Self> {
        let store = Store::open(path)?;
        let tracker = store.resume(cfg)?;
        Ok(Self {
            store,
            tracker,
            unsaved: BTreeMap::new(),
        })
    }

    /// A new database at `path`, replacing any there (a new simulated run).
    pub fn create(path: &Path, cfg: TrackConfig) -> Result<Self> {
        let store = Store::create(path)?;
        Ok(Self {
            store,
            tracker: Tracker::new(cfg),
            unsaved: BTreeMap::new(),
        })
    }

    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// Takes up the database as another controller may have left it (a standby taking over,
    /// a restart), then the epochs of `report` (the report file) it does not have yet: a
    /// controller killed between writing its report line and its incidents loses none.
    pub fn resume(&mut self, report: Option<&Path>) -> Result<()> {
        self.tracker = self.store.resume(self.tracker.config())?;
        let Some(path) = report else {
            return Ok(());
        };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(IncidentsError::Run {
                    path: path.display().to_string(),
                    why: format!("cannot read the report to catch up: {e}"),
                })
            }
        };
        let last = self.tracker.last_epoch();
        for r in text
            .lines()
            .filter_map(|l| serde_json::from_str::<EpochReport>(l).ok())
            .filter(|r| last.is_none_or(|l| r.epoch > l))
        {
            self.observe(&r, r.at.as_deref())?;
        }
        Ok(())
    }

    /// Takes one epoch and writes what it changed. On a failed write the incidents stay in
    /// memory and go out with the next epoch's.
    pub fn observe(&mut self, r: &EpochReport, at: Option<&str>) -> Result<Vec<Incident>> {
        let changed = self.tracker.observe(r, at);
        for i in &changed {
            self.unsaved.insert(i.id, i.clone());
        }
        let pending: Vec<Incident> = self.unsaved.values().cloned().collect();
        self.store.save(&pending, self.tracker.last_epoch())?;
        self.unsaved.clear();
        Ok(changed)
    }

    /// The incidents still open (blamed now, or cleared within the flap window).
    pub fn live(&self) -> impl Iterator<Item = &Incident> {
        self.tracker.live()
    }

    /// Every incident in the database.
    pub fn all(&self) -> Result<Vec<Incident>> {
        self.store.all()
    }
}
