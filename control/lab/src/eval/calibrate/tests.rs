use super::grid::one_two_five;
use super::*;

fn gs(precision: f64, recall: f64) -> GridScore {
    GridScore { precision, recall }
}

#[test]
fn the_highest_recall_above_98_percent_precision_wins() {
    let s = [gs(1.0, 0.5), gs(0.99, 0.75), gs(0.97, 1.0), gs(1.0, 0.25)];
    let p = pick(&s).unwrap();
    assert_eq!(p.index, 1);
    assert_eq!(p.min_precision, 0.98);
    assert!(p.recall_floor_met);
    assert_eq!((p.precision, p.recall), (0.99, 0.75));
}

#[test]
fn precision_must_exceed_p_strictly() {
    // 0.98 is not > 0.98: the first setting waits for P = 93 %, where the second's higher
    // recall wins.
    let s = [gs(0.98, 0.9), gs(0.95, 1.0), gs(1.0, 0.1)];
    let p = pick(&s).unwrap();
    assert_eq!((p.index, p.min_precision), (1, 0.93));
}

#[test]
fn none_qualifying_steps_p_down_by_5_percent() {
    let s = [gs(0.90, 0.6), gs(0.80, 0.9), gs(0.50, 1.0)];
    let p = pick(&s).unwrap();
    // 98 and 93 admit nothing; 88 admits the first.
    assert_eq!((p.index, p.min_precision), (0, 0.88));
    let s = [gs(0.70, 0.6), gs(0.84, 0.3)];
    let p = pick(&s).unwrap();
    assert_eq!((p.index, p.min_precision), (1, 0.83));
}

#[test]
fn recall_below_25_percent_steps_p_down() {
    // At 98 % only a 20 %-recall setting qualifies: too low, so P goes to 93 %, where the
    // 0.94-precision one reaches 50 %.
    let s = [gs(1.0, 0.2), gs(0.94, 0.5), gs(0.6, 1.0)];
    let p = pick(&s).unwrap();
    assert_eq!((p.index, p.min_precision), (1, 0.93));
    assert!(p.recall_floor_met);
    // Exactly 25 % is enough.
    let p = pick(&[gs(1.0, 0.25), gs(0.5, 1.0)]).unwrap();
    assert_eq!((p.index, p.min_precision), (0, 0.98));
}

#[test]
fn no_setting_reaching_the_floor_takes_the_best_recall_at_negative_p() {
    let s = [gs(1.0, 0.0), gs(0.0, 0.0), gs(0.3, 0.2), gs(0.1, 0.2)];
    let p = pick(&s).unwrap();
    assert_eq!(p.index, 2, "equal recall: the higher precision");
    assert_eq!(p.min_precision, -0.02);
    assert!(!p.recall_floor_met);
    assert_eq!(pick(&[]), None);
}

#[test]
fn ties_go_to_higher_precision_then_to_the_first_setting() {
    let s = [gs(0.99, 0.5), gs(1.0, 0.5), gs(1.0, 0.5), gs(0.985, 0.5)];
    assert_eq!(pick(&s).unwrap().index, 1);
    // Within 1e-9 is a tie (summation order must not decide).
    let s = [gs(1.0, 0.5 + 1e-12), gs(1.0, 0.5), gs(1.0 + 1e-12, 0.5)];
    assert_eq!(pick(&s).unwrap().index, 0);
}

#[test]
fn grid_scores_average_per_seed_precision_and_recall() {
    // Setting 0 blames nothing (precision 1 by convention), setting 1 blames link 0 only.
    let truth = [vec![0u32, 1], vec![0u32]];
    let scores = grid_scores(&[false, true], &truth, |&blame, t| {
        let b: Vec<LinkIx> = if blame { vec![0] } else { vec![] };
        Score::of(&b, t, 4)
    });
    assert_eq!(scores[0], gs(1.0, 0.0));
    assert_eq!(scores[1], gs(1.0, 0.75));
    let (chosen, p) = calibrate(&[false, true], &truth, |&blame, t| {
        let b: Vec<LinkIx> = if blame { vec![0] } else { vec![] };
        Score::of(&b, t, 4)
    })
    .unwrap();
    assert!(chosen);
    assert_eq!(p.min_precision, 0.98);
}

#[test]
fn grids_are_log_spaced_and_ordered() {
    assert_eq!(
        one_two_five(1e-5, 1e-3),
        [1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3]
    );
    assert_eq!(
        one_two_five(5e-4, 5e-2),
        [5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2]
    );
    let f = flock_grid();
    assert!(f.iter().all(|p| p.p_b > p.p_g));
    assert_eq!(f.len(), (7 * 6 - 1) * 9);
    assert_eq!(netbouncer_grid().len(), 7 * 7 * 4);
    let z = vote007_grid();
    assert!(z.windows(2).all(|w| w[0] < w[1]));
    assert_eq!((z[0], *z.last().unwrap()), (1e-4, 0.3));
    assert!(z.contains(&0.01) && z.contains(&0.002) && z.contains(&0.003));
}

#[test]
fn training_seeds_must_not_be_test_seeds() {
    let spec = CalibrateSpec {
        seeds: vec![5, 6, 7],
        faults: None,
    };
    assert!(spec.check_disjoint(&[1, 2, 3, 4]).is_ok());
    let e = spec.check_disjoint(&[4, 5, 6]).unwrap_err().to_string();
    assert!(e.contains("5..6"), "{e}");
    assert_eq!(seed_list(&[1, 3, 4]), "1,3,4");
}
