#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# A private libvirtd + virtlogd in a mount namespace of their own, for tests:
# /run/libvirt is a tmpfs there and /etc/libvirt, /var/lib/libvirt,
# /var/cache/libvirt, /var/log/libvirt are scratch copies, so tests can add
# hooks, change qemu.conf and restart the daemon without touching a system
# libvirtd. The scratch directory is $VS_LIBVIRT_SCRATCH (default
# /tmp/vcpusched-libvirtd); hooks go in $SCRATCH/etc/hooks/.
#
# usage: libvirtd-private.sh start | stop [--keep] | status | restart | hup
#        libvirtd-private.sh virsh ARGS...   (virsh -c qemu:///system inside)
#        libvirtd-private.sh exec CMD ARGS... (any command inside the namespace)
#        libvirtd-private.sh scratch          (print the scratch directory)
# stop destroys every domain of this daemon, kills leftover QEMUs, both
# daemons, releases the namespace and removes the scratch directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
scratch=${VS_LIBVIRT_SCRATCH:-/tmp/vcpusched-libvirtd}
ns=$scratch/mnt
uri=qemu:///system

die() { echo "libvirtd-private: $*" >&2; exit 1; }
log() { echo "libvirtd-private: $*" >&2; }

ns_up() {
    [ -e "$ns" ] && findmnt -n -o FSTYPE --mountpoint "$ns" 2>/dev/null | grep -q nsfs
}

in_ns() {
    ns_up || die "not started (no namespace at $ns)"
    nsenter --mount="$ns" "$@"
}

# pid from a pidfile if that process still runs the named program.
live_pid() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    case $pid in '' | *[!0-9]*) return 1 ;; esac
    case $(readlink "/proc/$pid/exe" 2>/dev/null) in */"$2") echo "$pid" ;; *) return 1 ;; esac
}

# SIGTERM, wait up to $3 s, then SIGKILL; $2 is the program name to check.
kill_pid() {
    local pid=$1 prog=$2 secs=$3
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq $((secs * 10))); do
        case $(readlink "/proc/$pid/exe" 2>/dev/null) in */"$prog") sleep 0.1 ;; *) return 0 ;; esac
    done
    log "$prog pid $pid ignored SIGTERM, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

# A fresh configuration: the host's *.conf files, but no domains, networks,
# storage pools or hooks of the host's libvirt.
make_config() {
    rm -rf "${scratch:?}/etc"
    mkdir -p "$scratch"/{etc,lib,cache,log,run}
    cp -a /etc/libvirt/. "$scratch/etc/"
    rm -rf "$scratch/etc/qemu" "$scratch/etc/storage" "$scratch/etc/hooks"
    mkdir -p "$scratch/etc/qemu/networks/autostart" "$scratch/etc/hooks"
    mkdir -p "$scratch/lib/qemu" "$scratch/lib/images" "$scratch/log/qemu"
    chown libvirt-qemu:libvirt-qemu "$scratch/lib/qemu" 2>/dev/null || true
    if kvm_hidden; then
        printf '\n# libvirtd-private.sh: /dev/kvm hidden (kvm_hidden)\nnamespaces = []\n' \
            >>"$scratch/etc/qemu.conf"
    fi
}

# A /dev/kvm that cannot run guests (vm-images/accel says tcg: a nested
# paravirtual KVM) is hidden behind an empty root-only file. Else the QEMU
# libvirt probes as root finds KVM, libvirt's own check as the QEMU user
# (the device is root's, 0600) does not, and every call that needs QEMU's
# capabilities finds the cache stale and probes again: 4 s per virsh call,
# integration.libvirt 5 times slower. libvirt cannot carry a mount on /dev
# into a domain's own /dev, so the domains then run in the daemon's mount
# namespace (qemu.conf namespaces = []).
kvm_hidden() {
    [ -e /dev/kvm ] && [ "$("$here/../../vm-images/accel")" = tcg ]
}

mount_ns() {
    mkdir -p /run/libvirt
    touch "$ns"
    unshare --mount="$ns" --propagation private true || die "unshare failed"
    nsenter --mount="$ns" sh -ec "
        mount -t tmpfs -o mode=0755 tmpfs /run/libvirt
        mount --bind '$scratch/etc' /etc/libvirt
        mount --bind '$scratch/lib' /var/lib/libvirt
        mount --bind '$scratch/cache' /var/cache/libvirt
        mount --bind '$scratch/log' /var/log/libvirt"
    if kvm_hidden; then
        install -m 0600 /dev/null "$scratch/no-kvm"
        nsenter --mount="$ns" mount --bind "$scratch/no-kvm" /dev/kvm
    fi
}

start_libvirtd() {
    in_ns libvirtd -d -p "$scratch/run/libvirtd.pid" || die "libvirtd failed to start"
    for _ in $(seq 300); do
        in_ns virsh -q -c "$uri" version >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "libvirtd did not answer within 30 s (see $scratch/log/libvirtd.log if any)"
}

cmd_start() {
    if live_pid "$scratch/run/libvirtd.pid" libvirtd >/dev/null; then
        log "already running (scratch $scratch)"
        return 0
    fi
    ns_up && die "a namespace is left at $ns without libvirtd: run stop first"
    for b in libvirtd virtlogd virsh unshare nsenter; do
        command -v "$b" >/dev/null || die "$b not found (install libvirt-daemon-system libvirt-clients util-linux)"
    done
    make_config
    mount_ns
    in_ns virtlogd -d -p "$scratch/run/virtlogd.pid" || die "virtlogd failed to start"
    start_libvirtd
    log "started (scratch $scratch)"
}

# Every QEMU this daemon started, from its pid files in the private /run.
qemu_pids() {
    local f pid
    for f in $(in_ns sh -c 'ls /run/libvirt/qemu/*.pid 2>/dev/null' || true); do
        pid=$(in_ns cat "$f" 2>/dev/null) || continue
        case $pid in '' | *[!0-9]*) continue ;; esac
        case $(readlink "/proc/$pid/exe" 2>/dev/null) in */qemu-system-*) echo "$pid" ;; esac
    done
}

destroy_domains() {
    local d pid
    live_pid "$scratch/run/libvirtd.pid" libvirtd >/dev/null || return 0
    for d in $(in_ns virsh -q -c "$uri" list --all --name 2>/dev/null); do
        in_ns timeout 30 virsh -q -c "$uri" destroy "$d" >/dev/null 2>&1 || true
        in_ns timeout 30 virsh -q -c "$uri" undefine "$d" >/dev/null 2>&1 || true
    done
}

cmd_stop() {
    local keep=${1:-} pid
    if ns_up; then
        destroy_domains
        for pid in $(qemu_pids); do
            log "killing leftover QEMU pid $pid"
            kill_pid "$pid" "$(basename "$(readlink "/proc/$pid/exe")")" 5
        done
    fi
    pid=$(live_pid "$scratch/run/libvirtd.pid" libvirtd) && kill_pid "$pid" libvirtd 10
    pid=$(live_pid "$scratch/run/virtlogd.pid" virtlogd) && kill_pid "$pid" virtlogd 5
    if ns_up; then
        umount "$ns" || die "cannot release the namespace at $ns"
    fi
    if [ "$keep" = --keep ]; then
        log "stopped; scratch kept at $scratch"
    else
        rm -rf "${scratch:?}"
        log "stopped"
    fi
}

cmd_restart() {
    local pid
    pid=$(live_pid "$scratch/run/libvirtd.pid" libvirtd) || die "libvirtd is not running"
    kill_pid "$pid" libvirtd 10
    start_libvirtd
    log "libvirtd restarted (domains kept running)"
}

cmd_status() {
    local pid
    if pid=$(live_pid "$scratch/run/libvirtd.pid" libvirtd); then
        echo "libvirtd pid $pid, scratch $scratch"
        in_ns virsh -c "$uri" list --all
    else
        echo "not running (scratch $scratch)"
        return 3
    fi
}

case $scratch in
/?*) ;;
*) die "VS_LIBVIRT_SCRATCH must be an absolute path other than /, got '$scratch'" ;;
esac
[ $# -ge 1 ] || die "usage: libvirtd-private.sh start|stop [--keep]|status|restart|hup|virsh ARGS|exec CMD|scratch"
[ "$(id -u)" -eq 0 ] || die "needs root (namespaces, libvirtd)"
case $1 in
start) cmd_start ;;
stop) cmd_stop "${2:-}" ;;
status) cmd_status ;;
restart) cmd_restart ;;
hup)
    pid=$(live_pid "$scratch/run/libvirtd.pid" libvirtd) || die "libvirtd is not running"
    kill -HUP "$pid" ;;
virsh) shift; in_ns virsh -c "$uri" "$@" ;;
exec) shift; [ $# -ge 1 ] || die "exec needs a command"; in_ns "$@" ;;
scratch) echo "$scratch" ;;
*) die "unknown command '$1'" ;;
esac
