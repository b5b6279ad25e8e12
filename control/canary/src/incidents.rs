//! `canary incidents`: the incidents of a run, from its database (a live or finished daemon's,
//! a simulated run's) or rebuilt from a finished run's JSON or report file.

use anyhow::{bail, Result};
use canary_controller::incidents::{
    self, render_incident, render_table, Filter, Incident, Since, State, Store,
};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct IncidentsArgs {
    /// An incidents database (`RUN.incidents.sqlite`), a run's JSON (`--json`) or a report
    /// file (`--report`); the last two are replayed into incidents.
    pub run: Option<PathBuf>,
    /// The incidents database to read (a live daemon's is read while it writes).
    #[arg(long, global = true)]
    pub db: Option<PathBuf>,
    /// Only incidents open at or after this point, or blamed or cleared since: an epoch
    /// number or an RFC 3339 time (2026-11-27T10:42:00Z).
    #[arg(long, value_parser = Since::parse)]
    pub since: Option<Since>,
    /// Only incidents in these states (repeat it, or separate them with commas).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub state: Vec<State>,
    /// Print JSON: every incident listed (an array), or the one shown.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub show: Option<Show>,
}

#[derive(Subcommand)]
pub enum Show {
    /// One incident in full.
    Show { id: u64 },
}

/// Every incident of the source given, by id.
fn load(a: &IncidentsArgs) -> Result<Vec<Incident>> {
    match (&a.db, &a.run) {
        (Some(_), Some(run)) => bail!("--db and {}: give one", run.display()),
        (Some(db), None) => Ok(Store::open_read_only(db)?.all()?),
        (None, Some(run)) => Ok(incidents::load(run)?),
        (None, None) => bail!(
            "give a run: an incidents database (RUN.incidents.sqlite, or --db FILE), a run's \
             JSON (--json) or a report file (--report)"
        ),
    }
}

pub fn command(a: IncidentsArgs) -> Result<()> {
    let all = load(&a)?;
    if let Some(Show::Show { id }) = a.show {
        let Some(i) = all.iter().find(|i| i.id == id) else {
            bail!("incident {id}: there is none (ids 1 to {})", all.len());
        };
        if a.json {
            println!("{}", serde_json::to_string_pretty(i)?);
        } else {
            print!("{}", render_incident(i));
        }
        return Ok(());
    }
    let filter = Filter {
        since: a.since.clone(),
        states: a.state.clone(),
    };
    let shown: Vec<Incident> = all.into_iter().filter(|i| filter.matches(i)).collect();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        print!("{}", render_table(&shown));
    }
    Ok(())
}
