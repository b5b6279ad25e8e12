//! Flow identity: the IPv4 5-tuple, 104 bits, exactly as the data plane hashes and matches it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A flow's 5-tuple. Its wire form (`to_bytes`) is the field list the P4 program hashes and
/// matches on, in this order: srcAddr, dstAddr, protocol, srcPort, dstPort (13 bytes, big-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FlowId {
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
}

impl FlowId {
    pub const BYTES: usize = 13;

    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[0..4].copy_from_slice(&self.src.to_be_bytes());
        b[4..8].copy_from_slice(&self.dst.to_be_bytes());
        b[8] = self.proto;
        b[9..11].copy_from_slice(&self.sport.to_be_bytes());
        b[11..13].copy_from_slice(&self.dport.to_be_bytes());
        b
    }
}

impl fmt::Display for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ip = |a: u32| std::net::Ipv4Addr::from(a);
        write!(
            f,
            "{}:{}->{}:{}/{}",
            ip(self.src),
            self.sport,
            ip(self.dst),
            self.dport,
            self.proto
        )
    }
}
