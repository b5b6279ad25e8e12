#!/usr/bin/env bash
# Install what the Mininet testbed needs from Debian (idempotent; run as root on Debian 12).
#   testbed/install.sh            # installs what is missing, prints what it did
#   testbed/install.sh --check    # only says what is missing (exit 1 if anything is)
#
# Debian packages:
#   mininet      Mininet 2.3 for /usr/bin/python3 (hosts in namespaces, veth links, mnexec).
#                Installed --no-install-recommends: its Recommends is openvswitch-switch, which the
#                testbed never uses (our switches are BMv2 processes; no OVS kernel module).
#   iproute2     ip netns / ip link / tc (netem is in the kernel's sch_netem, tc drives it)
#   ethtool      turns off checksum offload on veths (BMv2 forwards raw frames; a partial
#                checksum left by offload would reach the destination host as a bad one)
#   python3-yaml topology and SWITCHES.yaml I/O for the testbed's Python
#   nftables     `nft`: the BMv2 daemon tests (control/canary/tests/daemon_bmv2/) drop packets
#                with a netdev egress rule where the kernel has no sch_netem
#   openssl      the P4Runtime TLS test (control/switch/tests/p4rt_tls.rs) makes its certificates
#   prometheus   promtool checks deploy/'s rules and a real Prometheus scrapes canary
#   prometheus-alertmanager
#                receives the alerts end to end (control/canary/tests/alerts_end_to_end.rs)
#   chromium, chromium-driver
#                the live page's browser test (control/canary/tests/page_browser.rs, WebDriver)
#                (control/canary/tests/deploy_prometheus.rs, prometheus_scrape.rs)
# (flock, setsid: util-linux, always there.)
# Not from Debian: p4c and BMv2 (simple_switch_grpc, simple_switch_CLI); see DEVELOPERS.md /
# README. This script only says whether they are on PATH.
set -euo pipefail
pkgs=(mininet iproute2 ethtool python3-yaml nftables openssl prometheus prometheus-alertmanager
      chromium chromium-driver)
check_only=0
[ "${1:-}" = "--check" ] && check_only=1

missing=()
for p in "${pkgs[@]}"; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        echo "ok        $p $(dpkg-query -W -f='${Version}' "$p")"
    else
        missing+=("$p")
        echo "missing   $p"
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    if [ $check_only = 1 ]; then
        echo "run testbed/install.sh (as root) to install: ${missing[*]}" >&2
        exit 1
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "error: installing ${missing[*]} needs root" >&2
        exit 1
    fi
    echo "apt-get update"
    apt-get update -q
    echo "apt-get install --no-install-recommends ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    echo "installed: ${missing[*]}"
else
    echo "nothing to install"
fi

if dpkg-query -W -f='${Status}' openvswitch-switch 2>/dev/null | grep -q "install ok installed"; then
    echo "note: openvswitch-switch is installed; the testbed does not use it"
fi
for tool in p4c simple_switch_grpc simple_switch_CLI; do
    if command -v "$tool" >/dev/null 2>&1; then
        echo "ok        $tool $(command -v "$tool")"
    else
        echo "missing   $tool (not a Debian package: DEVELOPERS.md says where p4c and BMv2 come from)"
    fi
done
/usr/bin/python3 -c 'import mininet.net, yaml' && echo "ok        /usr/bin/python3 imports mininet, yaml"
