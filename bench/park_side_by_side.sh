#!/bin/bash
# SPDX-License-Identifier: ISC
#
# Two daemons' parking cost side by side: test_park's cap-25-next-to-a-hog
# checks (Credit and Credit2, every backend), alternating between two build
# directories, REPS times; per run, the share of the CPU neither the capped
# thread nor the hog had (what parking and dispatching cost).
#
# Usage (root): bench/park_side_by_side.sh BUILD_A BUILD_B [REPS]
set -euo pipefail
a=${1:?BUILD_A}; b=${2:?BUILD_B}; reps=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$here/tests/integration"
for rep in $(seq "$reps"); do
    for build in "$a" "$b"; do
        m=$tmp/margins.jsonl; rm -f "$m"
        VCPUSCHED_MARGINS=$m VCPUSCHED_BUILD=$build ./run-exclusive python3 -m unittest \
            test_park.ParkTest.test_credit2_cap25_next_to_hog \
            test_park.ParkTest.test_credit_cap25_next_to_hog >"$tmp/out" 2>&1 ||
            { cat "$tmp/out" >&2; exit 1; }
        python3 - "$m" "$rep" "$build" <<'PY'
import json, sys
m, rep, build = sys.argv[1:]
got = []
for line in open(m):
    d = json.loads(line)
    if "neither" in d["check"] and d.get("attempt", 1) == 1:
        pol = d["check"].split(" cap")[0]
        park = d["check"].split("park ")[1].split(":")[0].replace(", ", "/")
        got.append(f"{pol} {park} {d['got']:.4f}")
print(f"rep {rep} {build}: " + "; ".join(got))
PY
    done
done
