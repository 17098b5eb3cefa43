#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# Two bare guests joined by one loopback-UDP link (-netdev dgram): the ping
# client prints one VS-RTT line per reply (or VS-LOST), VS-DONE with the
# counts and the min/avg/max RTT, and powers off, so its QEMU exits by
# itself. Prints the RTT distribution (probed accelerator, no load) for
# information; asserts no timing.
. "$(dirname "$0")/vm_lib.sh"

count=${VS_PING_COUNT:-100}
image
read -r p1 p2 <<<"$(udp_ports)"
start pong --role pong --ip 10.0.0.2/24 --local-port "$p2" --remote-port "$p1" >/dev/null ||
    bail "run-guest pong failed"
ping_pid=$(start ping --role ping --ip 10.0.0.1/24 --peer 10.0.0.2 --local-port "$p1" \
    --remote-port "$p2" --extra-cmdline "vs.count=$count vs.interval=0.05") ||
    bail "run-guest ping failed"

check "ping guest is ready" wait_line "$T/ping.log" '^VS-READY role=ping ip=10.0.0.1/24 peer=10.0.0.2' 60
check "pong guest is ready" wait_line "$T/pong.log" '^VS-READY role=pong ip=10.0.0.2/24' 60
check "ping sees its peer" wait_line "$T/ping.log" '^VS-PEER-UP peer=10.0.0.2 waited_ms=[0-9]+$' 60
check "ping finishes with VS-DONE" wait_line "$T/ping.log" '^VS-DONE ' $((count / 10 + 60))

rtts=$(grep -Ec '^VS-RTT seq=[0-9]+ rtt_us=[0-9]+$' "$T/ping.log" || true)
lost=$(grep -Ec '^VS-LOST seq=[0-9]+$' "$T/ping.log" || true)
note "replies $rtts, lost $lost of $count"
check "every ping is accounted for: VS-RTT + VS-LOST = count" test $((rtts + lost)) -eq "$count"
check "sequence numbers are 0..count-1, each once" test "$(sed -n 's/^VS-\(RTT\|LOST\) seq=\([0-9]*\).*/\2/p' "$T/ping.log" | sort -n | uniq | tr '\n' ' ')" = "$(seq 0 $((count - 1)) | tr '\n' ' ')"
sed -n 's/^VS-RTT seq=[0-9]* rtt_us=//p' "$T/ping.log" >"$T/rtt"
done_want="VS-DONE sent=$count received=$rtts"
if [ "$rtts" -gt 0 ]; then
    done_want+=$(awk 'NR == 1 || $1 < min { min = $1 } NR == 1 || $1 > max { max = $1 } { sum += $1 }
        END { printf " min_us=%d avg_us=%d max_us=%d", min, int(sum / NR + 0.5), max }' "$T/rtt")
fi
check "VS-DONE reports sent=count, received=replies and their min/avg/max: $done_want" \
    grep -qx "$done_want" "$T/ping.log"
check "no more than 5% lost on an idle host" test "$lost" -le $((count / 20))
check "ping guest powers off: its QEMU exits" wait_gone "$ping_pid" 10

if [ "$rtts" -gt 0 ]; then
    note "idle ping RTT, $("$vm_dir/accel"), $rtts replies at 50 ms: p50 $(percentile 50 <"$T/rtt") us," \
        "p99 $(percentile 99 <"$T/rtt") us, max $(percentile 100 <"$T/rtt") us" \
        "(sched_rt_runtime_us $(cat /proc/sys/kernel/sched_rt_runtime_us))"
fi
finish
