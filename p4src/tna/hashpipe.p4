/* HashPipe (TNA): the three stages of v1model/hashpipe.p4, keyed by the flow's CRC-32 (c32,
 * the fingerprint) instead of its 104-bit ID, so that each stage is two registers (two stateful
 * ALUs) instead of five: six in all, where carrying full keys needed fifteen.
 *
 * Nothing is lost that the pipeline uses. HashPipe is never harvested: its only output is the
 * count that decides the HH digest, and the digest reports the packet's own flow ID. Stages
 * 1-2 are indexed by slices of the carried flow's c32 (defines.p4), which the fingerprint is.
 * It differs from the Rust model (canary_core::sketch::HashPipe, full keys) only when two flows
 * share a stage slot and their CRC-32: about 2^-32 per pair of flows in one slot.
 *
 * Stage 0 always takes the packet: same fingerprint -> count + 1, otherwise the resident
 * (fingerprint, count) is evicted and carried on. Stages 1-2 take the carry when the slot is
 * empty or lighter (swap), add it to the same fingerprint's count (absorb), or let it pass.
 * A packet whose flow stage 0 already holds (a hit) only sums its counts in stages 1-2. */
struct hp_slot_t {
    bit<32> fp;
    bit<32> count;
}

/* Outcomes of a carry stage (returned by count_reg's RegisterAction). Any other value: the
 * carry took the slot, and this is the count it displaced (0 = the slot was empty). */
#define HP_PASS   32w0xFFFFFFFE
#define HP_ABSORB 32w0xFFFFFFFF

control HashPipeStage0(in bit<32> fp, in bit<5> idx, out bit<1> hit,
                       out bit<32> carry_fp, out bit<32> carry_count) {
    Register<bit<32>, bit<5>>(HP_ENTRIES, 0) fp_reg;
    RegisterAction<bit<32>, bit<5>, bit<32>>(fp_reg) fp_swap = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; v = fp; }
    };
    Register<bit<32>, bit<5>>(HP_ENTRIES, 0) count_reg;
    RegisterAction<bit<32>, bit<5>, bit<32>>(count_reg) count_increment = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
    };
    RegisterAction<bit<32>, bit<5>, bit<32>>(count_reg) count_restart = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; v = 1; }
    };
    apply {
        carry_fp = fp_swap.execute(idx);
        if (carry_fp == fp) {
            carry_count = count_increment.execute(idx);
            /* count 1 after the increment: the slot was empty (a reset slot holds fp 0) */
            if (carry_count == 1) {
                hit = 0;
                carry_count = 0;
            } else {
                hit = 1;
            }
        } else {
            carry_count = count_restart.execute(idx);
            hit = 0;
        }
    }
}

control HashPipeStage(in bit<32> own_fp, in bit<5> idx, in bit<1> hit,
                      inout bit<32> carry_fp, inout bit<32> carry_count, inout bit<32> total) {
    Register<hp_slot_t, bit<5>>(HP_ENTRIES, {0, 0}) count_reg;
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(count_reg) count_read_own = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            rv = 0;
            if (v.fp == own_fp && v.count != 0) { rv = v.count; }
        }
    };
    /* Two conditions (a Tofino 1 stateful ALU has two): an empty slot is lighter than any
     * carry, and absorbing into an empty slot whose fp equals the carry's leaves what an
     * insert would. */
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(count_reg) count_carry = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            if (v.fp == carry_fp) {
                rv = HP_ABSORB;
                v.count = v.count + carry_count;
            } else if (v.count < carry_count) {
                rv = v.count;
                v.fp = carry_fp;
                v.count = carry_count;
            } else {
                rv = HP_PASS;
            }
        }
    };
    /* The resident fingerprint again, so a swap can return it (a Tofino 1 RegisterAction
     * returns one 32-bit value, and count_carry returns the displaced count). */
    Register<bit<32>, bit<5>>(HP_ENTRIES, 0) fp_reg;
    RegisterAction<bit<32>, bit<5>, bit<32>>(fp_reg) fp_swap = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; v = carry_fp; }
    };
    apply {
        if (hit == 1) {
            total = total + count_read_own.execute(idx);
        } else if (carry_count != 0) {
            bit<32> outcome = count_carry.execute(idx);
            if (outcome == HP_ABSORB) {
                carry_count = 0;
            } else if (outcome != HP_PASS) {
                carry_fp = fp_swap.execute(idx);
                carry_count = outcome;     /* 0 after an insert: nothing carried */
            }
        }
    }
}

control HashPipe(inout canary_meta_t meta) {
    HashPipeStage0() stage0;
    HashPipeStage() stage1;
    HashPipeStage() stage2;

    apply {
        bit<1> hit;
        bit<32> carry_fp;
        bit<32> carry_count;
        stage0.apply(meta.c32, meta.c16[15:11], hit, carry_fp, carry_count);
        /* On a hit carry_fp is the packet's own c32, so one index serves both cases. */
        bit<32> total = hit == 1 ? carry_count : 32w1;
        stage1.apply(meta.c32, carry_fp[14:10], hit, carry_fp, carry_count, total);
        stage2.apply(meta.c32, carry_fp[21:17], hit, carry_fp, carry_count, total);
        meta.hh_count = total;
    }
}
