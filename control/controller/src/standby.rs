//! Primary and standby controllers over P4Runtime arbitration.
//!
//! Several `canary run` processes may watch one fabric; the switches' arbitration picks the one
//! that writes. A controller never takes switches from a live primary:
//!
//! * It first asks who is primary with the lowest election id ([`PROBE_ELECTION_ID`]), which
//!   wins only where nobody is primary. While another controller is, it stands by and asks
//!   again every fraction of an epoch.
//! * When nobody is, it connects with an election id of a generation above every one it has
//!   seen ([`election_id`]: the generation in the high 64 bits, the operator's `--election-id`
//!   in the low ones, which breaks ties between controllers taking over at once).
//! * So a controller that comes back after a standby took over finds a primary of a higher
//!   generation and stands by itself, instead of winning arbitration with its own id and
//!   fighting for the switches.
//!
//! The switches carry the state a new primary needs (pipeline, rules, epoch tags): it adopts
//! them as a restarted controller does (`canary_switch::fabric`, `Controller::start_after`).

use canary_switch::driver::{Arbitrated, SwitchDriver};
use canary_switch::fabric::Clock;
use std::time::Duration;

/// The election id that asks who is primary without taking anything: the lowest there is.
pub const PROBE_ELECTION_ID: u128 = 1;

/// The election id of a controller taking over in `generation` with the operator's `base` id.
pub fn election_id(generation: u64, base: u128) -> u128 {
    u128::from(generation) << 64 | (base & u128::from(u64::MAX))
}

/// The generation of an election id.
pub fn generation(election_id: u128) -> u64 {
    (election_id >> 64) as u64
}

/// Waits until no controller is primary on the fabric (asked of `probe`'s switch every `every`
/// of `clock`'s time), and returns the generation to take over in. A switch that does not
/// answer yet is waited for up to `patience`; after that the caller's connect reports it.
pub async fn wait_until_no_primary(
    probe: &(impl Arbitrated + SwitchDriver),
    clock: &mut impl Clock,
    every: Duration,
    patience: Duration,
    quiet: bool,
) -> u64 {
    let deadline = clock.now() + patience;
    tracing::info!(
        switch = probe_name(probe),
        "waiting for switch (asking who is primary)"
    );
    let mut seen = 0u64;
    let mut standing_by = false;
    let mut seen_free = false;
    loop {
        match probe.probe_primary().await {
            // A live primary that is reconnecting this switch leaves it without a primary for a
            // moment; taking over then would fight it. Only a switch found without a primary
            // twice, one interval apart, is taken over.
            Ok(None) if !seen_free => seen_free = true,
            Ok(None) => {
                if standing_by {
                    tracing::info!("the primary is gone: taking over");
                    if !quiet {
                        eprintln!("the primary controller is gone: taking over");
                    }
                }
                return seen + 1;
            }
            Ok(Some(primary)) => {
                seen_free = false;
                seen = seen.max(generation(primary));
                if !standing_by {
                    standing_by = true;
                    tracing::info!(primary, "another controller is primary: standing by");
                    if !quiet {
                        eprintln!(
                            "standing by: another controller is primary (election id {primary:#x}); \
                             taking over when it stops"
                        );
                    }
                }
            }
            Err(e) if !standing_by && clock.now() >= deadline => {
                tracing::warn!("cannot ask {} who is primary: {e}", probe_name(probe));
                return seen + 1;
            }
            Err(e) => {
                seen_free = false;
                tracing::debug!("asking who is primary: {e}")
            }
        }
        clock.wait(every).await;
    }
}

fn probe_name(d: &impl SwitchDriver) -> &str {
    d.name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_generation_outranks_any_base_id_and_the_probe_outranks_nothing() {
        let old = election_id(1, u128::from(u64::MAX));
        let new = election_id(2, 2);
        assert!(new > old, "a takeover outranks the controller it replaced");
        assert_eq!(generation(new), 2);
        assert!(PROBE_ELECTION_ID < election_id(1, 0));
        // Two controllers taking over in one generation: the operator's ids decide.
        assert!(election_id(3, 7) > election_id(3, 5));
    }
}
