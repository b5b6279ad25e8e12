#!/usr/bin/env bash
# Start one simple_switch_grpc running Canary, in the background, and print its PID.
#   bmv2/run-switch.sh JSON DEVICE_ID GRPC_PORT THRIFT_PORT LOGFILE [-n NETNS] [N@IFACE...]
# e.g. bmv2/run-switch.sh out/canary.json 1 50051 9090 /tmp/s1.log 1@veth1 2@veth2
# Without N@IFACE the switch has no ports (enough for control-plane tests over Thrift/gRPC).
# gRPC listens on 127.0.0.1; BMv2 writes its log to LOGFILE.txt, its stdout to LOGFILE.stdout. Stop it with: kill PID (never pkill).
# With -n NETNS the switch runs inside that network namespace (its interfaces live there).
# BMV2_LOG_LEVEL (default warn) sets BMv2's log level: `info` or `debug` log every packet and slow
# the switch down several times, so keep them for debugging.
set -euo pipefail
if [ $# -lt 5 ]; then
    echo "usage: $0 JSON DEVICE_ID GRPC_PORT THRIFT_PORT LOGFILE [-n NETNS] [N@IFACE...]" >&2
    exit 2
fi
json=$1 device=$2 grpc=$3 thrift=$4 log=$5
shift 5
prefix=()
if [ "${1:-}" = "-n" ]; then
    prefix=(ip netns exec "$2")
    shift 2
fi
command -v simple_switch_grpc >/dev/null || { echo "SKIP: simple_switch_grpc not on PATH" >&2; exit 0; }
ifs=()
for i in "$@"; do ifs+=(-i "$i"); done
# The notifications socket defaults to /tmp/bmv2-<device-id>-notifications.ipc, shared by every
# switch with that device id on the machine (namespaces do not separate IPC paths): keep it
# beside the log instead, so several fabrics can run at once.
"${prefix[@]}" simple_switch_grpc --device-id "$device" "${ifs[@]}" \
    --thrift-port "$thrift" --log-file "$log" --log-flush -L "${BMV2_LOG_LEVEL:-warn}" \
    --notifications-addr "ipc://$log.notifications.ipc" \
    "$json" -- --grpc-server-addr "127.0.0.1:$grpc" >"$log.stdout" 2>&1 &
pid=$!
echo "$pid"
