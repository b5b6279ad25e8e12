/* FlowHash (TNA): the flow key's CRC-32/ISO-HDLC and CRC-16/ARC over IPv4's 13-byte or IPv6's
 * 37-byte key, as v1model/flow_hash.p4. Each hash in a table of its own: an action takes at most
 * 32 bits from the hash units (Tofino 1's immediate pathway). */
control FlowHash(inout canary_meta_t meta) {
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, CRC32_ISO_HDLC) h32_v4;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, CRC32_ISO_HDLC) h32_v6;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, CRC16_ARC) h16_v4;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, CRC16_ARC) h16_v6;

    action crc32_v4() {
        meta.c32 = h32_v4.get({ meta.flow.src_addr[31:0], meta.flow.dst_addr[31:0],
                                meta.flow.protocol, meta.flow.src_port, meta.flow.dst_port });
    }
    action crc32_v6() {
        meta.c32 = h32_v6.get({ meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
                                meta.flow.src_port, meta.flow.dst_port });
    }
    table flow_crc32 {
        key = { meta.is_v6: exact @name("v6"); }
        actions = { crc32_v4; crc32_v6; }
        const entries = {
            0 : crc32_v4();
            1 : crc32_v6();
        }
        size = 2;
    }
    action crc16_v4() {
        meta.c16 = h16_v4.get({ meta.flow.src_addr[31:0], meta.flow.dst_addr[31:0],
                                meta.flow.protocol, meta.flow.src_port, meta.flow.dst_port });
    }
    action crc16_v6() {
        meta.c16 = h16_v6.get({ meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
                                meta.flow.src_port, meta.flow.dst_port });
    }
    table flow_crc16 {
        key = { meta.is_v6: exact @name("v6"); }
        actions = { crc16_v4; crc16_v6; }
        const entries = {
            0 : crc16_v4();
            1 : crc16_v6();
        }
        size = 2;
    }
    apply {
        flow_crc32.apply();
        flow_crc16.apply();
    }
}
