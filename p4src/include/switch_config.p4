/* SwitchConfig: what the controller sets per switch, as the default action of a keyless table:
 * monitor or not, the pathBF mask (the OR of bits h_i(switch ID), canary_core::pathbf), and the
 * tag of the epoch the USM counts and marks in (canary_core::model::epoch_tag). The controller
 * starts an epoch by rewriting this default action. */
control SwitchConfig(inout canary_meta_t meta) {
    action set_config(bit<1> monitor, bit<32> mask, bit<15> epoch) {
        meta.monitor = monitor;
        meta.mask = mask;
        meta.usm_mark = 1w1 ++ epoch;
        meta.usm_tag = (bit<32>)epoch;
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
