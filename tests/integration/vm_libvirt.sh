#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# Under a private libvirtd: a ping/pong pair defined from mkdomxml's XML
# starts with virsh create, pings flow over <interface type='udp'>, the vCPU
# thread sits on the <vcpupin> CPU and the emulator threads on the
# <emulatorpin> CPU, the vcpusched metadata element is readable, the ping
# domain ends itself by powering off, and stop leaves nothing behind. The
# domain type and vCPU thread name follow the probed accelerator
# (vm-images/accel): type 'kvm' and "CPU 0/KVM" with hardware KVM, type
# 'qemu' and "CPU 0/TCG" without.
. "$(dirname "$0")/vm_lib.sh"

export VS_LIBVIRT_SCRATCH=$T/libvirt
lv="$it_dir/libvirtd-private.sh"
count=50
ncpu=$(nproc)
vcpu_cpu=$((ncpu - 1))
vs_uri=https://vcpusched.org/xmlns/1
accel=$("$vm_dir/accel")
case $accel in
kvm) dom_type=kvm vcpu_comm="CPU 0/KVM" ;;
*) dom_type=qemu vcpu_comm="CPU 0/TCG" ;;
esac
note "accel probe: $accel (domain type $dom_type)"

image
mk() { "$vm_dir/mkdomxml" --kernel "$VS_KERNEL" --initrd "$VS_INITRD" "$@"; }
xml_has() { local re=$1 x; shift; x=$(mk "$@") && grep -Eq "$re" <<<"$x"; }
xml_lacks() { local re=$1 x; shift; x=$(mk "$@") && ! grep -Eq "$re" <<<"$x"; }
refuses() { ! mk "$@" 2>/dev/null; }
idle=(--name k --role idle --serial "$T/k.log")
check "mkdomxml --accel kvm gives a kvm domain" xml_has "<domain type='kvm'>" "${idle[@]}" --accel kvm
check "mkdomxml --accel kvm uses host-passthrough" xml_has "<cpu mode='host-passthrough'/>" "${idle[@]}" --accel kvm
check "mkdomxml --accel tcg gives a qemu domain" xml_has "<domain type='qemu'>" "${idle[@]}" --accel tcg
check "mkdomxml --accel tcg sets no host CPU model" xml_lacks host-passthrough "${idle[@]}" --accel tcg
check "mkdomxml without pins writes no <cputune>" xml_lacks cputune "${idle[@]}"
check "mkdomxml for an idle guest writes no NIC" xml_lacks '<interface' "${idle[@]}"
check "mkdomxml refuses a relative serial path" refuses --name k --role idle --serial k.log
check "mkdomxml refuses a bad --vs-sched" refuses "${idle[@]}" --vs-sched 'policy=<x>'
check "mkdomxml refuses a bad CPU list" refuses "${idle[@]}" --vcpu-cpus one
check "mkdomxml --vcpus-current leaves vCPUs to hot-plug" \
    xml_has "<vcpu placement='static' current='1'>2</vcpu>" "${idle[@]}" --smp 2 --vcpus-current 1
check "mkdomxml refuses --vcpus-current above --smp" refuses "${idle[@]}" --smp 2 --vcpus-current 3

libvirt_started=1
"$lv" start 2>"$T/libvirtd.err" || bail "private libvirtd failed: $(cat "$T/libvirtd.err")"
read -r p1 p2 <<<"$(udp_ports)"
mk --name vs-it-pong --role pong --ip 10.0.0.2/24 --local-port "$p2" --remote-port "$p1" \
    --serial "$T/pong.log" --emulator-cpus 0 --vcpu-cpus "$vcpu_cpu" -o "$T/pong.xml" || bail "mkdomxml pong failed"
mk --name vs-it-ping --role ping --ip 10.0.0.1/24 --peer 10.0.0.2 --local-port "$p1" \
    --remote-port "$p2" --serial "$T/ping.log" --emulator-cpus 0 --vcpu-cpus "$vcpu_cpu" \
    --extra-cmdline "vs.count=$count vs.interval=0.05" --vs-sched 'policy=credit weight=256 cap=0' \
    -o "$T/ping.xml" || bail "mkdomxml ping failed"
check "mkdomxml picks domain type $dom_type for the probed accelerator ($accel)" \
    grep -q "<domain type='$dom_type'>" "$T/ping.xml"

check "virsh create pong" "$lv" virsh -q create "$T/pong.xml"
t0=$(now)
check "virsh create ping" "$lv" virsh -q create "$T/ping.xml"

# vCPU and emulator threads, from libvirt's status XML and /proc.
pid=$("$lv" exec cat /run/libvirt/qemu/vs-it-ping.pid) || bail "no pid file for vs-it-ping"
tid=$("$lv" exec cat /run/libvirt/qemu/vs-it-ping.xml | sed -n "s/.*<vcpu id='0' pid='\([0-9]*\)'.*/\1/p")
note "vs-it-ping: QEMU pid $pid, vCPU 0 tid $tid"
check "status XML vCPU 0 thread is '$vcpu_comm'" \
    test "$(cat "/proc/$pid/task/$tid/comm" 2>/dev/null)" = "$vcpu_comm"
check "vCPU thread pinned per <vcpupin> (CPU $vcpu_cpu)" \
    test "$(taskset -pc "$tid" | sed 's/.*: //')" = "$vcpu_cpu"
emu_ok=1
for t in /proc/"$pid"/task/*; do
    [ "${t##*/}" != "$tid" ] || continue
    aff=$(taskset -pc "${t##*/}" 2>/dev/null | sed 's/.*: //') || continue
    [ "$aff" = 0 ] || { emu_ok=0; note "thread ${t##*/} ($(cat "$t/comm")) on CPUs $aff"; }
done
check "every other QEMU thread pinned per <emulatorpin> (CPU 0)" test $emu_ok = 1
meta=$("$lv" virsh metadata vs-it-ping "$vs_uri" 2>&1 || true)
check "vcpusched metadata readable: $meta" grep -q "<sched policy=\"credit\" weight=\"256\" cap=\"0\"/>" <<<"$meta"

check "virsh metadata --set fills the slot on a live domain" \
    "$lv" virsh -q metadata vs-it-pong "$vs_uri" --key vs --live --set "<sched policy='credit2' weight='512'/>"
meta=$("$lv" virsh metadata vs-it-pong "$vs_uri" 2>&1 || true)
check "and reads back: $meta" grep -q '<sched policy="credit2" weight="512"/>' <<<"$meta"

check "ping guest finishes with VS-DONE" wait_line "$T/ping.log" '^VS-DONE ' 90
note "create to VS-DONE $(elapsed "$t0") s"
rtts=$(grep -Ec '^VS-RTT seq=[0-9]+ rtt_us=[0-9]+$' "$T/ping.log" || true)
lost=$(grep -Ec '^VS-LOST seq=[0-9]+$' "$T/ping.log" || true)
check "pings flow over <interface type='udp'>: $rtts replies, $lost lost of $count" \
    test $((rtts + lost)) -eq $count -a "$rtts" -ge $((count * 95 / 100))
gone_ok=0
for _ in $(seq 100); do
    "$lv" virsh -q list --name | grep -qx vs-it-ping || { gone_ok=1; break; }
    sleep 0.1
done
check "ping domain is gone after the guest powered off" test $gone_ok = 1
check "virsh destroy pong" "$lv" virsh -q destroy vs-it-pong
check "no domain left" test -z "$("$lv" virsh -q list --all --name | tr -d '[:space:]')"

lvpid=$(cat "$T/libvirt/run/libvirtd.pid")
"$lv" stop 2>/dev/null
libvirt_started=0
check "stop ends the private libvirtd" gone "$lvpid"
check "stop releases the namespace and scratch" test ! -e "$T/libvirt"
check "no QEMU of this test is left" test -z "$(stray_qemus)"
finish
