//! Each link's blame over time: since when it has been blamed, and its all-clear.

use crate::topo::LinkIx;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A link no longer blamed: blamed from `since` to `last`, all-clear in `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cleared {
    pub link: LinkIx,
    pub since: u64,
    pub last: u64,
    pub at: u64,
}

/// The links blamed now and the epoch each has been blamed since, without a break.
#[derive(Clone, Debug, Default)]
pub struct LinkTimeline {
    blamed: BTreeMap<LinkIx, u64>,
}

impl LinkTimeline {
    /// Records the links blamed in `epoch`; returns those blamed before and not now.
    pub fn update(&mut self, epoch: u64, blamed: &[LinkIx]) -> Vec<Cleared> {
        let mut cleared = Vec::new();
        self.blamed.retain(|&link, &mut since| {
            let keep = blamed.contains(&link);
            if !keep {
                cleared.push(Cleared {
                    link,
                    since,
                    last: epoch.saturating_sub(1),
                    at: epoch,
                });
            }
            keep
        });
        for &l in blamed {
            self.blamed.entry(l).or_insert(epoch);
        }
        cleared
    }

    /// Since when `link` has been blamed, if it is.
    pub fn since(&self, link: LinkIx) -> Option<u64> {
        self.blamed.get(&link).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_blamed_since_its_first_epoch_and_cleared_when_it_drops_out() {
        let mut t = LinkTimeline::default();
        assert!(t.update(3, &[7]).is_empty());
        assert!(t.update(4, &[7, 9]).is_empty());
        assert_eq!((t.since(7), t.since(9)), (Some(3), Some(4)));
        let c = t.update(5, &[9]);
        assert_eq!(
            c,
            vec![Cleared {
                link: 7,
                since: 3,
                last: 4,
                at: 5
            }]
        );
        assert_eq!(t.since(7), None);
        // Blamed again: a new episode.
        t.update(8, &[7, 9]);
        assert_eq!(t.since(7), Some(8));
        assert_eq!(t.since(9), Some(4));
    }
}
