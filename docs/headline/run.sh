#!/bin/sh
# Runs the headline sweeps of docs/eval-headline.md: `sh docs/headline/run.sh nb1` (or nb2 … d3;
# fl1c, fl2c, fl3c, z1c, z2c are the `--calibrate` runs).
# Writes docs/headline/NAME.{txt,svg}; the full JSON (every run, every blamed link) and the
# per-seed tables go to $JSON_DIR (default /tmp): the k = 48 ones are tens of MB.
set -e
B=${B:-$CARGO_TARGET_DIR/release/canary}
D=docs/headline
run() { name=$1; shift; echo "== $name" >&2; /usr/bin/time -f "$name %U s user" nice -n 15 $B eval "$@" --json ${JSON_DIR:-/tmp}/$name.json --svg $D/$name.svg 2>${JSON_DIR:-/tmp}/$name.log >$D/$name.txt; tail -1 ${JSON_DIR:-/tmp}/$name.log >&2; }
case "$1" in
nb1) run nb-faults --topology fattree:48 --noise 0.001 --faults links:55@0.02..1 --seeds 1..3 --sweep faults=55,553,5530 --localizers netbouncer-paper,netbouncer ;;
nb2) run nb-probes --topology fattree:48 --noise 0.001 --faults links:553@0.02..1 --seeds 1..3 --sweep probes=10,50,100,200,500 --localizers netbouncer-paper,netbouncer ;;
nb3) run nb-loss --topology fattree:48 --noise 0.001 --faults links:553 --seeds 1..3 --sweep loss=0.001,0.003,0.01,0.03,0.1 --localizers netbouncer-paper,netbouncer ;;
fl1) run flock-probes --topology fattree:16 --noise 0.0001 --faults links:4@0.001..0.01 --seeds 1..4 --sweep probes=25,100,400,1600 --localizers flock,netbouncer-paper,netbouncer ;;
fl1l) run flock-probes-nblambda --topology fattree:16 --noise 0.0001 --faults links:4@0.001..0.01 --seeds 1..4 --sweep probes=25,100,400,1600 --nb-lambda 0.011 --localizers netbouncer-paper,netbouncer ;;
fl2) run flock-flows --topology fattree:16 --noise 0.0001 --faults links:4@0.001..0.01 --seeds 1..4 --sweep flows=15,30,60,120 --localizers flock-a2,007 ;;
fl3) run flock-loss --topology fattree:16 --noise 0.0001 --faults links:1 --seeds 1..8 --sweep loss=0.001,0.002,0.004,0.01,0.02 --localizers flock,netbouncer-paper,flock-a2,007 ;;
fl1c) run flock-probes-cal --topology fattree:16 --noise 0.0001 --faults links:4@0.001..0.01 --seeds 1..4 --sweep probes=25,100,400,1600 --calibrate 101..108 --localizers flock,netbouncer-paper ;;
fl2c) run flock-flows-cal --topology fattree:16 --noise 0.0001 --faults links:4@0.001..0.01 --seeds 1..4 --sweep flows=15,30,60,120 --calibrate 101..108 --localizers flock-a2,007 ;;
fl3c) run flock-loss-cal --topology fattree:16 --noise 0.0001 --faults links:1 --seeds 1..8 --sweep loss=0.001,0.002,0.004,0.01,0.02 --calibrate 101..108 --calibrate-faults links:4@0.001..0.01 --localizers flock,netbouncer-paper,flock-a2,007 ;;
z1) run 007-failures --topology fattree:16 --noise 0.000001 --faults oneway:1@0.0005..0.01 --seeds 1..4 --sweep faults=1,2,5,10,20,30 --localizers 007,flock-a2 ;;
z2) run 007-loss --topology fattree:16 --noise 0.000001 --faults oneway:1 --seeds 1..8 --sweep loss=0.0001,0.0003,0.001,0.003,0.01 --localizers 007,flock-a2 ;;
z1c) run 007-failures-cal --topology fattree:16 --noise 0.000001 --faults oneway:1@0.0005..0.01 --seeds 1..4 --sweep faults=1,2,5,10,20,30 --calibrate 101..108 --localizers 007,flock-a2 ;;
z2c) run 007-loss-cal --topology fattree:16 --noise 0.000001 --faults oneway:1 --seeds 1..8 --sweep loss=0.0001,0.0003,0.001,0.003,0.01 --calibrate 101..108 --calibrate-faults oneway:1@0.0005..0.01 --localizers 007,flock-a2 ;;
d1) for ab in "1 1" "2 1" "1 2"; do set -- $ab; run detector-paths-a$1-b$2 --faults links:1@0.05 --pmc-alpha $1 --pmc-beta $2 --sweep k=4,6,8$( [ $2 = 1 ] && echo ,12,16 ) --localizers detector,netbouncer; done ;;
d2) run detector-loss --topology fattree:4 --faults links:1 --seeds 1..10 --sweep loss=0.001,0.003,0.01,0.03,0.1 --localizers detector,netbouncer ;;
d3) run detector-faults --topology fattree:16 --faults links:1@0.02..1 --seeds 1..3 --sweep faults=1,5,20,80,200 --localizers detector,netbouncer-paper ;;
esac
