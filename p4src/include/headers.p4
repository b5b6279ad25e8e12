/* Canary data plane: headers and metadata shared by the v1model and TNA programs. */
#ifndef CANARY_HEADERS_P4
#define CANARY_HEADERS_P4

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* The Canary shim, 8 bytes between Ethernet and the frame's own EtherType (Ethernet's EtherType
 * = ETHERTYPE_CANARY), on fabric links only: pushed by the first switch on every frame from a
 * host, removed before a frame leaves to a host, so hosts see their frames byte for byte. */
header canary_h {
    bit<32> path_bf;     /* Bloom filter of the switches since the last monitor */
    bit<1>  counted;     /* the mark: an upstream USM counted this packet ... */
    bit<15> epoch;       /* ... in the meters of the epoch with this tag (bit 0: the parity) */
    bit<16> ether_type;  /* the frame's own EtherType, restored on removal */
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header ipv6_h {
    bit<4>   version;
    bit<8>   traffic_class;
    bit<20>  flow_label;
    bit<16>  payload_len;
    bit<8>   next_hdr;
    bit<8>   hop_limit;
    bit<128> src_addr;
    bit<128> dst_addr;
}

/* The first 4 bytes of TCP and UDP; the rest of L4 is payload to us. */
header l4_ports_h {
    bit<16> src_port;
    bit<16> dst_port;
}

/* Deparsed in this order. `canary_inner` is never parsed: it holds the first 8 bytes of a
 * host's own frame of EtherType ETHERTYPE_CANARY, which crosses the fabric inside our shim. */
struct headers_t {
    ethernet_h  ethernet;
    canary_h    canary;
    canary_h    canary_inner;
    ipv4_h      ipv4;
    ipv6_h      ipv6;
    l4_ports_h  ports;
}

/* The flow ID: the 5-tuple on 128-bit addresses (IPv4 as ::ffff:a.b.c.d), in the order the Rust
 * model keys it (canary_core::FlowId). The hashes take IPv4's 32-bit addresses. */
struct flow_t {
    bit<128> src_addr;
    bit<128> dst_addr;
    bit<8>   protocol;
    bit<16>  src_port;
    bit<16>  dst_port;
}

/* The HH report sent to the controller: the flow and the pathBF the packet arrived with. */
struct hh_digest_t {
    bit<128> src_addr;
    bit<128> dst_addr;
    bit<8>   protocol;
    bit<16>  src_port;
    bit<16>  dst_port;
    bit<32>  path_bf;
}

struct canary_meta_t {
    flow_t  flow;
    bit<1>  ip_parsed;    /* the parser found IPv4 or IPv6 (and filled flow) */
    bit<1>  is_ip;        /* IPv4 or IPv6, not a host's opaque frame */
    bit<1>  is_v6;
    bit<1>  unicast;      /* an IP unicast destination */
    bit<32> c32;          /* CRC-32/ISO-HDLC of the flow key */
    bit<16> c16;          /* CRC-16/ARC of the flow key */
    bit<32> in_path_bf;   /* the pathBF the packet arrived with (what the digest reports) */
    /* switch_config */
    bit<1>  monitor;
    bit<32> mask;         /* this switch's pathBF mask */
    bit<16> usm_mark;     /* {counted = 1, epoch tag}: the mark a USM hit writes */
    bit<32> usm_tag;      /* epoch, widened: a stateful ALU compares 32-bit PHV words */
    bit<32> dsm_tag;      /* the shim's epoch, widened */
    bit<15> epoch_prev;   /* the epoch tags next to this switch's: with it, the marks the DSM */
    bit<15> epoch_next;   /* counts (a switch that missed flips marks older ones) */
    /* forwarding */
    bit<1>  from_host;
    bit<1>  to_host;
    bit<16> ecmp_group;
    bit<16> ecmp_size;
    bit<16> ecmp_member;
    bit<1>  route_hit;
    bit<1>  routed;       /* IP unicast with a route: forwarded by port, maybe monitored */
    bit<16> flood_group;  /* every other frame: this multicast group */
    bit<1>  watched;      /* routed, carries a shim, at a monitor: meters apply */
    bit<1>  send_digest;
}

#endif
