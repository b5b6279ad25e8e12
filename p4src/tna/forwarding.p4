/* Forwarding: host ports, IPv4 LPM to an ECMP group, a hash of the 5-tuple picks the member.
 * The ECMP hash is CRC-16 over the flow key and this switch's pathBF mask, so successive layers
 * choose independently (no polarization). No header is rewritten: hosts get their packets byte
 * for byte (the fabric only adds and removes the Canary shim).
 * TNA difference: Tofino cannot take a remainder by a run-time value, so `member` is the low
 * 8 bits of the hash and the controller installs 256 buckets per group (bucket b -> member
 * b % size); v1model computes hash % size and takes one entry per member. */
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
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, CRC16_ARC) ecmp_hash;
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
            bit<16> h = ecmp_hash.get({ meta.flow.src_addr, meta.flow.dst_addr,
                                        meta.flow.protocol, meta.flow.src_port,
                                        meta.flow.dst_port, meta.mask });
            meta.ecmp_member = (bit<16>)h[7:0];
            ecmp_group.apply();
        }
        if (meta.routed == 1) {
            host_port_out.apply();
        }
    }
}
