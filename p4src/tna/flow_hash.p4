/* FlowHash (TNA): the flow key's CRC-32/ISO-HDLC and CRC-16/ARC over IPv4's 13-byte or IPv6's
 * 37-byte key, as v1model/flow_hash.p4. Tofino 1 gives an action at most 32 bits from the hash
 * units (the immediate pathway), and a table's actions share that budget, so each hash is
 * computed by a table of its own and the gateway (`if`) picks the IPv4 or the IPv6 one. */
control FlowHash(in headers_t hdr, inout canary_meta_t meta) {
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, CRC32_ISO_HDLC) h32_v4;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, CRC32_ISO_HDLC) h32_v6;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, CRC16_ARC) h16_v4;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, CRC16_ARC) h16_v6;

    action crc32_v4() {
        meta.c32 = h32_v4.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                hdr.ipv4.protocol, meta.flow.src_port, meta.flow.dst_port });
    }
    action crc32_v6() {
        meta.c32 = h32_v6.get({ hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.next_hdr,
                                meta.flow.src_port, meta.flow.dst_port });
    }
    action crc16_v4() {
        meta.c16 = h16_v4.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                hdr.ipv4.protocol, meta.flow.src_port, meta.flow.dst_port });
    }
    action crc16_v6() {
        meta.c16 = h16_v6.get({ hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.next_hdr,
                                meta.flow.src_port, meta.flow.dst_port });
    }
    apply {
        if (hdr.ipv6.isValid()) {
            crc32_v6();
            crc16_v6();
        } else {
            crc32_v4();
            crc16_v4();
        }
    }
}
