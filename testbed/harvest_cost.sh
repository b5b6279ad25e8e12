#!/usr/bin/env bash
# Which of the controller's per-epoch calls makes BMv2 drop frames (docs/testbed.md, "What the
# harvest costs the switches").
#
#   testbed/harvest_cost.sh --json OUT [--topology fattree:4] [--rounds 3] [--epochs-per-phase 10]
#                           [--epoch-ms 1000] [--rate PPS] [--min-packets N]
#                           [--phases idle,flip,read,clear,all,rules,silent]
#
# Brings up the testbed (testbed/run.sh, no faults) and lets `canary run` configure it for three
# epochs, with the hosts' traffic flowing; then `canary harvest-cost` makes one kind of the
# daemon's per-epoch calls at a time on every monitor (none, the epoch flip, the meter read,
# HashPipe's zeroing, all three), phase after phase, round after round, and writes to OUT the
# frames each switch took in and did not send during each phase. Run as root.
set -euo pipefail
{
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "harvest_cost: error: $*" >&2; exit 2; }

json="" topology=fattree:4 rounds=3 per_phase=10 epoch_ms=1000 rate="" phases=idle,flip,read,clear,all,rules,silent min_packets=""
while [ $# -gt 0 ]; do
    case $1 in
    --json) json=${2:?}; shift 2 ;;
    --topology) topology=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --epochs-per-phase) per_phase=${2:?}; shift 2 ;;
    --epoch-ms) epoch_ms=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --phases) phases=${2:?}; shift 2 ;;
    --min-packets) min_packets=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) die "unknown argument \`$1\` (see --help)" ;;
    esac
done
[ -n "$json" ] || die "--json is required"
json=$(realpath -m "$json")

(cd "$repo" && cargo build --release -q -p canary) || exit 1
real="${CARGO_TARGET_DIR:-$repo/target}/release/canary"
work=$(mktemp -d /tmp/canary-harvest-cost.XXXXXX)
trap 'rm -rf "$work"' EXIT

# run.sh starts the controller as `BIN run ARGS`; this BIN runs the real one (it configures the
# switches, and its "configured" line starts the traffic), then the measurement on the same
# switches. Every other subcommand (topology, traffic, faults, draw) is the real canary's.
cat >"$work/canary" <<EOF
#!/usr/bin/env bash
set -uo pipefail
[ "\${1-}" = run ] || exec "$real" "\$@"
"$real" "\$@" || exit \$?
shift
topology="" switches="" p4=""
while [ \$# -gt 0 ]; do
    case \$1 in
    --topology) topology=\$2; shift 2 ;;
    --switches) switches=\$2; shift 2 ;;
    --p4) p4=\$2; shift 2 ;;
    *) shift ;;
    esac
done
exec "$real" harvest-cost --topology "\$topology" --switches "\$switches" --p4 "\$p4" \
    --epoch-ms $epoch_ms --epochs-per-phase $per_phase --rounds $rounds --phases $phases \
    --json "$json"
EOF
chmod +x "$work/canary"
"$here/run.sh" --topology "$topology" --faults none --epochs 3 --epoch-ms "$epoch_ms" \
    ${rate:+--rate "$rate"} ${min_packets:+--min-packets "$min_packets"} --json "$work/run.json" --canary "$work/canary"
}
