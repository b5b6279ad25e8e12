//! P4Runtime (and BFRuntime) messages and gRPC services, generated from the wire-compatible
//! subsets in `proto/`. Package paths mirror the protobuf packages: `p4::v1`, `p4::config::v1`,
//! `google::rpc`, `stratum`, `bfrt_proto` (Tofino's BF Runtime, re-exported as [`bfrt`]).

pub mod google {
    pub mod rpc {
        tonic::include_proto!("google.rpc");
    }
}

pub mod p4 {
    pub mod v1 {
        tonic::include_proto!("p4.v1");
    }
    pub mod config {
        pub mod v1 {
            tonic::include_proto!("p4.config.v1");
        }
    }
}

/// A P4Runtime role's configuration (Stratum's `P4RoleConfig`, the subset Canary uses).
pub mod stratum {
    tonic::include_proto!("stratum");
}

/// BF Runtime (`bfruntime.proto`, package `bfrt_proto`): Tofino's bf_switchd API.
pub mod bfrt_proto {
    tonic::include_proto!("bfrt_proto");
}

pub use bfrt_proto as bfrt;
pub use p4::config::v1 as p4info;
pub use p4::v1 as p4rt;
