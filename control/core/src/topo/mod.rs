//! Topology: switches, hosts, directed links, ECMP routing, monitor placement, path segments and
//! sub-problems.
//!
//! A [`Topology`] is built either by the fat-tree generator ([`fattree`]) or from a YAML file
//! ([`yaml`]); both produce the same layered Clos description. Layer 0 switches carry hosts and are
//! always monitors (the paper requires full coverage of inter-switch links); the top layer can be
//! monitors too ([`MonitorPlacement`]).

pub mod addressing;
pub mod fattree;
pub mod forwarding;
pub mod ports;
mod routing;
pub mod segments;
pub mod yaml;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;

pub use addressing::{default_ipv6, rack_prefixes, Prefix};
pub use forwarding::{Flood, FloodTree, ForwardingState, Replica, Route};
pub use ports::{PortEnd, PortEnds, PortMap, SwitchPorts};
pub use routing::{ecmp_mix, mix64, Routing};
pub use segments::{Segment, SegmentId, Segments, SubProblem};

/// Index of a switch in [`Topology::switches`].
pub type SwitchIx = u32;
/// Index of a directed link in [`Topology::links`].
pub type LinkIx = u32;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switch {
    pub name: String,
    /// 0 = bottom (hosts attach here), increasing upwards.
    pub layer: u8,
    /// The switch ID encoded into pathBFs (the paper suggests a MAC address). The pathBF audit may
    /// reassign it to make every segment decodable.
    pub id: u32,
    pub monitor: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub name: String,
    /// IPv4 address as a number.
    pub addr: u32,
    /// IPv6 address as a number (by default [`addressing::default_ipv6`] of `addr`).
    pub addr6: u128,
    pub switch: SwitchIx,
}

/// A directed inter-switch link `[from, to]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Link {
    pub from: SwitchIx,
    pub to: SwitchIx,
}

/// Where meters are placed. The bottom layer is always monitored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum MonitorPlacement {
    Bottom,
    #[default]
    TopAndBottom,
}

impl std::str::FromStr for MonitorPlacement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "bottom" => Ok(Self::Bottom),
            "top+bottom" | "top-bottom" => Ok(Self::TopAndBottom),
            _ => Err(format!(
                "unknown monitor placement `{s}` (expected `bottom` or `top+bottom`)"
            )),
        }
    }
}

impl fmt::Display for MonitorPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Bottom => "bottom",
            Self::TopAndBottom => "top+bottom",
        })
    }
}

/// A layered Clos fabric.
#[derive(Clone, Debug)]
pub struct Topology {
    /// `fattree:K` or the file's `name`.
    pub name: String,
    pub switches: Vec<Switch>,
    pub hosts: Vec<Host>,
    /// Directed links; every physical link appears in both directions.
    pub links: Vec<Link>,
    by_name: HashMap<String, SwitchIx>,
    /// Looked up on every hop of every simulated flow's route: Fx, not SipHash.
    link_ix: FxHashMap<(SwitchIx, SwitchIx), LinkIx>,
    neighbors: Vec<Vec<SwitchIx>>,
    hosts_of: Vec<Vec<u32>>,
}

/// Errors in building a topology: each names the switch or link at fault.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TopologyError {
    #[error("switch `{0}` is defined twice")]
    DuplicateSwitch(String),
    #[error("link [{0}, {1}] names unknown switch `{2}`")]
    UnknownSwitch(String, String, String),
    #[error("link [{0}, {0}] connects a switch to itself")]
    SelfLoop(String),
    #[error("link [{0}, {1}] is listed twice")]
    DuplicateLink(String, String),
    #[error(
        "link [{0}, {1}] joins layers {2} and {3}: links must join the same or adjacent layers"
    )]
    LayerSkip(String, String, u8, u8),
    #[error("switch `{0}` has hosts but is not in layer 0")]
    HostsAboveBottom(String),
    #[error("the topology has no switch in layer 0 with hosts")]
    NoHosts,
    #[error("switch `{0}` cannot reach switch `{1}`: the fabric is not connected")]
    Disconnected(String, String),
    #[error("fat-tree radix k must be even and at least 2, got {0}")]
    BadRadix(u32),
    #[error("switch `{0}` is given ID {1:#x}, already used by `{2}`")]
    DuplicateId(String, u32, String),
}

impl Topology {
    /// Builds the indexes; checks names, links and layering.
    pub fn new(
        name: String,
        switches: Vec<Switch>,
        hosts: Vec<Host>,
        undirected: &[(SwitchIx, SwitchIx)],
    ) -> Result<Self, TopologyError> {
        let mut by_name = HashMap::with_capacity(switches.len());
        let mut by_id: HashMap<u32, SwitchIx> = HashMap::with_capacity(switches.len());
        for (i, s) in switches.iter().enumerate() {
            if by_name.insert(s.name.clone(), i as SwitchIx).is_some() {
                return Err(TopologyError::DuplicateSwitch(s.name.clone()));
            }
            if let Some(other) = by_id.insert(s.id, i as SwitchIx) {
                return Err(TopologyError::DuplicateId(
                    s.name.clone(),
                    s.id,
                    switches[other as usize].name.clone(),
                ));
            }
        }
        let mut links = Vec::with_capacity(undirected.len() * 2);
        let mut link_ix =
            FxHashMap::with_capacity_and_hasher(undirected.len() * 2, Default::default());
        let mut neighbors = vec![Vec::new(); switches.len()];
        for &(a, b) in undirected {
            let (na, nb) = (&switches[a as usize], &switches[b as usize]);
            if a == b {
                return Err(TopologyError::SelfLoop(na.name.clone()));
            }
            if na.layer.abs_diff(nb.layer) > 1 {
                return Err(TopologyError::LayerSkip(
                    na.name.clone(),
                    nb.name.clone(),
                    na.layer,
                    nb.layer,
                ));
            }
            for (f, t) in [(a, b), (b, a)] {
                if link_ix.insert((f, t), links.len() as LinkIx).is_some() {
                    return Err(TopologyError::DuplicateLink(
                        na.name.clone(),
                        nb.name.clone(),
                    ));
                }
                links.push(Link { from: f, to: t });
            }
            neighbors[a as usize].push(b);
            neighbors[b as usize].push(a);
        }
        for n in &mut neighbors {
            n.sort_unstable();
        }
        let mut hosts_of = vec![Vec::new(); switches.len()];
        for (i, h) in hosts.iter().enumerate() {
            let s = &switches[h.switch as usize];
            if s.layer != 0 {
                return Err(TopologyError::HostsAboveBottom(s.name.clone()));
            }
            hosts_of[h.switch as usize].push(i as u32);
        }
        if hosts.is_empty() {
            return Err(TopologyError::NoHosts);
        }
        let topo = Self {
            name,
            switches,
            hosts,
            links,
            by_name,
            link_ix,
            neighbors,
            hosts_of,
        };
        topo.check_connected()?;
        Ok(topo)
    }

    fn check_connected(&self) -> Result<(), TopologyError> {
        let mut seen = vec![false; self.switches.len()];
        let mut stack = vec![0 as SwitchIx];
        seen[0] = true;
        while let Some(u) = stack.pop() {
            for &v in &self.neighbors[u as usize] {
                if !seen[v as usize] {
                    seen[v as usize] = true;
                    stack.push(v);
                }
            }
        }
        match seen.iter().position(|s| !s) {
            None => Ok(()),
            Some(i) => Err(TopologyError::Disconnected(
                self.switches[0].name.clone(),
                self.switches[i].name.clone(),
            )),
        }
    }

    /// The same fabric with the physical links of `out` (either direction named) removed: what
    /// routing sees while they are out of service. Switches keep their indices; links are
    /// renumbered, so look them up by their ends.
    pub fn without_links(&self, out: &[LinkIx]) -> Result<Topology, TopologyError> {
        let gone: std::collections::HashSet<(SwitchIx, SwitchIx)> = out
            .iter()
            .flat_map(|&l| {
                let k = self.links[l as usize];
                [(k.from, k.to), (k.to, k.from)]
            })
            .collect();
        let undirected: Vec<(SwitchIx, SwitchIx)> = self
            .links
            .iter()
            .filter(|k| k.from < k.to && !gone.contains(&(k.from, k.to)))
            .map(|k| (k.from, k.to))
            .collect();
        Topology::new(
            self.name.clone(),
            self.switches.clone(),
            self.hosts.clone(),
            &undirected,
        )
    }

    pub fn switch(&self, name: &str) -> Option<SwitchIx> {
        self.by_name.get(name).copied()
    }

    pub fn name_of(&self, s: SwitchIx) -> &str {
        &self.switches[s as usize].name
    }

    pub fn link(&self, from: SwitchIx, to: SwitchIx) -> Option<LinkIx> {
        self.link_ix.get(&(from, to)).copied()
    }

    /// The directed link named `[from, to]`.
    pub fn link_by_names(&self, from: &str, to: &str) -> Option<LinkIx> {
        self.link(self.switch(from)?, self.switch(to)?)
    }

    /// `[from, to]` names of a directed link.
    pub fn link_names(&self, l: LinkIx) -> [&str; 2] {
        let link = self.links[l as usize];
        [self.name_of(link.from), self.name_of(link.to)]
    }

    /// The link in the other direction.
    pub fn reverse(&self, l: LinkIx) -> LinkIx {
        let link = self.links[l as usize];
        self.link(link.to, link.from)
            .expect("links are stored in both directions")
    }

    pub fn neighbors(&self, s: SwitchIx) -> &[SwitchIx] {
        &self.neighbors[s as usize]
    }

    /// Host indices attached to a switch.
    pub fn hosts_of(&self, s: SwitchIx) -> &[u32] {
        &self.hosts_of[s as usize]
    }

    pub fn top_layer(&self) -> u8 {
        self.switches.iter().map(|s| s.layer).max().unwrap_or(0)
    }

    pub fn monitors(&self) -> impl Iterator<Item = SwitchIx> + '_ {
        (0..self.switches.len() as SwitchIx).filter(|&s| self.switches[s as usize].monitor)
    }

    /// The placement the monitors follow: `TopAndBottom` when a switch above layer 0 is one.
    /// (With a single layer both placements are the same; that reads as `Bottom`.)
    pub fn monitor_placement(&self) -> MonitorPlacement {
        if self.switches.iter().any(|s| s.monitor && s.layer > 0) {
            MonitorPlacement::TopAndBottom
        } else {
            MonitorPlacement::Bottom
        }
    }

    /// Sets which switches host meters: layer 0 always, the top layer too for `TopAndBottom`.
    pub fn place_monitors(&mut self, placement: MonitorPlacement) {
        let top = self.top_layer();
        for s in &mut self.switches {
            s.monitor =
                s.layer == 0 || (placement == MonitorPlacement::TopAndBottom && s.layer == top);
        }
    }

    /// Number of undirected inter-switch links.
    pub fn undirected_links(&self) -> usize {
        self.links.len() / 2
    }
}

/// Default switch ID: a 32-bit value derived from the name, standing in for the MAC address the
/// paper suggests. Deterministic, so a topology file without IDs always yields the same IDs.
pub fn default_switch_id(name: &str) -> u32 {
    crate::sketch::hash::crc32(name.as_bytes())
}

/// Formats an IPv4 address held as a number.
pub fn ipv4(addr: u32) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::from(addr)
}
