//! Canary's lab: the experiments that measure it against the papers, apart from the product.
//! [`eval`] runs every localizer of the papers on one simulated fabric (with calibration,
//! sweeps and Flock traces), [`overhead`] measures memory, decoding and flow selection against
//! the papers' baselines, and [`traffic_gen`] is the testbed's traffic generator. What fails
//! returns the lab's one [`Error`], which names the option, file or topology at fault.

pub mod cluster_rates;
mod error;
pub mod eval;
pub mod overhead;
pub mod scale;
pub mod traffic_gen;

pub use error::{Error, Result};
