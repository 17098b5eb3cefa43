# SPDX-License-Identifier: ISC
"""The benchmarks end to end at a tiny size, so that they cannot break
unseen: bench/engine_bench.py on a host where tracefs is not mounted (a
private mount namespace without it: the benchmark must mount it itself),
its outputs parse, and nothing it started is left running."""

import glob
import json
import os
import subprocess
import tempfile
import unittest

import vstest

BENCH = os.path.join(vstest.SRC, "bench")


def spinners():
    """spin_target processes of this build still alive."""
    exe = os.path.realpath(os.path.join(vstest.BUILD, "bench", "spin_target"))
    out = []
    for p in glob.glob("/proc/[0-9]*/exe"):
        try:
            if os.path.realpath(p) == exe:
                out.append(int(p.split("/")[2]))
        except OSError:
            pass
    return out


class BenchSmoke(unittest.TestCase):
    def test_engine_bench_tiny_without_tracefs(self):
        before = set(spinners())
        with tempfile.TemporaryDirectory(prefix="vs-engine-smoke-") as out:
            script = ("umount /sys/kernel/tracing 2>/dev/null; "
                      "test ! -d /sys/kernel/tracing/instances || exit 99; "
                      f"exec python3 {BENCH}/engine_bench.py --build {vstest.BUILD} "
                      "--only switch,cycle --kinds process --patterns shared --slices 100 "
                      f"--reps 1 --seconds 0.3 --out {out}")
            r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            files = glob.glob(os.path.join(out, "engine-*.json"))
            self.assertEqual(len(files), 1, os.listdir(out))
            with open(files[0]) as f:
                data = json.load(f)
            cells = {c["spec"]["exp"]: c["result"] for c in data["cells"]}
            self.assertEqual(set(cells), {"switch", "cycle"})
            sw = cells["switch"][0]
            self.assertEqual(sw["slice_us"], 100)
            self.assertGreater(sw["run"]["n"], 100, sw)  # a 100 us slice: thousands in 0.3 s
            self.assertTrue(glob.glob(os.path.join(out, "engine-*.md")))
        self.assertEqual(set(spinners()) - before, set(), "spin_target left running")


if __name__ == "__main__":
    unittest.main()
