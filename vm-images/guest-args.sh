# SPDX-License-Identifier: ISC
#
# Sourced by run-guest and mkdomxml: the guest options both share, their
# checks, and the kernel command line they turn into. Callers set $prog and
# the option variables (name role ip peer lport rport mac smp mem accel extra).

die() { echo "$prog: $*" >&2; exit 2; }

need_uint() {
    case $2 in '' | *[!0-9]*) die "$1 must be a whole number, got '$2'" ;; esac
}

need_port() {
    need_uint "$1" "$2"
    [ "$2" -ge 1 ] && [ "$2" -le 65535 ] || die "$1 must be a port number (1-65535), got '$2'"
}

need_ipv4() {
    echo "$2" | grep -Eq '^([0-9]{1,3}\.){3}[0-9]{1,3}$' || die "$1 must be an IPv4 address, got '$2'"
}

need_cpulist() {
    echo "$2" | grep -Eq '^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$' ||
        die "$1 must be a CPU list like 0 or 0-1,3, got '$2'"
}

# Options every guest takes; sets accel to kvm or tcg.
check_guest_args() {
    echo "$name" | grep -Eq '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' ||
        die "--name must be 1-64 characters of A-Z a-z 0-9 _ . -, got '$name'"
    case $role in
    ping | netload) [ -n "$peer" ] || die "role $role needs --peer" ;;&
    ping | netload | pong | netsink)
        [ -n "$ip" ] || die "role $role needs --ip"
        [ -n "$lport" ] || die "role $role needs --local-port and --remote-port" ;;
    hog | burst | idle) ;;
    *) die "--role must be ping, pong, hog, burst, netload, netsink or idle, got '$role'" ;;
    esac
    if [ -n "$ip" ]; then
        need_ipv4 --ip "${ip%/*}"
        [ "${ip#*/}" != "$ip" ] || die "--ip needs a prefix length (A.B.C.D/LEN)"
        need_uint "--ip prefix length" "${ip#*/}"
    fi
    [ -z "$peer" ] || need_ipv4 --peer "$peer"
    if [ -n "$lport$rport" ]; then
        need_port --local-port "$lport"
        need_port --remote-port "$rport"
        [ -n "$ip" ] || die "a NIC (--local-port) needs --ip"
    fi
    [ -z "$mac" ] || echo "$mac" | grep -Eq '^([0-9a-f]{2}:){5}[0-9a-f]{2}$' ||
        die "--mac must look like 52:54:00:0a:00:01, got '$mac'"
    need_uint --smp "$smp"
    [ "$smp" -ge 1 ] || die "--smp must be at least 1"
    need_uint --mem "$mem"
    [ "$mem" -ge 64 ] || die "--mem must be at least 64 (MB)"
    case $extra in *[\"\'\\\<\>\&]*) die "--extra-cmdline must not contain quotes, backslashes, < > &" ;; esac
    case $accel in
    auto) accel=$("$here/accel") ;;
    kvm | tcg) ;;
    *) die "--accel must be auto, kvm or tcg, got '$accel'" ;;
    esac
}

# 52:54:00 (QEMU's prefix) + the low three bytes of the address: two guests
# on one link must not share QEMU's default MAC.
guest_mac() {
    local IFS=. a b c d
    if [ -n "$mac" ]; then
        echo "$mac"
        return
    fi
    read -r a b c d <<<"${ip%/*}"
    printf '52:54:00:%02x:%02x:%02x\n' "$b" "$c" "$d"
}

# quiet + panic=-1: little console noise, and a panic ends the guest.
# no_timer_check: under TCG on a loaded host (the rig beside the sanitizer
# suites) QEMU's main loop, which delivers the timer, may be starved while
# the vCPU runs at SCHED_FIFO; the kernel's boot-time IO-APIC timer check
# then fails and panics ("IO-APIC + timer doesn't work!"): the domain
# ends on its own.
guest_cmdline() {
    local c="console=ttyS0 quiet panic=-1 no_timer_check vs.role=$role"
    [ -z "$ip" ] || c+=" vs.ip=$ip"
    [ -z "$peer" ] || c+=" vs.peer=$peer"
    [ -z "$extra" ] || c+=" $extra"
    echo "$c"
}

# Kernel and initrd from --kernel/--initrd, else built or reused.
guest_image() {
    if [ -n "$kernel$initrd" ]; then
        [ -r "$kernel" ] && [ -r "$initrd" ] || die "--kernel and --initrd must both name readable files"
        return
    fi
    eval "$("$here/build-image.sh")"
    kernel=$VS_KERNEL initrd=$VS_INITRD
}
