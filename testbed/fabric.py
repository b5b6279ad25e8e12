#!/usr/bin/python3
"""A Mininet fabric of BMv2 switches for Canary: up, hold, down.

    /usr/bin/python3 testbed/fabric.py --topology TOPO.yaml --p4-json DIR/canary.json \
        --state DIR [--faults FILE] [--traffic BIN] [--rate PPS] ...

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
  the kernel has no netem, for corruption (at TO's ingress) and for a share of flows;
* writes STATE/switches.yaml (gRPC, device id, Thrift, and the BMv2 port of every neighbour) for
  `canary run --switches`, STATE/pids.tsv and STATE/intfs.txt (what it started and created, for
  run.sh's last-resort clean-up), and STATE/ready when everything is up;
* starts the traffic generator (`canary traffic`) in every host unless --traffic is omitted
  (receiving at once, sending when the --traffic-trigger file appears);
* holds the network until SIGTERM/SIGINT, or until the process --parent names is gone; then
  stops generators (collecting their statistics in STATE/traffic/), kills every switch by its
  PID, deletes every link, and checks that none of its interfaces or processes is left.

Exit status: 0 after a clean teardown, 1 on a bad input or a failed start (after tearing down
what it had started), 3 if something was left behind.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import typing

import yaml

import dropper

try:
    from mininet.link import Link
    from mininet.log import setLogLevel
    from mininet.net import Mininet
    from mininet.node import Host, Switch
except ImportError as e:  # pragma: no cover - reported to the user
    sys.exit(f"error: Mininet is not importable by {sys.executable} ({e}); run testbed/install.sh")

IFNAMSIZ = 15
# MTU of links between switches: room for Canary's 8-byte shim on a host's largest frame.
FABRIC_MTU = 9000


ACCT_TABLE = "canary_acct"


def log(msg):
    print(f"fabric: {msg}", file=sys.stderr, flush=True)


class InputError(Exception):
    """A bad topology or fault file; the message names the file and the field."""


# ---------------------------------------------------------------- inputs


def default_ipv6(addr):
    """fd00:0:x:y::z for 10.x.y.z: canary_core::topo::default_ipv6, the controller's default."""
    _, x, y, z = (int(o) for o in addr.split("."))
    return f"fd00:0:{x:x}:{y:x}::{z:x}"


def load_topology(path):
    """Switches (name, layer, hosts [(name, addr, addr6)]) and links from a normalized topology
    file."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"{path}: {e}")
    if not isinstance(doc, dict) or "switches" not in doc or "links" not in doc:
        raise InputError(f"{path}: document: needs `switches` and `links`")
    switches = []
    for i, s in enumerate(doc["switches"]):
        if not isinstance(s, dict) or "name" not in s:
            raise InputError(f"{path}: switches[{i}]: needs a `name`")
        hosts = []
        raw = s.get("hosts") or []
        if not isinstance(raw, list):
            raise InputError(
                f"{path}: switches[{i}].hosts: expected a list of {{name, addr}}; "
                "normalize the file with `canary topology FILE` first")
        for j, h in enumerate(raw):
            if not isinstance(h, dict) or "name" not in h or "addr" not in h:
                raise InputError(
                    f"{path}: switches[{i}].hosts[{j}]: expected {{name, addr}}; "
                    "normalize the file with `canary topology FILE` first")
            addr = str(h["addr"])
            if not addr.startswith("10.") or len(addr.split(".")) != 4:
                raise InputError(f"{path}: switches[{i}].hosts[{j}].addr: {addr} is not in 10.0.0.0/8")
            addr6 = str(h.get("addr6") or default_ipv6(addr))
            if not addr6.startswith("fd00:"):
                raise InputError(f"{path}: switches[{i}].hosts[{j}].addr6: {addr6} is not in fd00::/16")
            hosts.append((str(h["name"]), addr, addr6))
        switches.append({"name": str(s["name"]), "layer": int(s.get("layer", 0)), "hosts": hosts})
    names = {s["name"] for s in switches}
    links = []
    for i, l in enumerate(doc["links"]):
        if not isinstance(l, list) or len(l) != 2:
            raise InputError(f"{path}: links[{i}]: expected [a, b]")
        a, b = str(l[0]), str(l[1])
        for x in (a, b):
            if x not in names:
                raise InputError(f"{path}: links[{i}]: unknown switch `{x}`")
        links.append((a, b))
    return switches, links


class Fault(typing.NamedTuple):
    """One directed faulty link: X drops toward Y (or, for corruption, Y drops what X sent)."""
    x: str
    y: str
    loss: float
    start: int = 0
    until: typing.Optional[int] = None
    period: typing.Optional[int] = None
    on: int = 0
    corrupt: bool = False
    flows: float = 1.0

    def due(self, epoch):
        """Whether it drops in `epoch` (canary_core::fault::When::active)."""
        if epoch < self.start or (self.until is not None and epoch >= self.until):
            return False
        return self.period is None or (epoch - self.start) % self.period < self.on

    def scheduled(self):
        return self.start > 0 or self.until is not None or self.period is not None


def load_faults(path, links):
    """Directed faults from a fault file (the controller's format): links or devices (a device
    drops on its links out, or those toward `ports`), in the epochs given, flapping or not, lost
    on the link or corrupted (dropped by the receiving interface), on every flow or on a share
    of `flows` (dropper.flow_share_drop)."""
    if path is None:
        return []
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"{path}: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("faults"), list):
        raise InputError(f"{path}: faults: expected a list")
    undirected = {frozenset(l) for l in links}
    neighbours = {}
    for a, b in links:
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)
    out = []
    for i, f in enumerate(doc["faults"]):
        at = f"{path}: faults[{i}]"
        if not isinstance(f, dict):
            raise InputError(f"{at}: expected a mapping")
        unknown = set(f) - {"link", "device", "ports", "loss", "both_directions", "from_epoch",
                            "until_epoch", "period", "duty", "corruption", "flows"}
        if unknown:
            raise InputError(f"{at}: unknown field `{sorted(unknown)[0]}`")
        loss = f.get("loss")
        if not isinstance(loss, (int, float)) or not 0.0 <= loss <= 1.0:
            raise InputError(f"{at}.loss: {loss!r} is not a probability in [0, 1]")
        if ("link" in f) == ("device" in f):
            raise InputError(f"{at}.link: give either `link: [FROM, TO]` or `device: NAME`")
        if "link" in f:
            if "ports" in f:
                raise InputError(f"{at}.ports: only a `device` has ports")
            link = f["link"]
            if not isinstance(link, list) or len(link) != 2:
                raise InputError(f"{at}.link: expected [from, to]")
            a, b = str(link[0]), str(link[1])
            if frozenset((a, b)) not in undirected:
                raise InputError(f"{at}.link: no link between `{a}` and `{b}`")
            pairs = [(a, b)] + ([(b, a)] if f.get("both_directions") else [])
        else:
            d = str(f["device"])
            if d not in neighbours:
                raise InputError(f"{at}.device: unknown switch `{d}`")
            if f.get("both_directions"):
                raise InputError(f"{at}.both_directions: a device drops on its own links out")
            ports = f.get("ports", neighbours[d])
            if not isinstance(ports, list) or not ports:
                raise InputError(f"{at}.ports: expected a list of neighbours")
            for j, p in enumerate(ports):
                if str(p) not in neighbours[d]:
                    raise InputError(f"{at}.ports[{j}]: `{d}` has no port to `{p}`")
            pairs = [(d, str(p)) for p in ports]
        start, until = f.get("from_epoch", 0), f.get("until_epoch")
        for name, v in (("from_epoch", start), ("until_epoch", until), ("period", f.get("period"))):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise InputError(f"{at}.{name}: {v!r} is not a number of epochs")
        if until is not None and until <= start:
            raise InputError(f"{at}.until_epoch: {until} is not after from_epoch {start}: the "
                             "fault would never drop")
        period, duty, on = f.get("period"), f.get("duty"), 0
        if (period is None) != (duty is None):
            raise InputError(f"{at}.{'duty' if duty is None else 'period'}: missing: a flapping "
                             "fault needs `period` and `duty`")
        if period is not None:
            if period == 0 or not isinstance(duty, (int, float)) or not 0 < duty <= 1:
                raise InputError(f"{at}.duty: {duty!r} of {period} epochs is not a flap")
            on = round(duty * period)
            if on == 0:
                raise InputError(f"{at}.duty: {duty} of {period} epochs rounds to no lossy epoch")
        flows = f.get("flows", 1.0)
        if not isinstance(flows, (int, float)) or isinstance(flows, bool) or not 0 < flows <= 1:
            raise InputError(f"{at}.flows: {flows!r} is not a share of flows in (0, 1]")
        for x, y in pairs:
            if any((x, y) == (p.x, p.y) for p in out):
                raise InputError(f"{at}: link [{x}, {y}] is given twice")
            out.append(Fault(x, y, float(loss), start, until, period, on,
                             bool(f.get("corruption", False)), float(flows)))
    return out


def plan_ports(switches, links):
    """BMv2 port of every neighbour: a switch's hosts first (1, 2, ...), then its links in file order."""
    ports = {s["name"]: {} for s in switches}
    for s in switches:
        for h, *_ in s["hosts"]:
            ports[s["name"]][h] = len(ports[s["name"]]) + 1
    for a, b in links:
        for x, y in ((a, b), (b, a)):
            if y in ports[x]:
                raise InputError(f"topology: links: [{a}, {b}] is given twice")
            ports[x][y] = len(ports[x]) + 1
    return ports


def host_mac(addr):
    """A locally administered unicast MAC from the host's IPv4 address: 02:00:a:b:c:d."""
    return "02:00:" + ":".join(f"{int(o):02x}" for o in addr.split("."))


# ---------------------------------------------------------------- processes


class Recorder:
    """Appends what we start and create to STATE files, for run.sh's last-resort clean-up."""

    def __init__(self, state):
        self.pids_path = os.path.join(state, "pids.tsv")
        self.intfs_path = os.path.join(state, "intfs.txt")
        for p in (self.pids_path, self.intfs_path):
            open(p, "w").close()

    def pid(self, kind, name, pid, exe):
        with open(self.pids_path, "a") as f:
            f.write(f"{kind}\t{name}\t{pid}\t{exe}\n")

    def intf(self, name):
        with open(self.intfs_path, "a") as f:
            f.write(name + "\n")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_pid(pid, name, timeout=5.0):
    """SIGTERM, wait, SIGKILL: one process, by its PID."""
    if not alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not alive(pid):
            return
        time.sleep(0.05)
    log(f"{name} (pid {pid}) ignored SIGTERM for {timeout:.0f} s; SIGKILL")
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def port_open(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def run(cmd):
    """Runs a command in the root namespace; raises with its output when it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


def host_run(host, cmd):
    """Runs a command in a Mininet host's namespace; raises with its output when it fails."""
    out, err, code = host.pexec(cmd)
    if code != 0:
        raise RuntimeError(f"{host.name}: {' '.join(cmd)}: {err.strip() or out.strip()}")
    return out


# ---------------------------------------------------------------- the switch


class BMv2Switch(Switch):
    """A Mininet switch node in the root namespace whose data plane is one simple_switch_grpc."""

    def __init__(self, name, **params):
        params["inNamespace"] = False
        Switch.__init__(self, name, **params)
        self.bmv2_pid = None

    def start(self, controllers):  # Mininet's interface; we start BMv2 ourselves (start_bmv2)
        pass

    def start_bmv2(self, json_path, device_id, grpc, thrift, state, ports, log_level):
        logdir = os.path.join(state, "logs")
        cmd = ["simple_switch_grpc", "--device-id", str(device_id)]
        for intf, port in ports:
            cmd += ["-i", f"{port}@{intf}"]
        cmd += [
            "--thrift-port", str(thrift),
            "--log-file", os.path.join(logdir, self.name), "--log-flush", "-L", log_level,
            # The default notifications socket, /tmp/bmv2-<device-id>-notifications.ipc, is shared
            # by every BMv2 on the machine with that device id; keep ours in the run's directory.
            "--notifications-addr", f"ipc://{os.path.join(state, f'bmv2-{device_id}.ipc')}",
            json_path, "--", "--grpc-server-addr", f"127.0.0.1:{grpc}",
        ]
        out = open(os.path.join(logdir, f"{self.name}.stdout"), "w")
        # A session of its own: Ctrl-C in run.sh's terminal must not kill switches under the daemon.
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        self.bmv2_pid = p.pid
        self.bmv2_proc = p
        return p.pid

    def stop(self, deleteIntfs=True):
        if self.bmv2_pid is not None:
            stop_pid(self.bmv2_pid, f"simple_switch_grpc {self.name}")
            self.bmv2_pid = None
        Switch.stop(self, deleteIntfs)


# ---------------------------------------------------------------- the fabric


class Fabric:
    def __init__(self, args):
        self.args = args
        self.state = os.path.abspath(args.state)
        os.makedirs(os.path.join(self.state, "logs"), exist_ok=True)
        os.makedirs(os.path.join(self.state, "traffic"), exist_ok=True)
        self.switches, self.links = load_topology(args.topology)
        self.faults = load_faults(args.faults, self.links)
        self.faults_on = set()
        self.dropped_before = {}
        self.report_pos = 0
        self.schedule_log = []
        self.ports = plan_ports(self.switches, self.links)
        self.hosts = [(h, a, s["name"]) for s in self.switches for h, a, _ in s["hosts"]]
        self.addr6 = {h: a6 for s in self.switches for h, _, a6 in s["hosts"]}
        if len(self.hosts) < 2:
            raise InputError(f"{args.topology}: switches: the fabric needs at least two hosts")
        self.rec = Recorder(self.state)
        self.net = None
        self.fault_method = None
        self.generators = []  # (host, Popen)
        self.left = []
        self.accounting = False
        # 1-minute load average, sampled while the fabric runs (overload shows here first).
        self.load = []

    def intf(self, switch, neighbour):
        return f"{switch}-eth{self.ports[switch][neighbour]}"

    def check_free(self):
        """Refuses to start over a leftover or someone else's interface or port."""
        names = [self.intf(s, n) for s in self.ports for n in self.ports[s]]
        for n in names + [f"{h}-eth0" for h, _, _ in self.hosts]:
            if len(n) > IFNAMSIZ:
                raise InputError(f"{self.args.topology}: interface name `{n}` is longer than "
                                 f"{IFNAMSIZ} characters; use shorter switch/host names")
        existing = set(os.listdir("/sys/class/net"))
        clash = sorted(set(names) & existing)
        if clash:
            raise RuntimeError(
                f"interfaces {', '.join(clash[:5])} already exist (a previous run left them, or "
                "someone else made them); remove them with `ip link del NAME` if they are ours")
        for i in range(len(self.switches)):
            for port in (self.args.grpc_base + i, self.args.thrift_base + i):
                if not port_free(port):
                    raise RuntimeError(f"TCP port 127.0.0.1:{port} is in use; pick other "
                                       "--grpc-base/--thrift-base")

    def up(self):
        a = self.args
        self.check_free()
        setLogLevel("warning")
        self.net = Mininet(topo=None, controller=None, build=False, autoSetMacs=False,
                           autoStaticArp=False)
        net = self.net
        for i, s in enumerate(self.switches):
            sw = net.addSwitch(s["name"], cls=BMv2Switch, dpid=f"{i + 1:x}")
            self.rec.pid("shell", s["name"], sw.pid, "bash")
        for h, addr, _ in self.hosts:
            host = net.addHost(h, ip=f"{addr}/8", mac=host_mac(addr))
            self.rec.pid("shell", h, host.pid, "bash")
        for s in self.switches:
            for h, *_ in s["hosts"]:
                self.rec.intf(self.intf(s["name"], h))
                net.addLink(h, s["name"], port1=0, port2=self.ports[s["name"]][h],
                            intfName1=f"{h}-eth0", intfName2=self.intf(s["name"], h))
        for x, y in self.links:
            self.rec.intf(self.intf(x, y))
            self.rec.intf(self.intf(y, x))
            net.addLink(x, y, port1=self.ports[x][y], port2=self.ports[y][x],
                        intfName1=self.intf(x, y), intfName2=self.intf(y, x))
        net.build()
        host_names = {h for h, _, _ in self.hosts}
        for s in self.ports:
            for n in self.ports[s]:
                name = self.intf(s, n)
                # The root namespace must not talk on the fabric's links (the switches' ports).
                run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"])
                run(["ethtool", "-K", name, "tx", "off", "rx", "off"])
                if n not in host_names:
                    run(["ip", "link", "set", "dev", name, "mtu", str(FABRIC_MTU)])
        self.config_hosts()
        self.setup_accounting()
        self.apply_faults()
        self.start_switches()
        self.write_switches_yaml()

    def config_hosts(self):
        net = self.net
        for h, addr, _ in self.hosts:
            host = net[h]
            dev = f"{h}-eth0"
            host_run(host, ["ip", "link", "set", "dev", dev, "mtu", str(self.args.mtu)])
            # BMv2 forwards frames as they are: with offload on, a UDP checksum left partial by
            # the sender's veth would reach the receiver unfinished and be dropped there.
            host_run(host, ["ethtool", "-K", dev, "tx", "off", "rx", "off", "sg", "off",
                            "tso", "off", "gso", "off", "gro", "off"])
            host_run(host, ["ip", "-6", "addr", "add", f"{self.addr6[h]}/16", "dev", dev])
            got = host_run(host, ["ip", "-o", "-4", "addr", "show", "dev", dev])
            if f"{addr}/8" not in got:
                raise RuntimeError(f"{h}: {dev} has `{got.strip()}`, expected {addr}/8")
        # Duplicate address detection (its neighbour solicitations cross the fabric) must end
        # before a host can send from its IPv6 address.
        deadline = time.time() + 10
        for h, _, _ in self.hosts:
            while host_run(net[h], ["ip", "-6", "addr", "show", "dev", f"{h}-eth0", "tentative"]).strip():
                if time.time() > deadline:
                    raise RuntimeError(f"{h}: IPv6 address still tentative after 10 s")
                time.sleep(0.2)

    def apply_faults(self):
        """Starts the faults that drop from the first epoch; the others wait for their epoch
        (`follow_schedule`)."""
        for f in self.faults:
            if f.due(0):
                self.fault_on(f)

    def fault_dev(self, f):
        """The interface a fault drops on: X's toward Y, or Y's from X for corruption."""
        return self.intf(f.y, f.x) if f.corrupt else self.intf(f.x, f.y)

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
        dev = self.fault_dev(f)
        self.faults_on.add((f.x, f.y))
        if f.loss <= 0.0:
            return
        method = self.fault_method or self.args.loss_method
        if method in ("auto", "netem") and not self.filtered(f):
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
        if method == "bpf" or self.filtered(f):
            if f.flows < 1.0:
                prog = dropper.flow_share_drop(f.loss, f.flows, dropper.link_seed(f.x, f.y))
            else:
                prog = dropper.random_drop(f.loss)
            run(["tc", "qdisc", "replace", "dev", dev, "clsact"])
            run(["tc", "filter", "replace", "dev", dev, hook, "pref", "1", "handle", "1",
                 "bpf", "da", "bytecode", prog])
        if not self.filtered(f):
            self.fault_method = method
        shown = run(["tc", "qdisc", "show", "dev", dev]).strip().replace("\n", "; ")
        log(f"fault {f.x}->{f.y} loss {f.loss:g}: {dev} {hook} ({self.method_of(f)}): {shown}")

    @staticmethod
    def filtered(f):
        """Whether the fault needs the classic-BPF filter whatever the kernel has."""
        return f.corrupt or f.flows < 1.0

    def method_of(self, f):
        if f.corrupt:
            return "bpf ingress (corruption)"
        if f.flows < 1.0:
            return f"bpf (share {f.flows:g} of flows)"
        return self.fault_method

    def fault_off(self, f):
        """Repairs the link: its dropper goes, its drop count is kept for the accounting."""
        dev = self.fault_dev(f)
        self.faults_on.discard((f.x, f.y))
        if f.corrupt:
            run(["tc", "filter", "del", "dev", dev, "ingress", "pref", "1", "handle", "1", "bpf"])
        elif f.flows < 1.0 or self.fault_method == "bpf":
            # The clsact qdisc, which holds the drop count, stays.
            run(["tc", "filter", "del", "dev", dev, "egress", "pref", "1", "handle", "1", "bpf"])
        elif self.fault_method == "netem":
            # Deleting the qdisc deletes its counters: keep what it dropped.
            self.dropped_before[(f.x, f.y)] = self.fault_drops()[f"{f.x}->{f.y}"]["dropped"]
            run(["tc", "qdisc", "del", "dev", dev, "root"])
        log(f"fault {f.x}->{f.y} repaired: {dev}")

    def follow_schedule(self):
        """Starts and repairs scheduled faults as the controller's report reaches their epochs:
        once epoch N-1 is reported, the switches count in epoch N."""
        if not any(f.scheduled() for f in self.faults):
            return
        path = os.path.join(self.state, "report.jsonl")
        try:
            with open(path) as fh:
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
            now = epoch + 1
            for f in self.faults:
                on = (f.x, f.y) in self.faults_on
                if on and not f.due(now):
                    self.fault_off(f)
                    self.schedule_log.append({"link": f"{f.x}->{f.y}", "off_in_epoch": now,
                                              "at": time.time()})
                elif f.due(now) and not on:
                    self.fault_on(f)
                    self.schedule_log.append({"link": f"{f.x}->{f.y}", "on_in_epoch": now,
                                              "at": time.time()})

    def acct_counter(self, dev, direction):
        return "c_" + dev.replace("-", "_") + "_" + direction

    def setup_accounting(self):
        """Counts the generators' frames at both ends of every link, from the kernel.

        Only unicast UDP is counted: it crosses every switch once per hop (floods such as ARP are
        replicated, so frames in and out of a switch would not balance). On a fabric link the
        frame carries Canary's 8-byte shim (EtherType 0x88B5, the frame's own EtherType at byte
        20, its IP header from byte 22); on a host's link it is plain IPv4 or IPv6. Egress counts
        run in the netfilter egress hook, before tc's egress (where faults drop), so a directed
        link's loss is what its sender's egress counted less what its receiver's ingress counted,
        injected drops included; a switch's loss is what its ports took in less what they sent.
        """
        host_names = {h for h, _, _ in self.hosts}
        cmds = [f"add table netdev {ACCT_TABLE}"]
        for s in self.ports:
            for n in self.ports[s]:
                dev = self.intf(s, n)
                if n in host_names:
                    matches = ["ether type ip ip protocol udp", "ether type ip6 ip6 nexthdr udp"]
                else:
                    matches = ["@ll,96,16 0x88b5 @ll,160,16 0x0800 @ll,248,8 17",
                               "@ll,96,16 0x88b5 @ll,160,16 0x86dd @ll,224,8 17"]
                for hook, d in (("ingress", "in"), ("egress", "out")):
                    c = self.acct_counter(dev, d)
                    chain = c + "_chain"
                    cmds.append(f"add counter netdev {ACCT_TABLE} {c}")
                    cmds.append(f"add chain netdev {ACCT_TABLE} {chain} {{ type filter hook {hook} "
                                f"device \"{dev}\" priority -100; }}")
                    for m in matches:
                        # @ll,7,1: the group bit of the destination MAC (0: unicast).
                        cmds.append(f"add rule netdev {ACCT_TABLE} {chain} @ll,7,1 0 {m} "
                                    f"counter name {c}")
        p = subprocess.run(["nft", "-f", "-"], input="\n".join(cmds) + "\n",
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"nft (the testbed's packet accounting): {p.stderr.strip()}")
        self.accounting = True

    def read_accounting(self):
        """Where the generators' frames were lost: per directed link and per switch."""
        p = subprocess.run(["nft", "-j", "list", "counters", "table", "netdev", ACCT_TABLE],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"nft list counters: {p.stderr.strip()}")
        counts = {}
        for item in json.loads(p.stdout).get("nftables", []):
            c = item.get("counter")
            if c:
                counts[c["name"]] = c["packets"]
        injected = {k: v["dropped"] for k, v in self.fault_drops().items()}
        links = {}
        for x, y in self.links:
            for a, b in ((x, y), (y, x)):
                sent = counts.get(self.acct_counter(self.intf(a, b), "out"), 0)
                got = counts.get(self.acct_counter(self.intf(b, a), "in"), 0)
                links[f"{a}->{b}"] = {"sent": sent, "received": got, "lost": sent - got,
                                      "injected": injected.get(f"{a}->{b}", 0)}
        switches = {}
        for s in self.ports:
            took = sum(counts.get(self.acct_counter(self.intf(s, n), "in"), 0) for n in self.ports[s])
            gave = sum(counts.get(self.acct_counter(self.intf(s, n), "out"), 0) for n in self.ports[s])
            switches[s] = {"in": took, "out": gave, "lost": took - gave}
        ports = {self.intf(s, n): {d: counts.get(self.acct_counter(self.intf(s, n), d), 0)
                                   for d in ("in", "out")}
                 for s in self.ports for n in self.ports[s]}
        return {"links": links, "switches": switches, "ports": ports,
                "load_max": max(self.load, default=0.0), "cpus": len(os.sched_getaffinity(0))}

    def fault_drops(self):
        """Packets each faulty directed link has dropped so far (from `tc -s qdisc`)."""
        out = {}
        for f in self.faults:
            x, y, loss = f.x, f.y, f.loss
            dev = self.fault_dev(f)
            p = subprocess.run(["tc", "-s", "qdisc", "show", "dev", dev], capture_output=True,
                               text=True)
            dropped = self.dropped_before.get((x, y), 0)
            for line in p.stdout.splitlines():
                line = line.strip()
                if line.startswith("Sent "):
                    w = line.replace(",", " ").replace("(", " ").split()
                    dropped += int(w[w.index("dropped") + 1])
            with open(f"/sys/class/net/{self.intf(x, y)}/statistics/tx_packets") as fh:
                sent = int(fh.read())
            out[f"{x}->{y}"] = {"loss": loss, "flows": f.flows, "sent": sent, "dropped": dropped}
        return out

    def start_switches(self):
        a = self.args
        for i, s in enumerate(self.switches):
            name = s["name"]
            sw = self.net[name]
            ports = sorted(((self.intf(name, n), p) for n, p in self.ports[name].items()),
                           key=lambda t: t[1])
            pid = sw.start_bmv2(a.p4_json, i + 1, a.grpc_base + i, a.thrift_base + i,
                                self.state, ports, a.log_level)
            self.rec.pid("bmv2", name, pid, "simple_switch_grpc")
        deadline = time.time() + a.start_timeout
        for i, s in enumerate(self.switches):
            sw = self.net[s["name"]]
            while not (port_open(a.thrift_base + i) and port_open(a.grpc_base + i)):
                if sw.bmv2_proc.poll() is not None:
                    out = open(os.path.join(self.state, "logs", f"{s['name']}.stdout")).read()
                    raise RuntimeError(f"simple_switch_grpc {s['name']} exited: {out.strip()}")
                if time.time() > deadline:
                    raise RuntimeError(f"simple_switch_grpc {s['name']}: Thrift "
                                       f"{a.thrift_base + i} / gRPC {a.grpc_base + i} not up "
                                       f"after {a.start_timeout} s")
                time.sleep(0.2)
        log(f"{len(self.switches)} BMv2 switches up")

    def write_switches_yaml(self):
        a = self.args
        doc = {"switches": {}}
        for i, s in enumerate(self.switches):
            doc["switches"][s["name"]] = {
                "grpc": f"127.0.0.1:{a.grpc_base + i}",
                "device_id": i + 1,
                "thrift": f"127.0.0.1:{a.thrift_base + i}",
                "ports": dict(self.ports[s["name"]]),
            }
        path = os.path.join(self.state, "switches.yaml")
        with open(path + ".tmp", "w") as f:
            f.write("# Written by testbed/fabric.py for `canary run --switches`.\n")
            yaml.safe_dump(doc, f, sort_keys=False)
        os.rename(path + ".tmp", path)
        hosts = {h: {"addr": addr, "addr6": self.addr6[h], "mac": host_mac(addr), "switch": s,
                     "intf": f"{h}-eth0", "switch_port": self.ports[s][h]}
                 for h, addr, s in self.hosts}
        faults = [{"link": [f.x, f.y], "loss": f.loss, "intf": self.fault_dev(f),
                   "method": self.method_of(f), "flows": f.flows,
                   "from_epoch": f.start, "until_epoch": f.until, "period": f.period,
                   "on": f.on}
                  for f in self.faults]
        with open(os.path.join(self.state, "fabric.json"), "w") as f:
            json.dump({"hosts": hosts, "faults": faults, "switches": doc["switches"]}, f, indent=1)

    def start_traffic(self):
        a = self.args
        addrs = [addr for _, addr, _ in self.hosts]
        if a.ipv6:
            addrs += [self.addr6[h] for h, _, _ in self.hosts]
        for k, (h, addr, _) in enumerate(self.hosts):
            stats = os.path.join(self.state, "traffic", f"{h}.json")
            me = f"{addr},{self.addr6[h]}"
            cmd = [a.traffic, "traffic", "--me", me, "--dests", ",".join(addrs), "--rate", str(a.rate),
                   "--seed", str(a.seed * 1000 + k), "--stats", stats]
            if a.traffic_trigger:
                # Receivers up now; senders wait for the trigger file (hosts share our filesystem).
                cmd += ["--start-file", os.path.abspath(a.traffic_trigger), "--start-delay-ms", "0"]
            cmd += a.traffic_arg
            out = open(os.path.join(self.state, "traffic", f"{h}.log"), "w")
            p = self.net[h].popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
            self.rec.pid("traffic", h, p.pid, os.path.basename(a.traffic))
            self.generators.append((h, p))
        log(f"traffic: {len(self.generators)} generators, {a.rate} packets/s each")

    def stop_traffic(self):
        """SIGTERM every generator at once (senders stop, receivers drain), then wait."""
        for _, p in self.generators:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + 10
        for h, p in self.generators:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                stop_pid(p.pid, f"traffic {h}", timeout=1)
        stats = {}
        for h, _ in self.generators:
            try:
                with open(os.path.join(self.state, "traffic", f"{h}.json")) as f:
                    stats[h] = json.load(f)
            except (OSError, ValueError):
                log(f"traffic {h}: no statistics (see {self.state}/traffic/{h}.log)")
        if not self.generators:
            return
        sent = sum(st["sent"] for st in stats.values())
        received = sum(st["received"] for st in stats.values())
        by_addr = {addr: st for st in stats.values() for addr in st.get("addrs", [st["me"]])}
        pairs = []  # (lost, src, dst, sent)
        for st in stats.values():
            for dst, n in st.get("sent_to", {}).items():
                # The receiver knows the sender by its address of the destination's family.
                v6 = ":" in dst
                src = next((x for x in st.get("addrs", [st["me"]]) if (":" in x) == v6), st["me"])
                got = by_addr.get(dst, {}).get("received_from", {}).get(src, 0)
                if got < n:
                    pairs.append((n - got, src, dst, n))
        pairs.sort(reverse=True)
        lost = sent - received
        summary = {"sent": sent, "received": received, "lost": lost,
                   "sent_v6": sum(st.get("sent_v6", 0) for st in stats.values()),
                   "received_v6": sum(st.get("received_v6", 0) for st in stats.values()),
                   "loss": lost / max(sent, 1), "late": sum(st["late"] for st in stats.values()),
                   "send_errors": sum(st["send_errors"] for st in stats.values()),
                   "lossy_pairs": [{"src": s_, "dst": d, "sent": n, "lost": l}
                                   for l, s_, d, n in pairs]}
        with open(os.path.join(self.state, "traffic", "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        log(f"traffic: {sent} packets sent ({summary['sent_v6']} IPv6), {received} received by "
            f"the hosts ({summary['received_v6']} IPv6), "
            f"{lost} lost ({100.0 * lost / max(sent, 1):.3f} %), {summary['send_errors']} send "
            f"errors, {summary['late']} sent late; lossiest host pairs: " +
            (", ".join(f"{s_}->{d} {l}/{n}" for l, s_, d, n in pairs[:4]) or "none"))
        self.generators = []

    def down(self):
        if self.generators:
            self.stop_traffic()
        if self.net is not None and self.accounting:
            try:
                acct = self.read_accounting()
                with open(os.path.join(self.state, "accounting.json"), "w") as f:
                    json.dump(acct, f, indent=1)
                lossy = [f"{k} {v['lost']}" for k, v in acct["switches"].items() if v["lost"]]
                log("accounting: switches that lost frames: " + (", ".join(lossy) or "none") +
                    f"; load average up to {acct['load_max']:.1f} on {acct['cpus']} CPUs")
            except (RuntimeError, OSError, ValueError) as e:
                log(f"accounting: {e}")
            run(["nft", "delete", "table", "netdev", ACCT_TABLE])
            self.accounting = False
        if self.net is not None and self.faults:
            drops = self.fault_drops()
            for link, d in drops.items():
                rate = d["dropped"] / max(d["sent"] + d["dropped"], 1)
                log(f"fault {link}: dropped {d['dropped']} of {d['sent'] + d['dropped']} frames "
                    f"({100 * rate:.2f} %, injected {100 * d['loss']:g} %"
                    + (f" on {100 * d['flows']:g} % of flows)" if d["flows"] < 1 else ")"))
            with open(os.path.join(self.state, "fault_drops.json"), "w") as f:
                json.dump(drops, f, indent=1)
            if self.schedule_log:
                with open(os.path.join(self.state, "fault_schedule.json"), "w") as f:
                    json.dump(self.schedule_log, f, indent=1)
        if self.net is not None:
            self.save_link_load()
            for sw in self.net.switches:
                if sw.bmv2_pid is not None:
                    stop_pid(sw.bmv2_pid, f"simple_switch_grpc {sw.name}")
                    sw.bmv2_pid = None
            self.net.stop()
            self.net = None
        self.left = self.leftovers()
        for what in self.left:
            log(f"LEFT BEHIND: {what}")
        if not self.left:
            log("teardown: no interface or process left")

    def save_link_load(self):
        """Frames each directed link carried (tx of FROM's interface): STATE/link_load.json."""
        load = {}
        for x, y in self.links:
            for a, b in ((x, y), (y, x)):
                try:
                    with open(f"/sys/class/net/{self.intf(a, b)}/statistics/tx_packets") as f:
                        load[f"{a}->{b}"] = int(f.read())
                except OSError:
                    pass
        with open(os.path.join(self.state, "link_load.json"), "w") as f:
            json.dump(load, f, indent=1)

    def leftovers(self):
        out = []
        if subprocess.run(["nft", "list", "table", "netdev", ACCT_TABLE],
                          capture_output=True).returncode == 0:
            out.append(f"nftables table netdev {ACCT_TABLE}")
        existing = set(os.listdir("/sys/class/net"))
        with open(self.rec.intfs_path) as f:
            for name in f.read().split():
                if name in existing:
                    out.append(f"interface {name}")
        with open(self.rec.pids_path) as f:
            for line in f:
                kind, name, pid, _ = line.rstrip("\n").split("\t")
                if alive(int(pid)):
                    out.append(f"{kind} {name} pid {pid}")
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", required=True, help="normalized topology YAML (canary topology)")
    ap.add_argument("--p4-json", required=True, help="BMv2 JSON from bmv2/build.sh")
    ap.add_argument("--state", required=True, help="directory for switches.yaml, logs, PIDs")
    ap.add_argument("--faults", help="fault file (the controller's format); omit for none")
    ap.add_argument("--traffic", help="the canary binary; its `traffic` subcommand runs in every host")
    ap.add_argument("--traffic-arg", action="append", default=[],
                    help="extra argument for `canary traffic` (repeatable)")
    ap.add_argument("--traffic-trigger", metavar="FILE",
                    help="generators receive at once but send only once FILE exists (run.sh "
                    "creates it when the controller has programmed the switches); default: "
                    "send 2 s after start")
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
        while stop["sig"] is None:
            if args.parent and not alive(args.parent):
                log(f"parent {args.parent} is gone")
                break
            if args.hold and time.time() - t0 > args.hold:
                break
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
