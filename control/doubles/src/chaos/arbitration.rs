//! A chaos switch's arbitration, as P4Runtime's: of the controllers' open streams, the one with
//! the highest election id is primary, and only the primary may change the switch. A stream
//! ends when its connection drops or its controller's process dies; the switch notices at once,
//! as BMv2 does when the TCP connection closes. A reboot forgets every stream.

use super::Lifeline;
use std::sync::{Arc, Mutex, Weak};

/// One controller's open stream to the switch: the driver holds the `Arc`, the switch a `Weak`,
/// so dropping the driver's connection (or the driver) ends it. It carries the life of the
/// driver's process, which may be given after the stream opened: a killed process's streams
/// end with it.
pub(super) type Stream = Arc<Mutex<Option<Lifeline>>>;

fn open(stream: &Weak<Mutex<Option<Lifeline>>>) -> bool {
    stream.upgrade().is_some_and(|s| {
        !s.lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(Lifeline::dead)
    })
}

#[derive(Debug)]
struct Holder {
    election_id: u128,
    stream: Weak<Mutex<Option<Lifeline>>>,
}

impl Holder {
    fn live(&self) -> bool {
        open(&self.stream)
    }
}

/// Who is primary on one switch.
#[derive(Debug, Default)]
pub(super) struct Arbitration {
    primary: Option<Holder>,
}

impl Arbitration {
    /// The primary's election id, if its stream is still open.
    pub(super) fn primary(&mut self) -> Option<u128> {
        if !self.primary.as_ref().is_some_and(Holder::live) {
            self.primary = None;
        }
        self.primary.as_ref().map(|h| h.election_id)
    }

    /// A new stream with `election_id` arbitrates: it becomes primary unless a live stream
    /// holds an id as high (P4Runtime refuses a second stream with the primary's id). `Err`
    /// carries the primary's id.
    pub(super) fn arbitrate(&mut self, election_id: u128, stream: &Stream) -> Result<(), u128> {
        match self.primary() {
            Some(id) if id >= election_id => Err(id),
            _ => {
                self.primary = Some(Holder {
                    election_id,
                    stream: Arc::downgrade(stream),
                });
                Ok(())
            }
        }
    }

    /// Whether `stream` is the primary's.
    pub(super) fn holds(&self, stream: &Stream) -> bool {
        self.primary
            .as_ref()
            .is_some_and(|h| h.stream.ptr_eq(&Arc::downgrade(stream)))
    }

    /// The switch rebooted: every stream is gone.
    pub(super) fn reset(&mut self) {
        self.primary = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_live_stream_is_primary_and_a_dead_one_frees_the_switch() {
        let mut a = Arbitration::default();
        let (old, new, probe) = (Stream::default(), Stream::default(), Stream::default());
        assert_eq!(a.arbitrate(5, &old), Ok(()));
        assert_eq!(a.arbitrate(5, &probe), Err(5), "the primary's id is taken");
        assert_eq!(a.arbitrate(1, &probe), Err(5), "a lower id stands by");
        assert!(a.holds(&old));
        // The process is given its life after it connected, and then dies.
        let life = Lifeline::dies_after(1);
        *old.lock().unwrap() = Some(life.clone());
        assert_eq!(a.primary(), Some(5));
        life.take(1);
        assert_eq!(a.primary(), None, "the killed process's stream ended");
        assert_eq!(a.arbitrate(3, &new), Ok(()));
        assert!(a.holds(&new) && !a.holds(&old));
        assert_eq!(a.arbitrate(9, &old), Ok(()), "a higher id takes over");
        assert!(
            !a.holds(&new),
            "the one it took over from is no longer primary"
        );
        drop(old);
        assert_eq!(a.primary(), None, "a dropped connection ends its stream");
    }
}
