//! Simulated fabric.
