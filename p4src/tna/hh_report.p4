/* HhReport: the HH table (Sec. III-D, Fig. 3 step 2). A rule matches the incoming pathBF of a
 * segment the controller wants more flows on (RuleOp::InstallHh{path_bf, eta}); a packet the DSM
 * did not count whose HashPipe count exceeds eta is reported as a digest (flow ID, pathBF).
 * hh_report_ctr counts the digests sent (readable over Thrift, for tests and debugging). */
control HhReport(in headers_t hdr, inout canary_meta_t meta) {
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) hh_report_ctr;

    action hh_watch(bit<32> eta) {
        meta.hh_eta = eta;
    }
    table hh_table {
        key = { hdr.canary.path_bf: exact @name("path_bf"); }
        actions = { hh_watch; @defaultonly NoAction; }
        const default_action = NoAction;
        size = HH_TABLE_SIZE;
    }
    apply {
        if (hh_table.apply().hit) {
            if (meta.hh_count > meta.hh_eta) {
                meta.hh.src_addr = meta.flow.src_addr;
                meta.hh.dst_addr = meta.flow.dst_addr;
                meta.hh.protocol = meta.flow.protocol;
                meta.hh.src_port = meta.flow.src_port;
                meta.hh.dst_port = meta.flow.dst_port;
                meta.hh.path_bf = hdr.canary.path_bf;
                meta.send_hh_digest = 1;   /* packed by the deparser (TNA Digest) */
                hh_report_ctr.count(0);
            }
        }
    }
}
