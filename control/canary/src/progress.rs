//! What a long command shows while it works: a spinner with the step it is on, or a bar of its
//! epochs, on standard error. indicatif draws nothing when standard error is not a terminal,
//! so logs and pipes get only the results. `--quiet` drops the per-epoch reports, not this:
//! a run that prints only its summary still shows that it is running.

use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

/// A spinner whose message is the step under way (`set_message`).
pub fn spinner() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").expect("a valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Turns `bar` into a bar of `epochs` epochs.
pub fn epochs(bar: &ProgressBar, epochs: u64) {
    bar.set_length(epochs);
    bar.set_style(
        ProgressStyle::with_template("{spinner} epoch {pos}/{len} {wide_bar} {elapsed}")
            .expect("a valid template"),
    );
}
