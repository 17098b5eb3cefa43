#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Real Xen as the reference: the same scenarios on Xen 4.17 (booted under
QEMU by xenrig.py) and on vcpusched, side by side.

Shares: CPU hogs with weights, caps, a 2-vCPU domain, 2-pCPU pools, the
pool knobs (tslice, ratelimit) and a periodic sleeper's wake-to-run under
BOOST. On Xen every domain is a 1-vCPU (or 2-vCPU) PV domU in a cpupool of
its own pCPUs; CPU time comes from `xl vcpu-list` deltas, run lengths from
xentrace + xenalyze, wake lateness from the sleeper itself (spin_target's
`wake:` spec inside the domU). On vcpusched the same workloads are host
processes (spin_target) attached to a private vcpuschedd on CPU 1, shares
from /proc schedstat. Scenarios on 2 pCPUs cannot run on host threads on a
2-CPU host (CPU 0 is housekeeping): their vcpusched side runs in the
simulator (tests/sim, vcpusched-sim), which runs the same policy code.

Ping: the Xen experiment (seeds-digest 001) on Xen itself, two PV domUs
pinging over dom0's bridge (netfront/netback) while CPU-bound, network-bound
or bursty background domUs share the pCPU, under Credit, Credit with a 5 ms
slice, Credit with a cap on the background and Credit2; the vcpusched side
is bench/ping_latency.py with the same matrix. Shapes are compared, not
absolute RTTs: each cell's p99 and max over its own scheduler's
no-background p50.

    python3 bench/xen/compare.py --build build/ci            # everything
    python3 bench/xen/compare.py --build build/ci --only shares --scenarios w12-credit
    python3 bench/xen/compare.py --smoke                     # boot + one 2:1 share on Xen

Measurements take /run/lock/vcpusched-test.lock (the Xen phases and each
vcpusched scenario); results go to bench/results/xen-vs-vcpusched-<date>.{md,json}.
"""

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import xenrig  # noqa: E402

LOCK = "/run/lock/vcpusched-test.lock"
MANAGED, HOUSEKEEPING = 1, 0


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(xs, p):
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, int(p / 100.0 * len(s) + 0.999999) - 1))]


@contextlib.contextmanager
def exclusive():
    """The machine-wide test lock (tests/integration/run-exclusive)."""
    if os.environ.get("VCPUSCHED_LOCK_HELD") == "1":
        yield
        return
    with open(LOCK, "a") as f:
        t0 = time.monotonic()
        fcntl.flock(f, fcntl.LOCK_EX)
        if time.monotonic() - t0 > 1:
            log(f"waited {time.monotonic() - t0:.0f} s for the test lock")
        os.environ["VCPUSCHED_LOCK_HELD"] = "1"
        try:
            yield
        finally:
            del os.environ["VCPUSCHED_LOCK_HELD"]


# --- scenarios ---------------------------------------------------------------------


def dom(name, vcpus=1, role="hog", weight=None, cap=None, wake=None):
    """A domain: `role` hog (one CPU hog per vCPU) or wake (a periodic
    sleeper: wake=(period_us, run_us)); weight and cap as xl takes them."""
    return {"name": name, "vcpus": vcpus, "role": role, "weight": weight, "cap": cap,
            "wake": wake}


def scen(sid, sched, title, doms, cpus=1, pool=None, runs=False, vs_pool=None):
    """vs_pool: pool parameters for vcpusched only (knobs Xen 4.17 lacks)."""
    return {"id": f"{sid}-{sched}", "sched": sched, "title": title, "doms": doms,
            "cpus": cpus, "pool": pool or {}, "runs": runs, "vs_pool": vs_pool or {}}


SLEEPER = (10000, 1000)  # wakes every 10 ms, runs 1 ms (vstest's latency sleeper)


def scenarios():
    out = []
    for s in ("credit", "credit2"):
        out += [
            scen("w12", s, "weights 1:2 on one pCPU",
                 [dom("a", weight=256), dom("b", weight=512)]),
            scen("w124", s, "weights 1:2:4 on one pCPU",
                 [dom("a", weight=256), dom("b", weight=512), dom("c", weight=1024)],
                 runs=s == "credit"),  # Xen's run lengths tell how late its slices end
            scen("cap30", s, "cap 30 alone", [dom("capped", cap=30)]),
            scen("cap50", s, "cap 50 alone", [dom("capped", cap=50)]),
            scen("cap30hog", s, "cap 30 next to a hog", [dom("capped", cap=30), dom("hog")]),
            scen("cap50hog", s, "cap 50 next to a hog", [dom("capped", cap=50), dom("hog")]),
            scen("vcpus2", s, "a 2-vCPU domain next to a 1-vCPU one (weight per vCPU)",
                 [dom("two", vcpus=2), dom("one")]),
            scen("sleeper", s, "periodic sleeper (10 ms / 1 ms) next to two hogs: wake-to-run",
                 [dom("h1"), dom("h2"), dom("io", role="wake", wake=SLEEPER)]),
        ]
    out += [
        scen("sleeper0", "credit", "periodic sleeper alone (the baseline of its lateness)",
             [dom("io", role="wake", wake=SLEEPER)]),
        scen("smp512", "credit", "2 pCPUs: one 512-weight vCPU, three 256",
             [dom("c", weight=512), dom("b1"), dom("b2"), dom("b3")], cpus=2),
        scen("smp512dom", "credit", "2 pCPUs: a 512 vCPU, a 3-vCPU domain of 256",
             [dom("c", weight=512), dom("b", vcpus=3)], cpus=2),
        scen("smp3", "credit2", "2 pCPUs: three hogs", [dom("h1"), dom("h2"), dom("h3")], cpus=2),
        scen("smp3", "credit", "2 pCPUs: three hogs", [dom("h1"), dom("h2"), dom("h3")], cpus=2),
        scen("tslice30", "credit", "two equal hogs, tslice 30 ms (default): run length",
             [dom("a"), dom("b")], runs=True),
        scen("tslice5", "credit", "two equal hogs, tslice 5 ms: run length",
             [dom("a"), dom("b")], pool={"tslice_ms": 5}, runs=True),
        scen("tslice5w12", "credit", "weights 1:2, tslice 5 ms",
             [dom("a", weight=256), dom("b", weight=512)], pool={"tslice_ms": 5}),
        scen("rl20", "credit", "sleeper next to two hogs, ratelimit 20 ms",
             [dom("h1"), dom("h2"), dom("io", role="wake", wake=SLEEPER)],
             pool={"ratelimit_us": 20000}),
        scen("rl5", "credit2", "sleeper next to two hogs, ratelimit 5 ms",
             [dom("h1"), dom("h2"), dom("io", role="wake", wake=SLEEPER)],
             pool={"ratelimit_us": 5000}),
        # Xen 4.17 ends a Credit2 slice at the runqueue head's credit only;
        # vcpusched follows Xen >= 4.21 unless inflight=0 (credit2.c).
        scen("runs2", "credit2", "two equal hogs: run length", [dom("a"), dom("b")], runs=True),
        scen("runs2i0", "credit2", "two equal hogs: run length (vcpusched inflight=0)",
             [dom("a"), dom("b")], runs=True, vs_pool={"inflight": 0}),
        scen("cap50hogi0", "credit2", "cap 50 next to a hog (vcpusched inflight=0)",
             [dom("capped", cap=50), dom("hog")], vs_pool={"inflight": 0}),
        scen("cap30hogi0", "credit2", "cap 30 next to a hog (vcpusched inflight=0)",
             [dom("capped", cap=30), dom("hog")], vs_pool={"inflight": 0}),
    ]
    return out


def window_of(s, window):
    """2-pCPU pools are noisier on Xen (their pCPU threads share the host's
    two CPUs with dom0 and QEMU): at least 30 s."""
    return max(window, 30.0) if s["cpus"] == 2 else window


def vcpu_names(s):
    return [f"{d['name']}/{i}" for d in s["doms"] for i in range(d["vcpus"])]


# --- Xen side ----------------------------------------------------------------------


class XenSide:
    """Runs scenarios on one booted rig: a fresh cpupool and fresh domUs each."""

    def __init__(self, rig, window):
        self.rig, self.window = rig, window
        rig.pools_init()

    def pin_for(self, cpus):
        # The measured pCPUs get the host to themselves where they can: on a
        # 2-CPU host, a 1-pCPU pool's pCPU 1 has host CPU 1 alone; a 2-pCPU
        # pool (pCPUs 2-3) gets one host CPU each.
        if cpus == 1:
            self.rig.pin({1: MANAGED, "rest": {HOUSEKEEPING}}, fifo={1})
        else:
            self.rig.pin({2: HOUSEKEEPING, 3: MANAGED, "rest": {HOUSEKEEPING}}, fifo={3})

    def pool_params(self, name, sched, params):
        if not params:
            return
        if sched == "credit":
            opts = "".join(f" -{'t' if k == 'tslice_ms' else 'r'} {v}" for k, v in params.items())
            self.rig.sh(f"xl sched-credit -s -p {name}{opts}")
        else:
            self.rig.sh(f"xl sched-credit2 -s -p {name} -r {params['ratelimit_us']}")

    def run(self, s):
        r = self.rig
        pcpus = [1] if s["cpus"] == 1 else [2, 3]
        self.pin_for(s["cpus"])
        r.pool("s", s["sched"], pcpus)
        self.pool_params("s", s["sched"], s["pool"])
        settings = r.sh(f"xl sched-{s['sched']} -s -p s").strip()
        names = [d["name"] for d in s["doms"]]
        secs = int(self.window + 30)
        try:
            for d in s["doms"]:
                extra = f"xr.wake={d['wake'][0]}:{d['wake'][1]}:{secs}" if d["wake"] else ""
                r.create(d["name"], role="idle" if d["wake"] else "hog", pool="s",
                         vcpus=d["vcpus"], weight=d["weight"], cap=d["cap"], extra=extra)
            for d in s["doms"]:
                r.wait_console(d["name"], "XR-WAKE" if d["wake"] else "VS-HOG", 180)
            time.sleep(3)
            res = self.measure(s)
            res["settings"] = settings
            for d in s["doms"]:
                if d["wake"]:
                    res["wake_us"] = self.lateness(d["name"])
            return res
        finally:
            r.destroy(*names)
            r.pool_destroy("s")

    def measure(self, s):
        return measure_shares(self.rig, window_of(s, self.window), s["runs"],
                              (1,) if s["cpus"] == 1 else (2, 3))

    def lateness(self, name):
        out = self.rig.wait_console(name, "XR-LAT-END", self.window + 120)
        xs = [int(v) for l in out.splitlines() if l.startswith("XR-LAT ")
              for v in l.split()[1:] if v.isdigit()]
        return xs[100:]  # the first second: the hogs were still settling


def measure_shares(rig, window, runs=False, pcpus=(1,)):
    """Each domU vCPU's CPU time / wall time over `window` seconds (xl
    vcpu-list deltas); with runs, also the mean running stretch (ms) per
    vCPU from 5 s of xentrace (scheduler class) summarised by xenalyze;
    and how much of the window the measured pCPUs' QEMU threads waited for
    the host (`stolen`)."""
    d0 = {p: rig.pcpu_delay_ns(p) for p in pcpus}
    a = rig.vcpu_times()
    t0 = time.monotonic()
    runs_ms = None
    if runs:
        rig.sh("rm -f /tmp/t.bin; xentrace -D -e 0x0002f000 -T 5 /tmp/t.bin >/dev/null 2>&1")
        ids = {}
        for n in {k[0] for k in a if isinstance(k, tuple) and k[0] != "Domain-0"}:
            ids[int(rig.sh(f"xl domid {n}").strip())] = n
        runs_ms = run_lengths(rig.sh("xenalyze --summary /tmp/t.bin 2>/dev/null", timeout=300), ids)
    left = window - (time.monotonic() - t0)
    if left > 0:
        time.sleep(left)
    b = rig.vcpu_times()
    wall = b["t"] - a["t"] if "t" in a and "t" in b else time.monotonic() - t0
    share = {f"{k[0]}/{k[1]}": (b[k] - a[k]) / wall
             for k in b if isinstance(k, tuple) and k[0] != "Domain-0" and k in a}
    stolen = {p: (rig.pcpu_delay_ns(p) - d0[p]) / 1e9 / wall for p in pcpus}
    return {"share": share, "wall_s": wall, "runs_ms": runs_ms, "stolen": stolen}


def run_lengths(text, names):
    """Mean running stretch (ms) per vCPU from xenalyze --summary: the first
    `running: COUNT SECONDSs` line after each domain's `-- vN --` header."""
    out, dom, vcpu = {}, None, None
    for line in text.splitlines():
        m = re.match(r"\|-- Domain (\d+) --\|", line)
        if m:
            dom, vcpu = int(m.group(1)), None
            continue
        m = re.match(r"\s*-- v(\d+) --", line)
        if m:
            vcpu = int(m.group(1))
            continue
        m = re.match(r"\s*running:\s+(\d+)\s+([\d.]+)s", line)
        if m and dom in names and vcpu is not None:
            n, secs = int(m.group(1)), float(m.group(2))
            if n:
                out[f"{names[dom]}/{vcpu}"] = secs * 1000 / n
            vcpu = None
    return out


# --- vcpusched side ------------------------------------------------------------------


class HostSide:
    """Runs a 1-pCPU scenario on host threads under a private vcpuschedd."""

    def __init__(self, build, window):
        os.environ["VCPUSCHED_BUILD"] = os.path.abspath(build)
        sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
        import vstest
        self.vs = vstest
        self.build, self.window = os.path.abspath(build), window
        self.spin = os.path.join(self.build, "bench", "spin_target")

    def spawn(self, spec):
        p = subprocess.Popen([self.spin, *spec], stdout=subprocess.PIPE, text=True,
                             preexec_fn=lambda: os.sched_setaffinity(0, {HOUSEKEEPING}))
        tids = [int(t) for t in p.stdout.readline().split()]
        return p, tids

    def run(self, s):
        vs = self.vs
        args = ["--rt-runtime-us", "-1"]
        for k, v in {**s["pool"], **s.get("vs_pool", {})}.items():
            args += ["--pool-param", f"{k}={v}"]
        d = vs.Daemon(*args, policy=s["sched"])
        procs, tids, latfile = [], {}, None
        try:
            d.start()
            for x in s["doms"]:
                if x["wake"]:
                    latfile = os.path.join(d.dir, "lat")
                    spec = [f"wake:{x['wake'][0]}:{x['wake'][1]}:{latfile}"]
                else:
                    spec = ["busy"] if x["vcpus"] == 1 else [f"busy*{x['vcpus']}"]
                p, ts = self.spawn(spec)
                procs.append(p)
                params = [f"{k}={x[k]}" for k in ("weight", "cap") if x[k]]
                d.ctl("attach", x["name"], "--tid", ",".join(map(str, ts)), *params)
                for i, t in enumerate(ts):
                    tids[f"{x['name']}/{i}"] = t
            time.sleep(3)
            skip = len(open(latfile).readlines()) if latfile else 0
            a = {n: self.stat(t) for n, t in tids.items()}
            ea = self.elections(d)
            t0 = time.monotonic()
            time.sleep(self.window)
            b = {n: self.stat(t) for n, t in tids.items()}
            eb = self.elections(d)
            wall = time.monotonic() - t0
            res = {"share": {n: (b[n][0] - a[n][0]) / 1e9 / wall for n in tids}, "wall_s": wall,
                   "settings": json.dumps(d.json("pool", "list")["pools"][0]["params"])}
            if s["runs"]:
                # The daemon's elections (each a stretch as the elected vCPU;
                # schedstat counts every dispatcher pass as a new timeslice).
                res["runs_ms"] = {n: (eb[n][0] - ea[n][0]) / 1e6 / max(1, eb[n][1] - ea[n][1])
                                  for n in tids}
            if latfile:
                with open(latfile) as f:
                    res["wake_us"] = [int(x) for x in f.read().split()[skip:]]
            return res
        finally:
            # The daemon first: it returns every thread to SCHED_OTHER. A
            # process killed while its threads are LOW FIFO threads behind a
            # MID busy loop cannot finish exiting (and wait() would hang).
            d.cleanup()
            for p in procs:
                p.kill()
                p.wait()

    @staticmethod
    def elections(d):
        """{vcpu: (run_ns, elections)} as the daemon counts them."""
        return {f"{x['name']}/{i}": (v["run_ns"], v["elections"])
                for x in d.json("list")["domains"] for i, v in enumerate(x["vcpus"])}

    @staticmethod
    def stat(tid):
        with open(f"/proc/{tid}/schedstat") as f:
            return [int(x) for x in f.read().split()]


class SimSide:
    """Runs a scenario in the deterministic simulator (tests/sim): the same
    policy code on a simulated clock and simulated CPUs. Exact timers would
    lock slice ends, ticks and accounting passes to one phase for ever
    (Credit on 2 pCPUs gives a 512 vCPU 0.64 or 0.80 depending on it);
    Xen's timers fire up to timer_slop (50 us) late and re-arm from NOW(),
    so their phases drift. Each scenario therefore runs with deadlines up to
    `late` (50 us) late, started at PHASES offsets across the 10 ms tick
    period, and the shares are averaged."""

    PHASES = 8
    TICK_NS = 10_000_000

    def __init__(self, build, window, late="50us"):
        self.tool = os.path.join(os.path.abspath(build), "tests", "vcpusched-sim")
        self.window = window
        self.late = late

    def script(self, s, offset_ns):
        pool = {**s["pool"], **s.get("vs_pool", {})}
        lines = [f"policy {s['sched']}" + "".join(f" {k}={v}" for k, v in pool.items()),
                 f"cpus {s['cpus']}", f"timer_late {self.late}"]
        if offset_ns:
            lines.append(f"run {offset_ns}ns")
        for d in s["doms"]:
            w = "".join(f" {k}={d[k]}" for k in ("weight", "cap") if d[k])
            lines.append(f"dom {d['name']} vcpus={d['vcpus']}{w} busy")
        return lines + ["run 3s", "reset", f"run {int(self.window)}s", "report"]

    def run_one(self, lines):
        with tempfile.NamedTemporaryFile("w", suffix=".sim", delete=False) as f:
            f.write("\n".join(lines) + "\n")
        try:
            out = subprocess.run([self.tool, f.name], capture_output=True, text=True, check=True).stdout
        finally:
            os.unlink(f.name)
        share = {}
        for l in out.splitlines():
            m = re.match(r"(\S+/\d+)\s+([\d.]+)%", l)
            if m:
                share[m.group(1)] = float(m.group(2)) / 100
        return share

    def run(self, s):
        runs = [self.run_one(self.script(s, k * self.TICK_NS // self.PHASES))
                for k in range(self.PHASES)]
        share = {v: sum(r.get(v, 0.0) for r in runs) / len(runs) for v in runs[0]}
        return {"share": share, "wall_s": self.window,
                "settings": f"simulated, timer_late {self.late}, mean of {self.PHASES} start phases",
                "phases": [r for r in runs], "script": self.script(s, 0)}


# --- the ping matrix -------------------------------------------------------------------

PING_SCHEDS = ("credit", "credit:tslice_ms=5", "credit@@cap={cap}", "credit2")
BGS = ("none", "cpu", "net", "burst")


class XenPing:
    """The ping experiment on Xen: pong and background domUs in a 1-pCPU pool
    (pCPU 1, with the host's CPU 1 to itself), the ping domU created per run.
    Credit2 runs in a second pool (pCPU 2, also on host CPU 1) to which every
    domain migrates."""

    def __init__(self, rig, a):
        self.rig, self.a = rig, a
        rig.pools_init()
        rig.pool("pc", "credit", [1])
        rig.pool("p2", "credit2", [2])

    def background(self, kind):
        r, doms = self.rig, ["pong"]
        r.create("pong", role="pong", pool="pc", vif="10.0.0.2/24")
        if kind == "cpu":
            doms += ["hog0", "hog1"]
            for n in doms[1:]:
                r.create(n, role="hog", pool="pc")
        elif kind == "burst":
            doms += ["burst0", "burst1"]
            for n in doms[1:]:
                r.create(n, role="burst", pool="pc", extra="vs.run_ms=20 vs.sleep_ms=20")
        elif kind == "net":
            doms += ["netsink", "netload"]
            r.create("netsink", role="netsink", pool="pc", vif="10.0.1.2/24")
            r.create("netload", role="netload", pool="pc", vif="10.0.1.1/24",
                     extra=f"vs.peer=10.0.1.2 vs.duration=3600 vs.rate={self.a.net_rate}")
        for n in doms:
            r.wait_console(n, "VS-READY", 240)
        if kind == "net":
            r.wait_console("netload", "VS-NET ", 240)
        return doms

    def configure(self, spec, doms):
        """Put the pool and domains in the state `spec` asks for."""
        r = self.rig
        base = spec.split("@")[0].split(":")[0]
        pool = "p2" if base == "credit2" else "pc"
        # The pool in use gets host CPU 1 (at FIFO 1), the other the
        # housekeeping CPU: two FIFO threads of one priority on one CPU do
        # not time-share, and Xen hangs when a pCPU never answers an IPI.
        on, off = (2, 1) if pool == "p2" else (1, 2)
        r.pin({on: MANAGED, off: HOUSEKEEPING, "rest": {HOUSEKEEPING}}, fifo={on})
        for d in doms:
            r.sh(f"xl cpupool-migrate {d} {pool} 2>/dev/null || true")
        if pool == "pc":
            r.sh(f"xl sched-credit -s -p pc -t {5 if 'tslice_ms=5' in spec else 30}")
            cap = self.a.bg_cap if "cap=" in spec else 0
            for d in doms[1:]:
                r.sh(f"xl sched-credit -d {d} -c {cap}")
        return pool

    def ping_run(self, spec, doms):
        r, a = self.rig, self.a
        pool = self.configure(spec, doms)
        bg = doms[1:]
        # The ping domU boots with the background paused (a boot is CPU-bound
        # and would take ~3x as long), which resumes when it is up.
        for d in bg:
            r.sh(f"xl pause {d}")
        try:
            r.create("ping", role="ping", pool=pool, vif="10.0.0.1/24",
                     extra=f"vs.peer=10.0.0.2 vs.count={a.count + a.warmup} vs.interval={a.interval}"
                           " vs.poweroff=0")
            r.wait_console("ping", "VS-READY", 240)
        finally:
            for d in bg:
                r.sh(f"xl unpause {d}")
        out = r.wait_console("ping", "VS-DONE", 120 + a.count * a.interval * 20)
        r.destroy("ping")
        rtts = [int(l.split("rtt_us=")[1]) / 1000 for l in out.splitlines()
                if l.startswith("VS-RTT") and "rtt_us=" in l]
        lost = sum(1 for l in out.splitlines() if l.startswith("VS-LOST"))
        return rtts[a.warmup:], lost

    def run(self):
        a = self.a
        specs = [s.format(cap=a.bg_cap) for s in PING_SCHEDS]
        res = {s: {b: {"rtts": [], "p99s": [], "lost": 0} for b in a.backgrounds} for s in specs}
        for rep in range(a.reps):
            for bg in a.backgrounds:
                doms = self.background(bg)
                order = specs[rep % len(specs):] + specs[:rep % len(specs)]
                for spec in order:
                    rtts, lost = self.ping_run(spec, doms)
                    c = res[spec][bg]
                    c["rtts"] += rtts
                    c["lost"] += lost
                    if rtts:
                        c["p99s"].append(percentile(rtts, 99))
                        log(f"xen ping rep {rep + 1} bg={bg} {spec}: n={len(rtts)} "
                            f"p50={percentile(rtts, 50):.1f} p99={percentile(rtts, 99):.1f} "
                            f"max={max(rtts):.1f} ms")
                self.rig.destroy(*doms)
                for d in doms:
                    self.rig.sh(f"rm -f /var/log/xen/guest-{d}.log")
        return res


def vcpusched_ping(a):
    """bench/ping_latency.py with the same matrix; returns its results."""
    out = tempfile.mkdtemp(prefix="xen-vs-ping-")
    specs = [s.format(cap=a.bg_cap) for s in PING_SCHEDS]
    cmd = [sys.executable, os.path.join(SRC, "bench", "ping_latency.py"), "--build", a.build,
           "--reps", str(a.reps), "--count", str(a.count), "--warmup", str(a.warmup),
           "--interval", str(a.interval), "--net-rate", str(a.net_rate),
           "--backgrounds", ",".join(a.backgrounds), "--schedulers", " ".join(specs),
           "--out", out]
    log("vcpusched ping: " + " ".join(cmd))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    js = [f for f in os.listdir(out) if f.endswith(".json")]
    with open(os.path.join(out, js[0])) as f:
        data = json.load(f)
    return data["results"], " ".join(cmd)


# --- report ------------------------------------------------------------------------------


def fmt_share(x):
    return f"{100 * x:.1f}" if x is not None else ""


def compared(s):
    """What a scenario compares: "split" (each vCPU's part of the CPU time
    the group used) where the pool is always busy, so that weights show
    without the error of the wall clock; "wall" (CPU time / wall time)
    where the pool idles by design (a cap or a sleeper alone)."""
    busy = any(d["role"] == "hog" and not d["cap"] for d in s["doms"])
    return "split" if busy else "wall"


def split_of(share):
    total = sum(share.values()) or 1
    return {k: v / total for k, v in share.items()}


def share_rows(results, tol=0.03):
    rows = ["| scenario | sched | vCPU | Xen wall % | vcpusched wall % | Xen split % | "
            "vcpusched split % | diff (points) | ratio | within 3 | where |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, x, v = r["scenario"], r.get("xen") or {}, r.get("vs") or {}
        xw, vw = x.get("share", {}), v.get("share", {})
        xs, vs_ = split_of(xw), split_of(vw)
        cmp_x, cmp_v = (xs, vs_) if compared(s) == "split" else (xw, vw)
        for n in vcpu_names(s):
            a, b = cmp_x.get(n), cmp_v.get(n)
            ok = diff = ratio = ""
            if a is not None and b is not None:
                diff = f"{100 * (b - a):+.1f} ({compared(s)})"
                ratio = f"{b / a:.2f}" if a else ""
                ok = "yes" if abs(b - a) <= tol else "**no**"
            rows.append(f"| {s['title']} | {s['sched']} | {n} | {fmt_share(xw.get(n))} | "
                        f"{fmt_share(vw.get(n))} | {fmt_share(xs.get(n) if xw else None)} | "
                        f"{fmt_share(vs_.get(n) if vw else None)} | {diff} | {ratio} | {ok} | "
                        f"{r.get('where', '')} |")
    return rows


def lat_summary(xs):
    if not xs:
        return ""
    return (f"n={len(xs)} p50 {percentile(xs, 50) / 1000:.2f} p99 {percentile(xs, 99) / 1000:.2f} "
            f"max {max(xs) / 1000:.2f}")


def extra_rows(results):
    rows = []
    for r in results:
        s = r["scenario"]
        x, v = r.get("xen") or {}, r.get("vs") or {}
        if x.get("wake_us") or v.get("wake_us"):
            rows.append(f"| {s['title']} | {s['sched']} | wake lateness ms | "
                        f"{lat_summary(x.get('wake_us'))} | {lat_summary(v.get('wake_us'))} |")
        if x.get("runs_ms") or v.get("runs_ms"):
            xr = ", ".join(f"{k} {ms:.1f}" for k, ms in sorted((x.get("runs_ms") or {}).items()))
            vr = ", ".join(f"{k} {ms:.1f}" for k, ms in sorted((v.get("runs_ms") or {}).items()))
            rows.append(f"| {s['title']} | {s['sched']} | mean run ms | {xr} | {vr} |")
    if not rows:
        return []
    return ["", "| scenario | sched | measure | Xen | vcpusched |", "|---|---|---|---|---|"] + rows


def ping_rows(xen, vs, a):
    rows = ["| background | scheduler | Xen p50 | Xen p99 | Xen max | Xen p99/p50(none) | "
            "Xen max/p50(none) | vcpusched p50 | vcpusched p99 | vcpusched max | "
            "vcpusched p99/p50(none) | vcpusched max/p50(none) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    specs = [s.format(cap=a.bg_cap) for s in PING_SCHEDS]

    def cell(res, spec, bg):
        if not res or spec not in res or bg not in res[spec] or not res[spec][bg]["rtts"]:
            return ["", "", "", "", ""]
        x = res[spec][bg]["rtts"]
        base = res[spec].get("none", {}).get("rtts")
        p50n = percentile(base, 50) if base else None
        return [f"{percentile(x, 50):.2f}", f"{percentile(x, 99):.2f}", f"{max(x):.2f}",
                f"{percentile(x, 99) / p50n:.1f}" if p50n else "",
                f"{max(x) / p50n:.1f}" if p50n else ""]

    for bg in a.backgrounds:
        for spec in specs:
            rows.append(f"| {bg} | {spec} | " + " | ".join(cell(xen, spec, bg) + cell(vs, spec, bg))
                        + " |")
    return rows


def write_report(meta, results, xen_ping, vs_ping, a):
    lines = [f"# Real Xen vs vcpusched ({meta['date']})", "",
             f"Command: `{meta['command']}`", "",
             f"Took {meta['took_s'] / 60:.1f} min. Host: {meta['host']}. Xen: {meta.get('xen', '')}; "
             f"rig {meta.get('rig_key', '')} ({meta.get('accel', '')}, boot "
             f"{meta.get('boot_s', 0):.0f} s). Share window {a.window:.0f} s per scenario; shares "
             "are CPU time / wall time per vCPU (Xen: `xl vcpu-list` deltas; vcpusched: "
             "schedstat of host threads on CPU 1, or the simulator where marked `sim`).", ""]
    if meta.get("xen_logs"):
        lines += ["Xen shares marked `from the log` in the settings list below come from the "
                  "logs of earlier runs of the same scenarios that died in a later phase (a TCG "
                  f"guest crash, a hung dom0): {', '.join(meta['xen_logs'])}; later logs replace "
                  "earlier ones. Those logs give shares only (no lateness, no run lengths).", ""]
    if results:
        lines += ["## Shares", ""] + share_rows(results) + extra_rows(results)
        lines += ["", "Pool settings as each side read them back:", ""]
        for r in results:
            s = r["scenario"]
            x = r.get("xen") or {}
            xs = x.get("settings", "").replace("\n", " ")
            vs = (r.get("vs") or {}).get("settings", "")
            stolen = ", ".join(f"pCPU {p} {100 * v:.1f}%" for p, v in (x.get("stolen") or {}).items())
            lines.append(f"- {s['id']}: Xen `{xs}`" + (f" (host time stolen from the measured "
                                                        f"pCPU threads: {stolen})" if stolen else "")
                         + f"; vcpusched `{vs}`")
    if xen_ping or vs_ping:
        lines += ["", "## Ping between two VMs (RTT ms; ratios over the same scheduler's "
                  "no-background p50)", "",
                  f"{a.reps} repetition(s) × {a.count} pings every {a.interval} s per cell "
                  f"(first {a.warmup} dropped); background cap {a.bg_cap}; netload rate "
                  f"{a.net_rate} Mbit/s.", ""] + ping_rows(xen_ping, vs_ping, a)
    return "\n".join(lines) + "\n"


def xen_from_log(results, path):
    """Fill the Xen shares of `results` from the "xen: ID: name P%, ..."
    lines of a run's log (a run that died after its Xen phase printed
    them); a later log replaces an earlier one's figures, never a
    measured Xen result of this run."""
    got = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\[[\d:]+\] xen: (\S+): (.*%)$", line.strip())
            if m:
                got[m.group(1)] = {k: float(v.rstrip("%")) / 100 for k, v in
                                   (kv.split() for kv in m.group(2).split(", "))}
    for r in results:
        from_log = "from the log" in (r.get("xen") or {}).get("settings", "from the log")
        if r["scenario"]["id"] in got and from_log:
            r["xen"] = {"share": got[r["scenario"]["id"]], "settings": f"from the log {path}"}


def report_from(a, files):
    """Write the report of one or more runs' .json again (no measurement):
    the first file's run, with the scenarios of later ones added or
    replacing those of the same id; the result goes beside the first."""
    runs = []
    for path in files:
        with open(path) as f:
            runs.append(json.load(f))
    d = runs[0]
    xen_logs = a.xen_from_log
    for k, v in d["args"].items():
        if k not in ("report_from", "out", "xen_from_log"):
            setattr(a, k, v)
    a.backgrounds = tuple(a.backgrounds)
    shares = {r["scenario"]["id"]: r for r in d["shares"]}
    meta = dict(d["meta"])
    for extra in runs[1:]:
        shares.update({r["scenario"]["id"]: r for r in extra["shares"]})
        meta["command"] += f"`, then (scenarios added or replaced) `{extra['meta']['command']}"
        meta["took_s"] += extra["meta"]["took_s"]
        if extra["xen_ping"] or extra["vcpusched_ping"]:
            # The ping table comes from the last run that has one, with its settings.
            d["xen_ping"], d["vcpusched_ping"] = extra["xen_ping"], extra["vcpusched_ping"]
            for k in ("reps", "count", "warmup", "interval", "net_rate", "bg_cap", "backgrounds"):
                setattr(a, k, extra["args"][k])
            a.backgrounds = tuple(a.backgrounds)
    if xen_logs:
        for path in xen_logs.split(","):
            xen_from_log(list(shares.values()), path)
        meta["xen_logs"] = xen_logs.split(",")
    text = write_report(meta, list(shares.values()), d["xen_ping"], d["vcpusched_ping"], a)
    base = files[0][:-len(".json")]
    with open(base + ".md", "w") as f:
        f.write(text)
    if len(runs) > 1 or xen_logs:
        with open(base + ".json", "w") as f:
            json.dump({**d, "meta": meta, "shares": list(shares.values()),
                       "merged_from": [r["meta"] for r in runs]}, f)
    print(text)


# --- main ----------------------------------------------------------------------------------


def hog_running(rig, name, **kw):
    """Create a hog domU and wait for it to run. A TCG guest now and then
    dies booting, a segfault in its init's first pipes (the emulation, not
    Xen or vcpusched: bench/README.md): then once more, saying so."""
    rig.create(name, **kw)
    try:
        rig.wait_console(name, "VS-HOG", 180)
    except xenrig.RigError as e:
        if "Segmentation fault" not in str(e):
            raise
        log(f"xen smoke: {name} died booting (a segfault under TCG): once more")
        rig.destroy(name)
        rig.create(name, **kw)
        rig.wait_console(name, "VS-HOG", 180)


def smoke(a):
    """Boot the rig and check one 2:1 share under Credit (the CI check)."""
    t0 = time.monotonic()
    with exclusive(), xenrig.Rig(smp=4) as rig:
        rig.pools_init()
        rig.pin({1: MANAGED, "rest": {HOUSEKEEPING}}, fifo={1})
        rig.pool("s", "credit", [1])
        for n, w in (("a", 512), ("b", 256)):
            hog_running(rig, n, pool="s", weight=w)
        time.sleep(2)
        res = measure_shares(rig, a.window)
    sa, sb = res["share"]["a/0"], res["share"]["b/0"]
    split = sa / (sa + sb)
    print(f"xen smoke: boot {rig.boot_s:.0f} s, weights 512:256 -> {100 * sa:.1f}% / "
          f"{100 * sb:.1f}% of the pCPU, split {split:.3f} (want 0.667 +- 0.03), "
          f"{time.monotonic() - t0:.0f} s in all")
    if abs(split - 2 / 3) > 0.03 or sa + sb < 0.9:
        sys.exit("xen smoke: FAILED")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(SRC, "build", "ci"))
    p.add_argument("--only", default="shares,ping", help="shares, ping, or both")
    p.add_argument("--scenarios", default="", help="comma-separated scenario ids (default: all)")
    p.add_argument("--sides", default="xen,vcpusched")
    p.add_argument("--window", type=float, default=20.0, help="seconds per share measurement")
    p.add_argument("--reps", type=int, default=2, help="ping: repetitions")
    p.add_argument("--count", type=int, default=200, help="ping: pings per run")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--interval", type=float, default=0.05)
    p.add_argument("--net-rate", type=int, default=20)
    p.add_argument("--bg-cap", type=int, default=25, help="ping: cap on each background VM")
    p.add_argument("--backgrounds", default=",".join(BGS))
    p.add_argument("--smoke", action="store_true", help="boot the rig, check a 2:1 share on Xen")
    p.add_argument("--sim-timer-late", default="50us", metavar="DURATION",
                   help="simulator side: how late deadlines may fire (vcpusched-sim timer_late)")
    p.add_argument("--out", default=os.path.join(SRC, "bench", "results"))
    p.add_argument("--xen-from-log", metavar="LOG[,LOG...]",
                   help="take Xen shares missing from this run from earlier runs' logs")
    p.add_argument("--report-from", metavar="JSON[,JSON...]",
                   help="write the report again from runs' .json files (no measurement); "
                        "later files add or replace scenarios")
    a = p.parse_args()
    if a.report_from:
        return report_from(a, a.report_from.split(","))
    a.backgrounds = tuple(a.backgrounds.split(","))
    a.build = os.path.abspath(a.build)
    if os.geteuid() != 0:
        sys.exit("compare.py: run as root")
    os.sched_setaffinity(0, {HOUSEKEEPING})
    if a.smoke:
        return smoke(a)
    t0 = time.monotonic()
    only, sides = a.only.split(","), a.sides.split(",")
    picked = [s for s in scenarios() if not a.scenarios or s["id"] in a.scenarios.split(",")]
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": ("flock /run/lock/vcpusched-test.lock env VCPUSCHED_LOCK_HELD=1 "
                        if os.environ.get("VCPUSCHED_LOCK_HELD") == "1" else "")
                       + " ".join([sys.executable.split("/")[-1], os.path.relpath(sys.argv[0], SRC)]
                                  + sys.argv[1:]),
            "host": f"{platform.node()} {platform.release()} {os.cpu_count()} CPUs"}
    results = [{"scenario": s} for s in picked] if "shares" in only else []
    xen_ping = vs_ping = None
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, f"xen-vs-vcpusched-{meta['date'][:10]}")

    def save():
        # After every phase: a later failure keeps what was measured.
        meta["took_s"] = time.monotonic() - t0
        with open(base + ".json", "w") as f:
            json.dump({"meta": meta, "args": vars(a), "shares": results, "xen_ping": xen_ping,
                       "vcpusched_ping": vs_ping}, f)

    if "xen" in sides and (results or "ping" in only):
        with exclusive(), xenrig.Rig(smp=4) as rig:
            meta.update(rig_key=rig.img["XR_KEY"], accel=rig.accel, boot_s=rig.boot_s,
                        xen=rig.sh("xl info | grep -E '^(xen_version|xen_commandline)'").strip())
            if results:
                xs = XenSide(rig, a.window)
                for r in results:
                    log(f"xen: {r['scenario']['id']}")
                    try:
                        r["xen"] = xs.run(r["scenario"])
                    except xenrig.RigError as e:
                        # A TCG guest now and then dies booting (a segfault
                        # in its init): once more, from scratch.
                        log(f"xen: {r['scenario']['id']}: {str(e)[:200]}; retrying")
                        r["xen"] = xs.run(r["scenario"])
                    save()
                    log(f"xen: {r['scenario']['id']}: " + ", ".join(
                        f"{k} {100 * v:.1f}%" for k, v in sorted(r["xen"]["share"].items())))
                save()
            if "ping" in only:
                xen_ping = XenPing(rig, a).run()
                save()
    if "vcpusched" in sides:
        host, sim = HostSide(a.build, a.window), SimSide(a.build, a.window, a.sim_timer_late)
        # One hold of the test lock for the whole phase: taken per scenario,
        # every scenario would queue again behind the other tests.
        with exclusive():
            for r in results:
                s = r["scenario"]
                if s["cpus"] == 1:
                    r["vs"], r["where"] = host.run(s), "host"
                else:
                    r["vs"], r["where"] = sim.run(s), "sim"
                log(f"vcpusched: {s['id']}: " + ", ".join(
                    f"{k} {100 * v:.1f}%" for k, v in sorted(r["vs"]["share"].items())))
            save()
        if "ping" in only:
            vs_ping, meta["vs_ping_command"] = vcpusched_ping(a)
    for path in (a.xen_from_log or "").split(","):
        if path:
            xen_from_log(results, path)
            meta["xen_logs"] = meta.get("xen_logs", []) + [path]
    save()
    text = write_report(meta, results, xen_ping, vs_ping, a)
    print(text)
    with open(base + ".md", "w") as f:
        f.write(text)
    log(f"results in {base}.md")


if __name__ == "__main__":
    main()
