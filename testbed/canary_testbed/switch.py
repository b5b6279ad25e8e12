"""The Mininet switch node whose data plane is one simple_switch_grpc."""

import os
import subprocess

from mininet.node import Switch

from .procs import stop_pid


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
