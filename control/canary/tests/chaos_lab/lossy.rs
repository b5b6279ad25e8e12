//! The lab's one lossy link, and what every recovery test asserts of it.

use canary_controller::report::EpochReport;

/// The one lossy link of the lab (10 % one way): a localizer that blames nothing fails every
/// recovery test, and one that blames what a fault disturbed fails too.
pub const LOSSY: [&str; 2] = ["edge3_1", "agg3_1"];
pub const LOSSY_RATE: f64 = 0.1;

pub fn blames_the_lossy_link(r: &EpochReport) -> bool {
    r.blamed.iter().any(|b| b.link == LOSSY)
}

/// No epoch blames another link than the lossy one, and the last blames it.
pub fn only_the_lossy_link_blamed(reports: &[EpochReport], what: &str) {
    for r in reports {
        assert!(
            r.blamed.iter().all(|b| b.link == LOSSY),
            "{what}: epoch {} blamed {:?} (disturbed {:?})",
            r.epoch,
            r.blamed,
            r.disturbed
        );
    }
    let last = reports.last().expect("epochs");
    assert!(
        blames_the_lossy_link(last),
        "{what}: the last epoch ({}) did not blame the lossy link {LOSSY:?}: {:?}",
        last.epoch,
        last.blamed
    );
}
