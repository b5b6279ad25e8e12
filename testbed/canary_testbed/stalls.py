"""Times the whole machine stood still under the fabric. The fabric's loop wakes every 0.2 s: a
wake-up seconds late means nothing ran, and a wall clock that jumped further than the monotonic
one means the machine itself was paused (a virtual machine snapshotted or migrated: the monotonic
clock does not count the pause). BMv2's queues overflow when it resumes, so the frames lost then
are the machine's, not the fabric's."""

import time

# Late enough to be no scheduling hiccup of a 0.2 s loop on a loaded machine.
PAUSED_S = 1.0
STALLED_S = 2.0


def stall(last, now):
    """The stall between two turns of the loop, each `(wall, monotonic)` in seconds, or None."""
    ran = now[1] - last[1]
    paused = (now[0] - last[0]) - ran
    if paused <= PAUSED_S and ran <= STALLED_S:
        return None
    return {"at": time.strftime("%H:%M:%S", time.gmtime(last[0])),
            "paused_s": round(max(paused, 0.0), 1), "stalled_s": round(ran, 1)}


def said(st):
    return (f"at {st['at']} UTC the machine was paused {st['paused_s']:.0f} s (the wall clock ran "
            f"on, the monotonic one did not) and the fabric's loop woke {st['stalled_s']:.0f} s "
            "after its last turn")


def brief(st):
    """One stall in a line of the score's testbed losses."""
    return f"at {st['at']} UTC paused {st['paused_s']:.0f} s, stalled {st['stalled_s']:.0f} s"
