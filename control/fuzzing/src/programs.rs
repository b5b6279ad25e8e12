//! A program's description as the compilers write it (P4Info, `bfrt.json`) and the contract
//! resolved from it, checked for what the drivers rely on.

use crate::pick;
use canary_switch::contract::{Program, TABLES};
use canary_switch::drivers::bfruntime;
use canary_switch::p4info::P4InfoFile;

/// A P4Info and the contract resolved against it (0), a program's `bfrt.json` and the contract
/// (1), the non-P4 `bfrt.json` of the packet replication engine (2).
pub fn program(data: &[u8]) {
    let Some((which, rest)) = pick(data, 3) else {
        return;
    };
    match which {
        0 => {
            let Ok(file) = P4InfoFile::decode("fuzz.p4info.bin", rest.to_vec()) else {
                return;
            };
            if let Ok(p) = Program::from_p4info(&file.path, &file.info) {
                resolved(&p);
            }
        }
        1 => {
            if let Ok(p) = Program::from_bfrt_json("fuzz.bfrt.json", rest) {
                resolved(&p);
            }
        }
        _ => {
            let _ = bfruntime::PreTables::from_json("fuzz.json", rest);
        }
    }
}

/// What the drivers rely on in a resolved program.
fn resolved(p: &Program) {
    for spec in TABLES {
        let t = p.table(spec.table);
        assert_eq!(t.keys.len(), spec.keys.len());
        assert_eq!(t.params.len(), spec.params.len());
    }
    let width = p.meters.width;
    for row in p.meters.rows() {
        assert_eq!(row.id.size, 2 * width);
        assert_eq!(row.count.size, 2 * width);
    }
    assert_eq!(p.meters.usm.len(), p.meters.dsm.len());
    let _ = p.capacity();
}
