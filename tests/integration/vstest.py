# SPDX-License-Identifier: ISC
"""Helpers for the daemon's integration tests: a private vcpuschedd, real
busy-loop processes, and what the kernel says about them (/proc schedstat,
sched_getscheduler, affinity). Every helper cleans up after itself; the
tests must never leave a thread at SCHED_FIFO or a process running."""

import json
import os
import shutil
import socket
import signal
import subprocess
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


def shares(tids, seconds):
    """Each thread's share of the CPU time the group used over `seconds`,
    and each one's share of wall time. Measured side by side."""
    t0 = time.monotonic()
    a = {t: run_ns(t) for t in tids}
    time.sleep(seconds)
    b = {t: run_ns(t) for t in tids}
    wall = (time.monotonic() - t0) * 1e9
    used = {t: b[t] - a[t] for t in tids}
    total = sum(used.values()) or 1
    return {t: used[t] / total for t in tids}, {t: used[t] / wall for t in tids}


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
        self.proc = subprocess.Popen(["python3", "-c", "import os; os.write(1, b'r')\n" + code],
                                     stdout=subprocess.PIPE,
                                     preexec_fn=lambda: os.sched_setaffinity(0, {HOUSEKEEPING_CPU}))
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
        self.dir = tempfile.mkdtemp(prefix="vcpusched-test-")
        self.sock = os.path.join(self.dir, "control.sock")
        self.state = os.path.join(self.dir, "state")
        self.log = os.path.join(self.dir, "daemon.log")
        park = ["--park", park_backends()[0]] if os.environ.get("VCPUSCHED_PARK") else []
        self.args = ["--foreground", "--socket", self.sock, "--state", self.state,
                     "--cpus", cpus, "--policy", policy, "--events", events, *park, *args]
        self.proc = None

    def start(self, timeout=None):
        """Start and wait for an answer (10 s x TIME_SCALE unless given); a
        daemon that does not answer in time is stopped before the error is
        raised (it would otherwise keep the RT settings it changed, with
        nobody left to stop it)."""
        timeout = 10 * TIME_SCALE if timeout is None else timeout
        with open(self.log, "ab") as logf:  # the child keeps its own copy
            self.proc = subprocess.Popen([DAEMON, *self.args], stdout=logf, stderr=logf,
                                         env=self.env,
                                         preexec_fn=lambda: os.sched_setaffinity(
                                             0, {HOUSEKEEPING_CPU}))
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


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def exited(pid):
    """True once a process has exited: gone, or a zombie not yet reaped."""
    try:
        stat = read(f"/proc/{pid}/stat")
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


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
        """A daemon running `policy`, RT throttling off, with pool parameters."""
        args = ["--rt-runtime-us", "-1"]
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
