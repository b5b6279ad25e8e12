/* The HH table (Sec. III-D, Fig. 3 step 2), in two parts on TNA. A rule matches the incoming
 * pathBF of a segment the controller wants more flows on (RuleOp::InstallHh{path_bf, eta}); a
 * packet the DSM did not count whose HashPipe count exceeds eta is reported as a digest (flow
 * ID, pathBF; meta.hh is filled for every packet at the start of ingress).
 *
 * HhReport (the table) runs early and hands HashPipe the threshold eta + 1; HashPipe returns
 * how many packets the flow is short of it (tna/hashpipe.p4), which it can fold into its own
 * last stages, where `count > eta` on the finished count would take two more (a Tofino 1
 * gateway cannot compare two 32-bit fields). HhSend sends the digest when that is 0.
 * hh_report_ctr counts the digests sent. */
control HhReport(in headers_t hdr, out bit<1> watched, out bit<32> threshold) {
    action hh_watch(bit<32> eta) {
        watched = 1;
        threshold = eta |+| 1;   /* count > eta  <=>  count >= eta + 1 (saturating: eta = 2^32-1 never fires) */
    }
    action hh_none() {
        watched = 0;
        threshold = 0;
    }
    table hh_table {
        key = { hdr.canary.path_bf: exact @name("path_bf"); }
        actions = { hh_watch; @defaultonly hh_none; }
        const default_action = hh_none();
        size = HH_TABLE_SIZE;
    }
    apply {
        hh_table.apply();
    }
}

control HhSend(in bit<1> watched, in bit<32> short,
               inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) hh_report_ctr;
    apply {
        if (watched == 1 && short == 0) {
            ig_dprsr_md.digest_type = HH_DIGEST_RECEIVER;   /* packed by the deparser */
            hh_report_ctr.count(0);
        }
    }
}
