//! Drivers for real switches running Canary's P4 program.
//!
//! * [`p4info`]: names in the compiled program resolved once to P4Runtime ids.
//! * [`program`]: the tables, actions and digest Canary uses, and the entries built from them.
//! * [`p4rt`]: a P4Runtime client (arbitration, pipeline push, writes, reads, digests).
//! * [`switches`]: the switches file (endpoints and ports), checked against the topology.
//! * [`forwarding`]: routes and ECMP groups derived from the topology.
//! * [`bmv2_fabric`]: the `Fabric` the controller runs on, over BMv2 switches.

pub mod bmv2_fabric;
pub mod bmv2_meters;
pub mod bmv2_thrift;
pub mod forwarding;
pub mod p4info;
pub mod p4rt;
pub mod program;
pub mod switches;
