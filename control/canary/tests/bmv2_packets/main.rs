//! Packet tests of Canary's P4 program on BMv2, held to the reference model
//! (`canary_core::model`) frame for frame, bucket for bucket and digest for digest.
//!
//! A fabric of `simple_switch_grpc` processes runs the v1model program, configured the way
//! `canary run` configures it (the generic fabric over the BMv2 driver: pipeline, forwarding,
//! flood groups, epoch, rules with their IDs). A model of every switch ([`Net`]) gets the same
//! tables and the same frames. For every frame a host sends, every copy is followed: each frame
//! on every fabric link must be the model's (shim, pathBF, mark, epoch tag) and each host must
//! get the model's frame byte for byte; the HH digest counters of the monitors must equal the
//! model's after every frame. At the end every meter bucket of every epoch the switches hold, as
//! decoded by the controller, equals the model's; every HashPipe slot too; the HH digests that
//! reached the controller are the model's; and no frame went anywhere else.
//!
//! One link can be a relay: a namespace with two veths between the switches across which the
//! test carries each frame itself, so it can hold frames in flight while switches start new
//! epochs.
//!
//! Scenarios: the two-switch line (both monitors) and the three-switch line (a transit in the
//! middle) with IPv4 and IPv6 flows (collisions, a DSM rule with a wrong pathBF, a flow without
//! USM, HashPipe evictions, flips of one switch at a time with frames held in flight, an epoch tag
//! reused), ARP, IPv6 neighbour solicitation, LLDP, other EtherTypes, a host's own frame of the
//! shim's EtherType, and frames arriving from the fabric without a shim (a neighbour not running
//! Canary); and a diamond where a flow changes path.
//!
//! Skips (printing `SKIP: ...`) without p4c, simple_switch_grpc, simple_switch_CLI or root.
//! `bmv2_monitoring_throughput` is a benchmark, `#[ignore]`d (see docs/dataplane.md).

#[path = "../bmv2/mod.rs"]
mod bmv2;
#[path = "../fabric_lab/mod.rs"]
mod fabric_lab;

mod diamond;
mod line;
mod packets;
mod throughput;

use canary_core::model::wire::Macs;
use canary_core::FlowId;

const M: Macs = Macs {
    dst: [2, 0, 0, 0, 0, 2],
    src: [2, 0, 0, 0, 0, 1],
};

const LINE2: &str = "name: line2\nmonitors: top+bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, s2]\n";
const LINE3: &str = "name: line3\nmonitors: bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: t, layer: 1}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, t]\n  - [t, s2]\n";
const DIAMOND: &str = "name: diamond\nmonitors: bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: s2a, layer: 1}\n  - {name: s2b, layer: 1}\n  - {name: s3, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, s2a]\n  - [s1, s2b]\n  - [s2a, s3]\n  - [s2b, s3]\n";

fn udp(sport: u16) -> FlowId {
    FlowId::v4(0x0a00_0102, 0x0a00_0202, 17, sport, 2000)
}

fn udp6(sport: u16) -> FlowId {
    let a = canary_core::topo::default_ipv6;
    FlowId::v6(a(0x0a00_0102), a(0x0a00_0202), 17, sport, 2000)
}
