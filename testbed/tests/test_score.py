"""score.py on hand-made run and accounting documents (no fabric), as the Rust test
`score_tells_a_fault_that_lost_nothing_from_a_miss` does."""

import json
import os
import subprocess
import sys

SCORE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "score.py")


def run_doc(blamed=(), coverage=(), faults=(("agg0_0", "core1", 0.01),), epochs_blamed=()):
    b = [{"link": list(l), "loss": est} for l, est in blamed]
    return {
        "faults": [{"link": [x, y], "loss": loss} for x, y, loss in faults],
        "epochs": [{"epoch": 1, "blamed": [{"link": list(l), "loss": 0.1}
                                           for l in epochs_blamed] or b,
                    "segments_total": 100}],
        "summary": {"blamed": b, "precision": 1.0, "recall": 0.0, "f1": 0.0,
                    "tp": 0, "fp": 0, "fn": 1,
                    "coverage": [{"segment": s, "sent": n, "lost": l} for s, n, l in coverage]},
    }


def acct_doc(links, switches=None):
    return {"links": {k: {"sent": s, "received": s - l, "lost": l, "injected": l}
                      for k, (s, l) in links.items()},
            "switches": {k: {"in": 100, "out": 100 - v, "lost": v}
                         for k, v in (switches or {}).items()},
            "load_max": 1.0, "cpus": 2}


def score(tmp_path, run, acct, canary_bin):
    (tmp_path / "run.json").write_text(json.dumps(run))
    args = [sys.executable, SCORE, str(tmp_path / "run.json"), "--json",
            str(tmp_path / "verdict.json"), "--check", "--canary", canary_bin]
    if acct is not None:
        (tmp_path / "acct.json").write_text(json.dumps(acct))
        args += ["--accounting", str(tmp_path / "acct.json")]
    p = subprocess.run(args, capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    return p.stdout, json.loads((tmp_path / "verdict.json").read_text()), p.returncode == 0


SEGMENT = ["edge0_0", "agg0_0", "core1", "agg2_0"]


def test_a_fault_that_lost_none_of_the_generators_frames_left_nothing_to_find(tmp_path,
                                                                               canary_bin):
    said, v, ok = score(tmp_path, run_doc(coverage=[(SEGMENT, 1000, 0)]),
                        acct_doc({"agg0_0->core1": (544, 0)}), canary_bin)
    assert ok, said
    assert "nothing to find: it lost 0 of the generators' 544" in said
    assert v["missed"] == [] and v["too_little_traffic"] == ["agg0_0->core1"]


def test_a_fault_whose_loss_canary_counted_and_did_not_blame_is_a_miss(tmp_path, canary_bin):
    said, v, ok = score(tmp_path, run_doc(coverage=[(SEGMENT, 1000, 100)]),
                        acct_doc({"agg0_0->core1": (544, 60)}), canary_bin)
    assert not ok, said
    assert v["missed"] == ["agg0_0->core1"]
    assert "CHECK FAILED" in said


def test_too_few_of_canarys_packets_is_too_little_evidence_with_the_count_canary_needs(
        tmp_path, canary_bin):
    # 1 % really lost; one segment of 300 packets; telling 1 % from the background of a
    # two-link segment with 100 segments' false alarms takes 628 (canary decision).
    said, v, ok = score(tmp_path, run_doc(coverage=[(SEGMENT, 300, 3)]),
                        acct_doc({"agg0_0->core1": (1000, 10)}), canary_bin)
    assert ok, said
    assert "segments through it carried 300 packets together" in said
    assert "takes about 628" in said
    assert v["too_little_traffic"] == ["agg0_0->core1"]


def test_a_links_segments_are_counted_together(tmp_path, canary_bin):
    # Two segments through the link, 400 packets and 4 lost each: neither is beyond the
    # background alone, together they are (canary decision's pooled test), and 800 packets are
    # more than the 628 a 1 % loss needs. Not blamed, it is a miss, not too little evidence.
    other = ["edge0_1", "agg0_0", "core1", "agg3_0"]
    said, v, ok = score(tmp_path, run_doc(coverage=[(SEGMENT, 400, 4), (other, 400, 4)]),
                        acct_doc({"agg0_0->core1": (1000, 10)}), canary_bin)
    assert not ok, said
    assert v["missed"] == ["agg0_0->core1"], said
    assert v["too_little_traffic"] == [], said


def test_a_found_fault_and_a_blame_next_to_a_switch_that_lost_frames(tmp_path, canary_bin):
    run = run_doc(blamed=[(("agg0_0", "core1"), 0.011), (("core1", "agg2_0"), 0.004)],
                  coverage=[(SEGMENT, 1000, 11)])
    acct = acct_doc({"agg0_0->core1": (1000, 10), "core1->agg2_0": (990, 0)}, {"agg2_0": 4})
    said, v, ok = score(tmp_path, run, acct, canary_bin)
    assert ok, said
    assert v["explained"] == {"core1->agg2_0": "switch loss at agg2_0 (4 frames)"}
    assert v["false_positives"] == [] and v["missed"] == []
    assert "inside switches 4" in said


def test_a_switch_that_lost_too_few_frames_does_not_explain_a_heavy_blame(tmp_path, canary_bin):
    # A 5 % blame on a link of 990 frames over one epoch claims about 50 lost frames; the 4 its
    # end switch lost cannot carry it.
    run = run_doc(blamed=[(("agg0_0", "core1"), 0.011), (("core1", "agg2_0"), 0.05)],
                  coverage=[(SEGMENT, 1000, 11)])
    acct = acct_doc({"agg0_0->core1": (1000, 10), "core1->agg2_0": (990, 0)}, {"agg2_0": 4})
    said, v, ok = score(tmp_path, run, acct, canary_bin)
    assert not ok, said
    assert v["false_positives"] == ["core1->agg2_0"], said
    assert "4 lost inside agg2_0: less than half the 50 frames its blames claim" in said


def test_a_transient_blame_is_weighed_by_its_own_epochs(tmp_path, canary_bin):
    # Blamed at 10 % in one epoch of two (0.1 x 990 / 2 = 50 frames claimed): a switch that lost
    # 30 explains it, one that lost 20 does not.
    run = run_doc(blamed=[(("agg0_0", "core1"), 0.011)], coverage=[(SEGMENT, 1000, 11)])
    run["epochs"].append({"epoch": 2, "blamed": [{"link": ["agg0_0", "core1"], "loss": 0.011},
                                                 {"link": ["core1", "agg2_0"], "loss": 0.1}],
                          "segments_total": 100})
    for lost, passes in ((30, True), (20, False)):
        acct = acct_doc({"agg0_0->core1": (1000, 10), "core1->agg2_0": (990, 0)},
                        {"agg2_0": lost})
        said, v, ok = score(tmp_path, run, acct, canary_bin)
        assert ok == passes, said
        assert v["unexplained_in_some_epoch"] == ([] if passes else ["core1->agg2_0"]), said


def test_a_blame_where_nothing_was_lost_is_a_false_positive(tmp_path, canary_bin):
    run = run_doc(blamed=[(("agg0_0", "core1"), 0.011), (("core1", "agg2_0"), 0.004)],
                  coverage=[(SEGMENT, 1000, 11)])
    acct = acct_doc({"agg0_0->core1": (1000, 10), "core1->agg2_0": (990, 0)})
    said, v, ok = score(tmp_path, run, acct, canary_bin)
    assert not ok, said
    assert v["false_positives"] == ["core1->agg2_0"]
    assert "FALSE POSITIVE" in said


def test_without_accounting_the_verdict_is_against_the_injected_faults(tmp_path, canary_bin):
    said, v, ok = score(tmp_path, run_doc(blamed=[(("agg0_0", "core1"), 0.01)]), None,
                        canary_bin)
    assert ok, said
    assert v["blamed"] == ["agg0_0->core1"]


def test_a_healthy_run_needs_no_canary(tmp_path):
    said, v, ok = score(tmp_path, run_doc(faults=()), acct_doc({}), "/nonexistent/canary")
    assert ok, said
    assert "(no injected fault)" in said


def test_a_machine_that_stood_still_is_named_as_the_testbeds_loss(tmp_path):
    acct = acct_doc({}, {"edge1_1": 241})
    acct["stalls"] = [{"at": "03:24:48", "paused_s": 210.3, "stalled_s": 14.4}]
    said, _, _ = score(tmp_path, run_doc(faults=()), acct, "/nonexistent/canary")
    assert "TESTBED LOSS: 1 switches dropped 241 frames themselves; MACHINE STOOD STILL: at " \
        "03:24:48 UTC paused 210 s, stalled 14 s" in said, said


def test_evidence_maps_give_each_links_smallest_loss_shown():
    sys.path.insert(0, os.path.dirname(SCORE))
    import score as s
    epochs = [{"evidence_map": {"links": [{"link": ["a", "b"], "min_loss": 0.05, "packets": 90},
                                          {"link": ["b", "a"], "min_loss": 1.0, "packets": 1}],
                                "unwatched": [["c", "d"]]}},
              {"evidence_map": {"links": [{"link": ["a", "b"], "min_loss": 0.02,
                                           "packets": 300}]}}]
    shown, packets = s.smallest_shown(epochs)
    assert shown == {"a->b": 0.02, "b->a": None, "c->d": None}
    assert packets == {"a->b": 300}
    assert round(s.enough(0.01)) == 298
    assert s.at_most(0, 10, 0.5) == 0.5 ** 10


def test_a_link_that_lost_most_of_its_frames_is_a_miss_never_too_little_evidence(tmp_path,
                                                                                  canary_bin):
    # A blackhole before any flow was selected through it: Canary counted nothing there, and
    # the 653 frames that vanished are the evidence it missed.
    said, v, ok = score(tmp_path, run_doc(faults=(("agg0_0", "core1", 1.0),)),
                        acct_doc({"agg0_0->core1": (654, 653)}), canary_bin)
    assert not ok, said
    assert v["missed"] == ["agg0_0->core1"], said
    assert "too little" not in said, said
    assert "the frames that vanished are the evidence" in said, said
