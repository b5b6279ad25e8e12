/* MeterRow (v1model): one row of a meter (include/meters.p4). id_reg holds the pair the TNA row
 * keeps in a pair register, as a bit<64> with the first member in the upper half:
 * tag ++ (dirty ++ id[30:0]); count_reg the packet count. Counts when on == 1 and
 * also == also_is. */
control MeterRow(in bit<1> on, in bit<1> also, in bit<32> id, in bit<32> tag,
                 in bit<11> idx)(bit<1> also_is) {
    register<bit<64>>(2 * METER_WIDTH) id_reg;
    register<bit<32>>(2 * METER_WIDTH) count_reg;
    apply {
        if (on == 1 && also == also_is) {
            bit<32> i = (bit<32>)idx;
            bit<64> v;
            id_reg.read(v, i);
            bit<1> fresh = 0;
            if (v[63:32] != tag) {
                id_reg.write(i, tag ++ id);          /* empty (another epoch's): take it */
                fresh = 1;
            } else if (v[31:0] != id) {
                id_reg.write(i, v | 0x80000000);     /* another rule: dirty (idempotent) */
            }
            bit<32> c;
            count_reg.read(c, i);
            if (fresh == 1) {
                count_reg.write(i, 1);
            } else {
                count_reg.write(i, c + 1);
            }
        }
    }
}
