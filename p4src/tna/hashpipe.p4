/* HashPipe (TNA): same stages and semantics as v1model/hashpipe.p4, with one difference forced
 * by the one-access-per-register rule: in stages 1 and 2 the decision (insert, add, swap, pass)
 * must be taken before the key registers are written, so count_reg holds a pair
 * {fp = CRC-32 of the resident key, count} and the decision compares fingerprints instead of the
 * 104-bit keys. It differs from the Rust model only when two keys share both their stage slot
 * and their CRC-32 (about 2^-27 per pair of keys in one slot). Stage 0 is exact.
 * NOT COMPILED HERE (no bf-p4c); the SALU conditions below may need splitting to fit. */
struct hp_slot_t {
    bit<32> fp;
    bit<32> count;
}

/* Outcomes of a carry stage (returned by count_reg's RegisterAction). */
#define HP_PASS   32w0xFFFFFFFE
#define HP_ABSORB 32w0xFFFFFFFF
/* 0: inserted into an empty slot; any other value: swapped, the old count is carried on. */

#define HP_KEY_CHUNK(T, NAME, FIELD)                                              \
    Register<T, bit<5>>(HP_ENTRIES, 0) NAME##_reg;                                \
    RegisterAction<T, bit<5>, T>(NAME##_reg) NAME##_swap = {                      \
        void apply(inout T v, out T rv) { rv = v; v = FIELD; }                    \
    };

control HashPipeStage0(in flow_t key, in bit<32> ports, in bit<5> idx,
                       out bit<1> hit, out hp_carry_t carry) {
    HP_KEY_CHUNK(bit<32>, src_addr, key.src_addr)
    HP_KEY_CHUNK(bit<32>, dst_addr, key.dst_addr)
    HP_KEY_CHUNK(bit<32>, ports, ports)
    HP_KEY_CHUNK(bit<8>, protocol, key.protocol)
    Register<bit<32>, bit<5>>(HP_ENTRIES, 0) count_reg;
    RegisterAction<bit<32>, bit<5>, bit<32>>(count_reg) count_increment = {
        void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
    };
    RegisterAction<bit<32>, bit<5>, bit<32>>(count_reg) count_restart = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; v = 1; }
    };
    apply {
        carry.key.src_addr = src_addr_swap.execute(idx);
        carry.key.dst_addr = dst_addr_swap.execute(idx);
        bit<32> old_ports = ports_swap.execute(idx);
        carry.key.protocol = protocol_swap.execute(idx);
        carry.key.src_port = old_ports[31:16];
        carry.key.dst_port = old_ports[15:0];
        if (FLOW_EQ(carry.key, key)) {
            /* count == 0 with an equal key is an empty slot after reset: treat as a miss */
            carry.count = count_increment.execute(idx);
            hit = carry.count == 1 ? 1w0 : 1w1;
            if (hit == 0) { carry.count = 0; }
        } else {
            carry.count = count_restart.execute(idx);
            hit = 0;
        }
    }
}

control HashPipeStage(in bit<32> own_fp, in bit<32> carry_fp, in bit<5> idx, in bit<1> hit,
                      inout hp_carry_t carry, inout bit<32> total) {
    bit<32> ports = carry.key.src_port ++ carry.key.dst_port;
    HP_KEY_CHUNK(bit<32>, src_addr, carry.key.src_addr)
    HP_KEY_CHUNK(bit<32>, dst_addr, carry.key.dst_addr)
    HP_KEY_CHUNK(bit<32>, ports, ports)
    HP_KEY_CHUNK(bit<8>, protocol, carry.key.protocol)
    Register<hp_slot_t, bit<5>>(HP_ENTRIES, {0, 0}) count_reg;
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(count_reg) count_read_own = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            rv = 0;
            if (v.fp == own_fp && v.count != 0) { rv = v.count; }
        }
    };
    RegisterAction<hp_slot_t, bit<5>, bit<32>>(count_reg) count_carry = {
        void apply(inout hp_slot_t v, out bit<32> rv) {
            if (v.count == 0) { rv = 0; v.fp = carry_fp; v.count = carry.count; }
            else if (v.fp == carry_fp) { rv = HP_ABSORB; v.count = v.count + carry.count; }
            else if (v.count < carry.count) { rv = v.count; v.fp = carry_fp; v.count = carry.count; }
            else { rv = HP_PASS; }
        }
    };
    apply {
        if (hit == 1) {
            total = total + count_read_own.execute(idx);
        } else if (carry.count != 0) {
            bit<32> outcome = count_carry.execute(idx);
            if (outcome == HP_ABSORB) {
                carry.count = 0;
            } else if (outcome != HP_PASS) {
                carry.key.src_addr = src_addr_swap.execute(idx);
                carry.key.dst_addr = dst_addr_swap.execute(idx);
                bit<32> old_ports = ports_swap.execute(idx);
                carry.key.protocol = protocol_swap.execute(idx);
                carry.key.src_port = old_ports[31:16];
                carry.key.dst_port = old_ports[15:0];
                carry.count = outcome;     /* 0 after an insert: nothing carried */
            }
        }
    }
}

control HashPipe(inout canary_meta_t meta) {
    HashPipeStage0() stage0;
    HashPipeStage() stage1;
    HashPipeStage() stage2;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, CRC32_ISO_HDLC) carry_hash1;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, CRC32_ISO_HDLC) carry_hash2;

    apply {
        bit<1> hit;
        hp_carry_t carry;
        bit<32> ports = meta.flow.src_port ++ meta.flow.dst_port;
        stage0.apply(meta.flow, ports, meta.c16[15:11], hit, carry);
        bit<32> total = hit == 1 ? carry.count : 32w1;
        bit<32> cc32 = carry_hash1.get({ carry.key.src_addr, carry.key.dst_addr,
                                         carry.key.protocol, carry.key.src_port,
                                         carry.key.dst_port });
        if (hit == 1) { cc32 = meta.c32; }
        stage1.apply(meta.c32, cc32, cc32[14:10], hit, carry, total);
        cc32 = carry_hash2.get({ carry.key.src_addr, carry.key.dst_addr, carry.key.protocol,
                                 carry.key.src_port, carry.key.dst_port });
        if (hit == 1) { cc32 = meta.c32; }
        stage2.apply(meta.c32, cc32, cc32[21:17], hit, carry, total);
        meta.hh_count = total;
    }
}
