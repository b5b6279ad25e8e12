/* The HH table (Sec. III-D, Fig. 3 step 2): a rule matches the incoming pathBF of a segment the
 * controller wants more flows on (RuleOp::InstallHh{path_bf, eta}); a packet the DSM did not
 * count whose HashPipe count exceeds eta is reported as a digest (flow, incoming pathBF).
 *
 * The table runs early and hands HashPipe the threshold eta + 1; HashPipe returns how many
 * packets the flow is short of it, so `count > eta` is `short == 0` (a Tofino 1 gateway cannot
 * compare two 32-bit fields by size). HhSend (per architecture) sends the digest and counts it
 * in hh_report_ctr. */
control HhReport(in headers_t hdr, out bit<1> watched, out bit<32> threshold) {
    action hh_watch(bit<32> eta) {
        watched = 1;
        threshold = eta |+| 1;   /* count > eta <=> count >= eta + 1 (eta = 2^32-1 never fires) */
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
