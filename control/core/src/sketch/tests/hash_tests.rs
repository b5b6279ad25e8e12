use super::random_flows;
use crate::sketch::*;
use crate::FlowId;
use std::collections::HashMap;

/// Bitwise CRC in BMv2's formulation (`calculations.cpp`): each input byte reflected and fed
/// MSB-first into the register, the final remainder reflected, then xored.
fn bmv2_style(data: &[u8], width: u32, poly: u64, init: u64, xorout: u64) -> u64 {
    let mask = u64::MAX >> (64 - width);
    let top = 1u64 << (width - 1);
    let mut r = init;
    for &byte in data {
        r ^= u64::from(byte.reverse_bits()) << (width - 8);
        for _ in 0..8 {
            r = if r & top != 0 {
                (r << 1) ^ poly
            } else {
                r << 1
            } & mask;
        }
    }
    (r.reverse_bits() >> (64 - width)) ^ xorout
}

#[test]
fn check_values() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc16(b"123456789"), 0xBB3D);
}

#[test]
fn crcs_match_bmv2_parameters() {
    for (i, f) in random_flows(1, 200).iter().enumerate() {
        let bytes = f.key_bytes();
        let data = &bytes[..i % 14];
        let c32 = bmv2_style(data, 32, 0x04C1_1DB7, 0xFFFF_FFFF, 0xFFFF_FFFF);
        let c16 = bmv2_style(data, 16, 0x8005, 0, 0);
        assert_eq!(u64::from(crc32(data)), c32);
        assert_eq!(u64::from(crc16(data)), c16);
    }
}

#[test]
fn flow_hashes_hash_the_wire_form() {
    let f = super::flow(0xC0A8_0001);
    let h = FlowHashes::of(&f);
    assert_eq!(h.c32, crc32(&f.key_bytes()));
    assert_eq!(h.c16, crc16(&f.key_bytes()));
}

#[test]
fn flow_hashes_equal_the_catalogue_crcs() {
    let mut flows = random_flows(11, 5_000);
    // Every value in every byte position.
    for v in 0..=255u8 {
        let mut b = [0u8; FlowId::V4_BYTES];
        for i in 0..FlowId::V4_BYTES {
            b[i] = v;
            flows.push(FlowId::v4(
                u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                b[8],
                u16::from_be_bytes([b[9], b[10]]),
                u16::from_be_bytes([b[11], b[12]]),
            ));
            b[i] = 0;
        }
    }
    for f in &flows {
        let h = FlowHashes::of(f);
        assert_eq!(h.c32, crc32(&f.key_bytes()), "{f}");
        assert_eq!(h.c16, crc16(&f.key_bytes()), "{f}");
    }
}

/// IPv6 flows hash their 37-byte key: every byte position, and random flows.
#[test]
fn ipv6_flow_hashes_equal_the_catalogue_crcs() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut flows: Vec<FlowId> = (0..2_000)
        .map(|_| {
            FlowId::v6(
                rng.random(),
                rng.random(),
                rng.random(),
                rng.random(),
                rng.random(),
            )
        })
        .collect();
    for i in 0..128 {
        flows.push(FlowId::v6(1 << i, 0, 0, 0, 0));
        flows.push(FlowId::v6(0, 1 << i, 0, 0, 0));
    }
    for f in &flows {
        let key = f.key_bytes();
        assert_eq!(key.len(), FlowId::V6_BYTES);
        let h = FlowHashes::of(f);
        assert_eq!(h.c32, crc32(&key), "{f}");
        assert_eq!(h.c16, crc16(&key), "{f}");
    }
    // The IPv4-mapped form of an IPv4 flow is not its key: IPv4 flows hash 13 bytes.
    let v4 = FlowId::v4(0x0a00_0001, 0x0a00_0002, 17, 1, 2);
    let mapped = FlowId::v6(v4.src.to_u128(), v4.dst.to_u128(), 17, 1, 2);
    assert_eq!(mapped, v4, "one representation");
    assert_eq!(FlowHashes::of(&v4).c32, crc32(&v4.v4_bytes().unwrap()));
}

#[test]
fn slices_by_hand() {
    let h = FlowHashes {
        c32: 0xDEAD_BEEF,
        c16: 0xBEEF,
    };
    assert_eq!(meter_index(h, 0, 1024), 0x2EF);
    assert_eq!(meter_index(h, 1, 1024), 0x37A);
    assert_eq!(meter_index(h, 2, 1024), 0x2EF);
    assert_eq!(hashpipe_index(h, 0, 32, 1024), 23);
    assert_eq!(hashpipe_index(h, 1, 32, 1024), 15);
    assert_eq!(hashpipe_index(h, 2, 32, 1024), 22);
    for row in 0..3 {
        assert_eq!(meter_index(h, row, 1), 0);
        assert_eq!(hashpipe_index(h, row, 1, 1024), 0);
    }
    assert_eq!(meter_index(h, 1, 1 << 16), 0xDEAD);
    assert_eq!(meter_index(h, 2, 1 << 16), 0xBEEF);
}

/// Every hash bit feeds at most one of the six indices: the slices are disjoint.
#[test]
fn slices_are_disjoint() {
    for (w, e) in [
        (1024, 32),
        (1 << 12, 16),
        (1 << 8, 256),
        (2, 2),
        (1 << 15, 2),
    ] {
        let idx = |h: FlowHashes| -> Vec<usize> {
            let m = (0..3).map(|r| meter_index(h, r, w));
            m.chain((0..3).map(|s| hashpipe_index(h, s, e, w)))
                .collect()
        };
        let base = FlowHashes { c32: 0, c16: 0 };
        let flips = (0..32)
            .map(|b| FlowHashes {
                c32: 1 << b,
                c16: 0,
            })
            .chain((0..16).map(|b| FlowHashes {
                c32: 0,
                c16: 1 << b,
            }));
        let mut used = 0;
        for h in flips {
            let changed = idx(h)
                .iter()
                .zip(idx(base))
                .filter(|(a, b)| **a != *b)
                .count();
            assert!(changed <= 1, "w={w} e={e}: a bit feeds {changed} indices");
            used += changed;
        }
        assert_eq!(
            used,
            3 * w.trailing_zeros() as usize + 3 * e.trailing_zeros() as usize
        );
    }
}

/// The reason for slicing: salted copies of one CRC differ by a constant.
#[test]
fn salted_crcs_are_correlated() {
    let diff = |f: &crate::FlowId| {
        let mut a = vec![0x01];
        let mut b = vec![0x02];
        a.extend_from_slice(&f.key_bytes());
        b.extend_from_slice(&f.key_bytes());
        crc32(&a) ^ crc32(&b)
    };
    let flows = random_flows(2, 100);
    assert!(flows.iter().all(|f| diff(f) == diff(&flows[0])));
}

/// For 20k random flows, pairs colliding in one row collide in another with probability ~1/w.
#[test]
fn rows_are_uncorrelated() {
    let w = 1024;
    let hs: Vec<_> = random_flows(3, 20_000).iter().map(FlowHashes::of).collect();
    let pairs = |n: usize| n * n.saturating_sub(1) / 2;
    for (ra, rb) in [(0, 1), (0, 2), (1, 2)] {
        let mut single: HashMap<usize, usize> = HashMap::new();
        let mut both: HashMap<(usize, usize), usize> = HashMap::new();
        for &h in &hs {
            let (a, b) = (meter_index(h, ra, w), meter_index(h, rb, w));
            *single.entry(a).or_default() += 1;
            *both.entry((a, b)).or_default() += 1;
        }
        let p1: usize = single.values().map(|&n| pairs(n)).sum();
        let p2: usize = both.values().map(|&n| pairs(n)).sum();
        let frac = p2 as f64 / p1 as f64;
        assert!(
            (0.5 / w as f64..2.0 / w as f64).contains(&frac),
            "rows {ra},{rb}: {frac} of row-{ra} collisions also collide in row {rb}"
        );
    }
}

#[test]
fn config_errors_name_the_field() {
    let err = |r: Result<MeterConfig, SketchConfigError>| r.unwrap_err().to_string();
    assert!(err(MeterConfig::new(0, 1024)).contains("rows"));
    assert!(err(MeterConfig::new(4, 1024)).contains("rows"));
    assert!(err(MeterConfig::new(3, 1000)).contains("width"));
    assert!(err(MeterConfig::new(3, 1 << 17)).contains("width"));
    assert!(MeterConfig::new(3, 1 << 16).is_ok());
    let err = |r: Result<HashPipeConfig, SketchConfigError>| r.unwrap_err().to_string();
    assert!(err(HashPipeConfig::new(0, 32, 1024)).contains("stages"));
    assert!(err(HashPipeConfig::new(4, 32, 1024)).contains("stages"));
    assert!(err(HashPipeConfig::new(3, 48, 1024)).contains("entries"));
    assert!(err(HashPipeConfig::new(3, 128, 1024)).contains("entries"));
    assert!(err(HashPipeConfig::new(3, 32, 1000)).contains("meter_width"));
    assert!(HashPipeConfig::new(3, 64, 1024).is_ok());
    assert!(Usm::new(MeterConfig { rows: 5, width: 8 }).is_err());
}

/// TNA's table-driven ECMP (p4src/tna/forwarding.p4) picks v1model's member for every flow: the
/// key it looks up is below `2 * size - 1` and congruent to `ecmp_member` modulo `size`.
#[test]
fn tna_ecmp_tables_pick_the_v1model_member() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let sizes: Vec<u16> = (1..=40)
        .chain([64, 100, 127, 128, 255, 256, 257, 1000, 65535])
        .collect();
    let edge = [
        0u32,
        1,
        0xFFFF,
        0x1_0000,
        0xFF00_FF00,
        0x8000_0000,
        u32::MAX,
    ];
    for _ in 0..20_000 {
        let c32: u32 = rng.random();
        let mask: u32 = if rng.random_bool(0.1) {
            edge[rng.random_range(0..edge.len())]
        } else {
            rng.random()
        };
        let size = sizes[rng.random_range(0..sizes.len())];
        let key = ecmp_member_key_tna(c32, mask, size);
        assert!(
            u32::from(key) < 2 * u32::from(size) - 1,
            "{c32:#x} {mask:#x} {size}"
        );
        assert_eq!(
            key % size,
            ecmp_member(c32, mask, size),
            "{c32:#x} {mask:#x} {size}"
        );
    }
    for &c32 in &edge {
        for &mask in &edge {
            for &size in &sizes {
                assert_eq!(
                    ecmp_member_key_tna(c32, mask, size) % size,
                    ecmp_member(c32, mask, size)
                );
            }
        }
    }
    // The product the four terms add up to, byte by byte.
    assert_eq!(ecmp_mul_term(0x10, 1, 0x02), 0x0000_0200 * 0x11);
    assert_eq!(
        ecmp_mul_term(u32::MAX, 3, 0xFF),
        0xFF00_0000u32.wrapping_mul(u32::MAX)
    );
    assert_eq!(ecmp_mod_term(3, true, 1), 256 % 3);
    assert_eq!(ecmp_mod_term(3, false, 5), 2);
}

/// Why TNA does not use 256 buckets (bucket = low byte of the mixed value, entry b -> member
/// b mod size): that equals `ecmp_member` only when the group size divides 256.
#[test]
fn byte_buckets_match_only_power_of_two_groups() {
    let bucket_member =
        |c32: u32, mask: u32, size: u16| ((c32.wrapping_mul(mask | 1) >> 16) as u8) as u16 % size;
    let differs = |size: u16| {
        (0..5000u32).any(|i| {
            let c32 = i.wrapping_mul(0x9E37_79B9);
            bucket_member(c32, 0x1234_5679, size) != ecmp_member(c32, 0x1234_5679, size)
        })
    };
    for size in [1u16, 2, 4, 8, 16, 32, 64, 128, 256] {
        assert!(!differs(size), "size {size}");
    }
    for size in [3u16, 5, 6, 7, 12, 24, 48] {
        assert!(differs(size), "size {size}");
    }
}
