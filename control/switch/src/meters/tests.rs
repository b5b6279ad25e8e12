use super::*;
use crate::contract::{MeterRow, Register};
use canary_core::capacity::Capacity;
use canary_core::fabric::RuleOp;
use canary_core::model::{epoch_tag, Shim, SwitchConfig, SwitchModel};
use canary_core::sketch::FlowHashes;
use canary_core::FlowId;

const W: usize = 1024;

fn layout() -> MeterRegisters {
    let reg = |name: String| Register {
        name,
        id: 0,
        size: 2 * W,
        index: None,
        members: vec![],
    };
    let rows = |m: &str| {
        (0..3)
            .map(|r| MeterRow {
                id: reg(format!("{m}.buckets.row{r}.id_reg")),
                count: reg(format!("{m}.buckets.row{r}.count_reg")),
            })
            .collect()
    };
    MeterRegisters {
        usm: rows("upstream_meter"),
        dsm: rows("downstream_meter"),
        width: W,
    }
}

/// Flow `i` (ports from a multiplicative hash of `i`: CRCs are linear, and flows that differ
/// only in a counter would share few buckets).
fn flow(i: u32) -> FlowId {
    let x = i.wrapping_mul(0x9E37_79B1);
    FlowId::v4(0x0a00_0000 | i, 0x0a01_0001, 17, (x >> 16) as u16, x as u16)
}

/// A monitor whose USM counted 3000 flows (collisions, dirty buckets) in epoch 7 and whose DSM
/// counted some of them on two pathBFs in epoch 8 (the other parity).
fn busy_switch(ids: &mut RuleIds) -> SwitchModel {
    let mut m = SwitchModel::new(Capacity::unlimited(
        MeterConfig::new(3, W).unwrap(),
        Capacity::of_program().hashpipe,
    ));
    m.set_config(SwitchConfig {
        monitor: true,
        mask: 1,
        epoch: epoch_tag(7),
    });
    for i in 0..3000 {
        let op = RuleOp::InstallUsm {
            switch: 0,
            flow: flow(i),
        };
        ids.for_op(&op).unwrap();
        m.apply(&op).unwrap();
        for _ in 0..=(i % 3) {
            let mut shim = Shim::default();
            m.monitor(&flow(i), FlowHashes::of(&flow(i)), &mut shim, false);
        }
    }
    for i in 0..500 {
        for bf in [0x10u32, 0x20] {
            let op = RuleOp::InstallDsm {
                switch: 0,
                flow: flow(i),
                path_bf: bf,
            };
            ids.for_op(&op).unwrap();
            m.apply(&op).unwrap();
            let mut shim = Shim {
                path_bf: bf,
                counted: true,
                epoch: epoch_tag(8),
            };
            m.monitor(&flow(i), FlowHashes::of(&flow(i)), &mut shim, false);
        }
    }
    m
}

/// The switch's registers: USM counted in epoch 7, DSM in epoch 8 (the other parity).
fn cells_of(m: &SwitchModel, ids: &RuleIds) -> MeterCells {
    let (u7, _) = m.meters_of(epoch_tag(7));
    let (_, d8) = m.meters_of(epoch_tag(8));
    let empty_u = Usm::new(u7.config()).unwrap();
    let empty_d = Dsm::new(d8.config()).unwrap();
    encode(
        W,
        &[(epoch_tag(7), &u7, &empty_d), (epoch_tag(8), &empty_u, &d8)],
        |k| ids.id_of(&k),
    )
}

#[test]
fn registers_decode_to_the_models_meters_epoch_by_epoch() {
    let mut ids = RuleIds::default();
    let m = busy_switch(&mut ids);
    let cells = cells_of(&m, &ids);
    for e in [7u64, 8] {
        let d = decode(&layout(), &cells, epoch_tag(e), &ids, "s1").unwrap();
        let (usm, dsm) = m.meters_of(epoch_tag(e));
        assert_eq!(d.usm, usm, "USM of epoch {e}");
        assert_eq!(d.dsm, dsm, "DSM of epoch {e}");
        assert!(d.stale.is_empty());
    }
    let (u7, _) = m.meters_of(epoch_tag(7));
    assert!(u7.dirty_buckets() > 100, "the USM has collisions");
    // Epoch 9 reuses epoch 7's parity: everything there is another epoch's, so empty.
    let d = decode(&layout(), &cells, epoch_tag(9), &ids, "s1").unwrap();
    assert_eq!(d.usm.occupied(), 0);
}

#[test]
fn an_unknown_or_misplaced_rule_id_fails_with_the_register_and_cell() {
    let mut ids = RuleIds::default();
    let m = busy_switch(&mut ids);
    let mut cells = cells_of(&m, &ids);
    let i = cells.usm[1]
        .id_tag
        .iter()
        .position(|&t| t == u32::from(epoch_tag(7)))
        .unwrap();
    cells.usm[1].id[i] = 999_999;
    let e = decode(&layout(), &cells, epoch_tag(7), &ids, "s1").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("switch s1: upstream_meter.buckets.row1.id_reg[{i}] holds rule ID 999999, which is not one this controller assigned")
    );
    let dsm_id = ids.id_of(&RuleKey::Dsm(flow(0), 0x10)).unwrap();
    cells.usm[1].id[i] = dsm_id;
    let e = decode(&layout(), &cells, epoch_tag(7), &ids, "s1").unwrap_err();
    assert!(
        e.to_string().contains("a DSM rule's, in a USM register"),
        "{e}"
    );
    let mut short = cells_of(&m, &ids);
    short.dsm[2].count.pop();
    let e = decode(&layout(), &short, epoch_tag(7), &ids, "s1").unwrap_err();
    assert!(
        e.to_string()
            .contains("downstream_meter.buckets.row2.count_reg: 2047 cells"),
        "{e}"
    );
}

/// Cells whose tag is more than half the tag space old are named for zeroing; younger ones,
/// never-written ones (tag 0) and cleared ones are not.
#[test]
fn cells_half_a_wrap_old_are_stale() {
    let ids = RuleIds::default();
    let mut cells = MeterCells {
        usm: (0..3).map(|_| RowCells::zeroed(2 * W)).collect(),
        dsm: (0..3).map(|_| RowCells::zeroed(2 * W)).collect(),
    };
    let now = 40_000u64;
    let tag = epoch_tag(now);
    let p = usize::from(tag & 1) * W;
    let old = epoch_tag(now - EPOCH_TAGS / 2 - 1);
    let young = epoch_tag(now - 10);
    for (i, t) in [(p, old), (p + 1, young)] {
        cells.dsm[2].id_tag[i] = u32::from(t);
        cells.dsm[2].id[i] = 5;
    }
    cells.dsm[2].id_tag[p + 2] = u32::from(old); // id 0: nothing to clear
    let d = decode(&layout(), &cells, tag, &ids, "s1").unwrap();
    assert_eq!(
        d.stale,
        [Cell {
            dsm: true,
            row: 2,
            index: p
        }]
    );
}

/// A tag no epoch has (a register holds whatever its switch sends) is an empty bucket: not
/// this epoch's, and never stale (no epoch will take it for its own). Found by fuzzing
/// (fuzz/regressions/read_responses): the age of such a tag underflowed.
#[test]
fn a_tag_no_epoch_has_is_an_empty_bucket() {
    let ids = RuleIds::default();
    let mut cells = MeterCells {
        usm: (0..3).map(|_| RowCells::zeroed(2 * W)).collect(),
        dsm: (0..3).map(|_| RowCells::zeroed(2 * W)).collect(),
    };
    let tag = epoch_tag(7);
    let p = usize::from(tag & 1) * W;
    for (i, t) in [u32::MAX, 1 << 16, EPOCH_TAGS as u32 + 2]
        .into_iter()
        .enumerate()
    {
        cells.usm[0].id_tag[p + i] = t;
        cells.usm[0].id[p + i] = 5;
    }
    let d = decode(&layout(), &cells, tag, &ids, "s1").unwrap();
    assert!(d.stale.is_empty(), "{:?}", d.stale);
    assert!(d.usm.buckets().iter().all(|b| b.flow.is_none()));
}

/// `cells` with only the cells `keep` left, every other cell zero: what a read of those cells
/// gives the decoder.
fn only(cells: &MeterCells, keep: &[Cell]) -> MeterCells {
    let mut out = MeterCells::zeroed(&layout());
    for c in keep {
        let from = if c.dsm {
            &cells.dsm[c.row]
        } else {
            &cells.usm[c.row]
        };
        let (t, i, n) = (from.id_tag[c.index], from.id[c.index], from.count[c.index]);
        let to = out.row_mut(c).unwrap();
        (to.id_tag[c.index], to.id[c.index], to.count[c.index]) = (t, i, n);
    }
    out
}

/// The harvest reads only the cells the switch's rules map to (and the sweep's), and decodes
/// from them exactly the meters a read of every cell gives: on a switch with thousands of
/// colliding flows, in both parities.
#[test]
fn the_cells_of_the_rules_decode_to_the_meters_of_every_cell() {
    let mut ids = RuleIds::default();
    let m = busy_switch(&mut ids);
    let cells = cells_of(&m, &ids);
    for e in [7u64, 8] {
        let want = harvest_cells(&layout(), ids.keys(), e).unwrap();
        let lean = decode(&layout(), &only(&cells, &want), epoch_tag(e), &ids, "s1").unwrap();
        let full = decode(&layout(), &cells, epoch_tag(e), &ids, "s1").unwrap();
        assert_eq!(lean, full, "epoch {e}");
        let p = usize::from(epoch_tag(e) & 1) * W;
        assert!(
            want.iter().all(|c| (p..p + W).contains(&c.index)),
            "the finished parity only"
        );
    }
    // A switch with a few rules: a few cells per rule and row, not the registers.
    let mut few = RuleIds::default();
    for i in 0..20 {
        few.install(RuleKey::Usm(flow(i))).unwrap();
        few.install(RuleKey::Dsm(flow(i), 0x10)).unwrap();
    }
    let want = harvest_cells(&layout(), few.keys(), 7).unwrap();
    let sweep = 6 * sweep_columns(W);
    assert!(want.len() <= 20 * 3 * 2 + sweep, "{} cells", want.len());
    assert!(want.len() >= 20 * 3, "{} cells", want.len());
}

/// Every cell of both parities is read by the sweep within `sweep_period` epochs, and that
/// period is short enough that a cell left by a removed rule is seen, and zeroed, after it
/// turns stale (half the tags' wrap) and before its tag comes round again.
#[test]
fn the_sweep_sees_every_cell_before_its_tag_comes_round() {
    for w in [W, 1 << 16] {
        let period = sweep_period(w);
        assert!(2 * period <= EPOCH_TAGS / 2, "width {w}: period {period}");
    }
    let mut seen = vec![false; 2 * W];
    for e in 0..sweep_period(W) {
        for c in harvest_cells(&layout(), std::iter::empty(), e).unwrap() {
            if !c.dsm && c.row == 1 {
                seen[c.index] = true;
            }
        }
    }
    assert!(
        seen.iter().all(|s| *s),
        "{} of {} cells",
        seen.iter().filter(|s| **s).count(),
        2 * W
    );
    // A stale cell no rule maps to is named for zeroing within the period.
    let ids = RuleIds::default();
    let now = 40_000u64;
    let mut cells = MeterCells::zeroed(&layout());
    let i = usize::from(epoch_tag(now) & 1) * W + 777;
    cells.usm[2].id_tag[i] = u32::from(epoch_tag(now - EPOCH_TAGS / 2 - 1));
    cells.usm[2].id[i] = 5;
    let found = (now..now + sweep_period(W)).find(|&e| {
        let want = harvest_cells(&layout(), ids.keys(), e).unwrap();
        let d = decode(&layout(), &only(&cells, &want), epoch_tag(e), &ids, "s1").unwrap();
        !d.stale.is_empty()
    });
    assert!(found.is_some(), "the stale cell was never read");
}
