/* TNA building blocks of a meter row (one RegisterAction per register per packet).
 * METER_KEY_CHUNK declares one flow-ID chunk register with its two RegisterActions:
 * `_store` (write the packet's value into an empty bucket) and `_differs` (return 1 when the
 * resident value differs from the packet's). Same register names as v1model/. */
#define METER_KEY_CHUNK(T, NAME, FIELD)                                           \
    Register<T, bit<10>>(METER_WIDTH, 0) NAME##_reg;                              \
    RegisterAction<T, bit<10>, bit<1>>(NAME##_reg) NAME##_store = {               \
        void apply(inout T v) { v = FIELD; }                                      \
    };                                                                            \
    RegisterAction<T, bit<10>, bit<1>>(NAME##_reg) NAME##_differs = {             \
        void apply(inout T v, out bit<1> rv) {                                    \
            rv = 0;                                                               \
            if (v != FIELD) { rv = 1; }                                           \
        }                                                                         \
    };

#define METER_CHUNK_APPLY(NAME)                                                   \
    if (used == 0) { NAME##_store.execute(idx); }                                 \
    else { mismatch = mismatch | NAME##_differs.execute(idx); }

/* used_reg, dirty_reg and count_reg with their actions. */
#define METER_STATE_REGS                                                          \
    Register<bit<1>, bit<10>>(METER_WIDTH, 0) used_reg;                           \
    RegisterAction<bit<1>, bit<10>, bit<1>>(used_reg) used_test_and_set = {       \
        void apply(inout bit<1> v, out bit<1> rv) { rv = v; v = 1; }              \
    };                                                                            \
    Register<bit<1>, bit<10>>(METER_WIDTH, 0) dirty_reg;                          \
    RegisterAction<bit<1>, bit<10>, bit<1>>(dirty_reg) dirty_test_and_set = {     \
        void apply(inout bit<1> v, out bit<1> rv) { rv = v; v = 1; }              \
    };                                                                            \
    RegisterAction<bit<1>, bit<10>, bit<1>>(dirty_reg) dirty_read = {             \
        void apply(inout bit<1> v, out bit<1> rv) { rv = v; }                     \
    };                                                                            \
    Register<bit<32>, bit<10>>(METER_WIDTH, 0) count_reg;                         \
    RegisterAction<bit<32>, bit<10>, bit<32>>(count_reg) count_increment = {      \
        void apply(inout bit<32> v) { v = v + 1; }                                \
    };

#define METER_STATE_APPLY                                                         \
    bit<1> dirty;                                                                 \
    if (mismatch == 1) { dirty = dirty_test_and_set.execute(idx); }               \
    else { dirty = dirty_read.execute(idx); }                                     \
    if (dirty == 0) { count_increment.execute(idx); }
