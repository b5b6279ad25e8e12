//! The layout against synthetic register lists; the decode against the Rust model, with the
//! registers filled the way p4src/tna/meter_row.p4 fills them.

use super::*;
use canary_core::sketch::{meter_index, FlowHashes};
use canary_core::FlowId;

const WIDTH: usize = 1024;

/// Register tables shaped like the compiled p4src/tna, plus unrelated ones.
fn program(rows: usize, cells: usize) -> Vec<(String, usize)> {
    let mut regs = vec![("pipe.CanaryIngress.other_reg".to_string(), 8)];
    for meter in ["upstream_meter", "downstream_meter"] {
        for r in 0..rows {
            for f in ROW_REGISTERS {
                regs.push((
                    format!("pipe.CanaryIngress.{meter}.meter.row{r}.{f}_reg"),
                    cells,
                ));
            }
        }
    }
    // As p4src/tna/hashpipe.p4: a count_reg per stage, fingerprint copies in stages 0 and 1.
    for r in [
        "stage0.count",
        "stage0.fp",
        "stage1.count",
        "stage1_fp.fp",
        "stage2.count",
    ] {
        regs.push((format!("pipe.CanaryIngress.hashpipe.{r}_reg"), 32));
    }
    regs
}

fn layout_of(regs: &[(String, usize)]) -> Result<TnaMeterLayout, LayoutError> {
    TnaMeterLayout::from_registers(regs.iter().map(|(n, s)| (n.as_str(), *s)))
}

#[test]
fn layout_reads_rows_and_width_from_the_program() {
    let l = layout_of(&program(3, 2 * WIDTH)).unwrap();
    assert_eq!(l.usm_config(), MeterConfig::new(3, WIDTH).unwrap());
    assert_eq!(l.dsm_config(), MeterConfig::new(3, WIDTH).unwrap());
    assert_eq!(l.meter_names().len(), 12);
    assert_eq!(
        l.meter_names()[6],
        "pipe.CanaryIngress.downstream_meter.meter.row0.id_reg"
    );
    assert_eq!(l.hashpipe_names().len(), 5);
    assert!(l
        .hashpipe_names()
        .contains(&"pipe.CanaryIngress.hashpipe.stage1_fp.fp_reg".to_string()));
    let dsm_state = "pipe.CanaryIngress.downstream_meter.meter.row2.state_reg";
    assert_eq!(
        l.parity_cells_of(dsm_state, Parity::Odd),
        Some(WIDTH..2 * WIDTH)
    );
    assert_eq!(
        l.parity_cells_of("pipe.CanaryIngress.other_reg", Parity::Odd),
        None
    );
}

#[test]
fn layout_refuses_what_it_does_not_understand() {
    let mut regs = program(3, 2 * WIDTH);
    regs.push((
        "pipe.CanaryIngress.upstream_meter.meter.row0.path_bf_reg".into(),
        2 * WIDTH,
    ));
    let e = layout_of(&regs).unwrap_err();
    assert!(
        e.to_string().contains("path_bf_reg") && e.to_string().contains("{id,state}"),
        "{e}"
    );

    let mut regs = program(3, 2 * WIDTH);
    regs.retain(|(n, _)| !n.ends_with("downstream_meter.meter.row1.state_reg"));
    let e = layout_of(&regs).unwrap_err();
    assert!(
        e.to_string()
            .contains("downstream_meter.meter.row1.state_reg"),
        "{e}"
    );

    let mut regs = program(3, 2 * WIDTH);
    regs[3].1 = 2 * WIDTH + 2;
    let e = layout_of(&regs).unwrap_err();
    assert!(matches!(e, LayoutError::Size { .. }), "{e}");

    let e = layout_of(&program(3, 2 * WIDTH + 1)).unwrap_err();
    assert!(
        matches!(e, LayoutError::Size { .. }),
        "odd size: no two parity halves: {e}"
    );

    let mut regs = program(3, 2 * WIDTH);
    regs.push(("pipe.CanaryIngress.hashpipe.stage4.count_reg".into(), 32));
    let e = layout_of(&regs).unwrap_err();
    assert!(e.to_string().contains("stage4"), "{e}");
}

/// One packet through one row of p4src/tna/meter_row.p4: `id_claim`, then `count_clean` or
/// `count_and_dirty`.
fn tna_row_packet(row: &mut RowCells, cell: usize, id: u32) {
    let id = u64::from(id);
    let mismatch = if row.id[cell] == 0 {
        row.id[cell] = id;
        false
    } else {
        row.id[cell] != id
    };
    if row.dirty[cell] == 0 {
        row.count[cell] += 1;
        if mismatch {
            row.dirty[cell] = 1;
        }
    }
}

fn empty_rows(n: usize) -> Vec<RowCells> {
    vec![
        RowCells {
            id: vec![0; 2 * WIDTH],
            dirty: vec![0; 2 * WIDTH],
            count: vec![0; 2 * WIDTH],
        };
        n
    ]
}

fn flow(i: u32) -> FlowId {
    FlowId {
        src: 0x0a00_0000 | (i % 200),
        dst: 0x0a01_0000 | (i / 200),
        proto: 6,
        sport: 1000 + (i % 7) as u16,
        dport: 80,
    }
}

/// Meters that store rule IDs decode to exactly the model's meters, which store flows: with
/// collisions (3 000 flows in 1 024 columns), a flow on two paths (two DSM rules), a rule
/// removed and re-installed mid-epoch, and the other parity's half full of another epoch.
#[test]
fn id_meters_decode_to_the_models_buckets() {
    let l = layout_of(&program(3, 2 * WIDTH)).unwrap();
    let cfg = l.usm_config();
    let mut ids = RuleIds::default();
    let mut rows = empty_rows(6);
    let mut usm = Usm::new(cfg).unwrap();
    let mut dsm = Dsm::new(cfg).unwrap();
    let parity = Parity::Odd;
    let base = parity.index() * WIDTH;

    let mut send = |rows: &mut Vec<RowCells>, ids: &mut RuleIds, f: FlowId, bf: u32| {
        let h = FlowHashes::of(&f);
        let u = ids.install(RuleKey::Usm(f)).unwrap();
        let d = ids.install(RuleKey::Dsm(f, bf)).unwrap();
        for r in 0..3 {
            let col = base + meter_index(h, r, WIDTH);
            tna_row_packet(&mut rows[r], col, u);
            tna_row_packet(&mut rows[3 + r], col, d);
        }
        usm.update(&f, h);
        dsm.update(&f, h, bf);
    };
    for i in 0..3000u32 {
        for _ in 0..(1 + i % 3) {
            send(&mut rows, &mut ids, flow(i), 0x8000_0001);
        }
    }
    // Flow 5 takes a second path: a second DSM rule, the same USM rule.
    send(&mut rows, &mut ids, flow(5), 0x8000_0100);
    // Flow 7's rules are removed and re-installed: the same IDs, so the buckets still agree.
    ids.remove(&RuleKey::Usm(flow(7)));
    ids.remove(&RuleKey::Dsm(flow(7), 0x8000_0001));
    send(&mut rows, &mut ids, flow(7), 0x8000_0001);
    // The even half: another epoch's counts, which this decode must not see.
    for row in &mut rows {
        row.id[..WIDTH].fill(u64::from(ids.id(&RuleKey::Usm(flow(1))).unwrap()));
        row.count[..WIDTH].fill(99);
    }

    assert!(
        usm.dirty_buckets() > 0 && dsm.dirty_buckets() > 0,
        "collisions exercised"
    );
    let snap = l.decode("tor1", 4, parity, &rows, &ids).unwrap();
    assert_eq!((snap.switch, snap.parity), (4, parity));
    assert_eq!(snap.usm, usm);
    assert_eq!(snap.dsm, dsm);
}

#[test]
fn decode_names_the_register_and_cell_of_a_bad_value() {
    let l = layout_of(&program(3, 2 * WIDTH)).unwrap();
    let mut ids = RuleIds::default();
    let usm_id = ids.install(RuleKey::Usm(flow(1))).unwrap();
    let check = |rows: &[RowCells], ids: &RuleIds, register: &str, index: usize, what: &str| {
        let e = l.decode("tor1", 0, Parity::Even, rows, ids).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("tor1")
                && s.contains(register)
                && s.contains(&format!("[{index}]"))
                && s.contains(what),
            "{s}"
        );
    };

    let mut rows = empty_rows(6);
    rows[1].id[17] = 12345;
    check(
        &rows,
        &ids,
        "upstream_meter.meter.row1.id_reg",
        17,
        "rule ID this controller assigned",
    );

    let mut rows = empty_rows(6);
    rows[4].id[3] = u64::from(usm_id);
    check(
        &rows,
        &ids,
        "downstream_meter.meter.row1.id_reg",
        3,
        "DSM rule ID",
    );

    let mut rows = empty_rows(6);
    rows[0].id[5] = u64::from(usm_id);
    rows[0].dirty[5] = 2;
    check(
        &rows,
        &ids,
        "upstream_meter.meter.row0.state_reg",
        5,
        "dirty flag",
    );

    let mut rows = empty_rows(6);
    rows[2].count.truncate(WIDTH - 1);
    let e = l.decode("tor1", 0, Parity::Even, &rows, &ids).unwrap_err();
    assert!(matches!(e, HarvestError::Length { .. }), "{e}");
}

/// A removed rule's buckets still decode in the two harvests after the removal.
#[test]
fn a_removed_rule_decodes_until_both_halves_are_cleared() {
    let l = layout_of(&program(3, 2 * WIDTH)).unwrap();
    let mut ids = RuleIds::default();
    let k = RuleKey::Usm(flow(1));
    let id = ids.install(k).unwrap();
    let mut rows = empty_rows(6);
    rows[0].id[WIDTH + 9] = u64::from(id);
    rows[0].count[WIDTH + 9] = 3;
    ids.remove(&k);
    ids.harvested(); // the even half
    let snap = l.decode("tor1", 0, Parity::Odd, &rows, &ids).unwrap();
    assert_eq!(snap.usm.bucket(0, 9).flow, Some(flow(1)));
    assert_eq!(snap.usm.bucket(0, 9).count, 3);
}
