/* Canary data plane: the one place the two architectures differ in types.
 * Included after <v1model.p4> or <tna.p4>. p4c's BMv2 back end defines __TARGET_BMV2__,
 * bf-p4c defines __TARGET_TOFINO__; build with -DCANARY_TNA as a fallback. */
#ifndef CANARY_COMPAT_P4
#define CANARY_COMPAT_P4

#if defined(__TARGET_TOFINO__) || defined(CANARY_TNA)
typedef PortId_t port_t;
#else
typedef bit<9> port_t;
#endif

#endif
