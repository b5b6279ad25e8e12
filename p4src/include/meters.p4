/* The meters (Algorithms 1 and 2): the DSM and USM tables and three rows each, the same on both
 * architectures; a row (MeterRow, arch/meter_row.p4) is the one part written per architecture.
 *
 * A bucket is one cell of two registers of 2 x METER_WIDTH cells: cell `parity ++ column`, so
 * both parities' buckets share a register and the finished epoch's stay untouched while the next
 * one counts.
 *   id_reg     {tag, id}: the epoch tag of the epoch that took the bucket, and the ID of the
 *              rule (USM: flow; DSM: flow and pathBF) whose packet took it, bit 31 set once
 *              another rule's packet hit it (dirty). The controller gives every usm_table /
 *              dsm_table rule an ID of its own below 2^31 (`usm_count(id)`, `dsm_hit(id)`) and
 *              maps IDs back to flows when it harvests (control/switch/src/rule_ids.rs); only
 *              packets that hit a rule reach a meter, so "same ID" is "same flow" (and, in the
 *              DSM, same pathBF).
 *   count_reg  the packets counted.
 * A bucket whose tag is not the packet's epoch's is empty: the first packet of an epoch takes
 * it afresh with count 1, so no register is ever cleared between epochs (docs/dataplane.md,
 * "Epoch tags"). Any later packet adds 1; another rule's also sets the dirty bit. A dirty
 * bucket's count is never read. This is canary_core::sketch::{Usm,Dsm}Bucket::update_n(.., 1)
 * with the flow replaced by its rule. */
control CanaryMeter(in bit<1> on, in bit<1> also, in bit<32> id, in bit<32> tag,
                    in bit<32> c32, in bit<16> c16)(bit<1> also_is) {
    MeterRow(also_is) row0;
    MeterRow(also_is) row1;
    MeterRow(also_is) row2;
    apply {
        row0.apply(on, also, id, tag, tag[0:0] ++ ROW0_INDEX(c32, c16));
        row1.apply(on, also, id, tag, tag[0:0] ++ ROW1_INDEX(c32, c16));
        row2.apply(on, also, id, tag, tag[0:0] ++ ROW2_INDEX(c32, c16));
    }
}

/* DownstreamMeter: a rule on (flow, incoming pathBF) of a monitored flow (RuleOp::InstallDsm).
 * A hit counts the packet if the upstream USM marked it, in the marked epoch's buckets; a miss
 * at a monitor sends the packet to HashPipe. */
control DownstreamMeter(in headers_t hdr, in canary_meta_t meta, in bit<1> on,
                        in bit<1> mark_ok, out bit<1> hashpipe_on) {
    CanaryMeter(1) buckets;  /* counts when the DSM hit and the packet's mark is one to count */
    bit<32> rule_id = 0;
    bit<1> hit = 0;

    action dsm_hit(bit<32> id) {
        hit = 1;
        hashpipe_on = 0;
        rule_id = id;
    }
    /* The flags are set in the table's own stage (a separate assignment costs one). */
    action dsm_miss() {
        hit = 0;
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
        hashpipe_on = 0;
        if (on == 1) {
            dsm_table.apply();
        }
        buckets.apply(hit, mark_ok, rule_id, meta.dsm_tag, meta.c32, meta.c16);
    }
}

/* UpstreamMeter: a rule on the flow (RuleOp::InstallUsm). At a monitor it matches early; the
 * meter waits for forwarding (a packet leaving to a host is not counted). Every packet it sees
 * leaves marked {counted, this switch's epoch tag} or unmarked. The mark is written by the
 * table's own actions, from one 16-bit source (a Tofino 1 action writing part of a header
 * container takes one PHV source besides it), so the meter's rows wait for no other stage. */
control UpstreamMeter(inout headers_t hdr, in canary_meta_t meta, in bit<1> on) {
    CanaryMeter(0) buckets;  /* counts when the USM matched and the packet does not leave to a host */
    bit<32> rule_id = 0;
    bit<1> hit = 0;

    action usm_count(bit<32> id) {
        hit = 1;
        rule_id = id;
        hdr.canary.counted = meta.usm_mark[15:15];
        hdr.canary.epoch = meta.usm_mark[14:0];
    }
    action usm_miss() {
        hit = 0;
        hdr.canary.counted = 0;
        hdr.canary.epoch = 0;
    }
    table usm_table {
        key = {
            meta.flow.src_addr: exact @name("src_addr");
            meta.flow.dst_addr: exact @name("dst_addr");
            meta.flow.protocol: exact @name("protocol");
            meta.flow.src_port: exact @name("src_port");
            meta.flow.dst_port: exact @name("dst_port");
        }
        actions = { usm_count; @defaultonly usm_miss; }
        const default_action = usm_miss();
        size = USM_TABLE_SIZE;
    }
    apply {
        if (on == 1) {
            usm_table.apply();
        }
        buckets.apply(hit, meta.to_host, rule_id, meta.usm_tag, meta.c32, meta.c16);
    }
}
