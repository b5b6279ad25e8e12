//! Simulated fabric.
pub mod probes;
