//! The daemon's epoch loop on one fabric of any target's switches: connect, resume after what
//! was reported, run epochs until done, shut down or demoted. Apart from [`super::run`], which
//! starts one on a fabric of the target's drivers for every term this controller is primary
//! (`targets`: which drivers, and whether to stand by after being demoted).

use super::out_of_service::OutOfServiceFile;
use super::sink::Sink;
use super::{controller_config, RunOptions};
use crate::cluster::ClusterStages;
use crate::controller::Controller;
use crate::error::{Error, Result};
use crate::report::EpochReport;
use crate::run_document::RunDocument;
use crate::setup::Prepared;
use canary_core::fault::Fault;
use canary_core::pathbf::PathBfParams;
use canary_switch::driver::SwitchDriver;
use canary_switch::fabric::SwitchFabric;
use std::future::Future;

/// How a run on one fabric ended.
pub(super) enum Ended {
    Done(Box<RunDocument>),
    /// Another controller became primary: this one stands down.
    Demoted(String),
}

/// The daemon over a fabric of any target's switches, until its epochs are done, shutdown, or
/// another controller takes the switches over.
pub(super) async fn run_fabric<D: SwitchDriver, F: FnMut(&EpochReport)>(
    opts: &RunOptions,
    prep: Prepared,
    faults: &[Fault],
    (mut fabric, reads): (SwitchFabric<D>, Option<crate::cluster::wire::SwitchReads>),
    shutdown: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
    sink: &mut Sink<'_, F>,
) -> Result<Ended> {
    let mut drained = match &opts.out_of_service {
        Some(p) => Some(OutOfServiceFile::load(p, &prep.topo)?),
        None => None,
    };
    if let Err(e) = fabric.connect(opts.connect_patience).await {
        if let Some(why) = fabric.demoted() {
            sink.metrics.set_primary(false);
            return Ok(Ended::Demoted(why.to_string()));
        }
        return Err(Error::switches(e));
    }
    if !opts.quiet {
        eprintln!(
            "configured {} switches of {}; epochs of {:?}",
            prep.topo.switches.len(),
            prep.topo.name,
            opts.epoch
        );
    }
    let mut ctl = Controller::new(
        prep.topo,
        prep.segments,
        prep.codec,
        controller_config(opts),
    );
    ctl.ports = fabric.ports().clone();
    if let Some((cluster, parts)) = &opts.cluster {
        let pathbf = PathBfParams::default();
        if let Some(r) = ClusterStages::attach(&mut ctl, cluster, *parts, pathbf, reads).await? {
            // The harvest workers read the switches: this process reads no switch's meters.
            fabric.read_elsewhere(Box::new(r));
        }
    }
    sink.metrics.set_primary(true);
    let last = sink.last_epoch()?;
    for missed in ctl.start_after(&mut fabric, last).await {
        sink.metrics.observe_incomplete();
        sink.emit(missed, opts.quiet)?;
    }
    let first = sink.epochs.len();
    loop {
        if opts.epochs > 0 && sink.epochs.len() - first >= opts.epochs as usize {
            break;
        }
        if let Some(d) = &mut drained {
            // The epoch that counts now is the one the drain starts or ends in.
            let links = d.links_at(&ctl.topo, ctl.epoch());
            if let Err(e) = fabric.set_out_of_service(&links).await {
                tracing::error!("--out-of-service: {e}");
            }
        }
        let r = tokio::select! {
            r = ctl.run_epoch(&mut fabric) => r,
            _ = shutdown.as_mut() => {
                tracing::info!("shutting down");
                break;
            }
        };
        let lost = fabric.demoted().map(str::to_string);
        if let Some(why) = lost.or_else(|| fabric.lease_lost()) {
            // Its epoch is the new primary's to report.
            sink.metrics.set_primary(false);
            return Ok(Ended::Demoted(why));
        }
        if sink.epochs.len() == first {
            tracing::info!(epoch = r.epoch, "first epoch reported");
        }
        sink.metrics
            .observe(&ctl, &r, fabric.counters.digests_dropped);
        sink.emit(r, opts.quiet)?;
    }
    let result = crate::simulate::document(
        crate::run_document::RunKind::Switches,
        &ctl,
        faults,
        0,
        std::mem::take(&mut sink.epochs),
    );
    if let Some(path) = &opts.json {
        let f = std::fs::File::create(path)
            .map_err(|e| Error::io(format!("--json {}: cannot write", path.display()), e))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &result)
            .map_err(|e| Error::io(format!("--json {}: cannot write", path.display()), e.into()))?;
    }
    tracing::info!(counters = ?fabric.counters, "fabric counters");
    Ok(Ended::Done(Box::new(result)))
}
