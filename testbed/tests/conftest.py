"""The testbed's unit tests: no root, no Mininet, no BMv2. `python3 -m pytest testbed`.

The tests that ask `canary` (faults, decision) use $CANARY_BIN, else the repository's newest
build, else build it with cargo; without either they are skipped."""

import os
import subprocess
import sys

import pytest

TESTBED = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TESTBED)
sys.path.insert(0, TESTBED)

from canary_testbed import canary  # noqa: E402


@pytest.fixture(scope="session")
def canary_bin():
    try:
        return canary.find()
    except canary.CanaryError:
        pass
    if subprocess.run(["cargo", "--version"], capture_output=True).returncode != 0:
        pytest.skip("no canary binary with `decision` and no cargo to build one")
    subprocess.run(["cargo", "build", "-q", "-p", "canary"], cwd=REPO, check=True)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
    return os.path.join(target, "debug", "canary")


@pytest.fixture
def topo_file(tmp_path):
    """A normalized topology file: two ToRs (one host each) under one aggregation switch."""
    path = tmp_path / "topo.yaml"
    path.write_text("name: tiny\nswitches:\n"
                    "  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n"
                    "  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\n"
                    "  - {name: m, layer: 1}\n"
                    "links:\n  - [s1, m]\n  - [m, s2]\n")
    return str(path)
