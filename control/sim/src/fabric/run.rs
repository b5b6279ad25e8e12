//! Running time: the hosts' side produces batches of jobs (flows opened, packets walked) and
//! the switches' side carries them out, behind it, on a second thread when there is more than a
//! batch of work and rayon's thread count (`RAYON_NUM_THREADS`) is at least 2.
//! Neither side reads what the other writes while they run, and the switches take the jobs in
//! the order the hosts made them, so the outcome is the same on any number of threads.

use super::batch::Batch;
use super::hosts::{Fixed, Flow, Hosts, Packet};
use super::switches::{FlowView, Switches};
use super::{Probe, SimFabric};
use canary_core::sketch::FlowHashes;
use canary_core::FlowId;
use std::sync::mpsc;

/// Walks per batch: enough that handing a batch over costs little next to carrying it out,
/// few enough that the two sides overlap on most of a run.
const BATCH: usize = 8192;

impl SimFabric {
    pub(super) fn fixed(&self) -> Fixed<'_> {
        Fixed {
            topo: &self.topo,
            ends: &self.ends,
            max_hops: self.max_hops,
            cfg: &self.cfg,
        }
    }

    /// The hosts' side takes the switches' forwarding and state as they are now; true when a
    /// switch's forwarding changed since the last time.
    pub(super) fn sync_hosts(&mut self) -> bool {
        let mut changed = false;
        for (s, sw) in self.net.switches.iter().enumerate() {
            let r = sw.model.router();
            changed |= !r.same_as(&self.hosts.routers[s]);
            self.hosts.routers[s] = r;
            self.hosts.down[s] = sw.down;
        }
        changed
    }

    /// The whole fabric's counts: the hosts' and the switches' digests.
    fn sync_stats(&mut self) {
        self.stats = self.hosts.stats;
        self.stats.reports = self.net.sent;
    }

    /// The path the forwarding tables give `id` from host `host`'s switch, and its links;
    /// `None` if a switch has no route.
    #[cfg(test)]
    pub(super) fn route(
        &self,
        host: u32,
        id: &FlowId,
        h: FlowHashes,
    ) -> Option<(super::hosts::Path, super::hosts::PathLinks)> {
        self.hosts.route(self.fixed(), host, id, h)
    }

    /// Runs the fabric until time `until` (ns).
    pub(super) fn advance_to(&mut self, until: u64) {
        // A driven fabric's tables are written from outside while flows are live (a controller
        // connecting, or rewriting a mask): they take the paths the new tables give, as each
        // packet on a real switch would.
        if self.sync_hosts() && self.net.driven {
            self.reroute();
        }
        self.net.start_run();
        self.hosts.parks = 0;
        let fx = Fixed {
            topo: &self.topo,
            ends: &self.ends,
            max_hops: self.max_hops,
            cfg: &self.cfg,
        };
        let (hosts, net) = (&mut self.hosts, &mut self.net);
        // The first batch starts with the packets the last run left on their way.
        let mut first = Batch::default();
        hosts.run(fx, until, true, &mut first, BATCH);
        if first.walks() < BATCH || rayon::current_num_threads() < 2 {
            // Little to do, or one thread asked for: one side after the other.
            let mut b = first;
            while !b.is_empty() {
                net.run(&mut b);
                b.clear();
                hosts.run(fx, until, false, &mut b, BATCH);
            }
        } else {
            net.runs_on_two_threads += 1;
            in_two_threads(first, hosts, net, |hosts, b| {
                hosts.run(fx, until, false, b, BATCH)
            });
        }
        self.now = until;
        self.sync_stats();
    }

    /// One packet of `flow` from host `host`, walked through the fabric at once (the same walk
    /// every simulated packet takes): the switches it crossed, whether it arrived, and the HH
    /// reports it caused (as the fabric hands them to the controller). For tests that hold the
    /// simulator to real switches packet by packet; links keep their loss.
    pub fn probe(&mut self, host: u32, flow: FlowId) -> Probe {
        self.sync_hosts();
        let h = FlowHashes::of(&flow);
        let Some((path, links)) = self.hosts.route(self.fixed(), host, &flow, h) else {
            return Probe::default();
        };
        let f = Flow {
            id: flow,
            host,
            slot: 0,
            path: path.clone(),
            links,
            h,
            remaining: 0,
            burst: 1,
            window: 1,
            burst_left: 0,
            burst_period_ns: 0,
            line_gap_ns: 0,
            burst_start: self.now,
            in_flight: 1,
            live: true,
        };
        // Always a new slot, as a probe's flow is not one a host keeps.
        let fi = self.hosts.flows.len() as u32;
        self.hosts.flows.push(f);
        let mut batch = Batch::default();
        batch.open(fi, FlowView::new(flow, h, &path));
        let before = (self.net.reports.len(), self.hosts.stats.delivered);
        let mut p = Packet {
            flow: fi,
            hop: 0,
            t: self.now,
            parked: 0,
        };
        let fx = Fixed {
            topo: &self.topo,
            ends: &self.ends,
            max_hops: self.max_hops,
            cfg: &self.cfg,
        };
        self.hosts.walk(fx, &mut p, u64::MAX, None, &mut batch);
        self.net.run(&mut batch);
        self.sync_stats();
        Probe {
            path: path.to_vec(),
            delivered: self.hosts.stats.delivered > before.1,
            reports: self.net.reports[before.0..].to_vec(),
        }
    }
}

/// The switches' side on a thread of its own, the hosts' side filling the next batches
/// meanwhile (at most two ahead). A plain thread and blocking channels rather than the rayon
/// pool: a rayon thread waiting for its other half takes on other work, and callers run the
/// simulator from inside a Tokio runtime on rayon threads (one seed per thread), where taking
/// on another seed's runtime panics.
fn in_two_threads(
    first: Batch,
    hosts: &mut Hosts,
    net: &mut Switches,
    mut fill: impl FnMut(&mut Hosts, &mut Batch),
) {
    std::thread::scope(|scope| {
        let (to_net, batches) = mpsc::sync_channel::<Batch>(2);
        let (give_back, spares) = mpsc::channel::<Batch>();
        scope.spawn(move || {
            for mut b in batches {
                net.run(&mut b);
                b.clear();
                // The hosts' side may have finished and gone: the batch is not needed then.
                let _ = give_back.send(b);
            }
        });
        let mut b = first;
        while !b.is_empty() {
            to_net
                .send(b)
                .expect("the switches' side takes batches until told to stop");
            b = spares.try_recv().unwrap_or_default();
            fill(hosts, &mut b);
        }
    });
}
