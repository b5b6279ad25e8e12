//! What the hosts' side hands the switches' side: flows opened and packets walked, in the
//! order they happened.

use super::switches::FlowView;

/// A packet's passage through switches `from..to` of its flow's path, the first reached at `t`
/// (then one hop latency per switch).
#[derive(Clone, Copy, Debug)]
pub(super) struct Walk {
    pub flow: u32,
    pub t: u64,
    pub from: u8,
    pub to: u8,
    /// The shim it arrives with: fresh from the host, or as parked in the last run.
    pub resumed: u32,
    /// It waits at hop `to` for the next run: its shim is parked, in the order of parking.
    pub park: bool,
}

impl Walk {
    pub const FRESH: u32 = u32::MAX;
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Job {
    /// Flow slot `ix` now holds the flow `Batch::opens[view]`.
    Open {
        ix: u32,
        view: u32,
    },
    Walk(Walk),
}

#[derive(Default)]
pub(super) struct Batch {
    pub jobs: Vec<Job>,
    pub opens: Vec<Option<FlowView>>,
    walks: usize,
}

impl Batch {
    pub fn open(&mut self, ix: u32, view: FlowView) {
        self.jobs.push(Job::Open {
            ix,
            view: self.opens.len() as u32,
        });
        self.opens.push(Some(view));
    }

    pub fn walk(&mut self, w: Walk) {
        self.jobs.push(Job::Walk(w));
        self.walks += 1;
    }

    pub fn walks(&self) -> usize {
        self.walks
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    pub fn clear(&mut self) {
        self.jobs.clear();
        self.opens.clear();
        self.walks = 0;
    }
}
