/* Forwarding, the same on both architectures (tables and actions only).
 *
 * IP unicast: longest-prefix match of the destination (one table for both families, IPv4 as
 * ::ffff:a.b.c.d) to an ECMP group; a hash of the flow picks the member; no header is rewritten
 * (hosts get their frames byte for byte, the fabric only adds and removes the shim).
 * The member is `canary_core::sketch::ecmp_member`:
 *     x = bits 31..16 of (c32 * (mask | 1) mod 2^32),   member = x mod size.
 * The multiplication's carries make successive layers choose independently (a CRC of flow and
 * mask would not: a CRC is affine over GF(2), so every layer's choice would be the previous
 * one's XOR a constant). Tofino has neither a multiplier nor a remainder by a run-time value,
 * so both are lookups the controller fills (canary_core::sketch::{ecmp_mul_term, ecmp_mod_term}):
 *  1. Product. With c32 = b0 + 2^8 b1 + 2^16 b2 + 2^24 b3 (bytes) and m = mask | 1,
 *     c32 * m = sum_i (b_i * m * 2^(8i))  (mod 2^32). `ecmp_mul{0,1,2,3}` are keyed on byte b_i
 *     and return T_i(b_i) = b_i * m * 2^(8i) mod 2^32 (256 entries each, rewritten when this
 *     switch's mask changes); two levels of 32-bit adds give the product P, and x = P[31:16].
 *  2. Remainder. With x = 2^8 xh + xl, x mod s = ((2^8 xh mod s) + (xl mod s)) mod s.
 *     `ecmp_mod_hi` / `ecmp_mod_lo`, keyed on (s, xh) / (s, xl), return rh = 2^8 xh mod s and
 *     rl = xl mod s (256 entries per distinct group size each); rh + rl lies in [0, 2s - 2].
 *  3. `ecmp_group` is keyed on (group, rh + rl): 2s - 1 entries per group, entry j -> the port of
 *     member j mod s, which is member x mod s.
 * Everything else (other EtherTypes, IP multicast and broadcast) goes to the multicast group
 * `flood_group` gives the ingress port: the fabric's spanning tree and the hosts, minus that port
 * (canary_core::topo::forwarding). No `if` around the chain: on Tofino 1 a table after an
 * if-block is placed after the block's last table (docs/dataplane.md). */
control HostPort(in port_t ingress_port, inout canary_meta_t meta) {
    action host_port() {
        meta.from_host = 1;
    }
    /* Ports that face hosts; frames arriving there get the shim pushed. */
    table host_port_in {
        key = { ingress_port: exact @name("port"); }
        actions = { host_port; @defaultonly NoAction; }
        const default_action = NoAction;
        size = PORT_TABLE_SIZE;
    }
    action flood(bit<16> group) {
        meta.flood_group = group;
    }
    /* The multicast group of frames that are not routed, per ingress port. */
    table flood_group {
        key = { ingress_port: exact @name("port"); }
        actions = { flood; @defaultonly NoAction; }
        const default_action = NoAction;
        size = PORT_TABLE_SIZE;
    }
    apply {
        meta.from_host = 0;
        meta.flood_group = 0;
        host_port_in.apply();
        flood_group.apply();
    }
}

control Forwarding(inout canary_meta_t meta, out port_t egress_port) {
    bit<32> t0;     /* T_i(byte i of c32), see above */
    bit<32> t1;
    bit<32> t2;
    bit<32> t3;
    bit<32> p01;
    bit<32> p23;
    bit<32> prod;   /* c32 * (mask | 1) mod 2^32 */
    bit<16> rh;     /* 2^8 * prod[31:24] mod size */
    bit<16> rl;     /* prod[23:16] mod size */

    action no_route() {
        meta.route_hit = 0;
    }
    action set_group(bit<16> group, bit<16> group_size) {
        meta.ecmp_group = group;
        meta.ecmp_size = group_size;
        meta.route_hit = 1;
    }
    table ip_route {
        key = { meta.flow.dst_addr: lpm @name("dst_addr"); }
        actions = { set_group; @defaultonly no_route; }
        const default_action = no_route();
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
    action no_member() {
        meta.route_hit = 0;
    }
    table ecmp_group {
        key = {
            meta.ecmp_group: exact @name("group");
            meta.ecmp_member: exact @name("member");
        }
        actions = { set_port; @defaultonly no_member; }
        const default_action = no_member();
        size = ECMP_TABLE_SIZE;
    }
    action to_host() {
        meta.to_host = 1;
    }
    /* Ports that face hosts; unicast frames leaving there lose the shim. */
    table host_port_out {
        key = { egress_port: exact @name("port"); }
        actions = { to_host; @defaultonly NoAction; }
        const default_action = NoAction;
        size = PORT_TABLE_SIZE;
    }
    apply {
        /* 511 faces nothing (switches files may not use it), so an unrouted packet is never
         * taken for one leaving to a host. */
        egress_port = 511;
        meta.route_hit = 0;
        meta.to_host = 0;
        t0 = 0;
        t1 = 0;
        t2 = 0;
        t3 = 0;
        rh = 0;
        rl = 0;
        ip_route.apply();
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
