//! Rule changes on the switches: applied in one call, the failed ones told to flow selection
//! (a flow whose DSM rule may be missing is not expected), every one counted for the epoch's
//! report.

use super::Controller;
use crate::report::RuleCounts;
use canary_core::fabric::{Fabric, RuleOp};

impl Controller {
    pub(super) async fn apply<F: Fabric>(
        &mut self,
        fabric: &mut F,
        ops: &[RuleOp],
        counts: &mut RuleCounts,
    ) {
        if ops.is_empty() {
            return;
        }
        let failed = fabric.apply(ops).await;
        if !failed.is_empty() {
            let ops: Vec<RuleOp> = failed.iter().map(|(op, _)| op.clone()).collect();
            self.selector.on_failed(&ops);
        }
        for (op, e) in &failed {
            tracing::warn!(
                switch = self.topo.name_of(op.switch()),
                "rule change failed: {e}"
            );
        }
        counts.failed += failed.len() as u32;
        for op in ops {
            if op.is_install() {
                counts.installed += 1;
            } else {
                counts.removed += 1;
            }
        }
    }
}
