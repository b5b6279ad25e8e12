"""Processes, ports and what the fabric records for run.sh's last-resort clean-up."""

import os
import signal
import socket
import subprocess
import sys
import time


def log(msg):
    print(f"fabric: {msg}", file=sys.stderr, flush=True)


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
