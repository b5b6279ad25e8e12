"""The normalized topology file (`canary topology SPEC`), BMv2 ports and interface names."""

import yaml


class InputError(Exception):
    """A bad topology or fault file; the message names the file and the field."""


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


def intf_name(ports, switch, neighbour):
    """The interface of `switch` toward `neighbour`: SWITCH-ethPORT is BMv2 port PORT."""
    return f"{switch}-eth{ports[switch][neighbour]}"


def host_mac(addr):
    """A locally administered unicast MAC from the host's IPv4 address: 02:00:a:b:c:d."""
    return "02:00:" + ":".join(f"{int(o):02x}" for o in addr.split("."))
