/* HhSend (TNA): asks the top for the HH digest (packed by the ingress deparser) when the HH table
 * watched the packet's pathBF and HashPipe says the flow reached the threshold; counts it. */
control HhSend(in bit<1> watched, in bit<32> short, inout canary_meta_t meta) {
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS) hh_report_ctr;
    apply {
        meta.send_digest = 0;
        if (watched == 1 && short == 0) {
            meta.send_digest = 1;
            hh_report_ctr.count(0);
        }
    }
}
