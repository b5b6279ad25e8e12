"""Runs the testbed's droppers (dropper.py) in the real kernel and counts what they let through.

In a throwaway network namespace: a veth pair, the program on one end's clsact egress, frames
sent there from a packet socket and counted at the other end per flow. Prints one JSON object:
for each case, the frames sent and received of every flow. Needs root, `ip` and `tc`.

    python3 testbed/check_dropper.py            # makes and removes namespace canary-dropper-check
"""
import errno
import json
import os
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dropper  # noqa: E402

NS = "canary-dropper-check"
FRAMES_PER_FLOW = 20


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {p.stderr.strip()}")


def frame(kind, flow):
    """A frame of flow number `flow`: IPv4 or IPv6 UDP, with or without the Canary shim, or ARP."""
    eth = lambda t: b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + struct.pack("!H", t)
    ports = struct.pack("!HHHH", 40000 + flow, 9000, 8 + 16, 0) + bytes(16)
    if kind == "arp":
        return eth(0x0806) + bytes(28) + bytes(18)
    if kind.startswith("v4"):
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(ports), flow, 0, 64, 17, 0,
                         bytes([10, 0, flow // 256, flow % 256]), bytes([10, 1, 0, 1]))
        inner = 0x0800
    else:
        ip = struct.pack("!IHBB16s16s", 6 << 28, len(ports), 17, 64,
                         bytes(14) + struct.pack("!H", flow), b"\xfd" + bytes(14) + b"\x01")
        inner = 0x86DD
    if kind.endswith("shim"):
        shim = struct.pack("!IHH", 0x12345678, 0x8001, inner)
        return eth(0x88B5) + shim + ip + ports
    return eth(inner) + ip + ports


def case(name, prog, kind, flows):
    run(["tc", "filter", "replace", "dev", "tx0", "egress", "pref", "1", "handle", "1", "bpf", "da",
         "bytecode", prog])
    # Protocol 0 until bind: ETH_P_ALL at socket() would queue other interfaces' frames first.
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    rx.bind(("rx0", 3))  # ETH_P_ALL, only on rx0
    rx.settimeout(0.5)
    rx.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE: hold every frame sent
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind(("tx0", 0))
    frames = {}
    for f in range(flows):
        frames[frame(kind, f)] = f
        for _ in range(FRAMES_PER_FLOW):
            try:
                tx.send(frame(kind, f))
            except OSError as e:
                # A frame the filter drops comes back as NET_XMIT_DROP, i.e. ENOBUFS.
                if e.errno != errno.ENOBUFS:
                    raise
    got = {f: 0 for f in range(flows)}
    deadline = time.time() + 2
    while time.time() < deadline:
        try:
            data = rx.recv(2048)
        except socket.timeout:
            break
        f = frames.get(data)
        if f is not None:
            got[f] += 1
    rx.close()
    tx.close()
    return {"case": name, "kind": kind,
            "flows": [{"flow": f, "sent": FRAMES_PER_FLOW, "received": got[f]} for f in range(flows)]}


def inside():
    run(["ip", "link", "add", "tx0", "type", "veth", "peer", "name", "rx0"])
    for dev in ("tx0", "rx0", "lo"):
        run(["ip", "link", "set", dev, "up"])
    run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
    run(["tc", "qdisc", "add", "dev", "tx0", "clsact"])
    time.sleep(0.2)
    out = []
    half_a = dropper.flow_share_drop(1.0, 0.5, dropper.link_seed("x", "y"))
    half_b = dropper.flow_share_drop(1.0, 0.5, dropper.link_seed("y", "x"))
    for kind in ("v4_shim", "v6_shim", "v4", "v6"):
        out.append(case("share 0.5, loss 1, seed x->y", half_a, kind, 64))
        out.append(case("share 0.5, loss 1, seed y->x", half_b, kind, 64))
    out.append(case("share 0.5, loss 1, seed x->y", half_a, "arp", 1))
    out.append(case("share 0.25, loss 0.5", dropper.flow_share_drop(0.5, 0.25, 7), "v4_shim", 64))
    out.append(case("random 0.3", dropper.random_drop(0.3), "v4_shim", 16))
    print(json.dumps(out))


def main():
    if "--inside" in sys.argv:
        inside()
        return
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    run(["ip", "netns", "add", NS])
    try:
        p = subprocess.run(["ip", "netns", "exec", NS, sys.executable, os.path.abspath(__file__),
                            "--inside"], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"check_dropper: {p.stderr.strip()}")
        sys.stdout.write(p.stdout)
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


if __name__ == "__main__":
    main()
