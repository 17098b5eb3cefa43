#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# A hog guest keeps its vCPU thread ("CPU 0/TCG" or "CPU 0/KVM") running:
# over 2 s its /proc/<tid>/schedstat run time is most of the wall time, while
# an idle guest's vCPU thread mostly blocks (the guest halts). Each vCPU
# thread gets a CPU of its own, so the two do not compete.
. "$(dirname "$0")/vm_lib.sh"

image
ncpu=$(nproc)
hog_pid=$(start hog --role hog --vcpu-affinity $((ncpu - 1))) || bail "run-guest hog failed"
idle_pid=$(start idle --role idle --vcpu-affinity 0) || bail "run-guest idle failed"
check "hog guest is ready" wait_line "$T/hog.log" '^VS-READY role=hog' 60
check "hog guest started its loop" wait_line "$T/hog.log" '^VS-HOG loops=1$' 10
check "idle guest is ready" wait_line "$T/idle.log" '^VS-READY role=idle' 60
sleep 1
hog_tid=$(vcpu_tid "$hog_pid" 0) || bail "no 'CPU 0/...' thread in hog QEMU $hog_pid"
idle_tid=$(vcpu_tid "$idle_pid" 0) || bail "no 'CPU 0/...' thread in idle QEMU $idle_pid"
hog_share=$(busy_share "$hog_tid" 2)
idle_share=$(busy_share "$idle_tid" 2)
note "vCPU thread run time / wall time over 2 s: hog $hog_share (tid $hog_tid), idle $idle_share (tid $idle_tid)"
check "hog vCPU thread runs more than half the time" awk -v s="$hog_share" 'BEGIN { exit !(s > 0.5) }'
check "idle vCPU thread runs less than a quarter of the time" awk -v s="$idle_share" 'BEGIN { exit !(s < 0.25) }'
state=$(thread_state "$idle_tid")
note "idle vCPU thread state now: $state"
finish
