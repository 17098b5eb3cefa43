# SPDX-License-Identifier: ISC
"""Parking (caps) through a real daemon on real threads at real SCHED_FIFO,
on each parking backend: cgroup v2's cgroup.freeze and the v1 freezer.

On cgroup v2 a thread alone in a threaded group (libvirt's vcpuN) is
frozen there; any other is moved into a threaded child group made for it.
The tests build those layouts in the v2 hierarchy themselves, as libvirt
does (a domain group, threaded `emulator` and `vcpuN` children), and check
that a parked thread is frozen where it should be and put back exactly as
found (groups, types, freeze states) on detach, on a clean exit, after
`kill -9` of the daemon (the guardian) and when its process is killed.

Backends: VCPUSCHED_PARK, a comma-separated list of `v1`, `v2` and `auto`
(the daemon chooses, as on a cgroup-v2-only host); by default every
backend this host has mounted. The other integration tests pass the first
one to their daemons (vstest.Daemon).

Run: tests/integration/run-exclusive python3 -m unittest -v test_park
(root; VCPUSCHED_BUILD=build dir)."""

import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

import vstest
from vstest import Daemon

WINDOW_S = 3.0
SPIN = os.path.join(vstest.BUILD, "bench", "spin_target")
PARK_PREFIX = "vcpusched-park-"


def mounts():
    """(v1 freezer mount, cgroup2 mount) from /proc/self/mounts ("" if none)."""
    v1 = v2 = ""
    for line in vstest.read("/proc/self/mounts").splitlines():
        _, where, fstype, opts = line.split()[:4]
        where = where.replace("\\040", " ")
        if fstype == "cgroup2" and not v2:
            v2 = where
        elif fstype == "cgroup" and "freezer" in opts.split(",") and not v1:
            v1 = where
    return v1, v2


V1_FREEZER, V2 = mounts()


def effective(flag):
    """The backend the daemon picks for --park flag (its rule: cgroup.c)."""
    if flag == "auto":
        return "v1" if V1_FREEZER else ("v2" if V2 else "none")
    return flag


def group_of(tid, hierarchy):
    """A thread's group: hierarchy "" is cgroup v2, else a v1 controller."""
    for line in vstest.read(f"/proc/{tid}/cgroup").splitlines():
        _, ctrls, path = line.split(":", 2)
        if (hierarchy == "" and ctrls == "") or hierarchy in ctrls.split(","):
            return path
    return None


def gdir(mount, path):
    return mount + ("" if path == "/" else path)


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def cg_read(path):
    """A cgroup file's value; lists of ids sorted (the kernel's order varies)."""
    try:
        text = vstest.read(path).strip()
    except OSError as e:
        return f"<{e.strerror}>"
    if os.path.basename(path) in ("cgroup.threads", "cgroup.procs", "tasks"):
        return " ".join(sorted(text.split(), key=int))
    return text


def tree_state(top):
    """What a restore must give back: every group under top with its type,
    freeze state and threads (v2), or its tasks and state (v1)."""
    out = {}
    for dirpath, _, _ in os.walk(top):
        out[os.path.relpath(dirpath, top)] = {
            f: cg_read(os.path.join(dirpath, f))
            for f in ("cgroup.type", "cgroup.freeze", "cgroup.threads", "tasks", "freezer.state")
            if os.path.exists(os.path.join(dirpath, f))}
    return out


def runs(tid, seconds=0.3):
    a = vstest.run_ns(tid)
    time.sleep(seconds)
    return vstest.run_ns(tid) > a


class Target:
    """bench/spin_target on the housekeeping CPU: one busy thread (the
    vCPU), and with `second` a light sleeper beside it in the same process."""

    def __init__(self, second=False):
        specs = ["busy"] + (["sleep:10000:100"] if second else [])
        self.proc = vstest.popen([SPIN, *specs], stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.tids = [int(t) for t in self.proc.stdout.readline().split()]
        self.tid = self.tids[0]

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


class Layout:
    """Where the target's threads live while it is attached:
    - inherited: wherever this test runs (here the v2 root; a systemd
      scope or service on a v2-only host);
    - domain: a fresh domain group of its own (a bare QEMU in a service);
    - own: libvirt's layout, the vCPU thread alone in threaded `vcpu0`;
    - shared: the same with a second thread in `vcpu0` (KVM's
      nx-lpage-recovery task is put there on real hosts);
    - v1group: a v1 freezer group of its own (libvirt's domain group on v1).
    The groups it made are removed by cleanup(), the process moved back."""

    def __init__(self, kind, target):
        self.kind, self.t = kind, target
        self.top = None
        self.made = []
        tag = f"vcpusched-test-{os.getpid()}-{target.pid}"
        if kind == "v1group":
            self.orig = group_of(target.pid, "freezer")
            self.top = self.mkdir(os.path.join(V1_FREEZER, tag))
            write(os.path.join(self.top, "cgroup.procs"), target.pid)
            return
        self.orig = group_of(target.pid, "")
        if kind == "inherited":
            return
        self.top = self.mkdir(os.path.join(V2, tag))
        if kind == "domain":
            write(os.path.join(self.top, "cgroup.procs"), target.pid)
            return
        lv = self.mkdir(os.path.join(self.top, "libvirt"))
        write(os.path.join(lv, "cgroup.procs"), target.pid)
        emulator, vcpu0 = self.mkdir(os.path.join(lv, "emulator")), self.mkdir(
            os.path.join(lv, "vcpu0"))
        for g in (emulator, vcpu0):
            write(os.path.join(g, "cgroup.type"), "threaded")
        write(os.path.join(emulator, "cgroup.threads"), target.pid)
        for tid in target.tids:
            if tid != target.pid:
                write(os.path.join(emulator, "cgroup.threads"), tid)
        write(os.path.join(vcpu0, "cgroup.threads"), target.tid)
        if kind == "shared":
            write(os.path.join(vcpu0, "cgroup.threads"), target.tids[1])

    def mkdir(self, path):
        os.mkdir(path)
        self.made.append(path)
        return path

    def mount(self):
        return V1_FREEZER if self.kind == "v1group" else V2

    def state(self):
        """Everything about the target's groups a restore must give back."""
        cgroups = vstest.read(f"/proc/{self.t.pid}/task/{self.t.tid}/cgroup")
        if self.top is not None:
            return cgroups, tree_state(self.top)
        here = gdir(V2, group_of(self.t.tid, ""))
        try:
            parks = sorted(d for d in os.listdir(here) if d.startswith(PARK_PREFIX))
        except FileNotFoundError:  # our park group, removed as we read it: read again
            return self.state()
        return cgroups, cg_read(os.path.join(here, "cgroup.type")), parks

    def cleanup(self):
        if self.top is not None and self.t.alive():
            back = gdir(self.mount(), self.orig)
            try:
                write(os.path.join(back, "cgroup.procs"), self.t.pid)
            except OSError:
                pass
        for path in reversed(self.made):
            for _ in range(50):  # a killed process leaves its groups a moment later
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def park_backends():
    return vstest.park_backends(V1_FREEZER, V2)


class ParkTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root")
        if not os.path.exists(SPIN):
            self.skipTest(f"no {SPIN}")
        vstest.pin_self_to_housekeeping()
        self.daemons, self.targets, self.layouts = [], [], []

    def tearDown(self):
        for d in self.daemons:
            d.cleanup()
        for t in self.targets:
            t.stop()
        for lay in self.layouts:
            lay.cleanup()
        self.daemons, self.targets, self.layouts = [], [], []

    def daemon(self, flag, policy="credit", *args):
        d = Daemon(*vstest.RT_OFF, "--park", flag, *args, policy=policy).start()
        self.daemons.append(d)
        stats = d.json("stats")
        self.assertEqual(stats["parking"], effective(flag), stats)
        self.assertEqual(stats["parking_mount"], V1_FREEZER if effective(flag) == "v1" else V2)
        self.assertIn(f"parking: cgroup {effective(flag)}", d.read_log())
        return d

    def target(self, second=False):
        t = Target(second)
        self.targets.append(t)
        return t

    def layout(self, kind, t):
        lay = Layout(kind, t)
        self.layouts.append(lay)
        return lay

    def cases(self):
        """(--park flag, layout) pairs for the backends under test."""
        out = []
        for flag in park_backends():
            kinds = (("inherited", "domain", "own", "shared") if effective(flag) == "v2"
                     else ("inherited", "v1group"))
            out += [(flag, k) for k in kinds]
        return out

    # --- where a parked thread is --------------------------------------------

    def parked_where_expected(self, flag, lay):
        """True once the thread is frozen where its layout says."""
        t = lay.t
        if effective(flag) == "v1":
            g = os.path.join(V1_FREEZER, "vcpusched", str(t.tid))
            return (group_of(t.tid, "freezer") == f"/vcpusched/{t.tid}" and
                    cg_read(os.path.join(g, "freezer.state")) in ("FROZEN", "FREEZING"))
        if lay.kind == "own":  # frozen in place: libvirt's vcpu0
            vcpu0 = os.path.join(lay.top, "libvirt", "vcpu0")
            return (gdir(V2, group_of(t.tid, "")) == vcpu0 and
                    cg_read(os.path.join(vcpu0, "cgroup.freeze")) == "1")
        here = group_of(t.tid, "")
        if not here.endswith(f"/{PARK_PREFIX}{t.tid}"):
            return False
        return (cg_read(os.path.join(gdir(V2, here), "cgroup.type")) == "threaded" and
                cg_read(os.path.join(gdir(V2, here), "cgroup.freeze")) == "1")

    def attach_parked(self, d, flag, kind, name="capped"):
        t = self.target(second=kind == "shared")
        lay = self.layout(kind, t)
        before = lay.state()
        d.ctl("attach", name, "--tid", str(t.tid), "cap=1")
        self.assertIsNotNone(vstest.wait_until(lambda: self.parked_where_expected(flag, lay), 3.0),
                             f"{flag}/{kind}: not parked as expected: {lay.state()} "
                             f"{d.json('stats')['pools'][0]}")
        self.assertEqual(d.json("stats")["pools"][0]["actuator_errors"], 0,
                         d.json("stats")["pools"][0])
        return t, lay, before

    def assert_put_back(self, flag, lay, before, within):
        """Thawed, SCHED_OTHER, and every group exactly as found."""
        t = lay.t
        took = vstest.wait_until(lambda: lay.state() == before, within)
        self.assertIsNotNone(took, f"{flag}/{lay.kind}: groups not as found after {within} s:\n"
                                   f"before {before}\nafter  {lay.state()}")
        self.assertEqual(vstest.policy(t.tid), os.SCHED_OTHER)
        self.assertTrue(runs(t.tid), f"{flag}/{lay.kind}: the thread does not run: frozen?")
        if effective(flag) == "v1":
            self.assertFalse(os.path.exists(os.path.join(V1_FREEZER, "vcpusched", str(t.tid))))
        return took

    def each_case(self, body):
        for flag, kind in self.cases():
            with self.subTest(park=flag, layout=kind):
                try:
                    body(flag, kind)
                finally:
                    self.tearDown()

    # --- caps -----------------------------------------------------------------

    def cap25_next_to_hog(self, policy):
        got = []

        def one(flag, kind):
            d = self.daemon(flag, policy)
            capped, hog = self.target(), self.target()
            self.layout(kind, capped)
            d.ctl("attach", "capped", "--tid", str(capped.tid), "cap=25")
            d.ctl("attach", "hog", "--tid", str(hog.tid))
            time.sleep(0.5)

            def body():
                m = vstest.measure([capped.tid, hog.tid], 3, WINDOW_S / 3)
                pol = d.json("list")["domains"][0]["vcpus"][0]["policy"]
                got.append(f"{flag}({effective(flag)})/{kind} {m.med('of_wall', capped.tid):.3f} "
                           f"(hog {m.med('of_wall', hog.tid):.3f}, parks {pol['parks']})")
                vstest.check_cap(self, f"{policy} cap 25 next to a hog, park {flag}, {kind}", m,
                                 capped.tid, 25, hog.tid)
            vstest.again(self, body)
            pol = d.json("list")["domains"][0]["vcpus"][0]["policy"]
            self.assertGreater(pol["parks"], 0)
            self.assertEqual(d.json("stats")["pools"][0]["actuator_errors"], 0)

        for flag in park_backends():
            kinds = ("inherited", "own") if effective(flag) == "v2" else ("inherited",)
            for kind in kinds:
                with self.subTest(park=flag, layout=kind):
                    try:
                        one(flag, kind)
                    finally:
                        self.tearDown()
        print(f"\n{policy} cap=25 next to a hog, share of wall time over {WINDOW_S:.0f} s: "
              + "; ".join(got), file=sys.stderr)

    @vstest.timing
    def test_credit_cap25_next_to_hog(self):
        self.cap25_next_to_hog("credit")

    @vstest.timing
    def test_credit2_cap25_next_to_hog(self):
        self.cap25_next_to_hog("credit2")

    # --- put back exactly as found --------------------------------------------

    def test_detach_puts_back(self):
        def body(flag, kind):
            d = self.daemon(flag)
            t, lay, before = self.attach_parked(d, flag, kind)
            d.ctl("detach", "capped")
            self.assert_put_back(flag, lay, before, 0.5)
            d.stop()
            self.assertEqual(lay.state(), before)
        self.each_case(body)

    def test_clean_exit_puts_back(self):
        def body(flag, kind):
            d = self.daemon(flag)
            t, lay, before = self.attach_parked(d, flag, kind)
            d.stop()
            self.assertIsNotNone(d.proc.returncode)
            self.assert_put_back(flag, lay, before, 0.5)
        self.each_case(body)

    def test_kill9_guardian_puts_back(self):
        def body(flag, kind):
            d = self.daemon(flag)
            t, lay, before = self.attach_parked(d, flag, kind)
            d.kill9()
            took = self.assert_put_back(flag, lay, before, 1.0)
            print(f"\nkill -9, park {flag}, {kind}: put back in {took * 1e3:.0f} ms",
                  file=sys.stderr)
        self.each_case(body)

    def test_killed_process_while_parked_is_reaped(self):
        """A parked thread's process killed (its VM destroyed): the domain
        leaves `list` within a second and nothing of ours is left."""
        def body(flag, kind):
            d = self.daemon(flag)
            t, lay, _ = self.attach_parked(d, flag, kind)
            park_dir = gdir(V2, group_of(t.tid, "")) if kind != "own" else None
            if effective(flag) == "v1":
                park_dir = os.path.join(V1_FREEZER, "vcpusched", str(t.tid))
            os.kill(t.pid, signal.SIGKILL)
            self.assertIsNotNone(vstest.wait_until(lambda: not d.json("list")["domains"], 1.0),
                                 f"still listed 1 s after kill -9: {d.json('list')}")
            if park_dir is not None:
                self.assertFalse(os.path.exists(park_dir), park_dir)
            else:  # libvirt's vcpu0 thawed, as found
                self.assertEqual(cg_read(os.path.join(lay.top, "libvirt", "vcpu0",
                                                      "cgroup.freeze")), "0")
        self.each_case(body)

    # --- the v1 hold group -----------------------------------------------------

    def test_v1_hold_group_lives_with_the_daemon(self):
        """--park v1: an empty frozen group of the daemon's own while it runs
        (a lone freezing group flips a kernel static key, with IPIs to every
        CPU, at each park and unpark); a dead daemon's is removed at start;
        ours goes on a clean stop and, after kill -9, with the guardian."""
        if not V1_FREEZER:
            self.skipTest("no cgroup v1 freezer mounted")
        top = os.path.join(V1_FREEZER, "vcpusched")
        gone = subprocess.Popen(["true"])
        gone.wait()
        stale = os.path.join(top, f"hold-{gone.pid}")
        os.makedirs(stale)
        write(os.path.join(stale, "freezer.state"), "FROZEN")
        try:
            for end in ("stop", "kill -9"):
                with self.subTest(end=end):
                    d = self.daemon("v1")
                    hold = os.path.join(top, f"hold-{d.proc.pid}")
                    self.assertEqual(cg_read(os.path.join(hold, "freezer.state")), "FROZEN")
                    self.assertEqual(cg_read(os.path.join(hold, "tasks")), "")
                    self.assertFalse(os.path.exists(stale), "a dead daemon's hold group is left")
                    d.stop() if end == "stop" else d.kill9()
                    if vstest.wait_until(lambda: not os.path.exists(top), 1.0) is None:
                        self.fail(f"after {end}: {top} left: {os.listdir(top)}")
        finally:
            if os.path.exists(stale):
                os.rmdir(stale)

    # --- bad cases change nothing ---------------------------------------------

    def start_without(self, umount, flag):
        """vcpuschedd --park flag in a mount namespace where `umount` is
        not mounted: (exit code, output, files it created)."""
        d = Daemon("--park", flag)
        try:
            p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                  'umount -l "$0" && exec "$@"', umount, vstest.DAEMON, *d.args],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                out, _ = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:  # it started: stop it, the test fails below
                p.send_signal(signal.SIGTERM)
                out, _ = p.communicate(timeout=10)
            return p.returncode, out, os.listdir(d.dir)
        finally:
            d.cleanup()

    def test_forced_backend_not_mounted_refused(self):
        if shutil.which("unshare") is None:
            self.skipTest("no unshare")
        cases = []
        if V2:
            cases.append((V2, "v2", "--park v2: no cgroup2 hierarchy is mounted"))
        if V1_FREEZER:
            cases.append((V1_FREEZER, "v1", "--park v1: no cgroup v1 freezer hierarchy"))
        for mount, flag, words in cases:
            with self.subTest(park=flag):
                code, out, made = self.start_without(mount, flag)
                self.assertNotEqual(code, 0, out)
                self.assertIn(words, out)
                self.assertEqual(made, [], "a refused start created files")

    def test_no_freezer_at_all(self):
        """Neither a v1 freezer nor cgroup2 (a mount namespace without them):
        --park auto starts, says caps cannot be enforced, and a cap's park
        fails with that reason, changing nothing; the thread stays managed."""
        if shutil.which("unshare") is None:
            self.skipTest("no unshare")
        gone = [m for m in (V1_FREEZER, V2) if m]
        d = Daemon("--park", "auto", policy="credit")
        self.daemons.append(d)
        real = vstest.DAEMON
        try:
            vstest.DAEMON = "unshare"
            d.args = ["-m", "--propagation", "private", "sh", "-c",
                      'for m in ' + " ".join(f"'{m}'" for m in gone) +
                      '; do umount -l "$m" || exit 1; done; exec "$@"', "sh", real, *d.args]
            d.start()
        finally:
            vstest.DAEMON = real
        self.assertIn("parking: none", d.read_log())
        self.assertIn("caps cannot be enforced", d.read_log())
        stats = d.json("stats")
        self.assertEqual(stats["parking"], "none")
        self.assertNotIn("parking_mount", stats)
        t = self.target()
        lay = self.layout("inherited", t)
        before = lay.state()
        d.ctl("attach", "capped", "--tid", str(t.tid), "cap=1")
        self.assertIsNotNone(vstest.wait_until(
            lambda: "no cgroup freezer" in d.json("stats")["pools"][0].get("last_error", ""),
            2.0), d.json("stats"))
        self.assertEqual(lay.state(), before)
        self.assertTrue(vstest.is_fifo(t.tid))
        d.ctl("detach", "capped")
        self.assertEqual(vstest.policy(t.tid), os.SCHED_OTHER)

    def test_bad_park_value_refused(self):
        r = subprocess.run([vstest.DAEMON, "--park", "v3"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("park: 'v3' is not one of auto|v1|v2", r.stderr)
        self.assertIn("[--park auto|v1|v2]", r.stderr)

    @unittest.skipUnless(V2, "no cgroup2 hierarchy")
    def test_v2_group_that_cannot_take_a_threaded_child(self):
        """A domain group with a populated domain child: cgroup v2 allows no
        threaded group under it, so the thread cannot be parked. The error
        says why, and nothing is changed; the thread stays scheduled."""
        t, other = self.target(), self.target()
        lay = self.layout("domain", t)
        child = lay.mkdir(os.path.join(lay.top, "other"))
        write(os.path.join(child, "cgroup.procs"), other.pid)
        before = lay.state()
        d = self.daemon("v2")
        d.ctl("attach", "capped", "--tid", str(t.tid), "cap=1")
        self.assertIsNotNone(vstest.wait_until(
            lambda: "cannot park" in d.json("stats")["pools"][0].get("last_error", ""), 2.0))
        err = d.json("stats")["pools"][0]["last_error"]
        self.assertIn(f"cannot park thread {t.tid}", err)
        self.assertIn("populated domain children", err)
        self.assertEqual(lay.state(), before)
        self.assertTrue(vstest.is_fifo(t.tid), "the thread is still scheduled")
        d.ctl("detach", "capped")
        self.assertEqual(lay.state(), before)
        self.assertEqual(vstest.policy(t.tid), os.SCHED_OTHER)
        # Cleanup: the other process must leave before its group goes.
        other.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
