//! DSM removals held back one epoch, in the order they were asked for, indexed by the rule they
//! remove: every DSM rule the selector installs first looks for a held-back removal of itself,
//! and a k = 32 epoch holds back tens of thousands (a scan per install was quadratic).

use crate::fabric::RuleOp;
use crate::topo::SwitchIx;
use crate::FlowId;
use rustc_hash::FxHashMap;

type DsmKey = (SwitchIx, FlowId, u32);

#[derive(Clone, Debug, Default)]
pub(super) struct Deferred {
    /// In order; `None` where a removal was taken back.
    ops: Vec<Option<RuleOp>>,
    /// Where each rule's removals stand in `ops`, ascending.
    at: FxHashMap<DsmKey, Vec<usize>>,
}

fn key(op: &RuleOp) -> Option<DsmKey> {
    match *op {
        RuleOp::RemoveDsm {
            switch,
            flow,
            path_bf,
        } => Some((switch, flow, path_bf)),
        _ => None,
    }
}

impl Deferred {
    pub fn push(&mut self, op: RuleOp) {
        if let Some(k) = key(&op) {
            self.at.entry(k).or_default().push(self.ops.len());
        }
        self.ops.push(Some(op));
    }

    /// The first held-back removal of DSM rule (switch, flow, path_bf), if any.
    pub fn position(&self, switch: SwitchIx, flow: FlowId, path_bf: u32) -> Option<usize> {
        self.at
            .get(&(switch, flow, path_bf))
            .and_then(|v| v.first().copied())
    }

    /// Takes back the removal at `i` (from [`Deferred::position`]).
    pub fn remove(&mut self, i: usize) {
        let Some(op) = self.ops[i].take() else {
            return;
        };
        if let Some(k) = key(&op) {
            if let Some(v) = self.at.get_mut(&k) {
                v.retain(|&j| j != i);
                if v.is_empty() {
                    self.at.remove(&k);
                }
            }
        }
    }

    /// All held-back removals, in order; none is left.
    pub fn take(&mut self) -> Vec<RuleOp> {
        self.at.clear();
        std::mem::take(&mut self.ops)
            .into_iter()
            .flatten()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rm(switch: SwitchIx, path_bf: u32) -> RuleOp {
        RuleOp::RemoveDsm {
            switch,
            flow: FlowId::v4(1, 2, 6, 3, 4),
            path_bf,
        }
    }

    #[test]
    fn finds_the_first_removal_of_a_rule_and_keeps_the_order() {
        let flow = FlowId::v4(1, 2, 6, 3, 4);
        let mut d = Deferred::default();
        for op in [rm(1, 7), rm(2, 7), rm(1, 7), rm(1, 8)] {
            d.push(op);
        }
        assert_eq!(d.position(1, flow, 7), Some(0));
        assert_eq!(d.position(3, flow, 7), None);
        d.remove(0);
        assert_eq!(d.position(1, flow, 7), Some(2));
        d.remove(2);
        assert_eq!(d.position(1, flow, 7), None);
        assert_eq!(d.take(), [rm(2, 7), rm(1, 8)]);
        assert!(d.take().is_empty());
        assert_eq!(d.position(2, flow, 7), None);
    }
}
