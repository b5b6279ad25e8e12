/* DownstreamMeter (TNA): the DSM table and the DSM (Algorithm 1), as
 * v1model/downstream_meter.p4, with buckets that hold the rule's ID (tna/meter_row.p4). A DSM
 * rule is keyed on (flow, pathBF), so its ID stands for both, and the bucket needs no pathBF
 * register. */
control DownstreamMeter(in headers_t hdr, inout canary_meta_t meta) {
    CanaryMeter() meter;
    bit<32> rule_id = 0;

    action dsm_hit(bit<32> id) {
        meta.dsm_hit = 1;
        rule_id = id;
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
            meter.apply(rule_id, hdr.canary.parity, meta.c32, meta.c16);
        }
    }
}
