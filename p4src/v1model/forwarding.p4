/* Forwarding: host ports, IPv4 LPM to an ECMP group, a hash of the 5-tuple picks the member.
 * The member is the top 16 bits of c32 (the flow key's CRC-32) times this switch's odd-ized
 * pathBF mask, modulo the group size (`canary_core::sketch::ecmp_member`). A CRC of the flow key
 * and the mask would not do: a CRC is affine over GF(2), so with two members every switch's
 * choice is the previous layer's XOR a constant and each agg sends all its upward traffic to one
 * core (measured on the testbed, docs/testbed.md). The multiplication's carries make successive
 * layers choose independently. No header is rewritten: hosts get their packets byte for byte
 * (the fabric only adds and removes the Canary shim). */
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
    action set_port(port_t port) {
        egress_port = port;
    }
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
        ipv4_route.apply();
        if (meta.routed == 1) {
            bit<32> mixed = meta.c32 * (meta.mask | 32w1);
            /* identity hash with max = group size: (mixed >> 16) mod size (p4c's BMv2 back end
             * has no run-time `%`). */
            hash(meta.ecmp_member, HashAlgorithm.identity, (bit<16>)0,
                 { (bit<16>)(mixed >> 16) }, meta.ecmp_size);
            ecmp_group.apply();
        }
        if (meta.routed == 1) {
            host_port_out.apply();
        }
    }
}
