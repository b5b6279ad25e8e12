//! What the hosts' side hands the switches' side: flows opened and packets walked, in the
//! order they happened.

use super::switches::FlowView;

/// The passage of a train of `n` packets of one flow through switches `from..to` of its path:
/// packet `i` reaches hop `from + k` at `t + i × line gap + k × hop latency`. A train of one is a
/// packet; only a packet can wait for the next run (`park`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Walk {
    pub flow: u32,
    pub t: u64,
    pub from: u8,
    pub to: u8,
    /// Packets in the train, at most [`Walk::MAX_TRAIN`].
    pub n: u8,
    /// For a train of more than one: `Batch::arrived[masks + k]` holds the packets (bit `i`:
    /// packet `i`) that reached hop `from + k`; the others were dropped on the way.
    pub masks: u32,
    /// The shim it arrives with: fresh from the host, or as parked in the last run.
    pub resumed: u32,
    /// It waits at hop `to` for the next run: its shim is parked, in the order of parking.
    pub park: bool,
}

impl Walk {
    pub const FRESH: u32 = u32::MAX;
    /// Packets in a train: one bit each in a `u64`.
    pub const MAX_TRAIN: u32 = 64;
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
    /// Which packets of each train reached each hop (see [`Walk::masks`]).
    pub arrived: Vec<u64>,
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
        self.arrived.clear();
        self.walks = 0;
    }
}
