/* DownstreamMeter (TNA): the DSM table and the DSM (Algorithm 1), as
 * v1model/downstream_meter.p4, with buckets that hold the rule's ID (tna/meter_row.p4). A DSM
 * rule is keyed on (flow, pathBF), so its ID stands for both, and the bucket needs no pathBF
 * register. */
control DownstreamMeter(in headers_t hdr, inout canary_meta_t meta, out bit<1> hashpipe_on) {
    CanaryMeter(1) meter;   /* counts when dsm_hit == 1 and the packet's mark says counted */
    bit<32> rule_id = 0;

    action dsm_hit(bit<32> id) {
        meta.dsm_hit = 1;
        hashpipe_on = 0;
        rule_id = id;
    }
    /* The flags are set in the table's own stage (a separate `dsm_hit = 0` costs one); a
     * packet the DSM did not count goes to HashPipe. */
    action dsm_miss() {
        meta.dsm_hit = 0;
        hashpipe_on = 1;
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
        actions = { dsm_hit; @defaultonly dsm_miss; }
        const default_action = dsm_miss();
        size = DSM_TABLE_SIZE;
    }
    apply {
        /* Applied to every packet: the table only at monitors, and the meter as flat steps
         * (tna/meter_row.p4), so that nothing after it waits for its last stage. */
        meta.dsm_hit = 0;
        hashpipe_on = 0;
        if (meta.monitor == 1) {
            dsm_table.apply();
        }
        meter.apply(meta.dsm_hit, hdr.canary.counted, rule_id, hdr.canary.parity, meta.c32, meta.c16);
    }
}
