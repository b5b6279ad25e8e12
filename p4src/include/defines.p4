/* Canary data plane: constants and sizes shared by the v1model and TNA programs.
 *
 * The controller and the simulator read the sizes from here or from the compiled program
 * (canary_core::capacity); nothing else types them. One `#define NAME VALUE` per line.
 *
 * Hash slices are the contract with the Rust reference model
 * (control/core/src/sketch/hash.rs): L = log2(METER_WIDTH) = 10, P = log2(HP_ENTRIES) = 5.
 *   meter row 0     c32[9:0]       HashPipe stage 0   c16[15:11]
 *   meter row 1     c32[31:22]     HashPipe stage 1   fp[14:10]  (carried fingerprint)
 *   meter row 2     c16[9:0]       HashPipe stage 2   fp[21:17]  (carried fingerprint)
 * The slice bounds below are written out as literals because P4 slices need constants.
 */
#ifndef CANARY_DEFINES_P4
#define CANARY_DEFINES_P4

#define ETHERTYPE_IPV4   0x0800
#define ETHERTYPE_ARP    0x0806
#define ETHERTYPE_IPV6   0x86DD
/* IEEE 802 "Local Experimental EtherType 1": signals the Canary shim (docs/dataplane.md). */
#define ETHERTYPE_CANARY 0x88B5
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17

/* Meters: METER_ROWS rows of METER_WIDTH buckets per parity; a register holds both parities. */
#define METER_ROWS 3
#define METER_WIDTH 1024
/* HashPipe: HP_STAGES stages of HP_ENTRIES slots. */
#define HP_STAGES 3
#define HP_ENTRIES 32
/* The epoch tag a bucket and a marked packet carry (docs/dataplane.md, "Epoch tags"). */
#define EPOCH_TAG_BITS 15

/* Table sizes. */
/* IPv4 and IPv6 routes share one table: a route per rack and family, host routes for its own hosts. */
#define ROUTE_TABLE_SIZE 2048
#define ECMP_TABLE_SIZE 4096
/* (group size, byte) -> remainder: 256 entries per distinct group size (forwarding.p4). */
#define ECMP_MOD_TABLE_SIZE 4096
#define PORT_TABLE_SIZE 512
#define DSM_TABLE_SIZE 4096
#define USM_TABLE_SIZE 4096
#define HH_TABLE_SIZE 1024

/* Digest receiver id of the HH report. */
#define HH_DIGEST_RECEIVER 1

#define ROW0_INDEX(c32, c16) (c32)[9:0]
#define ROW1_INDEX(c32, c16) (c32)[31:22]
#define ROW2_INDEX(c32, c16) (c16)[9:0]
#define HP0_INDEX(c32, c16)  (c16)[15:11]
#define HP1_INDEX(fp)        (fp)[14:10]
#define HP2_INDEX(fp)        (fp)[21:17]

#endif
