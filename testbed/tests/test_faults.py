"""The faults as the fabric takes them from `canary faults`: which drop in which epoch, when a
scheduled one goes on and off, and what a bad file says."""

import os

import pytest

from canary_testbed import faults
from canary_testbed.topology import InputError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def doc(*entries, epochs=None, scheduled=True, oos=()):
    fs = [{"link": list(l), "loss": loss, "flows": 1.0, "corruption": False, "device": None,
           "when": {"from": 0, "until": None, "flap": None}} for l, loss in entries]
    return {"faults": fs, "out_of_service": [{"link": list(l), "when": w} for l, w in oos],
            "epochs": [{"epoch": e, "active": a} for e, a in enumerate(epochs or [])],
            "scheduled": scheduled}


def test_a_fault_is_due_in_the_epochs_canary_lists_and_after_the_table_as_in_its_last():
    s = faults.Schedule(doc((("a", "b"), 0.1), (("b", "a"), 0.2), epochs=[[0], [0, 1], [1]]))
    a, b = s.faults
    assert [s.due(a, e) for e in range(5)] == [True, True, False, False, False]
    assert [s.due(b, e) for e in range(5)] == [False, True, True, True, True]


def test_changes_turn_faults_on_and_off_once():
    s = faults.Schedule(doc((("a", "b"), 0.1), (("c", "d"), 0.1), epochs=[[1], [0, 1], [1]]))
    on = {("c", "d")}
    ch = faults.changes(s, on, 1)
    assert [(f.x, c) for f, c in ch] == [("a", "on_in_epoch")]
    assert [(f.x, c) for f, c in faults.changes(s, {("a", "b"), ("c", "d")}, 2)] == [
        ("a", "off_in_epoch")]
    assert faults.changes(s, {("c", "d")}, 2) == []


def test_a_link_twice_and_a_flapping_link_out_of_service_are_refused():
    with pytest.raises(InputError, match=r"F: link \[a, b\] is given twice"):
        faults.Schedule(doc((("a", "b"), 0.1), (("a", "b"), 0.2)), "F")
    flap = {"from": 0, "until": None, "flap": {"period": 4, "on": 2}}
    with pytest.raises(InputError, match=r"F: out_of_service \[a, b\]: .*not flapping"):
        faults.Schedule(doc(oos=[(("a", "b"), flap)]), "F")


def test_links_out_of_service_drop_nothing_and_go_to_canary_run_as_it_reads_them(
        canary_bin, tmp_path):
    topo = tmp_path / "k4.yaml"
    with open(topo, "w") as f:
        import subprocess
        subprocess.run([canary_bin, "topology", "fattree:4"], stdout=f, check=True)
    path = os.path.join(REPO, "testbed/faults/k4-out-of-service.yaml")
    s = faults.load(path, str(topo), canary_bin, 12)
    assert s.faults == []
    assert sorted(s.out_of_service) == [("agg1_0", "core0", 4, 9), ("core0", "agg1_0", 4, 9)]
    # What fabric.py writes for `canary run --out-of-service`, resolved by canary again.
    again = tmp_path / "oos.yaml"
    again.write_text(s.maintenance_yaml())
    assert s.maintenance_yaml().count("out_of_service: true") == 1
    assert faults.load(str(again), str(topo), canary_bin, 12).out_of_service == s.out_of_service
    assert faults.Schedule({}).maintenance_yaml() is None


def test_no_fault_file_is_no_fault():
    s = faults.load(None, "topo.yaml", "canary", 10)
    assert s.faults == [] and not s.scheduled


def test_canary_resolves_the_file_and_the_fabric_follows_its_epochs(canary_bin, tmp_path):
    topo = tmp_path / "k4.yaml"
    with open(topo, "w") as f:
        import subprocess
        subprocess.run([canary_bin, "topology", "fattree:4"], stdout=f, check=True)
    path = os.path.join(REPO, "testbed/faults/k4-from-5-until-15.yaml")
    s = faults.load(path, str(topo), canary_bin, 25)
    (f,) = s.faults
    assert (f.x, f.y, f.loss, f.start, f.until, f.period) == ("edge1_0", "agg1_1", 0.1, 5, 15, None)
    assert s.scheduled
    # The fabric's loop: after epoch N-1 is reported, the faults of epoch N (fault_schedule.json
    # of the testbed test fattree4_a_fault_from_epoch_5_to_15: on in 5, off in 15).
    on, events = set(), []
    for reported in range(25):
        for g, change in faults.changes(s, on, reported + 1):
            (on.add if change == "on_in_epoch" else on.discard)((g.x, g.y))
            events.append((change, reported + 1))
    assert events == [("on_in_epoch", 5), ("off_in_epoch", 15)]


def test_every_fault_file_of_the_testbed_resolves(canary_bin, tmp_path):
    topo = tmp_path / "k4.yaml"
    import subprocess
    topo.write_text(subprocess.run([canary_bin, "topology", "fattree:4"], capture_output=True,
                                   text=True, check=True).stdout)
    line2 = tmp_path / "line2.yaml"
    line2.write_text(subprocess.run([canary_bin, "topology",
                                     os.path.join(REPO, "topologies/line2.yaml")],
                                    capture_output=True, text=True, check=True).stdout)
    shapes = {}
    for name in sorted(os.listdir(os.path.join(REPO, "testbed/faults"))):
        t = line2 if name.startswith("line2") else topo
        s = faults.load(os.path.join(REPO, "testbed/faults", name), str(t), canary_bin, 10)
        assert s.faults or s.out_of_service, name
        shapes[name] = [(f.x, f.y, f.flows) for f in s.faults]
    assert shapes["k4-half-the-flows.yaml"] == [("edge1_0", "agg1_1", 0.5)]
    assert ("core0", "agg1_0", 1.0) in shapes["k4-three-links.yaml"]  # both_directions


def test_a_bad_fault_file_names_the_file_and_field(canary_bin, tmp_path, topo_file):
    bad = tmp_path / "bad.yaml"
    bad.write_text("faults:\n  - {link: [s1, s9], loss: 0.1}\n")
    with pytest.raises(InputError) as e:
        faults.load(str(bad), topo_file, canary_bin, 3)
    assert str(e.value) == f"{bad}: faults[0].link: unknown switch `s9`"


def test_a_device_a_flap_and_corruption_resolve_per_directed_link(canary_bin, tmp_path,
                                                                  topo_file):
    f = tmp_path / "f.yaml"
    f.write_text("faults:\n"
                 "  - {device: m, loss: 0.05, period: 4, duty: 0.5}\n"
                 "  - {link: [s1, m], loss: 0.1, corruption: true, from_epoch: 2}\n")
    s = faults.load(str(f), topo_file, canary_bin, 6)
    assert [(g.x, g.y, g.period, g.on, g.corrupt) for g in s.faults] == [
        ("m", "s1", 4, 2, False), ("m", "s2", 4, 2, False), ("s1", "m", None, 0, True)]
    assert [[s.due(g, e) for e in range(7)] for g in s.faults] == [
        [True, True, False, False, True, True, False]] * 2 + [
        [False, False, True, True, True, True, True]]


def test_drop_counts_are_summed_over_tcs_qdiscs():
    text = ("qdisc noqueue 0: root refcnt 2\n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 "
            "requeues 0)\nqdisc clsact ffff: parent ffff:fff1\n Sent 5180 bytes 61 pkt "
            "(dropped 7, overlimits 0 requeues 0)\n")
    assert faults.qdisc_dropped(text) == 7


def test_the_dropper_a_fault_gets():
    plain = faults.Fault(0, "a", "b", 0.1)
    share = plain._replace(flows=0.5)
    assert faults.program(plain) == faults.dropper.random_drop(0.1)
    assert faults.program(share) == faults.dropper.flow_share_drop(
        0.1, 0.5, faults.dropper.link_seed("a", "b"))
    assert not faults.filtered(plain) and faults.filtered(share)
    assert faults.filtered(plain._replace(corrupt=True))
