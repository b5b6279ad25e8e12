/* Canary data plane for v1model (BMv2 simple_switch_grpc).
 *
 * Ingress, in the order of the paper's Fig. 2 and of the simulator's per-hop logic
 * (control/sim/src/fabric.rs, SimFabric::walk):
 *   1. flow key and its two CRCs; push the shim on packets from a host port
 *   2. SwitchConfig (monitor, pathBF mask, parity); Forwarding (LPM -> ECMP member -> port)
 *   3. monitor only: DownstreamMeter (DSM table; counts marked packets in the mark's parity);
 *      if the DSM table missed: HashPipe, then HhReport (digest when count > eta)
 *   4. PathBf (monitor: pathBF = mask and mark cleared; other: pathBF |= mask)
 *   5. monitor only, not towards a host: UpstreamMeter (USM table; count and mark)
 *   6. pop the shim on packets leaving to a host port
 * Egress does nothing. No header but the shim is ever changed. */
#include <core.p4>
#include <v1model.p4>

#include "../include/compat.p4"
#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"
#include "switch_config.p4"
#include "forwarding.p4"
#include "path_bf.p4"
#include "downstream_meter.p4"
#include "hashpipe.p4"
#include "hh_report.p4"
#include "upstream_meter.p4"

parser CanaryParser(packet_in pkt, out headers_t hdr, inout canary_meta_t meta,
                    inout standard_metadata_t std_meta) {
    CanaryHeaderParser() headers;
    state start {
        headers.apply(pkt, hdr);
        transition accept;
    }
}

control CanaryVerifyChecksum(inout headers_t hdr, inout canary_meta_t meta) {
    apply { }
}

control CanaryIngress(inout headers_t hdr, inout canary_meta_t meta,
                      inout standard_metadata_t std_meta) {
    HostPort() host_port;
    SwitchConfig() switch_config;
    Forwarding() forwarding;
    DownstreamMeter() downstream_meter;
    HashPipe() hashpipe;
    HhReport() hh_report;
    PathBf() path_bf;
    UpstreamMeter() upstream_meter;

    apply {
        if (!hdr.ipv4.isValid()) {
            mark_to_drop(std_meta);
            exit;
        }
        meta.flow.src_addr = hdr.ipv4.src_addr;
        meta.flow.dst_addr = hdr.ipv4.dst_addr;
        meta.flow.protocol = hdr.ipv4.protocol;
        meta.flow.src_port = 0;
        meta.flow.dst_port = 0;
        if (hdr.ports.isValid()) {
            meta.flow.src_port = hdr.ports.src_port;
            meta.flow.dst_port = hdr.ports.dst_port;
        }
        hash(meta.c32, HashAlgorithm.crc32, (bit<32>)0,
             { meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
               meta.flow.src_port, meta.flow.dst_port }, (bit<64>)0x100000000);
        hash(meta.c16, HashAlgorithm.crc16, (bit<16>)0,
             { meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
               meta.flow.src_port, meta.flow.dst_port }, (bit<32>)0x10000);

        host_port.apply(std_meta.ingress_port, meta);
        if (meta.from_host == 1 && hdr.canary.isValid()) {
            /* A host must not forge a shim. */
            mark_to_drop(std_meta);
            exit;
        }
        if (meta.from_host == 1) {
            hdr.canary.setValid();
            hdr.canary.path_bf = 0;
            hdr.canary.counted = 0;
            hdr.canary.parity = 0;
            hdr.canary.reserved = 0;
            hdr.canary.ether_type = hdr.ethernet.ether_type;
            hdr.ethernet.ether_type = ETHERTYPE_CANARY;
        }
        if (!hdr.canary.isValid()) {
            /* From the fabric without a shim: not ours. */
            mark_to_drop(std_meta);
            exit;
        }

        switch_config.apply(meta);
        port_t port;
        forwarding.apply(hdr, meta, port);
        if (meta.routed == 0) {
            mark_to_drop(std_meta);
            exit;
        }
        std_meta.egress_spec = port;

        if (meta.monitor == 1) {
            downstream_meter.apply(hdr, meta);
            if (meta.dsm_hit == 0) {
                hashpipe.apply(meta);
                hh_report.apply(hdr, meta);
            }
        }
        path_bf.apply(hdr, meta);
        if (meta.monitor == 1 && meta.to_host == 0) {
            upstream_meter.apply(hdr, meta);
        }

        if (meta.to_host == 1) {
            hdr.ethernet.ether_type = hdr.canary.ether_type;
            hdr.canary.setInvalid();
        }
    }
}

control CanaryEgress(inout headers_t hdr, inout canary_meta_t meta,
                     inout standard_metadata_t std_meta) {
    apply { }
}

control CanaryComputeChecksum(inout headers_t hdr, inout canary_meta_t meta) {
    apply { }
}

control CanaryDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.canary);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ports);
    }
}

V1Switch(CanaryParser(), CanaryVerifyChecksum(), CanaryIngress(), CanaryEgress(),
         CanaryComputeChecksum(), CanaryDeparser()) main;
