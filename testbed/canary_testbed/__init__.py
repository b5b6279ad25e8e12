"""The testbed's fabric (fabric.py), by concern.

topology   the normalized topology file, ports and interface names
canary     what `canary` resolves for the testbed: faults, schedule, decision statistics
faults     the injectors: netem or a classic-BPF dropper per faulty link, on Canary's schedule
accounting where the generators' frames were lost (nftables counters at both ends of a link)
traffic    the hosts' generators (`canary traffic`) and their summary
procs      processes, ports and records for run.sh's last-resort clean-up
switch     the Mininet node that runs one simple_switch_grpc (needs Mininet)
net        the fabric: up, hold, down (needs Mininet)

Only `switch` and `net` import Mininet; the others run anywhere (testbed/tests).
"""
