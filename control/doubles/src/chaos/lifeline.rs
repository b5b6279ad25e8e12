//! [`Lifeline`]: a controller process that dies after so many switch calls.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The life of one controller process, shared by its drivers: after `n` more switch calls (a
/// write batch counts each write), every call hangs forever, as the calls of a process killed
/// at that moment do. Dropping the controller's future afterwards is the kill.
#[derive(Clone, Debug)]
pub struct Lifeline(Arc<AtomicI64>);

impl Lifeline {
    /// A controller that dies after `n` switch calls.
    pub fn dies_after(n: u64) -> Self {
        Lifeline(Arc::new(AtomicI64::new(n.min(i64::MAX as u64) as i64)))
    }

    /// Takes up to `want` calls; returns how many may still reach the switch.
    pub(super) fn take(&self, want: usize) -> usize {
        let before = self.0.fetch_sub(want as i64, Ordering::SeqCst);
        before.clamp(0, want as i64) as usize
    }

    /// Whether the controller is dead.
    pub fn dead(&self) -> bool {
        self.0.load(Ordering::SeqCst) <= 0
    }
}
