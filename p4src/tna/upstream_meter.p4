/* UpstreamMeter (TNA): the USM table and the USM (Algorithm 2), as v1model/upstream_meter.p4,
 * with buckets that hold the rule's ID (tna/meter_row.p4). The controller gives each rule its
 * ID as the action parameter. Applied to every packet; it acts only at monitors. */
control UpstreamMeter(inout headers_t hdr, in canary_meta_t meta) {
    CanaryMeter(0) meter;   /* counts when the USM matched and the packet does not leave to a host */
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
        /* At a monitor: match early, count late. The table hit does not wait for forwarding;
         * the meter does (a packet leaving to a host is not counted), and the mark, set or
         * cleared, is written once from one container (a Tofino 1 action writing part of a
         * header container takes one PHV source besides it, none with a constant). */
        bit<2> mark = 0;
        bit<1> usm_hit = 0;
        if (meta.monitor == 1) {
            if (usm_table.apply().hit) {
                usm_hit = 1;
                mark = 2w2 | (bit<2>)meta.cur_parity;
            }
            hdr.canary.counted = mark[1:1];
            hdr.canary.parity = mark[0:0];
        }
        meter.apply(usm_hit, meta.to_host, rule_id, meta.cur_parity, meta.c32, meta.c16);
    }
}
