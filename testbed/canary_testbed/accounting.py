"""Where the generators' frames were lost: nftables counters at both ends of every link.

Only unicast UDP is counted: it crosses every switch once per hop (floods such as ARP are
replicated, so frames in and out of a switch would not balance). On a fabric link the frame
carries Canary's 8-byte shim (EtherType 0x88B5, the frame's own EtherType at byte 20, its IP
header from byte 22); on a host's link it is plain IPv4 or IPv6. Egress counts run in the
netfilter egress hook, before tc's egress (where faults drop), so a directed link's loss is what
its sender's egress counted less what its receiver's ingress counted, injected drops included;
a switch's loss is what its ports took in less what they sent (`balance`). A host's own link
has a counter at its switch's end only; its other end is the generator's own count, so a frame
the host sent that its switch never took in (the veth's backlog full under load), or one the
switch sent that the generator never read, is lost on the host's link (`host_links`): no
Canary monitor sits between a host and its edge switch, so Canary cannot see it.
"""

import json
import os
import subprocess

from .procs import run

TABLE = "canary_acct"


def counter(dev, direction):
    """The nftables counter of interface `dev`, direction "in" or "out"."""
    return "c_" + dev.replace("-", "_") + "_" + direction


def nft_commands(ports, intf, host_names):
    """The `nft -f` script: per switch port and direction, one counter and the rules that count
    unicast UDP into it."""
    cmds = [f"add table netdev {TABLE}"]
    for s in ports:
        for n in ports[s]:
            dev = intf(s, n)
            if n in host_names:
                matches = ["ether type ip ip protocol udp", "ether type ip6 ip6 nexthdr udp"]
            else:
                matches = ["@ll,96,16 0x88b5 @ll,160,16 0x0800 @ll,248,8 17",
                           "@ll,96,16 0x88b5 @ll,160,16 0x86dd @ll,224,8 17"]
            for hook, d in (("ingress", "in"), ("egress", "out")):
                c = counter(dev, d)
                chain = c + "_chain"
                cmds.append(f"add counter netdev {TABLE} {c}")
                cmds.append(f"add chain netdev {TABLE} {chain} {{ type filter hook {hook} "
                            f"device \"{dev}\" priority -100; }}")
                for m in matches:
                    # @ll,7,1: the group bit of the destination MAC (0: unicast).
                    cmds.append(f"add rule netdev {TABLE} {chain} @ll,7,1 0 {m} "
                                f"counter name {c}")
    return cmds


def setup(ports, intf, host_names):
    """Creates the table; raises with nft's message when it cannot."""
    script = "\n".join(nft_commands(ports, intf, host_names)) + "\n"
    p = subprocess.run(["nft", "-f", "-"], input=script, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"nft (the testbed's packet accounting): {p.stderr.strip()}")


def counts_of(nft_json):
    """Packets per counter name from `nft -j list counters`."""
    counts = {}
    for item in json.loads(nft_json).get("nftables", []):
        c = item.get("counter")
        if c:
            counts[c["name"]] = c["packets"]
    return counts


def balance(counts, links, ports, intf, injected):
    """Per directed link `sent`, `received`, `lost` and the injector's `injected` count; per
    switch `in`, `out`, `lost`; per port `in` and `out`."""
    out = {}
    for x, y in links:
        for a, b in ((x, y), (y, x)):
            sent = counts.get(counter(intf(a, b), "out"), 0)
            got = counts.get(counter(intf(b, a), "in"), 0)
            out[f"{a}->{b}"] = {"sent": sent, "received": got, "lost": sent - got,
                                "injected": injected.get(f"{a}->{b}", 0)}
    switches = {}
    for s in ports:
        took = sum(counts.get(counter(intf(s, n), "in"), 0) for n in ports[s])
        gave = sum(counts.get(counter(intf(s, n), "out"), 0) for n in ports[s])
        switches[s] = {"in": took, "out": gave, "lost": took - gave}
    per_port = {intf(s, n): {d: counts.get(counter(intf(s, n), d), 0) for d in ("in", "out")}
                for s in ports for n in ports[s]}
    return {"links": out, "switches": switches, "ports": per_port}


def host_links(counts, hosts, intf, generators):
    """Per host (`hosts`: [(host, switch)]) with the generator's own counts (`generators`:
    {host: {"sent", "received"}}): what it sent and its switch took in, what the switch sent
    it and it received, and the loss each way."""
    out = {}
    for h, s in hosts:
        g = generators.get(h)
        if g is None:
            continue
        took = counts.get(counter(intf(s, h), "in"), 0)
        gave = counts.get(counter(intf(s, h), "out"), 0)
        out[h] = {"switch": s, "sent": g["sent"], "into_switch": took,
                  "from_switch": gave, "received": g["received"],
                  "lost_on_the_way_out": g["sent"] - took,
                  "lost_on_the_way_in": gave - g["received"]}
    return out


def read(links, ports, intf, injected, load, hosts=(), generators=None, stalls=()):
    """accounting.json: the balance, the hosts' own links (`host_links`), the highest load
    average seen and the CPUs it is of, and the times the machine stood still (`stalls`)."""
    p = subprocess.run(["nft", "-j", "list", "counters", "table", "netdev", TABLE],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"nft list counters: {p.stderr.strip()}")
    counts = counts_of(p.stdout)
    doc = balance(counts, links, ports, intf, injected)
    doc["hosts"] = host_links(counts, hosts, intf, generators or {})
    doc.update({"load_max": max(load, default=0.0), "cpus": len(os.sched_getaffinity(0)),
                "stalls": list(stalls)})
    return doc


def present():
    return subprocess.run(["nft", "list", "table", "netdev", TABLE],
                          capture_output=True).returncode == 0


def remove():
    run(["nft", "delete", "table", "netdev", TABLE])
