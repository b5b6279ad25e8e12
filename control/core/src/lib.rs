//! `canary-core`: the pure heart of Canary.
//!
//! Topology, pathBF encoding and decoding, the USM/DSM meters and HashPipe (the reference model
//! the P4 program is held to), loss detection (minus meters, segment statistics), the localizers,
//! the flow-selection policy and the `Fabric` trait the controller drives.
//!
//! Nothing here does I/O, reads a clock or draws unseeded randomness: every function takes values
//! and returns values, so tests and benchmarks call it directly.

pub mod capacity;
pub mod decide;
pub mod detect;
mod error;
pub mod fabric;
pub mod fault;
pub mod flow;
pub mod localize;
pub mod model;
pub mod pathbf;
pub mod schedule;
pub mod score;
pub mod select;
pub mod sketch;
pub mod topo;
pub mod yaml_error;

pub use error::{Error, Result};
pub use flow::FlowId;
