#!/usr/bin/env bash
# Compile the v1model Canary program for BMv2.
#   bmv2/build.sh OUTDIR   ->  OUTDIR/canary.json, OUTDIR/canary.p4info.{txtpb,bin} (text and binary P4Info)
# Uses the p4c on PATH; exits 0 with "SKIP: p4c not on PATH" when there is none.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
out=$1
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../p4src/v1model/canary.p4"
if ! command -v p4c >/dev/null 2>&1; then
    echo "SKIP: p4c not on PATH" >&2
    exit 0
fi
mkdir -p "$out"
echo "p4c: $(p4c --version 2>&1 | head -n1)" >&2
p4c --target bmv2 --arch v1model --std p4-16 \
    -o "$out" \
    --p4runtime-files "$out/canary.p4info.txtpb,$out/canary.p4info.bin" \
    "$src"
test -s "$out/canary.json"
test -s "$out/canary.p4info.txtpb"
test -s "$out/canary.p4info.bin"
echo "built $out/canary.json $out/canary.p4info.txtpb $out/canary.p4info.bin" >&2
