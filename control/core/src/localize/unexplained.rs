//! Lossy segments that the stages left without a home.
//!
//! CD can end a stage with a lossy segment none of whose links is blamed. Its mapped successes
//! are scaled by each segment's ceiling ([`super::canary`]), so two segments that share one
//! faulty link can look unequally lossy; CD may then zero a link that only one of them crosses
//! and leave the other segment's loss unexplained. Seen on the testbed (issue 32): a BMv2 at
//! edge2_0 dropped frames from agg2_0, segments core0→agg2_0→edge2_0 and core1→agg2_0→edge2_0
//! lost 4 of 53 and 4 of 68, core0→agg2_0 was pinned by 240 packets, and CD blamed only
//! core1→agg2_0: the first segment's loss had no home, and the one link both segments share,
//! agg2_0→edge2_0, was never blamed.
//!
//! Our decision (the paper does not do this): every lossy segment left unexplained gets the
//! link of it that no loss-free segment pins and that lies on the most unexplained lossy
//! segments (then the most lossy ones, then the lowest index). A segment whose links are all
//! pinned keeps its loss unexplained, as before. The pruning that follows
//! ([`super::redundant::prune`]) drops a blame the added one explains.

use super::canary::SubProblem;

/// Links to add to `blamed` (local indices, in the order found), so that every lossy segment
/// with an unpinned link has a blamed link.
pub fn homes(sub: &SubProblem, blamed: &[u32]) -> Vec<u32> {
    let mut pinned = vec![false; sub.n_links];
    let mut on_lossy = vec![0u32; sub.n_links];
    for s in &sub.segments {
        for &l in &s.links {
            if s.success >= 1.0 {
                pinned[l as usize] = true;
            } else {
                on_lossy[l as usize] += 1;
            }
        }
    }
    let mut is_blamed = vec![false; sub.n_links];
    for &l in blamed {
        is_blamed[l as usize] = true;
    }
    let mut added = Vec::new();
    loop {
        let unexplained: Vec<&[u32]> = sub
            .segments
            .iter()
            .filter(|s| s.success < 1.0)
            .map(|s| &s.links[..])
            .filter(|links| !links.iter().any(|&l| is_blamed[l as usize]))
            .filter(|links| links.iter().any(|&l| !pinned[l as usize]))
            .collect();
        let mut on_unexplained = vec![0u32; sub.n_links];
        for links in &unexplained {
            for &l in links.iter().filter(|&&l| !pinned[l as usize]) {
                on_unexplained[l as usize] += 1;
            }
        }
        let best = (0..sub.n_links as u32)
            .filter(|&l| on_unexplained[l as usize] > 0)
            .max_by_key(|&l| {
                (
                    on_unexplained[l as usize],
                    on_lossy[l as usize],
                    std::cmp::Reverse(l),
                )
            });
        let Some(link) = best else {
            return added;
        };
        is_blamed[link as usize] = true;
        added.push(link);
    }
}

#[cfg(test)]
mod tests {
    use super::super::canary::SegmentObs;
    use super::*;

    fn seg(links: Vec<u32>, sent: f64, success: f64) -> SegmentObs {
        SegmentObs {
            links,
            success,
            sent,
            flows: Vec::new(),
        }
    }

    /// Links: 0 core0→agg2_0, 1 agg2_0→edge2_0, 2 core1→agg2_0, 3 agg2_0→edge2_1. With 2
    /// blamed, segment {0, 1} has no home; 0 is pinned, so 1 is its home.
    #[test]
    fn an_unexplained_loss_goes_to_its_unpinned_link() {
        let sub = SubProblem {
            n_links: 4,
            segments: vec![
                seg(vec![0, 1], 53.0, 49.0 / 53.0),
                seg(vec![0, 3], 240.0, 1.0),
                seg(vec![2, 1], 68.0, 64.0 / 68.0),
            ],
        };
        assert_eq!(homes(&sub, &[2]), vec![1]);
        assert_eq!(homes(&sub, &[1]), Vec::<u32>::new(), "both explained");
    }

    /// A link on two unexplained segments is preferred to one on a single segment; a segment
    /// whose links are all pinned stays unexplained.
    #[test]
    fn the_link_on_most_unexplained_segments_is_chosen_and_pinned_ones_never() {
        let sub = SubProblem {
            n_links: 5,
            segments: vec![
                seg(vec![0, 1], 100.0, 0.9),
                seg(vec![2, 1], 100.0, 0.9),
                seg(vec![3, 4], 100.0, 0.9),
                seg(vec![3, 0], 500.0, 1.0),
                seg(vec![4, 2], 500.0, 1.0),
            ],
        };
        assert_eq!(homes(&sub, &[]), vec![1]);
    }
}
