/* PathBf: stamp this switch into the packet's pathBF (Sec. III-B-1, canary_core::pathbf::encode_hop).
 * A monitor clears the filter and adds its mask; any other switch ORs its mask. (v1model also
 * clears the mark here; on TNA UpstreamMeter writes the monitor's mark once, set or clear.) */
control PathBf(inout headers_t hdr, in canary_meta_t meta) {
    apply {
        if (meta.monitor == 1) {
            hdr.canary.path_bf = meta.mask;
        } else {
            hdr.canary.path_bf = hdr.canary.path_bf | meta.mask;
        }
    }
}
