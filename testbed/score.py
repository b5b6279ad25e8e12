#!/usr/bin/python3
"""Prints a run's localization against the truth: the injected faults and every loss measured.

    testbed/score.py RUN.json [--drops fault_drops.json] [--traffic summary.json]
                     [--accounting accounting.json] [--json OUT] [--check] [--canary BIN]

RUN.json is the document `canary run --json` (and `canary simulate --json`) writes: `faults` (the
injected faults), `epochs[].blamed` and `summary` (blamed, precision, recall, f1).

accounting.json is fabric.py's count of the generators' frames at both ends of every link and at
every switch's ports. With it, the truth is the injected faults plus whatever else really lost
frames: a link whose receiver got fewer than its sender sent beyond the injected drops, or a
switch that took in more than it sent (a BMv2 falling behind). Every blamed link is then one of:
  injected      an injected fault;
  real loss     a link that measurably lost frames it was not told to (with its rate), weighed
                as switch loss is;
  switch loss   a link into or out of switches that lost frames themselves, together at least
                half as many as the blame's estimates claim (each epoch's estimate that named it
                times the link's frames in an epoch; a held blame claims nothing new);
  FALSE POSITIVE  nothing was lost there, or too little to carry the blame.
For each injected fault it shows the frames its link carried and whether they could show it: a
loss p drops none of n frames with probability (1-p)^n, so below n = ln(20)/p (about 3/p) a fault
of that size cannot be told from a healthy link at 95 % confidence ("too little traffic"). A
fault whose link lost no more of the generators' frames than the background (its dropper's drops
were ARP or ND) left nothing to find. A link that lost most of its frames is never "too little
evidence": the frames that vanished are the evidence, and missing it is a miss.

Canary's decision on the counts (does a segment's loss cross it, how many packets a loss needs,
a healthy segment's loss) is `canary decision`'s answer, with the controller's own defaults:
--canary BIN, else $CANARY_BIN, the repository's newest build, or `canary` on PATH.

--check exits 1 unless every blamed link is injected or explained by measured loss, and every
injected fault with enough traffic is blamed. --json writes this verdict as a document.
"""

import argparse
import json
import math
import sys

from canary_testbed import canary
from canary_testbed import stalls as machine


# A link that lost at least this share of its frames is never excused for "too little
# evidence": what vanished on it is the evidence.
MOST = 0.5


def key(link):
    return f"{link[0]}->{link[1]}"


def enough(loss):
    """Frames a link must carry for a loss of `loss` to show at 95 % confidence."""
    return math.log(20) / -math.log1p(-loss) if 0 < loss < 1 else 0


def decide(binary, segments_total, links_total, faults, really, through):
    """Canary's decision on the run's counts, from `canary decision` (the controller's own
    statistics and defaults: nothing is computed here): per fault link, the packets its
    segments must carry to show its measured loss (`needed`, inf where none would) and the
    segments through it that crossed the decision, alone or with the link's others pooled; and
    a healthy 2-link segment's loss p0."""
    links = sorted(faults)
    segs = [(l, g) for l in links for g in through.get(l, [])]
    if not links:
        return {}, {}, 0.0
    counts = lambda gs: [(g["sent"], g["lost"], len(g["segment"]) - 1) for g in gs]  # noqa: E731
    try:
        d = canary.decision(canary.find(binary), segments_total, links_total,
                            declares=counts(g for _, g in segs),
                            pooled=[counts(through.get(l, [])) for l in links],
                            needed=[(really[l], 2) for l in links], p0=[2])
    except canary.CanaryError as e:
        sys.exit(f"score: canary decision: {e}")
    needed = {l: float("inf") if n is None else n for l, n in zip(links, d["needed"])}
    crossed = {}
    for (l, g), yes in zip(segs, d["declares"]):
        if yes:
            crossed.setdefault(l, []).append(g)
    for l, yes in zip(links, d["pooled"]):
        if yes:
            crossed[l] = [g for g in through.get(l, []) if g["lost"] > 0]
    return needed, crossed, d["p0"][0]


def at_most(k, n, p):
    """P(X <= k) for X ~ Binomial(n, p)."""
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if k >= n else 0.0
    term = (1 - p) ** n
    total = term
    for i in range(1, k + 1):
        term *= (n - i + 1) / i * p / (1 - p)
        total += term
    return min(total, 1.0)


def smallest_shown(epochs):
    """Each directed link's smallest loss Canary's evidence showed over the run, from the epoch
    reports' evidence maps (canary_core::decide::EvidenceTracker: the packets of every segment
    through the link, pooled, against the decision's own threshold), with the packets of the
    epoch that showed it; None for a link no epoch's evidence could show any loss on."""
    shown, packets = {}, {}
    for e in epochs:
        m = e.get("evidence_map") or {}
        for x in m.get("links", []):
            l = key(x["link"])
            q = x["min_loss"] if x["min_loss"] < 1 else None
            shown.setdefault(l, None)
            if q is not None and (shown[l] is None or q < shown[l]):
                shown[l], packets[l] = q, x["packets"]
        for link in m.get("unwatched", []):
            shown.setdefault(key(link), None)
    return shown, packets


def load(path):
    if not path:
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--drops")
    ap.add_argument("--traffic")
    ap.add_argument("--accounting")
    ap.add_argument("--json")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--canary", help="the canary binary whose `decision` judges the counts "
                    "(default: $CANARY_BIN, the repository's build, or canary on PATH)")
    a = ap.parse_args()
    try:
        with open(a.run) as f:
            run = json.load(f)
        # A fault on a share of flows loses about loss × share of the link's frames: that is
        # the rate its evidence is judged against.
        faults = {key(x["link"]): x["loss"] * x.get("flows", 1.0) for x in run["faults"]}
        shares = {key(x["link"]): (x["loss"], x["flows"]) for x in run["faults"]
                  if x.get("flows", 1.0) < 1.0}
        epochs = run["epochs"]
        summary = run["summary"]
        final = {key(x["link"]): x for x in summary["blamed"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"score: {a.run}: not a `canary run --json` document ({e!r})")
    drops = load(a.drops) or {}
    acct = load(a.accounting)
    if a.accounting and acct is None:
        sys.exit(f"score: {a.accounting}: cannot read the testbed's accounting")
    links = (acct or {}).get("links", {})
    switches = (acct or {}).get("switches", {})
    # Packets Canary's monitored flows carried across each directed link over the run (its
    # segments are decided together), and the most any one segment through it carried.
    counted = {}
    most = {}
    through = {}
    for seg in summary.get("coverage", []):
        hops = seg["segment"]
        for x, y in zip(hops, hops[1:]):
            c = counted.setdefault(f"{x}->{y}", [0, 0])
            c[0] += seg["sent"]
            c[1] += seg["lost"]
            most[f"{x}->{y}"] = max(most.get(f"{x}->{y}", 0), seg["sent"])
            through.setdefault(f"{x}->{y}", []).append(seg)
    segments_total = max((e.get("segments_total", 0) for e in epochs), default=0)
    links_total = max((len(e.get("evidence_map", {}).get("links", []))
                       + len(e.get("evidence_map", {}).get("unwatched", [])) for e in epochs),
                      default=0)
    first = {}
    for e in epochs:
        for b in e.get("blamed", []):
            first.setdefault(key(b["link"]), e["epoch"])

    # Loss the run was not told about. (A faulty link's own frames lost are the injected ones:
    # its dropper also drops ARP and ND, which the injector's count includes and ours does not.)
    real = {l: v["lost"] for l, v in links.items() if l not in faults and v["lost"] > 0}
    lossy_switches = {s: v["lost"] for s, v in switches.items() if v["lost"] > 0}

    # The frames a blame says its link lost: each epoch's estimate times the link's frames in an
    # epoch (its run total spread evenly), summed over the epochs whose localization named it. A
    # held blame (not named, not yet cleared) repeats an old estimate and claims nothing new.
    implied = {}
    for e in epochs:
        for b in e.get("blamed", []):
            if b.get("held"):
                continue
            l = key(b["link"])
            per_epoch = links.get(l, {}).get("sent", 0) / max(len(epochs), 1)
            implied[l] = implied.get(l, 0.0) + b.get("loss", 0.0) * per_epoch

    def weighs(lost, link):
        """Whether `lost` frames measured at or next to `link` can carry the loss its blames
        claim: at least half of it (an estimate from a few hundred packets is that rough)."""
        return lost >= implied.get(link, 0.0) / 2

    def explain(link):
        if link in faults:
            return "injected"
        if link in real and weighs(real[link], link):
            v = links[link]
            return f"real loss {real[link]}/{v['sent']} ({100 * real[link] / max(v['sent'], 1):.2f}%)"
        # Either end switch may have dropped what the link's segments lost: their losses add.
        ends = [s for s in link.split("->") if s in lossy_switches]
        if ends and weighs(sum(lossy_switches[s] for s in ends), link):
            return "switch loss at " + ", ".join(f"{s} ({lossy_switches[s]} frames)" for s in ends)
        return None

    def unexplained_why(link):
        """Why the loss measured next to an unexplained blame does not carry it, or ''."""
        near = ([f"{real[link]} frames lost on the link"] if link in real else []) + [
            f"{lossy_switches[s]} lost inside {s}" for s in link.split("->")
            if s in lossy_switches]
        if not near:
            return ""
        return (f" ({', '.join(near)}: less than half the {implied.get(link, 0.0):.0f} frames "
                "its blames claim)")

    # What the links really lost (a Bernoulli dropper loses more or less than its rate),
    # measured at both of their ends; the injected rate where nothing was measured.
    really = {}
    for link, loss in faults.items():
        carried, lost_here = links.get(link, {}).get("sent"), links.get(link, {}).get("lost")
        really[link] = lost_here / carried if carried and lost_here is not None else loss
    needed, crossed_by, p0 = decide(a.canary, segments_total, links_total, faults, really,
                                   through)

    print(f"── localization vs injected faults ({len(epochs)} epochs) ──")
    print(f"{'injected fault':<22} {'loss':>7} {'dropped on the link':>22} {'first blamed':>13}  final")
    starved = []
    for link, loss in sorted(faults.items()):
        d = drops.get(link)
        dropped = "" if d is None else (
            f"{d['dropped']}/{d['sent'] + d['dropped']} "
            f"({100 * d['dropped'] / max(d['sent'] + d['dropped'], 1):.2f}%)")
        fb = f"epoch {first[link]}" if link in first else "never"
        fin = f"blamed, est. {final[link]['loss']:.4f}" if link in final else "MISSED"
        carried = links.get(link, {}).get("sent")
        n_counted = counted.get(link, [0, 0])[0]
        lost_here = links.get(link, {}).get("lost")
        need = needed[link]
        if carried is not None and carried < enough(loss):
            starved.append(link)
            fin += (f"  (too little traffic: {carried} frames; a {loss:.2%} loss needs "
                    f"{math.ceil(enough(loss))} to show)")
        elif link not in final and really[link] <= p0:
            # The dropper's count includes ARP and ND; the kernel counters at the link's two
            # ends say what it did to the generators' frames, which are all Canary counts.
            starved.append(link)
            fin += (f"  (nothing to find: it lost {lost_here} of the generators' {carried} "
                    f"frames, no more than a healthy link's background; its dropper's drops "
                    f"were other frames)")
        elif link not in final and really[link] >= MOST:
            # A link that lost most of its frames is never short of evidence: the frames that
            # vanished are the evidence (Canary counts a flow that vanishes as lost).
            fin += (f"  (it lost {really[link]:.2%} of its frames: the frames that vanished are "
                    f"the evidence; Canary counted {n_counted} packets on its busiest segment)")
        elif link not in final and n_counted < need:
            starved.append(link)
            fin += (f"  (too little evidence: it really lost {really[link]:.2%}; Canary's "
                    f"segments through it carried {n_counted} packets together (the busiest "
                    f"{most.get(link, 0)}), and telling a {really[link]:.2%} loss from the "
                    f"background takes about {math.ceil(need)})")
        if link not in final and link not in starved and carried and really[link] < MOST:
            # What Canary's own flows counted: when no segment through the link lost enough of
            # its packets to cross the decision, missing the fault is the decision working, as
            # long as those flows lost what the link's kernel counters say it lost (a far lower
            # count would be Canary's error, and stays a miss).
            segs = through.get(link, [])
            n, lost = counted.get(link, [0, 0])
            crossed = crossed_by.get(link, [])
            if not crossed and at_most(lost, n, really[link]) >= 1e-3:
                starved.append(link)
                busiest = max(segs, key=lambda g: g["sent"], default=None)
                fin += (f"  (too little evidence in Canary's own counts: no segment through it, "
                        f"alone or with the link's others, lost enough to tell from the "
                        f"background"
                        + (f", the busiest {busiest['lost']} of {busiest['sent']}" if busiest
                           else "")
                        + f"; its flows lost {lost} of {n}, within chance of the link's "
                        f"{really[link]:.2%} loss)")
        if link not in final and link not in starved and really[link] < MOST:
            n, lost = counted.get(link, [0, 0])
            fin += (f"  (Canary's flows: {lost} of {n} packets lost through it"
                    + ("; too few to show this loss" if n < enough(loss) else "") + ")")
        if link in shares:
            fin += f"  ({shares[link][0]:.2%} on a {shares[link][1]:.0%} share of flows)"
        print(f"{link:<22} {loss:>7.3%} {dropped:>22} {fb:>13}  {fin}")
    if not faults:
        print("(no injected fault)")
    verdicts = {}
    for link in sorted(set(final) - set(faults)):
        why = explain(link) if acct else None
        verdicts[link] = why
        label = why.upper() if why else "FALSE POSITIVE" + (unexplained_why(link) if acct else "")
        print(f"{link:<22} {'-':>7} {'':>22} {'epoch ' + str(first.get(link, '?')):>13}  "
              f"{label}, est. {final[link]['loss']:.4f}")
    transient = sorted(set(first) - set(faults) - set(final))
    if transient:
        print("blamed in some epoch but not in the final verdict: " + ", ".join(
            f"{l} (epoch {first[l]}{'; ' + explain(l) if acct and explain(l) else ''})"
            for l in transient))
    print(f"precision {summary['precision']:.3f}   recall {summary['recall']:.3f}   "
          f"F1 {summary['f1']:.3f}   TP {summary['tp']}  FP {summary['fp']}  FN {summary['fn']}"
          "   (against the injected faults only)")
    traffic = load(a.traffic)
    if traffic:
        print(f"host traffic: {traffic['sent']} packets sent, {traffic['lost']} lost end to end "
              f"({100 * traffic['loss']:.3f} %), {traffic['late']} sent late")
    unexplained = sorted(l for l, why in verdicts.items() if why is None)
    if acct:
        injected = sum(v["lost"] for l, v in links.items() if l in faults)
        on_links = sum(real.values())
        in_switches = sum(lossy_switches.values())
        print("── where the fabric lost the generators' frames (kernel counters) ──")
        print(f"on faulty links {injected}; on other links {on_links}"
              + (" (" + ", ".join(f"{l} {n}" for l, n in sorted(real.items())) + ")" if real else "")
              + f"; inside switches {in_switches}"
              + (" (" + ", ".join(f"{s} {n}" for s, n in sorted(lossy_switches.items())) + ")"
                 if lossy_switches else ""))
        # Between a host and its edge switch (no Canary monitor there: not Canary's to see).
        hosts = {h: v["lost_on_the_way_out"] + v["lost_on_the_way_in"]
                 for h, v in acct.get("hosts", {}).items()}
        at_hosts = sum(hosts.values())
        if at_hosts:
            print(f"on the hosts' own links {at_hosts} ("
                  + ", ".join(f"{h} {n}" for h, n in sorted(hosts.items()) if n)
                  + "): between a host and its edge switch, where Canary has no monitor")
        if traffic:
            rest = traffic["lost"] - injected - on_links - in_switches - at_hosts
            print(f"end to end {traffic['lost']}: {rest:+d} not seen on any link or switch"
                  + (" (still in flight at the end, or lost outside every counter)"
                     if rest else ""))
        trouble = []
        if lossy_switches:
            trouble.append(f"{len(lossy_switches)} switches dropped {in_switches} frames "
                           "themselves")
        if traffic and traffic["late"] > traffic["sent"] / 100:
            trouble.append(f"{traffic['late']} packets sent late (the generators fell behind)")
        stalls = acct.get("stalls", [])
        if stalls:
            trouble.append("MACHINE STOOD STILL: " + "; ".join(map(machine.brief, stalls[:3]))
                           + (f"; {len(stalls) - 3} more" if len(stalls) > 3 else ""))
        if acct.get("load_max", 0) > 2 * acct.get("cpus", 1):
            trouble.append(f"OVERLOAD: load average {acct['load_max']:.1f} on {acct['cpus']} CPUs")
        print(("TESTBED LOSS: " + "; ".join(trouble) + f" (load average up to "
               f"{acct.get('load_max', 0):.1f} on {acct.get('cpus', '?')} CPUs): blames next to "
               "these losses are the testbed's, not faults") if trouble else
              "testbed loss: none (no switch lost a frame, no generator fell behind)")
        smallest = min(faults.values(), default=0.01)
        thin = sorted(l for l, v in links.items() if v["sent"] < enough(smallest))
        print(f"links too thin to exclude a {smallest:.2%} loss (fewer than "
              f"{math.ceil(enough(smallest))} frames): "
              + (", ".join(f"{l} ({links[l]['sent']})" for l in thin) if thin else "none"))
    else:
        thin = []
    # The bound on every link, not only "not blamed": the smallest loss the packets Canary's
    # segments through it carried could show, as the epoch reports give it.
    reported, pooled = smallest_shown(epochs)
    every = sorted(set(links) | set(most) | set(reported))
    shown = {l: reported.get(l) for l in every}
    reference = min(faults.values(), default=0.01)
    blind = sorted(l for l, q in shown.items() if q is None or q > reference)
    bounds = sorted(q for q in shown.values() if q is not None)
    print("── what Canary's evidence could show on each directed link ──")
    if bounds:
        print(f"smallest loss Canary's packets through a link show reliably over the run: median "
              f"{bounds[len(bounds) // 2]:.2%}, best {bounds[0]:.2%}, worst {bounds[-1]:.2%} "
              f"({len(bounds)} of {len(every)} links)")
    # The worst first, a few of them: every bound is in --json.
    worst = sorted(blind, key=lambda l: -(shown[l] or 2.0))[:6]
    print(f"links where a {reference:.2%} loss could pass unseen: "
          + (f"{len(blind)} of {len(every)}; the worst: " + ", ".join(
              f"{l} ({'no packets of Canary' if shown[l] is None else f'>= {shown[l]:.2%}'}"
              f"{'' if shown[l] is None else f', {pooled.get(l, 0)} packets'})" for l in worst)
             if blind else "none"))
    missed = sorted(l for l in faults if l not in final and l not in starved)
    # A link blamed in some epoch only must be explained too.
    passing = sorted(l for l in transient if not (acct and explain(l)))
    ok = not missed and not passing and (not unexplained if acct else set(final) == set(faults))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"injected": sorted(faults), "blamed": sorted(final),
                       "explained": {l: w for l, w in verdicts.items() if w},
                       "false_positives": unexplained if acct else sorted(set(final) - set(faults)),
                       "missed": missed, "too_little_traffic": starved,
                       "real_link_loss": real, "switch_loss": lossy_switches,
                       "thin_links": thin, "smallest_loss_shown": shown,
                       "blind_links": blind, "unexplained_in_some_epoch": passing,
                       "ok": ok}, f, indent=1)
    if a.check:
        print("CHECK " + ("PASSED" if ok else "FAILED") + ": "
              + ("every blame is an injected fault or measured loss, and every injected fault "
                 "with enough traffic is found" if ok else
                 f"unexplained blames {unexplained if acct else sorted(set(final) - set(faults))}, "
                 f"unexplained in some epoch {passing}, missed {missed}"))
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
