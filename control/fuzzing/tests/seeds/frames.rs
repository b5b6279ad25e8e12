//! Packets for the pcap seeds: Ethernet, 802.1Q, IPv4 and IPv6 frames and a classic libpcap
//! file.

pub(crate) fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend(ethertype.to_be_bytes());
    f.extend(payload);
    f
}

/// An 802.1Q tag inserted after the MAC addresses.
pub(crate) fn vlan(frame: &[u8]) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend([0x81, 0x00, 0x00, 0x0a]);
    f.extend(&frame[12..]);
    f
}

pub(crate) fn ipv4(proto: u8, src: u32, dst: u32, frag: u16) -> Vec<u8> {
    let mut p = vec![0x45, 0, 0, 40, 0, 1];
    p.extend(frag.to_be_bytes());
    p.extend([64, proto, 0, 0]);
    p.extend(src.to_be_bytes());
    p.extend(dst.to_be_bytes());
    p.extend([0x9c, 0x40, 0x00, 0x50]);
    p.extend([0u8; 16]);
    p
}

pub(crate) fn ipv6(proto: u8) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0, 0, 20, proto, 64];
    p.extend((0xfd00u128 << 112 | 2).to_be_bytes());
    p.extend((0xfd00u128 << 112 | 3).to_be_bytes());
    p.extend([0x14, 0xe9, 0x00, 0x35]);
    p.extend([0u8; 16]);
    p
}

/// A classic libpcap file of `frames`, one per millisecond.
pub(crate) fn pcap(big_endian: bool, nanos: bool, linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let w32 = |b: &mut Vec<u8>, v: u32| {
        b.extend(if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        })
    };
    let w16 = |b: &mut Vec<u8>, v: u16| {
        b.extend(if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        })
    };
    let mut b = Vec::new();
    w32(&mut b, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
    w16(&mut b, 2);
    w16(&mut b, 4);
    w32(&mut b, 0);
    w32(&mut b, 0);
    w32(&mut b, 65535);
    w32(&mut b, linktype);
    for (i, f) in frames.iter().enumerate() {
        w32(&mut b, 1_700_000_000);
        w32(
            &mut b,
            (i as u32 + 1) * if nanos { 1_000_000 } else { 1000 },
        );
        w32(&mut b, f.len() as u32);
        w32(&mut b, f.len() as u32);
        b.extend(f);
    }
    b
}
