#!/usr/bin/env python3
"""The scaling curve of docs/bench.md, section 2, from `canary simulate --synth-meters --json`
runs named kK.json in DIR: prints the table and writes a log-log SVG (time and peak memory per
epoch against k). Usage: docs/scale/curve.py DIR OUT.svg"""
import json
import math
import os
import sys


def load(d):
    rows = []
    for name in os.listdir(d):
        if not (name.startswith("k") and name.endswith(".json") and name[1:-5].isdigit()):
            continue
        r = json.load(open(os.path.join(d, name)))
        r = r.get("synthesized", r)  # the run document since version 1
        s = r["setup"]
        last = r["epochs"][-10:]
        med = lambda key: sorted(e[key] for e in last)[len(last) // 2]
        rows.append({
            "k": int(name[1:-5]), "switches": s["switches"], "hosts": s["hosts"],
            "segments": s["segments"], "rounds": s["rounds"],
            "epoch_ms": med("epoch_ms"), "minus_ms": med("minus_meters_ms"),
            "localize_ms": med("localize_ms"), "peak_mb": r["peak_rss_mb"],
            "f1": r["after_first_period"]["f1"],
        })
    return sorted(rows, key=lambda r: r["k"])


def slope(rows, key, lo, hi):
    a = next(r for r in rows if r["k"] == lo)
    b = next(r for r in rows if r["k"] == hi)
    return math.log(b[key] / a[key]) / math.log(hi / lo)


def svg(rows, out):
    w, h, m = 640, 400, 60
    ks = [r["k"] for r in rows]
    x = lambda k: m + (math.log(k) - math.log(ks[0])) / (math.log(ks[-1]) - math.log(ks[0])) * (w - 2 * m)
    lo, hi = 0.1, 10000.0
    y = lambda v: h - m - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (h - 2 * m)
    p = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>']
    for e in range(-1, 5):
        v = 10.0 ** e
        p.append(f'<line x1="{m}" x2="{w - m}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        p.append(f'<text x="{m - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    for k in ks:
        p.append(f'<line x1="{x(k):.1f}" x2="{x(k):.1f}" y1="{m}" y2="{h - m}" stroke="#eee"/>')
        p.append(f'<text x="{x(k):.1f}" y="{h - m + 16}" text-anchor="middle">{k}</text>')
    for key, colour, label in [("epoch_ms", "#c0392b", "epoch, ms (median of the last 10)"),
                               ("peak_mb", "#2471a3", "peak memory, MB")]:
        pts = " ".join(f"{x(r['k']):.1f},{y(r[key]):.1f}" for r in rows)
        p.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for r in rows:
            p.append(f'<circle cx="{x(r["k"]):.1f}" cy="{y(r[key]):.1f}" r="3" fill="{colour}"/>')
        p.append(f'<text x="{m + 10}" y="{m - 30 + (16 if key == "peak_mb" else 0)}" fill="{colour}">{label}</text>')
    p.append(f'<text x="{w / 2}" y="{h - 15}" text-anchor="middle">fat-tree radix k (log)</text>')
    p.append('</svg>')
    open(out, "w").write("\n".join(p) + "\n")


def main():
    rows = load(sys.argv[1])
    print("| k | switches | hosts | segments | rounds | epoch ms | minus meters ms | localize ms | peak MB | F1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['k']} | {r['switches']} | {r['hosts']} | {r['segments']} | {r['rounds']} | {r['epoch_ms']:.1f} | "
              f"{r['minus_ms']:.1f} | {r['localize_ms']:.1f} | {r['peak_mb']:.0f} | {r['f1']:.3f} |")
    for key in ["epoch_ms", "peak_mb", "segments"]:
        print(f"slope of {key} against k, k = 16..48: {slope(rows, key, 16, rows[-1]['k']):.2f}")
    svg(rows, sys.argv[2])


main()
