//! A packet as one switch of the data plane sees it: the Canary shim, if the frame carries one,
//! and what the parser found after it. Payload bytes are not modelled; [`super::wire`] maps
//! real frames to and from this view.

use crate::flow::FlowId;
use crate::sketch::FlowHashes;

/// IEEE 802 Local Experimental EtherType 1: the Canary shim follows the Ethernet header.
pub const ETHERTYPE_CANARY: u16 = 0x88B5;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_LLDP: u16 = 0x88CC;

/// Bits of the epoch tag a marked packet and a meter bucket carry.
pub const EPOCH_TAG_BITS: u32 = 15;

/// Distinct tags in use: `2..2^15`. Tags 0 and 1 are never an epoch's, so a register cell
/// that was never written, or was cleared, is stale in every epoch.
pub const EPOCH_TAGS: u64 = (1 << EPOCH_TAG_BITS) - 2;

/// The epoch tag of epoch `epoch`: `2 + epoch mod (2^15 - 2)`. Its bit 0 is the epoch's parity
/// (the count of tags is even, so the parity alternates across the wrap too).
pub fn epoch_tag(epoch: u64) -> u16 {
    (2 + epoch % EPOCH_TAGS) as u16
}

/// The marks a DSM in the epoch with tag `tag` counts: `[previous, tag, next]` (wrapping). Flips
/// are not simultaneous, so packets arrive marked one epoch behind or ahead; a mark further off
/// comes from a switch that missed flips, and counting it would take buckets of its parity from
/// the epoch counting there now.
pub fn epoch_window(tag: u16) -> [u16; 3] {
    let (first, last) = (2u16, (1 + EPOCH_TAGS) as u16);
    let prev = if tag <= first { last } else { tag - 1 };
    let next = if tag >= last { first } else { tag + 1 };
    [prev, tag, next]
}

/// The Canary shim: 8 bytes between the Ethernet header and the frame's own EtherType, on fabric
/// links only. Pushed by the first switch, removed before a frame leaves to a host.
///
/// Wire format (docs/dataplane.md): pathBF (32), counted (1), epoch tag (15), EtherType (16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Shim {
    /// Bloom filter of the switches since the last monitor.
    pub path_bf: u32,
    /// An upstream USM counted this packet, in the meters of epoch `epoch`.
    pub counted: bool,
    /// The epoch tag of the upstream USM that counted it (0 when not counted).
    pub epoch: u16,
}

/// What follows the Ethernet header and the shim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L3 {
    /// IPv4 or IPv6. `flow`'s ports are 0 unless TCP or UDP follows in a first (or only)
    /// fragment (IPv4 without options; IPv6 with no extension header).
    Ip {
        flow: FlowId,
        hashes: FlowHashes,
        /// The destination is a unicast address (not multicast, not 255.255.255.255).
        unicast: bool,
    },
    /// Anything else: ARP, LLDP, any other EtherType, and a host's own frame of EtherType
    /// [`ETHERTYPE_CANARY`].
    Other,
}

/// One packet as the switch sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub shim: Option<Shim>,
    /// The EtherType after the shim (the frame's own, restored when the shim is removed).
    pub ether_type: u16,
    pub l3: L3,
}

impl Packet {
    /// An IP packet of `flow` as a host sends it.
    pub fn ip(flow: FlowId) -> Self {
        let hashes = FlowHashes::of(&flow);
        let (ether_type, unicast) = if flow.is_v4() {
            let d = flow.dst.as_v4().unwrap_or(0);
            (ETHERTYPE_IPV4, d >> 28 != 0xe && d != u32::MAX)
        } else {
            (ETHERTYPE_IPV6, flow.dst.0[0] != 0xff)
        };
        Packet {
            shim: None,
            ether_type,
            l3: L3::Ip {
                flow,
                hashes,
                unicast,
            },
        }
    }

    /// A frame that is not IP, of `ether_type`.
    pub fn other(ether_type: u16) -> Self {
        Packet {
            shim: None,
            ether_type,
            l3: L3::Other,
        }
    }
}
