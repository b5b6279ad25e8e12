/* Canary data plane: the header parser, a sub-parser both architectures apply. */
#ifndef CANARY_PARSER_P4
#define CANARY_PARSER_P4

parser CanaryHeaderParser(packet_in pkt, out headers_t hdr) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_CANARY: parse_canary;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_canary {
        pkt.extract(hdr.canary);
        transition select(hdr.canary.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* Ports only when they follow a 20-byte header in a first (or only) fragment. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_TCP): parse_ports;
            (5, 0, IP_PROTO_UDP): parse_ports;
            default: accept;
        }
    }
    state parse_ports {
        pkt.extract(hdr.ports);
        transition accept;
    }
}

#endif
