/* Canary data plane: constants and sizes shared by the v1model and TNA programs.
 *
 * Hash slices are the contract with the Rust reference model
 * (control/core/src/sketch/hash.rs): L = log2(METER_WIDTH) = 10, P = log2(HP_ENTRIES) = 5.
 *   meter row 0     c32[9:0]       HashPipe stage 0   c16[15:11]
 *   meter row 1     c32[31:22]     HashPipe stage 1   c32[14:10]  (carried key)
 *   meter row 2     c16[9:0]       HashPipe stage 2   c32[21:17]  (carried key)
 * The slice bounds below are written out as literals because P4 slices need constants.
 */
#ifndef CANARY_DEFINES_P4
#define CANARY_DEFINES_P4

#define ETHERTYPE_IPV4   0x0800
/* IEEE 802 "Local Experimental EtherType 1": signals the Canary shim (docs/dataplane.md). */
#define ETHERTYPE_CANARY 0x88B5
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17

/* Meters (d = 3 rows, w = 1024 buckets per row and per parity instance). */
#define METER_WIDTH 1024
/* HashPipe (3 stages x 32 entries). */
#define HP_ENTRIES 32

#define ROW0_INDEX(c32, c16) ((bit<32>)(c32)[9:0])
#define ROW1_INDEX(c32, c16) ((bit<32>)(c32)[31:22])
#define ROW2_INDEX(c32, c16) ((bit<32>)(c16)[9:0])
#define HP0_INDEX(c32, c16)  ((bit<32>)(c16)[15:11])
#define HP1_INDEX(c32)       ((bit<32>)(c32)[14:10])
#define HP2_INDEX(c32)       ((bit<32>)(c32)[21:17])

/* Field-wise equality of two flow_t values (not every back end compares structs). */
#define FLOW_EQ(a, b) ((a).src_addr == (b).src_addr && (a).dst_addr == (b).dst_addr && \
    (a).protocol == (b).protocol && (a).src_port == (b).src_port && (a).dst_port == (b).dst_port)

/* Table sizes. */
#define ROUTE_TABLE_SIZE 1024
#define ECMP_TABLE_SIZE  4096
/* TNA only: (group size, byte) -> remainder, 256 entries per distinct group size (tna/forwarding.p4). */
#define ECMP_MOD_TABLE_SIZE 4096
#define PORT_TABLE_SIZE  512
#define DSM_TABLE_SIZE   4096
#define USM_TABLE_SIZE   4096
#define HH_TABLE_SIZE    1024

/* Digest receiver id of the HH report (v1model `digest(receiver, data)`). */
#define HH_DIGEST_RECEIVER 1

#endif
