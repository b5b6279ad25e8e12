/* MeterRow (TNA): one row of a meter (include/meters.p4): a pair register {tag, id} and a count
 * register, one stateful ALU each (Tofino 1 has 4 per stage, 48 in all). A stateful ALU has two
 * condition units: the pair's decides whether its cell is another epoch's (tag) and whether
 * another rule hit it (dirty, kept in bit 31 of the ID); it tells the count register whether to
 * start at 1 or add 1. Nothing is cleared between epochs. */
struct meter_id_t {
    bit<32> tag;
    bit<32> id;   /* bit 31: dirty */
}

control MeterRow(in bit<1> on, in bit<1> also, in bit<32> id, in bit<32> tag,
                 in bit<11> idx)(bit<1> also_is) {
    Register<meter_id_t, bit<11>>(2 * METER_WIDTH, {0, 0}) id_reg;
    RegisterAction<meter_id_t, bit<11>, bit<1>>(id_reg) id_claim = {
        void apply(inout meter_id_t v, out bit<1> fresh) {
            fresh = 0;
            if (v.tag != tag) {
                v.tag = tag;
                v.id = id;
                fresh = 1;
            } else if (v.id != id) {
                v.id = v.id | 0x80000000;
            }
        }
    };
    Register<bit<32>, bit<11>>(2 * METER_WIDTH, 0) count_reg;
    RegisterAction<bit<32>, bit<11>, bit<32>>(count_reg) count_first = {
        void apply(inout bit<32> v) {
            v = 1;
        }
    };
    RegisterAction<bit<32>, bit<11>, bit<32>>(count_reg) count_add = {
        void apply(inout bit<32> v) {
            v = v + 1;
        }
    };
    /* Two steps, each testing `on`, not one if-block around both: on Tofino 1 a table that
     * follows a block in the control flow is placed after the block's last table. */
    apply {
        bit<1> fresh = 0;
        if (on == 1 && also == also_is) {
            fresh = id_claim.execute(idx);
        }
        if (on == 1 && also == also_is) {
            if (fresh == 1) {
                count_first.execute(idx);
            } else {
                count_add.execute(idx);
            }
        }
    }
}
