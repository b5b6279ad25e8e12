use super::timing::resume_epoch;
use canary_core::model::{epoch_tag, EPOCH_TAGS};

#[test]
fn the_resumed_epoch_has_the_newest_tag_and_follows_the_report() {
    // Switches count in epoch 41; the report ends at 40 (or 39: epoch 40 was never written).
    assert_eq!(resume_epoch(&[epoch_tag(41)], 41), 41);
    assert_eq!(resume_epoch(&[epoch_tag(41)], 40), 41);
    // Died mid-flip: some monitors still in 40.
    let mixed = [epoch_tag(40), epoch_tag(41), epoch_tag(40)];
    assert_eq!(resume_epoch(&mixed, 40), 41);
    // No report: the first epoch with the tag.
    assert_eq!(resume_epoch(&[epoch_tag(7)], 0), 7);
    // Across the tag wrap, both in the tags and in the epoch number.
    let e = 3 * EPOCH_TAGS - 1;
    let wrap = [epoch_tag(e), epoch_tag(e + 1)];
    assert_eq!(resume_epoch(&wrap, e - 5), e + 1);
    // The switches are never behind the report: a tag already reported means a wrap.
    assert_eq!(resume_epoch(&[epoch_tag(10)], 12), 10 + EPOCH_TAGS);
}

use super::timing::next_drain;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

#[test]
fn late_packets_double_the_drain_up_to_half_the_epoch_and_clean_epochs_bring_it_back() {
    let (cfg, epoch) = (200 * MS, 1000 * MS);
    let mut d = cfg;
    d = next_drain(d, cfg, epoch, true);
    assert_eq!(d, 400 * MS);
    d = next_drain(d, cfg, epoch, true);
    assert_eq!(d, 500 * MS, "capped at half the epoch");
    d = next_drain(d, cfg, epoch, false);
    assert_eq!(d, 450 * MS);
    for _ in 0..20 {
        d = next_drain(d, cfg, epoch, false);
    }
    assert_eq!(d, cfg, "never below the configured drain");
    // A configured drain above half the epoch is kept, not cut.
    assert_eq!(next_drain(700 * MS, 700 * MS, epoch, true), 700 * MS);
    // A zero drain still grows when packets arrive late.
    assert_eq!(next_drain(Duration::ZERO, Duration::ZERO, epoch, true), MS);
}
