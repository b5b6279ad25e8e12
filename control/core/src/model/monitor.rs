//! The meter step (step 3 of the module doc), apart from the rule lookups it depends on, so a
//! caller that sends many packets of one flow with one pathBF (the simulator) can look the rules
//! up once and reuse them while the tables are unchanged.

use super::{epoch_window, Digest, Shim, SwitchModel, Tagged};
use crate::flow::FlowId;
use crate::pathbf::encode_hop;
use crate::sketch::{Dsm, FlowHashes, Usm};

/// What the rule tables say about a packet of one flow arriving with one pathBF.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MonitorRules {
    /// A DSM rule on (flow, pathBF).
    pub dsm: bool,
    /// η of the HH rule on the pathBF.
    pub hh_eta: Option<u32>,
    /// A USM rule on the flow.
    pub usm: bool,
}

impl SwitchModel {
    /// The rules that apply to a packet of `flow` arriving with `path_bf`.
    pub fn monitor_rules(&self, flow: &FlowId, path_bf: u32) -> MonitorRules {
        MonitorRules {
            dsm: self.rules.dsm.contains(&(*flow, path_bf)),
            hh_eta: self.rules.hh.get(&path_bf).copied(),
            usm: self.rules.usm.contains(flow),
        }
    }

    /// The meter step of a routed unicast packet that carries `shim` (steps 3 of the module
    /// doc): DSM or HashPipe and the HH report, the pathBF stamp, the USM and the mark.
    pub fn monitor(
        &mut self,
        flow: &FlowId,
        h: FlowHashes,
        shim: &mut Shim,
        to_host: bool,
    ) -> Option<Digest> {
        let rules = self.monitor_rules(flow, shim.path_bf);
        self.monitor_with(flow, h, shim, to_host, rules)
    }

    /// [`SwitchModel::monitor`] with the rules already looked up: `rules` must be
    /// `self.monitor_rules(flow, shim.path_bf)` as the tables are now.
    pub fn monitor_with(
        &mut self,
        flow: &FlowId,
        h: FlowHashes,
        shim: &mut Shim,
        to_host: bool,
        rules: MonitorRules,
    ) -> Option<Digest> {
        self.monitor_n(flow, h, shim, to_host, rules, 1)
    }

    /// [`SwitchModel::monitor_with`] for `n ≥ 1` consecutive packets of one flow arriving with
    /// the same shim in the same epoch: the state, the shim and the digest (if any packet asked
    /// for one) are those of `n` calls. Every step of the program is a count or a set (meters,
    /// the mark, the pathBF), except HashPipe, whose `n` updates [`HashPipe::update_n`] makes at
    /// once.
    ///
    /// [`HashPipe::update_n`]: crate::sketch::HashPipe::update_n
    pub fn monitor_n(
        &mut self,
        flow: &FlowId,
        h: FlowHashes,
        shim: &mut Shim,
        to_host: bool,
        rules: MonitorRules,
        n: u32,
    ) -> Option<Digest> {
        debug_assert_eq!(rules, self.monitor_rules(flow, shim.path_bf));
        let monitor = self.config.monitor;
        let mut digest = None;
        if monitor && n > 0 {
            if rules.dsm {
                if shim.counted && epoch_window(self.config.epoch).contains(&shim.epoch) {
                    let m = Self::instance(&mut self.dsm, shim.epoch);
                    m.update_n(flow, h, shim.path_bf, n);
                }
            } else {
                let (first, last) = self.hashpipe.update_n(h, n);
                if let Some(eta) = rules.hh_eta {
                    // The first packet's count, then `last - n + 2 ..= last` for the others.
                    let later = u64::from(last.saturating_sub(eta)).min(u64::from(n - 1));
                    let over = u64::from(first > eta) + later;
                    if over > 0 {
                        self.counters.hh_reports += over;
                        digest = Some(Digest {
                            flow: *flow,
                            path_bf: shim.path_bf,
                        });
                    }
                }
            }
        }
        shim.path_bf = encode_hop(shim.path_bf, self.config.mask, monitor);
        if monitor {
            if !to_host && rules.usm {
                let epoch = self.config.epoch;
                Self::instance(&mut self.usm, epoch).update_n(flow, h, n);
                shim.counted = true;
                shim.epoch = epoch;
            } else {
                shim.counted = false;
                shim.epoch = 0;
            }
        }
        digest
    }

    /// The meter instance of epoch tag `tag`, started afresh if it holds an older epoch.
    pub(super) fn instance<M: Resettable>(pair: &mut [Tagged<M>; 2], tag: u16) -> &mut M {
        let t = &mut pair[usize::from(tag & 1)];
        if t.tag != Some(tag) {
            t.meter.reset_all();
            t.tag = Some(tag);
        }
        &mut t.meter
    }
}

/// Meters that can be emptied.
pub(super) trait Resettable {
    fn reset_all(&mut self);
}

impl Resettable for Usm {
    fn reset_all(&mut self) {
        self.reset();
    }
}

impl Resettable for Dsm {
    fn reset_all(&mut self) {
        self.reset();
    }
}
