//! NetBouncer's bounce probes as the Canary paper's Fig. 8 comparison runs them (100 packets per path): for
//! every (bottom switch, top-layer switch) pair, `n` probes along bottom→…→top→…→same bottom
//! ([`bounce_plan`]), each walking its directed links in order and lost at the first link whose
//! independent Bernoulli drop fires.
//!
//! Not modelled: hosts as probers (the switches probe), timing, RTTs, IP-in-IP details.

use canary_core::localize::netbouncer::{bounce_plan, ProbePath};
use canary_core::topo::{LinkIx, Topology};
use rand::Rng;

/// Sends `n` probes along `links`; returns how many came back.
pub fn walk(links: &[LinkIx], loss: &[f64], n: u32, rng: &mut impl Rng) -> u32 {
    (0..n)
        .filter(|_| {
            links
                .iter()
                .all(|&l| rng.random::<f64>() >= loss[l as usize])
        })
        .count() as u32
}

/// Probes every bounce path of the plan `probes_per_path` times. `loss[l]` is the drop
/// probability of directed link `l`.
///
/// # Panics
/// If `loss` is shorter than `topo.links`.
pub fn bounce_probes(
    topo: &Topology,
    loss: &[f64],
    probes_per_path: u32,
    rng: &mut impl Rng,
) -> Vec<ProbePath> {
    assert!(loss.len() >= topo.links.len(), "one loss rate per link");
    bounce_plan(topo)
        .into_iter()
        .map(|links| {
            let received = walk(&links, loss, probes_per_path, rng);
            ProbePath {
                links,
                sent: probes_per_path,
                received,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::topo::{fattree::fattree, MonitorPlacement};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn k4_plan_has_edge_times_core_paths_of_four_links() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let loss = vec![0.0; t.links.len()];
        let probes = bounce_probes(&t, &loss, 100, &mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!(probes.len(), 8 * 4);
        for p in &probes {
            assert_eq!(p.links.len(), 4);
            assert_eq!((p.sent, p.received), (100, 100));
            // Bounce: down links are the up links reversed.
            assert_eq!(p.links[3], t.reverse(p.links[0]));
            assert_eq!(p.links[2], t.reverse(p.links[1]));
            assert_eq!(
                t.links[p.links[0] as usize].from,
                t.links[p.links[3] as usize].to
            );
        }
    }

    #[test]
    fn drops_follow_the_link_rate() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let mut loss = vec![0.0; t.links.len()];
        let l = t.link_by_names("agg0_0", "core0").unwrap();
        loss[l as usize] = 0.5;
        let probes = bounce_probes(&t, &loss, 2000, &mut ChaCha8Rng::seed_from_u64(2));
        for p in &probes {
            let rate = 1.0 - f64::from(p.received) / f64::from(p.sent);
            if p.links.contains(&l) {
                assert!((rate - 0.5).abs() < 0.05, "{rate}");
            } else {
                assert_eq!(rate, 0.0);
            }
        }
    }
}
