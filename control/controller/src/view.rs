//! The page from the command line: `canary simulate --serve` (a simulated run, paced so a page
//! can follow it), `canary view RUN.json` (a finished run), and the runtime both serve from.

use crate::error::{Error, Result};
use crate::page::{self, Page};
use crate::report::EpochReport;
use crate::setup::load_topology;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ViewArgs {
    /// A run's JSON (`canary run --json`, `canary simulate --json`).
    pub run: PathBuf,
    /// `fattree:K` or a YAML topology file (the one the run used).
    #[arg(long, default_value = "fattree:4")]
    pub topology: String,
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
    pub fn start(topology: &str, addr: &str) -> Result<Self> {
        let topo = load_topology(topology, None)?;
        let page = Page::new(&topo);
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

/// The epoch reports of a run's JSON; errors name the file and the epoch.
pub fn epochs_of(path: &std::path::Path) -> Result<Vec<EpochReport>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::given(format!("{}: not JSON", path.display()), e))?;
    let list = v["epochs"]
        .as_array()
        .ok_or_else(|| Error::given(path.display(), "no `epochs` list"))?;
    list.iter()
        .enumerate()
        .map(|(i, e)| {
            serde_json::from_value(e.clone()).map_err(|err| {
                Error::given(
                    format!("{}: epochs[{i}] is not an epoch report", path.display()),
                    err,
                )
            })
        })
        .collect()
}

/// `canary view`.
pub fn main(a: &ViewArgs) -> Result<()> {
    let epochs = epochs_of(&a.run)?;
    let served = Served::start(&a.topology, &a.serve)?;
    for e in &epochs {
        served.page.push(e);
    }
    served.until_shutdown();
    Ok(())
}
