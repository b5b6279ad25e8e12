"""The hosts' neighbour caches, filled before the generators send.

Every host reaches every other on-link (/8 and /16), so each destination is first resolved by
ARP or IPv6 neighbour discovery, flooded through the whole fabric. When all generators start at
once, 128 flows ask for 128 neighbours within milliseconds: thousands of flooded copies cross
the 20 software switches together, and BMv2 drops frames, UDP included (docs/testbed.md, "What
the harvest costs the switches": 50-60 frames in the first half second, none once the caches
were warm). And every entry resolved at once goes stale at once: about 5 s later (the kernel's
delay_first_probe_time) each host probes all its peers again with unicast ARP, which the
switches flood like any ARP, and BMv2 dropped 25-50 frames then. A data center's hosts do not
all meet their peers in the same millisecond, nor lose them together, so the testbed resolves
them beforehand, a destination every 10 ms per host, with an ICMP echo that crosses the same
fabric (ICMP is not counted by the accounting; the reply is not awaited, so a dead link costs
nothing), and then pins each entry the fabric resolved
(`nud permanent`), so that no host asks again during the run. Run as a script inside a host:

    python3 -m canary_testbed.neighbours ADDR...   exit 0 when every ADDR is resolved and pinned
"""

import ipaddress
import json
import os
import socket
import struct
import subprocess
import sys
import time

from .procs import log

SPACING_S = 0.01
# The kernel sends its second ARP or ND solicitation after 1 s (retrans_time): a request lost in
# the flood still resolves within this wait.
WAIT_S = 1.5


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def send_echo(addr, ident):
    """One echo request to `addr`: the kernel resolves its neighbour to send it. The reply is
    not awaited: an echo lost on a faulty link leaves the neighbour resolved all the same (ARP
    and ND are flooded on every link)."""
    v6 = ":" in addr
    family, proto, kind = ((socket.AF_INET6, socket.IPPROTO_ICMPV6, 128) if v6
                           else (socket.AF_INET, socket.IPPROTO_ICMP, 8))
    head = struct.pack("!BBHHH", kind, 0, 0, ident, 1)
    if not v6:  # the kernel fills in ICMPv6's checksum, not ICMP's
        head = struct.pack("!BBHHH", kind, 0, checksum(head + b"canary"), ident, 1)
    with socket.socket(family, socket.SOCK_RAW, proto) as sock:
        sock.sendto(head + b"canary", (addr, 0))


def canonical(addr):
    """One spelling per address (`ip` prints fd00::3 for fd00:0:0:0::3)."""
    return ipaddress.ip_address(addr).compressed


def table():
    """The neighbour table: address (canonical) to its entry."""
    out = subprocess.run(["ip", "-j", "neigh", "show"], check=True, capture_output=True,
                         text=True).stdout
    return {canonical(e["dst"]): e for e in json.loads(out or "[]")}


def resolved(entry):
    return entry is not None and "lladdr" in entry and not {"FAILED", "INCOMPLETE"} & set(
        entry.get("state", []))


def pin(addrs):
    """Each address's resolved entry made permanent; the addresses that had none."""
    now = table()
    missing = []
    for a in addrs:
        entry = now.get(canonical(a))
        if not resolved(entry):
            missing.append(a)
            continue
        subprocess.run(["ip", "neigh", "replace", a, "lladdr", entry["lladdr"], "dev",
                        entry["dev"], "nud", "permanent"], check=True)
    return missing


def main(addrs):
    """Exit 0 when every address is resolved and pinned; 1, naming the rest, otherwise (a link
    that drops everything can keep a flood from a peer: the traffic then learns it, or not)."""
    ident = os.getpid() & 0xFFFF
    for a in addrs:
        send_echo(a, ident)
        time.sleep(SPACING_S)
    deadline = time.time() + WAIT_S
    pending = list(addrs)
    while pending and time.time() < deadline:
        time.sleep(0.05)
        now = table()
        pending = [a for a in pending if not resolved(now.get(canonical(a)))]
    unresolved = pin(addrs)
    if unresolved:
        print("not resolved: " + " ".join(unresolved))
        return 1
    return 0


def warm(net, hosts, addr6):
    """Every host resolves and pins every other host's addresses, hosts in parallel; logs the
    addresses that stayed unresolved."""
    started = time.time()
    script = os.path.abspath(__file__)
    pkg = os.path.dirname(os.path.dirname(script))
    procs = []
    for h, _, _ in hosts:
        dests = [a for g, a, _ in hosts if g != h] + [addr6[g] for g, _, _ in hosts if g != h]
        cmd = [sys.executable, "-m", "canary_testbed.neighbours"] + dests
        procs.append((h, net[h].popen(cmd, cwd=pkg, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)))
    unresolved = 0
    for h, p in procs:
        out, _ = p.communicate(timeout=60)
        if p.returncode != 0:
            unresolved += len(out.split()) - 2
            log(f"neighbours: {h}: {out.strip()}: left to the traffic")
    n = len(hosts) * (len(hosts) - 1) * 2
    log(f"neighbours: {n - unresolved} of the hosts' {n} peer addresses resolved and pinned "
        f"in {time.time() - started:.1f} s")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
