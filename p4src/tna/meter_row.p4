/* One row of a meter on TNA (Tofino 1 budget: one stateful ALU per register, 48 in all).
 *
 * A bucket is one index of two registers, and both parity instances share them: the index is
 * `parity ++ column`, so the cells [p * METER_WIDTH, (p + 1) * METER_WIDTH) are parity p's.
 *   id_reg     the ID of the rule (USM: flow; DSM: flow and pathBF) that owns the bucket, 0 =
 *              empty. The controller gives every usm_table / dsm_table rule an ID of its own
 *              (`usm_count(id)`, `dsm_hit(id)`), stable while the rule can have packets in the
 *              meters, and maps IDs back to flows when it harvests (control/switch/src/rule_ids.rs).
 *              Only packets that hit a rule reach a meter, so "same ID" is "same flow" (and same
 *              pathBF): the bucket compares 32 bits where v1model compares 104 (+32).
 *   state_reg  {dirty, count}.
 * Per packet: empty -> take the ID; another ID -> mismatch. Then a clean bucket counts the
 * packet, and a mismatch also dirties it (the first mismatching packet is counted); a dirty
 * bucket never changes. This is canary_core::sketch::{Usm,Dsm}Bucket::update_n(.., 1), with the
 * flow ID replaced by its rule ID. */
struct meter_state_t {
    bit<32> dirty;
    bit<32> count;
}

control MeterRow(in bit<1> on, in bit<1> also, in bit<32> id, in bit<11> idx)(bit<1> also_is) {
    Register<bit<32>, bit<11>>(2 * METER_WIDTH, 0) id_reg;
    RegisterAction<bit<32>, bit<11>, bit<1>>(id_reg) id_claim = {
        void apply(inout bit<32> v, out bit<1> mismatch) {
            mismatch = 0;
            if (v == 0) {
                v = id;
            } else if (v != id) {
                mismatch = 1;
            }
        }
    };
    Register<meter_state_t, bit<11>>(2 * METER_WIDTH, {0, 0}) state_reg;
    RegisterAction<meter_state_t, bit<11>, bit<1>>(state_reg) count_clean = {
        void apply(inout meter_state_t v) {
            if (v.dirty == 0) {
                v.count = v.count + 1;
            }
        }
    };
    RegisterAction<meter_state_t, bit<11>, bit<1>>(state_reg) count_and_dirty = {
        void apply(inout meter_state_t v) {
            if (v.dirty == 0) {
                v.count = v.count + 1;
                v.dirty = 1;
            }
        }
    };
    /* Two steps, each testing `on`, not one if-block around both: on Tofino 1 a table that
     * follows a block in the control flow is placed after the block's last table, and
     * HashPipe would wait for the DSM's second stage. */
    apply {
        bit<1> mismatch = 0;
        if (on == 1 && also == also_is) {
            mismatch = id_claim.execute(idx);
        }
        if (on == 1 && also == also_is) {
            if (mismatch == 1) {
                count_and_dirty.execute(idx);
            } else {
                count_clean.execute(idx);
            }
        }
    }
}

/* A meter (USM or DSM): three rows indexed as defines.p4 says, in the instance of `parity`;
 * counts the packet when on == 1 and also == also_is (two bits the rows test themselves: an
 * action combining them first would cost a stage). */
control CanaryMeter(in bit<1> on, in bit<1> also, in bit<32> id, in bit<1> parity,
                    in bit<32> c32, in bit<16> c16)(bit<1> also_is) {
    MeterRow(also_is) row0;
    MeterRow(also_is) row1;
    MeterRow(also_is) row2;
    apply {
        row0.apply(on, also, id, parity ++ c32[9:0]);
        row1.apply(on, also, id, parity ++ c32[31:22]);
        row2.apply(on, also, id, parity ++ c16[9:0]);
    }
}
