//! The layout against synthetic programs, the harvest against an in-memory switch.

use super::*;
use crate::bmv2_thrift::RegisterErrorCode;
use canary_core::sketch::FlowHashes;
use std::collections::BTreeMap;

const WIDTH: usize = 64;

/// Register arrays of a program shaped like p4src/v1model (rows × fields per parity, 3 HashPipe
/// stages) plus unrelated ones.
fn program(rows: usize, width: usize) -> Vec<(String, usize)> {
    let mut regs = vec![("CanaryIngress.hh_seen_reg".to_string(), 8)];
    for p in 0..2 {
        for r in 0..rows {
            for f in USM_FIELDS {
                regs.push((
                    format!("CanaryIngress.upstream_meter.parity{p}.row{r}.{f}_reg"),
                    width,
                ));
            }
            for f in DSM_FIELDS {
                regs.push((
                    format!("CanaryIngress.downstream_meter.parity{p}.row{r}.{f}_reg"),
                    width,
                ));
            }
        }
    }
    for s in 0..3 {
        for f in HASHPIPE_FIELDS {
            regs.push((format!("CanaryIngress.hashpipe.stage{s}.{f}_reg"), 32));
        }
    }
    regs
}

fn layout_of(regs: &[(String, usize)]) -> Result<MeterLayout, LayoutError> {
    MeterLayout::from_registers(regs.iter().map(|(n, s)| (n.as_str(), *s)))
}

fn reg(meter: &str, p: usize, r: usize, f: &str) -> String {
    format!("CanaryIngress.{meter}.parity{p}.row{r}.{f}_reg")
}

#[test]
fn layout_reads_the_shape_and_keeps_parities_apart() {
    let l = layout_of(&program(3, WIDTH)).unwrap();
    assert_eq!(l.usm_config(), MeterConfig::new(3, WIDTH).unwrap());
    assert_eq!(l.dsm_config(), MeterConfig::new(3, WIDTH).unwrap());
    for p in [Parity::Even, Parity::Odd] {
        let names = l.meter_names(p);
        assert_eq!(names.len(), 3 * 7 + 3 * 8);
        let mine = format!(".parity{}.", p.index());
        assert!(names.iter().all(|n| n.contains(&mine)), "{names:?}");
        assert_eq!(names[0], reg("upstream_meter", p.index(), 0, "used"));
        assert_eq!(names[7 + 3], reg("upstream_meter", p.index(), 1, "ports"));
        assert_eq!(
            names[21 + 7],
            reg("downstream_meter", p.index(), 0, "path_bf")
        );
        let resets = l.arrays_to_clear(p);
        assert_eq!(resets.len(), 45 + 15);
        assert!(!resets
            .iter()
            .any(|(n, _)| n.contains(&format!(".parity{}.", p.flip().index()))));
    }
    assert_eq!(l.hashpipe_names().len(), 15);
    assert_eq!(
        l.hashpipe_names()[4],
        "CanaryIngress.hashpipe.stage0.count_reg"
    );
}

#[test]
fn layout_errors_name_the_register() {
    let mut regs = program(3, WIDTH);
    regs.retain(|(n, _)| n != &reg("downstream_meter", 1, 2, "path_bf"));
    let e = layout_of(&regs).unwrap_err();
    assert!(
        matches!(&e, LayoutError::Missing { key } if key == "downstream_meter.parity1.row2.path_bf"),
        "{e}"
    );

    let mut regs = program(3, WIDTH);
    regs.push((reg("upstream_meter", 0, 1, "timestamp"), WIDTH));
    let e = layout_of(&regs).unwrap_err();
    assert!(
        matches!(&e, LayoutError::Unexpected { register, .. } if register.ends_with("row1.timestamp_reg")),
        "{e}"
    );

    let mut regs = program(3, WIDTH);
    regs.iter_mut()
        .find(|(n, _)| n == &reg("upstream_meter", 1, 0, "count"))
        .unwrap()
        .1 = WIDTH / 2;
    let e = layout_of(&regs).unwrap_err();
    assert!(
        matches!(&e, LayoutError::Size { register, size, expected } if register.ends_with("parity1.row0.count_reg") && *size == WIDTH / 2 && *expected == WIDTH),
        "{e}"
    );

    let mut regs = program(3, WIDTH);
    regs.push((
        "CanaryEgress.upstream_meter.parity0.row0.used_reg".into(),
        WIDTH,
    ));
    assert!(matches!(
        layout_of(&regs).unwrap_err(),
        LayoutError::Ambiguous { .. }
    ));

    // A row 3 only in parity 1: rows must be the same in both parities.
    let mut regs = program(3, WIDTH);
    for f in USM_FIELDS {
        regs.push((reg("upstream_meter", 1, 3, f), WIDTH));
    }
    assert!(matches!(
        layout_of(&regs).unwrap_err(),
        LayoutError::Unexpected { .. }
    ));

    let e = layout_of(&program(3, 100)).unwrap_err();
    assert!(matches!(e, LayoutError::Config { meter: "USM", .. }), "{e}");
}

#[test]
fn layout_from_bmv2_json() {
    let regs: Vec<serde_json::Value> = program(2, WIDTH)
        .into_iter()
        .map(|(n, s)| serde_json::json!({"name": n, "id": 0, "size": s, "bitwidth": 32}))
        .collect();
    let json = serde_json::to_vec(&serde_json::json!({"register_arrays": regs})).unwrap();
    let l = MeterLayout::from_bmv2_json(&json).unwrap();
    assert_eq!(l.usm_config(), MeterConfig::new(2, WIDTH).unwrap());
    assert!(matches!(
        MeterLayout::from_bmv2_json(b"{}"),
        Err(LayoutError::Json(_))
    ));
}

/// An in-memory switch: named arrays, a log of calls.
struct Fake {
    regs: BTreeMap<String, Vec<i64>>,
    fail_read: Option<String>,
    resets: Vec<String>,
}

impl Fake {
    fn new(program: &[(String, usize)]) -> Self {
        Fake {
            regs: program
                .iter()
                .map(|(n, s)| (n.clone(), vec![0; *s]))
                .collect(),
            fail_read: None,
            resets: Vec::new(),
        }
    }

    fn set(&mut self, name: &str, i: usize, v: i64) {
        self.regs.get_mut(name).unwrap()[i] = v;
    }

    /// Writes a model meter's buckets with the data plane's field mapping (docs/dataplane.md).
    fn write_usm(&mut self, p: usize, m: &Usm) {
        let c = m.config();
        for r in 0..c.rows {
            for col in 0..c.width {
                let b = m.bucket(r, col);
                if let Some(f) = b.flow {
                    self.write_flow("upstream_meter", p, r, col, &f, b.dirty, b.count);
                }
            }
        }
    }

    fn write_dsm(&mut self, p: usize, m: &Dsm) {
        let c = m.config();
        for r in 0..c.rows {
            for col in 0..c.width {
                let b = m.bucket(r, col);
                if let Some(f) = b.flow {
                    self.write_flow("downstream_meter", p, r, col, &f, b.dirty, b.count);
                    self.set(
                        &reg("downstream_meter", p, r, "path_bf"),
                        col,
                        b.path_bf.into(),
                    );
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_flow(
        &mut self,
        meter: &str,
        p: usize,
        r: usize,
        col: usize,
        f: &FlowId,
        dirty: bool,
        count: u32,
    ) {
        let ports = i64::from(f.sport) << 16 | i64::from(f.dport);
        for (field, v) in [
            ("used", 1),
            ("src_addr", f.src.into()),
            ("dst_addr", f.dst.into()),
            ("ports", ports),
            ("protocol", f.proto.into()),
            ("dirty", dirty.into()),
            ("count", count.into()),
        ] {
            self.set(&reg(meter, p, r, field), col, v);
        }
    }
}

impl RegisterAccess for Fake {
    fn switch_name(&self) -> &str {
        "fake1"
    }
    fn read_arrays(&mut self, names: &[&str]) -> Result<Vec<Vec<i64>>, ThriftError> {
        if let Some(bad) = &self.fail_read {
            return Err(ThriftError::InvalidRegister {
                switch: "fake1".into(),
                call: "bm_register_read_all",
                register: bad.clone(),
                code: RegisterErrorCode::InvalidRegisterName,
            });
        }
        Ok(names.iter().map(|n| self.regs[*n].clone()).collect())
    }
    fn zero_arrays(&mut self, arrays: &[(&str, usize)]) -> Result<(), ThriftError> {
        for (n, size) in arrays {
            let cells = self.regs.get_mut(*n).unwrap();
            assert_eq!(cells.len(), *size, "{n}: zeroed with the array's size");
            cells.fill(0);
            self.resets.push(n.to_string());
        }
        Ok(())
    }
}

fn udp(sport: u16) -> FlowId {
    FlowId {
        src: 0x0a00_0101,
        dst: 0xc0a8_0a02,
        proto: 17,
        sport,
        dport: 53,
    }
}

/// Meters fed packets of many flows, so some buckets are dirty.
fn models(config: MeterConfig) -> (Usm, Dsm) {
    let mut usm = Usm::new(config).unwrap();
    let mut dsm = Dsm::new(config).unwrap();
    for i in 0..200u16 {
        let f = udp(1000 + i % 90);
        let h = FlowHashes::of(&f);
        usm.update(&f, h);
        dsm.update(&f, h, 0x8000_0000 | u32::from(i % 7));
    }
    assert!(usm.dirty_buckets() > 0 && dsm.dirty_buckets() > 0);
    (usm, dsm)
}

#[test]
fn harvest_returns_the_model_and_resets_only_its_parity_and_hashpipe() {
    let prog = program(3, WIDTH);
    let layout = layout_of(&prog).unwrap();
    let (usm, dsm) = models(layout.usm_config());
    let mut sw = Fake::new(&prog);
    sw.write_usm(1, &usm);
    sw.write_dsm(1, &dsm);
    // The counting parity holds something else; HashPipe holds an entry.
    let (other_usm, _) = {
        let mut u = Usm::new(layout.usm_config()).unwrap();
        let f = udp(7);
        u.update_n(&f, FlowHashes::of(&f), 5);
        (u, ())
    };
    sw.write_usm(0, &other_usm);
    sw.set("CanaryIngress.hashpipe.stage1.count_reg", 3, 9);
    let before_even = sw.regs.clone();

    let snap = harvest(&mut sw, &layout, 4, Parity::Odd).unwrap();
    assert_eq!(snap.switch, 4);
    assert_eq!(snap.parity, Parity::Odd);
    assert_eq!(snap.usm, usm);
    assert_eq!(snap.dsm, dsm);

    for (name, values) in &sw.regs {
        if name.contains(".parity1.") || name.contains(".hashpipe.") {
            assert!(values.iter().all(|&v| v == 0), "{name} reset");
        } else {
            assert_eq!(values, &before_even[name], "{name} untouched");
        }
    }
    let cleared: Vec<&str> = layout
        .arrays_to_clear(Parity::Odd)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(sw.resets, cleared);
    // The even parity still reads back as it was.
    let even = read_meters(&mut sw, &layout, 4, Parity::Even).unwrap();
    assert_eq!(even.usm, other_usm);
    assert_eq!(even.dsm, Dsm::new(layout.dsm_config()).unwrap());
}

#[test]
fn harvest_errors_name_switch_and_register_and_reset_nothing() {
    let prog = program(3, WIDTH);
    let layout = layout_of(&prog).unwrap();
    let mut sw = Fake::new(&prog);
    sw.fail_read = Some(reg("downstream_meter", 0, 0, "used"));
    let e = harvest(&mut sw, &layout, 1, Parity::Even).unwrap_err();
    let text = e.to_string();
    assert!(matches!(
        e,
        HarvestError::Read {
            parity: Parity::Even,
            ..
        }
    ));
    assert!(
        text.contains("fake1") && text.contains("downstream_meter.parity0.row0.used_reg"),
        "{text}"
    );
    assert!(sw.resets.is_empty());

    let mut sw = Fake::new(&prog);
    let f = udp(1);
    sw.write_flow("downstream_meter", 0, 2, 5, &f, false, 3);
    sw.set(&reg("downstream_meter", 0, 2, "protocol"), 5, 300);
    let e = harvest(&mut sw, &layout, 1, Parity::Even).unwrap_err();
    match &e {
        HarvestError::Value {
            switch,
            register,
            index,
            value,
            ..
        } => {
            assert_eq!(switch, "fake1");
            assert_eq!(register, &reg("downstream_meter", 0, 2, "protocol"));
            assert_eq!((*index, *value), (5, 300));
        }
        other => panic!("{other}"),
    }
    assert!(sw.resets.is_empty());

    let mut sw = Fake::new(&prog);
    sw.regs
        .get_mut(&reg("upstream_meter", 0, 1, "dirty"))
        .unwrap()
        .pop();
    let e = harvest(&mut sw, &layout, 1, Parity::Even).unwrap_err();
    assert!(
        matches!(&e, HarvestError::Length { register, got, .. } if register.ends_with("parity0.row1.dirty_reg") && *got == WIDTH - 1),
        "{e}"
    );
}
