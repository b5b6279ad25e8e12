//! Reading a meter out: every flow with a clean bucket, each meter read once in position order.
//!
//! Every bucket a flow occupies is at that flow's hashed column of its row, so the clean buckets
//! of one flow are found from the first one, without sorting by flow: the non-empty buckets are
//! read once each, in position order; the first clean bucket of a flow hashes it once, and the
//! flow then waits at its positions in the later rows to be compared there. (At k = 32 the
//! meters are 5 MB each and a read at random missed cache and TLB nearly every time.)
//!
//! A meter read off a switch may break the rule: a bucket holding a flow outside the flow's
//! columns. A DSM's reading then falls back to grouping all clean buckets by flow, as
//! [`Dsm::clean_flows_checked`] does; a USM's reading leaves such a bucket out, as a lookup of
//! the flow ([`Usm::clean_lookup`]) never reads it.

use super::{CleanLookup, Dsm, DsmBucket, DsmRecord, MeterConfig, Usm, UsmBucket};
use crate::flow::FlowId;
use crate::sketch::hash::{meter_index, FlowHashes};
use serde::{Deserialize, Serialize};

/// A flow read from a clean USM bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsmRecord {
    pub flow: FlowId,
    pub count: u32,
}

/// What a scan keeps of a clean bucket: the record every clean bucket of the flow must repeat.
trait Clean: Copy + Default {
    type Record: Copy + PartialEq;
    fn clean(&self) -> Option<Self::Record>;
    fn flow_of(r: &Self::Record) -> FlowId;
}

impl Clean for DsmBucket {
    type Record = DsmRecord;
    fn clean(&self) -> Option<DsmRecord> {
        let flow = self.flow.filter(|_| !self.dirty)?;
        Some(DsmRecord {
            flow,
            path_bf: self.path_bf,
            count: self.count,
        })
    }
    fn flow_of(r: &DsmRecord) -> FlowId {
        r.flow
    }
}

impl Clean for UsmBucket {
    type Record = UsmRecord;
    fn clean(&self) -> Option<UsmRecord> {
        let flow = self.flow.filter(|_| !self.dirty)?;
        Some(UsmRecord {
            flow,
            count: self.count,
        })
    }
    fn flow_of(r: &UsmRecord) -> FlowId {
        r.flow
    }
}

/// What to do with a clean bucket outside its flow's columns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Irregular {
    /// Stop: the caller reads the meter another way.
    Stop,
    /// Leave the bucket out.
    Skip,
}

/// A flow's first clean bucket in a scan.
struct First<R> {
    rec: R,
    h: FlowHashes,
    row: u8,
    /// Next flow waiting at the same position, per row.
    next: [u32; MeterConfig::MAX_ROWS],
    /// Every clean bucket of the flow seen so far holds the same record.
    agree: bool,
}

/// The flows with a clean bucket, in order of their first clean bucket; `None` if a bucket
/// broke its flow's columns and `irregular` says stop.
fn scan<B: Clean>(meter: &super::Meter<B>, irregular: Irregular) -> Option<Vec<First<B::Record>>> {
    let MeterConfig { rows, width } = meter.config;
    let mut waits = Waits::borrow(rows * width);
    let mut firsts: Vec<First<B::Record>> = Vec::with_capacity(meter.used.len() / rows);
    let mut regular = true;
    for_each_bucket(
        &meter.buckets,
        &occupied(&meter.used, rows * width),
        |pos, b| {
            let head = waits.take(pos);
            let Some(rec) = b.clean() else {
                return true;
            };
            let flow = B::flow_of(&rec);
            let row = pos / width;
            // A flow met in an earlier row waits here (several may: the bucket of any other
            // is dirty or holds another flow).
            let mut c = head;
            while c != Waits::NONE {
                let f = &mut firsts[c as usize];
                if B::flow_of(&f.rec) == flow {
                    f.agree &= f.rec == rec;
                    return true;
                }
                c = f.next[row];
            }
            // The flow's first clean bucket.
            let h = FlowHashes::of(&flow);
            if meter_index(h, row, width) != pos % width {
                regular = false;
                return irregular == Irregular::Skip;
            }
            let mut next = [Waits::NONE; MeterConfig::MAX_ROWS];
            for (r, n) in next.iter_mut().enumerate().take(rows).skip(row + 1) {
                *n = waits.put(r * width + meter_index(h, r, width), firsts.len() as u32);
            }
            firsts.push(First {
                rec,
                h,
                row: row as u8,
                next,
                agree: true,
            });
            true
        },
    );
    // Positions waited on and never visited (a bucket read back empty) or not reached.
    for f in &firsts {
        for r in f.row as usize + 1..rows {
            waits.take(r * width + meter_index(f.h, r, width));
        }
    }
    waits.give_back();
    (regular || irregular == Irregular::Skip).then_some(firsts)
}

impl Dsm {
    /// [`Dsm::clean_flows_checked`] with each flow's hashes, in bucket order of each flow's first
    /// clean bucket rather than by flow; the same records and the same torn count.
    pub fn clean_flows_hashed(&self) -> (Vec<(DsmRecord, FlowHashes)>, u64) {
        let scan = self.clean_flows_scan();
        let out = (0..scan.len()).map(|i| scan.get(i)).collect();
        (out, scan.torn())
    }

    /// [`Dsm::clean_flows_hashed`] without copying the records out: they stay where the scan
    /// found them (at k = 32, 7.7 M records, and each copy of them costs as much memory traffic
    /// as reading a meter).
    pub fn clean_flows_scan(&self) -> CleanFlows {
        let Some(mut firsts) = scan(self, Irregular::Stop) else {
            return self.clean_flows_scan_by_flow();
        };
        let before = firsts.len();
        firsts.retain(|f| f.agree);
        CleanFlows {
            torn: (before - firsts.len()) as u64,
            firsts,
        }
    }

    /// [`Dsm::clean_flows_scan`] for any bucket contents: grouped by flow.
    fn clean_flows_scan_by_flow(&self) -> CleanFlows {
        let (records, torn) = self.clean_flows_checked();
        let firsts = records
            .into_iter()
            .map(|rec| First {
                h: FlowHashes::of(&rec.flow),
                rec,
                row: 0,
                next: [Waits::NONE; MeterConfig::MAX_ROWS],
                agree: true,
            })
            .collect();
        CleanFlows { firsts, torn }
    }
}

impl Usm {
    /// Every flow with a clean bucket at its own columns and what [`Usm::clean_lookup`] says of
    /// it (a count, or torn when its clean buckets disagree), in order of its first clean
    /// bucket.
    pub fn clean_flows(&self) -> Vec<(FlowId, CleanLookup)> {
        scan(self, Irregular::Skip)
            .expect("a USM scan skips what is out of place")
            .into_iter()
            .map(|f| {
                let found = if f.agree {
                    CleanLookup::Count(f.rec.count)
                } else {
                    CleanLookup::Torn
                };
                (f.rec.flow, found)
            })
            .collect()
    }
}

/// A DSM's clean flows with their hashes, as [`Dsm::clean_flows_scan`] found them.
pub struct CleanFlows {
    firsts: Vec<First<DsmRecord>>,
    torn: u64,
}

impl CleanFlows {
    /// Flows whose clean buckets disagree (read while counting), left out.
    pub fn torn(&self) -> u64 {
        self.torn
    }

    pub fn len(&self) -> usize {
        self.firsts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.firsts.is_empty()
    }

    /// The `i`-th clean flow, in bucket order of its first clean bucket.
    pub fn get(&self, i: usize) -> (DsmRecord, FlowHashes) {
        let f = &self.firsts[i];
        (f.rec, f.h)
    }
}

/// Per bucket position, the head of a list of the flows (indices) waiting to see that bucket.
/// One array per thread, kept between calls with every entry [`Waits::NONE`]: allocating and
/// filling it per meter would cost more than using it.
struct Waits(Vec<u32>);

thread_local! {
    static WAITS: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Waits {
    const NONE: u32 = u32::MAX;

    /// This thread's array, at least `n` long. If a panic loses it, the next call starts anew.
    fn borrow(n: usize) -> Self {
        let mut v = WAITS.with(|w| std::mem::take(&mut *w.borrow_mut()));
        if v.len() < n {
            v.resize(n, Self::NONE);
        }
        Waits(v)
    }

    /// Puts it back; every entry must be [`Waits::NONE`] again.
    fn give_back(self) {
        debug_assert!(self.0.iter().all(|&x| x == Self::NONE));
        WAITS.with(|w| *w.borrow_mut() = self.0);
    }

    /// `i` now waits at `pos`; returns the previous head (to link from `i`).
    fn put(&mut self, pos: usize, i: u32) -> u32 {
        std::mem::replace(&mut self.0[pos], i)
    }

    /// The list waiting at `pos`, which is cleared.
    fn take(&mut self, pos: usize) -> u32 {
        std::mem::replace(&mut self.0[pos], Self::NONE)
    }
}

/// A bitmap over `n` positions with `positions` set.
fn occupied(positions: &[u32], n: usize) -> Vec<u64> {
    let mut bits = vec![0u64; n.div_ceil(64)];
    for &i in positions {
        bits[i as usize / 64] |= 1 << (i % 64);
    }
    bits
}

/// `f(position, bucket)` for the positions set in `bits`, in increasing order, until it returns
/// false. The buckets are read [`LOOKUP_BLOCK`] at a time before any is examined, so that their
/// cache misses overlap; in position order, reads stay within few pages at a time.
fn for_each_bucket<B: Copy + Default>(
    buckets: &[B],
    bits: &[u64],
    mut f: impl FnMut(usize, &B) -> bool,
) {
    let mut pos = [0usize; LOOKUP_BLOCK];
    let mut got = [B::default(); LOOKUP_BLOCK];
    let mut n = 0;
    let mut flush = |pos: &[usize], got: &mut [B]| {
        for (g, &p) in got.iter_mut().zip(pos) {
            *g = buckets[p];
        }
        pos.iter().zip(got.iter()).all(|(&p, g)| f(p, g))
    };
    for (w, &word) in bits.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            pos[n] = w * 64 + word.trailing_zeros() as usize;
            word &= word - 1;
            n += 1;
            if n == LOOKUP_BLOCK {
                if !flush(&pos, &mut got) {
                    return;
                }
                n = 0;
            }
        }
    }
    flush(&pos[..n], &mut got[..n]);
}

/// Buckets read together by the scans: enough independent reads to keep the memory system busy.
const LOOKUP_BLOCK: usize = 16;
