/* SwitchConfig: per-switch parameters the controller sets as the default action of a keyless
 * table: monitor or not, the pathBF mask (the OR of bits h_i(switch ID), computed by the
 * controller, canary_core::pathbf), and the parity of the current epoch. The controller flips
 * the epoch by rewriting this default action (Tofino: the same table, via BFRuntime). */
control SwitchConfig(inout canary_meta_t meta) {
    action set_config(bit<1> monitor, bit<32> mask, bit<1> parity) {
        meta.monitor = monitor;
        meta.mask = mask;
        meta.cur_parity = parity;
    }
    table switch_config {
        key = { }
        actions = { set_config; }
        default_action = set_config(0, 0, 0);
        size = 1;
    }
    apply {
        switch_config.apply();
    }
}
