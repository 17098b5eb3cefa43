#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The README's main command: installs what is missing, builds vcpusched,
# builds the tiny guest image, then runs the ping tail-latency comparison
# between libvirt domains (vcpusched's Credit, Credit with a 5 ms slice or a
# cap on the background, Credit2 alone and with the background VMs in the
# background class, and rr against the stock kernel scheduler
# and the operator's knobs: nice 19, SCHED_IDLE, cgroup weight, libvirt's
# fifo <vcpusched>; under no, CPU-bound, network-bound and bursty
# background VMs) and writes Markdown, JSON, plots and a Perfetto trace of
# the tail under bench/results/. Needs root (SCHED_FIFO, cgroups, tracefs,
# libvirtd). RT throttling stays as the kernel has it (pass
# --rt-runtime-us -1 to turn it off, only on Linux >= 6.12: the daemon
# refuses it on a kernel without the fair server); the result files say
# which was used. About 15 minutes on a 2-CPU host with the defaults (2
# repetitions x 150 pings per cell). Extra arguments go to
# bench/ping_latency.py (see --help).
#
# As root:
#   ./scripts/main.sh                          the default size
#   ./scripts/main.sh --reps 3 --count 1000    publication size (3,000 RTTs
#                                              per cell, about 80 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

if [ "$(id -u)" -ne 0 ]; then
    echo "main.sh: must run as root (from a root shell: ./scripts/main.sh)" >&2
    exit 1
fi
./scripts/deps.sh
echo "== build $top/build/main"
cmake -S "$top" -B "$top/build/main" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DVCPUSCHED_TESTS=OFF >/dev/null
cmake --build "$top/build/main" -j "$(nproc)"
echo "== guest image"
./vm-images/build-image.sh
echo "== ping latency between VMs (publication size: ./scripts/main.sh --reps 3 --count 1000)"
# The benchmark takes the host's test lock while its VMs run.
exec python3 bench/ping_latency.py --build "$top/build/main" "$@"
