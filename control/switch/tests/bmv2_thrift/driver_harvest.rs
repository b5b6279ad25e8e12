//! The BMv2 driver's harvest: reference-model meters written into the registers come back
//! through the driver and the decoder.

use crate::bmv2_switch::{missing, Switch};
use crate::{common, compiled, contract, pair, reg};
use canary_core::model::epoch_tag;
use canary_core::sketch::{Dsm, FlowHashes, MeterConfig, Usm};
use canary_core::FlowId;
use canary_switch::bmv2_thrift::{Call, ThriftClient};
use canary_switch::driver::SwitchDriver;
use canary_switch::drivers::bmv2::{Bmv2Driver, Bmv2Options, CXT_ID};
use canary_switch::meters::{self, Cell, MeterCells};
use canary_switch::rule_ids::{RuleIds, RuleKey};
use canary_switch::switches::{BoundSwitch, SwitchEndpoint};

fn udp(sport: u16) -> FlowId {
    FlowId::v4(0x0a00_0101, 0x0a00_0202, 17, sport, 2000)
}

/// Writes `cells` (register, index, value), pipelined.
fn write_all(c: &mut ThriftClient, cells: &[(String, i32, i64)]) {
    let calls: Vec<Call> = cells
        .iter()
        .map(|(name, index, value)| Call::Write {
            cxt_id: CXT_ID,
            name,
            index: *index,
            value: *value,
        })
        .collect();
    c.pipeline(&calls).unwrap();
}

/// The writes that put `cells` into a switch's meter registers (cells with a tag only).
fn meter_writes(cells: &MeterCells) -> Vec<(String, i32, i64)> {
    let mut writes = Vec::new();
    for (rows, regs) in [
        (&cells.usm, &contract().meters.usm),
        (&cells.dsm, &contract().meters.dsm),
    ] {
        for (row, r) in rows.iter().zip(regs) {
            for i in 0..row.id_tag.len() {
                if row.id_tag[i] != 0 {
                    writes.push((r.id.name.clone(), i as i32, pair(row.id_tag[i], row.id[i])));
                    writes.push((r.count.name.clone(), i as i32, i64::from(row.count[i])));
                }
            }
        }
    }
    writes
}

fn driver(sw: &Switch, name: &str) -> Bmv2Driver {
    let bound = BoundSwitch {
        ix: 0,
        name: name.into(),
        endpoint: SwitchEndpoint {
            grpc: "127.0.0.1:1".into(),
            device_id: 0,
            thrift: Some(format!("127.0.0.1:{}", sw.thrift_port())),
            ports: Default::default(),
            tls: None,
        },
        ports: Default::default(),
    };
    Bmv2Driver::new(bound, true, compiled().clone(), Bmv2Options::default())
}

/// Reference meters in a switch's registers (epoch 7's USM and DSM in one parity, epoch 8's
/// USM in the other, a stale cell and HashPipe) come back through the driver and the decoder
/// exactly; HashPipe and the stale cell are then zeroed, nothing else.
#[test]
fn the_driver_reads_the_model_meters_back_epoch_by_epoch() {
    if !common::runnable("bmv2_thrift", &missing()) {
        return;
    }
    let sw = Switch::start(12);
    let mut c = sw.client("s12");
    let config = MeterConfig::new(3, 1024).unwrap();
    assert_eq!(contract().meters.config(), config);

    // 1500 flows into 1024-wide rows: clean buckets, dirty ones (collisions), counts of many
    // packets, pathBFs of two paths, a count at 2^32 - 1.
    let mut ids = RuleIds::default();
    let mut usm = Usm::new(config).unwrap();
    let mut dsm = Dsm::new(config).unwrap();
    for i in 0..6000u32 {
        let f = udp(1000 + (i * 7 % 1500) as u16);
        let h = FlowHashes::of(&f);
        let bf = if f.sport.is_multiple_of(3) {
            0x0101_0000
        } else {
            0x0000_8080
        };
        ids.install(RuleKey::Usm(f)).unwrap();
        ids.install(RuleKey::Dsm(f, bf)).unwrap();
        usm.update(&f, h);
        dsm.update(&f, h, bf);
    }
    let big = FlowId::v4(0x0a00_0101, 0x0a00_0202, 6, 443, 51000);
    ids.install(RuleKey::Dsm(big, 0xffff_ffff)).unwrap();
    dsm.update_n(&big, FlowHashes::of(&big), 0xffff_ffff, u32::MAX);
    assert!(usm.dirty_buckets() > 100 && usm.occupied() > 2000);
    let mut next = Usm::new(config).unwrap();
    let f = udp(7);
    ids.install(RuleKey::Usm(f)).unwrap();
    next.update_n(&f, FlowHashes::of(&f), 5);
    let empty = Dsm::new(config).unwrap();
    let (t7, t8) = (epoch_tag(7), epoch_tag(8));
    let cells = meters::encode(1024, &[(t7, &usm, &dsm), (t8, &next, &empty)], |k| {
        ids.id_of(&k)
    });
    let mut writes = meter_writes(&cells);
    // A stale cell: epoch 7's parity, a tag more than half a wrap older.
    let tags = canary_core::model::EPOCH_TAGS;
    let stale_tag = epoch_tag(7 + tags - tags / 2 - 1);
    let free = (0..1024)
        .find(|&col| cells.dsm[2].id_tag[(t7 as usize & 1) * 1024 + col] == 0)
        .unwrap();
    let stale_index = (t7 as usize & 1) * 1024 + free;
    writes.push((
        reg("downstream_meter.buckets.row2.id_reg"),
        stale_index as i32,
        pair(u32::from(stale_tag), 1),
    ));
    writes.push((reg("hashpipe.stage2.count_reg"), 17, pair(0xabcd_0001, 9)));
    write_all(&mut c, &writes);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut d = driver(&sw, "s12");
    let pipes = rt.block_on(d.read_meters()).unwrap();
    assert_eq!(pipes.len(), 1, "BMv2 has one pipe");
    let layout = &contract().meters;
    let got7 = meters::decode(layout, &pipes[0], t7, &ids, "s12").unwrap();
    assert_eq!(got7.usm, usm, "USM of epoch 7 equals the model");
    assert_eq!(got7.dsm, dsm, "DSM of epoch 7 equals the model");
    assert_eq!(
        got7.stale,
        [Cell {
            dsm: true,
            row: 2,
            index: stale_index
        }]
    );
    let got8 = meters::decode(layout, &pipes[0], t8, &ids, "s12").unwrap();
    assert_eq!(got8.usm, next);
    assert_eq!(got8.dsm, empty);

    rt.block_on(d.clear_cells(&got7.stale)).unwrap();
    rt.block_on(d.clear_hashpipe()).unwrap();
    let after = rt.block_on(d.read_meters()).unwrap();
    assert_eq!(
        after[0].dsm[2].id_tag[stale_index], 0,
        "the stale cell is zeroed"
    );
    let again = meters::decode(layout, &after[0], t7, &ids, "s12").unwrap();
    assert_eq!((again.usm, again.dsm), (usm, dsm), "and nothing else");
    let hp: Vec<&str> = contract()
        .hashpipe
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    for (name, v) in hp
        .iter()
        .zip(c.register_read_all_many(CXT_ID, &hp).unwrap())
    {
        assert!(v.iter().all(|&x| x == 0), "{name} zeroed");
    }
}

/// A harvest reads the cells its rules map to (and the sweep's): with a few rules each register
/// cell by cell, with many each register whole, whichever moves fewer bytes; both decode to the
/// meters a read of every cell gives. Prints the bytes on the wire per harvest, measured on
/// the socket, against the information in the cells read (12 bytes a cell: the ID register's
/// tag and ID, the count).
#[test]
fn a_harvest_reads_the_cells_of_its_rules_and_decodes_the_same() {
    if !common::runnable("bmv2_thrift", &missing()) {
        return;
    }
    let sw = Switch::start(13);
    let mut c = sw.client("s13");
    let config = contract().meters.config();
    let layout = &contract().meters;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut d = driver(&sw, "s13");
    for (flows, sport) in [(20u16, 3000u16), (1200, 5000)] {
        let epoch = if flows <= 20 { 7 } else { 8 }; // one case in each parity
        let tag = epoch_tag(epoch);
        let mut ids = RuleIds::default();
        let (mut usm, mut dsm) = (Usm::new(config).unwrap(), Dsm::new(config).unwrap());
        for i in 0..flows {
            let f = udp(sport + i);
            ids.install(RuleKey::Usm(f)).unwrap();
            ids.install(RuleKey::Dsm(f, 0x0101)).unwrap();
            usm.update_n(&f, FlowHashes::of(&f), u32::from(i) + 1);
            dsm.update_n(&f, FlowHashes::of(&f), 0x0101, u32::from(i));
        }
        let cells = meters::encode(config.width, &[(tag, &usm, &dsm)], |k| ids.id_of(&k));
        // Clear both parities first: the registers hold only this case's meters.
        let regs: Vec<(&str, usize)> = layout
            .rows()
            .flat_map(|r| {
                [
                    (r.id.name.as_str(), r.id.size),
                    (r.count.name.as_str(), r.count.size),
                ]
            })
            .collect();
        c.register_zero_many(CXT_ID, &regs).unwrap();
        write_all(&mut c, &meter_writes(&cells));
        let want = meters::harvest_cells(layout, ids.keys(), epoch).unwrap();
        let before = d.thrift_bytes();
        let lean = rt.block_on(d.read_meter_cells(&want)).unwrap();
        let after = d.thrift_bytes();
        let full = rt.block_on(d.read_meters()).unwrap();
        let whole = d.thrift_bytes();
        let got = meters::decode(layout, &lean[0], tag, &ids, "s13").unwrap();
        assert_eq!(got.usm, usm, "{flows} flows: USM as the model counted it");
        assert_eq!(got.dsm, dsm, "{flows} flows: DSM as the model counted it");
        let all = meters::decode(layout, &full[0], tag, &ids, "s13").unwrap();
        assert_eq!((got.usm, got.dsm), (all.usm, all.dsm));
        let bytes = |a: canary_switch::bmv2_thrift::WireBytes,
                     b: canary_switch::bmv2_thrift::WireBytes| {
            (b.sent - a.sent) + (b.received - a.received)
        };
        let (lean_b, whole_b) = (bytes(before, after), bytes(after, whole));
        let info = want.len() * 12;
        println!(
            "BMv2 Thrift harvest, {flows} flows ({} rules): {} cells read, {lean_b} B \
             ({:.1}x the {info} B they hold); every cell read whole: {whole_b} B ({:.1}x the harvest)",
            2 * flows,
            want.len(),
            lean_b as f64 / info as f64,
            whole_b as f64 / lean_b as f64
        );
        assert!(
            lean_b <= whole_b,
            "the harvest never reads more than every cell"
        );
        if flows <= 20 {
            assert!(
                5 * lean_b < whole_b,
                "a few rules' cells cost a fraction of the registers"
            );
        }
    }
}
