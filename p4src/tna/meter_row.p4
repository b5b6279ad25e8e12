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

control MeterRow(in bit<32> id, in bit<11> idx) {
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
    apply {
        if (id_claim.execute(idx) == 1) {
            count_and_dirty.execute(idx);
        } else {
            count_clean.execute(idx);
        }
    }
}

/* A meter (USM or DSM): three rows indexed as defines.p4 says, in the instance of `parity`. */
control CanaryMeter(in bit<32> id, in bit<1> parity, in bit<32> c32, in bit<16> c16) {
    MeterRow() row0;
    MeterRow() row1;
    MeterRow() row2;
    apply {
        row0.apply(id, parity ++ c32[9:0]);
        row1.apply(id, parity ++ c32[31:22]);
        row2.apply(id, parity ++ c16[9:0]);
    }
}
