/* DownstreamMeter: the DSM table and the DSM (Algorithm 1), two parity instances of 3 rows.
 *
 * A bucket is one index of eight registers. Each register is touched once per packet, in the
 * order a Tofino stage chain needs (tna/downstream_meter.p4 has one RegisterAction per register):
 *   used_reg      set to 1, old value read: 0 = the bucket is empty
 *   key + path_bf empty: store the packet's; else compare, any difference -> mismatch
 *   dirty_reg     set to 1 on a mismatch, old value read
 *   count_reg     incremented unless the bucket was already dirty
 * This equals canary_core::sketch::DsmBucket::update_n(.., 1): an empty bucket takes the flow
 * with count 1; a clean bucket counts a matching packet; the first mismatching packet dirties it
 * and is counted; a dirty bucket never changes. */
control DsmRow(in flow_t key, in bit<32> path_bf, in bit<32> idx) {
    register<bit<1>>(METER_WIDTH)  used_reg;
    register<bit<32>>(METER_WIDTH) src_addr_reg;
    register<bit<32>>(METER_WIDTH) dst_addr_reg;
    register<bit<32>>(METER_WIDTH) ports_reg;
    register<bit<8>>(METER_WIDTH)  protocol_reg;
    register<bit<32>>(METER_WIDTH) path_bf_reg;
    register<bit<1>>(METER_WIDTH)  dirty_reg;
    register<bit<32>>(METER_WIDTH) count_reg;

    apply {
        bit<1> used;
        bit<1> mismatch = 0;
        bit<32> v32;
        bit<8> v8;
        bit<32> ports = key.src_port ++ key.dst_port;
        used_reg.read(used, idx);
        used_reg.write(idx, 1);

        src_addr_reg.read(v32, idx);
        if (used == 0) { src_addr_reg.write(idx, key.src_addr); }
        else if (v32 != key.src_addr) { mismatch = 1; }
        dst_addr_reg.read(v32, idx);
        if (used == 0) { dst_addr_reg.write(idx, key.dst_addr); }
        else if (v32 != key.dst_addr) { mismatch = 1; }
        ports_reg.read(v32, idx);
        if (used == 0) { ports_reg.write(idx, ports); }
        else if (v32 != ports) { mismatch = 1; }
        protocol_reg.read(v8, idx);
        if (used == 0) { protocol_reg.write(idx, key.protocol); }
        else if (v8 != key.protocol) { mismatch = 1; }
        path_bf_reg.read(v32, idx);
        if (used == 0) { path_bf_reg.write(idx, path_bf); }
        else if (v32 != path_bf) { mismatch = 1; }

        bit<1> dirty;
        dirty_reg.read(dirty, idx);
        if (mismatch == 1) { dirty_reg.write(idx, 1); }
        bit<32> count;
        count_reg.read(count, idx);
        if (dirty == 0) { count_reg.write(idx, count + 1); }
    }
}

control DsmInstance(in flow_t key, in bit<32> path_bf, in bit<32> i0, in bit<32> i1, in bit<32> i2) {
    DsmRow() row0;
    DsmRow() row1;
    DsmRow() row2;
    apply {
        row0.apply(key, path_bf, i0);
        row1.apply(key, path_bf, i1);
        row2.apply(key, path_bf, i2);
    }
}

/* The DSM table matches (flow ID, pathBF) of the monitored flows (RuleOp::InstallDsm). A hit
 * sets dsm_hit (the packet skips HashPipe); the DSM counts it only if the upstream USM marked
 * it, in the instance of the mark's parity. */
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
            bit<32> i0 = ROW0_INDEX(meta.c32, meta.c16);
            bit<32> i1 = ROW1_INDEX(meta.c32, meta.c16);
            bit<32> i2 = ROW2_INDEX(meta.c32, meta.c16);
            if (hdr.canary.parity == 0) {
                parity0.apply(meta.flow, hdr.canary.path_bf, i0, i1, i2);
            } else {
                parity1.apply(meta.flow, hdr.canary.path_bf, i0, i1, i2);
            }
        }
    }
}
