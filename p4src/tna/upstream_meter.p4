/* UpstreamMeter (TNA): same tables, instances, registers and semantics as
 * v1model/upstream_meter.p4. */
control UsmRow(in flow_t key, in bit<32> ports, in bit<10> idx) {
    METER_STATE_REGS
    METER_KEY_CHUNK(bit<32>, src_addr, key.src_addr)
    METER_KEY_CHUNK(bit<32>, dst_addr, key.dst_addr)
    METER_KEY_CHUNK(bit<32>, ports, ports)
    METER_KEY_CHUNK(bit<8>, protocol, key.protocol)
    apply {
        bit<1> mismatch = 0;
        bit<1> used = used_test_and_set.execute(idx);
        METER_CHUNK_APPLY(src_addr)
        METER_CHUNK_APPLY(dst_addr)
        METER_CHUNK_APPLY(ports)
        METER_CHUNK_APPLY(protocol)
        METER_STATE_APPLY
    }
}

control UsmInstance(in flow_t key, in bit<32> ports, in bit<10> i0, in bit<10> i1, in bit<10> i2) {
    UsmRow() row0;
    UsmRow() row1;
    UsmRow() row2;
    apply {
        row0.apply(key, ports, i0);
        row1.apply(key, ports, i1);
        row2.apply(key, ports, i2);
    }
}

control UpstreamMeter(inout headers_t hdr, in canary_meta_t meta) {
    UsmInstance() parity0;
    UsmInstance() parity1;

    action usm_count() { }
    table usm_table {
        key = {
            meta.flow.src_addr: exact @name("src_addr");
            meta.flow.dst_addr: exact @name("dst_addr");
            meta.flow.protocol: exact @name("protocol");
            meta.flow.src_port: exact @name("src_port");
            meta.flow.dst_port: exact @name("dst_port");
        }
        actions = { usm_count; @defaultonly NoAction; }
        const default_action = NoAction;
        size = USM_TABLE_SIZE;
    }
    apply {
        if (usm_table.apply().hit) {
            bit<32> ports = meta.flow.src_port ++ meta.flow.dst_port;
            if (meta.cur_parity == 0) {
                parity0.apply(meta.flow, ports, meta.c32[9:0], meta.c32[31:22], meta.c16[9:0]);
            } else {
                parity1.apply(meta.flow, ports, meta.c32[9:0], meta.c32[31:22], meta.c16[9:0]);
            }
            hdr.canary.counted = 1;
            hdr.canary.parity = meta.cur_parity;
        }
    }
}
