//! `canary-sim`: a packet-level simulated fabric that implements `canary_core::fabric::Fabric`.
//!
//! Hosts keep heavy-tailed flows open between random hosts; every packet walks its ECMP path hop
//! by hop with per-link latency and independent per-packet loss, and every monitor switch runs
//! the same meter logic as the P4 program (`canary_core::sketch`): DSM lookup by flow and pathBF,
//! HashPipe for the rest, HH reports, pathBF clear-and-add, USM counting and parity marking.
//! Parity flips reach each switch with its own small skew, so packets straddle epoch boundaries.
//! Everything is seeded and repeatable.
//!
//! It also produces the telemetry the other localizers consume (probes, TCP retransmissions).
//! It does not localize anything.

pub mod bounce_probes;
pub mod fabric;
pub mod matrix_probes;
pub mod synth;
pub mod tcp007;
pub mod traffic;

pub use fabric::{Probe, SimConfig, SimFabric, SimStats};
pub use traffic::TrafficConfig;
