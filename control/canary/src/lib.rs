//! `canary`: the controller. The epoch loop over any `Fabric`, the report writers, and the
//! commands (`canary simulate`, `canary run`, `canary eval`, `canary audit`, `canary topology`,
//! `canary draw`, and `canary traffic`, the testbed's traffic generator).

pub mod controller;
pub mod daemon;
pub mod draw;
pub mod eval;
pub mod metrics;
pub mod overhead;
pub mod page;
pub mod report;
pub mod report_file;
pub mod setup;
pub mod simulate;
pub mod standby;
pub mod traffic_gen;
pub mod view;
