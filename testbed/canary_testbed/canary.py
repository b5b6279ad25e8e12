"""What `canary` resolves for the testbed, read as JSON: nothing here parses a fault file or
evaluates a schedule or a decision statistic.

* `canary faults --topology T --faults F --epochs N --json`: every directed link's fault, its
  schedule, the faults active in each epoch 0..=N, and links out of service;
* `canary decision --query -`: whether counts cross the decision, packets needed to show a
  loss, a healthy segment's loss p0, with the controller's own defaults.
"""

import json
import os
import shutil
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CanaryError(Exception):
    """`canary` refused (its message names the file and field) or could not be run."""


def find(given=None):
    """The canary binary: `given`, $CANARY_BIN, the newest build of this repository (under
    $CARGO_TARGET_DIR or target/) that has the testbed's subcommands, or `canary` on PATH."""
    if given:
        return given
    if os.environ.get("CANARY_BIN"):
        return os.environ["CANARY_BIN"]
    roots = [os.environ.get("CARGO_TARGET_DIR"), os.path.join(REPO, "target")]
    built = [os.path.join(r, p, "canary") for r in roots if r for p in ("debug", "release")]
    built = sorted((b for b in built if os.access(b, os.X_OK)), key=os.path.getmtime,
                   reverse=True)
    on_path = shutil.which("canary")
    for b in built + ([on_path] if on_path else []):
        # A build older than `canary decision` would fail later, and less clearly.
        if subprocess.run([b, "decision"], capture_output=True).returncode == 0:
            return b
    raise CanaryError("no canary binary with `canary faults` and `canary decision`: give "
                      "--canary BIN, set CANARY_BIN, or `cargo build -p canary`")


def call(binary, args, stdin=None):
    try:
        p = subprocess.run([binary] + args, input=stdin, capture_output=True, text=True)
    except OSError as e:
        raise CanaryError(f"{binary}: {e}")
    if p.returncode != 0:
        msg = p.stderr.strip()
        raise CanaryError(msg[len("Error: "):] if msg.startswith("Error: ") else msg)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise CanaryError(f"{binary} {' '.join(args)}: not JSON ({e})")


def faults(binary, topology, path, epochs):
    """The fault file `path` resolved against `topology`, active sets for epochs 0..=epochs."""
    return call(binary, ["faults", "--topology", topology, "--faults", path,
                         "--epochs", str(epochs), "--json"])


def decision(binary, segments, links=0, declares=(), pooled=(), needed=(), p0=()):
    """The decision's answers for a fabric of `segments` segments crossing `links` links:
    `declares` [(sent, lost, links)], `pooled` [[(sent, lost, links)]] (one link's segments
    tested together), `needed` [(loss, links)], `p0` [links]; lists in the same order, `needed`
    None where no count would show the loss."""
    seg = lambda s, l, n: {"sent": s, "lost": l, "links": n}  # noqa: E731
    query = {"segments": segments,
             "links": links,
             "declares": [seg(*d) for d in declares],
             "pooled": [[seg(*d) for d in p] for p in pooled],
             "needed": [{"loss": q, "links": n} for q, n in needed],
             "p0": list(p0)}
    return call(binary, ["decision", "--query", "-"], stdin=json.dumps(query))
