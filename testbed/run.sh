#!/usr/bin/env bash
# Canary end to end on a Mininet fabric of BMv2 switches, with injected packet loss.
#
#   testbed/run.sh --topology fattree:4|FILE --faults FILE|none --epochs N --json OUT
#                  [--epoch-ms 2000] [--rate PPS] [--flows N] [--min-packets N] [--seed N]
#                  [--svg OUT.svg] [--keep-logs DIR] [--canary BIN] [--neighbours pinned|learned]
#                  [-- EXTRA `canary run` ARGS]
#   testbed/run.sh --clean DIR    kill and delete what the run with --keep-logs DIR recorded
#
# --rate: packets/s each host sends (default 50, 25 on one CPU), in --flows concurrent UDP flows (default 8) of
# Pareto(1.2) sizes of at least --min-packets packets (default 50).
# --neighbours: pinned (default) resolves every host's peers through the fabric before the traffic
# starts and keeps them; learned leaves ARP and ND to the traffic (BMv2 then drops frames in their
# floods: docs/testbed.md, "What the harvest costs the switches").
#
# Builds the P4 program (bmv2/build.sh) and `canary` (cargo build --release, unless --canary),
# brings up the fabric (testbed/fabric.py: one Mininet host per host, one BMv2 per switch, faults
# on the chosen directed links), runs `canary run` for N epochs with the fault file as the truth,
# starts the hosts' traffic (`canary traffic`) once the controller has programmed the switches,
# and prints the localization against the injected faults (testbed/score.py), with where every
# frame the hosts lost was lost (kernel counters at both ends of every link: accounting.json),
# so a blame next to BMv2's own loss is told apart from a false positive. OUT is the
# document `canary simulate --json` writes (faults, epochs, summary.blamed, summary.f1).
#
# Everything it starts is torn down on exit, on Ctrl-C and on failure: the controller and the
# fabric are stopped by their recorded PIDs, and if the fabric itself died, its recorded switch,
# shell and generator PIDs are killed and its recorded interfaces deleted. The last lines say
# whether anything was left behind, and say so when nothing was recorded to check. Run as root.
# Exit status: the controller's, or 1 on a testbed failure, 2 on bad usage or a missing tool, 130
# on Ctrl-C. With --clean: 0 when everything recorded is gone, 1 otherwise or with no records.
set -euo pipefail
# The whole script is one block, parsed before it runs: editing run.sh during a run cannot break it.
{
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
PY=/usr/bin/python3 # Debian's: Mininet from apt is installed for it

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "testbed: error: $*" >&2; exit 2; }
say() { echo "testbed: $*" >&2; }

# The last resort when fabric.py could not tear down: what it recorded in STATE (pids.tsv,
# intfs.txt), killed by PID and deleted by name. Sets `left` to 1 if anything stays, and
# `unrecorded` to the records that are missing: what they would list was never checked.
sweep() { # STATE
    local state=$1
    left=0 unrecorded=""
    [ -f "$state/pids.tsv" ] || unrecorded="pids.tsv"
    [ -f "$state/intfs.txt" ] || unrecorded="${unrecorded:+$unrecorded and }intfs.txt"
    if [ -f "$state/pids.tsv" ]; then
        while IFS=$'\t' read -r kind name pid exe; do
            if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$exe"; then
                say "killing leftover $kind $name (pid $pid)"
                kill -KILL "$pid" 2>/dev/null || true
            fi
        done <"$state/pids.tsv"
    fi
    if [ -f "$state/intfs.txt" ]; then
        while read -r intf; do
            if [ -e "/sys/class/net/$intf" ]; then
                say "deleting leftover interface $intf"
                ip link del "$intf" 2>/dev/null || true
            fi
        done <"$state/intfs.txt"
        sleep 0.2
        while read -r intf; do
            [ -e "/sys/class/net/$intf" ] && { say "LEFT BEHIND: interface $intf"; left=1; }
        done <"$state/intfs.txt"
    fi
    if [ -f "$state/pids.tsv" ]; then
        while IFS=$'\t' read -r kind name pid exe; do
            if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$exe"; then
                say "LEFT BEHIND: $kind $name pid $pid"; left=1
            fi
        done <"$state/pids.tsv"
    fi
    if [ $left = 1 ]; then
        return
    elif [ -z "$unrecorded" ]; then
        say "clean: no switch, host, generator or interface recorded in $state is left"
    else
        say "not checked: no $unrecorded in $state (where fabric.py records what it starts): nothing was killed or deleted"
    fi
}

if [ "${1-}" = --clean ]; then
    [ $# = 2 ] || die "--clean takes one argument: the state directory of a run (--keep-logs DIR)"
    [ -d "$2" ] || die "--clean: \`$2\` is not a directory"
    sweep "$(cd "$2" && pwd)"
    if [ $left = 0 ] && [ -z "$unrecorded" ]; then exit 0; fi
    exit 1
fi

topology="" faults="" epochs="" json="" epoch_ms=2000 rate="" flows=8 min_packets=50 seed=1 svg=""
neighbours=pinned
keep="" canary=""
extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --topology) topology=${2:?}; shift 2 ;;
    --faults) faults=${2:?}; shift 2 ;;
    --epochs) epochs=${2:?}; shift 2 ;;
    --json) json=${2:?}; shift 2 ;;
    --epoch-ms) epoch_ms=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --flows) flows=${2:?}; shift 2 ;;
    --min-packets) min_packets=${2:?}; shift 2 ;;
    --seed) seed=${2:?}; shift 2 ;;
    --svg) svg=${2:?}; shift 2 ;;
    --neighbours) neighbours=${2:?}; shift 2 ;;
    --keep-logs) keep=${2:?}; shift 2 ;;
    --canary) canary=${2:?}; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) usage ;;
    *) die "unknown argument \`$1\` (see --help)" ;;
    esac
done
[ -n "$topology" ] || die "--topology is required (fattree:K or a YAML file)"
[ -n "$faults" ] || die "--faults is required (a fault file, or none)"
[ -n "$epochs" ] || die "--epochs is required"
[ -n "$json" ] || die "--json is required"
[[ $epochs =~ ^[1-9][0-9]*$ ]] || die "--epochs: \`$epochs\` is not a positive integer"
[[ $epoch_ms =~ ^[1-9][0-9]*$ ]] || die "--epoch-ms: \`$epoch_ms\` is not a positive integer"
if [ -z "$rate" ]; then
    # What the CPUs this run may use sustain on the k=4 fat-tree (docs/testbed.md, "What BMv2
    # loses by itself"): one CPU loses frames inside switches from 50 packets/s per host; two
    # (2026-12-01, AMD EPYC VM) from 60 (100 saturates both).
    cpus=$(nproc)
    if [ "$cpus" -lt 2 ]; then rate=25; else rate=50; fi
    say "--rate $rate packets/s per host ($cpus CPUs; --rate sets it)"
fi
[[ $rate =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--rate: \`$rate\` is not a number of packets/s"
[[ $seed =~ ^[0-9]+$ ]] || die "--seed: \`$seed\` is not a non-negative integer"
[[ $neighbours =~ ^(pinned|learned)$ ]] || die "--neighbours: \`$neighbours\` is neither pinned nor learned"
[[ $flows =~ ^[1-9][0-9]*$ ]] || die "--flows: \`$flows\` is not a positive integer"
[[ $min_packets =~ ^[1-9][0-9]*$ ]] || die "--min-packets: \`$min_packets\` is not a positive integer"
if [ "$faults" != none ] && [ ! -r "$faults" ]; then die "--faults: cannot read \`$faults\`"; fi
if [[ $topology != fattree:* ]] && [ ! -r "$topology" ]; then
    die "--topology: cannot read \`$topology\` (and it is not fattree:K)"
fi

# ---------------------------------------------------------------- prerequisites
[ "$(id -u)" = 0 ] || die "run as root (network namespaces, veths, tc)"
for tool in p4c simple_switch_grpc ip tc ethtool mnexec; do
    command -v "$tool" >/dev/null 2>&1 ||
        die "\`$tool\` is not on PATH (testbed/install.sh installs the Debian parts; p4c and BMv2: DEVELOPERS.md says where they come from)"
done
$PY -c 'import mininet.net, yaml' 2>/dev/null || die "$PY cannot import mininet and yaml: run testbed/install.sh"

# One testbed at a time on a machine: interface names and ports are fixed.
# CANARY_TESTBED_LOCK_WAIT=S waits up to S seconds for a run in progress (the tests use it).
exec 9>/run/lock/canary-testbed.lock
flock -w "${CANARY_TESTBED_LOCK_WAIT:-0}" 9 ||
    die "another testbed run holds /run/lock/canary-testbed.lock"

if [ -n "$keep" ]; then
    mkdir -p "$keep"
    state=$(cd "$keep" && pwd)
    [ -z "$(ls -A "$state")" ] || die "--keep-logs: $state is not empty"
else
    state=$(mktemp -d /tmp/canary-testbed.XXXXXX)
fi
json=$(realpath -m "$json")
[ -z "$svg" ] || svg=$(realpath -m "$svg")

# ---------------------------------------------------------------- teardown
daemon_pid="" fabric_pid="" tail_pid="" cleaned=0 fabric_started=0
stop_pid() { # PID NAME SIGNAL TIMEOUT_S: signal one process we started, wait, then SIGKILL
    local pid=$1 name=$2 sig=$3 t=$4
    kill -0 "$pid" 2>/dev/null || return 0
    kill "-$sig" "$pid" 2>/dev/null || return 0
    for _ in $(seq $((t * 10))); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    say "$name (pid $pid) still running after ${t} s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local rc=$?
    [ $cleaned = 1 ] && return
    cleaned=1
    trap '' INT TERM HUP
    [ -n "$daemon_pid" ] && stop_pid "$daemon_pid" "canary run" INT 30
    [ -n "$tail_pid" ] && stop_pid "$tail_pid" tail TERM 2
    if [ -n "$fabric_pid" ]; then
        stop_pid "$fabric_pid" "fabric.py" TERM 90
        sed -n '/tearing down\|traffic:\|fault .*dropped\|LEFT\|teardown/p' "$state/fabric.log" | sed 's/^/  /' >&2
    fi
    # Last resort, if fabric.py could not finish: what it recorded, by PID and by name.
    left=0
    if [ $fabric_started = 1 ]; then
        sweep "$state"
    else
        say "no fabric was started: nothing to clean"
    fi
    if [ -n "$keep" ]; then
        say "logs kept in $state"
    elif [ $rc != 0 ] && [ -d "$state" ]; then
        say "failed (exit $rc); logs kept in $state"
    else
        rm -rf "$state"
    fi
    [ $left = 0 ] || rc=1
    exit $rc
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM HUP

# ---------------------------------------------------------------- build
say "state and logs: $state"
"$repo/bmv2/build.sh" "$state/p4" 2>"$state/p4c.log" || { cat "$state/p4c.log" >&2; exit 1; }
[ -s "$state/p4/canary.json" ] || { cat "$state/p4c.log" >&2; exit 1; }
if [ -z "$canary" ]; then
    say "cargo build --release -p canary"
    (cd "$repo" && cargo build --release -q -p canary) || exit 1
    canary="${CARGO_TARGET_DIR:-$repo/target}/release/canary"
fi
[ -x "$canary" ] || die "--canary: \`$canary\` is not an executable"
"$canary" topology "$topology" >"$state/topology.yaml"
if [ "$faults" = none ]; then
    echo "faults: []" >"$state/faults.yaml"
    faults_file=$state/faults.yaml
else
    cp "$faults" "$state/faults.yaml" # the truth, kept with the logs
    faults_file=$(realpath "$faults") # errors name the user's file
fi

# ---------------------------------------------------------------- fabric
# Its own session: Ctrl-C reaches run.sh only, which then stops the controller before the fabric.
fabric_started=1
setsid "$PY" "$here/fabric.py" --topology "$state/topology.yaml" --p4-json "$state/p4/canary.json" \
    --state "$state" --faults "$faults_file" --canary "$canary" --epochs "$epochs" --parent $$ \
    --traffic "$canary" --traffic-trigger "$state/go" --neighbours "$neighbours" --rate "$rate" --seed "$seed" \
    --traffic-arg=--flows="$flows" --traffic-arg=--min-packets="$min_packets" \
    >"$state/fabric.log" 2>&1 </dev/null &
fabric_pid=$!
for _ in $(seq 1800); do
    [ -e "$state/ready" ] && break
    if [ -e "$state/failed" ] || ! kill -0 $fabric_pid 2>/dev/null; then
        sed 's/^/  /' "$state/fabric.log" >&2
        say "the fabric did not come up"
        exit 1
    fi
    sleep 0.1
done
[ -e "$state/ready" ] || { sed 's/^/  /' "$state/fabric.log" >&2; say "fabric not up after 180 s"; exit 1; }
sed 's/^/  /' "$state/fabric.log" >&2

# ---------------------------------------------------------------- controller
# The testbed's defaults for the controller, unless given after `--` (docs/testbed.md says why):
# a 300 ms drain (BMv2 under load holds packets longer than the 50 ms default), n' = 2 (used only
# with `-- --decision floor`: a segment must lose packets in two epochs of the window, so
# single-packet artifacts stay out; the default sequential decision weighs them by itself), and
# eta = 8 (flows are selected sooner at these low rates). The report keeps every segment the
# localizer weighed (--report-observations), so that any epoch's verdict can be replayed.
for d in "--drain-ms 300" "--min-lossy-epochs 2" "--eta 8"; do
    flag=${d%% *}
    if [[ " ${extra[*]-} " != *" $flag "* && " ${extra[*]-} " != *" $flag="* ]]; then
        extra+=($d)
    fi
done
cmd=("$canary" run --topology "$topology" --target bmv2 --switches "$state/switches.yaml"
    --p4 "$state/p4" --epoch-ms "$epoch_ms" --epochs "$epochs" --report "$state/report.jsonl"
    --json "$json" --faults "$faults_file" --report-observations "${extra[@]}")
# Links the fault file takes out of service: Canary's forwarding routes around them
# (fabric.py wrote them in the syntax --out-of-service reads).
if [ -e "$state/out_of_service.yaml" ]; then
    cmd+=(--out-of-service "$state/out_of_service.yaml")
fi
say "${cmd[*]}"
setsid "${cmd[@]}" >"$state/canary.log" 2>&1 </dev/null &
daemon_pid=$!
tail -n +1 -f --pid=$daemon_pid "$state/canary.log" &
tail_pid=$!
# Hosts send once the controller has pushed the pipeline and forwarding to every switch (it says
# "configured N switches"); packets sent before would be dropped for want of a route.
for _ in $(seq 1200); do
    if [ -s "$state/report.jsonl" ] || grep -q "^configured [0-9]* switches" "$state/canary.log" 2>/dev/null; then
        touch "$state/go"
        break
    fi
    kill -0 $daemon_pid 2>/dev/null || break
    sleep 0.1
done
[ -e "$state/go" ] || say "warning: canary run did not say it configured the switches; no traffic was started"
rc=0
wait $daemon_pid || rc=$?
daemon_pid=""
stop_pid "$tail_pid" tail TERM 2
tail_pid=""
[ -e "$state/failed" ] && { say "fabric failure during the run:"; sed 's/^/  /' "$state/failed" >&2; rc=1; }
if [ $rc != 0 ]; then
    say "canary run exited with status $rc (log: $state/canary.log)"
    exit $rc
fi

# ---------------------------------------------------------------- result
stop_pid "$fabric_pid" "fabric.py" TERM 90
fabric_pid=""
sed -n '/traffic:\|neighbours:\|fault .*dropped\|accounting\|LEFT\|teardown/p' "$state/fabric.log" | sed 's/^/  /' >&2
$PY "$here/score.py" "$json" --canary "$canary" --drops "$state/fault_drops.json" --traffic "$state/traffic/summary.json" --accounting "$state/accounting.json"
if [ -n "$svg" ]; then
    "$canary" draw --topology "$topology" --json "$json" --out "$svg" && say "fabric picture: $svg"
fi
exit 0
}
