//! Connecting: every switch brought up, configured afresh or adopted as an earlier controller
//! left it, retried until patience runs out; and [`ConnectError`], why it gave up.

use super::slot::{adopt_state, configure, ensure_up, Slot, Up};
use super::{Clock, SwitchFabric};
use crate::driver::SwitchDriver;
use canary_core::fabric::{Resumed, SwitchError};
use futures::future::join_all;
use std::time::{Duration, Instant};

/// Why [`SwitchFabric::connect`] gave up: a run starts on a whole fabric or not at all.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Another controller is primary for `switch`: waiting would be fighting.
    #[error("{switch}: another controller is primary: {detail}")]
    NotPrimary { switch: String, detail: String },
    /// Switches still not configured when patience ran out, each with why.
    #[error("cannot configure the fabric:\n  {}", .0.join("\n  "))]
    Unconfigured(Vec<String>),
}

impl<D: SwitchDriver, C: Clock> SwitchFabric<D, C> {
    /// Connects to every switch and configures it, retrying switches that are not up yet until
    /// `patience` has passed. Fails when any switch cannot be configured by then: a run starts
    /// on a whole fabric.
    pub async fn connect(&mut self, patience: Duration) -> Result<(), ConnectError> {
        let deadline = Instant::now() + patience;
        let (epoch, attach_only, adopt) = (self.epoch, self.opts.attach_only, self.opts.adopt);
        let mut resumed = Resumed::default();
        for s in self.slots.iter().filter(|s| !s.up) {
            tracing::info!(switch = s.driver.name(), "waiting for switch");
        }
        loop {
            let pending: Vec<&mut Slot<D>> = self.slots.iter_mut().filter(|s| !s.up).collect();
            let results = join_all(pending.into_iter().map(|s| async move {
                let r = match ensure_up(s, epoch, attach_only).await {
                    Ok(Up::Kept) if adopt => adopt_state(s, attach_only).await,
                    Ok(Up::Kept) => configure(s, epoch, attach_only).await,
                    r => r,
                };
                (s.ix, s.monitor, s.driver.name().to_string(), r)
            }))
            .await;
            let mut errors = Vec::new();
            for (ix, monitor, name, r) in results {
                if r.is_ok() {
                    tracing::info!(switch = %name, "switch connected");
                }
                match r {
                    Ok(Up::Adopted(tag, rules)) => {
                        if monitor {
                            resumed.tags.push((ix, tag));
                        }
                        resumed.rules.extend(rules);
                    }
                    Ok(_) => resumed.fresh.push(ix),
                    Err(SwitchError::NotPrimary(m)) => {
                        // Another controller holds the switch: waiting would be fighting.
                        self.demoted = Some(format!("{name}: {m}"));
                        return Err(ConnectError::NotPrimary {
                            switch: name,
                            detail: m,
                        });
                    }
                    Err(e) => errors.push(format!("{name}: {e}")),
                }
            }
            if errors.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                return Err(ConnectError::Unconfigured(errors));
            }
            tracing::info!("waiting for {} switches: {}", errors.len(), errors[0]);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        if !resumed.tags.is_empty() {
            tracing::info!(
                adopted = resumed.tags.len(),
                rules = resumed.rules.len(),
                fresh = resumed.fresh.len(),
                "switches found as an earlier controller left them: resuming"
            );
            self.resumed = Some(resumed);
        }
        self.clock.start();
        Ok(())
    }
}
