//! Blames that hold: a link once blamed stays blamed until a test clears it, or the blame moves.
//!
//! The localizer answers afresh every epoch, and on thin or tied evidence its answer can drop a
//! link for an epoch and take it back the next. An operator replaces a cable on a blame, so a
//! blame ends for a reason only:
//! - the link's pooled all-clear passed ([`super::LinkClearing`]);
//! - no segment through it is declared lossy any more (each one's all-clear passed);
//! - the localizer now puts its segments' loss on another link: a correction, reported with the
//!   link it moved to.
//!
//! Otherwise the localizer's silence is no evidence of health, and the blame is held with its
//! last estimate.

use crate::localize::BlamedLink;
use crate::topo::{LinkIx, SegmentId};

/// Why a link blamed before is not blamed now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Its all-clear (its own, or every lossy segment's through it) passed.
    Cleared,
    /// Its segments' loss is now on `to`, blamed this epoch on a lossy segment they share.
    Corrected { to: LinkIx },
}

/// What became of the links blamed before and not by the localizer now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Held {
    /// Kept blamed, with their last estimates (already added to the verdict).
    pub held: Vec<LinkIx>,
    pub released: Vec<(LinkIx, Release)>,
}

/// Holds every blame of `before` that `now` dropped without a reason. `cleared`: links whose
/// pooled all-clear passed this epoch; `lossy_through(l)`: the segments through `l` declared
/// lossy now; `links_of(s)`: the links segment `s` crosses.
pub fn hold<'a>(
    before: &[BlamedLink],
    now: &mut Vec<BlamedLink>,
    cleared: &[LinkIx],
    lossy_through: impl Fn(LinkIx) -> Vec<SegmentId>,
    links_of: impl Fn(SegmentId) -> &'a [LinkIx],
) -> Held {
    let mut out = Held::default();
    let blamed_now: Vec<LinkIx> = now.iter().map(|b| b.link).collect();
    for b in before.iter().filter(|b| !blamed_now.contains(&b.link)) {
        if cleared.contains(&b.link) {
            out.released.push((b.link, Release::Cleared));
            continue;
        }
        let lossy = lossy_through(b.link);
        if lossy.is_empty() {
            out.released.push((b.link, Release::Cleared));
            continue;
        }
        let moved_to = lossy.iter().find_map(|&s| {
            links_of(s)
                .iter()
                .copied()
                .find(|&m| m != b.link && blamed_now.contains(&m))
        });
        match moved_to {
            Some(to) => out.released.push((b.link, Release::Corrected { to })),
            None => {
                out.held.push(b.link);
                now.push(b.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(link: LinkIx) -> BlamedLink {
        BlamedLink {
            link,
            loss: 0.01,
            stage: 2,
        }
    }

    /// Segments 0 = links {1, 2}, 1 = {1, 3}, 2 = {4, 5}.
    fn links_of(s: SegmentId) -> &'static [LinkIx] {
        match s {
            0 => &[1, 2],
            1 => &[1, 3],
            _ => &[4, 5],
        }
    }

    #[test]
    fn a_dropped_blame_holds_until_cleared_or_moved() {
        let before = vec![b(1), b(4)];
        // Link 1's segments are still lossy and nothing else explains them: held, estimate kept.
        let mut now = vec![];
        let lossy = |l: LinkIx| if l == 1 { vec![0, 1] } else { vec![2] };
        let h = hold(&before, &mut now, &[4], lossy, links_of);
        assert_eq!(h.held, vec![1]);
        assert_eq!(now, vec![b(1)]);
        // Link 4's pooled all-clear passed: released as cleared.
        assert_eq!(h.released, vec![(4, Release::Cleared)]);

        // The localizer now blames link 3, on link 1's lossy segment 1: a correction.
        let mut now = vec![b(3)];
        let h = hold(&before[..1], &mut now, &[], lossy, links_of);
        assert_eq!(h.released, vec![(1, Release::Corrected { to: 3 })]);
        assert_eq!(now, vec![b(3)]);

        // No segment through link 1 is lossy any more: cleared.
        let mut now = vec![];
        let h = hold(&before[..1], &mut now, &[], |_| vec![], links_of);
        assert_eq!(h.released, vec![(1, Release::Cleared)]);
        assert!(now.is_empty());
    }
}
