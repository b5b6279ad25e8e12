//! A whole fabric of real BMv2 switches for daemon tests, without Mininet: every switch runs in
//! one network namespace (`{tag}fab`, IPv6 off) joined by veth pairs; each host is its own
//! namespace with one veth to its switch. Hosts send UDP traffic from raw sockets with
//! heavy-tailed flow sizes. The daemon runs inside the fabric namespace, where the switches'
//! gRPC and Thrift servers listen on 127.0.0.1. Everything is removed on drop.

#![allow(dead_code)]

mod daemon;
mod traffic;

// Each test binary uses a part of the lab.
#[allow(unused_imports)]
pub use daemon::{http_get_in_ns, read_json, wait_child, Daemon};
#[allow(unused_imports)]
pub use traffic::{udp_frame, Traffic};

use crate::bmv2::{repo_root, Lab};
use canary_core::topo::{PortMap, SwitchIx, Topology};
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, Bmv2Program};
use canary_switch::p4info::P4InfoFile;
use canary_switch::switches::{port_map, SwitchesFile};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const GRPC_BASE: u16 = 50100;
/// MTU of links between switches: a host's 1500-byte frame gains the 8-byte shim inside the
/// fabric (docs/dataplane.md, "MTU").
pub const FABRIC_MTU: u32 = 9000;
pub const THRIFT_BASE: u16 = 9100;

pub struct FabricLab {
    pub lab: Lab,
    pub topo: Topology,
    pub fab: String,
    pub p4dir: PathBuf,
    /// Per switch: its BMv2 ports (port, interface).
    pub ports: Vec<Vec<(u32, String)>>,
    /// Per switch: the PID of its simple_switch_grpc.
    pub pids: Vec<i32>,
    /// Per host: (namespace, IPv4 as a number).
    pub hosts: Vec<(String, u32)>,
    /// Interface in the fabric namespace on `from`'s side of each directed link `[from, to]`.
    pub link_iface: BTreeMap<(SwitchIx, SwitchIx), String>,
    pub switches_yaml: PathBuf,
    /// One fabric at a time per test binary: two dozen BMv2 processes per lab share two cores,
    /// and two labs at once starve each other into dropping packets. Last field: released
    /// after everything above is torn down.
    _serial: Serial,
}

static BUSY: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
static FREED: std::sync::Condvar = std::sync::Condvar::new();

/// Holds the one-lab-at-a-time slot (a guard that, unlike a MutexGuard, may cross threads).
struct Serial;

impl Serial {
    fn take() -> Self {
        let mut busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
        while *busy {
            busy = FREED.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy = true;
        Serial
    }
}

impl Drop for Serial {
    fn drop(&mut self) {
        *BUSY.lock().unwrap_or_else(|e| e.into_inner()) = false;
        FREED.notify_one();
    }
}

fn sh(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// How a lab is built.
#[derive(Clone, Debug, Default)]
pub struct LabOptions {
    /// The directed link whose frames the test carries itself (so it can hold them in flight):
    /// its two ends are joined through a namespace `{tag}relay` with veths `rin` (from the
    /// link's first switch) and `rout` (to its second).
    pub relay: Option<(SwitchIx, SwitchIx)>,
    /// Hosts as a user leaves them: IPv6 on (with the topology's IPv6 address), ARP on. Off,
    /// they say nothing of their own (packet tests send crafted frames only).
    pub live_hosts: bool,
}

impl FabricLab {
    /// Builds the namespaces, links and switches of `topo` (switches started, not configured),
    /// hosts that speak only when the test makes them.
    pub fn new(topo: Topology) -> Self {
        Self::with(topo, LabOptions::default())
    }

    /// [`FabricLab::new`] with options.
    pub fn with(topo: Topology, opts: LabOptions) -> Self {
        let serial = Serial::take();
        let mut lab = Lab::new();
        let p4dir = lab.dir.path().join("p4");
        crate::bmv2::build(&p4dir);
        let fab = lab.netns("fab");
        let n = topo.switches.len();
        let mut ports: Vec<Vec<(u32, String)>> = vec![Vec::new(); n];
        let mut names: Vec<BTreeMap<String, u32>> = vec![BTreeMap::new(); n];
        let mut next_port = vec![1u32; n];
        let mut take = |s: usize, neighbor: &str, ports: &mut Vec<Vec<(u32, String)>>| {
            let p = next_port[s];
            next_port[s] += 1;
            let iface = format!("s{s}-{p}");
            ports[s].push((p, iface.clone()));
            names[s].insert(neighbor.to_string(), p);
            iface
        };
        let mut hosts = Vec::new();
        for (h, host) in topo.hosts.iter().enumerate() {
            let s = host.switch as usize;
            let iface = take(s, &host.name, &mut ports);
            let ns = if opts.live_hosts {
                lab.netns_v6(&format!("h{h}"))
            } else {
                lab.netns(&format!("h{h}"))
            };
            lab.veth(&fab, &iface, &ns, "eth0");
            let ip = canary_core::topo::ipv4(host.addr);
            sh(Command::new("ip").args([
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{ip}/8"),
                "dev",
                "eth0",
            ]));
            if opts.live_hosts {
                let ip6 = std::net::Ipv6Addr::from(host.addr6);
                sh(Command::new("ip").args([
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("{ip6}/16"),
                    "dev",
                    "eth0",
                    "nodad",
                ]));
            }
            hosts.push((ns, host.addr));
        }
        let mut link_iface = BTreeMap::new();
        for l in topo.links.iter().step_by(2) {
            let (a, b) = (l.from as usize, l.to as usize);
            let ia = take(a, topo.name_of(l.to), &mut ports);
            let ib = take(b, topo.name_of(l.from), &mut ports);
            if opts.relay == Some((l.from, l.to)) || opts.relay == Some((l.to, l.from)) {
                let r = lab.netns("relay");
                let (first, second) = if opts.relay == Some((l.from, l.to)) {
                    (&ia, &ib)
                } else {
                    (&ib, &ia)
                };
                lab.veth(&fab, first, &r, "rin");
                lab.veth(&r, "rout", &fab, second);
                for (ns, i) in [
                    (&fab, first),
                    (&r, &"rin".to_string()),
                    (&r, &"rout".to_string()),
                    (&fab, second),
                ] {
                    lab.mtu(ns, i, FABRIC_MTU);
                }
            } else {
                lab.veth(&fab, &ia, &fab, &ib);
                lab.mtu(&fab, &ia, FABRIC_MTU);
                lab.mtu(&fab, &ib, FABRIC_MTU);
            }
            link_iface.insert((l.from, l.to), ia);
            link_iface.insert((l.to, l.from), ib);
        }
        let mut yaml = String::from("switches:\n");
        for (i, sw) in topo.switches.iter().enumerate() {
            let _ = writeln!(
                yaml,
                "  {}:\n    grpc: 127.0.0.1:{}\n    device_id: {}\n    thrift: 127.0.0.1:{}\n    ports:",
                sw.name,
                GRPC_BASE + i as u16,
                i + 1,
                THRIFT_BASE + i as u16
            );
            for (nb, p) in &names[i] {
                let _ = writeln!(yaml, "      {nb}: {p}");
            }
        }
        let switches_yaml = lab.dir.path().join("switches.yaml");
        std::fs::write(&switches_yaml, yaml).unwrap();
        let mut me = FabricLab {
            lab,
            topo,
            fab,
            p4dir,
            ports,
            pids: vec![0; n],
            hosts,
            link_iface,
            switches_yaml,
            _serial: serial,
        };
        for s in 0..n {
            me.start_switch(s);
        }
        me
    }

    /// Starts (or restarts) switch `s` with an empty pipeline, as a rebooted switch comes back.
    pub fn start_switch(&mut self, s: usize) {
        let json = self.p4dir.join("canary.json");
        let log = self.lab.dir.path().join(format!("s{s}.log"));
        let mut cmd = Command::new(repo_root().join("bmv2/run-switch.sh"));
        cmd.arg(&json)
            .arg((s + 1).to_string())
            .arg((GRPC_BASE + s as u16).to_string())
            .arg((THRIFT_BASE + s as u16).to_string())
            .arg(&log)
            .args(["-n", &self.fab]);
        for (p, iface) in &self.ports[s] {
            cmd.arg(format!("{p}@{iface}"));
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "run-switch.sh: {out:?}");
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        self.pids[s] = pid;
        self.lab.track_pid(pid);
    }

    /// Waits until switch `s`'s gRPC server accepts connections: a restarted BMv2 takes from a
    /// fraction of a second to ten on a loaded machine. False if it does not within `limit`.
    pub fn wait_switch_listening(&self, s: usize, limit: Duration) -> bool {
        let (ns, port) = (self.fab.clone(), GRPC_BASE + s as u16);
        std::thread::spawn(move || {
            crate::bmv2::enter_netns(&ns);
            canary_testkit::wait_listening(port, limit)
        })
        .join()
        .unwrap_or(false)
    }

    /// Kills switch `s` the hard way (SIGKILL), as a crash would.
    pub fn kill_switch(&mut self, s: usize) {
        // SAFETY: kill(2) of a process this lab started, by its PID.
        unsafe { libc::kill(self.pids[s], libc::SIGKILL) };
        // Not our child (run-switch.sh's), so nothing to reap: wait until the PID is gone.
        let deadline = Instant::now() + Duration::from_secs(5);
        while unsafe { libc::kill(self.pids[s], 0) } == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Random loss on the egress of `from`'s interface toward `to`: only `from → to` drops.
    /// `tc netem` when the kernel has it; otherwise an nftables netdev egress rule dropping a
    /// random `loss_pct`% (kernels built without sch_netem, as on some VMs).
    pub fn link_loss(&self, from: &str, to: &str, loss_pct: f64) {
        let a = self.topo.switch(from).unwrap();
        let b = self.topo.switch(to).unwrap();
        let iface = &self.link_iface[&(a, b)];
        let netem = Command::new("tc")
            .args([
                "-n", &self.fab, "qdisc", "add", "dev", iface, "root", "netem", "loss",
            ])
            .arg(format!("{loss_pct}%"))
            .output()
            .is_ok_and(|o| o.status.success());
        if netem {
            return;
        }
        let per_million = (loss_pct * 1e4).round() as u64;
        let nft = |args: &str| {
            sh(Command::new("ip")
                .args(["netns", "exec", &self.fab, "nft"])
                .arg(args))
        };
        nft("add table netdev canary_loss");
        nft(&format!(
            "add chain netdev canary_loss {iface} {{ type filter hook egress device \"{iface}\" priority 0; }}"
        ));
        // numgen's range ends at 999999: every frame is a rule without it.
        let random = if per_million >= 1_000_000 {
            String::new()
        } else {
            format!("numgen random mod 1000000 < {per_million} ")
        };
        nft(&format!(
            "add rule netdev canary_loss {iface} {random}counter drop"
        ));
    }

    /// A BMv2 driver for every switch of the lab, as `canary run` makes them: bound through the
    /// lab's switches file, running the lab's compiled program; with the ports the file gives.
    /// Call from inside the fabric's namespace, where the switches' servers listen.
    pub fn bmv2_drivers(&self, t: &Topology) -> (Vec<Bmv2Driver>, PortMap, Arc<Bmv2Program>) {
        let path = self.switches_yaml.display().to_string();
        let bound = SwitchesFile::load(&path).unwrap().bind(&path, t).unwrap();
        let ports = port_map(&bound);
        let p4info = P4InfoFile::load(&self.p4dir.join("canary.p4info.bin")).unwrap();
        let json = std::fs::read(self.p4dir.join("canary.json")).unwrap();
        let prog = Arc::new(Bmv2Program::new(p4info, json).unwrap());
        let drivers = bound
            .into_iter()
            .map(|b| {
                let monitor = t.switches[b.ix as usize].monitor;
                Bmv2Driver::new(b, monitor, prog.clone(), Bmv2Options::default())
            })
            .collect();
        (drivers, ports, prog)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.lab.dir.path().join(name)
    }
}
