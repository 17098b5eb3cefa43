#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The README's test command: installs what is missing, builds with -Werror
# (plain, ASan+UBSan, TSan), runs the tests of the plain build (unit,
# simulator, integration on real threads, QEMU and libvirtd, the timing
# tests alone on the machine, the benchmarks at a tiny size), then the
# real-host rig (a 4-CPU, 2-node VM with systemd, cgroup v2, AppArmor and
# libvirt, tests/rig) while, beside it, the functional tests run again
# under ASan+UBSan (the Python modules' functional tests, label beside,
# run there only) and those that run threads under TSan (no timing test: the
# sanitizers check memory and races, not shares), formatting is checked,
# the fuzzers run briefly and the Debian package is checked
# (scripts/check-package.sh); last, alone, real Xen booted under QEMU for
# one share check (bench/xen). Needs root (SCHED_FIFO, cgroups, BPF,
# libvirtd, virtiofsd).
#
# Each stage prints its time against its budget (the whole run: 30 minutes
# on a 2-CPU machine, apt included; the stages' budgets add up to it, the
# rig's the widest, its time set by the host's speed under TCG:
# tests/rig/README.md); each suite ends with the ten smallest margins of
# its timing checks, and a failed suite lists
# its failed tests and their margins before their output
# (scripts/margins.py).
#
# As root:
#   ./scripts/test.sh            everything
#   ./scripts/test.sh --quick    one build, no rig, no VMs, no sanitizers, no fuzzing
#   ./scripts/test.sh --rig      one build, the rig's tests alone, all of them
#                                (the rig's set "full"; CI runs set "ci": tests/rig/tests.list)
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
jobs=$(nproc)

# --- stages: each one's time against its budget ------------------------------
t_start=$(date +%s)
stage_name='' stage_budget=0 stage_t0=0 stages=()
stage() { # NAME BUDGET_S: ends the stage before, starts this one
    local now
    now=$(date +%s)
    if [ -n "$stage_name" ]; then
        stages+=("$(printf '%-28s %5d s  (budget %4d s)%s' "$stage_name" $((now - stage_t0)) \
            "$stage_budget" "$([ $((now - stage_t0)) -gt "$stage_budget" ] && echo '  OVER')")")
    fi
    stage_name=$1 stage_budget=${2:-0} stage_t0=$now
    [ -n "$stage_name" ] && echo "== $stage_name (budget ${stage_budget} s)"
    return 0
}
report_stages() {
    local rc=$? total
    stage ''
    total=$(($(date +%s) - t_start))
    echo "== stage times ($mode)"
    printf '  %s\n' "${stages[@]}"
    printf '  %-28s %5d s  (budget %4d s)\n' total "$total" "$budget_total"
    return $rc
}
case $mode in all) budget_total=1800 ;; quick) budget_total=600 ;; rig) budget_total=900 ;; esac
trap report_stages EXIT

stage deps 120
./scripts/deps.sh --tests

build_suite() { # name, extra cmake args...
    local dir="$top/build/$1"
    shift
    echo "== build $dir"
    cmake -S "$top" -B "$dir" -G Ninja -DVCPUSCHED_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
}

test_suite() { # name [extra ctest args...]
    local dir="$top/build/$1" rc=0
    shift
    echo "== test $dir $*"
    # Host tests run one at a time (RESOURCE_LOCK host), timing tests alone
    # (RUN_SERIAL); the output of a failed test comes after its margins.
    ctest --test-dir "$dir" -j "$jobs" --timeout 900 "$@" || rc=$?
    if [ $rc -ne 0 ]; then
        python3 scripts/margins.py "$dir" --failed
        return $rc
    fi
    python3 scripts/margins.py "$dir"
}

ci_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DVCPUSCHED_RIG_SET=ci)
asan_args=(-DCMAKE_BUILD_TYPE=Debug -DVCPUSCHED_SANITIZE=ON)
tsan_args=(-DCMAKE_BUILD_TYPE=Debug -DVCPUSCHED_TSAN=ON)
rm -f "$top/build/ci/margins.jsonl"
case $mode in
rig)
    stage 'rig' 900
    build_suite ci "${ci_args[@]}" -DVCPUSCHED_RIG_SET=full
    test_suite ci -L '^rig$'
    exit 0 ;;
quick)
    stage 'build and test (quick)' 540
    build_suite ci "${ci_args[@]}"
    test_suite ci -LE '^(rig|vm|bench)$'
    exit 0 ;;
esac

stage 'build: ci, asan, tsan' 90
build_suite ci "${ci_args[@]}"
build_suite asan "${asan_args[@]}"
build_suite tsan "${tsan_args[@]}"

# Everything of the first build but the rig and what runs beside it (label
# beside: the Python modules' functional tests, which run under ASan beside
# the rig): the timing tests alone on the machine, the unit, simulator and
# C integration tests, the guest image's and the benchmarks', host tests
# one at a time.
stage 'test: ci (timing, functional, VMs, benchmarks)' 450
test_suite ci -LE '^(rig|beside)$'

# The real-host rig (a TCG VM taking both CPUs for 8-20 minutes with the
# host's speed; rig.boot, then one ctest test per rig test of its set "ci":
# tests/rig/tests.list) runs beside what has no timing check:
# the sanitizer suites (functional tests, deadlines stretched), formatting,
# the fuzzers, then the Debian package's checks (contents, lintian,
# install/purge in a clean Debian 12 root, the unit verified, the packaged
# daemon run: docs/packaging.md; the rig built the package from the same
# sources, scripts/build-deb.sh reuses it or waits for it). The rig changes
# nothing on the host; its own checks are shares and idle time inside the
# VM, which the host's load does not move.
stage 'rig, beside asan+ubsan, tsan, format, fuzz, package' 960
rig_log=$top/build/rig-ctest.log
test_suite ci -L '^rig$' >"$rig_log" 2>&1 &
rig_pid=$!
side_work() {
    set -e
    # The functional tests: not the rig's, the benchmarks' or the timing
    # ones, nor the guest image's (vm: they run no binary of ours).
    echo "== asan+ubsan"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        VCPUSCHED_SANITIZER=address test_suite asan -LE '^(rig|bench|timing|vm)$'

    # ThreadSanitizer on what runs threads: the control server, the event
    # source, the daemon's dispatchers (both patterns), its libvirt watcher
    # and vCPU resync threads, a move between pools (integration.move) and
    # its metrics file (written from the control loop while dispatchers
    # run); functional tests only. A report stops the reporting process
    # (halt_on_error): a test, or the daemon, whose log the tests check
    # (tests/integration/vstest.py).
    echo "== tsan"
    TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" VCPUSCHED_SANITIZER=thread \
        test_suite tsan -LE '^timing$' \
        -R '^(unit\.(common|policy|events)|integration\.(control|events|daemon|service|policies|libvirt|move|top))$'

    echo "== format"
    git ls-files '*.c' '*.h' | grep -v '^vm-images/' | xargs clang-format --dry-run -Werror

    fuzz_s=20
    echo "== clang -Werror build, fuzz ($fuzz_s s per target)"
    CC=clang cmake -S "$top" -B "$top/build/fuzz" -G Ninja -DVCPUSCHED_WERROR=ON -DVCPUSCHED_FUZZ=ON \
        -DVCPUSCHED_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    # Everything, so clang -Werror sees every file, not only the fuzzers.
    cmake --build "$top/build/fuzz" -j "$jobs"
    for f in "$top"/build/fuzz/tests/fuzz_*; do
        [ -f "$f" ] && [ -x "$f" ] || continue # not the corpus folders beside them
        name=$(basename "$f")
        opts=(-max_total_time=$fuzz_s -print_final_stats=1)
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

    echo "== package"
    ./scripts/check-package.sh "$top/build/ci"
}
# In a job of its own: set -e holds there (not in a subshell whose status
# is tested).
side_rc=0
side_work &
wait $! || side_rc=$?
rig_rc=0
echo "== rig: waiting for it"
wait "$rig_pid" || rig_rc=$?
cat "$rig_log"
[ $side_rc -eq 0 ] || { echo "test.sh: a suite beside the rig failed (exit $side_rc)" >&2; exit $side_rc; }
[ $rig_rc -eq 0 ] || { echo "test.sh: the rig failed (exit $rig_rc)" >&2; exit $rig_rc; }

# Real Xen 4.17 (Debian's packages, fetched, never installed) booted
# under QEMU: one 2:1 weight split under Credit (bench/xen). Alone: its
# share is Xen's accounting inside TCG, which the host's load would blur.
stage 'xen reference smoke' 180
python3 bench/xen/compare.py --smoke --window 10 ||
    { rc=$?; echo "test.sh: the Xen smoke failed (exit $rc)" >&2; exit $rc; }

echo "== all tests passed"
