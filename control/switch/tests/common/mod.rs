//! Shared by the switch tests.

pub use canary_testkit::runnable;
