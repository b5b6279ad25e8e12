//! A switch's forwarding rewritten in place (links taken out of service or put back): the
//! writes that take what it holds to what it should hold, in an order every lookup between them
//! still finds a whole path.

use super::{Change, Entry, Forwarding, Key, Write};
use crate::contract::Table;
use std::collections::HashMap;

/// The writes from `old` to `new`, in three batches to be written one after the other: new
/// entries (new ECMP sizes' remainders and new groups' members before any route names them),
/// then entries whose action changed (members and routes), then entries no longer used (routes
/// first, then what they named). Multicast groups are not compared: flooding keeps the whole
/// fabric's tree while unicast routes move.
pub fn forwarding_rewrite(old: &Forwarding, new: &Forwarding) -> [Vec<Write>; 3] {
    let key = |e: &Entry| (e.table, e.keys.clone());
    let was: HashMap<(Table, Vec<Key>), &Entry> = old.entries.iter().map(|e| (key(e), e)).collect();
    let now: HashMap<(Table, Vec<Key>), &Entry> = new.entries.iter().map(|e| (key(e), e)).collect();
    let write = |change, e: &Entry| Write {
        change,
        entry: e.clone(),
    };
    let inserts = new
        .entries
        .iter()
        .filter(|e| !was.contains_key(&key(e)))
        .map(|e| write(Change::Insert, e))
        .collect();
    let modifies = new
        .entries
        .iter()
        .filter(|e| was.get(&key(e)).is_some_and(|o| o.args != e.args))
        .map(|e| write(Change::Modify, e))
        .collect();
    // `old` lists routes last: deleting in reverse drops a route before the group it names.
    let deletes = old
        .entries
        .iter()
        .rev()
        .filter(|e| !now.contains_key(&key(e)))
        .map(|e| write(Change::Delete, e))
        .collect();
    [inserts, modifies, deletes]
}
