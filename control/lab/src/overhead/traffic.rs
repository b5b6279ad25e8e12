//! Traffic for the overhead experiments.
//!
//! * [`LinkEpoch`] (Fig. 6): one 100 ms epoch on one 100 Gb/s link, 10k flows whose sizes are
//!   Pareto (shape 1.2, at least 14 packets, capped at 50k packets: mean ≈ 80 packets, so ≈ 800k
//!   packets, what 100 Gb/s carries in 100 ms at 1500 B), each flow's packets in trains of up
//!   to 16 spread evenly over the epoch with a random phase.
//! * [`ChurnTrace`] (Fig. 7 and 11, standing in for the MAWI trace we do not have): Poisson flow
//!   arrivals, Pareto flow sizes (shape 1.1, from 1 packet, capped at 10⁶: most flows are a few
//!   packets, most packets belong to a few flows), each flow spreading its packets evenly over a
//!   log-uniform duration of 50 ms to 120 s, so flows start and end throughout the run and large
//!   flows tend to be long-lived, as elephants are. Like TCP windows, packets leave in trains of
//!   up to 16 back to back (1.2 µs apart, 1500 B at 10 Gb/s) with the mean rate kept. Arrivals begin `warmup` before time 0 so the
//!   run starts in steady state; only packets at t ≥ 0 are emitted.
//! * [`read_pcap`]: a real trace (classic libpcap, e.g. MAWI after `gunzip`).

use canary_core::FlowId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A Pareto(`min`, `shape`) draw by inverse transform.
pub fn pareto(rng: &mut impl Rng, min: f64, shape: f64) -> f64 {
    let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    min / u.powf(1.0 / shape)
}

/// A random TCP or UDP 5-tuple.
pub fn random_flow(rng: &mut impl Rng) -> FlowId {
    FlowId::v4(
        rng.random(),
        rng.random(),
        if rng.random_bool(0.8) { 6 } else { 17 },
        rng.random(),
        rng.random(),
    )
}

/// Shape of a [`LinkEpoch`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkTraffic {
    pub flows: usize,
    pub epoch_ns: u64,
    pub size_min: f64,
    pub size_shape: f64,
    pub size_max: u32,
}

impl Default for LinkTraffic {
    /// Sec. IV-B: 10k flows through the link for 100 ms.
    fn default() -> Self {
        LinkTraffic {
            flows: 10_000,
            epoch_ns: 100_000_000,
            size_min: 14.0,
            size_shape: 1.2,
            size_max: 50_000,
        }
    }
}

/// One epoch of traffic on the two-switch link.
#[derive(Clone, Debug)]
pub struct LinkEpoch {
    pub flows: Vec<FlowId>,
    /// Packets of each flow in the epoch.
    pub sizes: Vec<u32>,
}

impl LinkEpoch {
    pub fn draw(cfg: &LinkTraffic, rng: &mut impl Rng) -> Self {
        let mut flows = Vec::with_capacity(cfg.flows);
        let mut sizes = Vec::with_capacity(cfg.flows);
        for _ in 0..cfg.flows {
            flows.push(random_flow(rng));
            let s = pareto(rng, cfg.size_min, cfg.size_shape).ceil();
            sizes.push(s.min(cfg.size_max as f64) as u32);
        }
        LinkEpoch { flows, sizes }
    }

    pub fn packets(&self) -> u64 {
        self.sizes.iter().map(|&s| s as u64).sum()
    }

    /// Every packet as (time, flow index), in time order: flow `i`'s packets leave in trains of
    /// up to 16 back to back (1.2 µs apart), trains evenly spaced over the epoch from a random
    /// phase (as [`ChurnTrace`] sends them).
    pub fn packet_order(&self, epoch_ns: u64, rng: &mut impl Rng) -> Vec<(u32, u32)> {
        const BURST: u32 = 16;
        const LINE_GAP_NS: f64 = 1_200.0;
        let mut v = Vec::with_capacity(self.packets() as usize);
        for (i, &n) in self.sizes.iter().enumerate() {
            let period = epoch_ns as f64 / n.div_ceil(BURST) as f64;
            let phase = rng.random_range(0.0..period);
            for j in 0..n {
                let t = phase + (j / BURST) as f64 * period + (j % BURST) as f64 * LINE_GAP_NS;
                v.push((t as u32, i as u32));
            }
        }
        v.sort_unstable();
        v
    }
}

/// A packet of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracePacket {
    pub t_ns: u64,
    pub flow: FlowId,
}

/// Shape of a [`ChurnTrace`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChurnConfig {
    pub arrivals_per_s: f64,
    pub size_min: f64,
    pub size_shape: f64,
    pub size_max: f64,
    pub duration_min_s: f64,
    pub duration_max_s: f64,
    pub warmup_s: f64,
    pub duration_s: f64,
    /// Packets per train, and their spacing inside a train.
    pub burst: u32,
    pub line_gap_ns: f64,
}

impl Default for ChurnConfig {
    fn default() -> Self {
        ChurnConfig {
            arrivals_per_s: 30_000.0,
            size_min: 1.0,
            size_shape: 1.1,
            size_max: 1e6,
            duration_min_s: 0.05,
            duration_max_s: 120.0,
            warmup_s: 120.0,
            duration_s: 30.0,
            burst: 16,
            line_gap_ns: 1_200.0,
        }
    }
}

struct Active {
    flow: FlowId,
    remaining: u64,
    /// Time from one train to the next.
    period_ns: f64,
    start_ns: f64,
    sent: u64,
}

impl Active {
    /// Time of the flow's packet `j`.
    fn time(&self, j: u64, burst: u64, line_gap_ns: f64) -> f64 {
        self.start_ns + (j / burst) as f64 * self.period_ns + (j % burst) as f64 * line_gap_ns
    }
}

/// The synthetic heavy-tailed trace with flow churn, as an iterator of packets in time order.
pub struct ChurnTrace {
    cfg: ChurnConfig,
    rng: ChaCha8Rng,
    /// Time of the next flow arrival, ns from time 0 (negative during warm-up).
    next_arrival: f64,
    active: Vec<Active>,
    free: Vec<usize>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    end_ns: u64,
    pub flows_started: u64,
}

impl ChurnTrace {
    pub fn new(cfg: ChurnConfig, seed: u64) -> Self {
        let mut t = ChurnTrace {
            cfg,
            rng: ChaCha8Rng::seed_from_u64(seed),
            next_arrival: -cfg.warmup_s * 1e9,
            active: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            end_ns: (cfg.duration_s * 1e9) as u64,
            flows_started: 0,
        };
        t.schedule_arrival();
        t
    }

    fn schedule_arrival(&mut self) {
        let u: f64 = self.rng.random_range(f64::MIN_POSITIVE..1.0);
        self.next_arrival += -u.ln() / self.cfg.arrivals_per_s * 1e9;
    }

    fn arrive(&mut self) {
        let t0 = self.next_arrival;
        self.schedule_arrival();
        let c = self.cfg;
        let size = pareto(&mut self.rng, c.size_min, c.size_shape)
            .min(c.size_max)
            .ceil() as u64;
        let duration = self
            .rng
            .random_range(c.duration_min_s.ln()..=c.duration_max_s.ln())
            .exp();
        let burst = c.burst.max(1) as u64;
        let period_ns =
            (duration * 1e9 / size as f64 * burst as f64).max(burst as f64 * c.line_gap_ns);
        let flow = random_flow(&mut self.rng);
        // Trains before time 0 are skipped, not emitted.
        let skip = if t0 < 0.0 {
            (-t0 / period_ns).ceil() as u64 * burst
        } else {
            0
        };
        if skip >= size {
            return;
        }
        self.flows_started += 1;
        let a = Active {
            flow,
            remaining: size - skip,
            period_ns,
            start_ns: t0,
            sent: skip,
        };
        let first = a.time(skip, burst, c.line_gap_ns).max(0.0) as u64;
        let ix = match self.free.pop() {
            Some(i) => {
                self.active[i] = a;
                i
            }
            None => {
                self.active.push(a);
                self.active.len() - 1
            }
        };
        self.heap.push(Reverse((first, ix)));
    }
}

impl Iterator for ChurnTrace {
    type Item = TracePacket;

    fn next(&mut self) -> Option<TracePacket> {
        loop {
            let next_pkt = self.heap.peek().map(|r| r.0 .0 as f64).unwrap_or(f64::MAX);
            if self.next_arrival <= next_pkt {
                if self.next_arrival >= self.end_ns as f64 {
                    return None;
                }
                self.arrive();
                continue;
            }
            let Reverse((t, ix)) = self.heap.pop().expect("peeked");
            if t >= self.end_ns {
                return None;
            }
            let a = &mut self.active[ix];
            a.remaining -= 1;
            a.sent += 1;
            let flow = a.flow;
            if a.remaining > 0 {
                let nt = a.time(a.sent, self.cfg.burst.max(1) as u64, self.cfg.line_gap_ns) as u64;
                self.heap.push(Reverse((nt.max(t), ix)));
            } else {
                self.free.push(ix);
            }
            return Some(TracePacket { t_ns: t, flow });
        }
    }
}

/// What [`read_pcap`] skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcapStats {
    pub packets: u64,
    pub skipped: u64,
}

/// Why [`read_pcap`] cannot read a file (the lab's [`crate::Error::Pcap`] adds its path).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PcapError {
    #[error("not a pcap file: shorter than its 24-byte header")]
    Short,
    #[error("pcapng is not supported: convert with `editcap -F pcap`")]
    Pcapng,
    #[error("not a pcap file (magic {0:#010x}); gzip-compressed traces must be unpacked")]
    Magic(u32),
}

/// Reads a classic libpcap file (microsecond or nanosecond timestamps, either byte order;
/// link types Ethernet (with VLAN tags), raw IP, and Linux cooked capture) into packets with
/// times relative to the first. IPv4 flows keep their 5-tuple; IPv6 addresses are folded to 32
/// bits with CRC-32 (our flow IDs are IPv4-sized). Non-IP frames are skipped and counted.
/// pcapng and compressed files are not read: `gunzip` MAWI traces first.
pub fn read_pcap(bytes: &[u8]) -> Result<(Vec<TracePacket>, PcapStats), PcapError> {
    if bytes.len() < 24 {
        return Err(PcapError::Short);
    }
    let magic = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
    let (le, nanos) = match magic {
        0xa1b2_c3d4 => (true, false),
        0xa1b2_3c4d => (true, true),
        0xd4c3_b2a1 => (false, false),
        0x4d3c_b2a1 => (false, true),
        0x0a0d_0d0a => return Err(PcapError::Pcapng),
        m => return Err(PcapError::Magic(m)),
    };
    let u32at = |b: &[u8], i: usize| {
        let a: [u8; 4] = b[i..i + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let linktype = u32at(bytes, 20) & 0xffff;
    let mut out = Vec::new();
    let mut stats = PcapStats::default();
    let mut pos = 24;
    let mut t0: Option<u64> = None;
    while pos + 16 <= bytes.len() {
        let sec = u32at(bytes, pos) as u64;
        let frac = u32at(bytes, pos + 4) as u64;
        let incl = u32at(bytes, pos + 8) as usize;
        pos += 16;
        if pos + incl > bytes.len() {
            break;
        }
        let frame = &bytes[pos..pos + incl];
        pos += incl;
        stats.packets += 1;
        let t = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        let base = *t0.get_or_insert(t);
        match parse_frame(linktype, frame) {
            Some(flow) => out.push(TracePacket {
                t_ns: t.saturating_sub(base),
                flow,
            }),
            None => stats.skipped += 1,
        }
    }
    Ok((out, stats))
}

/// The 5-tuple of one captured frame.
fn parse_frame(linktype: u32, f: &[u8]) -> Option<FlowId> {
    let ip = match linktype {
        1 => {
            let mut off = 12;
            let mut ethertype = u16::from_be_bytes(f.get(off..off + 2)?.try_into().ok()?);
            while ethertype == 0x8100 || ethertype == 0x88a8 {
                off += 4;
                ethertype = u16::from_be_bytes(f.get(off..off + 2)?.try_into().ok()?);
            }
            f.get(off + 2..)?
        }
        113 => f.get(16..)?,
        101 | 228 | 229 | 12 | 14 => f,
        _ => return None,
    };
    let version = ip.first()? >> 4;
    let (src, dst, proto, l4) = match version {
        4 => {
            let ihl = (ip[0] & 0x0f) as usize * 4;
            let frag = u16::from_be_bytes(ip.get(6..8)?.try_into().ok()?) & 0x1fff;
            let src = u32::from_be_bytes(ip.get(12..16)?.try_into().ok()?);
            let dst = u32::from_be_bytes(ip.get(16..20)?.try_into().ok()?);
            let l4 = if frag == 0 { ip.get(ihl..) } else { None };
            (src, dst, ip[9], l4)
        }
        6 => {
            let fold = |a: &[u8]| canary_core::sketch::crc32(a);
            let src = fold(ip.get(8..24)?);
            let dst = fold(ip.get(24..40)?);
            (src, dst, *ip.get(6)?, ip.get(40..))
        }
        _ => return None,
    };
    let (sport, dport) = match (proto, l4) {
        (6 | 17, Some(l4)) if l4.len() >= 4 => (
            u16::from_be_bytes([l4[0], l4[1]]),
            u16::from_be_bytes([l4[2], l4[3]]),
        ),
        _ => (0, 0),
    };
    Some(FlowId::v4(src, dst, proto, sport, dport))
}

#[cfg(test)]
mod tests;
