/* HashPipe (TNA): the three stages of v1model/hashpipe.p4, keyed by a 32-bit fingerprint of the
 * flow (its CRC-32 with bit 0 set) instead of its 104-bit ID: five stateful ALUs, where carrying
 * full keys needed fifteen, and one MAU stage per HashPipe stage.
 *
 * Nothing is lost that the pipeline uses. HashPipe is never harvested: its only output is the
 * count that decides the HH digest, and the digest reports the packet's own flow ID. Stages
 * 1-2 are indexed by slices of the carried flow's c32 (defines.p4), which the fingerprint keeps
 * (only bit 0 is forced, so no fingerprint is 0, the value of an empty slot). It differs from
 * the Rust model (canary_core::sketch::HashPipe, full keys) only when two flows share a stage
 * slot and 31 bits of their CRC-32: about 2^-31 per pair of flows in one slot.
 *
 * Stage 0 always takes the packet: same fingerprint -> count + 1 (a hit), otherwise the
 * resident (fingerprint, count) is evicted and carried on. Stages 1-2 take the carry when the
 * slot is empty or lighter (swap), add it to the same fingerprint's count (absorb), or let it
 * pass. A hit only sums its flow's counts in stages 1-2.
 *
 * Tofino 1 shapes it: a stateful ALU returns one 32-bit value, from one source in every branch
 * (memory, its ALUs, or a power of two through its predicate) or 0, and a gateway cannot compare
 * two 32-bit fields by size. So a stage that must return two values (fingerprint and count)
 * keeps its slot twice, in two pair registers updated identically from the same inputs, each
 * returning one value, and the outcome is read from the values, with no compare after. */
struct hp_slot_t {
    bit<32> fp;
    bit<32> count;
}

/* Stage 0: count_reg returns the resident count, fp_reg (its copy) the resident fingerprint. */
control HashPipeStage0(in bit<1> on, in bit<32> fp, in bit<5> idx,
                       inout bit<32> carry_fp, inout bit<32> carry_count) {
    Register<hp_slot_t, bit<5>>(HP_ENTRIES, {0, 0}) count_reg;
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(count_reg) count_take = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            rv = v.count;
            if (v.fp == fp) {
                v.count = v.count + 1;
            } else {
                v.fp = fp;
                v.count = 1;
            }
        }
    };
    Register<hp_slot_t, bit<5>>(HP_ENTRIES, {0, 0}) fp_reg;
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(fp_reg) fp_take = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            rv = v.fp;
            if (v.fp == fp) {
                v.count = v.count + 1;
            } else {
                v.fp = fp;
                v.count = 1;
            }
        }
    };
    apply {
        if (on == 1) {
            carry_count = count_take.execute(idx);
            carry_fp = fp_take.execute(idx);
        }
    }
}

/* Stages 1-2. count_carry returns the resident count, or 0 after an absorb; fp_carry (only
 * where a later stage needs the displaced fingerprint) returns the resident fingerprint when
 * the carry took the slot (swap or absorb), 0 when it passed. After both, the carry becomes
 * (fp_out, count_out) -- the displaced flow, or nothing (count 0) after an absorb or a swap
 * into an empty slot -- except when fp_out == 0 and count_out != 0: it passed, unchanged.
 * Nothing carried (0, 0) changes nothing: it can only "absorb" 0 into an empty slot.
 * On a hit, count_read_own returns the packet's flow's count here (carry_fp is then the
 * packet's own fingerprint: one PHV input fewer, and a Tofino 1 stateful ALU takes two).
 * `first`: stage 1 tests the hit itself (carry_fp == own_fp, known as soon as stage 0 is
 * done); stage 2 takes the hit bit, since a carried flow can be the packet's own there. */
control HashPipeCarry(in bit<1> on, in bit<5> idx, in bit<1> hit, in bit<32> own_fp,
                      in bit<32> carry_fp, in bit<32> carry_count,
                      inout bit<32> count_out)(bool first) {
    Register<hp_slot_t, bit<5>>(HP_ENTRIES, {0, 0}) count_reg;
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(count_reg) count_read_own = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            if (v.fp == carry_fp) { rv = v.count; } else { rv = 0; }
        }
    };
    /* Two conditions (a Tofino 1 stateful ALU has two): an empty slot (count 0) is lighter
     * than any carry. */
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(count_reg) count_carry = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            if (v.fp == carry_fp) {
                rv = 0;
                v.count = v.count + carry_count;
            } else if (v.count < carry_count) {
                rv = v.count;
                v.fp = carry_fp;
                v.count = carry_count;
            } else {
                rv = v.count;
            }
        }
    };
    apply {
        if (on == 1) {
            if (first) {
                if (carry_fp == own_fp) {
                    count_out = count_read_own.execute(idx);
                } else {
                    count_out = count_carry.execute(idx);
                }
            } else {
                if (hit == 1) {
                    count_out = count_read_own.execute(idx);
                } else {
                    count_out = count_carry.execute(idx);
                }
            }
        }
    }
}

/* Stage 1's copy of count_reg: the same slots, updated the same way, returning fingerprints. */
control HashPipeCarryFp(in bit<1> on, in bit<5> idx, in bit<32> own_fp,
                        in bit<32> carry_fp, in bit<32> carry_count,
                        out bit<32> fp_out) {
    Register<hp_slot_t, bit<5>>(HP_ENTRIES, {0, 0}) fp_reg;
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(fp_reg) fp_carry = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            if (v.fp == carry_fp) {
                rv = v.fp;
                v.count = v.count + carry_count;
            } else if (v.count < carry_count) {
                rv = v.fp;
                v.fp = carry_fp;
                v.count = carry_count;
            } else {
                rv = 0;
            }
        }
    };
    apply {
        fp_out = 0;
        if (on == 1 && carry_fp != own_fp) {
            fp_out = fp_carry.execute(idx);
        }
    }
}

/* Applied to every packet so the fingerprint is ready before the DSM result; it counts only
 * when `on`: at monitors, for packets the DSM did not count. Returns `short`: how many packets the flow's
 * count (this packet included) is short of `threshold`, 0 when it reaches it (and when it
 * did not count). Subtracting each stage's count from the threshold as it arrives, rather than
 * adding them up and comparing at the end, saves the stage a 32-bit compare would take. */
control HashPipe(in canary_meta_t meta, in bit<1> on, in bit<32> threshold, out bit<32> short) {
    HashPipeStage0() stage0;
    HashPipeCarry(true) stage1;
    HashPipeCarryFp() stage1_fp;
    HashPipeCarry(false) stage2;
    bit<32> carry_fp;
    bit<32> carry_count;
    bit<32> own1;
    bit<32> fp1;

    /* What stage 1 left to carry (see HashPipeCarry). A ternary table, since a Tofino 1
     * gateway tests at most 4 bytes and 12 bits of PHV and this reads 8 bytes. */
    action carry_on() {
        carry_fp = fp1;
        carry_count = own1;
    }
    table carry_next {
        key = {
            fp1: ternary @name("fp");
            own1: ternary @name("count");
        }
        actions = { carry_on; NoAction; }
        const entries = {
            (0, 0) : carry_on();           /* swapped into an empty slot: nothing carried */
            (0, _) : NoAction();           /* passed */
        }
        const default_action = carry_on();
        size = 2;
    }

    /* A table of its own, or the compiler folds it into the action that finishes `count`. */
    bit<32> count;
    action short_of_threshold() {
        short = threshold |-| count;
    }
    table hh_short {
        actions = { short_of_threshold; }
        const default_action = short_of_threshold();
        size = 1;
    }

    /* No if-block around the stages: on Tofino 1 a table that follows a block in the control
     * flow is placed after the block's last table, and the forwarding chain would wait for
     * all of HashPipe. Each step tests `on` (and the hit) itself. */
    apply {
        bit<32> fp = meta.c32 | 1;
        short = 1;
        count = 1;    /* stage 0 (this packet included) and stage 1 */
        carry_fp = 0;
        carry_count = 0;
        own1 = 0;
        fp1 = 0;
        bit<32> own2 = 0;
        stage0.apply(on, fp, meta.c16[15:11], carry_fp, carry_count);
        /* On a hit carry_fp is the packet's own, so one index serves both cases. */
        stage1.apply(on, carry_fp[14:10], 0, fp, carry_fp, carry_count, own1);
        stage1_fp.apply(on, carry_fp[14:10], fp, carry_fp, carry_count, fp1);
        bit<1> hit = 0;
        if (on == 1 && carry_fp == fp) {
            hit = 1;
            count = carry_count + 1;
        }
        if (hit == 1) {
            count = count + own1;
        } else {
            carry_next.apply();
        }
        if (on == 1) {
            hh_short.apply();
        }
        stage2.apply(on, carry_fp[21:17], hit, fp, carry_fp, carry_count, own2);
        if (hit == 1) {
            short = short |-| own2;
        }
    }
}
