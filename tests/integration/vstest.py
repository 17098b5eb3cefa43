# SPDX-License-Identifier: ISC
"""Helpers for the daemon's integration tests: a private vcpuschedd, real
busy-loop processes, and what the kernel says about them (/proc schedstat,
sched_getscheduler, affinity). Every helper cleans up after itself; the
tests must never leave a thread at SCHED_FIFO or a process running: every
process a test starts dies with its driver (child_setup), and the host
fixture (hostcheck.py) finds and names whatever is left.

Every timing, share, rate and latency check goes through within() or near():
it asserts, and writes what it measured, its bound, its margin and the
noise it measured to the suite's margins file (VCPUSCHED_MARGINS, JSON
lines), which scripts/margins.py reports."""

import ctypes
import json
import os
import shutil
import socket
import signal
import subprocess
import sys
import statistics
import tempfile
import time
import unittest

BUILD = os.environ.get("VCPUSCHED_BUILD", os.path.join(os.path.dirname(__file__), "../../build"))
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
DAEMON = os.path.join(BUILD, "vcpusched", "vcpuschedd")
CTL = os.path.join(BUILD, "vcpusched", "vcpuschedctl")
MANAGED_CPU = 1
HOUSEKEEPING_CPU = 0
# How much slower than this host the machine the tests run on is: the
# real-host rig (tests/rig) is a TCG VM, where loading the BPF program takes
# seconds and the host's own time slices (a few ms) blur 1 ms slices.
# Start-up timeouts and the slices of share tests are multiplied by it.
TIME_SCALE = float(os.environ.get("VCPUSCHED_TIME_SCALE", "1"))
# Under a sanitizer the daemon runs slower: functional deadlines stretch by
# this factor (measured under ASan and TSan here: a kill -9 restored in
# 0.02 s, a killed QEMU unlisted in 0.5 s of its 1 s, 20 restarts within
# 0.7 s of their 3 s). Timing tests do not run there at all.
SANITIZER = os.environ.get("VCPUSCHED_SANITIZER", "")
DEADLINE_SCALE = TIME_SCALE * (3.0 if SANITIZER else 1.0)


def stretch(seconds):
    """A functional test's deadline, stretched under TCG and sanitizers."""
    return seconds * DEADLINE_SCALE


def timing(fn):
    """Mark a test whose assertions are shares, rates or latencies: ctest
    runs it as timing.MODULE (label timing), alone on the machine and never
    under a sanitizer (tests/integration/runtests.py)."""
    fn.timing = True
    return fn


PR_SET_PDEATHSIG = 1


def child_setup(sig=signal.SIGKILL):
    """In every process a test starts: sent `sig` when the test's driver
    dies (a driver killed at its ctest timeout leaves nothing running), and
    on the housekeeping CPU, like any host process."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))
    os.sched_setaffinity(0, {HOUSEKEEPING_CPU})


def popen(cmd, sig=signal.SIGKILL, **kw):
    """subprocess.Popen with child_setup (see there)."""
    return subprocess.Popen(cmd, preexec_fn=lambda: child_setup(sig), **kw)


def fair_server():
    """True if this kernel has the fair server (Linux 6.12+), where RT
    throttling may be turned off: the daemon's own rule (host/rtsafe.c)."""
    if os.path.exists("/sys/kernel/debug/sched/fair_server"):
        return True
    if os.access("/sys/kernel/debug/sched", os.R_OK):
        return False
    try:
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (6, 12)


# The daemon's RT throttling for the share tests: off where the kernel's
# fair server keeps per-CPU kernel threads alive, else the kernel's (the
# daemon refuses -1 there: a busy managed CPU would stall RCU).
RT_OFF = ["--rt-runtime-us", "-1"] if fair_server() else []


# --- margins ----------------------------------------------------------------

def _record(tc, what, got, lo, hi, noise, why, scale):
    margin = min(got - lo if lo is not None else float("inf"),
                 hi - got if hi is not None else float("inf"))
    row = {"ctest": os.environ.get("VCPUSCHED_TEST", ""), "test": tc.id(), "check": what,
           "got": got, "lo": lo, "hi": hi, "margin": margin, "scale": scale,
           "rel": margin / scale if scale else None, "noise": noise, "ok": margin >= 0,
           "why": why, "attempt": getattr(tc, "vs_attempt", 1)}
    path = os.environ.get("VCPUSCHED_MARGINS")
    if path:
        # One line per write, appended: atomic beside other tests' writes.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(row) + "\n").encode())
        finally:
            os.close(fd)
    return margin


def within(tc, what, got, lo=None, hi=None, noise=None, why="", scale=None):
    """Assert lo <= got <= hi (either may be None) and record the check:
    the margin is the distance to the nearer bound (negative: missed);
    `noise` what this run measured of the quantity's own spread (e.g. the
    spread of its windows), `why` the reason for the bound's width, `scale`
    what the margin is a fraction of in the report (default: the bound)."""
    if scale is None:
        bounds = [abs(b) for b in (lo, hi) if b is not None and b != 0]
        scale = min(bounds) if bounds else None
    margin = _record(tc, what, got, lo, hi, noise, why, scale)
    if margin < 0:
        rng = f"[{'' if lo is None else f'{lo:.4g}'}, {'' if hi is None else f'{hi:.4g}'}]"
        tc.fail(f"{what}: {got:.4g} not in {rng}" + (f" (noise {noise:.3g})" if noise else ""))
    return got


NOISE_K = 3  # a tolerance derived from noise: this many standard errors


def near(tc, what, got, want, tol, noise=None, why="", widest=None):
    """within() want +- tol; the margin is reported as a part of the
    tolerance. With `widest`, the tolerance is derived from the noise this
    run measured: NOISE_K standard errors of the figure, never less than
    `tol` (the quiet host's), never more than `widest` (which keeps the
    check's teeth: the defect it is there for lies well beyond it)."""
    if widest is not None and noise:
        why = f"{why}; {NOISE_K} standard errors, in [{tol:.3g}, {widest:.3g}]"
        tol = min(widest, max(tol, NOISE_K * noise))
    return within(tc, what, got, want - tol, want + tol, noise=noise, why=why, scale=tol)


# The part of the CPU's time (after steal and interrupts) that went to no
# managed thread beside a hog: the dispatcher's passes and idle gaps.
# Measured here 0.6-2.7 % (the most with Credit2 parking through the v1
# freezer: a freeze and a thaw every 10 ms); a hog held back by another's
# cap loses 50 % or more.
SPARE_MAX = 0.08
CAP_TOL = 0.03


def check_cap(tc, what, m, capped, cap_pct, hog=None):
    """A capped thread has cap_pct % of wall time, +-CAP_TOL: a cap is CPU
    time per period of wall time. A hypervisor that steals the CPU for whole
    periods (bursts of tens of ms, seen here) takes the budget of those
    periods with it, so the floor is cap_pct % of what it left (wall less
    steal and interrupts), -CAP_TOL. An uncapped hog beside it has the rest
    of what the CPU had after steal and interrupts, but for SPARE_MAX (the
    dispatcher, idle gaps)."""
    cap = cap_pct / 100
    within(tc, f"{what}: capped share of wall time", m.med("of_wall", capped),
           lo=cap * m.part("avail")[0] - CAP_TOL, hi=cap + CAP_TOL,
           noise=m.noise("of_wall", capped), scale=CAP_TOL,
           why="the cap of wall time, +-3 points; the floor: of what steal left")
    if hog is not None:
        spare = [1 - w.of_avail[capped] - w.of_avail[hog] for w in m.windows]
        within(tc, f"{what}: CPU time neither thread had", statistics.median(spare),
               hi=SPARE_MAX, noise=noise(spare), scale=SPARE_MAX,
               why="dispatcher passes and idle gaps")


def again(tc, body, attempts=2):
    """Run body() (a measurement and its checks); after a miss, measure
    once more. A miss that the next attempt does not repeat is the
    machine's noise; a property that fails is missed every time. Every
    attempt's checks are in the margins file (with its number)."""
    for n in range(1, attempts + 1):
        tc.vs_attempt = n
        try:
            return body()
        except AssertionError as e:
            if n == attempts:
                raise
            print(f"\n{tc.id()}: attempt {n} missed ({e}); measuring again", file=sys.stderr)
        finally:
            tc.vs_attempt = 1


def slice_us(us):
    """A slice for a share test, scaled (TIME_SCALE)."""
    return int(us * TIME_SCALE)


def pin_self_to_housekeeping():
    """The test driver must not compete with FIFO threads on the managed CPU."""
    os.sched_setaffinity(0, {HOUSEKEEPING_CPU})


def threads_of(pid):
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


def run_ns(tid, pid=None):
    """CPU time a thread has run, from /proc/<tid>/schedstat (ns)."""
    path = f"/proc/{pid}/task/{tid}/schedstat" if pid else f"/proc/{tid}/schedstat"
    with open(path) as f:
        return int(f.read().split()[0])


def policy(tid):
    return os.sched_getscheduler(tid)


def is_fifo(tid):
    return policy(tid) & ~0x40000000 == os.SCHED_FIFO  # ignore SCHED_RESET_ON_FORK


def rt_priority(tid):
    return os.sched_getparam(tid).sched_priority


USER_HZ = os.sysconf("SC_CLK_TCK")


def cpu_times(cpus):
    """The sum of some CPUs' lines of /proc/stat in ns (USER_HZ ticks: 10 ms
    resolution)."""
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    out, seen = dict.fromkeys(names, 0), set()
    with open("/proc/stat") as f:
        for line in f:
            words = line.split()
            if words[0].startswith("cpu") and words[0][3:].isdigit() and int(words[0][3:]) in cpus:
                seen.add(int(words[0][3:]))
                for k, v in zip(names, words[1:9]):
                    out[k] += int(v) * 1_000_000_000 // USER_HZ
    if seen != set(cpus):
        raise RuntimeError(f"no cpu{sorted(set(cpus) - seen)} in /proc/stat")
    return out


class Window:
    """What one window of wall time gave: each thread's run time (schedstat,
    ns, which leaves out time the hypervisor stole), and the CPUs' own
    accounts: steal, interrupts and idle (/proc/stat). `avail` is the time
    the CPUs could run anything: wall time (times the number of CPUs) less
    steal and interrupts; `wall` is one CPU's."""

    def __init__(self, tids, ncpus, t0, a, c0, t1, b, c1):
        self.wall = (t1 - t0) * 1e9
        self.run = {t: b[t] - a[t] for t in tids}
        d = {k: c1[k] - c0[k] for k in c0}
        self.steal = d["steal"]
        self.irq = d["irq"] + d["softirq"]
        self.idle = d["idle"] + d["iowait"]
        self.avail = max(self.wall * ncpus - self.steal - self.irq, 1.0)
        total = sum(self.run.values()) or 1
        self.split = {t: self.run[t] / total for t in tids}  # of what the threads had
        self.of_wall = {t: self.run[t] / self.wall for t in tids}
        self.of_avail = {t: self.run[t] / self.avail for t in tids}


class Measure:
    """Back-to-back windows over the same threads, and per quantity the
    median of the windows (the figure checked) and its noise: the standard
    error of that median from the windows' own spread (1.25 sd / sqrt(n)),
    what this run measured, reported beside the margin."""

    def __init__(self, windows, ncpus=1):
        self.windows, self.ncpus = windows, ncpus

    def med(self, attr, tid=None):
        xs = [getattr(w, attr) if tid is None else getattr(w, attr)[tid] for w in self.windows]
        return statistics.median(xs)

    def noise(self, attr, tid=None):
        return noise([getattr(w, attr) if tid is None else getattr(w, attr)[tid]
                      for w in self.windows])

    def part(self, what):
        """Median and noise of a part of the CPUs' wall time per window,
        `what` being 'idle', 'steal', 'irq' or 'avail'."""
        xs = [getattr(w, what) / (w.wall * self.ncpus) for w in self.windows]
        return statistics.median(xs), noise(xs)


def noise(xs):
    """The standard error of the median of xs, from their spread."""
    return 1.2533 * statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0


def measure(tids, windows=5, seconds=0.6, cpus=(MANAGED_CPU,)):
    """`windows` back-to-back windows of `seconds` over `tids`, and the
    accounts of `cpus` (theirs)."""
    out = []
    t0, a, c0 = time.monotonic(), {t: run_ns(t) for t in tids}, cpu_times(cpus)
    for _ in range(windows):
        time.sleep(seconds)
        t1, b, c1 = time.monotonic(), {t: run_ns(t) for t in tids}, cpu_times(cpus)
        out.append(Window(tids, len(cpus), t0, a, c0, t1, b, c1))
        t0, a, c0 = t1, b, c1
    return Measure(out, len(cpus))


class Busy:
    """A process running a busy loop (a CPU hog), started SCHED_OTHER on the
    housekeeping CPU like any host process. Returns once the process runs
    its own code: Python's start-up (file reads that may block for long
    once the process is moved to a busy managed CPU) is over by then."""

    def __init__(self, kind="busy", period_ms=5, run_ms=0.0, out=None, wake_us=0, sleep_us=0,
                 threads=1):
        if kind == "busy":
            code = "while True: pass"
        elif kind == "duty":  # runs run_ms, then sleeps period_ms - run_ms
            code = ("import time\nwhile True:\n"
                    f"    t = time.monotonic() + {run_ms / 1000.0}\n"
                    "    while time.monotonic() < t: pass\n"
                    f"    time.sleep({(period_ms - run_ms) / 1000.0})\n")
        elif kind == "aligned":
            # Lined up with multiples of period_ms of CLOCK_MONOTONIC (the
            # daemon's clock; time.monotonic_ns here), where Credit arms its
            # ticks: runs from each boundary + wake_us (may be < 0) to the
            # next boundary - sleep_us, at absolute times, so it sleeps
            # across every boundary. Creates `out` (if given) once looping.
            code = ("import time\n"
                    "mono = time.monotonic_ns\n"
                    f"P, W, S = {int(period_ms * 1e6)}, {int(wake_us * 1e3)}, {int(sleep_us * 1e3)}\n"
                    f"open({out!r}, 'w').close() if {out!r} else None\n"
                    "b = mono() // P * P\n"
                    "while True:\n"
                    "    d = b + W - mono()\n"
                    "    if d > 0: time.sleep(d / 1e9)\n"
                    "    e = b + P - S\n"
                    "    while mono() < e: pass\n"
                    "    b += P\n"
                    "    n = mono()\n"
                    "    if n > b + W: b = n // P * P + P  # late: skip to the next\n")
        elif kind == "latency":  # wakes at absolute times; logs how late it ran (us)
            code = ("import os, time\n"
                    f"f = open({out!r}, 'w', buffering=1)\n"
                    f"p = {period_ms / 1000.0}\n"
                    "t = time.monotonic() + p\n"
                    "while True:\n"
                    "    d = t - time.monotonic()\n"
                    "    if d > 0: time.sleep(d)\n"
                    "    f.write('%d\\n' % ((time.monotonic() - t) * 1e6))\n"
                    f"    e = time.monotonic() + {run_ms / 1000.0}\n"
                    "    while time.monotonic() < e: pass\n"
                    "    t += p\n")
        elif kind == "sleepers":  # `threads` threads of "sleeper"; creates `out` when all run
            code = ("import threading, time\n"
                    "def loop():\n"
                    "    while True:\n"
                    "        x = sum(range(2000))\n"
                    f"        time.sleep({period_ms / 1000.0})\n"
                    f"for _ in range({threads} - 1): threading.Thread(target=loop).start()\n"
                    f"open({out!r}, 'w').close()\n"
                    "loop()\n")
        else:  # sleeps `period_ms` between short bursts: an I/O-like waker
            code = ("import time\nwhile True:\n"
                    "    x = sum(range(2000))\n"
                    f"    time.sleep({period_ms / 1000.0})\n")
        self.proc = popen(["python3", "-c", "import os; os.write(1, b'r')\n" + code],
                          stdout=subprocess.PIPE)
        self.pid = self.proc.pid
        self.proc.stdout.read(1)

    @property
    def tid(self):
        return self.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def park_backends(v1_freezer=True, v2=True):
    """The parking backends (--park) the tests run under: VCPUSCHED_PARK, a
    comma-separated list of v1, v2 and auto; by default each one mounted
    here (given as its mount point, "" if none)."""
    env = os.environ.get("VCPUSCHED_PARK", "")
    if env:
        return [b.strip() for b in env.split(",") if b.strip()]
    return [b for b, m in (("v1", v1_freezer), ("v2", v2)) if m] or ["auto"]


class Daemon:
    """A private vcpuschedd with its own socket and state file. With
    VCPUSCHED_PARK set, it parks with the first backend listed (an explicit
    --park in args wins)."""

    def __init__(self, *args, cpus=str(MANAGED_CPU), policy="rr", events="auto", env=None):
        self.env = env  # None: the test's own environment
        # Tests about libvirt say which one; the others watch none (never
        # the host's own libvirtd).
        if "--libvirt" not in args:
            args = ("--libvirt", "none", *args)
        self.dir = tempfile.mkdtemp(prefix="vcpusched-test-")
        self.sock = os.path.join(self.dir, "control.sock")
        self.state = os.path.join(self.dir, "state")
        self.log = os.path.join(self.dir, "daemon.log")
        park = ["--park", park_backends()[0]] if os.environ.get("VCPUSCHED_PARK") else []
        # The rig's: its TCG CPUs stall for seconds (tests/rig/vcpuschedd.conf).
        if os.environ.get("VCPUSCHED_WATCHDOG_MS") and "--watchdog-ms" not in args:
            args = ("--watchdog-ms", os.environ["VCPUSCHED_WATCHDOG_MS"], *args)
        self.args = ["--foreground", "--socket", self.sock, "--state", self.state,
                     "--cpus", cpus, "--policy", policy, "--events", events, *park, *args]
        self.proc = None

    def start(self, timeout=None):
        """Start and wait for an answer (10 s, stretched, unless given); a
        daemon that does not answer in time is stopped before the error is
        raised (it would otherwise keep the RT settings it changed, with
        nobody left to stop it)."""
        timeout = stretch(10) if timeout is None else timeout
        with open(self.log, "ab") as logf:  # the child keeps its own copy
            # SIGTERM if the driver dies: the daemon gives everything back.
            self.proc = popen([DAEMON, *self.args], sig=signal.SIGTERM, stdout=logf,
                              stderr=logf, env=self.env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vcpuschedd exited: {self.read_log()}")
            if self.ctl("version", check=False).returncode == 0:
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"vcpuschedd did not answer in {timeout} s: {self.read_log()}")

    def read_log(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def ctl(self, *args, check=True):
        r = subprocess.run([CTL, "--socket", self.sock, *args], capture_output=True, text=True,
                           timeout=30)
        if check and r.returncode != 0:
            raise RuntimeError(f"vcpuschedctl {' '.join(args)}: {r.returncode} {r.stderr}")
        return r

    def json(self, *args):
        return json.loads(self.ctl("--json", *args).stdout)

    def guardian_pid(self):
        out = subprocess.run(["pgrep", "-f", "-x", "vcpusched-guard"], capture_output=True,
                             text=True).stdout.split()
        return [int(p) for p in out]

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    # What a sanitizer or a broken invariant (VS_ASSERT) writes: the test fails.
    REPORTS = ("ThreadSanitizer:", "AddressSanitizer:", "LeakSanitizer:", "runtime error:",
               "invariant broken:")

    def check_log(self):
        log = self.read_log() if os.path.exists(self.log) else ""
        for r in self.REPORTS:
            if r in log:
                raise AssertionError(f"vcpuschedd reported '{r}':\n{log[-6000:]}")

    def cleanup(self):
        self.stop()
        try:
            self.check_log()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class Control:
    """One connection to a daemon's control socket (docs/protocol.md):
    requests answered in milliseconds, without vcpuschedctl's start-up."""

    def __init__(self, path, timeout=10):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.f = self.sock.makefile("rw")

    def request(self, cmd, **args):
        self.f.write(json.dumps({"v": 1, "cmd": cmd, **({"args": args} if args else {})}) + "\n")
        self.f.flush()
        msg = json.loads(self.f.readline())
        if not msg.get("ok"):
            raise RuntimeError(f"{cmd}: {msg.get('error')}")
        return msg["result"]

    def close(self):
        self.f.close()
        self.sock.close()


class Qmp:
    """A minimal QMP client (a test's own monitor): commands in, results
    out, events skipped."""

    def __init__(self, path, timeout=10):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.f = self.sock.makefile("rw")
        self._reply()  # the greeting
        self.cmd("qmp_capabilities")

    def _reply(self):
        while True:
            msg = json.loads(self.f.readline())
            if "event" not in msg:
                return msg

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, **({"arguments": args} if args else {})}))
        self.f.write("\n")
        self.f.flush()
        msg = self._reply()
        if "error" in msg:
            raise RuntimeError(f"qmp {name}: {msg['error']}")
        return msg.get("return")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()
        self.sock.close()


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def guardian_of(d):
    """The guardian of daemon `d`: its child named vcpusched-guard."""
    out = subprocess.run(["pgrep", "-P", str(d.proc.pid), "-x", "vcpusched-guard"],
                         capture_output=True, text=True).stdout.split()
    if len(out) != 1:
        raise AssertionError(f"daemon {d.proc.pid} has guardians {out}")
    return int(out[0])


def cgroup_of(pid, controller):
    """The cgroup v1 group of a process (or thread id) for `controller`."""
    for line in read(f"/proc/{pid}/cgroup").splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            return path
    return None


def exited(pid):
    """True once a process has exited: gone, or a zombie not yet reaped."""
    try:
        stat = read(f"/proc/{pid}/stat")
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def kill_pid(pid):
    """SIGKILL a process a test started (daemonised: no parent-death
    signal reaches it), if it still runs; wait until it is gone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_until(lambda: exited(pid), 10)


def wait_until(pred, timeout, step=0.01):
    """Poll pred() until it is true or `timeout` seconds pass; returns the
    elapsed time, or None on timeout."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return time.monotonic() - t0
        time.sleep(step)
    return None


def read_latencies(path, skip=20):
    """Wake latencies (us) logged by a Busy('latency') process, warm-up dropped."""
    with open(path) as f:
        xs = [int(l) for l in f if l.strip()]
    return xs[skip:]


def percentile(xs, p):
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, int(p / 100.0 * len(s) + 0.999999) - 1))]


class DaemonTestCase(unittest.TestCase):
    """A test that starts private daemons and busy processes, all cleaned up."""

    def setUp(self):
        pin_self_to_housekeeping()
        self.procs, self.daemons = [], []

    def tearDown(self):
        for d in self.daemons:
            d.cleanup()
        for p in self.procs:
            p.stop()

    def daemon(self, policy, *params):
        """A daemon running `policy`, RT throttling off where the kernel
        allows it (RT_OFF), with pool parameters."""
        args = list(RT_OFF)
        for p in params:
            args += ["--pool-param", p]
        d = Daemon(*args, policy=policy).start()
        self.daemons.append(d)
        return d

    def spawn(self, *a, **kw):
        p = Busy(*a, **kw)
        self.procs.append(p)
        return p

    def attach(self, d, name, p, *params):
        d.ctl("attach", name, "--pid", str(p.pid), *params)
