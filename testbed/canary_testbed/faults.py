"""The faults as `canary faults` resolves them, and the injectors that enact them.

A fault drops on the FROM switch's interface toward TO (or, for corruption, at TO's ingress),
with `tc netem` where the kernel has it and a classic-BPF dropper (dropper.py) otherwise, for
corruption and for a share of flows. Which faults drop in which epoch is Canary's table
(`Schedule`): this module evaluates no schedule itself.
"""

import json
import os
import subprocess
import time
import typing

import dropper

from . import canary
from .procs import log, run
from .topology import InputError


class Fault(typing.NamedTuple):
    """One directed faulty link: X drops toward Y (or, for corruption, Y drops what X sent)."""
    i: int  # its index in Canary's list, which the per-epoch table names
    x: str
    y: str
    loss: float
    start: int = 0
    until: typing.Optional[int] = None
    period: typing.Optional[int] = None
    on: int = 0
    corrupt: bool = False
    flows: float = 1.0


class Schedule:
    """The faults of a resolved document and the ones active in each epoch. Epochs past the
    table (0..=--epochs) keep its last epoch's set: the run is over by then."""

    def __init__(self, doc, path="faults"):
        self.faults = []
        seen = set()
        for i, f in enumerate(doc.get("faults", [])):
            x, y = f["link"]
            if (x, y) in seen:
                raise InputError(f"{path}: link [{x}, {y}] is given twice (the testbed drops "
                                 "with one fault per directed link)")
            seen.add((x, y))
            w = f["when"]
            flap = w.get("flap") or {}
            self.faults.append(Fault(i, x, y, float(f["loss"]), w.get("from", 0), w.get("until"),
                                     flap.get("period"), flap.get("on", 0),
                                     bool(f.get("corruption")), float(f.get("flows", 1.0))))
        # Links taken out of service are not faults: `canary run --out-of-service` reroutes
        # around them in the forwarding it owns (maintenance_yaml), and nothing here drops.
        self.out_of_service = []
        for o in doc.get("out_of_service", []):
            x, y = o["link"]
            w = o["when"]
            if w.get("flap"):
                raise InputError(f"{path}: out_of_service [{x}, {y}]: the testbed takes a link "
                                 "out of service once (from_epoch, until_epoch), not flapping")
            self.out_of_service.append((x, y, w.get("from", 0), w.get("until")))
        self.table = [set(e["active"]) for e in doc.get("epochs", [])] or [
            set(range(len(self.faults)))]
        self.scheduled = bool(doc.get("scheduled", False))

    def maintenance_yaml(self):
        """The links out of service as `canary run --out-of-service` reads them (the fault
        file's syntax); None when there are none."""
        if not self.out_of_service:
            return None
        lines, seen = ["faults:"], set()
        for x, y, start, until in self.out_of_service:
            # Canary lists both directions; an entry takes the whole link out.
            if (y, x, start, until) in seen:
                continue
            seen.add((x, y, start, until))
            end = "" if until is None else f", until_epoch: {until}"
            lines.append(f"  - {{link: [{x}, {y}], out_of_service: true, from_epoch: {start}{end}}}")
        return "\n".join(lines) + "\n"

    def due(self, f, epoch):
        """Whether fault `f` drops in `epoch`, as canary_core::fault::When::active says."""
        return f.i in self.table[min(max(epoch, 0), len(self.table) - 1)]


def load(path, topology, binary, epochs):
    """The schedule of the fault file `path` (none: no fault), as `canary faults` resolves it
    against the normalized topology file; errors name the file and field."""
    if path is None:
        return Schedule({})
    try:
        return Schedule(canary.faults(binary, topology, path, epochs), path)
    except canary.CanaryError as e:
        raise InputError(str(e))


def filtered(f):
    """Whether the fault needs the classic-BPF filter whatever the kernel has."""
    return f.corrupt or f.flows < 1.0


class Injector:
    """Turns faults on and off on their interfaces and counts what they dropped."""

    def __init__(self, schedule, intf, loss_method):
        self.schedule = schedule
        self.faults = schedule.faults
        self.intf = intf  # (switch, neighbour) -> interface name
        self.loss_method = loss_method
        self.method = None  # netem or bpf, once the first plain fault went on
        self.on = set()
        self.dropped_before = {}
        self.report_pos = 0
        self.log = []  # the schedule as enacted: fault_schedule.json

    def dev(self, f):
        """The interface a fault drops on: X's toward Y, or Y's from X for corruption."""
        return self.intf(f.y, f.x) if f.corrupt else self.intf(f.x, f.y)

    def method_of(self, f):
        if f.corrupt:
            return "bpf ingress (corruption)"
        if f.flows < 1.0:
            return f"bpf (share {f.flows:g} of flows)"
        return self.method

    def start(self):
        """Starts the faults that drop from the first epoch; the others wait for their epoch
        (`follow`)."""
        for f in self.faults:
            if self.schedule.due(f, 0):
                self.fault_on(f)

    def fault_on(self, f):
        """Drops packets X sends toward Y with probability `loss`: at the egress of X's
        interface, or for corruption at the ingress of Y's (a frame with a bad checksum crosses
        the wire and dies at the receiving MAC, before the next switch's pipeline).

        `tc netem loss` when the kernel has sch_netem. Kernels built without it (this project's
        VMs: CONFIG_NET_SCH_NETEM is not set) get the same Bernoulli drop from a four-instruction
        classic-BPF filter in the clsact hook, `tc filter add dev DEV egress bpf da`:
        A = random u32 (SKF_AD_RANDOM); drop (TC_ACT_SHOT) if A < loss * 2^32, else pass. Both run
        in the kernel's path for every frame on DEV, and both count their drops in
        `tc -s qdisc show dev DEV`. Corruption always uses the filter (netem has no ingress), and
        so does a fault on a share of flows (netem cannot tell flows apart): that filter hashes
        the frame's 5-tuple with a seed of the link and drops only below the share.
        """
        dev = self.dev(f)
        self.on.add((f.x, f.y))
        if f.loss <= 0.0:
            return
        method = self.method or self.loss_method
        if method in ("auto", "netem") and not filtered(f):
            p = subprocess.run(["tc", "qdisc", "replace", "dev", dev, "root", "netem", "loss",
                                f"{f.loss * 100:.6g}%"], capture_output=True, text=True)
            if p.returncode == 0:
                method = "netem"
            elif method == "auto" and "unknown" in p.stderr:
                log("this kernel has no netem (sch_netem); injecting loss with a classic-BPF "
                    "random dropper on the clsact egress hook instead")
                method = "bpf"
            else:
                raise RuntimeError(f"tc qdisc replace dev {dev} root netem: {p.stderr.strip()}")
        hook = "ingress" if f.corrupt else "egress"
        if method == "bpf" or filtered(f):
            run(["tc", "qdisc", "replace", "dev", dev, "clsact"])
            run(["tc", "filter", "replace", "dev", dev, hook, "pref", "1", "handle", "1",
                 "bpf", "da", "bytecode", program(f)])
        if not filtered(f):
            self.method = method
        shown = run(["tc", "qdisc", "show", "dev", dev]).strip().replace("\n", "; ")
        log(f"fault {f.x}->{f.y} loss {f.loss:g}: {dev} {hook} ({self.method_of(f)}): {shown}")

    def fault_off(self, f):
        """Repairs the link: its dropper goes, its drop count is kept for the accounting."""
        dev = self.dev(f)
        self.on.discard((f.x, f.y))
        if f.corrupt:
            run(["tc", "filter", "del", "dev", dev, "ingress", "pref", "1", "handle", "1", "bpf"])
        elif f.flows < 1.0 or self.method == "bpf":
            # The clsact qdisc, which holds the drop count, stays.
            run(["tc", "filter", "del", "dev", dev, "egress", "pref", "1", "handle", "1", "bpf"])
        elif self.method == "netem":
            # Deleting the qdisc deletes its counters: keep what it dropped.
            self.dropped_before[(f.x, f.y)] = self.drops()[f"{f.x}->{f.y}"]["dropped"]
            run(["tc", "qdisc", "del", "dev", dev, "root"])
        log(f"fault {f.x}->{f.y} repaired: {dev}")

    def follow(self, state):
        """Starts and repairs scheduled faults as the controller's report (STATE/report.jsonl)
        reaches their epochs: once epoch N-1 is reported, the switches count in epoch N."""
        if not self.schedule.scheduled:
            return
        try:
            with open(os.path.join(state, "report.jsonl")) as fh:
                fh.seek(self.report_pos)
                text = fh.read()
        except FileNotFoundError:
            return
        # Whole lines only: a line still being written is read next time.
        text = text[:text.rfind("\n") + 1]
        self.report_pos += len(text.encode())
        for line in text.splitlines():
            try:
                epoch = int(json.loads(line)["epoch"])
            except (ValueError, KeyError, TypeError):
                continue
            for f, change in changes(self.schedule, self.on, epoch + 1):
                (self.fault_on if change == "on_in_epoch" else self.fault_off)(f)
                self.log.append({"link": f"{f.x}->{f.y}", change: epoch + 1, "at": time.time()})

    def drops(self):
        """Packets each faulty directed link has dropped so far (from `tc -s qdisc`)."""
        out = {}
        for f in self.faults:
            p = subprocess.run(["tc", "-s", "qdisc", "show", "dev", self.dev(f)],
                               capture_output=True, text=True)
            dropped = self.dropped_before.get((f.x, f.y), 0) + qdisc_dropped(p.stdout)
            with open(f"/sys/class/net/{self.intf(f.x, f.y)}/statistics/tx_packets") as fh:
                sent = int(fh.read())
            out[f"{f.x}->{f.y}"] = {"loss": f.loss, "flows": f.flows, "sent": sent,
                                    "dropped": dropped}
        return out


def changes(schedule, on, epoch):
    """The faults to turn on or off for `epoch`, given the directed links `on` now: (fault,
    "on_in_epoch" or "off_in_epoch"), in the faults' order."""
    out = []
    for f in schedule.faults:
        is_on = (f.x, f.y) in on
        if is_on and not schedule.due(f, epoch):
            out.append((f, "off_in_epoch"))
        elif schedule.due(f, epoch) and not is_on:
            out.append((f, "on_in_epoch"))
    return out


def program(f):
    """The classic-BPF dropper of a fault (dropper.py), as `tc ... bpf bytecode` takes it."""
    if f.flows < 1.0:
        return dropper.flow_share_drop(f.loss, f.flows, dropper.link_seed(f.x, f.y))
    return dropper.random_drop(f.loss)


def qdisc_dropped(text):
    """Frames dropped, summed over the qdiscs `tc -s qdisc show dev DEV` lists."""
    dropped = 0
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Sent "):
            w = line.replace(",", " ").replace("(", " ").split()
            dropped += int(w[w.index("dropped") + 1])
    return dropped
