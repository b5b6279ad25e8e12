use super::search::min_width;
use super::*;

#[test]
fn packets_needed_matches_the_closed_form() {
    assert_eq!(packets_needed(0.01), 459);
    assert_eq!(packets_needed(0.1), 44);
    assert!((1.0 - (1.0 - 1e-3f64).powi(packets_needed(1e-3) as i32)) >= 0.99);
}

#[test]
fn min_width_finds_the_threshold() {
    // Exact to within 0.5 %, never below the threshold.
    let rate = |w: usize| (w >= 1234).then_some(1.0);
    for guess in [10, 5000] {
        let w = min_width(guess, 1 << 20, rate).unwrap().0;
        assert!((1234..=1240).contains(&w), "{w}");
    }
    let small = |w: usize| (w >= 7).then_some(1.0);
    assert_eq!(min_width(100, 1 << 20, small).unwrap().0, 7);
    assert_eq!(min_width(5000, 1 << 20, |_| Some(1.0)).unwrap().0, 1);
    assert!(min_width(5, 100, |_| None).is_none());
}

#[test]
fn canary_memory_is_the_papers_layout() {
    // d = 3, w = 2^10: DSM 63.4 KiB + USM 51.4 KiB + HashPipe 1.6 KiB.
    let kib = canary_bits(1024) as f64 / 8.0 / 1024.0;
    assert!((kib - (63.375 + 51.375 + 1.59375)).abs() < 1e-9, "{kib}");
}
