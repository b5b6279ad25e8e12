#!/usr/bin/python3
"""A Mininet fabric of BMv2 switches for Canary: up, hold, down.

    /usr/bin/python3 testbed/fabric.py --topology TOPO.yaml --p4-json DIR/canary.json \
        --state DIR [--faults FILE] [--canary BIN] [--epochs N] [--traffic BIN] [--rate PPS] ...

Reads a normalized topology (the output of `canary topology SPEC`: every host named, with its
address), builds one Mininet host per host (its own network namespace) and one Mininet switch
node per switch (root namespace, so each switch's gRPC and Thrift ports are on the machine's
127.0.0.1), joins them with veth pairs, and starts one `simple_switch_grpc` per switch with the
flags of bmv2/run-switch.sh. It does NOT program any table: `canary run` pushes the pipeline and
installs all forwarding. It then

* configures hosts as a user leaves them: IPv4 address from the topology on a /8, IPv6 address
  (the topology's `addr6`, by default fd00:0:x:y::z for 10.x.y.z) on fd00::/16, ARP and IPv6
  neighbour discovery on (no static entries: the fabric floods ARP and ND as a switch would),
  MTU 1500; only checksum offload is off. Links between switches get MTU 9000: a frame carries
  Canary's 8-byte shim inside the fabric;
* applies the faults on the FROM switch's interface toward TO, so only that direction drops:
  `tc qdisc add dev FROM-ethN root netem loss P%`, or a classic-BPF dropper (dropper.py) where
  the kernel has no netem, for corruption (at TO's ingress) and for a share of flows. The fault
  file is read by `canary faults` (the controller's own parser): each directed link's fault and
  the faults active in each epoch 0..=--epochs, which the fabric follows as the controller's
  report reaches them;
* writes STATE/switches.yaml (gRPC, device id, Thrift, and the BMv2 port of every neighbour) for
  `canary run --switches`, STATE/pids.tsv and STATE/intfs.txt (what it started and created, for
  run.sh's last-resort clean-up), and STATE/ready when everything is up;
* starts the traffic generator (`canary traffic`) in every host unless --traffic is omitted
  (receiving at once, sending once the --traffic-trigger file appears and every host has
  resolved its peers' addresses: canary_testbed/neighbours.py);
* holds the network until SIGTERM/SIGINT, or until the process --parent names is gone; then
  stops generators (collecting their statistics in STATE/traffic/), kills every switch by its
  PID, deletes every link, and checks that none of its interfaces or processes is left.

Exit status: 0 after a clean teardown, 1 on a bad input or a failed start (after tearing down
what it had started), 3 if something was left behind.

The work is in canary_testbed/ (one module per concern); this file is the command.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

from canary_testbed.procs import alive, log
from canary_testbed.topology import InputError

try:
    import mininet.net  # noqa: F401 (checked here, used by canary_testbed.net)
except ImportError as e:  # pragma: no cover - reported to the user
    sys.exit(f"error: Mininet is not importable by {sys.executable} ({e}); run testbed/install.sh")

from canary_testbed.net import Fabric  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", required=True, help="normalized topology YAML (canary topology)")
    ap.add_argument("--p4-json", required=True, help="BMv2 JSON from bmv2/build.sh")
    ap.add_argument("--state", required=True, help="directory for switches.yaml, logs, PIDs")
    ap.add_argument("--faults", help="fault file (the controller's format); omit for none")
    ap.add_argument("--canary", help="the canary binary that resolves the fault file (`canary "
                    "faults`); default: --traffic's, or the repository's build")
    ap.add_argument("--epochs", type=int, default=1000,
                    help="epochs of the fault schedule to follow (the run's --epochs)")
    ap.add_argument("--traffic", help="the canary binary; its `traffic` subcommand runs in every host")
    ap.add_argument("--traffic-arg", action="append", default=[],
                    help="extra argument for `canary traffic` (repeatable)")
    ap.add_argument("--traffic-trigger", metavar="FILE",
                    help="generators receive at once but send only once FILE exists (run.sh "
                    "creates it when the controller has programmed the switches); default: "
                    "send 2 s after start")
    ap.add_argument("--neighbours", choices=["pinned", "learned"], default="pinned",
                    help="pinned: once the trigger appears, every host resolves its peers through "
                    "the fabric and keeps them (canary_testbed/neighbours.py) before the "
                    "generators send; learned: the traffic's own ARP and ND resolve them")
    ap.add_argument("--rate", type=float, default=100.0, help="packets/s sent by each host")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loss-method", choices=["auto", "netem", "bpf"], default="auto",
                    help="how faults drop packets: netem, a classic-BPF dropper, or netem if the "
                    "kernel has it (auto)")
    ap.add_argument("--mtu", type=int, default=1500, help="host interface MTU")
    ap.add_argument("--ipv6", type=int, default=1,
                    help="1: hosts send flows to each other's IPv6 addresses too (half of them)")
    # Below the kernel's ephemeral ports (32768-60999 here): a base inside them can collide with
    # any outgoing connection's local port (CI once found 127.0.0.1:50004 held for the run).
    ap.add_argument("--grpc-base", type=int, default=20001)
    ap.add_argument("--thrift-base", type=int, default=9091)
    ap.add_argument("--log-level", default=os.environ.get("BMV2_LOG_LEVEL", "warn"))
    ap.add_argument("--start-timeout", type=float, default=90.0)
    ap.add_argument("--parent", type=int, help="tear down when this PID is gone")
    ap.add_argument("--hold", type=float, default=0.0,
                    help="tear down after this many seconds (0: hold until signalled)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("error: the testbed needs root (network namespaces, veths, tc)")

    stop = {"sig": None}

    def on_signal(signum, _frame):
        stop["sig"] = signum

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    try:
        fabric = Fabric(args)
    except InputError as e:
        sys.exit(f"error: {e}")
    code = 0
    try:
        fabric.up()
        if args.traffic:
            fabric.start_traffic()
        with open(os.path.join(fabric.state, "ready"), "w") as f:
            f.write(f"{os.getpid()}\n")
        log(f"ready: {len(fabric.switches)} switches, {len(fabric.hosts)} hosts, "
            f"{len(fabric.links)} links, {len(fabric.faults)} faulty directed links; "
            f"{fabric.state}/switches.yaml")
        t0 = time.time()
        clocks = (time.time(), time.monotonic())
        while stop["sig"] is None:
            clocks = fabric.note_stall(clocks)
            if args.parent and not alive(args.parent):
                log(f"parent {args.parent} is gone")
                break
            if args.hold and time.time() - t0 > args.hold:
                break
            fabric.warm_when_triggered()
            fabric.follow_schedule()
            if int(time.time() * 5) % 5 == 0:
                with open("/proc/loadavg") as f:
                    fabric.load.append(float(f.read().split()[0]))
            for sw in fabric.net.switches:
                if sw.bmv2_proc.poll() is not None and sw.bmv2_pid is not None:
                    log(f"simple_switch_grpc {sw.name} died (exit {sw.bmv2_proc.returncode}); "
                        f"see {fabric.state}/logs/{sw.name}.stdout")
                    with open(os.path.join(fabric.state, "failed"), "a") as f:
                        f.write(f"switch {sw.name} died\n")
                    sw.bmv2_pid = None
            time.sleep(0.2)
        if stop["sig"] is not None:
            log(f"signal {stop['sig']}: tearing down")
    except (InputError, RuntimeError, OSError, subprocess.SubprocessError) as e:
        log(f"error: {e}")
        with open(os.path.join(fabric.state, "failed"), "a") as f:
            f.write(f"{e}\n")
        code = 1
    finally:
        # Teardown must finish even if a second signal arrives.
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        fabric.down()
    if fabric.left:
        code = 3
    sys.exit(code)


if __name__ == "__main__":
    main()
