//! What the data plane and the experiments record: pathBF values packets carry, Flock probe
//! traces and pcap captures, each decoded against the fabric it describes.

use crate::fixtures::fattree4;
use canary_core::localize::flock_trace::FlockTrace;
use canary_core::pathbf::{self, Decoded, DecodedId, PathBfCodec, PathBfParams};
use canary_core::topo::{fattree::fattree, MonitorPlacement, Routing, Segments, Topology};
use canary_lab::eval::trace::{failing_links, read_probes};
use canary_lab::overhead::traffic::read_pcap;
use std::collections::HashSet;
use std::sync::OnceLock;

/// Up to four bytes, little-endian, the missing ones zero.
fn le32(b: &[u8]) -> u32 {
    let mut a = [0; 4];
    a[..b.len().min(4)].copy_from_slice(&b[..b.len().min(4)]);
    u32::from_le_bytes(a)
}

/// pathBF parameters, then which fabric and what to run, then (downstream switch, pathBF)
/// values to decode: bits (4 bytes, little-endian), hashes (4), flags (1: bit 0 bottom-only
/// monitors, bit 1 audit, bit 2 repair), then records of 9 bytes: mode (1; bit 0 takes a
/// segment's own value), switch (4), value (4).
pub fn pathbf(data: &[u8]) {
    if data.len() < 9 {
        return;
    }
    let params = PathBfParams {
        bits: le32(&data[0..4]),
        hashes: le32(&data[4..8]),
    };
    let flags = data[8];
    let (topo, segments) = pathbf_fabric(flags & 1 == 1);
    let codec = match PathBfCodec::new(topo, segments, params) {
        Ok(c) => c,
        Err(e) => {
            assert_eq!(params.validate(), Err(e));
            return;
        }
    };
    let full = if params.bits == 32 {
        u32::MAX
    } else {
        (1 << params.bits) - 1
    };
    for &m in &codec.masks {
        assert!(m != 0 && m & !full == 0 && m.count_ones() <= params.hashes);
    }
    let n = topo.switches.len() as u32 + 2;
    for r in data[9..].chunks_exact(9) {
        let sw = le32(&r[1..5]) % n;
        let raw = le32(&r[5..9]);
        let bf = if r[0] & 1 == 1 && !codec.segment_bf.is_empty() {
            codec.segment_bf[raw as usize % codec.segment_bf.len()]
        } else {
            raw
        };
        let decoded = codec.decode(sw, bf);
        let short = match &decoded {
            Decoded::Segment(s) => DecodedId::Segment(*s),
            Decoded::Ambiguous(_) => DecodedId::Ambiguous,
            Decoded::Unknown => DecodedId::Unknown,
        };
        assert_eq!(codec.decode_id(sw, bf), short);
        if let Decoded::Segment(s) = decoded {
            assert_eq!(segments.get(s).downstream(), sw);
            assert_eq!(codec.segment_bf[s as usize], bf);
            assert!(codec.passes(segments, s, bf));
        }
    }
    if flags & 2 != 0 {
        let a = pathbf::audit(topo, segments, params).expect("valid parameters");
        assert_eq!(a.segments, segments.len());
    }
    if flags & 4 != 0 {
        let mut t = topo.clone();
        let a = pathbf::repair(&mut t, segments, params, 50).expect("valid parameters");
        let ids: HashSet<u32> = t.switches.iter().map(|s| s.id).collect();
        assert_eq!(ids.len(), t.switches.len(), "repair keeps IDs unique");
        assert!(a.reassigned.len() <= 50 * t.switches.len());
    }
}

/// The k = 4 fat-tree and its segments, with top and bottom monitors or bottom only.
fn pathbf_fabric(bottom_only: bool) -> (&'static Topology, &'static Segments) {
    static F: OnceLock<[(Topology, Segments); 2]> = OnceLock::new();
    let f = F.get_or_init(|| {
        [MonitorPlacement::TopAndBottom, MonitorPlacement::Bottom].map(|p| {
            let t = fattree(4, p).expect("k = 4 is valid");
            let s = Segments::new(&t, &Routing::new(&t));
            (t, s)
        })
    });
    let (t, s) = &f[usize::from(bottom_only)];
    (t, s)
}

/// A Flock trace (`canary eval --flock-trace`), read as text, against the k = 4 fat-tree.
pub fn flock_trace(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let topo = fattree4();
    let probes = read_probes(topo, text, "fuzz.trace");
    let Ok(trace) = FlockTrace::parse(text) else {
        assert!(probes.is_err(), "read_probes took what parse rejects");
        return;
    };
    // What `--export-flock-trace` writes reads back as the same trace.
    let written = trace.to_text();
    let again = FlockTrace::parse(&written)
        .unwrap_or_else(|e| panic!("to_text wrote what parse rejects: {e}\n{written}"));
    assert_eq!(again.to_text(), written);
    for f in failing_links(topo, &trace) {
        assert!((f.link as usize) < topo.links.len());
    }
    if let Ok(probes) = probes {
        for p in probes {
            assert!(p.received <= p.sent);
            assert!(p.links.iter().all(|&l| (l as usize) < topo.links.len()));
        }
    }
}

/// A capture file (`canary overhead --pcap`).
pub fn pcap(data: &[u8]) {
    let Ok((packets, stats)) = read_pcap(data) else {
        return;
    };
    // Every record is a packet or a skip, and takes its 16-byte header at least.
    assert_eq!(packets.len() as u64 + stats.skipped, stats.packets);
    assert!(24 + stats.packets * 16 <= data.len() as u64);
}
