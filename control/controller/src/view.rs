//! The page from the command line: `canary simulate --serve` (a simulated run, paced so a page
//! can follow it), `canary view RUN.json` (a finished run), and the runtime both serve from.

use crate::error::{Error, Result};
use crate::page::{self, Page};
use crate::run_document::RunDocument;
use canary_core::topo::Topology;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ViewArgs {
    /// A run's JSON document (`canary run --json`, `canary simulate --json`, with or without
    /// `--synth-meters`).
    pub run: PathBuf,
    /// `fattree:K` or a YAML topology file: only for a document from before version 1 on a
    /// topology file. The run's own fabric is used otherwise, and another one is refused.
    #[arg(long)]
    pub topology: Option<String>,
    /// Where to serve the page, e.g. 127.0.0.1:8080.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub serve: String,
}

/// A page served from a runtime of its own, so that synchronous commands can feed it.
pub struct Served {
    pub page: Page,
    pub addr: std::net::SocketAddr,
    rt: tokio::runtime::Runtime,
}

impl Served {
    pub fn start(topo: &Topology, addr: &str) -> Result<Self> {
        let page = Page::new(topo);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| Error::io("the page's runtime", e))?;
        let addr = rt.block_on(page::serve(addr, page.clone()))?;
        eprintln!("the page: http://{addr}/");
        Ok(Served { page, addr, rt })
    }

    /// Keeps serving until Ctrl-C or SIGTERM.
    pub fn until_shutdown(self) {
        eprintln!("serving http://{}/ until Ctrl-C", self.addr);
        self.rt.block_on(crate::daemon::shutdown_signal());
    }
}

/// `canary view`.
pub fn main(a: &ViewArgs) -> Result<()> {
    let doc = RunDocument::load(&a.run)?;
    let topo = doc.topology_for(&a.run.display().to_string(), a.topology.as_deref())?;
    let served = Served::start(&topo, &a.serve)?;
    // The run's incidents database, where it kept one beside its document: the page shows its
    // ids. Otherwise the page derives them from the epochs.
    let beside = crate::incidents::default_path(&a.run);
    if beside.exists() {
        let store = crate::incidents::Store::open_read_only(&beside)?;
        served.page.follow_incidents(store.all()?);
    }
    for e in &doc.epochs {
        served.page.push(e);
    }
    served.until_shutdown();
    Ok(())
}
