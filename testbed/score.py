#!/usr/bin/python3
"""Prints a run's localization against the injected truth.

    testbed/score.py RUN.json [--drops fault_drops.json] [--traffic summary.json] [--check]

RUN.json is the document `canary run --json` (and `canary simulate --json`) writes: `faults` (the
truth), `epochs[].blamed` and `summary` (blamed, precision, recall, f1). For every injected fault it
shows how many frames the kernel really dropped on that link (from fabric.py's fault_drops.json),
the first epoch that blamed it and the final verdict; then every false positive.

With --check it exits 1 unless the final verdict blames exactly the injected faults (a run with no
fault passes when nothing is blamed).
"""

import argparse
import json
import sys


def key(link):
    return f"{link[0]}->{link[1]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--drops")
    ap.add_argument("--traffic")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    try:
        with open(a.run) as f:
            run = json.load(f)
        faults = {key(x["link"]): x["loss"] for x in run["faults"]}
        epochs = run["epochs"]
        summary = run["summary"]
        final = {key(x["link"]): x for x in summary["blamed"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"score: {a.run}: not a `canary run --json` document ({e!r})")
    drops = {}
    if a.drops:
        try:
            with open(a.drops) as f:
                drops = json.load(f)
        except (OSError, ValueError):
            pass
    first = {}
    for e in epochs:
        for b in e.get("blamed", []):
            first.setdefault(key(b["link"]), e["epoch"])

    print(f"── localization vs injected faults ({len(epochs)} epochs) ──")
    print(f"{'injected fault':<22} {'loss':>7} {'dropped on the link':>22} {'first blamed':>13}  final")
    for link, loss in sorted(faults.items()):
        d = drops.get(link)
        dropped = "" if d is None else (
            f"{d['dropped']}/{d['sent'] + d['dropped']} "
            f"({100 * d['dropped'] / max(d['sent'] + d['dropped'], 1):.2f}%)")
        fb = f"epoch {first[link]}" if link in first else "never"
        fin = f"blamed, est. {final[link]['loss']:.4f}" if link in final else "MISSED"
        print(f"{link:<22} {loss:>7.3%} {dropped:>22} {fb:>13}  {fin}")
    if not faults:
        print("(no injected fault)")
    fps = sorted(set(final) - set(faults))
    for link in fps:
        print(f"{link:<22} {'-':>7} {'':>22} {'epoch ' + str(first.get(link, '?')):>13}  "
              f"FALSE POSITIVE, est. {final[link]['loss']:.4f}")
    transient = sorted(set(first) - set(faults) - set(final))
    if transient:
        print("blamed in some epoch but not in the final verdict: " + ", ".join(
            f"{l} (epoch {first[l]})" for l in transient))
    print(f"precision {summary['precision']:.3f}   recall {summary['recall']:.3f}   "
          f"F1 {summary['f1']:.3f}   TP {summary['tp']}  FP {summary['fp']}  FN {summary['fn']}")
    if a.traffic:
        try:
            with open(a.traffic) as f:
                t = json.load(f)
            print(f"host traffic: {t['sent']} packets sent, {t['lost']} lost end to end "
                  f"({100 * t['loss']:.3f} %), {t['late']} sent late")
        except (OSError, ValueError, KeyError):
            pass
    if a.check:
        ok = set(final) == set(faults)
        print("CHECK " + ("PASSED" if ok else "FAILED") + ": the final verdict blames "
              + ("exactly the injected faults" if ok else "something else"))
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
