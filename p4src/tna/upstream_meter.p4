/* UpstreamMeter (TNA): the USM table and the USM (Algorithm 2), as v1model/upstream_meter.p4,
 * with buckets that hold the rule's ID (tna/meter_row.p4). The controller gives each rule its
 * ID as the action parameter. */
control UpstreamMeter(inout headers_t hdr, in canary_meta_t meta) {
    CanaryMeter() meter;
    bit<32> rule_id = 0;

    action usm_count(bit<32> id) {
        rule_id = id;
    }
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
            meter.apply(rule_id, meta.cur_parity, meta.c32, meta.c16);
            hdr.canary.counted = 1;
            hdr.canary.parity = meta.cur_parity;
        }
    }
}
