/* Canary data plane: the header parser, a sub-parser both architectures apply.
 *
 * A shim is parsed wherever the EtherType says so; whether it is ours is the ingress's call (a
 * host's frame of that EtherType is carried opaquely). After a shim whose EtherType is the
 * shim's own, nothing more is parsed: that is a host's opaque frame crossing the fabric. */
#ifndef CANARY_PARSER_P4
#define CANARY_PARSER_P4

parser CanaryHeaderParser(packet_in pkt, out headers_t hdr, inout canary_meta_t meta) {
    state start {
        meta.ip_parsed = 0;
        meta.is_v6 = 0;
        meta.flow.src_port = 0;
        meta.flow.dst_port = 0;
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_CANARY: parse_canary;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }
    state parse_canary {
        pkt.extract(hdr.canary);
        transition select(hdr.canary.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        meta.ip_parsed = 1;
        /* Ports only when they follow a 20-byte header in a first (or only) fragment. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_TCP): parse_ports;
            (5, 0, IP_PROTO_UDP): parse_ports;
            default: accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        meta.ip_parsed = 1;
        meta.is_v6 = 1;
        /* Ports only when TCP or UDP is the first next header (extension headers are not
         * parsed: such flows are keyed with ports 0). */
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_TCP: parse_ports;
            IP_PROTO_UDP: parse_ports;
            default: accept;
        }
    }
    state parse_ports {
        pkt.extract(hdr.ports);
        meta.flow.src_port = hdr.ports.src_port;
        meta.flow.dst_port = hdr.ports.dst_port;
        transition accept;
    }
}

#endif
