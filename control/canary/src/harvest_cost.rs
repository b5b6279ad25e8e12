//! `canary harvest-cost`: which of the controller's per-epoch calls makes BMv2 drop frames
//! (testbed/harvest_cost.sh runs it; docs/testbed.md has the results).
//!
//! On a fabric `canary run` has configured and left, with the hosts' traffic flowing, it makes
//! one kind of the daemon's per-epoch calls at a time, epoch after epoch, on every monitor at
//! once as the daemon does, through the same BMv2 driver: nothing (`idle`), the epoch flip
//! (`flip`), the meter registers' read (`read`), HashPipe's zeroing (`clear`), all three in the
//! daemon's order (`all`), or a wave of rule writes (`rules`: every USM and DSM rule the switch
//! holds deleted and inserted again, twice the daemon's first wave). `silent` makes no call but
//! takes the HH rules away for the phase, so that no switch sends a heavy-hitter digest: beside
//! `idle`, it tells what the digests cost. Around each phase it reads the testbed's nftables counters: what each
//! switch's ports took in less what they sent is what the switch lost during the phase (give or
//! take the few frames inside a switch at either reading). Phases alternate, round after round,
//! so a change in the machine's load falls on all of them alike.

mod switch_loss;

use anyhow::{bail, Context, Result};
use canary_controller::daemon::load_p4;
use canary_controller::setup::load_topology;
use canary_core::fabric::RuleOp;
use canary_core::model::epoch_tag;
use canary_core::topo::SwitchIx;
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program};
use canary_switch::entries::{self, ReadRule, Write};
use canary_switch::switches::SwitchesFile;
use clap::Args;
use futures::future::join_all;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switch_loss::{counters, phase_loss, Phase};

#[derive(Args)]
pub struct HarvestCostArgs {
    /// The fabric's topology (`fattree:K` or a YAML file), as `canary run` was given it.
    #[arg(long)]
    topology: String,
    /// The switches file `canary run` was given.
    #[arg(long)]
    switches: PathBuf,
    /// The compiled program's directory `canary run` pushed.
    #[arg(long)]
    p4: PathBuf,
    #[arg(long, default_value_t = 1000)]
    epoch_ms: u64,
    /// When the read and the clear come in an epoch, as in the daemon (its --drain-ms).
    #[arg(long, default_value_t = 300)]
    drain_ms: u64,
    #[arg(long, default_value_t = 10)]
    epochs_per_phase: u64,
    /// The phases of one round, in order: idle, flip, read, clear, all, rules.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "idle,flip,read,clear,all,rules"
    )]
    phases: Vec<Action>,
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// The nftables netdev table of the testbed's counters (testbed/canary_testbed/accounting.py).
    #[arg(long, default_value = "canary_acct")]
    nft_table: String,
    /// Where the phases' losses go, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// This tool's election id: above the daemon's, so that it is primary on every switch.
    #[arg(long, default_value_t = 100)]
    election_id: u64,
}

/// One kind of the daemon's per-epoch calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Idle,
    Flip,
    Read,
    Clear,
    All,
    Rules,
    Silent,
}

/// A monitor as this tool drives it: the driver and the configuration it holds.
struct Monitor {
    driver: Bmv2Driver,
    mask: u32,
    /// Its USM and DSM rules' deletes, then their inserts.
    wave: Vec<Write>,
    /// Its HH rules' deletes, and their inserts.
    hh: (Vec<Write>, Vec<Write>),
}

pub fn command(a: HarvestCostArgs) -> Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run(a))
}

async fn run(a: HarvestCostArgs) -> Result<()> {
    let topo = load_topology(&a.topology, None)?;
    let path = a.switches.display().to_string();
    let bound = SwitchesFile::load(&path).and_then(|f| f.bind(&path, &topo))?;
    let p4 = load_p4(&a.p4)?;
    let program = Arc::new(Bmv2Program::new(p4.p4info, p4.device_config)?);
    let opts = Bmv2Options {
        election_id: u128::from(a.election_id),
        ..Bmv2Options::default()
    };
    let mut monitors = Vec::new();
    for b in &bound {
        let mut driver = Bmv2Driver::new(b.clone(), true, program.clone(), opts.clone());
        driver
            .connect()
            .await
            .with_context(|| format!("switch {}: connecting", b.name))?;
        let installed = driver.read_installed().await?;
        match installed.config.as_slice() {
            [1, mask, ..] => monitors.push(Monitor {
                driver,
                mask: *mask as u32,
                hh: hh_rules(b.ix, &installed.rules),
                wave: wave(b.ix, installed.rules),
            }),
            [0, ..] => {}
            _ => bail!(
                "switch {} holds no Canary configuration: run `canary run` on the fabric first",
                b.name
            ),
        }
    }
    let names: Vec<String> = bound.iter().map(|b| b.name.clone()).collect();
    eprintln!(
        "harvest-cost: {} monitors of {} switches ({} writes a rule wave); {} rounds of {:?}, {} epochs of {} ms each",
        monitors.len(),
        names.len(),
        monitors.iter().map(|m| m.wave.len()).sum::<usize>(),
        a.rounds,
        a.phases,
        a.epochs_per_phase,
        a.epoch_ms
    );
    let epoch = Duration::from_millis(a.epoch_ms);
    let drain = Duration::from_millis(a.drain_ms).min(epoch);
    // Epoch numbers far from the daemon's, so every flip writes a tag the switch did not hold.
    let mut e = 1_000u64;
    // The counters start with the fabric: what the switches lost before this tool's first
    // phase (the pipeline's push, the daemon's epochs, the traffic's start).
    let first = counters(&a.nft_table)?;
    let earlier = phase_loss(&names, &BTreeMap::new(), &first, 0, Action::Idle, 0);
    eprintln!(
        "harvest-cost: before the first phase: {} of {} frames lost inside switches {:?}",
        earlier.lost_total, earlier.frames_in, earlier.lost
    );
    let mut phases = Vec::new();
    for round in 1..=a.rounds {
        for &action in &a.phases {
            if action == Action::Silent {
                write_each(&mut monitors, |m| &m.hh.0, "deleting the HH rules").await?;
            }
            let before = counters(&a.nft_table)?;
            let mut slowest = Duration::ZERO;
            let mut digests = 0;
            for _ in 0..a.epochs_per_phase {
                e += 1;
                let start = Instant::now();
                slowest = slowest.max(epoch_calls(&mut monitors, action, e, drain).await?);
                tokio::time::sleep(epoch.saturating_sub(start.elapsed())).await;
                digests += monitors
                    .iter_mut()
                    .map(|m| m.driver.take_digests().reports.len())
                    .sum::<usize>();
            }
            let after = counters(&a.nft_table)?;
            if action == Action::Silent {
                write_each(&mut monitors, |m| &m.hh.1, "inserting the HH rules").await?;
            }
            let phase = phase_loss(&names, &before, &after, round, action, a.epochs_per_phase);
            let phase = Phase {
                slowest_calls_ms: slowest.as_millis() as u64,
                digests,
                ..phase
            };
            eprintln!(
                "harvest-cost: round {round} {action:?}: {} of {} frames lost inside switches {:?} (slowest epoch's calls {} ms, {} digests)",
                phase.lost_total, phase.frames_in, phase.lost, phase.slowest_calls_ms, phase.digests
            );
            phases.push(phase);
        }
    }
    if let Some(out) = &a.json {
        let doc = serde_json::json!({ "before_first_phase": earlier, "phases": phases });
        let text = serde_json::to_string_pretty(&doc)?;
        std::fs::write(out, text).with_context(|| format!("--json {}", out.display()))?;
    }
    Ok(())
}

/// One epoch's calls of `action` on every monitor at once; how long they took. The read and the
/// clear wait `drain` into the epoch, as the daemon's harvest does.
async fn epoch_calls(
    monitors: &mut [Monitor],
    action: Action,
    epoch: u64,
    drain: Duration,
) -> Result<Duration> {
    let start = Instant::now();
    let flip = matches!(action, Action::Flip | Action::All);
    let read = matches!(action, Action::Read | Action::All);
    let clear = matches!(action, Action::Clear | Action::All);
    let rules = action == Action::Rules;
    let results = join_all(monitors.iter_mut().map(|m| async move {
        let name = m.driver.name().to_string();
        if flip {
            let w = entries::epoch_flip(m.mask, epoch_tag(epoch));
            if let Some((_, e)) = m.driver.write(&[w]).await.into_iter().next() {
                bail!("switch {name}: epoch flip: {e}");
            }
        }
        if rules {
            if let Some((i, e)) = m.driver.write(&m.wave).await.into_iter().next() {
                bail!("switch {name}: rule wave, write {i}: {e}");
            }
        }
        if read || clear {
            tokio::time::sleep(drain).await;
        }
        if read {
            m.driver
                .read_meters()
                .await
                .with_context(|| format!("switch {name}: reading the meters"))?;
        }
        if clear {
            m.driver
                .clear_hashpipe()
                .await
                .with_context(|| format!("switch {name}: zeroing HashPipe"))?;
        }
        Ok(())
    }))
    .await;
    results.into_iter().collect::<Result<Vec<()>>>()?;
    // The drain is waiting, not calls.
    let waited = if read || clear { drain } else { Duration::ZERO };
    Ok(start.elapsed().saturating_sub(waited))
}

/// `writes(monitor)` written on every monitor at once.
async fn write_each(
    monitors: &mut [Monitor],
    writes: impl Fn(&Monitor) -> &Vec<Write> + Copy,
    what: &str,
) -> Result<()> {
    let results = join_all(monitors.iter_mut().map(|m| async move {
        let w = writes(m).clone();
        match m.driver.write(&w).await.into_iter().next() {
            Some((i, e)) => bail!("switch {}: {what}, write {i}: {e}", m.driver.name()),
            None => Ok(()),
        }
    }))
    .await;
    results.into_iter().collect()
}

/// The deletes and the inserts of the HH rules of `rules`.
fn hh_rules(switch: SwitchIx, rules: &[ReadRule]) -> (Vec<Write>, Vec<Write>) {
    rules
        .iter()
        .filter_map(|r| match *r {
            ReadRule::Hh { path_bf, eta } => Some((
                entries::rule(&RuleOp::RemoveHh { switch, path_bf }, 0, false),
                entries::rule(
                    &RuleOp::InstallHh {
                        switch,
                        path_bf,
                        eta,
                    },
                    0,
                    false,
                ),
            )),
            _ => None,
        })
        .unzip()
}

/// Deleting every USM and DSM rule of `rules`, then inserting each again.
fn wave(switch: SwitchIx, rules: Vec<ReadRule>) -> Vec<Write> {
    let (mut deletes, mut inserts) = (Vec::new(), Vec::new());
    for r in rules {
        let remove = match r {
            ReadRule::Usm { flow, .. } => RuleOp::RemoveUsm { switch, flow },
            ReadRule::Dsm { flow, path_bf, .. } => RuleOp::RemoveDsm {
                switch,
                flow,
                path_bf,
            },
            ReadRule::Hh { .. } => continue,
        };
        deletes.push(entries::rule(&remove, 0, false));
        let (install, id) = r.install(switch);
        inserts.push(entries::rule(&install, id, false));
    }
    deletes.extend(inserts);
    deletes
}
