/* The Canary ingress, written once for both architectures. Each architecture's top
 * (v1model/canary.p4, tna/canary.p4) supplies the controls that touch its externs -- FlowHash,
 * MeterRow, HashPipe, HhSend -- under these names and signatures, and turns the result
 * (egress_port, meta.routed, meta.flood_group, meta.send_digest) into its intrinsic metadata.
 * canary_core::model (Rust) is the reference this is held to, bucket for bucket.
 *
 * In the order of the paper's Fig. 2:
 *  1. A frame from a host port gets the shim pushed (pathBF 0, unmarked); a host's own frame of
 *     the shim's EtherType is carried whole, its first 8 bytes kept in canary_inner.
 *  2. The flow key of IPv4 or IPv6 (IPv4 on ::ffff:0:0/96), its two CRCs; SwitchConfig;
 *     Forwarding (route, ECMP member, port).
 *  3. IP unicast carrying a shim, at a monitor: DownstreamMeter (a rule on (flow, pathBF): count
 *     a marked packet in the mark's epoch), or else HashPipe and the HH report; UpstreamMeter
 *     (a rule on the flow, not towards a host: count in this switch's epoch, mark the packet;
 *     any other packet leaves unmarked). IP unicast carrying a shim, anywhere: the pathBF stamp.
 *  4. Routed unicast leaving to a host loses the shim; flooded copies lose it in egress.
 * Every multi-stage chain is flat, each step testing its own condition: on Tofino 1 a table
 * after an if-block is placed after the block's last table (docs/dataplane.md). */
/* The parser fills the ports (0 without TCP or UDP), ip_parsed and is_v6; this the addresses and
 * the protocol. FlowHash reads the headers themselves, so the hashes (and the ECMP chain after
 * them) start in the first stage, not after this. A host's opaque frame gets a flow key too, but
 * is_ip = 0 keeps it from every table that would use it. */
control FlowKey(in headers_t hdr, in bit<1> opaque, inout canary_meta_t meta) {
    apply {
        meta.is_ip = 0;
        meta.unicast = 0;
        meta.flow.src_addr = 0;
        meta.flow.dst_addr = 0;
        meta.flow.protocol = 0;
        if (opaque == 0 && meta.ip_parsed == 1) {
            meta.is_ip = 1;
        }
        if (hdr.ipv4.isValid()) {
            meta.flow.src_addr = 80w0 ++ 16w0xffff ++ hdr.ipv4.src_addr;
            meta.flow.dst_addr = 80w0 ++ 16w0xffff ++ hdr.ipv4.dst_addr;
            meta.flow.protocol = hdr.ipv4.protocol;
            if (hdr.ipv4.dst_addr[31:28] != 0xe && hdr.ipv4.dst_addr != 0xffffffff) {
                meta.unicast = 1;
            }
        } else if (hdr.ipv6.isValid()) {
            meta.flow.src_addr = hdr.ipv6.src_addr;
            meta.flow.dst_addr = hdr.ipv6.dst_addr;
            meta.flow.protocol = hdr.ipv6.next_hdr;
            if (hdr.ipv6.dst_addr[127:120] != 0xff) {
                meta.unicast = 1;
            }
        }
    }
}

control CanaryIngressCore(inout headers_t hdr, inout canary_meta_t meta, in port_t ingress_port,
                          out port_t egress_port) {
    HostPort() host_port;
    FlowKey() flow_key;
    FlowHash() flow_hash;
    SwitchConfig() switch_config;
    Forwarding() forwarding;
    DownstreamMeter() downstream_meter;
    HhReport() hh_report;
    HashPipe() hashpipe;
    HhSend() hh_send;
    UpstreamMeter() upstream_meter;
    PathBf() path_bf;

    apply {
        host_port.apply(ingress_port, meta);
        bit<1> opaque = 0;
        if (meta.from_host == 1 && hdr.canary.isValid()) {
            /* A host's own frame of the shim's EtherType: carried whole, inside ours. */
            hdr.canary_inner = hdr.canary;
            opaque = 1;
        }
        if (meta.from_host == 1) {
            hdr.canary.setValid();
            hdr.canary.path_bf = 0;
            hdr.canary.counted = 0;
            hdr.canary.epoch = 0;
            hdr.canary.ether_type = hdr.ethernet.ether_type;
            hdr.ethernet.ether_type = ETHERTYPE_CANARY;
        }
        flow_key.apply(hdr, opaque, meta);
        flow_hash.apply(hdr, meta);
        meta.in_path_bf = 0;
        meta.dsm_tag = 0;
        if (hdr.canary.isValid()) {
            meta.in_path_bf = hdr.canary.path_bf;
            meta.dsm_tag = (bit<32>)hdr.canary.epoch;
        }
        switch_config.apply(meta);

        /* IP unicast carrying a shim is stamped; at a monitor it is metered too. */
        bit<1> stamp_on = 0;
        if (meta.is_ip == 1 && meta.unicast == 1 && hdr.canary.isValid()) {
            stamp_on = 1;
        }
        bit<1> meters_on = 0;
        if (meta.monitor == 1 && meta.is_ip == 1 && meta.unicast == 1 && hdr.canary.isValid()) {
            meters_on = 1;
        }
        meta.watched = meters_on;

        forwarding.apply(meta, egress_port);
        meta.routed = 0;
        if (meta.is_ip == 1 && meta.unicast == 1 && meta.route_hit == 1) {
            meta.routed = 1;
        }

        /* The DSM counts a mark of this switch's epoch or of one next to it (flips are not
         * simultaneous). An older mark comes from a switch that missed flips (unreachable): in
         * its parity's buckets it would take them from the epoch counting there now. */
        bit<1> mark_ok = 0;
        if (hdr.canary.counted == 1 && (hdr.canary.epoch == meta.usm_mark[14:0] ||
                                        hdr.canary.epoch == meta.epoch_prev ||
                                        hdr.canary.epoch == meta.epoch_next)) {
            mark_ok = 1;
        }
        bit<1> hashpipe_on;
        downstream_meter.apply(hdr, meta, meters_on, mark_ok, hashpipe_on);
        bit<1> hh_watched;
        bit<32> hh_threshold;
        hh_report.apply(hdr, hh_watched, hh_threshold);
        bit<32> hh_short;
        hashpipe.apply(meta, hashpipe_on, hh_threshold, hh_short);
        hh_send.apply(hh_watched, hh_short, meta);
        upstream_meter.apply(hdr, meta, meters_on);
        path_bf.apply(hdr, meta, stamp_on);

        if (meta.routed == 1 && meta.to_host == 1 && hdr.canary.isValid()) {
            hdr.ethernet.ether_type = hdr.canary.ether_type;
            hdr.canary.setInvalid();
        }
    }
}
