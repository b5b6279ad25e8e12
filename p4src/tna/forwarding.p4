/* Forwarding: host ports, IPv4 LPM to an ECMP group, a hash of the 5-tuple picks the member.
 * The member is the one v1model and `canary_core::sketch::ecmp_member` pick, for every flow and
 * every group size:
 *     x = bits 31..16 of (c32 * (mask | 1) mod 2^32),   member = x mod size.
 * Tofino has neither a multiplier nor a remainder by a run-time value, so both are table
 * lookups the controller fills (canary_core::sketch::{ecmp_mul_term, ecmp_mod_term}):
 *  1. Product. With c32 = b0 + 2^8 b1 + 2^16 b2 + 2^24 b3 (bytes) and m = mask | 1,
 *     c32 * m = sum_i (b_i * m * 2^(8i))  (mod 2^32). `ecmp_mul{0,1,2,3}` are keyed on byte b_i
 *     of c32 and return T_i(b_i) = b_i * m * 2^(8i) mod 2^32 (256 entries each, recomputed
 *     when this switch's mask changes); two levels of 32-bit adds (which wrap mod 2^32 like
 *     the Rust `wrapping_mul`) give the product P, and x = P[31:16].
 *  2. Remainder. With x = 2^8 xh + xl, x mod s = ((2^8 xh mod s) + (xl mod s)) mod s.
 *     `ecmp_mod_hi` / `ecmp_mod_lo` are keyed on (group size s, xh or xl) and return
 *     rh = 2^8 xh mod s and rl = xl mod s (256 entries per distinct group size each), so
 *     `ecmp_member` = rh + rl lies in [0, 2s - 2] and is congruent to x mod s.
 *  3. `ecmp_group` is keyed on (group, rh + rl): the controller installs 2s - 1 entries per group,
 *     entry j -> the port of member j mod s. That is exactly the port of member x mod s.
 * A 256-bucket scheme (bucket = 8 bits of x, entry b -> member b mod s) would equal x mod s only
 * for group sizes that divide 256: x mod 3, say, depends on all 16 bits of x.
 * No header is rewritten: hosts get their packets byte for byte (the fabric only adds and
 * removes the Canary shim). */
control HostPort(in port_t ingress_port, inout canary_meta_t meta) {
    action host_port() {
        meta.from_host = 1;
    }
    /* Ports that face hosts; packets arriving there get the shim pushed. */
    table host_port_in {
        key = { ingress_port: exact @name("port"); }
        actions = { host_port; @defaultonly NoAction; }
        const default_action = NoAction;
        size = PORT_TABLE_SIZE;
    }
    apply {
        meta.from_host = 0;
        host_port_in.apply();
    }
}

control Forwarding(in headers_t hdr, inout canary_meta_t meta, out port_t egress_port) {
    bit<32> t0;     /* T_i(byte i of c32), see above */
    bit<32> t1;
    bit<32> t2;
    bit<32> t3;
    bit<32> p01;
    bit<32> p23;
    bit<32> prod;   /* c32 * (mask | 1) mod 2^32 */
    bit<16> rh;     /* 2^8 * prod[31:24] mod size */
    bit<16> rl;     /* prod[23:16] mod size */

    action drop() {
        meta.routed = 0;
    }
    action set_group(bit<16> group, bit<16> group_size) {
        meta.ecmp_group = group;
        meta.ecmp_size = group_size;
        meta.routed = 1;
    }
    table ipv4_route {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_group; drop; }
        const default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    action mul0(bit<32> term) { t0 = term; }
    action mul1(bit<32> term) { t1 = term; }
    action mul2(bit<32> term) { t2 = term; }
    action mul3(bit<32> term) { t3 = term; }
    table ecmp_mul0 {
        key = { meta.c32[7:0]: exact @name("byte"); }
        actions = { mul0; }
        default_action = mul0(0);
        size = 256;
    }
    table ecmp_mul1 {
        key = { meta.c32[15:8]: exact @name("byte"); }
        actions = { mul1; }
        default_action = mul1(0);
        size = 256;
    }
    table ecmp_mul2 {
        key = { meta.c32[23:16]: exact @name("byte"); }
        actions = { mul2; }
        default_action = mul2(0);
        size = 256;
    }
    table ecmp_mul3 {
        key = { meta.c32[31:24]: exact @name("byte"); }
        actions = { mul3; }
        default_action = mul3(0);
        size = 256;
    }

    action mod_hi(bit<16> r) { rh = r; }
    action mod_lo(bit<16> r) { rl = r; }
    table ecmp_mod_hi {
        key = {
            meta.ecmp_size: exact @name("size");
            prod[31:24]: exact @name("byte");
        }
        actions = { mod_hi; }
        default_action = mod_hi(0);
        size = ECMP_MOD_TABLE_SIZE;
    }
    table ecmp_mod_lo {
        key = {
            meta.ecmp_size: exact @name("size");
            prod[23:16]: exact @name("byte");
        }
        actions = { mod_lo; }
        default_action = mod_lo(0);
        size = ECMP_MOD_TABLE_SIZE;
    }

    /* The sums as tables of their own: written as three statements, the compiler merges them
     * into one action whose second add needs the first's result (two stages). */
    action add_pairs() {
        p01 = t0 + t1;
        p23 = t2 + t3;
    }
    table ecmp_add_pairs {
        actions = { add_pairs; }
        const default_action = add_pairs();
        size = 1;
    }
    action add_all() {
        prod = p01 + p23;
    }
    table ecmp_add_all {
        actions = { add_all; }
        const default_action = add_all();
        size = 1;
    }

    action set_port(port_t port) {
        egress_port = port;
    }
    /* TNA: (group, rh + rl) with 2 * size - 1 entries per group, entry j -> member j mod size
     * (v1model: (group, member) with one entry per member). */
    table ecmp_group {
        key = {
            meta.ecmp_group: exact @name("group");
            meta.ecmp_member: exact @name("member");
        }
        actions = { set_port; drop; }
        const default_action = drop();
        size = ECMP_TABLE_SIZE;
    }
    action to_host() {
        meta.to_host = 1;
    }
    /* Ports that face hosts; packets leaving there get the shim popped. */
    table host_port_out {
        key = { egress_port: exact @name("port"); }
        actions = { to_host; @defaultonly NoAction; }
        const default_action = NoAction;
        size = PORT_TABLE_SIZE;
    }
    apply {
        egress_port = 0;
        meta.routed = 0;
        meta.to_host = 0;
        /* No `if (routed)` around the rest: a Tofino 1 table that follows an if-block in the
         * control flow is placed after the block's last table, and this chain is nine stages
         * long. Unrouted, the lookups are harmless: whatever port they pick, routed stays 0
         * and the packet is dropped (canary.p4). */
        ipv4_route.apply();
        ecmp_mul0.apply();
        ecmp_mul1.apply();
        ecmp_mul2.apply();
        ecmp_mul3.apply();
        ecmp_add_pairs.apply();
        ecmp_add_all.apply();
        ecmp_mod_hi.apply();
        ecmp_mod_lo.apply();
        meta.ecmp_member = rh + rl;
        ecmp_group.apply();
        host_port_out.apply();
    }
}
