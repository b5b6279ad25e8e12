"""The accounting's arithmetic: per directed link and per switch, from the port counters."""

import json

from canary_testbed import accounting
from canary_testbed.topology import intf_name, plan_ports

# h1 - s1 - m - s2 - h2
SWITCHES = [{"name": "s1", "hosts": [("h1", "10.0.1.2", "fd00::1")]},
            {"name": "s2", "hosts": [("h2", "10.0.2.2", "fd00::2")]},
            {"name": "m", "hosts": []}]
LINKS = [("s1", "m"), ("m", "s2")]
PORTS = plan_ports(SWITCHES, LINKS)


def intf(s, n):
    return intf_name(PORTS, s, n)


def c(dev, d):
    return accounting.counter(dev, d)


def counts():
    """h1 sends 100 to h2 and h2 50 to h1. s1->m drops 3, m loses 2 inside, s2->m drops 1."""
    return {
        c("s1-eth1", "in"): 100, c("s1-eth2", "out"): 100,     # s1 up
        c("m-eth1", "in"): 97, c("m-eth2", "out"): 95,         # s1->m lost 3; m lost 2
        c("s2-eth2", "in"): 95, c("s2-eth1", "out"): 95,       # m->s2 lost none
        c("s2-eth1", "in"): 50, c("s2-eth2", "out"): 50,       # s2 up
        c("m-eth2", "in"): 49, c("m-eth1", "out"): 49,         # s2->m lost 1
        c("s1-eth2", "in"): 49, c("s1-eth1", "out"): 49,
    }


def test_ports_are_hosts_first_then_links_in_file_order():
    assert PORTS == {"s1": {"h1": 1, "m": 2}, "s2": {"h2": 1, "m": 2}, "m": {"s1": 1, "s2": 2}}
    assert intf("m", "s2") == "m-eth2"


def test_each_directed_link_loses_what_its_sender_sent_less_what_its_receiver_took():
    b = accounting.balance(counts(), LINKS, PORTS, intf, {"s1->m": 4})
    assert b["links"]["s1->m"] == {"sent": 100, "received": 97, "lost": 3, "injected": 4}
    assert b["links"]["m->s1"] == {"sent": 49, "received": 49, "lost": 0, "injected": 0}
    assert b["links"]["s2->m"]["lost"] == 1
    assert b["links"]["m->s2"]["lost"] == 0
    assert b["ports"]["m-eth1"] == {"in": 97, "out": 49}


def test_each_switch_loses_what_its_ports_took_in_less_what_they_sent():
    b = accounting.balance(counts(), LINKS, PORTS, intf, {})
    assert b["switches"] == {"s1": {"in": 149, "out": 149, "lost": 0},
                             "s2": {"in": 145, "out": 145, "lost": 0},
                             "m": {"in": 146, "out": 144, "lost": 2}}


def test_the_hosts_loss_is_the_links_plus_the_switches():
    b = accounting.balance(counts(), LINKS, PORTS, intf, {})
    sent_by_hosts = 100 + 50
    received_by_hosts = 95 + 49
    on_links = sum(v["lost"] for v in b["links"].values())
    in_switches = sum(v["lost"] for v in b["switches"].values())
    assert sent_by_hosts - received_by_hosts == on_links + in_switches == 6


def test_a_hosts_own_link_loses_what_its_generator_and_its_switch_port_disagree_on():
    # h1 sent 103 of which s1 took in 100; s1 sent h1 49 of which its generator read 47.
    gens = {"h1": {"sent": 103, "received": 47}, "h2": {"sent": 50, "received": 95}}
    h = accounting.host_links(counts(), [("h1", "s1"), ("h2", "s2"), ("h3", "s2")], intf, gens)
    assert h["h1"] == {"switch": "s1", "sent": 103, "into_switch": 100, "from_switch": 49,
                       "received": 47, "lost_on_the_way_out": 3, "lost_on_the_way_in": 2}
    assert h["h2"]["lost_on_the_way_out"] == 0 and h["h2"]["lost_on_the_way_in"] == 0
    assert "h3" not in h, "a host without a generator's count is left out"


def test_a_counter_nft_never_reported_counts_zero():
    b = accounting.balance({}, LINKS, PORTS, intf, {})
    assert all(v == {"sent": 0, "received": 0, "lost": 0, "injected": 0}
               for v in b["links"].values())


def test_counts_come_from_nfts_json():
    text = json.dumps({"nftables": [{"metainfo": {"version": "1.0.6"}},
                                    {"counter": {"family": "netdev", "name": "c_s1_eth1_in",
                                                 "table": "canary_acct", "packets": 7,
                                                 "bytes": 700}}]})
    assert accounting.counts_of(text) == {"c_s1_eth1_in": 7}


def test_hosts_links_count_plain_udp_and_fabric_links_look_behind_the_shim():
    cmds = accounting.nft_commands(PORTS, intf, {"h1", "h2"})
    assert cmds[0] == "add table netdev canary_acct"
    host_rules = [x for x in cmds if "c_s1_eth1_in_chain" in x and x.startswith("add rule")]
    assert [r.split(" @ll,7,1 0 ")[1] for r in host_rules] == [
        "ether type ip ip protocol udp counter name c_s1_eth1_in",
        "ether type ip6 ip6 nexthdr udp counter name c_s1_eth1_in"]
    fabric = [x for x in cmds if "c_m_eth1_out_chain" in x]
    assert 'hook egress device "m-eth1" priority -100;' in fabric[0]
    assert any("@ll,96,16 0x88b5 @ll,160,16 0x0800 @ll,248,8 17" in r for r in fabric)
    assert any("@ll,96,16 0x88b5 @ll,160,16 0x86dd @ll,224,8 17" in r for r in fabric)
    # One counter per port and direction: 6 ports.
    assert sum(x.startswith("add counter") for x in cmds) == 12
