# SPDX-License-Identifier: ISC
"""The benchmarks end to end at a tiny size, so that they cannot break
unseen: bench/engine_bench.py on a host where tracefs is not mounted (a
private mount namespace without it: the benchmark must mount it itself),
and bench/ping_latency.py (the main job) in its default libvirt mode with
one background and three rows, the background class's before Credit2's
(whose background VMs must be foreground again), 120 pings each (a sample
above each p99). Their outputs parse (JSON, Markdown, PNGs, the Perfetto
trace), and nothing they started is left running."""

import glob
import gzip
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import vstest

BENCH = os.path.join(vstest.SRC, "bench")
sys.path.insert(0, BENCH)
import ping_tail  # noqa: E402
import schedtrace  # noqa: E402


def png_size(path):
    """(width, height) of a PNG whose every chunk's CRC checks out and whose
    image data inflates; ValueError otherwise."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, size = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"{path}: bad CRC in {kind}")
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    zlib.decompress(idat)
    return size


def processes(pattern):
    """pids whose command line matches `pattern`."""
    out = []
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if re.search(pattern, cmd):
            out.append(int(p.split("/")[2]))
    return out


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

    def test_ping_latency_tiny_libvirt(self):
        """The main job's benchmark, libvirt mode, one background, three rows."""
        with tempfile.TemporaryDirectory(prefix="vs-ping-smoke-") as out:
            r = subprocess.run(
                [sys.executable, os.path.join(BENCH, "ping_latency.py"), "--build", vstest.BUILD,
                 "--reps", "1", "--count", "120", "--warmup", "10", "--backgrounds", "burst",
                 "--schedulers", "kernel credit2@@class=background credit2",
                 "--prefix", "vss-", "--out", out],
                capture_output=True, text=True, timeout=840)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            base = glob.glob(os.path.join(out, "ping-latency-*.json"))
            self.assertEqual(len(base), 1, os.listdir(out))
            with open(base[0]) as f:
                data = json.load(f)
            self.assertEqual(data["args"]["mode"], "libvirt")
            self.assertEqual(data["meta"]["blocks"][0]["attached_by_hook"],
                             ["vss-burst0", "vss-burst1", "vss-ping", "vss-pong"])
            for spec in ("kernel", "credit2@@class=background", "credit2"):
                cell = data["results"][spec]["burst"]
                self.assertGreaterEqual(len(cell["rtts"]) + cell["lost"], 120, cell)
                self.assertGreaterEqual(len(cell["rtts"]), 110, cell)
                self.assertTrue(all(0 < x < 1000 for x in cell["rtts"]))
            sett = data["results"]["credit2"]["burst"]["settings"]
            self.assertEqual(sett["ping"]["vcpusched"]["policy"], "credit2")
            self.assertNotIn("vcpusched", data["results"]["kernel"]["burst"]["settings"]["ping"])
            cls = data["results"]["credit2@@class=background"]["burst"]["settings"]
            self.assertEqual({k: v["vcpusched"]["class"] for k, v in cls.items()},
                             {"ping": "foreground", "pong": "foreground",
                              "burst0": "background", "burst1": "background"})
            self.assertEqual({v["vcpusched"]["class"] for v in sett.values()}, {"foreground"})
            # Lines timed from QEMU's writes; a row whose tracing began while the log grew
            # times none (the benchmark logs it), so the run as a whole is checked.
            cells = [data["tail"][f"{spec}|burst"] for spec in
                     ("kernel", "credit2@@class=background", "credit2")]
            self.assertGreaterEqual(sum(c["aligned"] for c in cells),
                                    sum(c["n"] for c in cells) // 2, cells)
            md = base[0][:-5] + ".md"
            with open(md) as f:
                text = f.read()
            self.assertIn(f"Command: `bench/ping_latency.py --build {vstest.BUILD}", text)
            for head in ("## Goals", "## RTT per cell (ms)", "## Why the tail is slow",
                         "| background | credit2, bg class=background: p99 / bg CPU % | "
                         "credit2: p99 / bg CPU % | kernel: p99 / bg CPU % |"):
                self.assertIn(head, text)
            self.assertRegex(text, r"\| credit2 p99 ≤ 0\.5 × the stock kernel's p99 \([0-9.]+ "
                                   r"ms\) \| burst \| [0-9.]+ ms = [0-9.]+× \| \*\*(met|missed)")
            self.assertRegex(text, r"\n\| burst \| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \| "
                                   r"[0-9.]+ / [0-9.]+ \|\n")
            sections = {sec.split("\n", 1)[0]: sec for sec in text.split("\n## ")}
            for head in ("RTT per cell (ms)", "Why the tail is slow"):
                for label in ("credit2", "credit2, bg class=background"):
                    rows = [l for l in sections[head].splitlines()
                            if l.startswith(f"| burst | {label} | ")]
                    self.assertEqual(len(rows), 1, sections[head])
            pngs = sorted(glob.glob(base[0][:-5] + "-*.png"))
            self.assertEqual([p[len(base[0]) - 5:] for p in pngs],
                             ["-cdf-burst.png", "-summary.png"])
            for p in pngs:
                w, h = png_size(p)
                self.assertGreater(w * h, 100_000, p)
                self.assertIn(f"]({os.path.basename(p)})", text)
            trace = base[0][:-5] + "-tail.json.gz"
            self.assertGreater(ping_tail.check_chrome_trace(trace), 5)
            with gzip.open(trace, "rt") as f:
                names = {e["name"] for e in json.load(f)["traceEvents"]}
            # 120 RTTs a cell: one above its p99, exported where its line was timed
            self.assertTrue(any(n.startswith(("burst credit2 seq ", "burst kernel seq "))
                                for n in names), names)
        self.assertEqual(processes(r"qemu-system.*guest=vss-"), [], "a guest is left running")
        self.assertEqual(processes(r"vcpuschedd .*vcpusched-bench-"), [], "a daemon is left")


HOG_PONG_PING = {100: ("hog0", "vcpu"), 201: ("pong", "vcpu"), 301: ("ping", "vcpu")}


def sw(t_ms, cpu, prev, pprio, pstate, nxt, nprio, comms):
    return (f"  x-{prev} [{cpu:03d}] d..2. {t_ms / 1000:.6f}: sched_switch: "
            f"prev_comm={comms[prev]} prev_pid={prev} prev_prio={pprio} prev_state={pstate} "
            f"==> next_comm={comms[nxt]} next_pid={nxt} next_prio={nprio}\n")


def wakeup(t_ms, pid, cpu=0):
    return (f"  x-50 [{cpu:03d}] d..2. {t_ms / 1000:.6f}: sched_wakeup: comm=CPU 0/TCG "
            f"pid={pid} prio=120 target_cpu=001\n")


def printed(t_ms):
    """The ping QEMU (pid 301) writing a 25-byte VS-RTT line from t_ms, a byte a write."""
    return [f"  x-301 [001] ..... {(t_ms + i / 1000) / 1000:.6f}: sys_write(fd: 9, buf: 0x1, "
            "count: 1)\n" for i in range(25)]


def window(path, threads, rtt, sched, bg=None):
    """A row run's trace as ping_latency hands it to explain_run: one sample, seq 5."""
    return {"path": path, "size0": 1000, "size1": 1000, "overrun": 0, "threads": threads,
            "offsets": [(5, 1000)], "rtts": [rtt],
            "row": {"sched": sched, "pool": [], "pp": {}, "bg": bg or {}}}


def write_trace(d, lines):
    """A made-up Recorder window in folder d; its path."""
    path = os.path.join(d, "t.trace")
    with open(path, "w") as f:
        f.writelines(lines)
    return path


class TailExplain(unittest.TestCase):
    """bench/ping_tail.py on a made-up trace whose answer is known: a burst
    vCPU that woke at 10.5 ms holds CPU 1 until it blocks at 25 ms, while
    the pong vCPU, woken at 12 ms, waits; the reply line is printed at 27 ms."""

    def test_wait_runner_and_decider(self):
        comms = {0: "swapper/1", 100: "CPU 0/TCG", 201: "CPU 0/TCG", 301: "CPU 0/TCG",
                 401: "vcpuschedd"}
        lines = [
            wakeup(10.5, 100, cpu=1),
            sw(10.6, 1, 0, 120, "R", 100, 88, comms),
            wakeup(12, 201),
            sw(25.0, 1, 100, 88, "S", 401, 87, comms),
            sw(25.1, 1, 401, 87, "S", 201, 88, comms),
            wakeup(25.9, 301),
            sw(26.0, 1, 201, 88, "S", 301, 88, comms),
        ] + printed(27) + [sw(28.0, 1, 301, 88, "S", 0, 120, comms)]
        with tempfile.TemporaryDirectory() as d:
            path = write_trace(d, lines)
            out = ping_tail.explain_run(window(
                path, {100: ("burst0", "vcpu"), 201: ("pong", "vcpu"), 301: ("ping", "vcpu"),
                       401: ("vcpuschedd", "daemon")}, 16.0, "credit"))
            self.assertFalse(os.path.exists(path), "the raw trace is deleted once read")
        self.assertEqual((out["n"], out["aligned"]), (1, 1))
        x = out["samples"][5]
        self.assertEqual(x["t"], 27_002_000)  # the third byte of the line
        self.assertEqual(x["cause"], "pong vCPU waited")
        self.assertAlmostEqual(x["pong_wait_ms"], 13.1, places=3)
        self.assertAlmostEqual(x["ping_wait_ms"], 0.1, places=3)
        self.assertEqual(x["runner"], "burst0 vcpu")
        self.assertEqual(x["ended"], "runner blocked")
        self.assertAlmostEqual(x["runner_woke_ms_before"], 1.5, places=3)
        self.assertTrue(x["runner_boosted"])  # woke at 10.5, pong at 12: same 10 ms tick
        self.assertTrue(any(e["name"] == "burst0 vcpu" and e["pid"] == 1 for e in x["events"]))

    def test_background_class_slice(self):
        """A background vCPU preempted after 1 ms while pong waits: under the
        background class its alpha slice ended; under plain Credit2, the
        ratelimit did. The line's printing time comes from QEMU's writev."""
        comms = {0: "swapper/1", 100: "CPU 0/TCG", 201: "CPU 0/TCG", 301: "CPU 0/TCG"}
        lines = [
            sw(11.0, 1, 0, 120, "R", 100, 88, comms),
            wakeup(10.5, 201),
            sw(12.0, 1, 100, 88, "R", 201, 88, comms),
            wakeup(12.4, 301),
            sw(12.5, 1, 201, 88, "S", 301, 88, comms),
        ]
        # QEMU's writev: the entry (fd-filtered), then the thread's exit with the count;
        # an exit without a traced entry (another fd) and a failed writev count nothing.
        lines.append(f"  x-301 [001] ..... {13.9 / 1000:.6f}: sys_writev -> 0x5\n")
        for i in range(25):
            t = (14 + i / 1000) / 1000
            lines.append(f"  x-301 [001] ..... {t:.6f}: sys_writev(fd: 9, vec: 7ffc, vlen: 1)\n")
            lines.append(f"  x-301 [001] ..... {t + 1e-7:.7f}: sys_writev -> 0x1\n")
            if i == 0:
                lines.append(f"  x-301 [001] ..... {t + 2e-7:.7f}: sys_writev(fd: 9, vec: 7ffc, "
                             "vlen: 1)\n")
                lines.append(f"  x-301 [001] ..... {t + 3e-7:.7f}: sys_writev -> "
                             "0xfffffffffffffff5\n")
        lines.append(sw(15.0, 1, 301, 88, "S", 0, 120, comms))
        ended = {}
        for bg in ({"class": "background"}, {}):
            with tempfile.TemporaryDirectory() as d:
                x = ping_tail.explain_run(window(write_trace(d, lines), HOG_PONG_PING, 5.0,
                                                 "credit2", bg))["samples"][5]
            self.assertEqual((x["t"], x["cause"], x["runner"], x["runner_ran_ms"]),
                             (14_002_000, "pong vCPU waited", "hog0 vcpu", 1.0))
            ended[bool(bg)] = x["ended"]
        self.assertEqual(ended, {True: "background class slice end", False: "ratelimit end"})

    def test_wake_inside_ratelimit(self):
        """Credit2: hog0 is picked at 11 ms; pong wakes 0.5 ms into its run,
        inside the 1 ms ratelimit, so nothing is tickled and hog0 runs its
        credit slice to 15 ms. A wake 2 ms into the run is not inside it."""
        comms = {0: "swapper/1", 100: "CPU 0/TCG", 201: "CPU 0/TCG", 301: "CPU 0/TCG"}
        into = {}
        for woke in (11.5, 13.0):
            lines = [
                sw(11.0, 1, 0, 120, "R", 100, 88, comms),
                wakeup(woke, 201),
                sw(15.0, 1, 100, 88, "R", 201, 88, comms),
                wakeup(15.4, 301),
                sw(15.5, 1, 201, 88, "S", 301, 88, comms),
            ] + printed(16) + [sw(17.0, 1, 301, 88, "S", 0, 120, comms)]
            with tempfile.TemporaryDirectory() as d:
                x = ping_tail.explain_run(window(write_trace(d, lines), HOG_PONG_PING, 6.0,
                                                 "credit2"))["samples"][5]
            self.assertEqual((x["cause"], x["runner"]), ("pong vCPU waited", "hog0 vcpu"))
            into[woke] = (x["woke_into_run_ms"], x["inside_ratelimit"])
        self.assertEqual(into, {11.5: (0.5, True), 13.0: (2.0, False)})

    def test_switch_from_idle_missing(self):
        """The managed CPU's trace can lack its switches away from idle (seen
        on this host's kernel: none of 558 in a row). A thread that the
        trace shows switching out without a switch-in ran from its wake-up,
        so it did not wait: pong woken at 12 ms on idle CPU 1 runs until
        12.5 ms; no 20 ms wait up to its next recorded switch-in."""
        comms = {0: "swapper/1", 201: "CPU 0/TCG", 301: "CPU 0/TCG"}
        lines = [
            sw(10.0, 1, 201, 120, "S", 0, 120, comms),
            f"  <idle>-0 [001] dNh2. {12 / 1000:.6f}: sched_wakeup: comm=CPU 0/TCG pid=201 "
            "prio=120 target_cpu=001\n",
            f"  x-50 [000] d..2. {12.2 / 1000:.6f}: sched_wakeup: comm=CPU 0/TCG pid=301 "
            "prio=120 target_cpu=001\n",
            sw(12.5, 1, 201, 120, "S", 301, 120, comms),
            sw(13.0, 1, 301, 120, "S", 0, 120, comms),
            f"  <idle>-0 [001] dNh2. {32 / 1000:.6f}: sched_wakeup: comm=CPU 0/TCG pid=201 "
            "prio=120 target_cpu=001\n",
            sw(32.5, 1, 201, 120, "S", 0, 120, comms),
        ]
        with tempfile.TemporaryDirectory() as d:
            path = write_trace(d, lines)
            tl = ping_tail.Timeline(*schedtrace.parse_mono(path)[:2], [201, 301])
        ms = 1_000_000
        self.assertEqual([(s, e) for s, e, _ in tl.wait[201]], [])
        self.assertEqual([(s, e) for s, e, _, _ in tl.run[201]],
                         [(12 * ms, int(12.5 * ms)), (32 * ms, int(32.5 * ms))])
        self.assertEqual([(s, e) for s, e, _ in tl.wait[301]], [(int(12.2 * ms), int(12.5 * ms))])
        self.assertEqual(tl.who_ran(1, 10 * ms, 12 * ms), {0: 2 * ms})


if __name__ == "__main__":
    unittest.main()
