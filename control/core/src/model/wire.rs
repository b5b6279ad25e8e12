//! Real frames and the model's view of them: what the P4 parser extracts ([`parse`]), the shim
//! taken out of or put into a frame ([`split`], [`join`]), and builders of the frames the tests
//! send (IPv4 and IPv6 UDP/TCP, ARP, IPv6 neighbour solicitation, LLDP).
//!
//! Shim wire format, 8 bytes after the Ethernet addresses (EtherType [`ETHERTYPE_CANARY`]):
//! pathBF (32 bits), counted (1), epoch tag (15), the frame's own EtherType (16).

use super::packet::*;
use crate::flow::FlowId;
use crate::sketch::FlowHashes;

const ETH: usize = 14;
pub const SHIM_BYTES: usize = 8;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn shim_at(frame: &[u8]) -> Option<(Shim, u16)> {
    let s = frame.get(ETH..ETH + SHIM_BYTES)?;
    let flags = u16::from_be_bytes([s[4], s[5]]);
    Some((
        Shim {
            path_bf: u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
            counted: flags >> 15 == 1,
            epoch: flags & 0x7fff,
        },
        u16::from_be_bytes([s[6], s[7]]),
    ))
}

/// What the parser of `p4src/include/parser.p4` sees in `frame`: a shim if the EtherType is
/// [`ETHERTYPE_CANARY`] (the ingress decides whether a host sent it), then IPv4 or IPv6 and
/// the TCP/UDP ports. A truncated header ends the parse there.
pub fn parse(frame: &[u8]) -> Packet {
    let Some(outer) = be16(frame, 12) else {
        return Packet::other(0);
    };
    let (shim, ether_type, l3_at) = if outer == ETHERTYPE_CANARY {
        match shim_at(frame) {
            Some((s, et)) => (Some(s), et, ETH + SHIM_BYTES),
            None => (None, outer, frame.len()),
        }
    } else {
        (None, outer, ETH)
    };
    let l3 = match ether_type {
        ETHERTYPE_IPV4 => parse_ipv4(&frame[l3_at.min(frame.len())..]),
        ETHERTYPE_IPV6 => parse_ipv6(&frame[l3_at.min(frame.len())..]),
        _ => L3::Other,
    };
    Packet {
        shim,
        ether_type,
        l3,
    }
}

fn ports_of(l4: &[u8], proto: u8, first_fragment: bool) -> (u16, u16) {
    if first_fragment && (proto == 6 || proto == 17) && l4.len() >= 4 {
        (be16(l4, 0).unwrap(), be16(l4, 2).unwrap())
    } else {
        (0, 0)
    }
}

fn parse_ipv4(ip: &[u8]) -> L3 {
    if ip.len() < 20 {
        return L3::Other;
    }
    let ihl = ip[0] & 0xf;
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
    let proto = ip[9];
    let src = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
    let dst = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
    // Ports only right after a 20-byte header, in a first (or only) fragment.
    let (sport, dport) = ports_of(&ip[20..], proto, ihl == 5 && frag == 0);
    let flow = FlowId::v4(src, dst, proto, sport, dport);
    L3::Ip {
        flow,
        hashes: FlowHashes::of(&flow),
        unicast: dst >> 28 != 0xe && dst != u32::MAX,
    }
}

fn parse_ipv6(ip: &[u8]) -> L3 {
    if ip.len() < 40 {
        return L3::Other;
    }
    let next = ip[6];
    let src = u128::from_be_bytes(ip[8..24].try_into().unwrap());
    let dst = u128::from_be_bytes(ip[24..40].try_into().unwrap());
    // Ports only when TCP or UDP is the first next header (no extension headers parsed).
    let (sport, dport) = ports_of(&ip[40..], next, true);
    let flow = FlowId::v6(src, dst, next, sport, dport);
    L3::Ip {
        flow,
        hashes: FlowHashes::of(&flow),
        unicast: dst >> 120 != 0xff,
    }
}

/// `frame` as its sender wrote it, and the shim it carried (`None`: it carried none).
pub fn split(frame: &[u8]) -> (Vec<u8>, Option<Shim>) {
    match (be16(frame, 12), shim_at(frame)) {
        (Some(ETHERTYPE_CANARY), Some((shim, et))) => {
            let mut plain = frame[..12].to_vec();
            plain.extend_from_slice(&et.to_be_bytes());
            plain.extend_from_slice(&frame[ETH + SHIM_BYTES..]);
            (plain, Some(shim))
        }
        _ => (frame.to_vec(), None),
    }
}

/// `plain` (a frame as its sender wrote it) carrying `shim`, or `plain` itself.
pub fn join(plain: &[u8], shim: Option<Shim>) -> Vec<u8> {
    let Some(s) = shim else {
        return plain.to_vec();
    };
    let mut out = plain[..12].to_vec();
    out.extend_from_slice(&ETHERTYPE_CANARY.to_be_bytes());
    out.extend_from_slice(&s.path_bf.to_be_bytes());
    let flags = u16::from(s.counted) << 15 | (s.epoch & 0x7fff);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&plain[12..14]);
    out.extend_from_slice(&plain[ETH..]);
    out
}

/// Ethernet addresses of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Macs {
    pub dst: [u8; 6],
    pub src: [u8; 6],
}

fn eth(m: Macs, ether_type: u16) -> Vec<u8> {
    let mut p = m.dst.to_vec();
    p.extend_from_slice(&m.src);
    p.extend_from_slice(&ether_type.to_be_bytes());
    p
}

fn l4(f: &FlowId, payload: &[u8]) -> Vec<u8> {
    let mut p = f.sport.to_be_bytes().to_vec();
    p.extend_from_slice(&f.dport.to_be_bytes());
    if f.proto == 6 {
        p.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    } else {
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
    }
    p.extend_from_slice(payload);
    p
}

/// A frame of IP flow `f` (UDP, TCP, or any other protocol with `payload` right after the IP
/// header) with IPv4 ID / IPv6 flow label `seq`. Checksums are those of a host that offloads
/// them (zero where the NIC would fill them in): the fabric never looks at them.
pub fn ip_frame(m: Macs, f: &FlowId, seq: u16, payload: &[u8]) -> Vec<u8> {
    let body = if f.proto == 6 || f.proto == 17 {
        l4(f, payload)
    } else {
        payload.to_vec()
    };
    match (f.src.as_v4(), f.dst.as_v4()) {
        (Some(src), Some(dst)) => {
            let mut p = eth(m, ETHERTYPE_IPV4);
            let total = 20 + body.len();
            let mut iph = vec![0x45, 0, (total >> 8) as u8, total as u8];
            iph.extend_from_slice(&seq.to_be_bytes());
            iph.extend_from_slice(&[0x40, 0, 64, f.proto, 0, 0]);
            iph.extend_from_slice(&src.to_be_bytes());
            iph.extend_from_slice(&dst.to_be_bytes());
            let sum: u32 = iph
                .chunks(2)
                .map(|c| u32::from(c[0]) << 8 | u32::from(c[1]))
                .sum();
            let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
            iph[10..12].copy_from_slice(&sum.to_be_bytes());
            p.extend_from_slice(&iph);
            p.extend_from_slice(&body);
            p
        }
        _ => {
            let mut p = eth(m, ETHERTYPE_IPV6);
            p.extend_from_slice(&[0x60, 0, (seq >> 8) as u8, seq as u8]);
            p.extend_from_slice(&(body.len() as u16).to_be_bytes());
            p.extend_from_slice(&[f.proto, 64]);
            p.extend_from_slice(&f.src.0);
            p.extend_from_slice(&f.dst.0);
            p.extend_from_slice(&body);
            p
        }
    }
}

/// An ARP request from `sender` (MAC, IPv4) for `target`'s IPv4 address, broadcast.
pub fn arp_request(sender_mac: [u8; 6], sender: u32, target: u32) -> Vec<u8> {
    let mut p = eth(
        Macs {
            dst: [0xff; 6],
            src: sender_mac,
        },
        ETHERTYPE_ARP,
    );
    p.extend_from_slice(&[0, 1, 0x08, 0, 6, 4, 0, 1]);
    p.extend_from_slice(&sender_mac);
    p.extend_from_slice(&sender.to_be_bytes());
    p.extend_from_slice(&[0; 6]);
    p.extend_from_slice(&target.to_be_bytes());
    p
}

/// An IPv6 neighbour solicitation from `src` (MAC, address) for `target`, sent to the target's
/// solicited-node multicast group (ICMPv6 type 135, checksum left 0: the fabric ignores it).
pub fn neighbour_solicitation(src_mac: [u8; 6], src: u128, target: u128) -> Vec<u8> {
    let group = 0xff02_0000_0000_0000_0000_0001_ff00_0000u128 | (target & 0xff_ffff);
    let g = group.to_be_bytes();
    let dst_mac = [0x33, 0x33, g[12], g[13], g[14], g[15]];
    let mut icmp = vec![135, 0, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(&target.to_be_bytes());
    icmp.extend_from_slice(&[1, 1]);
    icmp.extend_from_slice(&src_mac);
    let mut p = eth(
        Macs {
            dst: dst_mac,
            src: src_mac,
        },
        ETHERTYPE_IPV6,
    );
    p.extend_from_slice(&[0x60, 0, 0, 0]);
    p.extend_from_slice(&(icmp.len() as u16).to_be_bytes());
    p.extend_from_slice(&[58, 255]);
    p.extend_from_slice(&src.to_be_bytes());
    p.extend_from_slice(&g);
    p.extend_from_slice(&icmp);
    p
}

/// An LLDP frame from `src_mac` (chassis ID = MAC, port ID `port`, TTL 120) to the nearest-bridge
/// group address.
pub fn lldp(src_mac: [u8; 6], port: &str) -> Vec<u8> {
    let mut p = eth(
        Macs {
            dst: [0x01, 0x80, 0xc2, 0, 0, 0x0e],
            src: src_mac,
        },
        ETHERTYPE_LLDP,
    );
    let tlv = |p: &mut Vec<u8>, t: u16, v: &[u8]| {
        p.extend_from_slice(&(t << 9 | v.len() as u16).to_be_bytes());
        p.extend_from_slice(v);
    };
    let mut chassis = vec![4];
    chassis.extend_from_slice(&src_mac);
    tlv(&mut p, 1, &chassis);
    let mut pid = vec![7];
    pid.extend_from_slice(port.as_bytes());
    tlv(&mut p, 2, &pid);
    tlv(&mut p, 3, &[0, 120]);
    tlv(&mut p, 0, &[]);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Macs = Macs {
        dst: [2, 0, 0, 0, 0, 2],
        src: [2, 0, 0, 0, 0, 1],
    };

    #[test]
    fn ipv4_and_ipv6_frames_parse_to_their_flows() {
        for f in [
            FlowId::v4(0x0a00_0101, 0x0a00_0202, 17, 1000, 2000),
            FlowId::v4(0x0a00_0101, 0x0a00_0202, 6, 1000, 80),
            FlowId::v6(0xfd00 << 112 | 1, 0xfd00 << 112 | 2, 17, 1000, 2000),
            FlowId::v6(0xfd00 << 112 | 1, 0xfd00 << 112 | 2, 6, 1000, 80),
        ] {
            let p = parse(&ip_frame(M, &f, 7, b"hello"));
            assert_eq!(p.shim, None);
            match p.l3 {
                L3::Ip { flow, unicast, .. } => {
                    assert_eq!(flow, f);
                    assert!(unicast);
                }
                L3::Other => panic!("{f} parsed as other"),
            }
        }
        // ICMP: ports 0; multicast: not unicast.
        let icmp = FlowId::v4(0x0a00_0101, 0x0a00_0202, 1, 0, 0);
        assert!(
            matches!(parse(&ip_frame(M, &icmp, 1, &[8, 0, 0, 0])).l3, L3::Ip { flow, .. } if flow == icmp)
        );
        let mcast = FlowId::v4(0x0a00_0101, 0xe000_00fb, 17, 5353, 5353);
        assert!(matches!(
            parse(&ip_frame(M, &mcast, 1, b"")).l3,
            L3::Ip { unicast: false, .. }
        ));
    }

    #[test]
    fn a_first_fragment_keeps_ports_a_later_one_does_not() {
        let f = FlowId::v4(0x0a00_0101, 0x0a00_0202, 17, 1000, 2000);
        let mut fr = ip_frame(M, &f, 7, b"x");
        fr[ETH + 6] = 0x20; // MF set, offset 0: still the first fragment
        assert!(matches!(parse(&fr).l3, L3::Ip { flow, .. } if flow.sport == 1000));
        fr[ETH + 7] = 1; // offset 8 bytes
        assert!(matches!(parse(&fr).l3, L3::Ip { flow, .. } if flow.sport == 0 && flow.dport == 0));
    }

    #[test]
    fn the_shim_round_trips() {
        let f = FlowId::v4(0x0a00_0101, 0x0a00_0202, 17, 1000, 2000);
        let plain = ip_frame(M, &f, 7, b"hello");
        let s = Shim {
            path_bf: 0xdead_beef,
            counted: true,
            epoch: 0x5a5a,
        };
        let framed = join(&plain, Some(s));
        assert_eq!(framed.len(), plain.len() + SHIM_BYTES);
        assert_eq!(framed[12..14], [0x88, 0xb5]);
        assert_eq!(framed[18..20], [0xda, 0x5a]);
        let p = parse(&framed);
        assert_eq!(p.shim, Some(s));
        assert_eq!(p.ether_type, ETHERTYPE_IPV4);
        assert!(matches!(p.l3, L3::Ip { flow, .. } if flow == f));
        assert_eq!(split(&framed), (plain.clone(), Some(s)));
        assert_eq!(split(&plain), (plain.clone(), None));
        assert_eq!(join(&plain, None), plain);
    }

    #[test]
    fn other_frames_are_other() {
        let arp = arp_request([2, 0, 0, 0, 0, 1], 0x0a00_0101, 0x0a00_0202);
        assert_eq!(arp.len(), 42);
        assert_eq!(parse(&arp), Packet::other(ETHERTYPE_ARP));
        let l = lldp([2, 0, 0, 0, 0, 1], "eth0");
        assert_eq!(parse(&l), Packet::other(ETHERTYPE_LLDP));
        let ns = neighbour_solicitation([2, 0, 0, 0, 0, 1], 0xfd00 << 112 | 1, 0xfd00 << 112 | 2);
        assert_eq!(ns[0..3], [0x33, 0x33, 0xff]);
        assert!(matches!(parse(&ns).l3, L3::Ip { unicast: false, flow, .. } if flow.proto == 58));
        assert_eq!(parse(&[1, 2, 3]), Packet::other(0));
    }
}
