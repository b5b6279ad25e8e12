/* HashPipe: 3 stages x 32 entries, exactly canary_core::sketch::HashPipe::update.
 *
 * Stage 0 (index c16[15:11] of the packet's key) always installs the packet's key: on a hit it
 * increments; on a miss it evicts the resident into the carry and installs the key with count 1.
 * Miss: stages 1 and 2 work on the carry, indexed by the CARRIED key's slices (c32[14:10],
 * c32[21:17]): empty slot -> insert, same key -> add, smaller resident -> swap, else pass on.
 * Hit: stages 1 and 2 only read the packet's own entries (its own slices) and the reported count
 * hh_count is the sum of the flow's entries; on a miss hh_count is 1.
 * An entry is empty when its count is 0. One access per register per packet. */
control HashPipeStage0(in flow_t key, in bit<32> idx, out bit<1> hit, out hp_carry_t carry) {
    register<bit<32>>(HP_ENTRIES) src_addr_reg;
    register<bit<32>>(HP_ENTRIES) dst_addr_reg;
    register<bit<32>>(HP_ENTRIES) ports_reg;
    register<bit<8>>(HP_ENTRIES)  protocol_reg;
    register<bit<32>>(HP_ENTRIES) count_reg;

    apply {
        bit<32> ports;
        bit<32> count;
        /* Every key register: read the resident, write the packet's key. */
        src_addr_reg.read(carry.key.src_addr, idx);
        src_addr_reg.write(idx, key.src_addr);
        dst_addr_reg.read(carry.key.dst_addr, idx);
        dst_addr_reg.write(idx, key.dst_addr);
        ports_reg.read(ports, idx);
        ports_reg.write(idx, key.src_port ++ key.dst_port);
        protocol_reg.read(carry.key.protocol, idx);
        protocol_reg.write(idx, key.protocol);
        carry.key.src_port = ports[31:16];
        carry.key.dst_port = ports[15:0];

        count_reg.read(count, idx);
        if (count != 0 && FLOW_EQ(carry.key, key)) {
            hit = 1;
            carry.count = count + 1;       /* not carried: the stage-0 count of a hit */
            count_reg.write(idx, count + 1);
        } else {
            hit = 0;
            carry.count = count;           /* 0 when the slot was empty: nothing carried */
            count_reg.write(idx, 1);
        }
    }
}

control HashPipeStage(in flow_t key, in bit<32> idx, in bit<1> hit,
                      inout hp_carry_t carry, inout bit<32> total) {
    register<bit<32>>(HP_ENTRIES) src_addr_reg;
    register<bit<32>>(HP_ENTRIES) dst_addr_reg;
    register<bit<32>>(HP_ENTRIES) ports_reg;
    register<bit<8>>(HP_ENTRIES)  protocol_reg;
    register<bit<32>>(HP_ENTRIES) count_reg;

    apply {
        flow_t r;
        bit<32> ports;
        bit<32> count;
        src_addr_reg.read(r.src_addr, idx);
        dst_addr_reg.read(r.dst_addr, idx);
        ports_reg.read(ports, idx);
        protocol_reg.read(r.protocol, idx);
        r.src_port = ports[31:16];
        r.dst_port = ports[15:0];
        count_reg.read(count, idx);
        if (hit == 1) {
            if (count != 0 && FLOW_EQ(r, key)) {
                total = total + count;
            }
        } else if (carry.count != 0) {
            if (count == 0 || !FLOW_EQ(r, carry.key) && count < carry.count) {
                /* insert into an empty slot, or swap with a lighter resident */
                src_addr_reg.write(idx, carry.key.src_addr);
                dst_addr_reg.write(idx, carry.key.dst_addr);
                ports_reg.write(idx, carry.key.src_port ++ carry.key.dst_port);
                protocol_reg.write(idx, carry.key.protocol);
                count_reg.write(idx, carry.count);
                carry.key = r;
                carry.count = count;       /* 0 after an insert: nothing carried */
            } else if (FLOW_EQ(r, carry.key)) {
                count_reg.write(idx, count + carry.count);
                carry.count = 0;
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
        hp_carry_t carry;
        bit<32> cc32;
        stage0.apply(meta.flow, HP0_INDEX(meta.c32, meta.c16), hit, carry);
        bit<32> total = carry.count;
        if (hit == 0) {
            total = 1;
            hash(cc32, HashAlgorithm.crc32, (bit<32>)0,
                 { carry.key.src_addr, carry.key.dst_addr, carry.key.protocol,
                   carry.key.src_port, carry.key.dst_port }, (bit<64>)0x100000000);
        } else {
            cc32 = meta.c32;
        }
        stage1.apply(meta.flow, HP1_INDEX(cc32), hit, carry, total);
        if (hit == 0) {
            hash(cc32, HashAlgorithm.crc32, (bit<32>)0,
                 { carry.key.src_addr, carry.key.dst_addr, carry.key.protocol,
                   carry.key.src_port, carry.key.dst_port }, (bit<64>)0x100000000);
        }
        stage2.apply(meta.flow, HP2_INDEX(cc32), hit, carry, total);
        meta.hh_count = total;
    }
}
