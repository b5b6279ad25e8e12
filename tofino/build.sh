#!/usr/bin/env bash
# Compile the TNA Canary program for Tofino 1 with the open-source Tofino back end of p4c.
#   tofino/build.sh OUTDIR  ->  OUTDIR/canary.tofino/ (bf-p4c's output: pipe/tofino.bin, pipe/context.json;
#                            with -g also pipe/logs/{resources.json,table_summary.log,...}),
#                            OUTDIR/bfrt.json, OUTDIR/canary.p4info.txtpb
# Uses the bf-p4c on PATH; exits 0 with "SKIP: bf-p4c not on PATH" when there is none.
# Extra arguments after OUTDIR go to bf-p4c (e.g. --verbose 2, --create-graphs).
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 OUTDIR [bf-p4c options]" >&2
    exit 2
fi
out=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../p4src/tna/canary.p4"
if ! command -v bf-p4c >/dev/null 2>&1; then
    echo "SKIP: bf-p4c not on PATH" >&2
    exit 0
fi
mkdir -p "$out"
echo "bf-p4c: $(bf-p4c --version 2>&1 | head -n1)" >&2
bf-p4c --target tofino --arch tna --std p4-16 \
    -I "$here/../p4src/include" \
    -o "$out/canary.tofino" \
    --bf-rt-schema "$out/bfrt.json" \
    --p4runtime-files "$out/canary.p4info.txtpb" \
    "$@" \
    "$src"
test -s "$out/bfrt.json"
test -s "$out/canary.tofino/pipe/context.json"
echo "built $out/canary.tofino $out/bfrt.json $out/canary.p4info.txtpb" >&2
