//! Evidence as fresh as the loss it would explain.
//!
//! When segments are watched at different times, a link's evidence is of different ages. A
//! segment that lost nothing three rounds ago says nothing about a loss that began since, yet
//! it would pin its links at "healthy" and push the loss onto the segment's other link: that is
//! how a mass onset got hundreds of healthy links blamed (`docs/bench.md`). Two rules, applied
//! to the view before localization:
//!
//! - **Stale clearance is set aside.** A segment whose latest watch showed no loss (or only
//!   background loss) does not clear its links if it was watched before a loss that one of its
//!   links now shows began (the first epoch of the lossy segment's current run of lossy watches).
//! - **A loss waits for its links' evidence.** A lossy segment is held back while one of its
//!   links has other segments but none of them watched since the loss began; the adaptive plan
//!   watches some of them in the next epoch ([`super::adaptive`]). After `max_wait` epochs it is
//!   localized with what there is.

use super::adaptive::LinkSegments;
use super::LastShown;
use crate::topo::{LinkIx, SegmentId};

const NEVER: u64 = u64::MAX;

/// Per segment, the first epoch of its current run of lossy watches.
#[derive(Clone, Debug, Default)]
pub struct LossOnsets {
    since: Vec<u64>,
}

impl LossOnsets {
    pub fn new(segments: usize) -> Self {
        LossOnsets {
            since: vec![NEVER; segments],
        }
    }

    /// The epoch's watched segments as the view shows them now: a lossy one keeps or starts its
    /// run, any other ends it.
    pub fn update(&mut self, epoch: u64, watched: &[SegmentId], shown: &LastShown) {
        for &s in watched {
            let Some(slot) = self.since.get_mut(s as usize) else {
                continue;
            };
            let lossy = shown.shown(s).is_some_and(|o| o.success < 1.0);
            match (lossy, *slot == NEVER) {
                (true, true) => *slot = epoch,
                (false, _) => *slot = NEVER,
                (true, false) => {}
            }
        }
    }

    pub fn since(&self, segment: SegmentId) -> Option<u64> {
        self.since
            .get(segment as usize)
            .copied()
            .filter(|&e| e != NEVER)
    }
}

/// What the freshness rules take out of the view this epoch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Freshness {
    /// Per index of the view: left out of localization.
    pub held_out: Vec<bool>,
    /// Lossy segments held back, with the links that lack evidence since their loss began and
    /// the epochs they have waited.
    pub waiting: Vec<(SegmentId, Vec<LinkIx>, u64)>,
    /// Loss-free segments set aside as older than a loss on one of their links.
    pub stale: usize,
}

/// Applies both rules to `shown`'s current view at `now` (see the module's documentation).
pub fn freshness(
    shown: &LastShown,
    onsets: &LossOnsets,
    through: &LinkSegments,
    now: u64,
    max_wait: u64,
) -> Freshness {
    let view = shown.view();
    // Per link, how many segments through it show a loss, and the latest onset among them.
    let mut lossy_on = vec![0u32; through.links()];
    let mut onset_on = vec![NEVER; through.links()];
    for o in view.segments.iter().filter(|o| o.success < 1.0) {
        let Some(since) = onsets.since(o.segment) else {
            continue;
        };
        for &l in &o.links {
            if let (Some(n), Some(x)) = (lossy_on.get_mut(l as usize), onset_on.get_mut(l as usize))
            {
                *n += 1;
                *x = if *x == NEVER { since } else { (*x).max(since) };
            }
        }
    }
    // Only a suspect (two lossy segments or more) loses its older clearance: a link with one
    // lossy segment keeps it, or every loss would strip its neighbours of theirs.
    for (n, x) in lossy_on.iter().zip(onset_on.iter_mut()) {
        if *n < 2 {
            *x = NEVER;
        }
    }
    let mut out = Freshness {
        held_out: vec![false; view.segments.len()],
        ..Default::default()
    };
    for (i, o) in view.segments.iter().enumerate() {
        let last = shown.last_seen(o.segment).unwrap_or(0);
        if o.success < 1.0 {
            let Some(since) = onsets.since(o.segment) else {
                continue;
            };
            if now.saturating_sub(since) >= max_wait {
                continue;
            }
            let unwatched: Vec<LinkIx> = o
                .links
                .iter()
                .copied()
                .filter(|&l| !settled(shown, through.through(l), o.segment, since))
                .collect();
            if !unwatched.is_empty() {
                out.held_out[i] = true;
                out.waiting
                    .push((o.segment, unwatched, now.saturating_sub(since)));
            }
        } else if o.lost == 0 || o.background {
            let stale = o.links.iter().any(|&l| {
                onset_on
                    .get(l as usize)
                    .is_some_and(|&on| on != NEVER && last < on)
            });
            if stale {
                out.held_out[i] = true;
                out.stale += 1;
            }
        }
    }
    out
}

/// `link`'s other segments settle it since `since`: one watched since then lost nothing (the
/// link is clear), or two watched since then lost packets (the link is a suspect in its own
/// right), or it has no other segment to wait for.
fn settled(shown: &LastShown, segs: &[SegmentId], except: SegmentId, since: u64) -> bool {
    let mut others = segs.iter().filter(|&&s| s != except).peekable();
    if others.peek().is_none() {
        return true;
    }
    let mut lossy = 0;
    for &s in others {
        if shown.last_seen(s).is_none_or(|e| e < since) {
            continue;
        }
        match shown.shown(s) {
            Some(o) if o.success < 1.0 => lossy += 1,
            Some(o) if o.lost == 0 || o.background => return true,
            _ => {}
        }
        if lossy >= 2 {
            return true;
        }
    }
    false
}
