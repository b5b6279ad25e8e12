"""The fabric: Mininet hosts, BMv2 switches and their links; up, and down again."""

import json
import os
import subprocess
import threading
import time

import yaml
from mininet.log import setLogLevel
from mininet.net import Mininet

from . import accounting, canary, faults, neighbours, stalls, traffic
from .procs import Recorder, alive, host_run, log, port_free, port_open, run, stop_pid
from .switch import BMv2Switch
from .topology import InputError, host_mac, intf_name, load_topology, plan_ports

IFNAMSIZ = 15
# MTU of links between switches: room for Canary's 8-byte shim on a host's largest frame.
FABRIC_MTU = 9000


class Fabric:
    def __init__(self, args):
        self.args = args
        self.state = os.path.abspath(args.state)
        os.makedirs(os.path.join(self.state, "logs"), exist_ok=True)
        os.makedirs(os.path.join(self.state, "traffic"), exist_ok=True)
        self.switches, self.links = load_topology(args.topology)
        if args.faults is None:
            schedule = faults.Schedule({})
        else:
            try:
                binary = canary.find(args.canary or args.traffic)
            except canary.CanaryError as e:
                raise InputError(f"{args.faults}: {e}")
            schedule = faults.load(args.faults, args.topology, binary, args.epochs)
        self.faults = schedule.faults
        # For `canary run --out-of-service` (run.sh passes it when the file is there).
        maintenance = schedule.maintenance_yaml()
        if maintenance:
            with open(os.path.join(self.state, "out_of_service.yaml"), "w") as f:
                f.write(maintenance)
        self.ports = plan_ports(self.switches, self.links)
        self.injector = faults.Injector(schedule, self.intf, args.loss_method)
        self.hosts = [(h, a, s["name"]) for s in self.switches for h, a, _ in s["hosts"]]
        self.addr6 = {h: a6 for s in self.switches for h, _, a6 in s["hosts"]}
        if len(self.hosts) < 2:
            raise InputError(f"{args.topology}: switches: the fabric needs at least two hosts")
        self.rec = Recorder(self.state)
        self.net = None
        self.generators = []  # (host, Popen)
        self.warming = None  # the neighbour warm-up's thread, once the trigger appeared
        self.left = []
        self.accounting = False
        # 1-minute load average, sampled while the fabric runs (overload shows here first).
        self.load = []
        # Times the whole machine stood still under the fabric (`note_stall`).
        self.stalls = []

    def note_stall(self, last):
        """Records a stall of the whole machine since `last` (wall, monotonic); returns now."""
        now = (time.time(), time.monotonic())
        st = stalls.stall(last, now)
        if st is not None:
            self.stalls.append(st)
            log("stood still: " + stalls.said(st))
        return now

    def intf(self, switch, neighbour):
        return intf_name(self.ports, switch, neighbour)

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
        accounting.setup(self.ports, self.intf, host_names)
        self.accounting = True
        self.injector.start()
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
        inj = self.injector
        fault_doc = [{"link": [f.x, f.y], "loss": f.loss, "intf": inj.dev(f),
                      "method": inj.method_of(f), "flows": f.flows,
                      "from_epoch": f.start, "until_epoch": f.until, "period": f.period,
                      "on": f.on}
                     for f in self.faults]
        with open(os.path.join(self.state, "fabric.json"), "w") as f:
            json.dump({"hosts": hosts, "faults": fault_doc, "switches": doc["switches"]}, f,
                      indent=1)

    def start_traffic(self):
        self.generators = traffic.start(self.net, self.hosts, self.addr6, self.state, self.rec,
                                        self.args)

    def warm_when_triggered(self):
        """Once the traffic's trigger exists: the hosts' neighbour caches filled (in a thread,
        so that the fault schedule is followed meanwhile), then the generators' start file."""
        trigger = self.args.traffic_trigger
        if not trigger or self.warming is not None or not os.path.exists(trigger):
            return

        def warm_then_go():
            try:
                if self.args.neighbours == "pinned":
                    neighbours.warm(self.net, self.hosts, self.addr6)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                log(f"{e}: the traffic starts all the same")
            with open(traffic.warm_file(trigger), "w"):
                pass

        self.warming = threading.Thread(target=warm_then_go, daemon=True)
        self.warming.start()

    def follow_schedule(self):
        self.injector.follow(self.state)

    def down(self):
        generators = {}
        if self.generators:
            traffic.stop(self.generators, self.state)
            generators = traffic.counts(self.generators, self.state)
            self.generators = []
        if self.net is not None and self.accounting:
            try:
                injected = {k: v["dropped"] for k, v in self.injector.drops().items()}
                acct = accounting.read(self.links, self.ports, self.intf, injected, self.load,
                                       [(h, s) for h, _, s in self.hosts], generators,
                                       self.stalls)
                with open(os.path.join(self.state, "accounting.json"), "w") as f:
                    json.dump(acct, f, indent=1)
                lossy = [f"{k} {v['lost']}" for k, v in acct["switches"].items() if v["lost"]]
                log("accounting: switches that lost frames: " + (", ".join(lossy) or "none") +
                    f"; load average up to {acct['load_max']:.1f} on {acct['cpus']} CPUs")
            except (RuntimeError, OSError, ValueError) as e:
                log(f"accounting: {e}")
            accounting.remove()
            self.accounting = False
        if self.net is not None and self.faults:
            drops = self.injector.drops()
            for link, d in drops.items():
                rate = d["dropped"] / max(d["sent"] + d["dropped"], 1)
                log(f"fault {link}: dropped {d['dropped']} of {d['sent'] + d['dropped']} frames "
                    f"({100 * rate:.2f} %, injected {100 * d['loss']:g} %"
                    + (f" on {100 * d['flows']:g} % of flows)" if d["flows"] < 1 else ")"))
            with open(os.path.join(self.state, "fault_drops.json"), "w") as f:
                json.dump(drops, f, indent=1)
            if self.injector.log:
                with open(os.path.join(self.state, "fault_schedule.json"), "w") as f:
                    json.dump(self.injector.log, f, indent=1)
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
        if accounting.present():
            out.append(f"nftables table netdev {accounting.TABLE}")
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
