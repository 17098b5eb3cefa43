#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The hostile operator's campaign (bench/soak.py): 100 kill -9 with QEMU
# guests attached, 20 restarts right after kill -9, the malformed-request
# corpus, 10 minutes of each fuzzer, 1,000 attach/detach and 100 guest
# start/kill cycles with the daemon's RSS and fds, 20 libvirtd restarts.
# About 75 minutes; not part of CI. Writes bench/results/soak-<date>.md.
#
# As root:  ./scripts/soak.sh [bench/soak.py options, e.g. --only kill9,malformed]
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
if [ "$(id -u)" -ne 0 ]; then
    echo "soak.sh: must run as root" >&2
    exit 1
fi
./scripts/deps.sh
cmake -S "$top" -B "$top/build/ci" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$top/build/ci" -j "$(nproc)"
CC=clang cmake -S "$top" -B "$top/build/fuzz" -G Ninja -DVCPUSCHED_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$top/build/fuzz" -j "$(nproc)"
"$top/vm-images/build-image.sh" >/dev/null
# The machine to itself, like the integration tests (tests/integration/run-exclusive).
exec "$top/tests/integration/run-exclusive" python3 "$top/bench/soak.py" \
    --build "$top/build/ci" --fuzz-build "$top/build/fuzz" \
    --command "./scripts/soak.sh${*:+ $*}" "$@"
