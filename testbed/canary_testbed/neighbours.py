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
them beforehand, one destination at a time per host, with an ICMP echo that crosses the same
fabric (ICMP is not counted by the accounting), and then pins each entry the fabric resolved
(`nud permanent`), so that no host asks again during the run. Run as a script inside a host:

    python3 -m canary_testbed.neighbours ADDR...   exit 0 when every ADDR is resolved and pinned
"""

import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

from .procs import log

TRIES = 3
WAIT_S = 1.0


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def echo(addr, ident, seq):
    """One echo request to `addr`; whether its reply came within WAIT_S."""
    v6 = ":" in addr
    if v6:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        kind, reply = 128, 129  # the kernel fills in ICMPv6's checksum
        head = struct.pack("!BBHHH", kind, 0, 0, ident, seq)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        kind, reply = 8, 0
        head = struct.pack("!BBHHH", kind, 0, 0, ident, seq)
        head = struct.pack("!BBHHH", kind, 0, checksum(head + b"canary"), ident, seq)
    with sock:
        sock.sendto(head + b"canary", (addr, 0))
        deadline = time.time() + WAIT_S
        while (left := deadline - time.time()) > 0:
            if not select.select([sock], [], [], left)[0]:
                break
            data, src = sock.recvfrom(2048)
            icmp = data if v6 else data[(data[0] & 0x0F) * 4:]  # IPv4 raw sockets get the IP header
            if len(icmp) >= 8 and icmp[0] == reply and struct.unpack("!H", icmp[4:6])[0] == ident \
                    and socket.inet_pton(sock.family, src[0]) == socket.inet_pton(sock.family, addr):
                return True
    return False


def pin(addrs):
    """Each address's resolved entry made permanent; the addresses that had none."""
    missing = []
    for a in addrs:
        got = json.loads(subprocess.run(["ip", "-j", "neigh", "show", "to", a], check=True,
                                        capture_output=True, text=True).stdout or "[]")
        entry = next((e for e in got if e.get("lladdr")), None)
        if entry is None:
            missing.append(a)
            continue
        subprocess.run(["ip", "neigh", "replace", a, "lladdr", entry["lladdr"], "dev",
                        entry["dev"], "nud", "permanent"], check=True)
    return missing


def main(addrs):
    ident = os.getpid() & 0xFFFF
    silent = [a for a in addrs if not any(echo(a, ident, t) for t in range(TRIES))]
    # An echo lost on a faulty link still leaves its neighbour resolved (ARP and ND are flooded
    # on every link): what matters is the entry.
    unresolved = pin(addrs)
    if unresolved:
        print("not resolved: " + " ".join(unresolved))
        return 1
    if silent:
        print("resolved, but no echo came back from " + " ".join(silent))
    return 0


def warm(net, hosts, addr6):
    """Every host resolves and pins every other host's addresses, hosts in parallel; raises
    naming the hosts that could not resolve all of them."""
    started = time.time()
    script = os.path.abspath(__file__)
    pkg = os.path.dirname(os.path.dirname(script))
    procs = []
    for h, _, _ in hosts:
        dests = [a for g, a, _ in hosts if g != h] + [addr6[g] for g, _, _ in hosts if g != h]
        cmd = [sys.executable, "-m", "canary_testbed.neighbours"] + dests
        procs.append((h, net[h].popen(cmd, cwd=pkg, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)))
    failed = []
    for h, p in procs:
        out, _ = p.communicate(timeout=120)
        if p.returncode != 0:
            failed.append(f"{h}: {out.strip()}")
        elif out.strip():
            log(f"neighbours: {h}: {out.strip()}")
    if failed:
        raise RuntimeError("neighbour warm-up: " + "; ".join(failed))
    n = len(hosts) * (len(hosts) - 1) * 2
    log(f"neighbours: every host resolved and pinned its {n // len(hosts)} peers' addresses "
        f"({n} in all) in {time.time() - started:.1f} s")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
