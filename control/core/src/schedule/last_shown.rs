//! What each segment showed the last time it was watched: the evidence localization works from
//! when segments take turns.

use crate::detect::{
    observations, observed, Observations, ObservedSegment, SegmentCount, WindowCount,
};
use crate::topo::{SegmentId, Segments};
use std::collections::BTreeMap;

/// What each segment showed the last time it was watched, and when.
///
/// Counts of consecutive epochs add up (one watch of `dwell` epochs); a segment seen again after a
/// gap starts afresh, so old evidence is replaced, never mixed with new.
#[derive(Clone, Debug, Default)]
pub struct LastShown {
    /// Per segment: its latest watch.
    by_segment: Vec<Option<Watch>>,
    /// Consecutive epochs that make one watch at most (a segment watched longer starts a new
    /// one): unlimited by default.
    max_window: u64,
    /// The observations of every segment's latest watch, kept from epoch to epoch: an epoch
    /// watches a few segments of millions, so only theirs are made again.
    view: Observations,
    /// Each segment's index in `view`, or `NOT_IN_VIEW`.
    in_view: Vec<u32>,
    view_min_lossy: Option<u32>,
}

const NOT_IN_VIEW: u32 = u32::MAX;

/// A segment's latest watch: the consecutive epochs it was counted in, and their counts.
#[derive(Clone, Copy, Debug)]
struct Watch {
    start: u64,
    last: u64,
    counts: WindowCount,
    /// The full window just before `start`, when the watch went on past `max_window`: shown
    /// with `counts`, so that a segment watched on and on always shows at least one window.
    earlier: WindowCount,
}

impl Watch {
    fn shown(&self) -> WindowCount {
        let (a, b) = (self.counts, self.earlier);
        WindowCount {
            sent: a.sent + b.sent,
            lost: a.lost + b.lost,
            epochs: a.epochs + b.epochs,
            lossy_epochs: a.lossy_epochs + b.lossy_epochs,
        }
    }
}

impl LastShown {
    /// A segment watched on and on (the adaptive plan's focus) shows its last full window of
    /// `epochs` consecutive epochs and the current one, not everything since it was first lossy.
    pub fn with_window(mut self, epochs: u64) -> Self {
        self.max_window = epochs.max(1);
        self
    }

    /// The last epoch `segment` was watched in.
    pub fn last_seen(&self, segment: SegmentId) -> Option<u64> {
        self.by_segment
            .get(segment as usize)
            .copied()
            .flatten()
            .map(|w| w.last)
    }

    /// The observations of the last [`LastShown::observe`].
    pub fn view(&self) -> &Observations {
        &self.view
    }

    /// What `segment`'s latest watch shows in the view of the last [`LastShown::observe`].
    pub fn shown(&self, segment: SegmentId) -> Option<&ObservedSegment> {
        let at = *self.in_view.get(segment as usize)?;
        self.view.segments.get(at as usize)
    }

    /// Runs `f` on the view without the observations `held_out` marks (by index in the view),
    /// then puts them back where they were.
    pub fn with_held_out<R>(&mut self, held_out: &[bool], f: impl FnOnce(&Observations) -> R) -> R {
        if !held_out.iter().any(|&h| h) {
            return f(&self.view);
        }
        let all = std::mem::take(&mut self.view.segments);
        let mut kept = Vec::with_capacity(all.len());
        let mut out = Vec::new();
        for (i, o) in all.into_iter().enumerate() {
            if held_out.get(i).copied().unwrap_or(false) {
                out.push((i, o));
            } else {
                kept.push(o);
            }
        }
        let view = Observations { segments: kept };
        let r = f(&view);
        // Held-out ones back at their indices, the kept ones in order around them (one merge:
        // inserting one by one would move millions of observations per held-out one).
        let mut kept = view.segments.into_iter();
        let mut all = Vec::with_capacity(kept.len() + out.len());
        for (at, o) in out {
            all.extend(kept.by_ref().take(at - all.len()));
            all.push(o);
        }
        all.extend(kept);
        self.view.segments = all;
        r
    }

    pub fn new(segments: usize) -> Self {
        LastShown {
            by_segment: vec![None; segments],
            max_window: u64::MAX,
            view: Observations::default(),
            in_view: vec![NOT_IN_VIEW; segments],
            view_min_lossy: None,
        }
    }

    /// Records `epoch`'s counts and returns the observations of every segment's latest watch:
    /// what [`crate::detect::observations`] gives on [`LastShown::totals`], in the same order.
    pub fn observe(
        &mut self,
        epoch: u64,
        counts: &BTreeMap<SegmentId, SegmentCount>,
        segments: &Segments,
        min_lossy_epochs: u32,
    ) -> &Observations {
        self.store(epoch, counts);
        let mut rebuild = self.view_min_lossy != Some(min_lossy_epochs);
        if !rebuild {
            for &s in counts.keys() {
                let Some(c) = self
                    .by_segment
                    .get(s as usize)
                    .and_then(Option::as_ref)
                    .map(Watch::shown)
                else {
                    continue;
                };
                let at = self.in_view[s as usize];
                match observed(segments, s, &c, min_lossy_epochs) {
                    Some(o) if at != NOT_IN_VIEW => self.view.segments[at as usize] = o,
                    // A segment enters or leaves the view: its order must be kept.
                    _ if at == NOT_IN_VIEW && c.sent == 0 => {}
                    _ => {
                        rebuild = true;
                        break;
                    }
                }
            }
        }
        if rebuild {
            self.view = observations(segments, &self.totals(), min_lossy_epochs);
            self.in_view.fill(NOT_IN_VIEW);
            for (i, o) in self.view.segments.iter().enumerate() {
                self.in_view[o.segment as usize] = i as u32;
            }
            self.view_min_lossy = Some(min_lossy_epochs);
        }
        &self.view
    }

    /// The counts of `epoch`. Ids past the store's size are ignored.
    pub fn record(&mut self, epoch: u64, counts: &BTreeMap<SegmentId, SegmentCount>) {
        self.store(epoch, counts);
        self.view_min_lossy = None;
    }

    fn store(&mut self, epoch: u64, counts: &BTreeMap<SegmentId, SegmentCount>) {
        for (&s, c) in counts {
            let Some(slot) = self.by_segment.get_mut(s as usize) else {
                continue;
            };
            let mut counts = WindowCount::default();
            counts.add(c);
            match slot {
                Some(w) if w.last + 1 == epoch && epoch - w.start < self.max_window => {
                    w.counts.add(c);
                    w.last = epoch;
                }
                Some(w) if w.last + 1 == epoch => {
                    w.earlier = w.counts;
                    w.counts = counts;
                    w.start = epoch;
                    w.last = epoch;
                }
                _ => {
                    *slot = Some(Watch {
                        start: epoch,
                        last: epoch,
                        counts,
                        earlier: WindowCount::default(),
                    })
                }
            }
        }
    }

    /// Every segment's latest counts, for [`crate::detect::observations`].
    pub fn totals(&self) -> BTreeMap<SegmentId, WindowCount> {
        self.by_segment
            .iter()
            .enumerate()
            .filter_map(|(s, v)| v.map(|w| (s as SegmentId, w.shown())))
            .collect()
    }

    /// Epochs since `segment` was last seen, at `now`; `None` if never.
    pub fn age(&self, segment: SegmentId, now: u64) -> Option<u64> {
        self.by_segment
            .get(segment as usize)
            .copied()
            .flatten()
            .map(|w| now.saturating_sub(w.last))
    }

    /// How old the evidence is at `now`, over all segments.
    pub fn ages(&self, now: u64) -> EvidenceAge {
        let mut out = EvidenceAge::default();
        let mut sum = 0u64;
        for v in &self.by_segment {
            match v {
                None => out.never_seen += 1,
                Some(w) => {
                    let age = now.saturating_sub(w.last);
                    out.seen += 1;
                    out.oldest = out.oldest.max(age);
                    sum += age;
                }
            }
        }
        out.mean = if out.seen > 0 {
            sum as f64 / out.seen as f64
        } else {
            0.0
        };
        out
    }
}

/// The age of the evidence localization works from, in epochs.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EvidenceAge {
    pub seen: usize,
    pub never_seen: usize,
    pub oldest: u64,
    pub mean: f64,
}
