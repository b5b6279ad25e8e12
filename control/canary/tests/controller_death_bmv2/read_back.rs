//! What the switches hold, read by the test itself (never primary: a read needs none): Canary's
//! rules and the pipeline's cookie over P4Runtime, the meter registers over Thrift.

use super::{bmv2, fabric_lab, FabricLab};
use canary_switch::bmv2_thrift::ThriftClient;
use canary_switch::contract::{Program, Table};
use canary_switch::entries::{read_rule, ReadRule};
use canary_switch::p4info::P4InfoFile;
use canary_switch::p4rt::{P4RtClient, P4RtConfig};
use std::collections::BTreeSet;
use std::future::Future;

/// Runs `read` in the fabric's network namespace, on a runtime of its own.
fn in_fabric<T: Send + 'static, F: Future<Output = T>>(
    lab: &FabricLab,
    read: impl FnOnce() -> F + Send + 'static,
) -> T {
    let fab = lab.fab.clone();
    std::thread::spawn(move || {
        bmv2::enter_netns(&fab);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(read())
    })
    .join()
    .unwrap()
}

/// A P4Runtime client of switch `s` that is never primary over a controller: below any
/// controller's election id, above the standby probe's.
async fn reader(s: usize) -> P4RtClient {
    let addr = format!("127.0.0.1:{}", fabric_lab::GRPC_BASE + s as u16);
    let mut cfg = P4RtConfig::new("reader", &addr, s as u64 + 1);
    cfg.election_id = 2;
    P4RtClient::connect(cfg).await.unwrap()
}

fn program(lab: &FabricLab) -> Program {
    let idx = P4InfoFile::load(&lab.p4dir.join("canary.p4info.bin")).unwrap();
    Program::from_p4info(&idx.path, &idx.info).unwrap()
}

/// Canary's rules on every switch.
pub fn rules_on(lab: &FabricLab) -> BTreeSet<(usize, ReadRule)> {
    use bfrt_proto::p4rt::{entity, Entity, TableEntry};
    let (prog, n) = (program(lab), lab.topo.switches.len());
    in_fabric(lab, move || async move {
        let mut out = BTreeSet::new();
        for s in 0..n {
            let mut c = reader(s).await;
            for t in [Table::Usm, Table::Dsm, Table::Hh] {
                let e = Entity {
                    entity: Some(entity::Entity::TableEntry(TableEntry {
                        table_id: prog.table(t).id,
                        ..Default::default()
                    })),
                };
                for got in c.read(vec![e]).await.unwrap() {
                    let Some(entity::Entity::TableEntry(te)) = got.entity else {
                        continue;
                    };
                    let entry = canary_switch::drivers::p4runtime::entry_of(&prog, t, &te).unwrap();
                    out.insert((s, read_rule(&entry).unwrap()));
                }
            }
        }
        out
    })
}

/// Every switch's pipeline cookie (`None`: no pipeline).
pub fn cookies_on(lab: &FabricLab) -> Vec<Option<u64>> {
    let n = lab.topo.switches.len();
    in_fabric(lab, move || async move {
        let mut out = Vec::new();
        for s in 0..n {
            out.push(reader(s).await.pipeline_cookie().await.unwrap());
        }
        out
    })
}

/// Every meter register of every monitor, read whole.
pub fn meters_on(lab: &FabricLab) -> Vec<Vec<i64>> {
    let names: Vec<String> = program(lab)
        .meters
        .rows()
        .flat_map(|r| [r.id.name.clone(), r.count.name.clone()])
        .collect();
    let monitors: Vec<(usize, String)> = lab
        .topo
        .switches
        .iter()
        .enumerate()
        .filter(|(_, s)| s.monitor)
        .map(|(i, s)| (i, s.name.clone()))
        .collect();
    in_fabric(lab, move || async move {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        monitors
            .into_iter()
            .flat_map(|(s, name)| {
                let addr = format!("127.0.0.1:{}", fabric_lab::THRIFT_BASE + s as u16);
                let mut t = ThriftClient::connect(name, addr, Default::default()).unwrap();
                t.register_read_all_many(0, &names).unwrap()
            })
            .collect()
    })
}
