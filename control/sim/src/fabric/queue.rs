//! The fabric's event queue: flows opening and packets leaving their host, popped in the order
//! (time, event) the simulation has always used. A radix heap, as simulated time never runs
//! back: an event is only ever scheduled at or after the one being handled, so events are kept
//! in buckets by the highest bit in which their time differs from the last time taken, and each
//! moves down a few buckets in its life instead of through a binary heap's ~15 levels (a binary
//! heap over every flow's next packet was a quarter of the simulator's time).

/// What happens at an event's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// Host `host`'s flow slot `slot` opens a new flow.
    Open { host: u32, slot: u32 },
    /// The flow in `flows[0]` sends its next packet.
    Send(u32),
}

impl Event {
    /// Within one time, every opening comes before every packet, openings by (host, slot),
    /// packets by flow index.
    fn key(self) -> u64 {
        match self {
            Event::Open { host, slot } => {
                debug_assert!(host < 1 << 31);
                u64::from(host) << 32 | u64::from(slot)
            }
            Event::Send(flow) => 1 << 63 | u64::from(flow),
        }
    }

    fn of_key(k: u64) -> Self {
        if k >> 63 == 1 {
            Event::Send(k as u32)
        } else {
            Event::Open {
                host: (k >> 32) as u32,
                slot: k as u32,
            }
        }
    }
}

/// Buckets: 0 holds the events at `last` (sorted, the next to pop last); bucket `b ≥ 1` those
/// whose time first differs from `last` in bit `b - 1`.
pub(super) struct EventQueue {
    last: u64,
    buckets: [Vec<(u64, u64)>; 65],
    /// Bit `b - 1` set: bucket `b ≥ 1` holds events.
    full: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            last: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
            full: 0,
        }
    }

    /// Schedules `e` at `t`, which must not be before the last event taken or looked at.
    pub fn push(&mut self, t: u64, e: Event) {
        assert!(
            t >= self.last,
            "event at {t} scheduled before {}",
            self.last
        );
        self.put(t, e.key());
    }

    fn put(&mut self, t: u64, k: u64) {
        let b = bucket(self.last, t);
        if b == 0 {
            let now = &mut self.buckets[0];
            let at = now.partition_point(|&(_, o)| o > k);
            now.insert(at, (t, k));
        } else {
            self.buckets[b].push((t, k));
            self.full |= 1 << (b - 1);
        }
    }

    /// Takes the first event if it happens at or before `until`.
    pub fn pop_until(&mut self, until: u64) -> Option<(u64, Event)> {
        if self.buckets[0].is_empty() {
            self.refill();
        }
        match self.buckets[0].last() {
            Some(&(t, _)) if t <= until => {
                let (t, k) = self.buckets[0].pop().expect("not empty");
                Some((t, Event::of_key(k)))
            }
            _ => None,
        }
    }

    /// Moves the earliest events into bucket 0: the lowest full bucket's least time becomes
    /// `last`, and each of its events goes to a lower bucket.
    fn refill(&mut self) {
        if self.full == 0 {
            return;
        }
        let b = self.full.trailing_zeros() as usize + 1;
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.full &= !(1 << (b - 1));
        self.last = moving.iter().map(|e| e.0).min().expect("a full bucket");
        for &(t, k) in &moving {
            let to = bucket(self.last, t);
            debug_assert!(to < b);
            self.buckets[to].push((t, k));
            if to > 0 {
                self.full |= 1 << (to - 1);
            }
        }
        self.buckets[0].sort_unstable_by_key(|e| std::cmp::Reverse(e.1));
        // Keep the allocation for the next events of this bucket.
        moving.clear();
        self.buckets[b] = moving;
    }
}

/// The bucket of time `t` while `last` is the last time taken.
fn bucket(last: u64, t: u64) -> usize {
    if t == last {
        0
    } else {
        64 - (t ^ last).leading_zeros() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BinaryHeap;

    /// The queue pops what a binary heap of (time, key) pops, while events are scheduled at or
    /// after the last one taken, with ties and far-apart times.
    #[test]
    fn pops_in_the_order_of_a_binary_heap() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut q = EventQueue::new();
        let mut heap = BinaryHeap::new();
        let event = |rng: &mut rand_chacha::ChaCha8Rng| {
            if rng.random_bool(0.3) {
                Event::Open {
                    host: rng.random_range(0..50),
                    slot: rng.random_range(0..4),
                }
            } else {
                Event::Send(rng.random_range(0..1000))
            }
        };
        for _ in 0..200 {
            let (t, e) = (rng.random_range(0..1000), event(&mut rng));
            q.push(t, e);
            heap.push(std::cmp::Reverse((t, e.key())));
        }
        let mut until = 0;
        for _ in 0..20_000 {
            until += rng.random_range(0..50);
            loop {
                let want = match heap.peek() {
                    Some(r) if r.0 .0 <= until => heap.pop().map(|r| (r.0 .0, r.0 .1)),
                    _ => None,
                };
                let got = q.pop_until(until).map(|(t, e)| (t, e.key()));
                assert_eq!(got, want);
                let Some((t, _)) = got else { break };
                for _ in 0..rng.random_range(0..3) {
                    let d = match rng.random_range(0..4) {
                        0 => 0,
                        1 => rng.random_range(0..10),
                        2 => rng.random_range(0..10_000),
                        _ => rng.random_range(0..1 << 40),
                    };
                    let e = event(&mut rng);
                    q.push(t + d, e);
                    heap.push(std::cmp::Reverse((t + d, e.key())));
                }
            }
        }
    }
}
