"""The fabric's record of the machine standing still (canary_testbed/stalls.py)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from canary_testbed import stalls  # noqa: E402


def test_a_loop_turn_on_time_is_no_stall():
    assert stalls.stall((1000.0, 50.0), (1000.2, 50.2)) is None
    # A loaded machine wakes the loop a second late: still no stall.
    assert stalls.stall((1000.0, 50.0), (1001.5, 51.5)) is None


def test_a_paused_machine_moves_the_wall_clock_and_not_the_monotonic_one():
    # As measured on 2026-12-02: the wall clock ran 225 s, the monotonic one 14.4 s.
    st = stalls.stall((1764645888.8, 6.0), (1764646113.5, 20.4))
    assert st == {"at": "03:24:48", "paused_s": 210.3, "stalled_s": 14.4}
    assert "paused 210 s" in stalls.said(st) and "woke 14 s" in stalls.said(st)


def test_a_stall_without_a_pause_is_a_late_wake_up():
    st = stalls.stall((1000.0, 50.0), (1005.0, 55.0))
    assert st["paused_s"] == 0.0 and st["stalled_s"] == 5.0
