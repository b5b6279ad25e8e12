//! The switches' side of the fabric: each switch's model, its epoch flips, and the meter step
//! every packet takes at every switch it reaches, with the HH digests that causes. It follows
//! the hosts' side ([`super::hosts`]) job by job, in their order, so each switch sees its
//! packets in the order it always did.

use super::batch::{Batch, Job, Walk};
use canary_core::fabric::HhReport;
use canary_core::model::{epoch_tag, MonitorRules, Shim, SwitchModel};
use canary_core::sketch::FlowHashes;
use canary_core::topo::SwitchIx;
use canary_core::FlowId;
use rustc_hash::FxHashSet;
use smallvec::SmallVec;

/// One switch: the model, and the epoch flip as it reaches the switch (with skew).
pub(super) struct SimSwitch {
    pub model: SwitchModel,
    pub epoch: u64,
    pub prev_epoch: u64,
    pub flip_at: u64,
    pub down: bool,
    /// Changes whenever the switch's rules or configuration may have (a rule applied, a driver
    /// writing into the model, a restart): what flows cached of its tables is then stale.
    pub gen: u64,
}

impl SimSwitch {
    /// The epoch the switch counts in at time `t`.
    pub fn epoch_at(&self, t: u64) -> u64 {
        if t >= self.flip_at {
            self.epoch
        } else {
            self.prev_epoch
        }
    }
}

/// A flow's rules at one hop, as last looked up: they hold while the switch's tables are those
/// of generation `gen` and the flow's packets arrive there with `path_bf`. Every packet of a
/// flow finds the same rules until the controller changes them, so the meter step's table
/// lookups (hashes of the flow key) run once per flow and hop, not per packet.
#[derive(Clone, Copy, Default)]
struct HopRules {
    gen: u64,
    path_bf: u32,
    rules: MonitorRules,
}

/// What the switches see of a flow: its key and, per hop, the switch and its rules (side by
/// side, as a packet needs both at each hop).
pub(super) struct FlowView {
    id: FlowId,
    h: FlowHashes,
    /// Inline for the paths of a fat-tree (five switches at most), as [`super::hosts::Path`].
    hops: SmallVec<[(SwitchIx, HopRules); 5]>,
}

impl FlowView {
    pub fn new(id: FlowId, h: FlowHashes, path: &[SwitchIx]) -> Self {
        FlowView {
            id,
            h,
            hops: path.iter().map(|&s| (s, HopRules::default())).collect(),
        }
    }
}

pub(super) struct Switches {
    pub switches: Vec<SimSwitch>,
    flows: Vec<FlowView>,
    pub reports: Vec<HhReport>,
    /// Digests not yet taken: a switch's digest engine sends a flow once until the controller
    /// acknowledges it (P4Runtime's digest cache), though the pipeline asks per packet.
    pub reported: FxHashSet<(SwitchIx, FlowId)>,
    /// Digests sent, ever.
    pub sent: u64,
    /// Shims of packets waiting for the next run, and those of the last run.
    parked: Vec<Shim>,
    last_parked: Vec<Shim>,
    /// Switches are configured through drivers: their epoch is what was written into them.
    pub driven: bool,
    pub hop_latency_ns: u64,
    /// Spacing of a train's packets.
    pub line_gap_ns: u64,
    /// The parts of the train being walked (kept to reuse the allocation).
    parts: Vec<(u64, Shim)>,
    /// Runs of time whose two sides went on two threads.
    pub runs_on_two_threads: u64,
}

impl Switches {
    pub fn new(switches: Vec<SimSwitch>, hop_latency_ns: u64, line_gap_ns: u64) -> Self {
        Switches {
            switches,
            flows: Vec::new(),
            reports: Vec::new(),
            reported: FxHashSet::default(),
            sent: 0,
            parked: Vec::new(),
            last_parked: Vec::new(),
            driven: false,
            hop_latency_ns,
            line_gap_ns,
            parts: Vec::new(),
            runs_on_two_threads: 0,
        }
    }

    /// A new run of time: the packets parked so far are those it resumes.
    pub fn start_run(&mut self) {
        self.last_parked = std::mem::take(&mut self.parked);
    }

    pub fn run(&mut self, batch: &mut Batch) {
        for i in 0..batch.jobs.len() {
            match batch.jobs[i] {
                Job::Open { ix, view } => {
                    let view = batch.opens[view as usize]
                        .take()
                        .expect("each opening once");
                    let ix = ix as usize;
                    if ix == self.flows.len() {
                        self.flows.push(view);
                    } else {
                        self.flows[ix] = view;
                    }
                }
                Job::Walk(w) => self.walk(w, &batch.arrived),
            }
        }
    }

    /// The meter step at switches `w.from..w.to` of the flow's path, for every packet of the
    /// train that reached each. The train goes through in parts of packets that carry the same
    /// shim: one at first; a switch whose epoch flips while the train passes splits each part
    /// into the packets before the flip and those after (they count, and are marked, in
    /// different epochs).
    fn walk(&mut self, w: Walk, arrived: &[u64]) {
        let f = &mut self.flows[w.flow as usize];
        let shim = match w.resumed {
            Walk::FRESH => Shim::default(),
            i => self.last_parked[i as usize],
        };
        let all = if w.n >= 64 {
            u64::MAX
        } else {
            (1u64 << w.n) - 1
        };
        let parts = &mut self.parts;
        parts.clear();
        parts.push((all, shim));
        let len = f.hops.len();
        for (k, hop) in (usize::from(w.from)..usize::from(w.to)).enumerate() {
            let here = if w.n == 1 {
                1
            } else {
                arrived[w.masks as usize + k]
            };
            let (s, cached) = &mut f.hops[hop];
            let s = *s;
            let sw = &mut self.switches[s as usize];
            // When the train's first packet reaches this switch.
            let t = w.t + k as u64 * self.hop_latency_ns;
            let last = hop + 1 == len;
            let mut i = 0;
            while i < parts.len() {
                let (mask, shim) = parts[i];
                let mask = mask & here;
                if mask == 0 {
                    parts.remove(i);
                    continue;
                }
                // Packets from index `cut` on arrive after this switch's flip.
                let cut = if self.driven || sw.flip_at <= t {
                    0
                } else {
                    (sw.flip_at - t).div_ceil(self.line_gap_ns.max(1)).min(64) as u32
                };
                let before = if cut >= 64 {
                    mask
                } else {
                    mask & ((1u64 << cut) - 1)
                };
                let after = mask & !before;
                let mut out = [(0u64, shim); 2];
                let mut used = 0;
                for (m, epoch) in [(before, sw.prev_epoch), (after, sw.epoch)] {
                    if m == 0 {
                        continue;
                    }
                    let mut sh = shim;
                    if !self.driven {
                        let tag = epoch_tag(epoch);
                        let mut config = sw.model.config();
                        if config.epoch != tag {
                            config.epoch = tag;
                            sw.model.set_config(config);
                        }
                    }
                    if cached.gen != sw.gen || cached.path_bf != sh.path_bf {
                        *cached = HopRules {
                            gen: sw.gen,
                            path_bf: sh.path_bf,
                            rules: sw.model.monitor_rules(&f.id, sh.path_bf),
                        };
                    }
                    let rules = cached.rules;
                    let n = m.count_ones();
                    if let Some(d) = sw.model.monitor_n(&f.id, f.h, &mut sh, last, rules, n) {
                        if self.reported.insert((s, d.flow)) {
                            self.reports.push(HhReport {
                                switch: s,
                                flow: d.flow,
                                path_bf: d.path_bf,
                            });
                            self.sent += 1;
                        }
                    }
                    out[used] = (m, sh);
                    used += 1;
                }
                parts[i] = out[0];
                if used == 2 {
                    parts.insert(i + 1, out[1]);
                    i += 1;
                }
                i += 1;
            }
        }
        if w.park {
            let shim = parts.first().map_or(Shim::default(), |p| p.1);
            self.parked.push(shim);
        }
    }
}
