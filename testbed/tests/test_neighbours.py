"""The neighbour warm-up's parts that need no namespace: the ICMP checksum and the pinning."""

import json
import struct
import subprocess

from canary_testbed import neighbours


def test_the_checksum_of_an_echo_request_makes_the_whole_message_sum_to_ones():
    head = struct.pack("!BBHHH", 8, 0, 0, 0x1234, 7) + b"canary"
    c = neighbours.checksum(head)
    whole = head[:2] + struct.pack("!H", c) + head[4:]
    # RFC 1071: the one's-complement sum of a message with its checksum in place is 0xFFFF, so
    # the checksum of it is 0.
    assert neighbours.checksum(whole) == 0
    # An odd length is padded with a zero byte.
    assert neighbours.checksum(b"\x01") == neighbours.checksum(b"\x01\x00")


def test_pin_makes_each_resolved_entry_permanent_and_names_the_unresolved(monkeypatch):
    listing = [{"dst": "10.0.1.2", "dev": "h1-eth0", "lladdr": "02:00:0a:00:01:02",
                "state": ["STALE"]},
               {"dst": "fd00::2", "dev": "h1-eth0", "state": ["FAILED"]},
               {"dst": "10.0.3.2", "dev": "h1-eth0", "lladdr": "02:00:0a:00:03:02",
                "state": ["INCOMPLETE"]},
               # `ip` prints IPv6 addresses compressed; the topology spells out the zeros.
               {"dst": "fd00::5", "dev": "h1-eth0", "lladdr": "02:00:0a:00:05:02",
                "state": ["REACHABLE"]}]
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        out = json.dumps(listing) if cmd[:3] == ["ip", "-j", "neigh"] else ""
        return subprocess.CompletedProcess(cmd, 0, stdout=out, stderr="")

    monkeypatch.setattr(neighbours.subprocess, "run", fake_run)
    missing = neighbours.pin(["10.0.1.2", "fd00::2", "10.0.2.2", "10.0.3.2", "fd00:0:0:0::5"])
    # Not in the table, failed, or still being resolved: not pinned, and named.
    assert missing == ["fd00::2", "10.0.2.2", "10.0.3.2"]
    replaced = [c for c in calls if c[:3] == ["ip", "neigh", "replace"]]
    assert replaced == [["ip", "neigh", "replace", "10.0.1.2", "lladdr", "02:00:0a:00:01:02",
                         "dev", "h1-eth0", "nud", "permanent"],
                        ["ip", "neigh", "replace", "fd00:0:0:0::5", "lladdr", "02:00:0a:00:05:02",
                         "dev", "h1-eth0", "nud", "permanent"]]
