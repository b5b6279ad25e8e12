//! Starting and ending a flow's monitoring on a segment: its DSM rule, and the USM rule
//! upstream that the flow's segments from one monitor share.

use super::capacity::{DSM, USM};
use super::{absence, FlowSelector, Monitored};
use crate::fabric::RuleOp;
use crate::topo::{SegmentId, Segments, SwitchIx};
use crate::FlowId;

impl FlowSelector {
    /// Monitors `flow` on `seg`: its DSM rule, then a USM rule upstream unless another segment's
    /// flow already has it. False when a table is full (counted), or when its DSM rule, whose
    /// install failed, has a removal held back that must go out first.
    pub(super) fn start_monitoring(
        &mut self,
        segments: &Segments,
        seg: SegmentId,
        flow: FlowId,
        path_bf: u32,
        verified: bool,
        ops: &mut Vec<RuleOp>,
    ) -> bool {
        let s = segments.get(seg);
        let (upstream, downstream) = (s.upstream(), s.downstream());
        let pending = match self.held_back_dsm(downstream, flow, path_bf) {
            absence::HeldBack::None => None,
            absence::HeldBack::Kept(i) => Some(i),
            absence::HeldBack::Unsure => return false,
        };
        let new_usm = !self.usm_users.contains_key(&(upstream, flow));
        if !new_usm {
            // Its USM counts the whole epoch, its new DSM rule only from the install on.
            self.half_counted.insert((flow, seg));
        }
        let dsm_room = pending.is_some() || self.room(downstream, DSM);
        if !dsm_room || (new_usm && !self.room(upstream, USM)) {
            self.stats.refused_full += 1;
            return false;
        }
        match pending {
            Some(i) => {
                self.deferred.remove(i);
            }
            None => {
                self.dsm_unsure.remove(&(downstream, flow, path_bf));
                ops.push(RuleOp::InstallDsm {
                    switch: downstream,
                    flow,
                    path_bf,
                });
                self.used(downstream, DSM, 1);
            }
        }
        let users = self.usm_users.entry((upstream, flow)).or_default();
        *users += 1;
        if *users == 1 {
            ops.push(RuleOp::InstallUsm {
                switch: upstream,
                flow,
            });
            self.used(upstream, USM, 1);
        }
        self.flows.insert(
            (flow, seg),
            Monitored {
                segment: seg,
                upstream,
                downstream,
                path_bf,
                idle_epochs: 0,
                selected_at: self.selections,
                verified,
                predicted: false,
                sentinel: false,
            },
        );
        *self.per_segment.entry(seg).or_default() += 1;
        self.stats.flows_added += 1;
        true
    }

    /// One monitored segment less for the USM rule (switch, flow); true when it was the last
    /// and the rule should go.
    pub(super) fn release_usm(&mut self, switch: SwitchIx, flow: FlowId) -> bool {
        let users = self
            .usm_users
            .get_mut(&(switch, flow))
            .expect("counted on insert");
        *users -= 1;
        if *users == 0 {
            self.usm_users.remove(&(switch, flow));
            return true;
        }
        false
    }
}
