//! `canary traffic`: the testbed's traffic generator, one process per host.
//!
//! It keeps `--flows` UDP flows open at once, each to a random other host address (`--dests`,
//! IPv4 or IPv6) from its own socket, so from its own source port: every flow is a distinct
//! 5-tuple. The kernel's own stack sends them, so ARP and IPv6 neighbour discovery cross the
//! fabric as a user's hosts would make them. Flow sizes (packets)
//! are Pareto-distributed (`--shape`, `--min-packets`, capped at `--max-packets`): most flows are
//! short, a few carry most packets, the mix Canary's heavy-hitter selection is built for. The host
//! sends `--rate` packets per second in all, evenly paced, each packet to one of its open flows
//! chosen at random; a finished flow is replaced by a new one (new destination, new source port).
//!
//! The same process receives on `--port` (every host's flows go to that port, so no ICMP
//! port-unreachable comes back into the fabric) and counts what it gets: the sum over hosts of
//! sent minus received is the fabric's end-to-end loss, which is how the testbed checks that
//! BMv2 itself does not drop at the chosen rate.
//!
//! On SIGTERM/SIGINT (or after `--duration`) the sender stops, the receiver drains for
//! `--drain-ms`, and the statistics go to `--stats` as JSON (also rewritten once a second while
//! running). Every random choice comes from `--seed`.

mod receiver;

use crate::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use receiver::Receiver;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Marks our packets, so strays are not counted as received.
const MAGIC: &[u8; 8] = b"CNRYTRAF";

#[derive(clap::Args, Debug, Clone)]
pub struct TrafficArgs {
    /// This host's addresses, comma-separated (never a destination); the first names it.
    #[arg(long, value_delimiter = ',', required = true)]
    pub me: Vec<IpAddr>,
    /// Comma-separated addresses (IPv4 or IPv6) of the hosts to send to (this host's own are
    /// skipped). A host listed by both its addresses gets flows of both families.
    #[arg(long, value_delimiter = ',', required = true)]
    pub dests: Vec<IpAddr>,
    /// Packets per second this host sends, all flows together.
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// Flows open at once.
    #[arg(long, default_value_t = 4)]
    pub flows: usize,
    /// Pareto shape of flow sizes (smaller: heavier tail).
    #[arg(long, default_value_t = 1.2)]
    pub shape: f64,
    /// Smallest flow, in packets (the Pareto scale).
    #[arg(long, default_value_t = 20)]
    pub min_packets: u64,
    /// Largest flow, in packets.
    #[arg(long, default_value_t = 100_000)]
    pub max_packets: u64,
    /// UDP payload bytes per packet (at least 16).
    #[arg(long, default_value_t = 200)]
    pub payload: usize,
    /// UDP port every host receives on.
    #[arg(long, default_value_t = 5001)]
    pub port: u16,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop after this many seconds (0: run until SIGTERM/SIGINT).
    #[arg(long, default_value_t = 0.0)]
    pub duration: f64,
    /// Receive only, this long, before sending: every host's receiver must be up before any
    /// packet flies (a packet to a host not yet listening would be lost and draw an ICMP error).
    #[arg(long, default_value_t = 2000)]
    pub start_delay_ms: u64,
    /// Receive only until this file exists (then `--start-delay-ms` more), so the sending of
    /// every host can start the moment the fabric is programmed. Polled every 10 ms.
    #[arg(long)]
    pub start_file: Option<PathBuf>,
    /// After the sender stops, keep receiving this long.
    #[arg(long, default_value_t = 1500)]
    pub drain_ms: u64,
    /// Write the statistics here as JSON (once a second and at exit).
    #[arg(long)]
    pub stats: Option<PathBuf>,
}

/// What one host sent and received.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct TrafficStats {
    pub me: String,
    /// Every address this host sends from (`--me`): IPv4 first, then IPv6 when dual-stack.
    pub addrs: Vec<String>,
    pub sent: u64,
    pub send_errors: u64,
    pub received: u64,
    pub received_bytes: u64,
    pub flows_started: u64,
    pub flows_finished: u64,
    /// Packets sent more than 50 ms after their slot (the pacer fell behind: the CPU is short).
    pub late: u64,
    pub elapsed_s: f64,
    pub rate: f64,
    pub running: bool,
    /// Packets sent to each destination and received from each source: host-pair loss.
    pub sent_to: BTreeMap<IpAddr, u64>,
    pub received_from: BTreeMap<IpAddr, u64>,
    /// Of `sent` and `received`, over IPv6.
    pub sent_v6: u64,
    pub received_v6: u64,
}

/// The pure part: which flow comes next (destination and size), from a seeded RNG.
pub struct FlowSource {
    rng: ChaCha8Rng,
    dests: Vec<IpAddr>,
    shape: f64,
    min: u64,
    max: u64,
}

impl FlowSource {
    pub fn new(a: &TrafficArgs) -> Result<Self> {
        let dests: Vec<IpAddr> = a
            .dests
            .iter()
            .copied()
            .filter(|d| !a.me.contains(d))
            .collect();
        if dests.is_empty() {
            let message = format!("no destination other than --me {:?}", a.me);
            return Err(Error::arg("--dests", message));
        }
        if !(a.shape > 0.0 && a.shape.is_finite()) {
            return Err(Error::arg("--shape", format!("{} must be > 0", a.shape)));
        }
        if a.min_packets < 1 || a.max_packets < a.min_packets {
            let arg = format!(
                "--min-packets {} / --max-packets {}",
                a.min_packets, a.max_packets
            );
            return Err(Error::arg(arg, "need 1 <= min <= max"));
        }
        Ok(FlowSource {
            rng: ChaCha8Rng::seed_from_u64(a.seed),
            dests,
            shape: a.shape,
            min: a.min_packets,
            max: a.max_packets,
        })
    }

    /// Pareto(scale = min, shape) by inversion, rounded up, capped at max.
    pub fn size(&mut self) -> u64 {
        let u: f64 = 1.0 - self.rng.random::<f64>(); // (0, 1]
        let x = self.min as f64 / u.powf(1.0 / self.shape);
        (x.ceil() as u64).clamp(self.min, self.max)
    }

    pub fn next_flow(&mut self) -> (IpAddr, u64) {
        let d = self.dests[self.rng.random_range(0..self.dests.len())];
        (d, self.size())
    }

    pub fn pick(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n)
    }

    pub fn unit(&mut self) -> f64 {
        self.rng.random()
    }
}

struct Flow {
    sock: UdpSocket,
    dest: IpAddr,
    remaining: u64,
}

fn open_flow(src: &mut FlowSource, port: u16) -> Result<Flow> {
    let (dest, size) = src.next_flow();
    let any: IpAddr = match dest {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let sock = UdpSocket::bind(SocketAddr::new(any, 0)).map_err(|source| Error::Socket {
        what: "bind a flow's UDP socket".into(),
        source,
    })?;
    sock.connect(SocketAddr::new(dest, port))
        .map_err(|source| Error::Socket {
            what: format!("connect to {dest}:{port}"),
            source,
        })?;
    Ok(Flow {
        sock,
        dest,
        remaining: size,
    })
}

fn write_stats(path: &Path, s: &TrafficStats) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let json = serde_json::to_vec_pretty(s).map_err(|source| Error::Json {
        path: path.into(),
        source,
    })?;
    let write = |path: &Path, source| Error::Write {
        what: "statistics",
        path: path.into(),
        source,
    };
    std::fs::write(&tmp, json).map_err(|e| write(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| write(path, e))
}

/// Sets `stop` on the first SIGTERM or SIGINT.
fn watch_signals(stop: Arc<AtomicBool>) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Signals)?;
    let (mut term, mut int) = rt
        .block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            Ok::<_, std::io::Error>((
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
            ))
        })
        .map_err(Error::Signals)?;
    std::thread::spawn(move || {
        rt.block_on(async {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        });
        stop.store(true, Ordering::SeqCst);
    });
    Ok(())
}

/// `canary traffic`: runs the generator until SIGTERM/SIGINT (or `--duration`).
pub fn main(a: &TrafficArgs) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    watch_signals(stop.clone())?;
    run(a, &stop).map(|_| ())
}

/// Runs the generator until `stop` is set (or `--duration`); returns the final statistics.
pub fn run(a: &TrafficArgs, stop: &AtomicBool) -> Result<TrafficStats> {
    if !(a.rate > 0.0 && a.rate.is_finite()) {
        return Err(Error::arg("--rate", format!("{} must be > 0", a.rate)));
    }
    if a.flows < 1 {
        return Err(Error::arg("--flows", "at least 1"));
    }
    if a.payload < 16 {
        return Err(Error::arg("--payload", "at least 16 bytes"));
    }
    let mut src = FlowSource::new(a)?;
    let receiver = Receiver::start(a.port)?;
    let mut stats = TrafficStats {
        me: a.me[0].to_string(),
        addrs: a.me.iter().map(|x| x.to_string()).collect(),
        rate: a.rate,
        running: true,
        ..Default::default()
    };
    let mut sender = Sender::open(a, &mut src, &mut stats)?;
    if let Some(f) = &a.start_file {
        while !f.exists() && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    std::thread::sleep(Duration::from_millis(a.start_delay_ms));
    let sent_for = sender.send_paced(a, stop, &mut src, &receiver, &mut stats)?;
    std::thread::sleep(Duration::from_millis(a.drain_ms));
    receiver.stop(&mut stats);
    stats.elapsed_s = sent_for;
    stats.running = false;
    if let Some(p) = &a.stats {
        write_stats(p, &stats)?;
    }
    eprintln!(
        "traffic {}: sent {} in {:.1} s ({:.0}/s), {} send errors, {} late, received {}, {} flows",
        stats.me,
        stats.sent,
        sent_for,
        stats.sent as f64 / sent_for.max(1e-9),
        stats.send_errors,
        stats.late,
        stats.received,
        stats.flows_started
    );
    Ok(stats)
}

/// The sending half: the open flows and the packet they send.
struct Sender {
    flows: Vec<Flow>,
    /// [`MAGIC`], then the packet's sequence number, then zeros.
    payload: Vec<u8>,
    port: u16,
}

impl Sender {
    /// Opens `--flows` flows.
    fn open(a: &TrafficArgs, src: &mut FlowSource, stats: &mut TrafficStats) -> Result<Self> {
        let mut flows = Vec::with_capacity(a.flows);
        for _ in 0..a.flows {
            flows.push(open_flow(src, a.port)?);
            stats.flows_started += 1;
        }
        let mut payload = vec![0u8; a.payload];
        payload[..MAGIC.len()].copy_from_slice(MAGIC);
        Ok(Sender {
            flows,
            payload,
            port: a.port,
        })
    }

    /// Sends `--rate` packets a second until `stop` (or `--duration`), writing the statistics
    /// once a second; returns how long it sent, in seconds.
    fn send_paced(
        &mut self,
        a: &TrafficArgs,
        stop: &AtomicBool,
        src: &mut FlowSource,
        receiver: &Receiver,
        stats: &mut TrafficStats,
    ) -> Result<f64> {
        let interval = Duration::from_secs_f64(1.0 / a.rate);
        let start = Instant::now();
        // A random phase, so hosts started together do not send in lockstep.
        let mut next = start + interval.mul_f64(src.unit());
        let mut last_stats = start;
        let deadline = (a.duration > 0.0).then(|| start + Duration::from_secs_f64(a.duration));
        while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            } else if now - next > Duration::from_millis(50) {
                stats.late += 1;
                // Fell behind by more than 50 ms: drop the backlog rather than burst it.
                if now - next > Duration::from_millis(500) {
                    next = now;
                }
            }
            next += interval;
            self.send_one(src, stats)?;
            if last_stats.elapsed() >= Duration::from_secs(1) {
                last_stats = Instant::now();
                receiver.snapshot(stats);
                stats.elapsed_s = start.elapsed().as_secs_f64();
                if let Some(p) = &a.stats {
                    write_stats(p, stats)?;
                }
            }
        }
        Ok(start.elapsed().as_secs_f64())
    }

    /// Sends one packet on a random open flow; a flow that has sent its last is replaced.
    fn send_one(&mut self, src: &mut FlowSource, stats: &mut TrafficStats) -> Result<()> {
        let i = src.pick(self.flows.len());
        let seq = stats.sent;
        self.payload[8..16].copy_from_slice(&seq.to_be_bytes());
        let flow = &mut self.flows[i];
        match flow.sock.send(&self.payload) {
            Ok(_) => {
                stats.sent += 1;
                stats.sent_v6 += u64::from(flow.dest.is_ipv6());
                *stats.sent_to.entry(flow.dest).or_insert(0) += 1;
            }
            Err(_) => stats.send_errors += 1,
        }
        flow.remaining -= 1;
        if flow.remaining == 0 {
            stats.flows_finished += 1;
            *flow = open_flow(src, self.port)?;
            stats.flows_started += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
