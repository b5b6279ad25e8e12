//! `canary simulate --synth-meters`: a fabric past the packet simulator, its meters synthesized in
//! the switches' real size and its segments watched in rounds (`canary_lab::scale`).

use crate::simulate::SimulateArgs;
use anyhow::{Context, Result};
use canary_controller::controller::localizer_params;
use canary_core::sketch::MeterConfig;
use canary_lab::scale::{self, ScaleOptions, ScaleRun};
use canary_sim::synth::SynthConfig;

pub fn command(a: SimulateArgs) -> Result<()> {
    let p = &a.pipeline;
    let mut opts = ScaleOptions {
        topology: a.topology.clone(),
        faults: a.faults.clone(),
        noise: a.noise,
        epochs: a.epochs,
        seed: a.seed,
        synth: SynthConfig {
            flows_per_segment: p.beta,
            packets_per_segment: p.alpha,
            ..Default::default()
        },
        // Synthesized meters count a segment's flows the epoch it is watched.
        dwell: p.watch_round_epochs.unwrap_or(1),
        canary: localizer_params(p.groups, a.quantile_groups, p.floor(), None),
        faults_from: a.faults_from,
        watching: a.watch_plan,
        ..Default::default()
    };
    if let Some(w) = a.meter_width {
        opts.capacity.meter = MeterConfig::new(opts.capacity.meter.rows, w)
            .with_context(|| format!("--meter-width {w}"))?;
    }
    let quiet = a.quiet;
    // Preparing a large fabric takes seconds to minutes before the first epoch.
    let bar = crate::progress::spinner();
    bar.set_message(format!("preparing {}", opts.topology));
    let mut first = true;
    let run = scale::run(&opts, |e| {
        if first {
            crate::progress::epochs(&bar, u64::from(opts.epochs));
            first = false;
        }
        bar.inc(1);
        if !quiet {
            bar.suspend(|| {
                println!(
                "epoch {:>3}  watched {:>7}  flows {:>8}/{:<8}  evidence: {} unseen, oldest {}, \
                 {} stale  waiting {:>4}  blamed {:>4}  P {:.3} R {:.3} F1 {:.3}  {:.0} ms",
                e.epoch,
                e.watched,
                e.flows_counted,
                e.flows_sent,
                e.evidence.never_seen,
                e.evidence.oldest,
                e.stale,
                e.waiting,
                e.blamed.len(),
                e.score.precision,
                e.score.recall,
                e.score.f1,
                e.epoch_ms
            )
            });
        }
    });
    bar.finish_and_clear();
    let doc = run?;
    if let Some(measured) = &doc.synthesized {
        print!("{}", summary(measured));
    }
    if let Some(path) = &a.json {
        let f = std::fs::File::create(path).with_context(|| format!("cannot write {path}"))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &doc)?;
    }
    Ok(())
}

fn summary(r: &ScaleRun) -> String {
    let s = &r.setup;
    let detected: Vec<u64> = r.faults.iter().filter_map(|f| f.time_to_detect).collect();
    let mean_ttd = if detected.is_empty() {
        f64::NAN
    } else {
        detected.iter().sum::<u64>() as f64 / detected.len() as f64
    };
    let epoch_ms: Vec<f64> = r.epochs.iter().map(|e| e.epoch_ms).collect();
    let mut sorted = epoch_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let plan = if s.adaptive {
        format!(
            "adaptive: a sweep of {} half-rounds of {} segments per monitor and the rest on \
             suspicion, every segment watched at least every {} epochs",
            s.rounds,
            (s.segments_per_monitor / 2).max(1),
            s.period
        )
    } else {
        format!(
            "{} segments per monitor and round, {} rounds, every segment watched every {} epochs",
            s.segments_per_monitor, s.rounds, s.period
        )
    };
    format!(
        "{}: {} switches, {} hosts, {} monitors, {} segments; meters {}x{}\n\
         watch plan: {} (planned in {:.0} ms; fabric prepared in {:.1} s)\n\
         faults: {}, detected {} (mean time to detect {:.1} epochs, longest {})\n\
         after the first period: P {:.3} R {:.3} F1 {:.3} (TP {} FP {} FN {}); F1 >= 0.95 from epoch {}\n\
         epoch (minus meters + evidence + Canary): median {:.0} ms; peak memory {}\n",
        s.topology,
        s.switches,
        s.hosts,
        s.monitors,
        s.segments,
        s.meters.rows,
        s.meters.width,
        plan,
        s.plan_ms,
        s.prepare_s,
        r.faults.len(),
        detected.len(),
        mean_ttd,
        detected.iter().max().map_or("-".into(), |m| m.to_string()),
        r.after_first_period.precision,
        r.after_first_period.recall,
        r.after_first_period.f1,
        r.after_first_period.tp,
        r.after_first_period.fp,
        r.after_first_period.fn_,
        r.accurate_from.map_or("- (never for the rest of the run)".into(), |e| e.to_string()),
        median,
        r.peak_rss_mb
            .map_or("unknown".into(), |m| format!("{m:.0} MB")),
    )
}
