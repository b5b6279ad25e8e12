//! The rules of incidents, on hand-made reports.

use super::*;
use crate::report::{DeviceReport, LinkReport};

fn link(a: &str, b: &str) -> Subject {
    Subject::Link {
        link: [a.into(), b.into()],
    }
}

fn blame(a: &str, b: &str, loss: f64) -> LinkReport {
    LinkReport {
        link: [a.into(), b.into()],
        loss,
        stage: Some(1),
        ci95: Some([loss * 0.9, loss * 1.1]),
        since: None,
        flows: None,
        held: false,
    }
}

fn epoch(e: u64, blamed: Vec<LinkReport>) -> EpochReport {
    let mut r = EpochReport::missed(e, 8, String::new());
    r.incomplete = None;
    r.blamed = blamed;
    r
}

/// Feeds epochs 0.. (one list of blamed links each) and returns every incident as last changed.
fn run(cfg: TrackConfig, epochs: &[Vec<LinkReport>]) -> Vec<Incident> {
    let reports: Vec<EpochReport> = epochs
        .iter()
        .enumerate()
        .map(|(e, b)| epoch(e as u64, b.clone()))
        .collect();
    rebuild(cfg, &reports)
}

#[test]
fn a_blame_is_new_then_ongoing_then_cleared_with_its_peak_and_times() {
    let mut t = Tracker::new(TrackConfig::default());
    let first = t.observe(&epoch(3, vec![blame("a", "b", 0.02)]), Some("T3"));
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].state, State::New);
    assert_eq!(first[0].first_at.as_deref(), Some("T3"));
    let on = t.observe(&epoch(4, vec![blame("a", "b", 0.05)]), Some("T4"));
    assert_eq!(on[0].state, State::Ongoing);
    let on = t.observe(&epoch(5, vec![blame("a", "b", 0.03)]), Some("T5"));
    assert_eq!((on[0].peak.loss, on[0].peak.epoch), (0.05, 4));
    assert_eq!((on[0].current.loss, on[0].current.epoch), (0.03, 5));
    assert!(on[0].current.ci95.is_some());
    let off = t.observe(&epoch(6, vec![]), Some("T6"));
    assert_eq!(off.len(), 1);
    let i = &off[0];
    assert_eq!(
        (i.id, i.state, i.episodes),
        (first[0].id, State::Cleared, 1)
    );
    assert!(!i.blamed_now);
    assert_eq!(
        (i.first_epoch, i.last_epoch, i.cleared_epoch),
        (3, 5, Some(6))
    );
    assert_eq!(i.cleared_at.as_deref(), Some("T6"));
    // Nothing changes while nothing is blamed.
    assert!(t.observe(&epoch(7, vec![]), None).is_empty());
}

#[test]
fn a_link_blamed_again_within_the_window_flaps_and_counts_its_episodes() {
    let on = || vec![blame("a", "b", 0.1)];
    // Blamed 2 epochs, clear 3, blamed 2, clear 2, blamed 1: one incident, 3 episodes.
    let epochs = [
        on(),
        on(),
        vec![],
        vec![],
        vec![],
        on(),
        on(),
        vec![],
        vec![],
        on(),
    ];
    let all = run(TrackConfig { flap_window: 4 }, &epochs);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!((all[0].state, all[0].episodes), (State::Flapping, 3));
    assert!(all[0].blamed_now);
    assert_eq!(all[0].first_epoch, 0);
    // Cleared and still within the window: flapping; past it: cleared, episodes kept.
    let mut longer = epochs.to_vec();
    longer.push(vec![]);
    let all = run(TrackConfig { flap_window: 4 }, &longer);
    assert_eq!(
        (all[0].state, all[0].cleared_epoch),
        (State::Flapping, Some(10))
    );
    longer.extend(std::iter::repeat_n(vec![], 5));
    let all = run(TrackConfig { flap_window: 4 }, &longer);
    assert_eq!((all[0].state, all[0].episodes), (State::Cleared, 3));
    assert_eq!(all[0].cleared_epoch, Some(10));
}

#[test]
fn a_link_blamed_again_after_the_window_is_a_new_incident() {
    let on = || vec![blame("a", "b", 0.1)];
    let mut epochs = vec![on()];
    epochs.extend(std::iter::repeat_n(vec![], 3));
    epochs.push(on());
    let all = run(TrackConfig { flap_window: 2 }, &epochs);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!((all[0].id, all[0].state), (1, State::Cleared));
    assert_eq!(
        (all[1].id, all[1].state, all[1].episodes),
        (2, State::New, 1)
    );
}

#[test]
fn a_blame_that_moves_to_a_neighbour_corrects_the_first_incident() {
    // agg→core blamed first; once the flows cover the pod the blame moves to edge→agg.
    let epochs = [
        vec![blame("agg1_1", "core2", 0.05)],
        vec![blame("agg1_1", "core2", 0.05)],
        vec![blame("edge1_0", "agg1_1", 0.1)],
        vec![blame("edge1_0", "agg1_1", 0.1)],
    ];
    let all = run(TrackConfig::default(), &epochs);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!(all[0].subject, link("agg1_1", "core2"));
    assert_eq!(
        (all[0].state, all[0].corrected_to),
        (State::Corrected, Some(2))
    );
    assert_eq!(all[1].subject, link("edge1_0", "agg1_1"));
    assert_eq!((all[1].state, all[1].corrects), (State::Ongoing, Some(1)));
    // A link elsewhere clearing as another starts corrects nothing.
    let far = [vec![blame("a", "b", 0.1)], vec![blame("c", "d", 0.1)]];
    let all = run(TrackConfig::default(), &far);
    assert_eq!(all[0].state, State::Cleared);
    assert_eq!(all[1].corrects, None);
}

/// The report's own `cleared[].corrected_to` decides: a correction to a link already blamed
/// (no new incident, no shared switch needed), and an all-clear that the report calls one is not
/// a correction even when a neighbour is blamed in the same epoch.
#[test]
fn the_reports_corrections_and_all_clears_are_taken_as_it_says() {
    use crate::report::ClearedLink;
    let cleared = |a: &str, b: &str, to: Option<[&str; 2]>| ClearedLink {
        link: [a.into(), b.into()],
        since: 0,
        last: 1,
        corrected_to: to.map(|[x, y]| [x.into(), y.into()]),
    };
    let mut reports = vec![
        epoch(0, vec![blame("a", "b", 0.1), blame("x", "y", 0.1)]),
        epoch(1, vec![blame("a", "b", 0.1), blame("x", "y", 0.1)]),
        epoch(2, vec![blame("x", "y", 0.1)]),
    ];
    reports[2].cleared = vec![cleared("a", "b", Some(["x", "y"]))];
    let all = rebuild(TrackConfig::default(), &reports);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!(
        (all[0].subject.clone(), all[0].state, all[0].corrected_to),
        (link("a", "b"), State::Corrected, Some(2))
    );
    assert_eq!((all[1].state, all[1].corrects), (State::Ongoing, Some(1)));

    // agg1_1→core2 ends in an all-clear as its neighbour edge1_0→agg1_1 is first blamed.
    let mut reports = vec![
        epoch(0, vec![blame("agg1_1", "core2", 0.05)]),
        epoch(1, vec![blame("edge1_0", "agg1_1", 0.1)]),
    ];
    reports[1].cleared = vec![cleared("agg1_1", "core2", None)];
    let all = rebuild(TrackConfig::default(), &reports);
    assert_eq!(all[0].state, State::Cleared, "{all:#?}");
    assert_eq!(all[1].corrects, None);
}

#[test]
fn a_device_is_one_incident_for_its_links() {
    let mut r = epoch(
        0,
        vec![
            blame("agg0_0", "core0", 0.02),
            blame("agg0_0", "core1", 0.04),
            blame("edge1_0", "agg1_0", 0.3),
        ],
    );
    r.devices = vec![DeviceReport {
        switch: "agg0_0".into(),
        inbound: false,
        both: false,
        links: 2,
    }];
    let all = rebuild(TrackConfig::default(), &[r]);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!(
        all[0].subject,
        Subject::Device {
            switch: "agg0_0".into(),
            inbound: false,
            both: false,
        }
    );
    assert_eq!(all[0].peak.loss, 0.04);
    assert_eq!(all[1].subject, link("edge1_0", "agg1_0"));
}

#[test]
fn incomplete_and_repeated_epochs_change_nothing() {
    let mut t = Tracker::new(TrackConfig::default());
    t.observe(&epoch(0, vec![blame("a", "b", 0.1)]), None);
    // An epoch a restarted controller found running: nothing blamed, nothing cleared.
    let mut gap = epoch(1, vec![]);
    gap.incomplete = Some("began before this controller".into());
    assert!(t.observe(&gap, None).is_empty());
    assert!(
        t.observe(&epoch(1, vec![]), None).is_empty(),
        "epoch 1 again"
    );
    let on = t.observe(&epoch(2, vec![blame("a", "b", 0.1)]), None);
    assert_eq!(
        (on[0].id, on[0].state, on[0].episodes),
        (1, State::Ongoing, 1)
    );
}

#[test]
fn a_resumed_tracker_continues_the_same_incidents_and_ids() {
    let mut t = Tracker::new(TrackConfig::default());
    t.observe(&epoch(0, vec![blame("a", "b", 0.1)]), None);
    t.observe(&epoch(1, vec![blame("c", "d", 0.1)]), None);
    let live: Vec<Incident> = t.live().cloned().collect();
    let mut again = Tracker::resume(TrackConfig::default(), live, 0, t.last_epoch());
    let out = again.observe(
        &epoch(2, vec![blame("c", "d", 0.1), blame("a", "b", 0.1)]),
        None,
    );
    let ids: Vec<(u64, State)> = out.iter().map(|i| (i.id, i.state)).collect();
    assert_eq!(ids, [(1, State::Flapping), (2, State::Ongoing)]);
    assert_eq!(again.next_id(), 3);
}
