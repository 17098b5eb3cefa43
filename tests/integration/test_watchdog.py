# SPDX-License-Identifier: ISC
"""The guardian's watchdog on real threads at real SCHED_FIFO: a daemon that
lives but is stuck, while two busy processes share the managed CPU and a
third, capped, is parked by freezing. Stuck four ways: `kill -STOP` of the
daemon; its CPU 1 dispatcher made to spin at its real-time priority holding
the pool lock, or to sleep in the kernel holding it (fault injection, test
builds only: VCPUSCHED_FAULT, armed by SIGUSR2); and the dedicated
pattern's dispatcher spinning on CPU 0, where the guardian runs too (it
must preempt it). Each time every thread is given back within the bound
and a little more (no thread at SCHED_FIFO, affinity and freezer group as
found), the thread that was waiting runs again as much as the other hog
(2-3.5 s after the fault), the daemon is gone (SIGKILL, from its guardian),
and a new daemon on the same state file reports the trip. Also: the
service manager's WATCHDOG=1 stops while a dispatcher stalls without
anyone waiting behind it (no trip), and watchdog-ms 0 leaves a stopped
daemon alone.

Prints, per fault: the time from the fault to every thread given back and
each thread's share of a CPU in the window.

Run: tests/integration/run-exclusive python3 -m unittest -v test_watchdog
(root; VCPUSCHED_BUILD=build dir, a build with VCPUSCHED_FAULTS for the
injected faults)."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import vstest
from vstest import Busy, Daemon, MANAGED_CPU

V1_FREEZER = "/sys/fs/cgroup/freezer"
WINDOW = (2.0, 3.5)  # seconds after the fault
BOUND_S = 1.0  # the default watchdog-ms
# The trip comes a bound after the heartbeat's last pass, plus the 300 ms
# before a CPU is suspect and a round or two (watchdog.h); the rest is
# room for a loaded CI host (stretched further under a sanitizer).
RESTORED_WITHIN_S = vstest.stretch(BOUND_S + 1.5)


def faults_built():
    """True if this build has fault injection."""
    cache = os.path.join(vstest.BUILD, "CMakeCache.txt")
    return os.path.exists(cache) and "VCPUSCHED_FAULTS:BOOL=ON" in vstest.read(cache)


def freezer_group(tid):
    return vstest.cgroup_of(tid, "freezer")


def cpu_times(tids):
    return {t: vstest.run_ns(t) for t in tids}


class WatchdogTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root")
        vstest.pin_self_to_housekeeping()
        self.procs, self.daemons = [], []

    def tearDown(self):
        for d in self.daemons:
            if d.proc is not None and d.proc.poll() is None:
                os.kill(d.proc.pid, signal.SIGCONT)
            d.cleanup()
        for p in self.procs:
            p.stop()

    def stuck(self, fault, *args, pattern="shared"):
        """Start a daemon, attach two hogs and a capped process on CPU 1,
        make it stuck with `fault` ("stop", "spin", "block"), and check
        what the guardian does."""
        env = dict(os.environ)
        if fault != "stop":
            env["VCPUSCHED_FAULT"] = f"{fault}:{MANAGED_CPU}"
        d = Daemon(*vstest.RT_OFF, "--pattern", pattern, *args, policy="credit", env=env).start()
        self.daemons.append(d)
        hogs = [Busy() for _ in range(2)]
        capped = Busy()
        self.procs += hogs + [capped]
        tids = [p.tid for p in hogs + [capped]]
        before = {t: (os.sched_getaffinity(t), freezer_group(t)) for t in tids}
        for i, h in enumerate(hogs):
            d.ctl("attach", f"h{i}", "--pid", str(h.pid))
        d.ctl("attach", "capped", "--pid", str(capped.pid), "cap=10")
        time.sleep(0.5)
        # The test can fail: both hogs run before the fault.
        a = cpu_times(tids)
        time.sleep(1.0)
        b = cpu_times(tids)
        for h in hogs:
            self.assertGreater(b[h.tid] - a[h.tid], 0.1e9, f"{fault}: hog {h.tid} before the "
                                                           f"fault: {a} -> {b}")
        guard = vstest.guardian_of(d)

        t0 = time.monotonic()
        os.kill(d.proc.pid, signal.SIGSTOP if fault == "stop" else signal.SIGUSR2)
        a = cpu_times(tids)
        restored = vstest.wait_until(
            lambda: not any(vstest.is_fifo(t) for t in tids), RESTORED_WITHIN_S, step=0.005)
        self.assertIsNotNone(restored, f"{fault}: threads still SCHED_FIFO {RESTORED_WITHIN_S} s "
                                       f"after the fault:\n{d.read_log()[-3000:]}")
        b = cpu_times(tids)
        # Who waited: the hog that (next to) did not run between the fault
        # and the restore: the one that was LOW, and under a dispatcher
        # spinning on their CPU the other one too.
        ran = {t: (b[t] - a[t]) / 1e9 / restored for t in tids}
        waiting = min((h.tid for h in hogs), key=ran.get)
        other = sum(h.tid for h in hogs) - waiting
        waiters = [t for t in tids if ran[t] < 0.05]  # the capped one too, if thawed then
        time.sleep(max(0.0, t0 + WINDOW[0] - time.monotonic()))
        w0, c0 = time.monotonic(), cpu_times(tids)
        time.sleep(max(0.0, t0 + WINDOW[1] - time.monotonic()))
        w1, c1 = time.monotonic(), cpu_times(tids)
        share = {t: (c1[t] - c0[t]) / 1e9 / (w1 - w0) for t in tids}
        print(f"\n{fault} ({pattern}): restored {restored * 1e3:.0f} ms after the fault; the "
              f"waiting hog had {ran[waiting]:.1%} of a CPU until then; in {WINDOW[0]:g}-"
              f"{WINDOW[1]:g} s: waiting hog {share[waiting]:.1%}, other hog "
              f"{share[other]:.1%}, capped {share[capped.tid]:.1%}", file=sys.stderr)
        self.assertLess(ran[waiting], 0.05, f"{fault}: the fault did not stop the waiting hog")
        # Given back, all three are SCHED_OTHER where they were: as much of
        # a CPU each as the others, whatever else loads the host (a frozen
        # or still-FIFO-starved thread would have next to nothing).
        vstest.within(self, f"watchdog, {fault} ({pattern}): the waiting hog's CPU time over the "
                            f"other's, 2-3.5 s after the fault", share[waiting] / share[other],
                      lo=0.5, why="equal SCHED_OTHER processes once given back")
        vstest.within(self, f"watchdog, {fault} ({pattern}): the capped process's CPU time over "
                            f"the other hog's, 2-3.5 s after the fault",
                      share[capped.tid] / share[other], lo=0.5,
                      why="thawed and given back: equal to the hogs")

        # The daemon was ended by its guardian; the guardian then left.
        self.assertEqual(d.proc.wait(timeout=5), -signal.SIGKILL)
        self.assertIsNotNone(vstest.wait_until(lambda: vstest.exited(guard), 5.0))
        for t in tids:
            self.assertFalse(vstest.is_fifo(t), f"{fault}: {t} still SCHED_FIFO")
            self.assertEqual((os.sched_getaffinity(t), freezer_group(t)), before[t], fault)
            self.assertFalse(os.path.exists(f"{V1_FREEZER}/vcpusched/{t}"), fault)
        log = d.read_log()
        self.assertRegex(log, rf"watchdog: cpu {MANAGED_CPU}: thread ({'|'.join(map(str, waiters))})"
                              rf" runnable without running for \d+ ms, no dispatcher pass for "
                              rf"\d+ ms")
        self.assertIn("ending vcpuschedd", log)

        # The next daemon on the same state file reports the trip.
        d2 = Daemon(*vstest.RT_OFF, policy="rr")
        d2.state = d.state
        d2.args[d2.args.index("--state") + 1] = d.state
        self.daemons.append(d2)
        d2.start()
        wd = d2.json("stats")["watchdog"]
        self.assertEqual(wd["trips"], 1, wd)
        self.assertEqual(wd["last"]["cpu"], MANAGED_CPU, wd)
        self.assertIn(wd["last"]["tid"], waiters, wd)
        self.assertEqual(wd["last"]["restored"], 3, wd)
        self.assertIn("watchdog: 1 trip(s) since boot", d2.read_log())

    def test_stopped_daemon(self):
        self.stuck("stop")

    @unittest.skipUnless(faults_built(), "a build without VCPUSCHED_FAULTS")
    def test_spinning_dispatcher(self):
        self.stuck("spin")

    @unittest.skipUnless(faults_built(), "a build without VCPUSCHED_FAULTS")
    def test_blocked_dispatcher(self):
        self.stuck("block")

    @unittest.skipUnless(faults_built(), "a build without VCPUSCHED_FAULTS")
    def test_dedicated_dispatcher_spinning_beside_the_guardian(self):
        """The dedicated dispatcher busy-polls CPU 0, the only housekeeping
        CPU here, where the guardian runs too: spinning there at its
        priority, it must not keep the guardian (one above it) away."""
        self.stuck("spin", "--dispatcher-cpu", "0", pattern="dedicated")

    @unittest.skipUnless(faults_built(), "a build without VCPUSCHED_FAULTS")
    def test_stalled_dispatcher_stops_the_service_watchdog(self):
        """A dispatcher that stalls with nothing waiting behind it (its one
        thread runs on as MID): no trip, but the daemon stops telling the
        service manager it is well, and says why."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "notify")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(path)
            sock.settimeout(0.1)
            env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="2000000",
                       VCPUSCHED_FAULT=f"stall:{MANAGED_CPU}")
            d = Daemon(*vstest.RT_OFF, policy="rr", env=env).start()
            self.daemons.append(d)
            hog = Busy()
            self.procs.append(hog)
            d.ctl("attach", "h", "--pid", str(hog.pid))

            def pings(seconds):
                n, end = 0, time.monotonic() + seconds
                while time.monotonic() < end:
                    try:
                        n += sock.recv(4096).decode().split("\n").count("WATCHDOG=1")
                    except socket.timeout:
                        pass
                return n

            healthy = pings(1.5)
            os.kill(d.proc.pid, signal.SIGUSR2)
            time.sleep(BOUND_S + 0.5)  # the heartbeat grows old
            pings(0.3)  # what was sent before it did
            stalled = pings(1.5)
            sock.close()
        print(f"\nWATCHDOG=1: {healthy} in 1.5 s healthy, {stalled} in 1.5 s stalled",
              file=sys.stderr)
        self.assertGreater(healthy, 0)
        self.assertEqual(stalled, 0)
        self.assertIsNone(d.proc.poll(), "a stall with nobody waiting is no trip")
        self.assertTrue(vstest.is_fifo(hog.tid))
        self.assertRegex(d.read_log(), rf"watchdog: cpu {MANAGED_CPU}'s dispatcher made no pass "
                                       rf"for \d+ ms: not telling the service manager")

    def test_watchdog_off(self):
        """watchdog-ms 0: a stopped daemon is left alone (to debug it)."""
        d = Daemon(*vstest.RT_OFF, "--watchdog-ms", "0", policy="rr").start()
        self.daemons.append(d)
        hogs = [Busy() for _ in range(2)]
        self.procs += hogs
        for i, h in enumerate(hogs):
            d.ctl("attach", f"h{i}", "--pid", str(h.pid))
        self.assertEqual(d.json("stats")["watchdog"]["bound_ms"], 0)
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(2.0)
            self.assertIsNone(d.proc.poll())
            self.assertTrue(all(vstest.is_fifo(h.tid) for h in hogs))
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)

    def test_version3_state_file_is_extended(self):
        """An upgrade without a reboot: a version 3 state file (the same
        header and slots, no watchdog region) left by the previous package
        is extended in place, not refused."""
        d = Daemon(policy="rr").start()
        self.daemons.append(d)
        d.stop()
        size = os.path.getsize(d.state)
        watch = 16 + 40 + 1024 * 16  # struct statefile_watch (statefile.h)
        with open(d.state, "r+b") as f:
            f.truncate(size - watch)
            f.seek(4)  # hdr.version
            f.write((3).to_bytes(4, "little"))
        d2 = Daemon(policy="rr")
        d2.state = d.state
        d2.args[d2.args.index("--state") + 1] = d.state
        self.daemons.append(d2)
        d2.start()
        self.assertEqual(os.path.getsize(d.state), size)
        self.assertEqual(d2.json("stats")["watchdog"]["trips"], 0)

    def test_bad_bound_refused(self):
        """A bound below 500 ms (a healthy loaded host could trip it) is
        refused with the reason, before anything is touched."""
        for bad in ("100", "-1", "60001", "1s"):
            d = Daemon("--watchdog-ms", bad, policy="rr")
            try:
                p = subprocess.run([vstest.DAEMON, *d.args], capture_output=True, text=True,
                                   timeout=10)
                self.assertNotEqual(p.returncode, 0, bad)
                self.assertIn("watchdog-ms", p.stderr + p.stdout, bad)
                self.assertFalse(os.path.exists(d.state), bad)
            finally:
                d.cleanup()


if __name__ == "__main__":
    unittest.main()
