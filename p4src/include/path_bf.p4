/* PathBf: stamp this switch into the pathBF of IP unicast carrying a shim (Sec. III-B-1,
 * canary_core::pathbf::encode_hop). A monitor restarts the filter with its mask; any other
 * switch ORs its mask in. Flooded frames are not stamped. */
control PathBf(inout headers_t hdr, in canary_meta_t meta, in bit<1> on) {
    apply {
        if (on == 1) {
            if (meta.monitor == 1) {
                hdr.canary.path_bf = meta.mask;
            } else {
                hdr.canary.path_bf = hdr.canary.path_bf | meta.mask;
            }
        }
    }
}
