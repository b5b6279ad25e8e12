//! The rule IDs the TNA meters store instead of flow IDs (`p4src/tna/meter_row.p4`).
//!
//! Every USM rule (a flow) and DSM rule (a flow and a pathBF) installed on a Tofino switch
//! carries an ID of its own as its action parameter, and a meter bucket holds the ID of the rule
//! whose packets took it. The harvest maps IDs back to flows. For that to equal the v1model
//! meters, which store the flow itself:
//! * one rule key has one ID while a bucket may hold it: re-installing a rule that was removed
//!   gives it back its old ID while that ID can still be in the meters;
//! * no two keys share an ID at any time a bucket may hold either;
//! * a removed rule's ID stays decodable until both parity halves have been cleared since: two
//!   harvests (each clears one parity), since no packet takes the ID once the rule is gone.
//!
//! IDs are per switch (each switch's buckets hold its own rules' IDs), from 1 (0 is an empty
//! bucket) up to [`MAX_ID`] (bit 31 of a bucket's ID is its dirty flag), wrapping past it and
//! skipping IDs still held.

use std::collections::HashMap;

use canary_core::fabric::RuleOp;
use canary_core::FlowId;
use serde::{Deserialize, Serialize};

/// What a rule matches: the key of a `usm_table` or `dsm_table` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RuleKey {
    Usm(FlowId),
    Dsm(FlowId, u32),
}

/// The largest rule ID: a meter bucket keeps its dirty flag in bit 31 of the ID.
pub const MAX_ID: u32 = (1 << 31) - 1;

/// Harvests a removed rule's ID survives: one per parity half.
const RETIRE_AFTER_HARVESTS: u8 = 2;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("all {held} rule IDs are held by installed or recently removed rules")]
pub struct RuleIdsExhausted {
    pub held: usize,
}

/// The IDs of one switch's meter rules.
#[derive(Clone, Debug)]
pub struct RuleIds {
    next: u32,
    /// Installed rules.
    live: HashMap<RuleKey, u32>,
    /// Removed rules whose ID a bucket may still hold: (ID, harvests left).
    retiring: HashMap<RuleKey, (u32, u8)>,
    /// Every ID a bucket may hold, live or retiring.
    by_id: HashMap<u32, RuleKey>,
    /// Harvests during which a bucket may hold an ID this table never knew: after adopting
    /// what an earlier controller installed, whose removed rules' IDs were not read back.
    unknown_ok: u8,
}

impl Default for RuleIds {
    fn default() -> Self {
        Self::starting_at(1)
    }
}

impl RuleIds {
    /// An empty table whose first fresh ID is `first` (tests start near [`MAX_ID`]).
    pub fn starting_at(first: u32) -> Self {
        RuleIds {
            next: first.clamp(1, MAX_ID),
            live: HashMap::new(),
            retiring: HashMap::new(),
            by_id: HashMap::new(),
            unknown_ok: 0,
        }
    }

    /// The IDs of rules an earlier controller installed, read back from the switch. Rules it
    /// removed shortly before are not on the switch, but their IDs may be in buckets for two
    /// more harvests: until then [`RuleIds::unknown_ok`] says such a bucket is no error.
    pub fn adopted(live: impl IntoIterator<Item = (RuleKey, u32)>) -> Self {
        let mut ids = RuleIds::default();
        for (key, id) in live {
            let id = id.clamp(1, MAX_ID);
            ids.live.insert(key, id);
            ids.by_id.insert(id, key);
            ids.next = ids.next.max(id.saturating_add(1)).min(MAX_ID);
        }
        ids.unknown_ok = RETIRE_AFTER_HARVESTS;
        ids
    }

    /// Whether a bucket holding an ID this table does not know may be an earlier controller's
    /// removed rule (read as an empty bucket) rather than a fault.
    pub fn unknown_ok(&self) -> bool {
        self.unknown_ok > 0
    }

    /// Every rule whose ID a bucket may hold now: installed or retiring.
    pub fn keys(&self) -> impl Iterator<Item = RuleKey> + '_ {
        self.by_id.values().copied()
    }

    /// The ID for installing `key`: its current one if installed or retiring, else a fresh one.
    pub fn install(&mut self, key: RuleKey) -> Result<u32, RuleIdsExhausted> {
        if let Some(&id) = self.live.get(&key) {
            return Ok(id);
        }
        if let Some((id, _)) = self.retiring.remove(&key) {
            self.live.insert(key, id);
            return Ok(id);
        }
        let id = self.fresh()?;
        self.live.insert(key, id);
        self.by_id.insert(id, key);
        Ok(id)
    }

    fn fresh(&mut self) -> Result<u32, RuleIdsExhausted> {
        if self.by_id.len() >= MAX_ID as usize {
            return Err(RuleIdsExhausted {
                held: self.by_id.len(),
            });
        }
        loop {
            let id = self.next;
            self.next = if self.next >= MAX_ID {
                1
            } else {
                self.next + 1
            };
            if !self.by_id.contains_key(&id) {
                return Ok(id);
            }
        }
    }

    /// `key`'s rule was removed: its ID stays decodable for [`RETIRE_AFTER_HARVESTS`] harvests.
    /// Returns the ID, or `None` for a key that was not installed.
    pub fn remove(&mut self, key: &RuleKey) -> Option<u32> {
        let id = self.live.remove(key)?;
        self.retiring.insert(*key, (id, RETIRE_AFTER_HARVESTS));
        Some(id)
    }

    /// What `op` does to the IDs: a USM or DSM install gets its ID (`Some`), a removal retires
    /// it; HH rules carry none.
    pub fn for_op(&mut self, op: &RuleOp) -> Result<Option<u32>, RuleIdsExhausted> {
        match *op {
            RuleOp::InstallUsm { flow, .. } => self.install(RuleKey::Usm(flow)).map(Some),
            RuleOp::InstallDsm { flow, path_bf, .. } => {
                self.install(RuleKey::Dsm(flow, path_bf)).map(Some)
            }
            RuleOp::RemoveUsm { flow, .. } => {
                self.remove(&RuleKey::Usm(flow));
                Ok(None)
            }
            RuleOp::RemoveDsm { flow, path_bf, .. } => {
                self.remove(&RuleKey::Dsm(flow, path_bf));
                Ok(None)
            }
            RuleOp::InstallHh { .. } | RuleOp::RemoveHh { .. } => Ok(None),
        }
    }

    /// The ID of an installed rule.
    pub fn id(&self, key: &RuleKey) -> Option<u32> {
        self.live.get(key).copied()
    }

    /// The ID a bucket holding `key` carries: its rule's, installed or recently removed.
    pub fn id_of(&self, key: &RuleKey) -> Option<u32> {
        self.live
            .get(key)
            .or_else(|| self.retiring.get(key).map(|(id, _)| id))
            .copied()
    }

    /// The rule an ID in a bucket stands for.
    pub fn key(&self, id: u32) -> Option<RuleKey> {
        self.by_id.get(&id).copied()
    }

    /// One parity half was harvested and cleared: retiring IDs age, and those no bucket can
    /// hold any more are freed.
    pub fn harvested(&mut self) {
        self.unknown_ok = self.unknown_ok.saturating_sub(1);
        let by_id = &mut self.by_id;
        self.retiring.retain(|_, (id, left)| {
            *left -= 1;
            if *left == 0 {
                by_id.remove(id);
            }
            *left > 0
        });
    }

    /// IDs a bucket may hold (installed and retiring rules).
    pub fn held(&self) -> usize {
        self.by_id.len()
    }

    /// What a decoder needs of this table now, for a harvest read in another process (a
    /// cluster's harvest worker): every ID a bucket may hold, in ID order.
    pub fn table(&self) -> IdTable {
        let mut by_id: Vec<(u32, RuleKey)> = self.by_id.iter().map(|(&i, &k)| (i, k)).collect();
        by_id.sort_unstable_by_key(|&(i, _)| i);
        IdTable {
            by_id,
            unknown_ok: self.unknown_ok > 0,
        }
    }

    /// A table that decodes as the one [`RuleIds::table`] was taken from did; it assigns no IDs
    /// of its own that the switch would know.
    pub fn for_decoding(table: &IdTable) -> Self {
        let mut ids = RuleIds::default();
        for &(id, key) in &table.by_id {
            ids.by_id.insert(id, key);
        }
        ids.unknown_ok = u8::from(table.unknown_ok);
        ids
    }
}

/// The rule IDs a bucket of one switch may hold, as a harvest elsewhere decodes them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdTable {
    pub by_id: Vec<(u32, RuleKey)>,
    /// Whether an ID the table does not know may be an earlier controller's removed rule.
    pub unknown_ok: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(n: u32) -> FlowId {
        FlowId::v4(n, 0x0a00_0001, 6, 1000, 80)
    }

    #[test]
    fn ids_start_at_one_and_are_distinct_per_key() {
        let mut ids = RuleIds::default();
        let a = ids.install(RuleKey::Usm(flow(1))).unwrap();
        let b = ids.install(RuleKey::Dsm(flow(1), 7)).unwrap();
        let c = ids.install(RuleKey::Dsm(flow(1), 8)).unwrap();
        assert_eq!((a, b, c), (1, 2, 3));
        assert_eq!(ids.install(RuleKey::Usm(flow(1))).unwrap(), a, "idempotent");
        assert_eq!(ids.key(b), Some(RuleKey::Dsm(flow(1), 7)));
        assert_eq!(ids.key(0), None, "0 is an empty bucket");
    }

    #[test]
    fn removed_id_decodes_for_two_harvests_and_comes_back_on_reinstall() {
        let mut ids = RuleIds::default();
        let k = RuleKey::Usm(flow(1));
        let id = ids.install(k).unwrap();
        assert_eq!(ids.remove(&k), Some(id));
        assert_eq!(ids.id(&k), None, "no longer installed");
        ids.harvested();
        assert_eq!(
            ids.key(id),
            Some(k),
            "the other parity half may still hold it"
        );
        // Re-installed while retiring: the same ID, so buckets from before and after agree.
        assert_eq!(ids.install(k).unwrap(), id);
        ids.harvested();
        ids.harvested();
        assert_eq!(ids.key(id), Some(k), "live again: never expires");
        ids.remove(&k);
        ids.harvested();
        ids.harvested();
        assert_eq!(ids.key(id), None, "both halves cleared since the removal");
        assert_eq!(ids.held(), 0);
        assert_ne!(ids.install(k).unwrap(), id, "a fresh ID after expiry");
    }

    #[test]
    fn wraps_past_max_skipping_held_ids_and_zero() {
        let mut ids = RuleIds::starting_at(MAX_ID - 1);
        let a = ids.install(RuleKey::Usm(flow(1))).unwrap();
        let b = ids.install(RuleKey::Usm(flow(2))).unwrap();
        assert_eq!((a, b), (MAX_ID - 1, MAX_ID));
        let c = ids.install(RuleKey::Usm(flow(3))).unwrap();
        assert_eq!(c, 1, "wraps to 1, never 0");
        // Hold 2 and 3, free 1, and wrap again: the next fresh ID skips the held ones.
        let d = ids.install(RuleKey::Usm(flow(4))).unwrap();
        let e = ids.install(RuleKey::Usm(flow(5))).unwrap();
        assert_eq!((d, e), (2, 3));
        ids.next = 1;
        assert_eq!(ids.install(RuleKey::Usm(flow(6))).unwrap(), 4);
    }

    #[test]
    fn a_table_taken_for_another_process_decodes_the_same_ids() {
        let mut ids = RuleIds::default();
        let (a, b) = (RuleKey::Usm(flow(1)), RuleKey::Dsm(flow(2), 9));
        let (ia, ib) = (ids.install(a).unwrap(), ids.install(b).unwrap());
        ids.remove(&a);
        let there = RuleIds::for_decoding(&ids.table());
        assert_eq!(there.key(ia), Some(a), "a retiring rule still decodes");
        assert_eq!(there.key(ib), Some(b));
        assert_eq!(there.key(ib + 1), None);
        assert!(!there.unknown_ok());
        let adopted = RuleIds::adopted([(b, 40)]);
        assert!(RuleIds::for_decoding(&adopted.table()).unknown_ok());
    }

    #[test]
    fn removing_an_unknown_rule_changes_nothing() {
        let mut ids = RuleIds::default();
        assert_eq!(ids.remove(&RuleKey::Usm(flow(9))), None);
        ids.harvested();
        assert_eq!(ids.held(), 0);
    }
}
