//! Canary's test doubles, where no switch can be had: the reference model as a switch target,
//! behind the driver interface with injected faults (the chaos driver), and behind a BF Runtime
//! server that holds every request to the compiler's `bfrt.json` (no Tofino here). Kept out of
//! canary-switch, which knows nothing of the simulator.
//!
//! * [`model_target`]: the reference model as a switch target (entries in, meters out).
//! * [`chaos`]: switches of the simulated data plane behind the driver interface, with faults.
//! * [`bfrt_model`]: a BF Runtime server in front of the reference model.

pub mod bfrt_model;
pub mod chaos;
pub mod model_target;
