/* Canary data plane for TNA (Tofino). Same controls and tables as v1model/canary.p4; see that
 * file for the pipeline. Differences, each forced by Tofino 1 (docs/dataplane.md, "What
 * bf-p4c made of it"):
 *  - hashes are Hash externs with the Rust model's CRC parameters, each in a table of its own;
 *  - the HH digest is packed by the ingress deparser;
 *  - the ECMP member's multiplication and remainder are table lookups the controller fills
 *    (the same member as v1model, tna/forwarding.p4);
 *  - a meter bucket holds the controller-assigned ID of the rule that owns it, and both parity
 *    instances share one register (tna/meter_row.p4); HashPipe is keyed by a fingerprint and
 *    HH compares by countdown (tna/hashpipe.p4, tna/hh_report.p4): 17 stateful ALUs, where a
 *    literal port of v1model needs 105 and Tofino 1 has 48;
 *  - no `exit` and no if-block around a multi-stage chain (a Tofino 1 table after a block is
 *    placed after the block's last table): the program fits 12 stages. */
#include <core.p4>
#include <tna.p4>

#include "../include/compat.p4"
#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"

/* CRC-32/ISO-HDLC and CRC-16/ARC, as canary_core::sketch::hash
 * (CRCPolynomial(coeff, reversed, msb, extended, init, xor)). */
#define CRC32_ISO_HDLC \
    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF)
#define CRC16_ARC CRCPolynomial<bit<16>>(16w0x8005, true, false, false, 16w0x0000, 16w0x0000)

#include "switch_config.p4"
#include "forwarding.p4"
#include "path_bf.p4"
#include "meter_row.p4"
#include "downstream_meter.p4"
#include "hashpipe.p4"
#include "hh_report.p4"
#include "upstream_meter.p4"

parser CanaryIngressParser(packet_in pkt, out headers_t hdr, out canary_meta_t meta,
                           out ingress_intrinsic_metadata_t ig_intr_md) {
    CanaryHeaderParser() headers;
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        headers.apply(pkt, hdr);
        transition accept;
    }
}

control CanaryIngress(inout headers_t hdr, inout canary_meta_t meta,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, CRC32_ISO_HDLC) flow_hash32;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, CRC16_ARC) flow_hash16;
    HostPort() host_port;
    SwitchConfig() switch_config;
    Forwarding() forwarding;
    DownstreamMeter() downstream_meter;
    HashPipe() hashpipe;
    HhReport() hh_report;
    HhSend() hh_send;
    PathBf() path_bf;
    UpstreamMeter() upstream_meter;

    /* Each hash in a table of its own: an action takes at most 32 bits from the hash units
     * (Tofino 1's immediate pathway), and the compiler would otherwise merge both into one. */
    action crc32() {
        meta.c32 = flow_hash32.get({ meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
                                     meta.flow.src_port, meta.flow.dst_port });
    }
    table flow_crc32 {
        actions = { crc32; }
        const default_action = crc32();
        size = 1;
    }
    action crc16() {
        meta.c16 = flow_hash16.get({ meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
                                     meta.flow.src_port, meta.flow.dst_port });
    }
    table flow_crc16 {
        actions = { crc16; }
        const default_action = crc16();
        size = 1;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            ig_dprsr_md.drop_ctl = 1;
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
        flow_crc32.apply();
        flow_crc16.apply();

        host_port.apply(ig_intr_md.ingress_port, meta);
        if (meta.from_host == 1 && hdr.canary.isValid()) {
            ig_dprsr_md.drop_ctl = 1;
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
            ig_dprsr_md.drop_ctl = 1;
            exit;
        }

        /* The digest's fields, for every packet (only HhReport decides to send it). */
        meta.hh.src_addr = meta.flow.src_addr;
        meta.hh.dst_addr = meta.flow.dst_addr;
        meta.hh.protocol = meta.flow.protocol;
        meta.hh.src_port = meta.flow.src_port;
        meta.hh.dst_port = meta.flow.dst_port;
        meta.hh.path_bf = hdr.canary.path_bf;

        switch_config.apply(meta);
        port_t port;
        forwarding.apply(hdr, meta, port);
        /* No exit here (v1model exits): everything after would wait for the ECMP chain's last
         * table, and the meters could not start before stage 9. An unrouted packet is dropped
         * at the end of ingress; it can still pass HashPipe (it hits no USM/DSM rule, which
         * the controller installs only for routed flows). */
        if (meta.routed == 0) {
            ig_dprsr_md.drop_ctl = 1;
        }
        ig_tm_md.ucast_egress_port = port;
        ig_tm_md.bypass_egress = 1;

        bit<1> hashpipe_on;
        downstream_meter.apply(hdr, meta, hashpipe_on);
        bit<1> hh_watched;
        bit<32> hh_threshold;
        hh_report.apply(hdr, hh_watched, hh_threshold);
        bit<32> hh_short;
        hashpipe.apply(meta, hashpipe_on, hh_threshold, hh_short);
        hh_send.apply(hh_watched, hh_short, ig_dprsr_md);
        upstream_meter.apply(hdr, meta);
        path_bf.apply(hdr, meta);
        if (meta.to_host == 1) {
            hdr.ethernet.ether_type = hdr.canary.ether_type;
            hdr.canary.setInvalid();
        }
    }
}

control CanaryIngressDeparser(packet_out pkt, inout headers_t hdr, in canary_meta_t meta,
                              in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Digest<hh_digest_t>(HH_DIGEST_RECEIVER) hh_digest;
    apply {
        if (ig_dprsr_md.digest_type == HH_DIGEST_RECEIVER) {
            hh_digest.pack(meta.hh);
        }
        pkt.emit(hdr);
    }
}

/* Egress does nothing (bypass_egress is set); an empty pipe for completeness. */
struct egress_headers_t { }
struct egress_meta_t { }

parser CanaryEgressParser(packet_in pkt, out egress_headers_t hdr, out egress_meta_t meta,
                          out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition accept;
    }
}

control CanaryEgress(inout egress_headers_t hdr, inout egress_meta_t meta,
                     in egress_intrinsic_metadata_t eg_intr_md,
                     in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                     inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                     inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control CanaryEgressDeparser(packet_out pkt, inout egress_headers_t hdr, in egress_meta_t meta,
                             in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr); }
}

Pipeline(CanaryIngressParser(), CanaryIngress(), CanaryIngressDeparser(),
         CanaryEgressParser(), CanaryEgress(), CanaryEgressDeparser()) pipe;
Switch(pipe) main;
