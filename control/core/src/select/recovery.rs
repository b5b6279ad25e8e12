//! A switch's rules after a restart or a controller's: re-pushed, adopted, or forgotten.

use super::capacity::{DSM, HH, USM};
use super::{FlowSelector, HhRule, Monitored};
use crate::fabric::RuleOp;
use crate::pathbf::{Decoded, PathBfCodec};
use crate::topo::{SegmentId, Segments, SwitchIx};
use crate::FlowId;
use std::collections::HashSet;

impl FlowSelector {
    /// Every rule the selector believes is installed on `switch` (to re-push after a restart).
    pub fn rules_on(
        &self,
        switch: SwitchIx,
        segments: &Segments,
        codec: &PathBfCodec,
    ) -> Vec<RuleOp> {
        let mut ops = Vec::new();
        for (&(flow, _), m) in &self.flows {
            if m.downstream == switch {
                ops.push(RuleOp::InstallDsm {
                    switch,
                    flow,
                    path_bf: m.path_bf,
                });
            }
        }
        for &(s, flow) in self.usm_users.keys() {
            if s == switch {
                ops.push(RuleOp::InstallUsm { switch, flow });
            }
        }
        for (&seg, rule) in &self.hh {
            if segments.get(seg).downstream() == switch {
                ops.push(RuleOp::InstallHh {
                    switch,
                    path_bf: codec.segment_bf[seg as usize],
                    eta: rule.eta,
                });
            }
        }
        if let Some(rule) = self.entry.get(&switch) {
            ops.push(RuleOp::InstallHh {
                switch,
                path_bf: super::entry::ENTRY_BF,
                eta: rule.eta,
            });
        }
        ops
    }

    /// Takes over the rules an earlier controller installed, read back from the switches
    /// (`rules`: installs). Every DSM rule whose segment's USM rule is there upstream becomes a
    /// monitored flow; HH rules become active ones. Returns the removals of what makes no
    /// monitored flow: a DSM rule without its USM rule (the earlier controller died between the
    /// two), a USM rule no DSM rule uses, an HH rule on no segment (an entry rule, on pathBF 0,
    /// is taken over as one).
    pub fn adopt(
        &mut self,
        rules: &[RuleOp],
        segments: &Segments,
        codec: &PathBfCodec,
    ) -> Vec<RuleOp> {
        let usm: HashSet<(SwitchIx, FlowId)> = rules
            .iter()
            .filter_map(|op| match *op {
                RuleOp::InstallUsm { switch, flow } => Some((switch, flow)),
                _ => None,
            })
            .collect();
        let mut ops = Vec::new();
        for op in rules {
            let RuleOp::InstallDsm {
                switch,
                flow,
                path_bf,
            } = *op
            else {
                continue;
            };
            let seg = match codec.decode(switch, path_bf) {
                Decoded::Segment(seg) if usm.contains(&(segments.get(seg).upstream(), flow)) => seg,
                _ => {
                    ops.push(RuleOp::RemoveDsm {
                        switch,
                        flow,
                        path_bf,
                    });
                    continue;
                }
            };
            let upstream = segments.get(seg).upstream();
            self.flows.insert(
                (flow, seg),
                Monitored {
                    segment: seg,
                    upstream,
                    downstream: switch,
                    path_bf,
                    idle_epochs: 0,
                    selected_at: self.selections,
                    verified: false,
                    predicted: false,
                    sentinel: false,
                },
            );
            self.used(switch, DSM, 1);
            *self.per_segment.entry(seg).or_default() += 1;
            let users = self.usm_users.entry((upstream, flow)).or_default();
            *users += 1;
            if *users == 1 {
                self.used(upstream, USM, 1);
            }
        }
        let mut unused: Vec<(SwitchIx, FlowId)> = usm
            .into_iter()
            .filter(|k| !self.usm_users.contains_key(k))
            .collect();
        unused.sort_unstable();
        ops.extend(
            unused
                .into_iter()
                .map(|(switch, flow)| RuleOp::RemoveUsm { switch, flow }),
        );
        self.adopt_hh(rules, codec, &mut ops);
        ops
    }

    /// The HH rules read back: those of a segment become active ones, an entry rule is taken
    /// over, the rest are removed (`ops`).
    fn adopt_hh(&mut self, rules: &[RuleOp], codec: &PathBfCodec, ops: &mut Vec<RuleOp>) {
        for op in rules {
            let RuleOp::InstallHh {
                switch,
                path_bf,
                eta,
            } = *op
            else {
                continue;
            };
            // An entry rule (`entry.rs`): kept while predictions want it; the next epoch's
            // selection removes it otherwise, as it would have.
            if path_bf == super::entry::ENTRY_BF {
                self.entry
                    .insert(switch, super::entry::EntryRule { eta, useful: 0 });
                self.used(switch, HH, 1);
                continue;
            }
            match codec.decode(switch, path_bf) {
                Decoded::Segment(seg) if codec.segment_bf[seg as usize] == path_bf => {
                    let have = self.per_segment.get(&seg).copied().unwrap_or(0);
                    self.hh.insert(
                        seg,
                        HhRule {
                            // How many it had selected before is not on the switch.
                            remaining: self.params.delta.saturating_sub(have).max(1),
                            eta,
                            reports: 0,
                        },
                    );
                    self.used(switch, HH, 1);
                }
                _ => ops.push(RuleOp::RemoveHh { switch, path_bf }),
            }
        }
    }

    /// Forgets everything about a switch's rules (it restarted): flows counted there are
    /// dropped (their rules elsewhere removed) and HH rules there are forgotten, so the next
    /// epoch asks again.
    pub fn forget_switch(&mut self, switch: SwitchIx, segments: &Segments) -> Vec<RuleOp> {
        let mut ops = Vec::new();
        let gone: Vec<(FlowId, SegmentId)> = self
            .flows
            .iter()
            .filter(|(_, m)| m.upstream == switch || m.downstream == switch)
            .map(|(&k, _)| k)
            .collect();
        for key in gone {
            let m = self.flows.remove(&key).expect("listed");
            let flow = key.0;
            let usm_stays = !self.release_usm(m.upstream, flow);
            if !usm_stays {
                self.used(m.upstream, USM, -1);
                if m.upstream != switch {
                    ops.push(RuleOp::RemoveUsm {
                        switch: m.upstream,
                        flow,
                    });
                }
            }
            if m.downstream != switch {
                if usm_stays {
                    self.half_counted_next.insert(key);
                }
                self.deferred.push(RuleOp::RemoveDsm {
                    switch: m.downstream,
                    flow,
                    path_bf: m.path_bf,
                });
            } else {
                self.used(switch, DSM, -1);
                self.dsm_unsure.remove(&(switch, flow, m.path_bf));
            }
            *self.per_segment.get_mut(&m.segment).expect("counted") -= 1;
        }
        self.hh
            .retain(|&seg, _| segments.get(seg).downstream() != switch);
        self.entry.remove(&switch);
        if let Some(u) = self.usage.get_mut(&switch) {
            u[HH] = 0;
        }
        ops
    }
}
