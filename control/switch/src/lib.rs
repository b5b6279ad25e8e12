//! Drivers for real switches running Canary's P4 program.
//!
//! * [`p4info`]: names in the compiled program resolved once to P4Runtime ids.
//! * [`program`]: the tables, actions and digest Canary uses, and the entries built from them.
//! * [`p4rt`]: a P4Runtime client (arbitration, pipeline push, writes, reads, digests).
//! * [`bmv2_thrift`]: BMv2's Thrift runtime, the register calls (BMv2's P4Runtime server has no
//!   register reads).
//! * [`bmv2_meters`]: the meters' BMv2 register layout, and the per-epoch harvest into a
//!   `MeterSnapshot`.
//! * [`switches`]: the switches file (endpoints and ports), checked against the topology.
//! * [`forwarding`]: routes and ECMP groups derived from the topology.
//! * [`bmv2_fabric`]: the `Fabric` the controller runs on, over BMv2 switches.
//! * [`rule_ids`], [`tna_meters`]: the rule IDs the TNA meters store, and the meters' TNA
//!   register layout and decode.
//! * [`bfrt`]: a BF Runtime client for the TNA program on Tofino (names resolved from bfrt.json).

pub mod bfrt;
pub mod bmv2_fabric;
pub mod bmv2_meters;
pub mod bmv2_thrift;
pub mod forwarding;
pub mod p4info;
pub mod p4rt;
pub mod program;
pub mod rule_ids;
pub mod switches;
pub mod tna_meters;
