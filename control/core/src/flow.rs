//! Flow identity: the 5-tuple of an IPv4 or IPv6 flow, exactly as the data plane hashes and
//! matches it.
//!
//! The data plane keys every flow on 128-bit addresses; an IPv4 address is carried as its
//! IPv4-mapped IPv6 form (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2), which never appears as the
//! address of a real IPv6 packet, so the two families cannot collide. The hashes (and so every
//! meter index) are computed over the family's own wire form ([`FlowId::key_bytes`]): 13 bytes for
//! IPv4, 37 for IPv6 (docs/dataplane.md).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IP address as Canary keys flows: 16 bytes, big-endian; IPv4 as IPv4-mapped IPv6.
///
/// Bytes rather than a `u128`: a flow ID is stored in every meter bucket of the simulator and of
/// every harvest, and a `u128` would align it to 16 bytes (48-byte IDs instead of 38).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Addr(pub [u8; 16]);

const V4_MAPPED: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

impl Addr {
    /// An IPv4 address (as a number, `10.0.0.1` = `0x0a00_0001`).
    pub const fn v4(a: u32) -> Self {
        let b = a.to_be_bytes();
        Addr([
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, b[0], b[1], b[2], b[3],
        ])
    }

    /// An IPv6 address (as a number).
    pub const fn v6(a: u128) -> Self {
        Addr(a.to_be_bytes())
    }

    /// The IPv4 address, if this is one.
    pub fn as_v4(&self) -> Option<u32> {
        (self.0[..12] == V4_MAPPED)
            .then(|| u32::from_be_bytes([self.0[12], self.0[13], self.0[14], self.0[15]]))
    }

    pub fn is_v4(&self) -> bool {
        self.0[..12] == V4_MAPPED
    }

    /// All 128 bits as a number (an IPv4 address in its mapped form).
    pub fn to_u128(&self) -> u128 {
        u128::from_be_bytes(self.0)
    }

    pub fn ip(&self) -> IpAddr {
        match self.as_v4() {
            Some(a) => IpAddr::V4(Ipv4Addr::from(a)),
            None => IpAddr::V6(Ipv6Addr::from(self.0)),
        }
    }
}

impl From<IpAddr> for Addr {
    fn from(a: IpAddr) -> Self {
        match a {
            IpAddr::V4(a) => Addr::v4(a.into()),
            IpAddr::V6(a) => Addr(a.octets()),
        }
    }
}

impl From<Ipv4Addr> for Addr {
    fn from(a: Ipv4Addr) -> Self {
        Addr::v4(a.into())
    }
}

impl From<Ipv6Addr> for Addr {
    fn from(a: Ipv6Addr) -> Self {
        Addr(a.octets())
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.ip().fmt(f)
    }
}

impl fmt::Debug for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl std::str::FromStr for Addr {
    type Err = std::net::AddrParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<IpAddr>().map(Addr::from)
    }
}

impl Serialize for Addr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Addr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|_| serde::de::Error::custom(format!("`{s}` is not an IP address")))
    }
}

/// A flow's 5-tuple. Its wire form ([`FlowId::key_bytes`]) is the field list the P4 program
/// hashes, in this order: srcAddr, dstAddr, protocol, srcPort, dstPort, big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FlowId {
    pub src: Addr,
    pub dst: Addr,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
}

/// A flow key's wire form: 13 bytes (IPv4) or 37 (IPv6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyBytes {
    buf: [u8; FlowId::V6_BYTES],
    len: usize,
}

impl std::ops::Deref for KeyBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl FlowId {
    /// Bytes of an IPv4 key: 4 + 4 + 1 + 2 + 2.
    pub const V4_BYTES: usize = 13;
    /// Bytes of an IPv6 key: 16 + 16 + 1 + 2 + 2.
    pub const V6_BYTES: usize = 37;

    /// An IPv4 flow (addresses as numbers).
    pub const fn v4(src: u32, dst: u32, proto: u8, sport: u16, dport: u16) -> Self {
        FlowId {
            src: Addr::v4(src),
            dst: Addr::v4(dst),
            proto,
            sport,
            dport,
        }
    }

    /// An IPv6 flow (addresses as numbers).
    pub const fn v6(src: u128, dst: u128, proto: u8, sport: u16, dport: u16) -> Self {
        FlowId {
            src: Addr::v6(src),
            dst: Addr::v6(dst),
            proto,
            sport,
            dport,
        }
    }

    /// An IPv4 flow: both addresses are IPv4. (A packet's addresses are of one family.)
    pub fn is_v4(&self) -> bool {
        self.src.is_v4() && self.dst.is_v4()
    }

    /// The key the data plane hashes: IPv4 addresses as 4 bytes, IPv6 as 16.
    pub fn key_bytes(&self) -> KeyBytes {
        let mut buf = [0u8; Self::V6_BYTES];
        let mut n = 0;
        let mut put = |b: &[u8]| {
            buf[n..n + b.len()].copy_from_slice(b);
            n += b.len();
        };
        match (self.src.as_v4(), self.dst.as_v4()) {
            (Some(s), Some(d)) => {
                put(&s.to_be_bytes());
                put(&d.to_be_bytes());
            }
            _ => {
                put(&self.src.0);
                put(&self.dst.0);
            }
        }
        put(&[self.proto]);
        put(&self.sport.to_be_bytes());
        put(&self.dport.to_be_bytes());
        KeyBytes { buf, len: n }
    }

    /// The 13-byte key of an IPv4 flow (what the paper's 104-bit flow ID is); `None` for IPv6.
    pub fn v4_bytes(&self) -> Option<[u8; Self::V4_BYTES]> {
        let (s, d) = (self.src.as_v4()?, self.dst.as_v4()?);
        let mut b = [0u8; Self::V4_BYTES];
        b[0..4].copy_from_slice(&s.to_be_bytes());
        b[4..8].copy_from_slice(&d.to_be_bytes());
        b[8] = self.proto;
        b[9..11].copy_from_slice(&self.sport.to_be_bytes());
        b[11..13].copy_from_slice(&self.dport.to_be_bytes());
        Some(b)
    }
}

impl fmt::Display for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_v4() {
            write!(
                f,
                "{}:{}->{}:{}/{}",
                self.src, self.sport, self.dst, self.dport, self.proto
            )
        } else {
            write!(
                f,
                "[{}]:{}->[{}]:{}/{}",
                self.src, self.sport, self.dst, self.dport, self.proto
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_is_mapped_and_keys_on_13_bytes() {
        let f = FlowId::v4(0x0a00_0001, 0xc0a8_0102, 17, 53, 65535);
        assert!(f.is_v4());
        assert_eq!(f.src.to_string(), "10.0.0.1");
        assert_eq!(f.src.to_u128(), 0xffff_0a00_0001);
        assert_eq!(
            &*f.key_bytes(),
            &[10, 0, 0, 1, 192, 168, 1, 2, 17, 0, 53, 255, 255]
        );
        assert_eq!(f.v4_bytes().unwrap().as_slice(), &*f.key_bytes());
        assert_eq!(f.to_string(), "10.0.0.1:53->192.168.1.2:65535/17");
    }

    #[test]
    fn ipv6_keys_on_37_bytes() {
        let f = FlowId::v6(0xfd00 << 112 | 1, 0xfd00 << 112 | 2, 6, 1000, 80);
        assert!(!f.is_v4());
        let k = f.key_bytes();
        assert_eq!(k.len(), 37);
        assert_eq!(k[0..2], [0xfd, 0]);
        assert_eq!(k[15], 1);
        assert_eq!(k[31], 2);
        assert_eq!(k[32..], [6, 0x03, 0xe8, 0, 80]);
        assert_eq!(f.v4_bytes(), None);
        assert_eq!(f.to_string(), "[fd00::1]:1000->[fd00::2]:80/6");
    }

    #[test]
    fn addresses_parse_and_serialize_as_text() {
        let a: Addr = "10.1.2.3".parse().unwrap();
        assert_eq!(a, Addr::v4(0x0a01_0203));
        let b: Addr = "fd00::1:2".parse().unwrap();
        assert_eq!(b.as_v4(), None);
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"10.1.2.3\"");
        let back: Addr = serde_json::from_str("\"fd00::1:2\"").unwrap();
        assert_eq!(back, b);
        assert!(serde_json::from_str::<Addr>("\"nope\"").is_err());
    }
}
