//! The receiving half of `canary traffic`: a thread that counts our packets arriving on the
//! host's port, by source and family.

use super::{TrafficStats, MAGIC};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the receiver has counted so far.
#[derive(Default)]
struct Counts {
    received: AtomicU64,
    received_bytes: AtomicU64,
    received_from: Mutex<BTreeMap<IpAddr, u64>>,
    received_v6: AtomicU64,
}

impl Counts {
    fn copy_into(&self, stats: &mut TrafficStats) {
        stats.received = self.received.load(Ordering::Relaxed);
        stats.received_bytes = self.received_bytes.load(Ordering::Relaxed);
        stats.received_from = self.received_from.lock().expect("not poisoned").clone();
        stats.received_v6 = self.received_v6.load(Ordering::Relaxed);
    }
}

pub(super) struct Receiver {
    counts: Arc<Counts>,
    halt: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Receiver {
    /// Binds UDP port `port` and starts counting.
    pub(super) fn start(port: u16) -> Result<Self> {
        // [::] takes IPv4 too (as mapped addresses) where the host has IPv6; 0.0.0.0 otherwise.
        let rx = UdpSocket::bind(SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port))
            .or_else(|_| UdpSocket::bind(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port)))
            .map_err(|source| Error::Socket {
                what: format!("bind UDP port {port}"),
                source,
            })?;
        // Wakes up now and then to see whether it should stop.
        rx.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|source| Error::Socket {
                what: format!("set a read timeout on UDP port {port}"),
                source,
            })?;
        let counts = Arc::new(Counts::default());
        let halt = Arc::new(AtomicBool::new(false));
        let thread = {
            let (counts, halt) = (counts.clone(), halt.clone());
            std::thread::spawn(move || receive(&rx, &counts, &halt))
        };
        Ok(Receiver {
            counts,
            halt,
            thread,
        })
    }

    /// Copies the counts so far into `stats`.
    pub(super) fn snapshot(&self, stats: &mut TrafficStats) {
        self.counts.copy_into(stats);
    }

    /// Stops receiving and copies the final counts into `stats`.
    pub(super) fn stop(self, stats: &mut TrafficStats) {
        let Receiver {
            counts,
            halt,
            thread,
        } = self;
        halt.store(true, Ordering::Relaxed);
        let _ = thread.join();
        counts.copy_into(stats);
    }
}

/// Counts the packets that carry [`MAGIC`] until `halt` is set.
fn receive(rx: &UdpSocket, counts: &Counts, halt: &AtomicBool) {
    let mut buf = [0u8; 2048];
    while !halt.load(Ordering::Relaxed) {
        if let Ok((len, peer)) = rx.recv_from(&mut buf) {
            if len >= MAGIC.len() && &buf[..MAGIC.len()] == MAGIC {
                counts.received.fetch_add(1, Ordering::Relaxed);
                counts
                    .received_bytes
                    .fetch_add(len as u64, Ordering::Relaxed);
                let p = peer.ip().to_canonical();
                if p.is_ipv6() {
                    counts.received_v6.fetch_add(1, Ordering::Relaxed);
                }
                let mut from = counts.received_from.lock().expect("not poisoned");
                *from.entry(p).or_insert(0) += 1;
            }
        }
    }
}
