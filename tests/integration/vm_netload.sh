#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# A netload guest (iperf3 client, TCP) and a netsink guest (iperf3 -s) on one
# loopback-UDP link move traffic: the periodic VS-NET lines parse and report
# more than 0 kbit/s, and the netsink keeps serving across client runs.
. "$(dirname "$0")/vm_lib.sh"

image
read -r p1 p2 <<<"$(udp_ports)"
start sink --role netsink --ip 10.0.1.2/24 --local-port "$p2" --remote-port "$p1" >/dev/null ||
    bail "run-guest netsink failed"
start load --role netload --ip 10.0.1.1/24 --peer 10.0.1.2 --local-port "$p1" \
    --remote-port "$p2" --extra-cmdline "vs.duration=4 vs.report=1" >/dev/null ||
    bail "run-guest netload failed"
check "netsink is ready" wait_line "$T/sink.log" '^VS-READY role=netsink ip=10.0.1.2/24' 60
check "netload is ready" wait_line "$T/load.log" '^VS-READY role=netload' 60
check "netload sees its peer" wait_line "$T/load.log" '^VS-PEER-UP peer=10.0.1.2' 60
# Two 4 s runs: the second shows the sink accepts a new client.
check "netload completes a second run" wait_line "$T/load.log" '^VS-NET run=1 ' 60
re='^VS-NET run=[0-9]+ t=[0-9.]+-[0-9.]+ bytes=[0-9]+ kbit_s=[0-9.]+$'
grep -E "$re" "$T/load.log" | sed 's/.*kbit_s=//' >"$T/kbit" || true
lines=$(wc -l <"$T/kbit")
check "at least 4 periodic VS-NET lines parse" test "$lines" -ge 4
check "every interval moved traffic (kbit_s > 0)" awk '$1 <= 0 { bad = 1 } END { exit bad || NR == 0 }' "$T/kbit"
check "runs end with sender and receiver summaries" \
    sh -c "grep -Eq '^VS-NET-SUM run=0 .* side=sender$' '$T/load.log' && grep -Eq '^VS-NET-SUM run=0 .* side=receiver$' '$T/load.log'"
check "no iperf3 errors" sh -c "! grep -q '^VS-NET-ERR' '$T/load.log'"
note "netload throughput over $lines intervals ($("$vm_dir/accel")): median $(percentile 50 <"$T/kbit") kbit/s," \
    "min $(sort -n "$T/kbit" | head -n 1) kbit/s"
finish
