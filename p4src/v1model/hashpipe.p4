/* HashPipe (v1model): 3 stages x HP_ENTRIES slots keyed by the flow's fingerprint (its CRC-32 with
 * bit 0 set), exactly canary_core::sketch::HashPipe::update. A slot is a bit<64>: count ++
 * fingerprint (the count on top: BMv2's Thrift server reads registers as signed 64-bit values,
 * and a count stays below 2^31); an empty slot is 0. tna/hashpipe.p4 computes the same with Tofino 1's stateful ALUs
 * (copies of stage registers, a countdown); here it is written directly.
 *
 * Stage 0 (index c16[15:11]) always takes the packet: the same fingerprint -> count + 1 (a hit),
 * otherwise the resident is carried on and the packet's flow takes the slot with count 1.
 * After a hit, stages 1-2 only read the flow's own slots (indexed by its fingerprint) and the
 * count is the sum of its slots; after a miss they take the carry (indexed by the carried
 * fingerprint): empty slot -> insert, same fingerprint -> add, lighter resident -> swap, else
 * pass on; the count is 1. Returns `short`: how many packets the count is short of `threshold`
 * (0: reached), 1 when HashPipe is off. */
control HashPipeStage0(in bit<32> fp, in bit<5> idx, out bit<1> hit, out bit<64> carry,
                       out bit<32> own) {
    register<bit<64>>(HP_ENTRIES) count_reg;
    apply {
        bit<64> v;
        count_reg.read(v, (bit<32>)idx);
        if (v[31:0] == fp) {
            hit = 1;
            own = v[63:32] + 1;
            carry = 0;
            count_reg.write((bit<32>)idx, own ++ fp);
        } else {
            hit = 0;
            own = 1;
            carry = v;
            count_reg.write((bit<32>)idx, 32w1 ++ fp);
        }
    }
}

control HashPipeStage(in bit<32> fp, in bit<1> hit, inout bit<64> carry, inout bit<32> total)
                     (bit<8> lo) {
    register<bit<64>>(HP_ENTRIES) count_reg;
    apply {
        /* stage 1: fp[14:10], stage 2: fp[21:17] (defines.p4) */
        bit<32> key = fp;
        if (hit == 0) {
            key = carry[31:0];
        }
        bit<32> i = (bit<32>)((key >> lo)[4:0]);
        bit<64> v;
        count_reg.read(v, i);
        if (hit == 1) {
            if (v[31:0] == fp) {
                total = total + v[63:32];
            }
        } else if (carry[63:32] != 0) {
            if (v[63:32] == 0) {
                count_reg.write(i, carry);
                carry = 0;
            } else if (v[31:0] == carry[31:0]) {
                count_reg.write(i, (v[63:32] + carry[63:32]) ++ v[31:0]);
                carry = 0;
            } else if (v[63:32] < carry[63:32]) {
                count_reg.write(i, carry);
                carry = v;
            }
        }
    }
}

control HashPipe(in canary_meta_t meta, in bit<1> on, in bit<32> threshold, out bit<32> short) {
    HashPipeStage0() stage0;
    HashPipeStage(10) stage1;
    HashPipeStage(17) stage2;
    apply {
        short = 1;
        if (on == 1) {
            bit<32> fp = meta.c32 | 1;
            bit<1> hit;
            bit<64> carry;
            bit<32> count;
            stage0.apply(fp, HP0_INDEX(meta.c32, meta.c16), hit, carry, count);
            stage1.apply(fp, hit, carry, count);
            stage2.apply(fp, hit, carry, count);
            short = threshold |-| count;
        }
    }
}
