//! Where the daemon's epochs go: the report file, the page, the caller, stdout and the run's
//! document. Apart from the loop that makes them, which only hands each one on.

use super::{controller_config, RunOptions};
use crate::controller::Controller;
use crate::error::Result;
use crate::incidents::{rfc3339, Journal, TrackConfig};
use crate::metrics::{self, Metrics};
use crate::report::{render_epoch, EpochReport};
use crate::report_file::ReportFile;
use crate::run_document::RunDocument;
use crate::setup::Prepared;
use canary_core::fault::Fault;
use std::io::Write;
use std::sync::Arc;

/// Where the epochs go: the report file, the metrics, the caller, and the run's document.
pub(super) struct Sink<'a, F> {
    pub(super) report: Option<&'a mut ReportFile>,
    /// The incidents, continued from their database.
    pub(super) journal: Option<Journal>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) page: Option<crate::page::Page>,
    pub(super) on_epoch: F,
    pub(super) epochs: Vec<EpochReport>,
}

impl<'a, F> Sink<'a, F> {
    /// Opens where the epochs go besides `report`: the incidents' database, the metrics' and
    /// the page's servers.
    pub(super) async fn open(
        opts: &RunOptions,
        prep: &Prepared,
        report: Option<&'a mut ReportFile>,
        on_epoch: F,
    ) -> Result<Self> {
        let journal = match &opts.incidents {
            Some(p) => Some(Journal::open(p, TrackConfig::default())?),
            None => None,
        };
        let metrics = Arc::new(Metrics::new());
        if let Some(addr) = &opts.metrics {
            let bound = metrics::serve(addr, metrics.clone()).await?;
            tracing::info!("metrics on http://{bound}/metrics");
            if !opts.quiet {
                eprintln!("metrics: http://{bound}/metrics");
            }
        }
        metrics.set_epoch_length(opts.epoch);
        let page = match &opts.http {
            Some(addr) => {
                let page = crate::page::Page::new(&prep.topo);
                let bound = crate::page::serve(addr, page.clone()).await?;
                metrics.set_page(&bound.to_string());
                if !opts.quiet {
                    eprintln!("the page: http://{bound}/");
                }
                Some(page)
            }
            None => None,
        };
        if let (Some(j), Some(p)) = (&journal, &page) {
            p.follow_incidents(j.all()?);
        }
        Ok(Self {
            report,
            journal,
            metrics,
            page,
            on_epoch,
            epochs: Vec::new(),
        })
    }
}

impl<F: FnMut(&EpochReport)> Sink<'_, F> {
    /// The last epoch reported, by this controller or one before it. The incidents are taken
    /// up where it left them, too.
    pub(super) fn last_epoch(&mut self) -> Result<Option<u64>> {
        let last = match self.report.as_mut() {
            Some(f) => f.reread()?,
            None => self.epochs.last().map(|r| r.epoch),
        };
        if let Some(j) = self.journal.as_mut() {
            j.resume(self.report.as_ref().map(|f| f.path()))?;
            // The page lists the database's incidents, with the ids the alerts carry.
            if let Some(p) = &self.page {
                p.follow_incidents(j.all()?);
            }
        }
        Ok(last)
    }

    /// Hands on one epoch, dated now.
    pub(super) fn emit(&mut self, mut r: EpochReport, quiet: bool) -> Result<()> {
        r.at.get_or_insert_with(rfc3339);
        if let Some(f) = self.report.as_mut() {
            f.append(&r)?;
        }
        if let Some(j) = self.journal.as_mut() {
            // The incidents follow from the report: a database that cannot be written is
            // said, and its changes go out with the next epoch's.
            match j.observe(&r, r.at.as_deref()) {
                Ok(changed) => {
                    if let Some(p) = &self.page {
                        p.incidents_changed(&changed);
                    }
                }
                Err(e) => tracing::warn!("epoch {}: {e}", r.epoch),
            }
            self.metrics.observe_incidents(j.live());
        }
        if let Some(p) = &self.page {
            p.push(&r);
        }
        (self.on_epoch)(&r);
        if !quiet {
            print!("{}", render_epoch(&r, 8));
            let _ = std::io::stdout().flush();
        }
        self.epochs.push(r);
        Ok(())
    }

    /// The run's document: every epoch this process reported.
    pub(super) fn result(
        &mut self,
        prep: &Prepared,
        faults: &[Fault],
        opts: &RunOptions,
    ) -> RunDocument {
        let ctl = Controller::new(
            prep.topo.clone(),
            prep.segments.clone(),
            prep.codec.clone(),
            controller_config(opts),
        );
        crate::simulate::document(
            crate::run_document::RunKind::Switches,
            &ctl,
            faults,
            0,
            std::mem::take(&mut self.epochs),
        )
    }
}
