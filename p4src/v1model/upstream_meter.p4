/* UpstreamMeter: the USM table and the USM (Algorithm 2), two parity instances of 3 rows.
 * A bucket works as a DSM bucket without pathBF (see downstream_meter.p4), equal to
 * canary_core::sketch::UsmBucket::update_n(.., 1). */
control UsmRow(in flow_t key, in bit<32> idx) {
    register<bit<1>>(METER_WIDTH)  used_reg;
    register<bit<32>>(METER_WIDTH) src_addr_reg;
    register<bit<32>>(METER_WIDTH) dst_addr_reg;
    register<bit<32>>(METER_WIDTH) ports_reg;
    register<bit<8>>(METER_WIDTH)  protocol_reg;
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

        bit<1> dirty;
        dirty_reg.read(dirty, idx);
        if (mismatch == 1) { dirty_reg.write(idx, 1); }
        bit<32> count;
        count_reg.read(count, idx);
        if (dirty == 0) { count_reg.write(idx, count + 1); }
    }
}

control UsmInstance(in flow_t key, in bit<32> i0, in bit<32> i1, in bit<32> i2) {
    UsmRow() row0;
    UsmRow() row1;
    UsmRow() row2;
    apply {
        row0.apply(key, i0);
        row1.apply(key, i1);
        row2.apply(key, i2);
    }
}

/* The USM table matches the flow ID of the monitored flows (RuleOp::InstallUsm). A hit counts
 * the packet in the instance of the switch's current parity and marks it (counted, parity).
 * Applied after PathBf (which clears the mark) and never on the last hop (egress to a host). */
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
            bit<32> i0 = ROW0_INDEX(meta.c32, meta.c16);
            bit<32> i1 = ROW1_INDEX(meta.c32, meta.c16);
            bit<32> i2 = ROW2_INDEX(meta.c32, meta.c16);
            if (meta.cur_parity == 0) {
                parity0.apply(meta.flow, i0, i1, i2);
            } else {
                parity1.apply(meta.flow, i0, i1, i2);
            }
            hdr.canary.counted = 1;
            hdr.canary.parity = meta.cur_parity;
        }
    }
}
