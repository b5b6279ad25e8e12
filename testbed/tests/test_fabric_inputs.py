"""What the fabric reads before it starts anything: the topology, the hosts' addresses, the
traffic summary, and a bad fault file refused before anything is recorded (Mininet stubbed)."""

import argparse
import os
import sys
import types

import pytest

from canary_testbed import topology, traffic
from canary_testbed.topology import InputError


def test_a_normalized_topology_gives_switches_hosts_and_links(topo_file):
    switches, links = topology.load_topology(topo_file)
    assert [s["name"] for s in switches] == ["s1", "s2", "m"]
    assert switches[0]["hosts"] == [("h1", "10.0.1.2", "fd00:0:0:1::2")]
    assert links == [("s1", "m"), ("m", "s2")]


def test_a_topology_error_names_the_file_and_field(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("switches:\n  - {name: s1, hosts: [{name: h1, addr: 192.168.0.1}]}\n"
                   "links: []\n")
    with pytest.raises(InputError, match=r"t.yaml: switches\[0\].hosts\[0\].addr: 192.168.0.1"):
        topology.load_topology(str(bad))
    bad.write_text("switches:\n  - {name: s1}\nlinks:\n  - [s1, s2]\n")
    with pytest.raises(InputError, match=r"links\[0\]: unknown switch `s2`"):
        topology.load_topology(str(bad))


def test_addresses_the_hosts_get():
    assert topology.default_ipv6("10.1.20.3") == "fd00:0:1:14::3"
    assert topology.host_mac("10.1.20.3") == "02:00:0a:01:14:03"


def test_the_traffic_summary_names_the_lossiest_pairs():
    stats = {
        "h1": {"me": "10.0.1.2", "addrs": ["10.0.1.2", "fd00::1"], "sent": 30, "received": 18,
               "late": 1, "send_errors": 0, "sent_v6": 10, "received_v6": 8,
               "sent_to": {"10.0.2.2": 20, "fd00::2": 10},
               "received_from": {"10.0.2.2": 10, "fd00::2": 8}},
        "h2": {"me": "10.0.2.2", "addrs": ["10.0.2.2", "fd00::2"], "sent": 18, "received": 27,
               "late": 0, "send_errors": 2, "sent_v6": 8, "received_v6": 9,
               "sent_to": {"10.0.1.2": 10, "fd00::1": 8},
               "received_from": {"10.0.1.2": 18, "fd00::1": 9}},
    }
    s = traffic.summarize(stats)
    assert (s["sent"], s["received"], s["lost"], s["late"], s["send_errors"]) == (48, 45, 3, 1, 2)
    assert s["lossy_pairs"] == [{"src": "10.0.1.2", "dst": "10.0.2.2", "sent": 20, "lost": 2},
                                {"src": "fd00::1", "dst": "fd00::2", "sent": 10, "lost": 1}]


@pytest.fixture
def stub_mininet(monkeypatch):
    """Enough of Mininet for canary_testbed.net to import; nothing of it runs here."""
    names = {"mininet": {}, "mininet.log": {"setLogLevel": lambda *_: None},
             "mininet.net": {"Mininet": object}, "mininet.node": {"Switch": object}}
    for name, attrs in names.items():
        monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**attrs))
    for mod in ("canary_testbed.net", "canary_testbed.switch"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    import canary_testbed.net
    return canary_testbed.net


def test_a_bad_fault_file_stops_the_fabric_before_it_records_anything(
        stub_mininet, canary_bin, tmp_path, topo_file):
    bad = tmp_path / "bad.yaml"
    bad.write_text("faults:\n  - {link: [s1, s9], loss: 0.1}\n")
    state = tmp_path / "state"
    args = argparse.Namespace(state=str(state), topology=topo_file, faults=str(bad),
                              canary=canary_bin, traffic=None, epochs=5, loss_method="auto")
    with pytest.raises(InputError, match=r"bad.yaml: faults\[0\].link: unknown switch `s9`"):
        stub_mininet.Fabric(args)
    assert not os.path.exists(state / "pids.tsv")
    # A good one: the faults and the interfaces they drop on.
    good = tmp_path / "good.yaml"
    good.write_text("faults:\n  - {link: [m, s2], loss: 0.1, flows: 0.5}\n")
    args.faults = str(good)
    fabric = stub_mininet.Fabric(args)
    (f,) = fabric.faults
    assert fabric.injector.dev(f) == "m-eth2"
    assert fabric.injector.method_of(f) == "bpf (share 0.5 of flows)"
    assert os.path.exists(state / "pids.tsv")
