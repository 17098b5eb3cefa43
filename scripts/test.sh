#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The README's test command: installs what is missing, builds with -Werror,
# runs every test (unit, simulator, integration on real threads, QEMU and
# libvirtd, and the real-host rig: a 4-CPU, 2-node VM with systemd, cgroup
# v2 and libvirt, tests/rig), checks the Debian package
# (scripts/check-package.sh), boots real Xen under QEMU for one share check
# (bench/xen), then rebuilds with ASan+UBSan and runs them all again but the
# rig, then with TSan the tests that run threads, then checks formatting and
# runs the fuzzers briefly. Needs root (SCHED_FIFO, cgroups, BPF, libvirtd,
# virtiofsd).
#
# As root:
#   ./scripts/test.sh            everything
#   ./scripts/test.sh --quick    one build, no rig, no sanitizers, no fuzzing
#   ./scripts/test.sh --rig      one build, the rig's tests alone
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

mode=all
case ${1:-} in
--quick) mode=quick ;;
--rig) mode=rig ;;
'') ;;
*) echo "test.sh: unknown option '$1' (--quick or --rig)" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
    echo "test.sh: must run as root (from a root shell: ./scripts/test.sh)" >&2
    exit 1
fi
./scripts/deps.sh
jobs=$(nproc)

run_suite() { # name, extra cmake args... [-- extra ctest args...]
    local dir="$top/build/$1" cmake_args=() ctest_args=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do cmake_args+=("$1"); shift; done
    [ $# -gt 0 ] && shift && ctest_args=("$@")
    echo "== build $dir"
    cmake -S "$top" -B "$dir" -G Ninja -DVCPUSCHED_WERROR=ON "${cmake_args[@]}" >/dev/null
    cmake --build "$dir" -j "$jobs"
    echo "== test $dir"
    # Integration tests serialise themselves (tests/integration/run-exclusive).
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900 "${ctest_args[@]}"
}

# The rig boots once (rig.boot, alone: it takes both CPUs), then each rig
# test reports its result; the sanitizer builds leave it out.
case $mode in
rig) run_suite ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -- -L '^rig$'; exit 0 ;;
quick) run_suite ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -- -LE '^rig$'; exit 0 ;;
esac
run_suite ci -DCMAKE_BUILD_TYPE=RelWithDebInfo

# The Debian package: contents, lintian, install/purge in a clean Debian 12
# root, the unit verified, the packaged daemon run (docs/packaging.md). The
# rig built it from the same sources already: scripts/build-deb.sh reuses it.
echo "== package"
./scripts/check-package.sh "$top/build/ci"

# Real Xen 4.17 (Debian's packages, fetched, never installed) booted under
# QEMU: one 2:1 weight split under Credit (bench/xen). ~2 min under TCG
# (first run: +1 min to fetch and build the rig into bench/xen/cache).
echo "== xen reference smoke"
python3 bench/xen/compare.py --smoke --window 10

ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    VCPUSCHED_SANITIZER=address run_suite asan -DCMAKE_BUILD_TYPE=Debug -DVCPUSCHED_SANITIZE=ON \
    -- -LE '^rig$'

# ThreadSanitizer on what runs threads: the control server, the event
# source, the daemon's dispatchers (both patterns), its libvirt watcher and vCPU
# resync threads, a move between pools (integration.move) and its metrics
# file (written from the control loop while dispatchers run).
# A report stops the reporting process (halt_on_error): a test, or the
# daemon, whose log the tests check (tests/integration/vstest.py).
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" VCPUSCHED_SANITIZER=thread \
    run_suite tsan -DCMAKE_BUILD_TYPE=Debug -DVCPUSCHED_TSAN=ON \
    -- -R '^(unit\.(common|policy|events)|integration\.(control|events|daemon|service|policies|libvirt|move|top))$'

echo "== format"
git ls-files '*.c' '*.h' | grep -v '^vm-images/' | xargs clang-format --dry-run -Werror

echo "== clang -Werror build, fuzz (60 s per target)"
CC=clang cmake -S "$top" -B "$top/build/fuzz" -G Ninja -DVCPUSCHED_WERROR=ON -DVCPUSCHED_FUZZ=ON \
    -DVCPUSCHED_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# Everything, so clang -Werror sees every file, not only the fuzzers.
cmake --build "$top/build/fuzz" -j "$jobs"
for f in "$top"/build/fuzz/tests/fuzz_*; do
    [ -f "$f" ] && [ -x "$f" ] || continue # not the corpus folders beside them
    name=$(basename "$f")
    opts=(-max_total_time=60 -print_final_stats=1)
    if [ -f "$top/tests/fuzz/$name.dict" ]; then
        opts+=("-dict=$top/tests/fuzz/$name.dict")
    fi
    # New inputs go to the first (writable) corpus; the checked-in seeds are read.
    corpora=("$top/build/fuzz/corpus-$name")
    mkdir -p "${corpora[0]}"
    if [ -d "$top/tests/fuzz/corpus/$name" ]; then
        corpora+=("$top/tests/fuzz/corpus/$name")
    fi
    "$f" "${opts[@]}" "${corpora[@]}" 2>&1 | tail -3
done
echo "== all tests passed"
