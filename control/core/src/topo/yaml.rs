//! The YAML topology format. One schema describes any layered Clos fabric:
//!
//! ```yaml
//! name: leaf-spine-4x2
//! monitors: top+bottom        # or `bottom`; default top+bottom
//! switches:
//!   - {name: leaf0, layer: 0, hosts: 4}        # hosts: a count, or a list of names
//!   - {name: spine0, layer: 1, id: 0x0a000001} # id: optional pathBF switch ID
//! links:
//!   - [leaf0, spine0]                           # physical link = both directions
//! ```
//!
//! Hosts given as a count are named `{switch}_h{x}`; hosts get addresses 10.a.b.(x+2) where a.b
//! is the switch's position among layer-0 switches (fat-trees use 10.pod.edge.(x+2)). A host
//! listed with `addr` may also give `addr6`; its IPv6 address is otherwise `fd00:0:a:b::(x+2)` for
//! IPv4 `10.a.b.(x+2)` (`addressing::default_ipv6`). Racks are routed by prefix
//! (`addressing::rack_prefixes`).

use super::{default_switch_id, Host, MonitorPlacement, Switch, SwitchIx, Topology, TopologyError};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitors: Option<String>,
    pub switches: Vec<SwitchEntry>,
    pub links: Vec<[String; 2]>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchEntry {
    pub name: String,
    pub layer: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    #[serde(default, skip_serializing_if = "Hosts::is_none")]
    pub hosts: Hosts,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Hosts {
    #[default]
    None,
    Count(u32),
    Named(Vec<HostEntry>),
}

/// A host: just a name (addresses assigned), or a name with its IPv4 address and optionally its
/// IPv6 address (default: `fd00:0:x:y::z` for IPv4 `w.x.y.z`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HostEntry {
    Name(String),
    WithAddr {
        name: String,
        addr: std::net::Ipv4Addr,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        addr6: Option<std::net::Ipv6Addr>,
    },
}

impl Hosts {
    fn is_none(&self) -> bool {
        matches!(self, Hosts::None)
    }
}

/// A topology file that could not be read; the message names the file and the line or field.
#[derive(Debug, thiserror::Error)]
pub enum TopologyFileError {
    #[error("{file}: {path}: {msg}")]
    Syntax {
        file: String,
        path: String,
        msg: String,
    },
    #[error("{file}: {field}: {source}")]
    Invalid {
        file: String,
        field: String,
        source: TopologyError,
    },
    #[error("{file}: monitors: {msg}")]
    Monitors { file: String, msg: String },
    /// A host the file cannot have: a duplicate, or one the address plan has no room for.
    #[error("{file}: {field}: {msg}")]
    Host {
        file: String,
        field: String,
        msg: String,
    },
}

/// Hosts of a switch that get addresses from the plan: 10.a.b.2 to 10.a.b.254 (.0 is the
/// network, .1 left for a gateway, .255 the broadcast).
pub const MAX_PLANNED_HOSTS: usize = 253;

/// Parses a topology file's text; `file` is only used to name it in errors.
pub fn parse(file: &str, text: &str) -> Result<Topology, TopologyFileError> {
    let de = serde_norway::Deserializer::from_str(text);
    let parsed: TopologyFile = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        TopologyFileError::Syntax {
            file: file.to_string(),
            path: if path == "." { "document".into() } else { path },
            msg: crate::yaml_error::message(&e.into_inner().to_string()).to_string(),
        }
    })?;
    build(file, parsed)
}

/// The topology a parsed file describes; `file` is only used to name it in errors.
pub fn build(file: &str, f: TopologyFile) -> Result<Topology, TopologyFileError> {
    let errs = FileErrors { file };
    let placement = match &f.monitors {
        None => MonitorPlacement::TopAndBottom,
        Some(m) => m.parse().map_err(|msg| TopologyFileError::Monitors {
            file: file.to_string(),
            msg,
        })?,
    };
    let mut switches = Vec::with_capacity(f.switches.len());
    let mut hosts = Vec::new();
    // Where each host is in the file, for errors naming both entries of a duplicate.
    let mut host_fields = Vec::new();
    // Layer-0 switches so far: the next one's hosts take addresses 10.a.b.* from this count.
    let mut bottom_seen = 0u32;
    for (i, s) in f.switches.iter().enumerate() {
        let listed = listed_hosts(&errs, i, s)?;
        if !listed.is_empty() && s.layer != 0 {
            return Err(errs.invalid(
                format!("switches[{i}].hosts"),
                TopologyError::HostsAboveBottom(s.name.clone()),
            ));
        }
        if s.layer == 0 {
            for (x, listed) in listed.into_iter().enumerate() {
                let field = format!("switches[{i}].hosts[{x}]");
                let addr = host_addr(&errs, &field, s, bottom_seen, x, &listed)?;
                hosts.push(Host {
                    name: listed.name,
                    addr,
                    addr6: listed.addr6.unwrap_or(super::default_ipv6(addr)),
                    switch: i as SwitchIx,
                });
                host_fields.push(field);
            }
            bottom_seen += 1;
        }
        switches.push(Switch {
            name: s.name.clone(),
            layer: s.layer,
            id: s.id.unwrap_or_else(|| default_switch_id(&s.name)),
            monitor: false,
        });
    }
    check_unique_hosts(&hosts, &host_fields).map_err(|(field, msg)| errs.host(field, msg))?;
    let links = link_ends(&errs, &f)?;
    let mut topo = Topology::new(f.name.clone(), switches, hosts, &links).map_err(|e| {
        let field = match &e {
            TopologyError::DuplicateSwitch(_) | TopologyError::DuplicateId(..) => "switches",
            TopologyError::NoHosts => "switches[*].hosts",
            _ => "links",
        };
        errs.invalid(field.to_string(), e)
    })?;
    topo.place_monitors(placement);
    Ok(topo)
}

/// Makes the errors of one file, each naming it.
struct FileErrors<'a> {
    file: &'a str,
}

impl FileErrors<'_> {
    fn invalid(&self, field: String, source: TopologyError) -> TopologyFileError {
        TopologyFileError::Invalid {
            file: self.file.to_string(),
            field,
            source,
        }
    }

    fn host(&self, field: String, msg: String) -> TopologyFileError {
        TopologyFileError::Host {
            file: self.file.to_string(),
            field,
            msg,
        }
    }
}

/// A host as a switch entry lists it, with the addresses the file gives (if any).
struct ListedHost {
    name: String,
    addr: Option<u32>,
    addr6: Option<u128>,
}

/// The hosts switch entry `i` lists, named and in file order (counted ones named `{switch}_h{x}`).
fn listed_hosts(
    errs: &FileErrors,
    i: usize,
    s: &SwitchEntry,
) -> Result<Vec<ListedHost>, TopologyFileError> {
    let named = |name: String| ListedHost {
        name,
        addr: None,
        addr6: None,
    };
    Ok(match &s.hosts {
        Hosts::None => vec![],
        // Counted hosts all take planned addresses: check before making any.
        Hosts::Count(n) if *n as usize > MAX_PLANNED_HOSTS => {
            return Err(errs.host(
                format!("switches[{i}].hosts"),
                format!(
                    "switch `{}` has {n} hosts, but its addresses 10.x.y.2 to 10.x.y.254 \
                     hold {MAX_PLANNED_HOSTS}; list the hosts with `addr` to place more",
                    s.name
                ),
            ));
        }
        Hosts::Count(n) => (0..*n).map(|x| named(format!("{}_h{x}", s.name))).collect(),
        Hosts::Named(v) => v
            .iter()
            .map(|h| match h {
                HostEntry::Name(n) => named(n.clone()),
                HostEntry::WithAddr { name, addr, addr6 } => ListedHost {
                    name: name.clone(),
                    addr: Some(u32::from(*addr)),
                    addr6: addr6.map(u128::from),
                },
            })
            .collect(),
    })
}

/// The IPv4 address of host `x` of layer-0 switch `s` (the `bottom_seen`-th one): its own, or
/// 10.a.b.(x+2) from the plan, where a.b is `bottom_seen`.
fn host_addr(
    errs: &FileErrors,
    field: &str,
    s: &SwitchEntry,
    bottom_seen: u32,
    x: usize,
    host: &ListedHost,
) -> Result<u32, TopologyFileError> {
    let [hi, lo, a, b] = bottom_seen.to_be_bytes();
    let name = &host.name;
    match host.addr {
        Some(a) => Ok(a),
        None if x >= MAX_PLANNED_HOSTS => Err(errs.host(
            field.to_string(),
            format!(
                "host `{name}` of switch `{}` needs an address, but the plan \
                 10.x.y.2 to 10.x.y.254 holds {MAX_PLANNED_HOSTS} per switch: \
                 give it `addr`",
                s.name
            ),
        )),
        None if [hi, lo] != [0, 0] => Err(errs.host(
            field.to_string(),
            format!(
                "host `{name}` needs an address, but the plan 10.x.y.z has \
                 room for 65536 layer-0 switches: give it `addr`"
            ),
        )),
        None => Ok(u32::from_be_bytes([10, a, b, (x + 2) as u8])),
    }
}

/// The file's links as pairs of switch indices; an unknown switch name is an error at its link.
fn link_ends(
    errs: &FileErrors,
    f: &TopologyFile,
) -> Result<Vec<(SwitchIx, SwitchIx)>, TopologyFileError> {
    let index: std::collections::HashMap<&str, SwitchIx> = f
        .switches
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i as SwitchIx))
        .collect();
    let mut links = Vec::with_capacity(f.links.len());
    for (i, [a, b]) in f.links.iter().enumerate() {
        let lookup = |n: &String| {
            index.get(n.as_str()).copied().ok_or_else(|| {
                errs.invalid(
                    format!("links[{i}]"),
                    TopologyError::UnknownSwitch(a.clone(), b.clone(), n.clone()),
                )
            })
        };
        links.push((lookup(a)?, lookup(b)?));
    }
    Ok(links)
}

/// Rejects a second host with the name, IPv4 or IPv6 address of an earlier one, naming both
/// (`fields[i]` is where host `i` is in the file): the fabric routes to hosts by address, and
/// switches files and fault reports name them.
fn check_unique_hosts(hosts: &[Host], fields: &[String]) -> Result<(), (String, String)> {
    use std::collections::HashMap;
    let (mut names, mut v4, mut v6) = (HashMap::new(), HashMap::new(), HashMap::new());
    for (i, h) in hosts.iter().enumerate() {
        let taken = |first: usize, what: String| {
            let other = &hosts[first];
            (
                fields[i].clone(),
                format!(
                    "host `{}` has {what} of host `{}` ({})",
                    h.name, other.name, fields[first]
                ),
            )
        };
        if let Some(&first) = names.get(h.name.as_str()) {
            let msg = format!(
                "host `{}` is defined twice, first at {}",
                h.name, fields[first]
            );
            return Err((fields[i].clone(), msg));
        }
        if let Some(&first) = v4.get(&h.addr) {
            let a = super::ipv4(h.addr);
            return Err(taken(first, format!("the address {a}")));
        }
        if let Some(&first) = v6.get(&h.addr6) {
            let a = std::net::Ipv6Addr::from(h.addr6);
            return Err(taken(first, format!("the IPv6 address {a}")));
        }
        names.insert(h.name.as_str(), i);
        v4.insert(h.addr, i);
        v6.insert(h.addr6, i);
    }
    Ok(())
}

/// The YAML text of a topology (used to write the files under `topologies/`).
pub fn to_yaml(topo: &Topology, placement: MonitorPlacement) -> String {
    serde_norway::to_string(&to_file(topo, placement)).expect("topology serialises")
}

/// A topology as its file would describe it: every host with its addresses, and a switch's ID
/// where it is not the one its name gives.
pub fn to_file(topo: &Topology, placement: MonitorPlacement) -> TopologyFile {
    TopologyFile {
        name: topo.name.clone(),
        monitors: Some(placement.to_string()),
        switches: topo
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let hs: Vec<HostEntry> = topo
                    .hosts_of(i as SwitchIx)
                    .iter()
                    .map(|&h| {
                        let h = &topo.hosts[h as usize];
                        HostEntry::WithAddr {
                            name: h.name.clone(),
                            addr: super::ipv4(h.addr),
                            addr6: (h.addr6 != super::default_ipv6(h.addr))
                                .then(|| std::net::Ipv6Addr::from(h.addr6)),
                        }
                    })
                    .collect();
                SwitchEntry {
                    name: s.name.clone(),
                    layer: s.layer,
                    id: (s.id != default_switch_id(&s.name)).then_some(s.id),
                    hosts: if hs.is_empty() {
                        Hosts::None
                    } else {
                        Hosts::Named(hs)
                    },
                }
            })
            .collect(),
        links: topo
            .links
            .iter()
            .filter(|l| l.from < l.to)
            .map(|l| {
                [
                    topo.name_of(l.from).to_string(),
                    topo.name_of(l.to).to_string(),
                ]
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
