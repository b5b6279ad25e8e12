//! Canary on real switches.
//!
//! * [`contract`]: the program's tables, registers and digest, declared once and resolved against
//!   the P4Info (BMv2) or `bfrt.json` (Tofino) of the program a switch runs.
//! * [`entries`]: what Canary writes (forwarding, configuration, rules), before any wire format.
//! * [`rule_ids`], [`meters`]: the rule IDs the meters store, and the one decoder of a switch's
//!   meter registers into one epoch's meters.
//! * [`switches`]: the switches file (endpoints and ports), checked against the topology.
//! * [`driver`], [`fabric`], [`drivers`]: the driver interface, the generic fabric over it, and
//!   the drivers: BMv2 and Tofino (BF Runtime). The test doubles (the chaos driver, a BF Runtime
//!   server in front of the reference model) are the crate canary-doubles.
//! * [`roles`], [`role_gateway`]: P4Runtime roles (which controller writes what), and a
//!   P4Runtime server that enforces them in front of a switch whose own server has none (BMv2).
//! * [`p4info`], [`p4rt`], [`bmv2_thrift`]: the transports (P4Runtime, BMv2's Thrift register
//!   calls).

pub mod bmv2_thrift;
pub mod contract;
pub mod driver;
pub mod drivers;
pub mod entries;
mod error;
pub mod fabric;
pub mod meters;
pub mod p4info;
pub mod p4rt;
pub mod role_gateway;
pub mod roles;
pub mod rule_ids;
pub mod switches;

pub use error::{Error, Result};
