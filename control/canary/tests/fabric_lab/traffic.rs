//! Host traffic: every host sends UDP flows of heavy-tailed (Pareto) sizes from a raw
//! socket, at a set rate.

use super::FabricLab;
use crate::bmv2::RawSocket;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Pareto};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

impl FabricLab {
    /// Starts every host sending `pps` packets per second in `flows` concurrent UDP flows to
    /// random other hosts, flow sizes Pareto(shape 1.2, min `min_pkts`).
    pub fn traffic(&self, pps: u32, flows: usize, min_pkts: f64, seed: u64) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let addrs: Vec<u32> = self.hosts.iter().map(|h| h.1).collect();
        let threads = self
            .hosts
            .iter()
            .enumerate()
            .map(|(i, (ns, src))| {
                let sock = RawSocket::open(ns, "eth0");
                let (stop, sent, addrs, src) = (stop.clone(), sent.clone(), addrs.clone(), *src);
                std::thread::spawn(move || {
                    send_loop(
                        sock,
                        src,
                        &addrs,
                        pps,
                        flows,
                        min_pkts,
                        seed + i as u64,
                        &stop,
                        &sent,
                    )
                })
            })
            .collect();
        Traffic {
            stop,
            sent,
            threads,
        }
    }
}

pub struct Traffic {
    stop: Arc<AtomicBool>,
    pub sent: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Traffic {
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
        self.sent.load(Ordering::Relaxed)
    }
}

struct Flow {
    dst: u32,
    sport: u16,
    left: u64,
}

#[allow(clippy::too_many_arguments)]
fn send_loop(
    sock: RawSocket,
    src: u32,
    addrs: &[u32],
    pps: u32,
    nflows: usize,
    min_pkts: f64,
    seed: u64,
    stop: &AtomicBool,
    sent: &AtomicU64,
) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let size = Pareto::new(min_pkts, 1.2).unwrap();
    let others: Vec<u32> = addrs.iter().copied().filter(|&a| a != src).collect();
    let mut next_sport: u16 = 10000 + (seed % 1000) as u16 * 50;
    let mut new_flow = |rng: &mut rand_chacha::ChaCha8Rng| {
        next_sport = next_sport.wrapping_add(1).max(1024);
        Flow {
            dst: others[rng.random_range(0..others.len())],
            sport: next_sport,
            left: size.sample(rng).min(1e6) as u64,
        }
    };
    let mut flows: Vec<Flow> = (0..nflows).map(|_| new_flow(&mut rng)).collect();
    let gap = Duration::from_secs_f64(1.0 / f64::from(pps.max(1)));
    let mut due = Instant::now();
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let i = rng.random_range(0..flows.len());
        let f = &mut flows[i];
        sock.send(&udp_frame(src, f.dst, f.sport, 5001, n as u16));
        n += 1;
        f.left = f.left.saturating_sub(1);
        if f.left == 0 {
            flows[i] = new_flow(&mut rng);
        }
        due += gap;
        let now = Instant::now();
        match due.checked_duration_since(now) {
            Some(d) => std::thread::sleep(d),
            // Descheduled for a while (a loaded 2-core machine): drop the backlog instead of
            // sending it back to back. Sixteen hosts bursting a second's worth of packets at
            // once overflow BMv2's queues, a real loss no link is to blame for.
            None if now - due > gap * 4 => due = now,
            None => {}
        }
        sent.fetch_add(1, Ordering::Relaxed);
    }
}

/// An Ethernet/IPv4/UDP frame. The destination MAC is nobody's, so receiving hosts drop it
/// silently (no ICMP back into the fabric); the switches forward on IPv4 only.
pub fn udp_frame(src: u32, dst: u32, sport: u16, dport: u16, seq: u16) -> Vec<u8> {
    let payload = 64usize;
    let mut f = Vec::with_capacity(14 + 28 + payload);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (20 + 8 + payload) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[4..6].copy_from_slice(&seq.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src.to_be_bytes());
    ip[16..20].copy_from_slice(&dst.to_be_bytes());
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(8 + payload as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(f.len() + payload, 0xab);
    f
}
