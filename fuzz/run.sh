#!/usr/bin/env bash
# Fuzzes every decoder of outside input, one target after another, each for SECONDS.
#
#   fuzz/run.sh [SECONDS] [TARGET...]     default: 600 s, every target
#
# Builds the targets once (cargo +nightly fuzz build: release, debug assertions and overflow
# checks on, AddressSanitizer), then runs each with libFuzzer on its seeds (fuzz/corpus/T, never
# written to) and a working corpus (fuzz/work/T, kept between runs). Prints per target the
# seconds, libFuzzer's executions (stat::number_of_executed_units) and whether it crashed; a
# crash's input is in fuzz/artifacts/T and its log in fuzz/logs/T.log. One libFuzzer process at a
# time; CARGO_BUILD_JOBS (default 1) bounds the build. Exit status 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")"

all=(yaml program thrift digest read_responses pathbf flock_trace pcap)
secs=${1:-600}
[[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "usage: fuzz/run.sh [SECONDS] [TARGET...]" >&2; exit 2; }
[ $# -gt 1 ] && shift && targets=("$@") || targets=("${all[@]}")
for t in "${targets[@]}"; do
    [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz/run.sh: unknown target \`$t\` (${all[*]})" >&2; exit 2; }
done
command -v cargo-fuzz >/dev/null || { echo "fuzz/run.sh: cargo-fuzz missing: cargo install cargo-fuzz --locked" >&2; exit 2; }

export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
cargo +nightly fuzz build >&2
mkdir -p work logs

rows=() crashed=0
for t in "${targets[@]}"; do
    mkdir -p "work/$t"
    echo "fuzz/run.sh: $t for $secs s" >&2
    start=$(date +%s)
    status=ok
    cargo +nightly fuzz run "$t" "work/$t" "corpus/$t" -- \
        -max_total_time="$secs" -timeout=30 -print_final_stats=1 >"logs/$t.log" 2>&1 ||
        { status="CRASH (fuzz/logs/$t.log)"; crashed=1; }
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "logs/$t.log" | tail -1)
    rows+=("$(printf '%-16s %8s s %14s executions  %s' "$t" "$took" "${execs:-?}" "$status")")
    echo "${rows[-1]}"
done
echo "-- $(date -u +%Y-%m-%dT%H:%MZ), $secs s per target --"
printf '%s\n' "${rows[@]}"
exit $crashed
