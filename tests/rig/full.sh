#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The whole rig suite (tests.list, set "full": CI runs set "ci" only), its
# record committed: boots the rig under the host's test lock, runs every
# rig test, and writes tests/rig/results/rig-full-DATE.md (the command,
# the tree, the VM's facts, each test's result and time, the ten smallest
# margins). Exits 1 if a test failed (the record is written all the same).
#
# usage: tests/rig/full.sh [--build DIR] [--out DIR]
#   default DIR: build/ci (built first if it has no daemon), OUT build/rig-full
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
build=$top/build/ci out=$top/build/rig-full
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$(realpath -m "$2"); shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    *) echo "full.sh: unknown argument '$1' (--build DIR, --out DIR)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "full.sh: must run as root (the rig: virtiofsd, namespaces)" >&2; exit 1; }
if [ ! -x "$build/vcpusched/vcpuschedd" ]; then
    cmake -S "$top" -B "$build" -G Ninja -DVCPUSCHED_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j "$(nproc)"
fi

t0=$(date +%s)
stamp=$(date -u +%Y%m%d-%H%M)
rc=0
flock /run/lock/vcpusched-test.lock "$top/tests/rig/rig.sh" --build "$build" --out "$out" \
    --set full || rc=$?
took=$(($(date +%s) - t0))

record=$top/tests/rig/results/rig-full-$stamp.md
mkdir -p "$(dirname "$record")"
failed=$(grep -c '^not ok' "$out/results.tap" || true)
{
    echo "# The whole rig suite, $stamp UTC"
    echo
    echo "Command: \`tests/rig/full.sh\` (rig.sh exit $rc, $took s with boot)."
    echo "Tree: \`$(git describe --always --dirty)\` ($(git log -1 --format=%cs))."
    echo "Accelerator: $(sed -n 's/^VCPUSCHED_TIME_SCALE=10$/tcg/p; s/^VCPUSCHED_TIME_SCALE=1$/kvm/p' "$out/job.env")."
    echo
    echo "| test | set | result | time |"
    echo "|---|---|---|---|"
    python3 - "$out/results.tap" "$top/tests/rig" <<'EOF'
import re, sys
sys.path.insert(0, sys.argv[2])
from suite import read_list
sets = {name: which for name, _, _, which in read_list(f"{sys.argv[2]}/tests.list")}
tap = open(sys.argv[1]).read()
for m in re.finditer(r"^(ok|not ok) \d+ - (\S+)(.*)\n  # (.*)$", tap, re.M):
    print(f"| {m[2]} | {sets.get(m[2], '?')} | {m[1]}{m[3]} | {m[4]} |")
EOF
    echo
    echo "$failed failed."
    echo
    echo "## The VM"
    echo
    echo '```'
    sed -n '1,3p;/^# CPUs/,/^# clocksource/p' "$out/facts"
    echo '```'
    echo
    echo "## The ten smallest margins"
    echo
    echo '```'
    python3 "$top/scripts/margins.py" "$out" | sed 's/[[:space:]]*$//'
    echo '```'
} >"$record"
echo "full.sh: $failed failed; record: ${record#"$top"/}"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
