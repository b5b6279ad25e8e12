//! What a switch sends back on the wire: BMv2 Thrift replies, digest and learn lists, and read
//! answers decoded into meters; each decoded as the drivers decode it.

use crate::fixtures::{rule_ids, tna, v1model};
use crate::pick;
use bfrt_proto::{bfrt, p4rt};
use canary_core::model::epoch_tag;
use canary_switch::bmv2_thrift::{decode_reply, Call, Outcome, Reply};
use canary_switch::contract::{Program, Table};
use canary_switch::driver::Digests;
use canary_switch::drivers::{bfruntime, bmv2, p4runtime};
use canary_switch::meters::{self, MeterCells};
use prost::Message;
use std::collections::HashMap;

/// The sequence number the thrift target's replies answer.
pub const THRIFT_SEQ: i32 = 0;

/// One BMv2 Thrift reply, to the call the first byte picks.
pub fn thrift(data: &[u8]) {
    let Some((which, rest)) = pick(data, 5) else {
        return;
    };
    let (cxt_id, name) = (0, "MyIngress.reg");
    let call = match which {
        0 => Call::ReadAll { cxt_id, name },
        1 => Call::Read {
            cxt_id,
            name,
            idx: 0,
        },
        2 => Call::Write {
            cxt_id,
            name,
            index: 0,
            value: 0,
        },
        3 => Call::WriteRange {
            cxt_id,
            name,
            start: 0,
            end: 1,
            value: 0,
        },
        _ => Call::Reset { cxt_id, name },
    };
    if let Ok(Outcome::Ok(Reply::Values(v))) = decode_reply(&call, THRIFT_SEQ, rest) {
        // Every value came from eight bytes of the reply.
        assert!(v.len() * 8 <= rest.len());
    }
}

/// A P4Runtime digest list from BMv2 (0) or a BF Runtime learn list from Tofino (1), as the
/// stream delivers them, decoded with the programs' digest layouts.
pub fn digest(data: &[u8]) {
    let Some((which, rest)) = pick(data, 2) else {
        return;
    };
    let mut out = Digests::default();
    let expected = if which == 0 {
        let Ok(list) = p4rt::DigestList::decode(rest) else {
            return;
        };
        p4runtime::decode_digest_list(v1model(), &list, &mut out);
        list.data.len()
    } else {
        let Ok(list) = bfrt::DigestList::decode(rest) else {
            return;
        };
        bfruntime::decode_digest_list(tna(), &list, &mut out);
        if list.digest_id == tna().digest.id {
            list.data.len()
        } else {
            1
        }
    };
    // Every digest is either a report or a reason.
    assert_eq!(out.reports.len() + out.bad.len(), expected);
}

/// Read answers: BF-RT register tables into meters (0), a P4Runtime counter cell and default
/// entry (1), a BF-RT default entry (2), and BMv2's register arrays into meters (3).
pub fn read_responses(data: &[u8]) {
    let Some((which, rest)) = pick(data, 4) else {
        return;
    };
    match which {
        0 => bfrt_registers(rest),
        1 => p4rt_reads(rest),
        2 => bfrt_default_entry(rest),
        _ => bmv2_registers(rest),
    }
}

fn bfrt_registers(rest: &[u8]) {
    let Ok(answer) = bfrt::ReadResponse::decode(rest) else {
        return;
    };
    let prog = tna();
    let mut by_table = HashMap::new();
    bfruntime::entries_by_table(answer, &mut by_table);
    if let Ok(pipes) = bfruntime::meter_cells(prog, &by_table) {
        harvest(prog, &pipes, 0);
    }
    // The same answer taken as a harvest's read of its rules' cells.
    if let Some(want) = meters::harvest_cells(&prog.meters, rule_ids().keys(), 0) {
        if let Ok(pipes) = bfruntime::meter_cells_at(prog, &by_table, &want) {
            harvest(prog, &pipes, 0);
        }
    }
}

fn p4rt_reads(rest: &[u8]) {
    let Ok(answer) = p4rt::ReadResponse::decode(rest) else {
        return;
    };
    let _ = p4runtime::counter_packets(&answer.entities);
    let t = v1model().table(Table::SwitchConfig);
    if let Some(args) = p4runtime::default_action_args(t, answer.entities) {
        assert_eq!(args.len(), t.params.len());
        let _ = canary_switch::entries::holds_config(&args, true, 1);
    }
}

fn bfrt_default_entry(rest: &[u8]) {
    let Ok(answer) = bfrt::ReadResponse::decode(rest) else {
        return;
    };
    let t = tna().table(Table::SwitchConfig);
    if let Some(args) = bfruntime::default_entry_args(t, answer) {
        assert_eq!(args.len(), t.params.len());
        let _ = canary_switch::entries::holds_config(&args, true, 1);
    }
}

/// BMv2's arrays hold thousands of cells, more than an input should: every array is read back
/// at its program size, all zero but for the cells the input writes, 11 bytes each: array (1),
/// cell (2, little-endian), value (8, little-endian). The first byte picks the epoch; with its
/// top bit set, the arrays come back one cell short (a register of another program).
fn bmv2_registers(rest: &[u8]) {
    let Some((&head, writes)) = rest.split_first() else {
        return;
    };
    let prog = v1model();
    let m = &prog.meters;
    let len = 2 * m.width - usize::from(head >> 7);
    let mut arrays = vec![vec![0i64; len]; 2 * (m.usm.len() + m.dsm.len())];
    let n = arrays.len();
    for w in writes.chunks_exact(11) {
        let cell = usize::from(u16::from_le_bytes([w[1], w[2]])) % len;
        let value = i64::from_le_bytes(w[3..11].try_into().expect("8 bytes"));
        arrays[usize::from(w[0]) % n][cell] = value;
    }
    let cells = bmv2::meter_cells(&arrays, m.usm.len());
    harvest(prog, std::slice::from_ref(&cells), head & 0x7f);
}

/// The harvest's decoding of every pipe's cells (epoch `epoch`), and the merge of pipes.
fn harvest(prog: &Program, pipes: &[MeterCells], epoch: u8) {
    let layout = &prog.meters;
    let config = layout.config();
    let mut decoded = Vec::new();
    for cells in pipes {
        let Ok(d) = meters::decode(layout, cells, epoch_tag(epoch.into()), rule_ids(), "fuzz")
        else {
            return;
        };
        assert_eq!(d.usm.buckets().len(), config.num_buckets());
        assert_eq!(d.dsm.buckets().len(), config.num_buckets());
        assert!(d.stale.iter().all(|c| c.index < 2 * layout.width));
        decoded.push(d);
    }
    let merged = meters::merge_pipes(decoded);
    if !pipes.is_empty() {
        assert_eq!(merged.usm.buckets().len(), config.num_buckets());
    }
}
