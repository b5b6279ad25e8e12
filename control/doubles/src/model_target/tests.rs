use super::*;
use canary_core::capacity::Capacity;
use canary_core::model::{epoch_tag, Shim};
use canary_core::sketch::FlowHashes;
use canary_core::topo::{
    fattree::fattree, FloodTree, ForwardingState, MonitorPlacement, PortMap, Routing,
};
use canary_core::FlowId;
use canary_switch::contract::{MeterRegisters, MeterRow, Register};
use canary_switch::entries::{self, Change, Entry};
use canary_switch::rule_ids::RuleIds;

fn written(change: Change, entry: Entry) -> Write {
    Write { change, entry }
}

fn layout(width: usize) -> MeterRegisters {
    let reg = |name: String| Register {
        name,
        id: 0,
        size: 2 * width,
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
        width,
    }
}

/// The forwarding a switch is given as entries and groups, applied through the tables, routes
/// every flow where the forwarding state it came from routes it, and floods to the same ports.
#[test]
fn forwarding_written_as_entries_routes_as_the_state_it_came_from() {
    let topo = fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let routing = Routing::new(&topo);
    let tree = FloodTree::new(&topo);
    let ports = PortMap::canonical(&topo);
    for name in ["edge0_0", "agg1_1", "core2"] {
        let s = topo.switch(name).unwrap();
        let state = ForwardingState::of(&topo, &routing, &tree, s, ports.of(s));
        let mask = 0x0123_4567 ^ s;
        let f = entries::forwarding(&state, mask);
        let mut want = SwitchModel::new(Capacity::of_program());
        want.set_forwarding(state.clone());
        let config = SwitchConfig {
            monitor: true,
            mask,
            epoch: epoch_tag(3),
        };
        want.set_config(config);

        let mut model = SwitchModel::new(Capacity::of_program());
        let mut tables = ModelTables::default();
        tables.write_groups(&mut model, &f.groups);
        let writes: Vec<Write> = f
            .entries
            .iter()
            .chain([&entries::config(config)])
            .map(|e| written(Change::Insert, e.clone()))
            .collect();
        assert_eq!(tables.write(&mut model, &writes), vec![]);
        assert_eq!(model.config(), config);
        for h in &topo.hosts {
            for (i, dst) in [
                canary_core::flow::Addr::v4(h.addr),
                canary_core::flow::Addr::v6(h.addr6),
            ]
            .into_iter()
            .enumerate()
            {
                let flow = FlowId {
                    src: canary_core::flow::Addr::v4(0x0a09_0909),
                    dst,
                    proto: 17,
                    sport: 1000 + i as u16,
                    dport: 7,
                };
                let c32 = FlowHashes::of(&flow).c32;
                assert_eq!(
                    model.route(&flow, c32),
                    want.route(&flow, c32),
                    "{name} {flow:?}"
                );
                assert!(model.route(&flow, c32).is_some());
            }
        }
        for fl in &state.floods {
            assert_eq!(model.replicas(fl.group), want.replicas(fl.group));
        }
    }
}

/// Inserting what is there, modifying or deleting what is not, and a full table fail as a
/// switch answers them; the rest of the batch goes in.
#[test]
fn writes_fail_as_a_switch_answers_them() {
    let cap = Capacity {
        usm_rules: 1,
        ..Capacity::of_program()
    };
    let mut model = SwitchModel::new(cap);
    let mut tables = ModelTables::default();
    let f1 = FlowId::v4(1, 2, 17, 3, 4);
    let f2 = FlowId::v6(1, 2, 6, 3, 4);
    let usm = |f: FlowId| RuleOp::InstallUsm { switch: 0, flow: f };
    let w = vec![
        entries::rule(&usm(f1), 5, false),
        entries::rule(&usm(f1), 5, false),
        entries::rule(&usm(f2), 6, false),
        entries::rule(
            &RuleOp::RemoveDsm {
                switch: 0,
                flow: f1,
                path_bf: 9,
            },
            0,
            false,
        ),
        entries::rule(
            &RuleOp::InstallHh {
                switch: 0,
                path_bf: 9,
                eta: 4,
            },
            0,
            true,
        ),
    ];
    let failed = tables.write(&mut model, &w);
    let got: Vec<(usize, String)> = failed.iter().map(|(i, e)| (*i, e.to_string())).collect();
    assert_eq!(
        got,
        vec![
            (1, "Usm: entry already exists".to_string()),
            (2, "usm_table is full (1 entries)".to_string()),
            (3, "Dsm: no such entry".to_string()),
            (4, "Hh: no such entry".to_string()),
        ]
    );
    assert!(model.has_usm(&f1) && !model.has_usm(&f2));
}

/// Packets counted by the model read back, through the cells and the harvest's decoder, as the
/// model's meters of each epoch, also for a rule removed after it counted.
#[test]
fn meter_cells_decode_to_the_models_meters() {
    let mut model = SwitchModel::new(Capacity::of_program());
    let mut tables = ModelTables::default();
    let mut ids = RuleIds::default();
    let width = model.capacity().meter.width;
    let flows: Vec<FlowId> = (0..300)
        .map(|i| FlowId::v4(0x0a00_0001, 0x0a01_0000 + i, 17, 1000 + i as u16, 80))
        .collect();
    let mut writes = vec![written(
        Change::Insert,
        entries::config(SwitchConfig {
            monitor: true,
            mask: 1,
            epoch: epoch_tag(4),
        }),
    )];
    for f in &flows {
        for op in [
            RuleOp::InstallUsm {
                switch: 0,
                flow: *f,
            },
            RuleOp::InstallDsm {
                switch: 0,
                flow: *f,
                path_bf: 6,
            },
        ] {
            let id = ids.for_op(&op).unwrap().unwrap();
            writes.push(entries::rule(&op, id, false));
        }
    }
    assert_eq!(tables.write(&mut model, &writes), vec![]);
    let count = |model: &mut SwitchModel, epoch: u64| {
        for (i, f) in flows.iter().enumerate() {
            for _ in 0..=(i % 4) {
                let mut shim = Shim {
                    path_bf: 6,
                    counted: true,
                    epoch: epoch_tag(epoch),
                };
                model.monitor(f, FlowHashes::of(f), &mut shim, false);
            }
        }
    };
    count(&mut model, 4);
    // Epoch 5, after one rule is removed (its buckets keep its ID).
    let gone = RuleOp::RemoveUsm {
        switch: 0,
        flow: flows[0],
    };
    ids.for_op(&gone).unwrap();
    writes = vec![
        entries::rule(&gone, 0, false),
        written(
            Change::Modify,
            entries::config(SwitchConfig {
                monitor: true,
                mask: 1,
                epoch: epoch_tag(5),
            }),
        ),
    ];
    assert_eq!(tables.write(&mut model, &writes), vec![]);
    count(&mut model, 5);
    let cells = tables.meter_cells(&model);
    for epoch in [4, 5] {
        let tag = epoch_tag(epoch);
        let got = meters::decode(&layout(width), &cells, tag, &ids, "s").unwrap();
        let (usm, dsm) = model.meters_of(tag);
        assert_eq!(got.usm, usm, "USM of epoch {epoch}");
        assert_eq!(got.dsm, dsm, "DSM of epoch {epoch}");
        assert!(usm.occupied() > 0 && dsm.occupied() > 0);
    }
}
