/* SwitchConfig: what the controller sets per switch, as the default action of a keyless table:
 * monitor or not, the pathBF mask (the OR of bits h_i(switch ID), canary_core::pathbf), and the
 * tag of the epoch the USM counts and marks in (canary_core::model::epoch_tag), and the tags of
 * the epochs before and after it, the only marks the DSM counts besides its own
 * (canary_core::model::epoch_window). The controller starts an epoch by rewriting this default
 * action. */
control SwitchConfig(inout canary_meta_t meta) {
    action set_config(bit<1> monitor, bit<32> mask, bit<15> epoch, bit<15> epoch_prev,
                      bit<15> epoch_next) {
        meta.monitor = monitor;
        meta.mask = mask;
        meta.usm_mark = 1w1 ++ epoch;
        meta.usm_tag = (bit<32>)epoch;
        meta.epoch_prev = epoch_prev;
        meta.epoch_next = epoch_next;
    }
    table switch_config {
        key = { }
        actions = { set_config; }
        default_action = set_config(0, 0, 0, 0, 0);
        size = 1;
    }
    apply {
        switch_config.apply();
    }
}
