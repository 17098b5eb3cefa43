#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The README's main command: installs what is missing, builds vcpusched,
# builds the tiny guest image, then runs the ping tail-latency comparison
# between VMs (stock kernel scheduler vs Credit vs Credit2, under no, CPU-
# bound and network-bound background VMs) and writes the results under
# bench/results/. Needs root (SCHED_FIFO, cgroups, BPF). Extra arguments go
# to bench/ping_latency.py (see --help), e.g. --reps 5 --count 1000.
#
# As root:
#   ./scripts/main.sh
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
echo "== ping latency between VMs: kernel vs credit vs credit2"
# The benchmark takes the host's test lock while its VMs run.
exec python3 bench/ping_latency.py --build "$top/build/main" "$@"
