/* DownstreamMeter (TNA): same tables, instances, registers and semantics as
 * v1model/downstream_meter.p4; each register is one RegisterAction per packet. */
control DsmRow(in flow_t key, in bit<32> ports, in bit<32> path_bf, in bit<10> idx) {
    METER_STATE_REGS
    METER_KEY_CHUNK(bit<32>, src_addr, key.src_addr)
    METER_KEY_CHUNK(bit<32>, dst_addr, key.dst_addr)
    METER_KEY_CHUNK(bit<32>, ports, ports)
    METER_KEY_CHUNK(bit<8>, protocol, key.protocol)
    METER_KEY_CHUNK(bit<32>, path_bf, path_bf)
    apply {
        bit<1> mismatch = 0;
        bit<1> used = used_test_and_set.execute(idx);
        METER_CHUNK_APPLY(src_addr)
        METER_CHUNK_APPLY(dst_addr)
        METER_CHUNK_APPLY(ports)
        METER_CHUNK_APPLY(protocol)
        METER_CHUNK_APPLY(path_bf)
        METER_STATE_APPLY
    }
}

control DsmInstance(in flow_t key, in bit<32> ports, in bit<32> path_bf,
                    in bit<10> i0, in bit<10> i1, in bit<10> i2) {
    DsmRow() row0;
    DsmRow() row1;
    DsmRow() row2;
    apply {
        row0.apply(key, ports, path_bf, i0);
        row1.apply(key, ports, path_bf, i1);
        row2.apply(key, ports, path_bf, i2);
    }
}

control DownstreamMeter(in headers_t hdr, inout canary_meta_t meta) {
    DsmInstance() parity0;
    DsmInstance() parity1;

    action dsm_hit() {
        meta.dsm_hit = 1;
    }
    table dsm_table {
        key = {
            meta.flow.src_addr: exact @name("src_addr");
            meta.flow.dst_addr: exact @name("dst_addr");
            meta.flow.protocol: exact @name("protocol");
            meta.flow.src_port: exact @name("src_port");
            meta.flow.dst_port: exact @name("dst_port");
            hdr.canary.path_bf: exact @name("path_bf");
        }
        actions = { dsm_hit; @defaultonly NoAction; }
        const default_action = NoAction;
        size = DSM_TABLE_SIZE;
    }
    apply {
        meta.dsm_hit = 0;
        dsm_table.apply();
        if (meta.dsm_hit == 1 && hdr.canary.counted == 1) {
            bit<32> ports = meta.flow.src_port ++ meta.flow.dst_port;
            if (hdr.canary.parity == 0) {
                parity0.apply(meta.flow, ports, hdr.canary.path_bf,
                              meta.c32[9:0], meta.c32[31:22], meta.c16[9:0]);
            } else {
                parity1.apply(meta.flow, ports, hdr.canary.path_bf,
                              meta.c32[9:0], meta.c32[31:22], meta.c16[9:0]);
            }
        }
    }
}
