/* FlowHash (v1model): the flow key's CRC-32/ISO-HDLC and CRC-16/ARC, BMv2's HashAlgorithm.crc32 and
 * .crc16 (canary_core::sketch::hash), over IPv4's 13-byte key or IPv6's 37-byte key, read from
 * meta.flow (FlowKey; the ports come from the parser). */
control FlowHash(in headers_t hdr, inout canary_meta_t meta) {
    apply {
        if (meta.is_v6 == 1) {
            hash(meta.c32, HashAlgorithm.crc32, (bit<32>)0,
                 { meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
                   meta.flow.src_port, meta.flow.dst_port }, (bit<64>)0x100000000);
            hash(meta.c16, HashAlgorithm.crc16, (bit<16>)0,
                 { meta.flow.src_addr, meta.flow.dst_addr, meta.flow.protocol,
                   meta.flow.src_port, meta.flow.dst_port }, (bit<32>)0x10000);
        } else {
            hash(meta.c32, HashAlgorithm.crc32, (bit<32>)0,
                 { meta.flow.src_addr[31:0], meta.flow.dst_addr[31:0], meta.flow.protocol,
                   meta.flow.src_port, meta.flow.dst_port }, (bit<64>)0x100000000);
            hash(meta.c16, HashAlgorithm.crc16, (bit<16>)0,
                 { meta.flow.src_addr[31:0], meta.flow.dst_addr[31:0], meta.flow.protocol,
                   meta.flow.src_port, meta.flow.dst_port }, (bit<32>)0x10000);
        }
    }
}
