//! Canary on real switches.
//!
//! * [`contract`]: the program's tables, registers and digest, declared once and resolved against
//!   the P4Info (BMv2) or `bfrt.json` (Tofino) of the program a switch runs.
//! * [`entries`]: what Canary writes (forwarding, configuration, rules), before any wire format.
//! * [`rule_ids`], [`meters`]: the rule IDs the meters store, and the one decoder of a switch's
//!   meter registers into one epoch's meters.
//! * [`switches`]: the switches file (endpoints and ports), checked against the topology.
//! * [`p4info`], [`p4rt`], [`bmv2_thrift`], [`bfrt`]: the transports (P4Runtime, BMv2's Thrift
//!   register calls, BF Runtime).

// pub mod bfrt;
pub mod bmv2_thrift;
pub mod contract;
pub mod driver;
pub mod drivers;
pub mod entries;
pub mod fabric;
pub mod meters;
pub mod p4info;
pub mod p4rt;
pub mod rule_ids;
pub mod switches;
