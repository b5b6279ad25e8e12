/* MeterRow (TNA): one row of a meter (include/meters.p4), two registers of pairs; each register is
 * one stateful ALU, and Tofino 1 has 4 per stage, 48 in all. A stateful ALU has two condition
 * units, so each register decides for itself whether its cell is another epoch's (the tag) and
 * starts it afresh, and nothing is cleared between epochs. */
struct meter_id_t {
    bit<32> tag;
    bit<32> id;
}
struct meter_state_t {
    bit<32> tag;
    bit<32> count;   /* bit 31: dirty */
}

control MeterRow(in bit<1> on, in bit<1> also, in bit<32> id, in bit<32> tag,
                 in bit<11> idx)(bit<1> also_is) {
    Register<meter_id_t, bit<11>>(2 * METER_WIDTH, {0, 0}) id_reg;
    RegisterAction<meter_id_t, bit<11>, bit<1>>(id_reg) id_claim = {
        void apply(inout meter_id_t v, out bit<1> mismatch) {
            mismatch = 0;
            if (v.tag != tag) {
                v.tag = tag;
                v.id = id;
            } else if (v.id != id) {
                mismatch = 1;
            }
        }
    };
    Register<meter_state_t, bit<11>>(2 * METER_WIDTH, {0, 0}) state_reg;
    RegisterAction<meter_state_t, bit<11>, bit<1>>(state_reg) count_clean = {
        void apply(inout meter_state_t v) {
            if (v.tag != tag) {
                v.tag = tag;
                v.count = 1;
            } else if (v.count < 0x80000000) {
                v.count = v.count + 1;
            }
        }
    };
    /* The first packet of another rule: counted, and the dirty bit set (v.count < 2^31, so one
     * add of 2^31 + 1 does both). */
    RegisterAction<meter_state_t, bit<11>, bit<1>>(state_reg) count_and_dirty = {
        void apply(inout meter_state_t v) {
            if (v.tag != tag) {
                v.tag = tag;
                v.count = 0x80000001;
            } else if (v.count < 0x80000000) {
                v.count = v.count + 0x80000001;
            }
        }
    };
    /* Two steps, each testing `on`, not one if-block around both: on Tofino 1 a table that
     * follows a block in the control flow is placed after the block's last table. */
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
