//! Canary's controller: the epoch loop over any `Fabric` ([`controller`]), the daemon that runs
//! it against real switches ([`daemon`], [`standby`]), the simulated run ([`simulate`]), and
//! what an operator reads: the per-epoch report and its files ([`report`], [`report_file`]),
//! Prometheus metrics ([`metrics`]), the live page ([`page`], [`view`], [`draw`]), and the
//! incidents the reports add up to ([`incidents`]).
//!
//! The experiments that reproduce the papers live apart, in `canary-lab`; the `canary` command
//! (package `canary`) dispatches to both.

pub mod cluster;
pub mod config;
pub mod controller;
pub mod daemon;
pub mod draw;
pub mod error;
pub mod incidents;
pub mod metrics;
pub mod page;
pub mod report;
pub mod report_file;
pub mod run_document;
pub mod setup;
pub mod simulate;
pub mod standby;
pub mod view;

pub use error::{Error, Result};
