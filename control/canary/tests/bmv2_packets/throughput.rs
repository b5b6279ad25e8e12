//! Benchmark (`#[ignore]`d): BMv2's forwarding rate with Canary monitoring on vs off.

use crate::packets::Packets;
use crate::{udp, LINE2, M};
use canary_core::fabric::{Fabric, RuleOp};
use canary_core::model::{epoch_tag, wire, SwitchConfig};
use canary_core::FlowId;
use canary_switch::entries::{self, Change, Write};
use std::time::{Duration, Instant};

/// A `usize` from the environment, or `default`.
fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Packets {
    /// Canary on (both switches monitors, USM rules at s1 and DSM rules at s2 for `monitored`,
    /// HH rules whose eta is never exceeded, so HashPipe runs for every other packet but no
    /// digest is sent) or off (monitor 0, mask 0, no Canary rules): the same program.
    fn monitoring(&mut self, on: bool, monitored: &[FlowId]) {
        let (s1, s2) = (self.sw("s1"), self.sw("s2"));
        let bf = self.prep.codec.masks[s1 as usize];
        let mut ops = vec![
            RuleOp::InstallHh {
                switch: s2,
                path_bf: bf,
                eta: u32::MAX,
            },
            RuleOp::InstallHh {
                switch: s1,
                path_bf: 0,
                eta: u32::MAX,
            },
        ];
        for &f in monitored {
            ops.push(RuleOp::InstallUsm {
                switch: s1,
                flow: f,
            });
            ops.push(RuleOp::InstallDsm {
                switch: s2,
                flow: f,
                path_bf: bf,
            });
        }
        if !on {
            ops = ops.iter().map(RuleOp::as_removal).collect();
        }
        let failed = self.rt.block_on(self.fabric.apply(&ops));
        assert!(failed.is_empty(), "{failed:?}");
        for s in [s1, s2] {
            let c = SwitchConfig {
                monitor: on,
                mask: if on {
                    self.prep.codec.masks[s as usize]
                } else {
                    0
                },
                epoch: epoch_tag(0),
            };
            let w = Write {
                change: Change::Modify,
                entry: entries::config(c),
            };
            let failed = self.rt.block_on(self.fabric.driver_mut(s).write_now(&[w]));
            assert!(failed.is_empty(), "{failed:?}");
        }
    }

    /// Sends `frames` from h1 keeping at most `window` of them inside the fabric (so BMv2 is
    /// always busy and never overrun); returns (delivered to h2, packets per second from the
    /// first send to the last arrival).
    fn blast(&self, frames: &[Vec<u8>], window: usize) -> (usize, f64) {
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        let got = AtomicUsize::new(0);
        let (rx, tx, got) = (&self.hosts[1], &self.hosts[0], &got);
        let start = Instant::now();
        let last = std::thread::scope(|sc| {
            let rx = sc.spawn(move || {
                let mut last = Instant::now();
                while got.load(Relaxed) < frames.len() {
                    match rx.recv_timeout(Duration::from_secs(5)) {
                        Some(fr) if fr.len() >= 14 && fr[12..14] == [0x08, 0x00] => {
                            got.fetch_add(1, Relaxed);
                            last = Instant::now();
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
                last
            });
            for (sent, fr) in frames.iter().enumerate() {
                // A lost packet would hold the window forever: give up waiting after 200 ms.
                let wait = Instant::now();
                while sent - got.load(Relaxed).min(sent) >= window
                    && wait.elapsed() < Duration::from_millis(200)
                {
                    std::thread::sleep(Duration::from_micros(20));
                }
                tx.send(fr);
            }
            rx.join().unwrap()
        });
        let n = got.load(Relaxed);
        (n, n as f64 / (last - start).as_secs_f64())
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Benchmark, not a test: BMv2's forwarding rate on the two-switch line with Canary monitoring
/// on against the same program with monitoring off, interleaved in one run (the order alternates
/// per round); prints every round and the median of the per-round on/off ratios.
/// Run as root (docs/dataplane.md records a result):
/// `cargo test -p canary --test bmv2_packets -- --ignored --nocapture bmv2_monitoring_throughput`
/// Environment: CANARY_BENCH_ROUNDS (15), CANARY_BENCH_PACKETS (3000 per round and
/// configuration), CANARY_BENCH_WINDOW (16 packets in flight; BMv2 drops from bursts of ~32
/// back-to-back frames on its veth, so more in flight measures loss, not forwarding).
#[test]
#[ignore = "benchmark; see docs/dataplane.md"]
fn bmv2_monitoring_throughput() {
    let rounds = env_or("CANARY_BENCH_ROUNDS", 15);
    let packets = env_or("CANARY_BENCH_PACKETS", 3000);
    let window = env_or("CANARY_BENCH_WINDOW", 16);
    let Some(mut fab) = Packets::start("bmv2_monitoring_throughput", LINE2, None) else {
        return;
    };
    // No per-hop taps: they would copy every frame into a socket nobody reads.
    fab.taps.clear();
    // 32 UDP flows; half of them monitored (USM at s1, DSM at s2), the other half go through
    // HashPipe at both switches (all of them do at s1, which has no DSM rules).
    let flows: Vec<FlowId> = (0..32).map(|i| udp(5000 + i)).collect();
    let monitored = &flows[..16];
    let frames: Vec<Vec<u8>> = (0..packets)
        .map(|i| wire::ip_frame(M, &flows[i % flows.len()], i as u16, &[0xab; 18]))
        .collect();
    fab.hosts[1].set_recv_buffer(8 << 20);
    // Warm-up, not counted.
    fab.monitoring(true, monitored);
    fab.blast(&frames[..packets.min(2000)], window);
    fab.monitoring(false, monitored);

    let (mut on, mut off, mut ratios, mut lost) = (Vec::new(), Vec::new(), Vec::new(), 0);
    eprintln!("round  config  delivered/sent  packets/s");
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        let mut rate = [0.0; 2];
        for monitoring in order {
            fab.monitoring(monitoring, monitored);
            let (n, pps) = fab.blast(&frames, window);
            if monitoring {
                fab.monitoring(false, monitored);
            }
            let name = if monitoring { "on" } else { "off" };
            eprintln!("{round:5}  {name:6}  {n:>7}/{packets:<7}  {pps:9.0}");
            lost += packets - n;
            rate[usize::from(!monitoring)] = pps;
        }
        on.push(rate[0]);
        off.push(rate[1]);
        ratios.push(rate[0] / rate[1]);
    }
    // The "on" rounds really counted: s1's USM and s2's DSM hold packets.
    fab.monitoring(true, monitored);
    fab.blast(&frames[..100], window);
    let (s1, s2) = (fab.sw("s1"), fab.sw("s2"));
    let (usm, _) = fab
        .rt
        .block_on(fab.fabric.peek_meters(s1, epoch_tag(0)))
        .unwrap();
    let (_, dsm) = fab
        .rt
        .block_on(fab.fabric.peek_meters(s2, epoch_tag(0)))
        .unwrap();
    assert!(
        usm.occupied() > 0 && dsm.occupied() > 0,
        "the on rounds counted nothing"
    );
    let (mon, moff) = (median(&mut on), median(&mut off));
    let mut sorted = ratios.clone();
    let ratio = median(&mut sorted);
    eprintln!(
        "median packets/s: monitoring on {mon:.0}, off {moff:.0}; per-round on/off ratios {:?}",
        ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>()
    );
    eprintln!(
        "packets lost in all rounds: {lost} of {}",
        2 * rounds * packets
    );
    eprintln!("RESULT on/off throughput ratio (median of {rounds} rounds): {ratio:.3}");
}
