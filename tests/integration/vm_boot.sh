#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# One bare guest boots to VS-READY under the probed accelerator (TCG on a
# host without hardware KVM), its vCPU thread is named after it ("CPU 0/TCG"
# or "CPU 0/KVM") and sits on --vcpu-affinity while the other threads keep
# --cpu-affinity, its QMP socket answers, stop-guest ends it; the accel
# probe and run-guest refuse bad input and start nothing; the guest refuses
# an unknown vs.* key.
. "$(dirname "$0")/vm_lib.sh"

image
accel=$("$vm_dir/accel")
note "accel probe: $accel"
if [ ! -d /sys/module/kvm_intel ] && [ ! -d /sys/module/kvm_amd ]; then
    check "no hardware KVM module: the probe says tcg" test "$accel" = tcg
fi
check "VCPUSCHED_ACCEL=kvm overrides the probe" test "$(VCPUSCHED_ACCEL=kvm "$vm_dir/accel")" = kvm
check "VCPUSCHED_ACCEL=tcg overrides the probe" test "$(VCPUSCHED_ACCEL=tcg "$vm_dir/accel")" = tcg
check "a bad VCPUSCHED_ACCEL is refused" sh -c "! VCPUSCHED_ACCEL=xen '$vm_dir/accel' 2>/dev/null"

t0=$(now)
ncpu=$(nproc)
pid=$(start boot1 --role idle --qmp "$T/boot1.qmp" --cpu-affinity 0 --vcpu-affinity $((ncpu - 1))) ||
    bail "run-guest failed"
check "run-guest prints the QEMU pid" test "$pid" = "$(cat "$T/boot1.pid")"
if wait_line "$T/boot1.log" '^VS-READY role=idle' 60; then
    boot_s=$(elapsed "$t0")
    ok "guest reached VS-READY in ${boot_s} s (bound 60 s)"
    note "boot_to_ready_s=$boot_s guest_uptime_at_ready_ms=$(sed -n 's/^VS-READY .*uptime_ms=\([0-9]*\).*/\1/p' "$T/boot1.log")"
else
    not_ok "guest reached VS-READY within 60 s"
fi
tid=$(vcpu_tid "$pid" 0) || true
vcpu_comm="CPU 0/$(tr a-z A-Z <<<"$accel")"
check "vCPU thread '$vcpu_comm' exists" test "$(cat "/proc/$pid/task/${tid:-none}/comm" 2>/dev/null)" = "$vcpu_comm"
check "vCPU thread on --vcpu-affinity (CPU $((ncpu - 1)))" test "$(taskset -pc "$tid" | sed 's/.*: //')" = $((ncpu - 1))
others=$(for t in /proc/"$pid"/task/*; do [ "${t##*/}" = "$tid" ] || taskset -pc "${t##*/}" | sed 's/.*: //'; done | sort -u)
check "other QEMU threads on --cpu-affinity (CPU 0)" test "$others" = 0
reply=$(qmp "$T/boot1.qmp" query-cpus-fast) || true
check "QMP query-cpus-fast names the same vCPU thread" grep -q "\"thread-id\": $tid," <<<"$reply"
"$vm_dir/stop-guest" "$T/boot1.pid"
check "stop-guest ends QEMU" gone "$pid"
check "stop-guest removes the pidfile" test ! -e "$T/boot1.pid"
check "stop-guest on a missing pidfile succeeds" "$vm_dir/stop-guest" "$T/boot1.pid"

# The guest checks its own keys: an unknown one is reported and ends the guest.
pid=$(start badkey --role idle --extra-cmdline vs.colour=blue) || bail "run-guest badkey failed"
check "guest reports an unknown vs.* key" wait_line "$T/badkey.log" '^VS-ERROR role=idle msg="unknown key vs.colour"$' 60
check "guest with a bad key powers off" wait_gone "$pid" 10
check "guest with a bad key never says VS-READY" sh -c "! grep -q VS-READY '$T/badkey.log'"

refused() {
    local what=$1 msg=$2
    shift 2
    if "$vm_dir/run-guest" --serial "$T/bad.log" --pidfile "$T/bad.pid" \
        --kernel "$VS_KERNEL" --initrd "$VS_INITRD" "$@" >/dev/null 2>"$T/bad.err"; then
        not_ok "run-guest refuses $what"
        "$vm_dir/stop-guest" "$T/bad.pid"
        return
    fi
    if grep -q -- "$msg" "$T/bad.err" && [ ! -e "$T/bad.pid" ] && [ -z "$(stray_qemus)" ]; then
        ok "run-guest refuses $what, clearly, starting nothing"
    else
        not_ok "run-guest refuses $what with '$msg' and starts nothing (got: $(cat "$T/bad.err"))"
    fi
}
refused "an unknown role" "--role must be" --name b --role web
refused "ping without --peer" "needs --peer" --name b --role ping --ip 10.0.0.1/24 --local-port 5000 --remote-port 5001
refused "an address without prefix" "prefix length" --name b --role pong --ip 10.0.0.1 --local-port 5000 --remote-port 5001
refused "a bad port" "port number" --name b --role pong --ip 10.0.0.1/24 --local-port 70000 --remote-port 5001
refused "a bad name" "--name must be" --name 'a b' --role idle
refused "a bad accelerator" "--accel must be" --name b --role idle --accel xen
refused "an unknown option" "unknown option" --name b --role idle --turbo 1
finish
