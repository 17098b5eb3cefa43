#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# Install everything vcpusched needs from Debian 12's packages. Idempotent;
# needs root. Used by both README commands (scripts/test.sh with --tests)
# and by .ci/run.
set -euo pipefail

pkgs=(
    # build
    build-essential cmake ninja-build pkg-config git
    libjson-c-dev libnuma-dev libvirt-dev libxml2-dev check
    clang llvm libbpf-dev bpftool libclang-rt-14-dev
    clang-format cppcheck valgrind
    # the Debian package and its checks (scripts/build-deb.sh, check-package.sh)
    debhelper lintian debootstrap systemd
    # run: VMs, libvirt, guest image
    qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients
    busybox-static iperf3 iproute2 iputils-ping cpio
    # tools the tests and benchmarks call
    numactl util-linux procps psmisc kmod python3 gnuplot-nox python3-matplotlib
    # the operator's view: metrics parsed by a real OpenMetrics parser, top on a real terminal
    python3-prometheus-client tmux
    # the real-host rig boots this machine's root under systemd (tests/rig);
    # with AppArmor's tools its kernel confines libvirtd as on a default
    # Debian 12 host (a kernel without AppArmor, as this machine's may be,
    # makes them do nothing)
    systemd dbus apparmor apparmor-utils
)
# --tests: what only the tests need. The metrics file scraped by Debian's
# node_exporter and checked by promtool (the prometheus package's) in the
# rig, where their services stay masked; on a host with systemd their
# postinst starts them.
if [ "${1:-}" = --tests ]; then
    pkgs+=(prometheus-node-exporter prometheus)
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: run as root (it installs packages)" >&2
    exit 1
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export DEBIAN_FRONTEND=noninteractive
# Package lists refreshed in the last hour (.ci/run has just done it) are
# fresh enough.
fresh_lists() {
    if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages' -mmin -60 2>/dev/null | head -1)" ]; then
        apt-get update
    fi
}
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "deps.sh: all ${#pkgs[@]} packages present"
else
    echo "deps.sh: installing ${missing[*]}"
    fresh_lists
    apt-get install -y --no-install-recommends "${missing[@]}"
fi
# The guests' kernel, unpacked, not installed (a bootloader would offer it):
# vm-images/guest-kernel.sh, once per kernel version. Where the mirror
# cannot serve it, a cloud kernel installed before (by an earlier deps.sh)
# still does (vm-images/build-image.sh takes either).
if ! "$here/../vm-images/guest-kernel.sh" >/dev/null 2>&1; then
    fresh_lists || true
    if ! "$here/../vm-images/guest-kernel.sh" >/dev/null; then
        compgen -G '/boot/vmlinuz-*-cloud-amd64' >/dev/null || exit 1
        echo "deps.sh: the guests' kernel could not be fetched: the installed cloud kernel serves" >&2
    fi
fi
