"""The hosts' traffic generators (`canary traffic`) and the summary of what they counted."""

import json
import os
import signal
import subprocess
import time

from .procs import log, stop_pid


def start(net, hosts, addr6, state, rec, a):
    """One generator per host, receiving at once and sending when `warm_file(a.traffic_trigger)`
    appears (the fabric writes it once the hosts' neighbour caches are filled); returns
    [(host, Popen)]."""
    addrs = [addr for _, addr, _ in hosts]
    if a.ipv6:
        addrs += [addr6[h] for h, _, _ in hosts]
    generators = []
    for k, (h, addr, _) in enumerate(hosts):
        stats = os.path.join(state, "traffic", f"{h}.json")
        me = f"{addr},{addr6[h]}"
        cmd = [a.traffic, "traffic", "--me", me, "--dests", ",".join(addrs), "--rate", str(a.rate),
               "--seed", str(a.seed * 1000 + k), "--stats", stats]
        if a.traffic_trigger:
            # Receivers up now; senders wait for the trigger file (hosts share our filesystem).
            cmd += ["--start-file", warm_file(a.traffic_trigger), "--start-delay-ms", "0"]
        cmd += a.traffic_arg
        out = open(os.path.join(state, "traffic", f"{h}.log"), "w")
        p = net[h].popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        rec.pid("traffic", h, p.pid, os.path.basename(a.traffic))
        generators.append((h, p))
    log(f"traffic: {len(generators)} generators, {a.rate} packets/s each")
    return generators


def warm_file(trigger):
    """The file the generators wait for: the trigger's, once the neighbours are resolved."""
    return os.path.abspath(trigger) + ".warm"


def stop(generators, state):
    """SIGTERM every generator at once (senders stop, receivers drain), wait, then write
    STATE/traffic/summary.json."""
    for _, p in generators:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.time() + 10
    for h, p in generators:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            stop_pid(p.pid, f"traffic {h}", timeout=1)
    stats = {}
    for h, _ in generators:
        try:
            with open(os.path.join(state, "traffic", f"{h}.json")) as f:
                stats[h] = json.load(f)
        except (OSError, ValueError):
            log(f"traffic {h}: no statistics (see {state}/traffic/{h}.log)")
    if not generators:
        return
    summary = summarize(stats)
    with open(os.path.join(state, "traffic", "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    sent, lost, pairs = summary["sent"], summary["lost"], summary["lossy_pairs"]
    log(f"traffic: {sent} packets sent ({summary['sent_v6']} IPv6), {summary['received']} "
        f"received by the hosts ({summary['received_v6']} IPv6), "
        f"{lost} lost ({100.0 * lost / max(sent, 1):.3f} %), {summary['send_errors']} send "
        f"errors, {summary['late']} sent late; lossiest host pairs: " +
        (", ".join(f"{p['src']}->{p['dst']} {p['lost']}/{p['sent']}" for p in pairs[:4])
         or "none"))


def counts(generators, state):
    """{host: {"sent", "received"}} from each stopped generator's statistics."""
    out = {}
    for h, _ in generators:
        try:
            with open(os.path.join(state, "traffic", f"{h}.json")) as f:
                st = json.load(f)
            out[h] = {"sent": st["sent"], "received": st["received"]}
        except (OSError, ValueError, KeyError):
            pass
    return out


def summarize(stats):
    """The hosts' totals from each generator's statistics ({host: stats}), and every host pair
    that lost packets, the lossiest first."""
    sent = sum(st["sent"] for st in stats.values())
    received = sum(st["received"] for st in stats.values())
    by_addr = {addr: st for st in stats.values() for addr in st.get("addrs", [st["me"]])}
    pairs = []  # (lost, src, dst, sent)
    for st in stats.values():
        for dst, n in st.get("sent_to", {}).items():
            # The receiver knows the sender by its address of the destination's family.
            v6 = ":" in dst
            src = next((x for x in st.get("addrs", [st["me"]]) if (":" in x) == v6), st["me"])
            got = by_addr.get(dst, {}).get("received_from", {}).get(src, 0)
            if got < n:
                pairs.append((n - got, src, dst, n))
    pairs.sort(reverse=True)
    lost = sent - received
    return {"sent": sent, "received": received, "lost": lost,
            "sent_v6": sum(st.get("sent_v6", 0) for st in stats.values()),
            "received_v6": sum(st.get("received_v6", 0) for st in stats.values()),
            "loss": lost / max(sent, 1), "late": sum(st["late"] for st in stats.values()),
            "send_errors": sum(st["send_errors"] for st in stats.values()),
            "lossy_pairs": [{"src": s, "dst": d, "sent": n, "lost": l} for l, s, d, n in pairs]}
