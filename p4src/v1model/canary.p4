/* Canary data plane for v1model (BMv2 simple_switch_grpc): the shared program of p4src/include
 * and the few controls that use v1model's externs (registers, hash(), counter, digest).
 * tna/canary.p4 is the same program for Tofino. */
#include <core.p4>
#include <v1model.p4>

#include "../include/compat.p4"
#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"
#include "flow_hash.p4"
#include "meter_row.p4"
#include "hashpipe.p4"
#include "hh_send.p4"
#include "../include/forwarding.p4"
#include "../include/switch_config.p4"
#include "../include/path_bf.p4"
#include "../include/meters.p4"
#include "../include/hh_report.p4"
#include "../include/ingress.p4"

parser CanaryParser(packet_in pkt, out headers_t hdr, inout canary_meta_t meta,
                    inout standard_metadata_t std_meta) {
    CanaryHeaderParser() headers;
    state start {
        headers.apply(pkt, hdr, meta);
        transition accept;
    }
}

control CanaryVerifyChecksum(inout headers_t hdr, inout canary_meta_t meta) {
    apply { }
}

control CanaryIngress(inout headers_t hdr, inout canary_meta_t meta,
                      inout standard_metadata_t std_meta) {
    CanaryIngressCore() core;
    apply {
        port_t port;
        core.apply(hdr, meta, std_meta.ingress_port, port);
        if (meta.routed == 1) {
            std_meta.egress_spec = port;
        } else if (meta.is_ip == 1 && meta.unicast == 1) {
            mark_to_drop(std_meta);   /* IP unicast without a route */
        } else if (meta.flood_group != 0) {
            std_meta.mcast_grp = meta.flood_group;
        } else {
            mark_to_drop(std_meta);   /* a port the controller gave no flood group */
        }
        if (meta.send_digest == 1) {
            digest<hh_digest_t>(HH_DIGEST_RECEIVER, {
                meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
                meta.flow.src_port, meta.flow.dst_port, meta.in_path_bf });
        }
    }
}

/* Flooded copies leaving to a host (replication id 1) lose the shim. */
control CanaryEgress(inout headers_t hdr, inout canary_meta_t meta,
                     inout standard_metadata_t std_meta) {
    apply {
        if (std_meta.egress_rid == 1 && hdr.canary.isValid()) {
            hdr.ethernet.ether_type = hdr.canary.ether_type;
            hdr.canary.setInvalid();
        }
    }
}

control CanaryComputeChecksum(inout headers_t hdr, inout canary_meta_t meta) {
    apply { }
}

control CanaryDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr);
    }
}

V1Switch(CanaryParser(), CanaryVerifyChecksum(), CanaryIngress(), CanaryEgress(),
         CanaryComputeChecksum(), CanaryDeparser()) main;
