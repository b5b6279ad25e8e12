/* Canary data plane: headers and metadata shared by the v1model and TNA programs. */
#ifndef CANARY_HEADERS_P4
#define CANARY_HEADERS_P4

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* The Canary shim, 8 bytes between Ethernet and IPv4 (Ethernet's EtherType = ETHERTYPE_CANARY).
 * Pushed by the first switch (packet from a host port), popped by the last (egress to a host
 * port), so hosts see their packets byte for byte. */
header canary_h {
    bit<32> path_bf;     /* Bloom filter of the switches since the last monitor */
    bit<1>  counted;     /* the mark: an upstream USM counted this packet ... */
    bit<1>  parity;      /* ... in its instance of this parity */
    bit<14> reserved;
    bit<16> ether_type;  /* the original EtherType, restored on pop */
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

/* The first 4 bytes of TCP and UDP; the rest of L4 is payload to us. */
header l4_ports_h {
    bit<16> src_port;
    bit<16> dst_port;
}

struct headers_t {
    ethernet_h ethernet;
    canary_h   canary;
    ipv4_h     ipv4;
    l4_ports_h ports;
}

/* The flow ID: the 104-bit 5-tuple, in the order the Rust model hashes it (FlowId::to_bytes). */
struct flow_t {
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<16> src_port;
    bit<16> dst_port;
}

/* What HashPipe carries between stages. count == 0: nothing carried. */
struct hp_carry_t {
    flow_t  key;
    bit<32> count;
}

/* The HH report sent to the controller. */
struct hh_digest_t {
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> path_bf;
}

struct canary_meta_t {
    flow_t  flow;
    bit<32> c32;          /* CRC-32/ISO-HDLC of the flow key */
    bit<16> c16;          /* CRC-16/ARC of the flow key */
    /* switch_config */
    bit<1>  monitor;
    bit<32> mask;         /* this switch's pathBF mask */
    bit<1>  cur_parity;   /* the epoch parity the USM counts in */
    /* forwarding */
    bit<1>  from_host;
    bit<1>  to_host;
    bit<16> ecmp_group;
    bit<16> ecmp_size;
    bit<16> ecmp_member;
    bit<1>  routed;
    /* meters and HashPipe */
    bit<1>  dsm_hit;
    bit<32> hh_count;
    bit<32> hh_eta;
    bit<1>  send_hh_digest;   /* TNA: the deparser packs the digest */
    hh_digest_t hh;
}

#endif
