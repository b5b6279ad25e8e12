/* PathBf: stamp this switch into the packet's pathBF (Sec. III-B-1, canary_core::pathbf::encode_hop).
 * A monitor clears the filter and adds its mask; any other switch ORs its mask. Also clears
 * the mark: only the USM of this switch may set it again. */
control PathBf(inout headers_t hdr, in canary_meta_t meta) {
    apply {
        if (meta.monitor == 1) {
            hdr.canary.path_bf = meta.mask;
            hdr.canary.counted = 0;
            hdr.canary.parity = 0;
        } else {
            hdr.canary.path_bf = hdr.canary.path_bf | meta.mask;
        }
    }
}
