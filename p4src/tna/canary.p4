/* Canary data plane for TNA (Tofino 1): the shared program of p4src/include and the controls that
 * use TNA's externs. v1model/canary.p4 is the same program for BMv2; what differs in form here
 * is forced by Tofino 1 (docs/dataplane.md, "What bf-p4c made of it"):
 *  - hashes are Hash externs with the Rust model's CRC parameters, each in a table of its own
 *    (tna/flow_hash.p4);
 *  - a register pair is a struct the stateful ALU updates in one access (tna/meter_row.p4);
 *  - HashPipe keeps copies of stage registers and counts down to the threshold
 *    (tna/hashpipe.p4), computing what v1model/hashpipe.p4 computes directly;
 *  - the HH digest is packed by the ingress deparser; flooded copies lose the shim in egress,
 *    which unicast packets bypass. */
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

parser CanaryIngressParser(packet_in pkt, out headers_t hdr, out canary_meta_t meta,
                           out ingress_intrinsic_metadata_t ig_intr_md) {
    CanaryHeaderParser() headers;
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        headers.apply(pkt, hdr, meta);
        transition accept;
    }
}

/* The meters' stateful ALUs compare the bucket's tag with these as whole 32-bit PHV words: left
 * to itself the compiler packs their 15 live bits with other fields, and the input crossbar
 * cannot feed the ALU from part of a container. */
@pa_container_size("ingress", "meta.dsm_tag", 32)
@pa_container_size("ingress", "meta.usm_tag", 32)
control CanaryIngress(inout headers_t hdr, inout canary_meta_t meta,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    CanaryIngressCore() core;
    apply {
        port_t port;
        core.apply(hdr, meta, ig_intr_md.ingress_port, port);
        if (meta.routed == 1) {
            ig_tm_md.ucast_egress_port = port;
            ig_tm_md.bypass_egress = 1;
        } else if (meta.is_ip == 1 && meta.unicast == 1) {
            ig_dprsr_md.drop_ctl = 1;   /* IP unicast without a route */
        } else if (meta.flood_group != 0) {
            ig_tm_md.mcast_grp_a = meta.flood_group;
        } else {
            ig_dprsr_md.drop_ctl = 1;   /* a port the controller gave no flood group */
        }
        if (meta.send_digest == 1) {
            ig_dprsr_md.digest_type = HH_DIGEST_RECEIVER;
        }
    }
}

control CanaryIngressDeparser(packet_out pkt, inout headers_t hdr, in canary_meta_t meta,
                              in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Digest<hh_digest_t>(HH_DIGEST_RECEIVER) hh_digest;
    apply {
        if (ig_dprsr_md.digest_type == HH_DIGEST_RECEIVER) {
            hh_digest.pack({ meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
                             meta.flow.src_port, meta.flow.dst_port, meta.in_path_bf });
        }
        pkt.emit(hdr);
    }
}

/* Egress: only flooded copies come here; those leaving to a host (replication id 1) lose the
 * shim. The rest of the frame is payload to egress. */
struct egress_headers_t {
    ethernet_h ethernet;
    canary_h   canary;
}
struct egress_meta_t { }

parser CanaryEgressParser(packet_in pkt, out egress_headers_t hdr, out egress_meta_t meta,
                          out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_CANARY: parse_canary;
            default: accept;
        }
    }
    state parse_canary {
        pkt.extract(hdr.canary);
        transition accept;
    }
}

control CanaryEgress(inout egress_headers_t hdr, inout egress_meta_t meta,
                     in egress_intrinsic_metadata_t eg_intr_md,
                     in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                     inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                     inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        if (eg_intr_md.egress_rid == 1 && hdr.canary.isValid()) {
            hdr.ethernet.ether_type = hdr.canary.ether_type;
            hdr.canary.setInvalid();
        }
    }
}

control CanaryEgressDeparser(packet_out pkt, inout egress_headers_t hdr, in egress_meta_t meta,
                             in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr); }
}

Pipeline(CanaryIngressParser(), CanaryIngress(), CanaryIngressDeparser(),
         CanaryEgressParser(), CanaryEgress(), CanaryEgressDeparser()) pipe;
Switch(pipe) main;
