//! The telemetry 007 collects (paper §3–§4, §6 setup): host-to-host TCP-like flows whose
//! retransmissions trigger a traceroute of the flow's ECMP path, under 007's rate limits.
//!
//! Per epoch every host opens `conns_per_host` connections to random hosts under other ToRs
//! (paper: 2 per second × 30 s = 60). Each flow hashes onto one ECMP path (`Routing::path`) and
//! sends `packets` data packets; a packet is dropped at the first directed link whose Bernoulli
//! trial fires. Every drop is retransmitted and counted; with `lossy_retransmissions` the
//! retransmission can be lost again (up to `max_tries` attempts per packet).
//!
//! Path discovery for each flow with `r ≥ 1`, at most once per flow and epoch, in a random order
//! standing in for the time of the first retransmission:
//! * host cap `C_t`: a host sends at most `ct_per_s × epoch_s` traceroutes per epoch;
//! * switch cap `T_max`: a switch answers at most `tmax_per_s × epoch_s` ICMP messages per
//!   epoch, one per traceroute crossing it. A traceroute that meets an exhausted switch loses a
//!   hop; we then report no path (`path: None`) rather than guess the gap.
//!
//! Both caps are per-epoch budgets, looser than the paper's per-second rates (bursts inside an
//! epoch are allowed); [`theorem1_ct_bound`] gives the C_t that keeps every switch below T_max.
//! With `truncated_traceroutes`, each TTL probe itself crosses the lossy links (one probe per
//! hop, echo not modelled): the path ends before the first link whose probe is lost, the partial
//! traceroute 007 still uses. Default: the traceroute sees the full path.
//!
//! Not modelled: congestion, SLB/VIP resolution, host–ToR links (the topology has none), TCP
//! timing, reverse-path ACK loss.

use canary_core::localize::FlowReport007;
use canary_core::topo::{LinkIx, Routing, SwitchIx, Topology};
use rand::seq::SliceRandom;
use rand::Rng;

/// Traffic and path-discovery parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Tcp007Params {
    pub conns_per_host: u32,
    /// Packets per flow, drawn uniformly from `min_packets..=max_packets` (paper: up to 100).
    pub min_packets: u32,
    pub max_packets: u32,
    pub epoch_s: f64,
    /// Traceroutes per second per host (paper: C_t = 10).
    pub ct_per_s: f64,
    /// ICMP replies per second per switch (paper: T_max = 100).
    pub tmax_per_s: f64,
    pub lossy_retransmissions: bool,
    pub max_tries: u32,
    pub truncated_traceroutes: bool,
}

impl Default for Tcp007Params {
    fn default() -> Self {
        Self {
            conns_per_host: 60,
            min_packets: 100,
            max_packets: 100,
            epoch_s: 30.0,
            ct_per_s: 10.0,
            tmax_per_s: 100.0,
            lossy_retransmissions: false,
            max_tries: 16,
            truncated_traceroutes: false,
        }
    }
}

/// One epoch of 007 telemetry plus the simulator's ground truth.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Epoch007 {
    /// One report per flow (good flows included, with `path: None`).
    pub reports: Vec<FlowReport007>,
    /// Ground truth per flow: the link that dropped most of its packets (`None` if no drop).
    pub max_drop_link: Vec<Option<LinkIx>>,
    /// Traceroutes sent, and bad flows left untraced by the host cap or the switch cap.
    pub traced: u32,
    pub denied_host: u32,
    pub denied_switch: u32,
    /// Highest ICMP count any switch sent in the epoch.
    pub max_icmp: u32,
}

/// Theorem 1: the largest per-host traceroute rate C_t that keeps every switch under `t_max`
/// ICMP/s (`n0` ToRs and `n1` tier-1 switches per pod, `n2` tier-2 switches, `h` hosts per ToR).
pub fn theorem1_ct_bound(n0: f64, n1: f64, n2: f64, npod: f64, h: f64, t_max: f64) -> f64 {
    t_max / (n0 * h) * n1.min(n2 * (n0 * npod - 1.0) / (n0 * (npod - 1.0)))
}

/// Directed links along a switch path.
fn links_of(topo: &Topology, path: &[SwitchIx]) -> Vec<LinkIx> {
    path.windows(2)
        .map(|h| topo.link(h[0], h[1]).expect("routes follow links"))
        .collect()
}

/// Simulates one epoch. `loss[l]` is the drop probability of directed link `l`.
pub fn simulate_epoch(
    topo: &Topology,
    routing: &Routing,
    loss: &[f64],
    params: &Tcp007Params,
    rng: &mut impl Rng,
) -> Epoch007 {
    let mut out = Epoch007::default();
    let mut paths = Vec::new();
    let mut src_host = Vec::new();
    for (h, host) in topo.hosts.iter().enumerate() {
        for _ in 0..params.conns_per_host {
            let dst = loop {
                let d = &topo.hosts[rng.random_range(0..topo.hosts.len())];
                if d.switch != host.switch {
                    break d;
                }
            };
            let path = links_of(
                topo,
                &routing.path(topo, host.switch, dst.switch, rng.random()),
            );
            let packets = rng.random_range(params.min_packets..=params.max_packets);
            let mut drops = vec![0u32; path.len()];
            for _ in 0..packets {
                for _ in 0..params.max_tries {
                    match path.iter().position(|&l| rng.random_bool(loss[l as usize])) {
                        Some(i) => drops[i] += 1,
                        None => break,
                    }
                    if !params.lossy_retransmissions {
                        break;
                    }
                }
            }
            let r: u32 = drops.iter().sum();
            let culprit = (r > 0).then(|| {
                let i = (0..drops.len()).max_by_key(|&i| (drops[i], usize::MAX - i));
                path[i.expect("non-empty path")]
            });
            out.max_drop_link.push(culprit);
            out.reports.push(FlowReport007 {
                path: None,
                packets,
                retransmissions: r,
            });
            paths.push(path);
            src_host.push(h);
        }
    }
    // Path discovery in a random order, under the per-epoch budgets.
    let host_budget = (params.ct_per_s * params.epoch_s).floor() as u32;
    let switch_budget = (params.tmax_per_s * params.epoch_s).floor() as u32;
    let mut host_used = vec![0u32; topo.hosts.len()];
    let mut icmp = vec![0u32; topo.switches.len()];
    let mut order: Vec<usize> = (0..out.reports.len())
        .filter(|&i| out.reports[i].retransmissions > 0)
        .collect();
    order.shuffle(rng);
    for i in order {
        if host_used[src_host[i]] >= host_budget {
            out.denied_host += 1;
            continue;
        }
        host_used[src_host[i]] += 1;
        out.traced += 1;
        let mut found = paths[i].clone();
        if params.truncated_traceroutes {
            // The TTL probe toward hop j crosses links 0..=j; stop at the first lost one.
            let cut = (0..found.len()).find(|&j| {
                found[..=j]
                    .iter()
                    .any(|&l| rng.random_bool(loss[l as usize]))
            });
            found.truncate(cut.unwrap_or(found.len()));
        }
        // Every switch the probes reach answers once (the destination ToR included).
        let answering: Vec<SwitchIx> = found.iter().map(|&l| topo.links[l as usize].to).collect();
        if answering.iter().any(|&s| icmp[s as usize] >= switch_budget) {
            out.denied_switch += 1;
            continue;
        }
        for s in answering {
            icmp[s as usize] += 1;
        }
        out.reports[i].path = Some(found);
    }
    out.max_icmp = icmp.into_iter().max().unwrap_or(0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::localize::{Localizer, Vote007};
    use canary_core::topo::{fattree::fattree, MonitorPlacement};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn theorem1_bound_for_a_k8_fat_tree() {
        // n0 = n1 = 4 per pod, n2 = 16 cores, 8 pods, 4 hosts per ToR: 100/16 · min(4, 17.7).
        assert!((theorem1_ct_bound(4.0, 4.0, 16.0, 8.0, 4.0, 100.0) - 25.0).abs() < 1e-9);
    }

    #[test]
    fn healthy_fabric_has_no_retransmissions() {
        let t = fattree(4, MonitorPlacement::Bottom).unwrap();
        let r = Routing::new(&t);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let e = simulate_epoch(
            &t,
            &r,
            &vec![0.0; t.links.len()],
            &Tcp007Params::default(),
            &mut rng,
        );
        assert_eq!(e.reports.len(), 16 * 60);
        assert!(e
            .reports
            .iter()
            .all(|f| f.retransmissions == 0 && f.path.is_none()));
        assert_eq!(e.traced, 0);
    }

    #[test]
    fn one_lossy_link_is_found_and_blamed_per_flow() {
        let t = fattree(4, MonitorPlacement::Bottom).unwrap();
        let r = Routing::new(&t);
        let bad = t.link_by_names("agg1_0", "core1").unwrap();
        let mut loss = vec![0.0; t.links.len()];
        loss[bad as usize] = 0.01;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let e = simulate_epoch(&t, &r, &loss, &Tcp007Params::default(), &mut rng);
        assert!(e.traced > 0 && e.denied_host == 0 && e.denied_switch == 0);
        for (f, truth) in e.reports.iter().zip(&e.max_drop_link) {
            assert_eq!(f.retransmissions > 0, truth.is_some());
            if let Some(p) = &f.path {
                assert!(p.contains(&bad) && *truth == Some(bad));
            }
        }
        let v = Vote007::default().localize(&t, &e.reports);
        assert_eq!(v.stages[0], vec![bad]);
    }

    #[test]
    fn switch_budget_denies_traceroutes() {
        let t = fattree(4, MonitorPlacement::Bottom).unwrap();
        let r = Routing::new(&t);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let p = Tcp007Params {
            tmax_per_s: 0.1, // 3 ICMP per switch per epoch
            ..Tcp007Params::default()
        };
        let e = simulate_epoch(&t, &r, &vec![0.05; t.links.len()], &p, &mut rng);
        assert!(e.denied_switch > 0);
        assert!(e.max_icmp <= 3);
    }
}
