# SPDX-License-Identifier: ISC
# shellcheck shell=bash
#
# Sourced by the tests/integration/vm_*.sh tests: a scratch directory, guest
# start helpers that keep every pidfile in it, and a cleanup trap that stops
# every QEMU (and the private libvirtd, if one was started) even on failure.
set -euo pipefail

vm_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../vm-images" && pwd)
it_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
test_name=$(basename "$0" .sh)
# 0755: libvirt's QEMU runs as libvirt-qemu and writes its serial log here.
T=$(mktemp -d "/tmp/vcpusched-$test_name.XXXXXX")
chmod 0755 "$T"
libvirt_started=0
failures=0

note() { echo "# $*"; }
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; failures=$((failures + 1)); }
bail() { echo "Bail out! $*"; exit 1; }

check() {
    local what=$1
    shift
    if "$@"; then ok "$what"; else not_ok "$what"; fi
}

# Every QEMU whose command line names our scratch directory: a backstop for
# guests whose pidfile was lost.
stray_qemus() {
    local p
    for p in /proc/[0-9]*; do
        case $(readlink "$p/exe" 2>/dev/null) in */qemu-system-*) ;; *) continue ;; esac
        tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF "$T/" && echo "${p#/proc/}"
    done
    return 0
}

cleanup() {
    local rc=$? f p
    set +e
    for f in "$T"/*.pid; do
        [ ! -e "$f" ] || "$vm_dir/stop-guest" "$f"
    done
    if [ $libvirt_started = 1 ]; then
        VS_LIBVIRT_SCRATCH=$T/libvirt "$it_dir/libvirtd-private.sh" stop >/dev/null 2>&1
    fi
    for p in $(stray_qemus); do
        echo "# killing stray QEMU pid $p" >&2
        kill -KILL "$p"
    done
    if [ $rc -ne 0 ] || [ $failures -ne 0 ]; then
        echo "# scratch kept for inspection: $T" >&2
        for f in "$T"/*.log; do
            [ -f "$f" ] || continue
            echo "# --- $f" >&2
            tail -n 20 "$f" | sed 's/^/#   /' >&2
        done
    else
        rm -rf "$T"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
    if [ $failures -ne 0 ]; then
        echo "# $failures check(s) failed"
        exit 1
    fi
    echo "# all checks passed"
}

# The image, built or reused, before anything is timed.
image() {
    eval "$("$vm_dir/build-image.sh")"
}

# A pair of free UDP ports on 127.0.0.1, as "LOCAL REMOTE".
udp_ports() {
    local a
    while :; do
        a=$((20000 + RANDOM % 20000 * 2))
        ss -Hlun "( sport = :$a or sport = :$((a + 1)) )" | grep -q . || break
    done
    echo "$a $((a + 1))"
}

# start NAME ARGS...: run-guest with the serial log and pidfile in $T (where
# cleanup finds it); prints the pid.
start() {
    local n=$1
    shift
    "$vm_dir/run-guest" --name "$n" --serial "$T/$n.log" --pidfile "$T/$n.pid" \
        --kernel "$VS_KERNEL" --initrd "$VS_INITRD" "$@"
}

# wait_line FILE REGEX SECONDS: true once a line of FILE matches.
wait_line() {
    local f=$1 re=$2 secs=$3
    for _ in $(seq $((secs * 10))); do
        grep -Eq "$re" "$f" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

now() { date +%s.%N; }
elapsed() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.2f", e - s }'; }

# tid of vCPU n (thread named "CPU n/TCG" or "CPU n/KVM") of QEMU pid.
vcpu_tid() {
    local pid=$1 n=$2 t
    for t in /proc/"$pid"/task/*; do
        grep -Eq "^CPU $n/(TCG|KVM)\$" "$t/comm" 2>/dev/null && { echo "${t##*/}"; return 0; }
    done
    return 1
}

# True when pid is gone or a zombie (init reaps daemonized QEMUs late).
gone() {
    [ "$(thread_state "$1")" = Z ] || [ ! -e "/proc/$1" ]
}

# wait_gone PID SECONDS: true once the process is gone.
wait_gone() {
    for _ in $(seq $(($2 * 10))); do
        gone "$1" && return 0
        sleep 0.1
    done
    return 1
}

# One-letter state of a task (R, S, D, Z...); comm may hold spaces.
thread_state() {
    sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1
}

# qmp SOCKET COMMAND: the reply of one QMP command (JSON on one line).
qmp() {
    python3 - "$1" "$2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()
for cmd in ("qmp_capabilities", sys.argv[2]):
    f.write(json.dumps({"execute": cmd}) + "\n")
    f.flush()
    while True:
        msg = json.loads(f.readline())
        if "return" in msg or "error" in msg:
            break
print(json.dumps(msg))
PY
}

run_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }

# Share of wall time thread tid ran during SECONDS, from /proc/<tid>/schedstat.
busy_share() {
    local tid=$1 secs=$2 r0 r1 t0
    r0=$(run_ns "$tid")
    t0=$(now)
    sleep "$secs"
    r1=$(run_ns "$tid")
    awk -v a="$r0" -v b="$r1" -v s="$t0" -v e="$(now)" 'BEGIN { printf "%.3f", (b - a) / 1e9 / (e - s) }'
}

# p-th percentile (nearest rank) of the numbers on stdin.
percentile() {
    sort -n | awk -v p="$1" '{ v[NR] = $1 } END { i = int((p * NR + 99) / 100); if (i < 1) i = 1; print v[i] }'
}
