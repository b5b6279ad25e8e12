/* MeterRow (v1model): one row of a meter (include/meters.p4). The TNA row keeps each register as a
 * pair; here a pair is a bit<64>, its first member in the upper half: id_reg = tag ++ id,
 * state_reg = tag ++ count (bit 31 of the count is the dirty flag). Counts when on == 1 and
 * also == also_is. */
control MeterRow(in bit<1> on, in bit<1> also, in bit<32> id, in bit<32> tag,
                 in bit<11> idx)(bit<1> also_is) {
    register<bit<64>>(2 * METER_WIDTH) id_reg;
    register<bit<64>>(2 * METER_WIDTH) state_reg;
    apply {
        if (on == 1 && also == also_is) {
            bit<32> i = (bit<32>)idx;
            bit<64> v;
            id_reg.read(v, i);
            bit<1> mismatch = 0;
            if (v[63:32] != tag) {
                id_reg.write(i, tag ++ id);          /* empty (another epoch's): take it */
            } else if (v[31:0] != id) {
                mismatch = 1;
            }
            bit<32> add = 1;
            if (mismatch == 1) {
                add = 0x80000001;                    /* count it and set the dirty bit */
            }
            bit<64> s;
            state_reg.read(s, i);
            if (s[63:32] != tag) {
                state_reg.write(i, tag ++ add);
            } else if (s[31:0] < 0x80000000) {
                state_reg.write(i, tag ++ (s[31:0] + add));
            }
        }
    }
}
