#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# A hog guest keeps its vCPU thread ("CPU 0/TCG" or "CPU 0/KVM") running:
# over 2 s its /proc/<tid>/schedstat run time is most of the wall time, while
# an idle guest's vCPU thread mostly blocks (the guest halts). Each vCPU
# thread gets a CPU of its own, so the two do not compete. A burst guest
# (20 ms sleep, 20 ms run) sits between them and wakes at least once per
# period, which is what Credit's BOOST reacts to.
. "$(dirname "$0")/vm_lib.sh"

image
ncpu=$(nproc)
hog_pid=$(start hog --role hog --vcpu-affinity $((ncpu - 1))) || bail "run-guest hog failed"
idle_pid=$(start idle --role idle --vcpu-affinity 0) || bail "run-guest idle failed"
check "hog guest is ready" wait_line "$T/hog.log" '^VS-READY role=hog' 60
check "hog guest started its loop" wait_line "$T/hog.log" '^VS-HOG loops=1$' 10
check "idle guest is ready" wait_line "$T/idle.log" '^VS-READY role=idle' 60
burst_pid=$(start burst --role burst --vcpu-affinity 0 --extra-cmdline "vs.run_ms=20 vs.sleep_ms=20") ||
    bail "run-guest burst failed"
check "burst guest started its loop" wait_line "$T/burst.log" '^VS-BURST run_ms=20 sleep_ms=20$' 60
sleep 1
hog_tid=$(vcpu_tid "$hog_pid" 0) || bail "no 'CPU 0/...' thread in hog QEMU $hog_pid"
idle_tid=$(vcpu_tid "$idle_pid" 0) || bail "no 'CPU 0/...' thread in idle QEMU $idle_pid"
hog_share=$(busy_share "$hog_tid" 2)
idle_share=$(busy_share "$idle_tid" 2)
note "vCPU thread run time / wall time over 2 s: hog $hog_share (tid $hog_tid), idle $idle_share (tid $idle_tid)"
check "hog vCPU thread runs more than half the time" awk -v s="$hog_share" 'BEGIN { exit !(s > 0.5) }'
check "idle vCPU thread runs less than a quarter of the time" awk -v s="$idle_share" 'BEGIN { exit !(s < 0.25) }'
burst_tid=$(vcpu_tid "$burst_pid" 0) || bail "no 'CPU 0/...' thread in burst QEMU $burst_pid"
sw0=$(awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$burst_tid/status")
burst_share=$(busy_share "$burst_tid" 2)
sw1=$(awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$burst_tid/status")
note "burst vCPU thread: run time / wall time $burst_share, $((sw1 - sw0)) voluntary switches in 2 s"
check "burst vCPU thread runs about half the time" \
    awk -v s="$burst_share" 'BEGIN { exit !(s > 0.3 && s < 0.8) }'
check "burst vCPU thread blocks at least once per 40 ms period" test $((sw1 - sw0)) -ge 50
state=$(thread_state "$idle_tid")
note "idle vCPU thread state now: $state"
finish
