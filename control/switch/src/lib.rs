//! Drivers for real switches running Canary's P4 program.
//!
//! * [`p4info`]: names in the compiled program resolved once to P4Runtime ids.
//! * [`p4rt`]: a P4Runtime client (arbitration, pipeline push, writes, reads, digests).
