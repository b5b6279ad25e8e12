//! Unit tests of the CD solver and the mapping (golden numbers of small hand-made
//! cases).

use super::cd::{cd_update, objective, solve, CdParams, CdProblem};
use super::groups::{map_success, Mapping};

fn run(n_links: usize, paths: &[Vec<u32>], y: &[f64]) -> Vec<f64> {
    let weight = vec![100.0; paths.len()];
    let p = CdProblem {
        n_links,
        paths,
        y,
        weight: &weight,
        frozen: &[],
    };
    solve(&p, &CdParams::default()).x
}

#[test]
fn closed_form_branches() {
    assert_eq!(cd_update(2.0, 1.0), 0.5);
    assert_eq!(cd_update(2.0, 5.0), 1.0);
    assert_eq!(cd_update(2.0, -1.0), 0.0);
    assert_eq!(cd_update(0.0, 0.1), 1.0);
    assert_eq!(cd_update(0.0, 0.0), 0.0);
    assert_eq!(cd_update(-2.0, -1.5), 0.0); // T = 0.75 > 1/2
    assert_eq!(cd_update(-2.0, -1.0), 1.0); // T = 1/2: tie goes to 1
}

#[test]
fn healthy_link_on_perfect_paths_is_one() {
    // R = 2n − 2, S = 2n − 1 with all other links at 1.
    for n in 1..6u32 {
        let r = 2.0 * f64::from(n) - 2.0;
        let s = 2.0 * f64::from(n) - 1.0;
        assert_eq!(cd_update(r, s), 1.0, "n = {n}");
        let paths: Vec<Vec<u32>> = (0..n).map(|j| vec![0, j + 1]).collect();
        let x = run(n as usize + 1, &paths, &vec![1.0; n as usize]);
        assert!(x.iter().all(|&v| v == 1.0), "{x:?}");
    }
}

#[test]
fn lone_link_half_success() {
    // One path: R = 0, S = 0 -> 0. Two paths: R = 2, S = 1 -> 0.5.
    assert_eq!(cd_update(0.0, 0.0), 0.0);
    assert_eq!(run(1, &[vec![0]], &[0.5]), vec![0.0]);
    assert_eq!(run(1, &[vec![0], vec![0]], &[0.5, 0.5]), vec![0.5]);
}

#[test]
fn frozen_links_and_unused_links() {
    let paths = vec![vec![0, 1], vec![1, 2]];
    let y = [0.5, 1.0];
    let w = [1.0, 1.0];
    let frozen = [Some(0.0), None, None, None];
    let p = CdProblem {
        n_links: 4,
        paths: &paths,
        y: &y,
        weight: &w,
        frozen: &frozen,
    };
    let sol = solve(&p, &CdParams::default());
    assert_eq!(sol.x[0], 0.0);
    assert_eq!(sol.x[3], 1.0);
    assert_eq!(sol.x[1], 1.0);
    assert!(sol.iterations >= 1);
    assert!((sol.objective - objective(&p, &sol.x, 1.0)).abs() < 1e-12);
}

#[test]
fn single_faulty_link_in_a_grid() {
    // 4 upper x 4 lower links; upper link 1 drops 50 %.
    let mut paths = Vec::new();
    let mut y = Vec::new();
    for u in 0..4u32 {
        for d in 0..4u32 {
            paths.push(vec![u, 4 + d]);
            y.push(if u == 1 { 0.5 } else { 1.0 });
        }
    }
    let x = run(8, &paths, &y);
    for (i, &v) in x.iter().enumerate() {
        if i == 1 {
            assert!((v - 0.5).abs() < 0.05, "{x:?}");
        } else {
            assert_eq!(v, 1.0, "{x:?}");
        }
    }
}

#[test]
fn objective_never_increases_over_sweeps() {
    let paths = vec![vec![0, 1], vec![1, 2], vec![0, 2], vec![2, 3]];
    let y = [0.9, 0.7, 0.8, 0.95];
    let w = [1.0; 4];
    let mut prev = f64::INFINITY;
    for k in 1..8 {
        let p = CdProblem {
            n_links: 4,
            paths: &paths,
            y: &y,
            weight: &w,
            frozen: &[],
        };
        let params = CdParams {
            max_iter: k,
            epsilon: -1.0,
            ..CdParams::default()
        };
        let sol = solve(&p, &params);
        assert!(sol.objective <= prev + 1e-12);
        prev = sol.objective;
    }
}

#[test]
fn eq4_golden() {
    let v = map_success(0.998, 0.99, 0.999, Mapping::Log);
    assert!((v - 0.79555).abs() < 1e-4, "{v}");
    for y in [0.01, 0.3, 0.55, 0.79] {
        assert!((map_success(y, 0.0, 0.8, Mapping::Log) - y).abs() < 1e-12);
        assert!((map_success(y, 0.0, 0.8, Mapping::Linear) - y).abs() < 1e-12);
    }
    assert_eq!(map_success(0.5, 0.0, 1.0, Mapping::Log), 0.4); // b − a = 1 guard
    assert_eq!(map_success(0.98, 0.99, 0.999, Mapping::Log), 0.0);
    assert_eq!(map_success(0.9995, 0.99, 0.999, Mapping::Log), 0.8);
    let lin = map_success(0.9945, 0.99, 0.999, Mapping::Linear);
    assert!((lin - 0.4).abs() < 1e-9);
}

#[test]
fn regulariser_biases_the_estimate() {
    // n paths at y through one link, others perfect: x = (2ny − λ)/(2n − 2λ), not y.
    let paths: Vec<Vec<u32>> = (0..4).map(|j| vec![0, j + 1]).collect();
    let x = run(5, &paths, &[0.7; 4]);
    assert!((x[0] - (5.6 - 1.0) / 6.0).abs() < 1e-12, "{x:?}");
}

proptest::proptest! {
    #[test]
    fn cd_stays_in_box_and_descends(
        paths in proptest::collection::vec(proptest::collection::btree_set(0u32..8, 1..4), 1..15),
        ys in proptest::collection::vec(0.0f64..=1.0, 15),
        froze in proptest::option::of(0usize..8),
    ) {
        let paths: Vec<Vec<u32>> = paths.into_iter().map(|s| s.into_iter().collect()).collect();
        let y = &ys[..paths.len()];
        let w = vec![10.0; paths.len()];
        let mut frozen = vec![None; 8];
        if let Some(f) = froze { frozen[f] = Some(0.0); }
        let p = CdProblem { n_links: 8, paths: &paths, y, weight: &w, frozen: &frozen };
        let init = solve(&p, &CdParams { max_iter: 0, ..CdParams::default() });
        proptest::prop_assert_eq!(init.iterations, 0);
        let sol = solve(&p, &CdParams::default());
        proptest::prop_assert!(sol.x.iter().all(|v| (0.0..=1.0).contains(v)));
        proptest::prop_assert!(sol.objective <= init.objective + 1e-12);
        if let Some(f) = froze { proptest::prop_assert_eq!(sol.x[f], 0.0); }
    }
}
