//! The switch drivers behind [`crate::driver::SwitchDriver`].

pub mod bfruntime;
pub mod bmv2;
pub mod p4runtime;
pub mod tofino;
