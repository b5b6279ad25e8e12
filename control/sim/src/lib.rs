//! Simulated fabric.
pub mod pm_probes;
pub mod tcp007;
