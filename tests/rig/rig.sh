#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The real-host rig: boots this machine's own Debian 12 userland (its root
# read-only over virtiofs, a tmpfs overlay on top, systemd as PID 1, cgroup
# v2 only) in a QEMU VM with 4 vCPUs in 2 NUMA nodes, KVM where the host has
# it and TCG otherwise, and runs one job there from this source tree: by
# default the rig suite (tests/rig/suite.py; --set ci: CI's set of its
# tests, full: all, the default), whose TAP results, logs and
# facts come back in OUT. Builds happen here, before boot: the Debian
# package (scripts/build-deb.sh, reused when the sources have not changed),
# which the VM installs with dpkg and systemd runs; the VM sees this tree
# and the build at the same paths. See tests/rig/README.md.
#
# usage: rig.sh --build DIR --out DIR [--timeout SEC] [--accel auto|kvm|tcg]
#               [--set ci|full] [-- COMMAND ARGS...]
# Exits with the job's status (the suite: 0 once every test has reported).
# QEMU, both virtiofsd and their mount namespaces go away with this script,
# however it ends (an EXIT trap, and PR_SET_PDEATHSIG should it be killed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
vm=$src/vm-images
build='' out='' timeout=3000 accel=auto set=full
cmd=()

die() { echo "rig: $*" >&2; exit 2; }
log() { echo "rig: $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --accel) accel=$2; shift 2 ;;
    --set) set=$2; shift 2 ;;
    --) shift; cmd=("$@"); break ;;
    -h | --help) sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
    esac
done
[ "$(id -u)" -eq 0 ] || die "needs root (virtiofsd, namespaces)"
[ -n "$build" ] && [ -x "$build/vcpusched/vcpuschedd" ] || die "--build DIR: no vcpusched/vcpuschedd there (build first)"
[ -n "$out" ] || die "--out DIR is required"
case $timeout in '' | *[!0-9]*) die "--timeout: '$timeout' is not a number of seconds" ;; esac
case $set in ci | full) ;; *) die "--set: '$set' is not ci or full" ;; esac
case $accel in auto) accel=$("$vm/accel") ;; kvm | tcg) ;; *) die "--accel: '$accel' is not auto, kvm or tcg" ;; esac
build=$(realpath "$build")
# The VM finds these at the same paths, and systemd reads them from job.env.
for p in "$src" "$build" "$vm"; do
    case $p in *[!A-Za-z0-9._/+-]*) die "path '$p' has characters the job file cannot carry" ;; esac
done
virtiofsd=/usr/lib/qemu/virtiofsd
for t in qemu-system-x86_64 unshare setpriv numactl "$virtiofsd" /lib/systemd/systemd; do
    command -v "$t" >/dev/null || die "$t not found (run scripts/deps.sh)"
done
[ ${#cmd[@]} -gt 0 ] || cmd=(python3 tests/rig/suite.py --out /rig --set "$set")

# The rig's initramfs and the nested guest's image, built or reused here:
# the VM then finds both in the cache.
eval "$("$vm/build-image.sh" --recipe "$here/initramfs.recipe")"
rig_kernel=$VS_KERNEL rig_initrd=$VS_INITRD rig_key=$VS_IMAGE_KEY rig_modules=$VS_KERNEL_MODULES
# The VM mounts its kernel's modules from there (initramfs-init): a path
# the job file can carry, on the root file system the VM sees.
case $rig_modules in *[!A-Za-z0-9._/+-]*) die "module tree '$rig_modules': characters the job file cannot carry" ;; esac
[ "$(stat -c %m "$rig_modules")" = / ] || die "module tree $rig_modules is not on / (the VM sees / only)"
eval "$("$vm/build-image.sh")"

mkdir -p "$out"
out=$(realpath "$out")
find "$out" -mindepth 1 -delete
# The package from this checkout (build/deb, shared with
# scripts/check-package.sh: built once per set of sources). The VM installs
# the copy in OUT/deb (tests/rig/guest/install-vcpusched).
t=$(date +%s)
deb=$("$src/scripts/build-deb.sh") || die "scripts/build-deb.sh failed"
[ -f "$deb" ] || die "scripts/build-deb.sh made no package"
mkdir "$out/deb"
cp "$deb" "$out/deb/"
log "package $(basename "$deb") ready in $(($(date +%s) - t)) s"
# The whole suite's upgrade test (rig.service_upgrade) goes from an older
# build to this one and back: the parent commit's package, built from a
# worktree of it by its own scripts/build-deb.sh.
prev_deb=''
if [ "$set" = full ]; then
    t=$(date +%s)
    prev_src=$(mktemp -d /var/tmp/vcpusched-rig-prev.XXXXXX)
    git -C "$src" worktree add --detach --force "$prev_src/tree" HEAD~1 >/dev/null 2>&1 ||
        die "git worktree of HEAD~1 (the upgrade test's older build) failed"
    prev_deb=$("$prev_src/tree/scripts/build-deb.sh" --out "$out/deb-prev.build") || true
    git -C "$src" worktree remove --force "$prev_src/tree"
    rm -rf "$prev_src"
    [ -f "$prev_deb" ] || die "the parent commit's package did not build ($out/deb-prev.build/build.log)"
    mkdir "$out/deb-prev"
    cp "$prev_deb" "$out/deb-prev/"
    log "the parent commit's package $(basename "$prev_deb") ready in $(($(date +%s) - t)) s"
fi
{
    echo "VS_RIG_SRC=$src"
    echo "VS_RIG_BUILD=$build"
    echo "VS_RIG_DEB=/rig/deb/$(basename "$deb")"
    [ -z "$prev_deb" ] || echo "VS_RIG_DEB_PREV=/rig/deb-prev/$(basename "$prev_deb")"
    echo "VCPUSCHED_BUILD=$build"
    echo "VCPUSCHED_TIME_SCALE=$([ "$accel" = tcg ] && echo 10 || echo 1)"
    # The test daemons' watchdog, as the rig's vcpuschedd.conf has it (why: there).
    echo "VCPUSCHED_WATCHDOG_MS=$([ "$accel" = tcg ] && echo 5000 || echo 1000)"
    echo "VS_RIG_MODULES=$rig_modules"
    echo "VS_KERNEL=$VS_KERNEL"
    echo "VS_INITRD=$VS_INITRD"
} >"$out/job.env"
printf '%q ' "${cmd[@]}" >"$out/job.cmd"
echo >>"$out/job.cmd"

run=$(mktemp -d /run/vcpusched-rig.XXXXXX)
pids=()
cleanup() {
    local rc=$? p
    set +e
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$run"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# One virtiofsd per share, each serving one QEMU connection. The root share
# is a non-recursive read-only bind of / (no /proc, /sys, /dev or other
# mounts) in a mount namespace that dies with virtiofsd. MALLOC_ARENA_MAX:
# Debian 12's virtiofsd otherwise meets its own seccomp filter
# (sched_getaffinity) and dies. cache=always: nothing changes under the
# shares while the VM runs (the builds are done), and the guest then keeps
# what it read (boot to systemd's "running": ~16 s instead of ~40 s).
start_virtiofsd() { # tag, source, extra mount setup
    local sock=$run/$1.sock
    setpriv --pdeathsig KILL -- unshare --mount --propagation private sh -ec "$3
        exec env MALLOC_ARENA_MAX=4 $virtiofsd --socket-path=$sock -o source=$2 \
            -o cache=always -o sandbox=namespace" >"$out/virtiofsd-$1.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        [ -S "$sock" ] && return 0
        kill -0 "${pids[-1]}" 2>/dev/null || die "virtiofsd for $1 exited: $(cat "$out/virtiofsd-$1.log")"
        sleep 0.1
    done
    die "virtiofsd for $1: no socket after 10 s"
}
mkdir "$run/root"
start_virtiofsd root "$run/root" "mount --bind / $run/root; mount -o remount,bind,ro $run/root"
start_virtiofsd rig "$out" ""

# TCG: the guest finds its vCPUs' TSCs "unsynchronized" and falls back to
# the HPET, so every clock read is an emulated MMIO access under QEMU's
# global lock (a busy-polling dispatcher then stalls every vCPU), and the
# scheduler's clock (sum_exec_runtime) drifts from CLOCK_MONOTONIC. TCG's
# TSCs all come from the host's clock: tell the guest to trust them.
case $accel in
kvm) accel_args=(-accel kvm -cpu host) tsc='' ;;
tcg) accel_args=(-accel tcg,thread=multi -cpu max) tsc=' tsc=reliable' ;;
esac
# Units a VM without network, timers or the host's services has no use for;
# libvirt-guests would wait 300 s at poweroff for any nested guest left.
mask="postgresql.service apt-daily.timer apt-daily-upgrade.timer man-db.timer dpkg-db-backup.timer
      e2scrub_all.timer e2scrub_reap.service fstrim.timer logrotate.timer systemd-timesyncd.service
      libvirt-guests.service serial-getty@ttyS0.service getty@tty1.service prometheus.service
      prometheus-node-exporter.service prometheus-node-exporter-apt.timer
      prometheus-node-exporter-ipmitool-sensor.timer prometheus-node-exporter-mellanox-hca-temp.timer
      prometheus-node-exporter-nvme.timer prometheus-node-exporter-smartmon.timer"
# irqaffinity=0: device interrupts (virtiofs replies) on the housekeeping
# CPU, as on a host whose other CPUs run vCPUs at real-time priorities.
# no_timer_check: booting under TCG beside the sanitizer suites, the
# kernel's IO-APIC timer check can fail and panic (vm-images/guest-args.sh).
append="console=ttyS0 panic=-1 no_timer_check loglevel=5 softlockup_all_cpu_backtrace=1 irqaffinity=0 systemd.unified_cgroup_hierarchy=1"
append+=" systemd.show_status=0$tsc"
for u in $mask; do append+=" systemd.mask=$u"; done
log "booting ($accel, 4 vCPUs in 2 NUMA nodes, initramfs $rig_key); console: $out/console.log"
t0=$(date +%s)
setpriv --pdeathsig KILL -- qemu-system-x86_64 -name vcpusched-rig,debug-threads=on \
    -nodefaults -no-user-config -display none -no-reboot \
    -machine q35 "${accel_args[@]}" -smp 4,sockets=2,cores=2,threads=1 -m 4096 \
    -object memory-backend-memfd,id=m0,size=2G,share=on \
    -object memory-backend-memfd,id=m1,size=2G,share=on \
    -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2-3,memdev=m1 \
    -chardev socket,id=vfs-root,path="$run/root.sock" \
    -device vhost-user-fs-pci,chardev=vfs-root,tag=root \
    -chardev socket,id=vfs-rig,path="$run/rig.sock" \
    -device vhost-user-fs-pci,chardev=vfs-rig,tag=rig \
    -kernel "$rig_kernel" -initrd "$rig_initrd" -append "$append" \
    -chardev file,id=ser0,path="$out/console.log" -serial chardev:ser0 \
    >"$out/qemu.log" 2>&1 &
qemu=$!
pids=("$qemu" "${pids[@]}")

# A rig test's limit (tests.list), or nothing for a name it does not list.
limit_of() { awk -v n="$1" '$1 == n { print $3 }' "$here/tests.list"; }

# Wait for the VM to power off; show its RIG- lines as they come. The
# suite ends a test at its limit (SIGALRM in the VM); a test still running
# RIG_GRACE s past it means the VM itself is wedged (its kernel stuck, the
# suite's alarm never delivered): stop it now, not at --timeout.
seen=0 test_name='' test_t0=0 test_limit=''
rig_grace=120
while kill -0 "$qemu" 2>/dev/null; do
    now=$(date +%s)
    if [ $((now - t0)) -ge "$timeout" ]; then
        log "no poweroff after $timeout s: stopping the VM"
        break
    fi
    if [ -n "$test_limit" ] && [ $((now - test_t0)) -ge $((test_limit + rig_grace)) ]; then
        log "$test_name still running $((now - test_t0)) s after it started (its limit" \
            "$test_limit s, +$rig_grace s): the VM is wedged; stopping it"
        break
    fi
    if [ -f "$out/console.log" ]; then
        n=$(grep -c '^RIG-' "$out/console.log" || true)
        if [ "$n" -gt "$seen" ]; then
            while read -r tag name _; do
                case $tag in
                RIG-TEST-START) test_name=$name test_t0=$now test_limit=$(limit_of "$name") ;;
                RIG-TEST-END) test_limit='' ;;
                esac
            done < <(grep '^RIG-' "$out/console.log" | tr -d '\r' | tail -n $((n - seen)) |
                tee >(sed 's/^/rig: /' >&2))
            seen=$n
        fi
    fi
    sleep 2
done
log "VM ran $(($(date +%s) - t0)) s"
if [ ! -f "$out/job.rc" ]; then
    log "the job did not finish; console tail:"
    tail -n 40 "$out/console.log" | sed 's/^/rig:   /' >&2
    exit 1
fi
exit "$(cat "$out/job.rc")"
