use super::*;
use crate::topo::{fattree::fattree, MonitorPlacement, Routing, Segments, SwitchIx};

#[test]
fn unusable_parameters_are_errors_naming_the_field() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let s = Segments::new(&t, &Routing::new(&t));
    for (bits, hashes, field, msg) in [
        (
            0,
            3,
            "bits",
            "pathBF bits must be a power of two in 8..=32, got 0",
        ),
        (
            64,
            3,
            "bits",
            "pathBF bits must be a power of two in 8..=32, got 64",
        ),
        (
            32,
            0,
            "hashes",
            "pathBF hashes must be 1..=6 for 32 bits, got 0",
        ),
        (
            32,
            u32::MAX,
            "hashes",
            "pathBF hashes must be 1..=6 for 32 bits, got 4294967295",
        ),
    ] {
        let p = PathBfParams { bits, hashes };
        let e = audit(&t, &s, p).unwrap_err();
        assert_eq!(e.to_string(), msg);
        assert_eq!(e.field(), field);
        assert_eq!(PathBfCodec::new(&t, &s, p).unwrap_err(), e);
        assert_eq!(repair(&mut t.clone(), &s, p, 5).unwrap_err(), e);
    }
}

#[test]
fn theorem1_golden_value() {
    let p = PathBfParams::default().theorem1(5);
    assert!((p - 2.859e-5).abs() < 0.01e-5, "{p}");
}

#[test]
fn masks_have_at_most_m_bits() {
    let p = PathBfParams::default();
    for id in 0..1000u32 {
        let m = p.mask(id);
        assert!((1..=3).contains(&m.count_ones()));
    }
}

#[test]
fn encoding_follows_the_data_plane_rules() {
    let t = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let r = Routing::new(&t);
    let s = Segments::new(&t, &r);
    let c = PathBfCodec::new(&t, &s, PathBfParams::default()).unwrap();
    let path = r.path(
        &t,
        t.switch("edge0_0").unwrap(),
        t.switch("edge3_1").unwrap(),
        7,
    );
    // Walk the packet: bf after each switch, checked at every monitor.
    let mut bf = 0xdead_beef; // whatever the host sent is cleared at the first monitor
    for (i, &sw) in path.iter().enumerate() {
        if i > 0 && t.switches[sw as usize].monitor {
            let start = path[..i]
                .iter()
                .rposition(|&x| t.switches[x as usize].monitor)
                .unwrap();
            let seg = s.find(&path[start..=i]).unwrap();
            assert_eq!(c.decode(sw, bf), Decoded::Segment(seg));
            assert!(c.passes(&s, seg, bf));
        }
        bf = encode_hop(bf, c.masks[sw as usize], t.switches[sw as usize].monitor);
    }
}

#[test]
fn decode_id_agrees_with_decode() {
    use rand::{Rng, SeedableRng};
    // Bottom-only monitors, not repaired: some values are ambiguous.
    let t = fattree(8, MonitorPlacement::Bottom).unwrap();
    let r = Routing::new(&t);
    let s = Segments::new(&t, &r);
    let c = PathBfCodec::new(&t, &s, PathBfParams::default()).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut ambiguous = 0;
    let short = |d: Decoded| match d {
        Decoded::Segment(s) => DecodedId::Segment(s),
        Decoded::Ambiguous(_) => DecodedId::Ambiguous,
        Decoded::Unknown => DecodedId::Unknown,
    };
    for sw in 0..t.switches.len() as SwitchIx + 2 {
        let known = s
            .list
            .iter()
            .enumerate()
            .filter(|(_, g)| g.downstream() == sw);
        let bfs: Vec<u32> = known
            .map(|(i, _)| c.segment_bf[i])
            .chain((0..50).map(|_| rng.random()))
            .chain([0, u32::MAX, u32::MAX - 1])
            .collect();
        for bf in bfs {
            let want = short(c.decode(sw, bf));
            ambiguous += usize::from(want == DecodedId::Ambiguous);
            assert_eq!(c.decode_id(sw, bf), want, "switch {sw}, bf {bf:#x}");
        }
    }
    assert!(ambiguous > 0, "the case is exercised");
}

#[test]
fn repair_makes_every_segment_decodable() {
    let mut t = fattree(8, MonitorPlacement::Bottom).unwrap();
    let r = Routing::new(&t);
    let s = Segments::new(&t, &r);
    // Force a collision: give two aggregation switches masks that make segments collide.
    let a = audit(&t, &s, PathBfParams::default()).unwrap();
    let fixed = repair(&mut t, &s, PathBfParams::default(), 50).unwrap();
    assert!(
        fixed.undecodable.is_empty(),
        "{} left",
        fixed.undecodable.len()
    );
    assert_eq!(a.undecodable.is_empty(), fixed.reassigned.is_empty());
    let ids: std::collections::HashSet<u32> = t.switches.iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), t.switches.len(), "IDs stay unique");
}

#[test]
fn observed_membership_rate_is_near_theorem1() {
    let t = fattree(16, MonitorPlacement::Bottom).unwrap();
    let r = Routing::new(&t);
    let s = Segments::new(&t, &r);
    let a = audit(&t, &s, PathBfParams::default()).unwrap();
    // Candidates through another plane differ in all three intermediate switches (Theorem 1's
    // case); candidates through another core of the same plane differ in the core alone.
    // Theorem 1 uses the mean fill of the filter; the rate is convex in the fill, so the real
    // rate is higher: a Monte Carlo with independent uniform bit positions gives 5.3e-5 for
    // d = 3 (Theorem 1: 2.86e-5) and 3.3e-2 for d = 1 (formula: 3.06e-2).
    for (differing, monte_carlo) in [(1, 3.29e-2), (3, 5.25e-5)] {
        let st = a
            .membership
            .iter()
            .find(|m| m.h == 5 && m.differing == differing)
            .unwrap();
        assert!(st.candidates > 100_000);
        let ratio = st.observed_rate / monte_carlo;
        assert!(
            (0.6..1.6).contains(&ratio),
            "d={differing}: observed {} vs {}",
            st.observed_rate,
            monte_carlo
        );
    }
}
