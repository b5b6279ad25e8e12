//! `canary`: the controller. The epoch loop over any `Fabric`, the report writers, and the
//! commands (`canary simulate`, `canary audit`, `canary topology`).

pub mod controller;
pub mod eval;
pub mod overhead;
pub mod report;
pub mod setup;
pub mod simulate;
