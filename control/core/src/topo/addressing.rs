//! Addresses and prefixes: every host has an IPv4 and an IPv6 address, and every rack (bottom
//! switch) whose hosts share a prefix no other rack's host falls in is routed by that prefix, so
//! a switch's route table grows with racks, not hosts (docs/dataplane.md, "Forwarding").
//!
//! Default IPv6 addresses follow the IPv4 plan: host `w.x.y.z` is `fd00:0:x:y::z` (a unique local
//! address), so a fat-tree rack `10.p.j.0/24` is also `fd00:0:p:j::/64`.

use super::{SwitchIx, Topology};
use crate::flow::Addr;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An address prefix: `addr/len`, `len` counted on the family's own width (≤ 32 for IPv4,
/// ≤ 128 for IPv6). Host bits of `addr` are zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Prefix {
    pub addr: Addr,
    pub len: u8,
}

impl Prefix {
    /// `addr/len` with the host bits cleared. `len` is clamped to the family's width.
    pub fn new(addr: Addr, len: u8) -> Self {
        let len = len.min(if addr.is_v4() { 32 } else { 128 });
        Prefix {
            addr: Addr::v6(addr.to_u128() & mask128(Self::bits128(addr, len))),
            len,
        }
    }

    /// A host route (/32 or /128).
    pub fn host(addr: Addr) -> Self {
        Self::new(addr, if addr.is_v4() { 32 } else { 128 })
    }

    pub fn is_v4(&self) -> bool {
        self.addr.is_v4()
    }

    /// The prefix length on the 128-bit key (IPv4-mapped: 96 + len).
    pub fn len128(&self) -> u8 {
        Self::bits128(self.addr, self.len)
    }

    fn bits128(addr: Addr, len: u8) -> u8 {
        if addr.is_v4() {
            96 + len
        } else {
            len
        }
    }

    pub fn contains(&self, a: Addr) -> bool {
        a.is_v4() == self.is_v4() && a.to_u128() & mask128(self.len128()) == self.addr.to_u128()
    }
}

/// The top `len` bits of 128 set.
fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl fmt::Debug for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl std::str::FromStr for Prefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, l) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}` is not a prefix (ADDRESS/LENGTH)"))?;
        let addr: Addr = a
            .parse()
            .map_err(|_| format!("`{a}` is not an IP address"))?;
        let width = if addr.is_v4() { 32 } else { 128 };
        let len: u8 = l
            .parse()
            .ok()
            .filter(|&n| n <= width)
            .ok_or_else(|| format!("`{l}` is not a prefix length of 0..={width}"))?;
        Ok(Prefix::new(addr, len))
    }
}

/// The default IPv6 address of the host whose IPv4 address is `w.x.y.z`: `fd00:0:x:y::z`.
pub fn default_ipv6(ipv4: u32) -> u128 {
    let [_, x, y, z] = ipv4.to_be_bytes();
    0xfd00u128 << 112 | u128::from(x) << 80 | u128::from(y) << 64 | u128::from(z)
}

/// The prefixes that route to rack `s` (a bottom switch with hosts): per family, the longest
/// common prefix of its hosts' addresses shortened to /24 (IPv4) or /64 (IPv6), or else the
/// common prefix itself, provided no other rack's host falls in it. A family without one is routed
/// host by host.
pub fn rack_prefixes(topo: &Topology, s: SwitchIx) -> Vec<Prefix> {
    let mine = topo.hosts_of(s);
    if mine.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    type AddrOf = fn(&super::Host) -> Addr;
    let families: [(AddrOf, u8); 2] = [(|h| Addr::v4(h.addr), 24), (|h| Addr::v6(h.addr6), 64)];
    for (addr_of, cap) in families {
        let addrs: Vec<Addr> = mine
            .iter()
            .map(|&h| addr_of(&topo.hosts[h as usize]))
            .collect();
        let first = addrs[0];
        let width: u8 = if first.is_v4() { 32 } else { 128 };
        let common = addrs
            .iter()
            .map(|a| (a.to_u128() ^ first.to_u128()).leading_zeros() as u8 - (128 - width))
            .min()
            .unwrap_or(width);
        // A round /24 (/64) when it holds this rack alone, else the hosts' common prefix.
        let fits = |len: u8| {
            let p = Prefix::new(first, len);
            let foreign = topo
                .hosts
                .iter()
                .any(|h| h.switch != s && p.contains(addr_of(h)));
            (!foreign).then_some(p)
        };
        if let Some(p) = fits(common.min(cap)).or_else(|| fits(common)) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{fattree::fattree, MonitorPlacement};

    #[test]
    fn prefixes_parse_print_and_contain() {
        let p: Prefix = "10.1.2.3/24".parse().unwrap();
        assert_eq!(p.to_string(), "10.1.2.0/24");
        assert_eq!(p.len128(), 120);
        assert!(p.contains("10.1.2.200".parse().unwrap()));
        assert!(!p.contains("10.1.3.1".parse().unwrap()));
        assert!(
            !p.contains("::a01:203".parse().unwrap()),
            "IPv6 is another family"
        );
        let q: Prefix = "fd00:0:1:2::5/64".parse().unwrap();
        assert_eq!(q.to_string(), "fd00:0:1:2::/64");
        assert!(q.contains("fd00:0:1:2::9".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<Prefix>().is_err());
        assert!("10.0.0.0".parse::<Prefix>().is_err());
        assert_eq!(Prefix::host("10.0.0.1".parse().unwrap()).len, 32);
    }

    #[test]
    fn ipv6_follows_the_ipv4_plan() {
        let a = default_ipv6(u32::from_be_bytes([10, 3, 1, 2]));
        assert_eq!(Addr::v6(a).to_string(), "fd00:0:3:1::2");
    }

    #[test]
    fn fat_tree_racks_are_slash_24_and_slash_64() {
        let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
        let e = t.switch("edge2_1").unwrap();
        let p = rack_prefixes(&t, e);
        assert_eq!(
            p.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            ["10.2.1.0/24", "fd00:0:2:1::/64"]
        );
        assert!(rack_prefixes(&t, t.switch("core0").unwrap()).is_empty());
    }

    #[test]
    fn a_rack_sharing_its_round_prefix_gets_its_common_prefix() {
        let text = "name: mixed\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: a, addr: 10.0.0.2}, {name: b, addr: 10.0.0.3}]}\n  - {name: s2, layer: 0, hosts: [{name: c, addr: 10.0.0.130}]}\nlinks:\n  - [s1, s2]\n";
        let t = crate::topo::yaml::parse("mixed.yaml", text).unwrap();
        // 10.0.0.0/24 would hold c too: s1 gets its hosts' common prefix, s2 its one host.
        let v4 = |s| {
            rack_prefixes(&t, s)
                .into_iter()
                .filter(Prefix::is_v4)
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(v4(0), ["10.0.0.2/31"]);
        assert_eq!(v4(1), ["10.0.0.130/32"]);
    }
}
