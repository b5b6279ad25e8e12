use super::{flow, random_flows};
use crate::sketch::*;
use crate::FlowId;

fn pipe(stages: usize, entries: usize) -> HashPipe {
    HashPipe::new(HashPipeConfig::new(stages, entries, 1024).unwrap()).unwrap()
}

thread_local! {
    /// Flows fed so far by fingerprint, to show HashPipe's slots as flows.
    static FED: std::cell::RefCell<std::collections::HashMap<u32, FlowId>> = Default::default();
}

fn feed(hp: &mut HashPipe, f: &FlowId) -> u32 {
    let h = FlowHashes::of(f);
    FED.with(|m| m.borrow_mut().insert(fingerprint(h), *f));
    hp.update(h)
}

fn state(hp: &HashPipe) -> Vec<(usize, usize, FlowId, u32)> {
    hp.entries()
        .map(|(s, i, fp, c)| (s, i, FED.with(|m| m.borrow()[&fp]), c))
        .collect()
}

fn estimate(hp: &HashPipe, f: &FlowId) -> u32 {
    hp.estimate(FlowHashes::of(f))
}

/// One entry per stage: every key meets every slot, so each rule can be walked by hand.
#[test]
fn eviction_carry_and_swap_by_hand() {
    let [a, b, c, d, e, f, g, h] = [1, 2, 3, 4, 5, 6, 7, 8].map(flow);
    let mut hp = pipe(3, 1);
    assert_eq!(feed(&mut hp, &a), 1);
    assert_eq!(feed(&mut hp, &a), 2, "stage 0 increments on a match");
    assert_eq!(
        feed(&mut hp, &b),
        1,
        "stage 0 always installs the arriving key"
    );
    assert_eq!(
        state(&hp),
        vec![(0, 0, b, 1), (1, 0, a, 2)],
        "A carried into empty stage 1"
    );
    feed(&mut hp, &c);
    assert_eq!(state(&hp), vec![(0, 0, c, 1), (1, 0, a, 2), (2, 0, b, 1)]);
    feed(&mut hp, &d);
    // C:1 cannot displace A:2 nor B:1 (not strictly smaller): dropped after the last stage.
    assert_eq!(state(&hp), vec![(0, 0, d, 1), (1, 0, a, 2), (2, 0, b, 1)]);
    assert_eq!(feed(&mut hp, &d), 2);
    feed(&mut hp, &e);
    // D:2 passes A:2 (equal), swaps with B:1 at stage 2; B is dropped.
    assert_eq!(state(&hp), vec![(0, 0, e, 1), (1, 0, a, 2), (2, 0, d, 2)]);
    assert_eq!(feed(&mut hp, &a), 1, "only the stage-0 count is reported");
    assert_eq!(estimate(&hp, &a), 3);
    feed(&mut hp, &f);
    // The carried A:1 meets A:2 at stage 1 and merges.
    assert_eq!(state(&hp), vec![(0, 0, f, 1), (1, 0, a, 3), (2, 0, d, 2)]);
    for k in 1..=4 {
        assert_eq!(feed(&mut hp, &g), k);
    }
    feed(&mut hp, &h);
    // G:4 swaps with A:3 at stage 1; A:3 swaps with D:2 at stage 2; D is dropped.
    assert_eq!(state(&hp), vec![(0, 0, h, 1), (1, 0, g, 4), (2, 0, a, 3)]);
    hp.reset();
    assert_eq!(state(&hp), vec![]);
    assert_eq!(hp, pipe(3, 1));
}

#[test]
fn single_stage_drops_the_carry() {
    let mut hp = pipe(1, 1);
    feed(&mut hp, &flow(1));
    feed(&mut hp, &flow(1));
    assert_eq!(feed(&mut hp, &flow(2)), 1);
    assert_eq!(state(&hp), vec![(0, 0, flow(2), 1)]);
}

/// Three stages of two entries: keys are placed at their own hash slices.
#[test]
fn indices_follow_the_carried_key() {
    let mut hp = pipe(3, 2);
    let idx = |f: &FlowId, s| hashpipe_index(FlowHashes::of(f), s, 2, 1024);
    let flows = random_flows(21, 64);
    let a = flows[0];
    let b = *flows.iter().find(|f| idx(f, 0) != idx(&a, 0)).unwrap();
    let c = *flows[1..].iter().find(|f| idx(f, 0) == idx(&a, 0)).unwrap();
    feed(&mut hp, &a);
    feed(&mut hp, &b);
    let mut want = vec![(0, idx(&a, 0), a, 1), (0, idx(&b, 0), b, 1)];
    want.sort();
    assert_eq!(state(&hp), want, "different slots: no eviction");
    feed(&mut hp, &c);
    let got = state(&hp);
    assert!(got.contains(&(0, idx(&c, 0), c, 1)));
    assert!(
        got.contains(&(1, idx(&a, 1), a, 1)),
        "A lands at its own stage-1 slot"
    );
    assert_eq!(got.len(), 3);
}

/// The paper's default HashPipe keeps the heavy flows of a skewed workload.
#[test]
fn default_pipe_finds_heavy_hitters() {
    let mut hp = HashPipe::default();
    assert_eq!(hp.config(), HashPipeConfig::new(3, 32, 1024).unwrap());
    let flows = random_flows(31, 400);
    let (heavy, mice) = flows.split_at(10);
    for round in 0..100 {
        for f in heavy {
            feed(&mut hp, f);
        }
        for f in &mice[(round * 3) % 390..][..3] {
            feed(&mut hp, f);
        }
    }
    let found = heavy.iter().filter(|f| estimate(&hp, f) >= 50).count();
    assert!(found >= 9, "{found} of 10 heavy hitters retained");
}

#[test]
fn a_hit_reports_the_flows_count_across_stages() {
    // Two flows sharing stage-0 slot 0 of a 3 x 1 pipe: runs of `a` are evicted by `b` into
    // stage 1, where they accumulate; a later hit on `a` reports stage 0 + stage 1.
    let mut hp = HashPipe::new(HashPipeConfig::new(3, 1, 1024).unwrap()).unwrap();
    let (a, b) = (flow(1), flow(2));
    let (ha, hb) = (FlowHashes::of(&a), FlowHashes::of(&b));
    for _ in 0..5 {
        hp.update(ha);
    }
    assert_eq!(hp.update(hb), 1, "a miss reports 1");
    hp.update(ha); // a back in stage 0 with 1; b carried into stage 2 or dropped
    assert_eq!(hp.update(ha), 2 + 5, "stage 0 (2) + stage 1 (5)");
    assert_eq!(estimate(&hp, &a), 7);
}
