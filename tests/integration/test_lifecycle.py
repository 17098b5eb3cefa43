# SPDX-License-Identifier: ISC
"""What a restarted daemon takes up again (docs/lifecycle.md), on real
threads and a real QEMU through real QMP: a QMP-attached bare QEMU and a
pid-attached process, each with non-default parameters, are managed again
with those parameters after SIGTERM and a new start, and after kill -9 and
a new start (the guardian gives the threads back in between), the QEMU's
other threads kept off the managed CPU again by each new daemon (and
recorded in its state file), each getting exactly its own affinity back at
the end; a pool made with `pool create` is made again; a pid that
another process took meanwhile, and a QMP socket another QEMU made at the
same path, are not adopted; a `pool set` of a configured pool lasts until
the restart; a malformed or unsafe live record changes nothing and the
daemon starts."""

import json
import os
import signal
import subprocess
import time
import unittest

import vstest
from vstest import Busy, Daemon, MANAGED_CPU

ALL_CPUS = frozenset(range(os.cpu_count()))  # a QEMU with no pinning


class LifecycleTest(unittest.TestCase):
    def setUp(self):
        vstest.pin_self_to_housekeeping()
        self.procs, self.daemons = [], []

    def tearDown(self):
        for d in reversed(self.daemons):
            d.cleanup()
        for p in self.procs:
            p.stop()
        for p in self.procs:  # nothing may be left at a real-time policy
            self.assertFalse(os.path.exists(f"/proc/{p.pid}") and vstest.is_fifo(p.pid))

    def daemon(self, state=None, policy="credit"):
        """A daemon, on another daemon's state file (and so its live record) if given."""
        d = Daemon(policy=policy)
        if state is not None:
            d.state = d.args[d.args.index("--state") + 1] = state
        self.daemons.append(d)
        return d.start()

    def busy(self):
        p = Busy()
        self.procs.append(p)
        return p

    def qemu(self, d, name, smp=2, cpus=frozenset({vstest.HOUSEKEEPING_CPU})):
        """A bare QEMU (no guest) with `smp` vCPU threads, started on `cpus`,
        its QMP socket in d's directory. Returns (pid, socket, vCPU thread ids)."""
        pidfile, qmp = os.path.join(d.dir, f"{name}.pid"), os.path.join(d.dir, f"{name}.qmp")
        subprocess.run(["qemu-system-x86_64", "-accel", "tcg", "-machine", "pc", "-display",
                        "none", "-nodefaults", "-m", "64", "-smp", str(smp),
                        "-name", f"{name},debug-threads=on",
                        "-qmp", f"unix:{qmp},server=on,wait=off", "-daemonize",
                        "-pidfile", pidfile], check=True, capture_output=True,
                       preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        pid = int(vstest.read(pidfile))
        self.addCleanup(lambda: os.path.exists(f"/proc/{pid}") and os.kill(pid, signal.SIGKILL))
        vcpus = sorted(t for t in vstest.threads_of(pid)
                       if vstest.read(f"/proc/{pid}/task/{t}/comm").startswith("CPU "))
        self.assertEqual(len(vcpus), smp)
        return pid, qmp, vcpus

    def domains(self, d):
        return {x["name"]: x for x in d.json("list")["domains"]}

    def assert_managed(self, d, name, tids, params):
        """Domain `name` is listed with these threads and parameters, each
        thread at SCHED_FIFO on the managed CPU."""
        doms = self.domains(d)
        self.assertIn(name, doms, f"{name} not attached again: {d.read_log()[-3000:]}")
        dom = doms[name]
        self.assertEqual(sorted(v["tid"] for v in dom["vcpus"]), sorted(tids))
        for k, v in params.items():
            self.assertEqual(dom["params"].get(k), v, f"{name}: {k} in {dom['params']}")
        for t in tids:
            self.assertTrue(vstest.is_fifo(t), f"{name}: thread {t} not SCHED_FIFO")
            self.assertEqual(os.sched_getaffinity(t), {MANAGED_CPU})

    def given_back(self, tids, cpus=frozenset({vstest.HOUSEKEEPING_CPU})):
        return all(vstest.policy(t) == os.SCHED_OTHER and os.sched_getaffinity(t) == cpus
                   for t in tids)

    def two_domains(self, d):
        """A QMP-attached QEMU allowed every CPU (its other threads are
        kept off the managed one) and a pid-attached process, non-default
        parameters. Returns (the QEMU's vCPU tids, its other tids, the hog)."""
        qpid, qmp, vcpus = self.qemu(d, "q", cpus=ALL_CPUS)
        others = [t for t in vstest.threads_of(qpid) if t not in vcpus]
        hog = self.busy()
        d.ctl("attach", "vm", "--qmp", qmp, "weight=384", "class=background")
        d.ctl("attach", "hog", "--pid", str(hog.pid), "weight=128", "cap=40")
        d.ctl("pool", "set", "main", "tslice_ms=10")  # the configuration's pool: until restart
        self.assert_managed(d, "vm", vcpus, {"weight": "384", "class": "background"})
        self.assert_managed(d, "hog", [hog.pid], {"weight": "128", "cap": "40"})
        self.assert_placed(d, others)
        return vcpus, others, hog

    def assert_placed(self, d, others):
        """The QEMU's other threads off the managed CPU (recorded in the
        daemon's state file: what the guardian gives back after kill -9)."""
        def placed():
            return all(os.sched_getaffinity(t) == ALL_CPUS - {MANAGED_CPU} for t in others)
        # Placed at attach, and checked again once a second.
        self.assertIsNotNone(vstest.wait_until(placed, vstest.stretch(2.0)),
                             {t: os.sched_getaffinity(t) for t in others})
        self.assertEqual(self.domains(d)["vm"]["others"], {"kept_off": len(others), "pinned": 0})

    def check_taken_up(self, d2, vcpus, others, hog):
        self.assert_managed(d2, "vm", vcpus, {"weight": "384", "class": "background"})
        self.assert_managed(d2, "hog", [hog.pid], {"weight": "128", "cap": "40"})
        self.assert_placed(d2, others)
        pool = d2.json("pool", "list")["pools"][0]
        self.assertEqual(pool["params"]["tslice_ms"], "30", "a live pool set outlived the restart")
        log = d2.read_log()
        self.assertIn("live record: 2 domain(s) and 0 pool(s) taken up, 0 entries not", log)
        # The new daemon wrote what it runs: a third one would take up the same.
        self.assertTrue(os.path.exists(d2.state + ".live"))

    def test_sigterm_then_start_takes_up_qmp_and_pid_domains(self):
        d1 = self.daemon()
        vcpus, others, hog = self.two_domains(d1)
        d1.stop()
        self.assertTrue(self.given_back([hog.pid]), "SIGTERM left threads managed")
        self.assertTrue(self.given_back(vcpus + others, ALL_CPUS), "SIGTERM left threads managed")
        t0 = time.monotonic()
        d2 = self.daemon(d1.state)
        print(f"\n# SIGTERM, then a new daemon: answering with both domains after "
              f"{time.monotonic() - t0:.3f} s")
        self.check_taken_up(d2, vcpus, others, hog)
        d2.stop()
        self.assertTrue(self.given_back([hog.pid]))
        self.assertTrue(self.given_back(vcpus + others, ALL_CPUS))

    def test_kill9_then_start_takes_up_qmp_and_pid_domains(self):
        d1 = self.daemon()
        vcpus, others, hog = self.two_domains(d1)
        d1.kill9()
        took = vstest.wait_until(lambda: self.given_back([hog.pid]) and
                                 self.given_back(vcpus + others, ALL_CPUS), 1.0)
        self.assertIsNotNone(took, "the guardian did not give the threads back within 1 s")
        d2 = self.daemon(d1.state)
        self.check_taken_up(d2, vcpus, others, hog)
        # And once more, straight after kill -9 (a service manager's Restart=):
        # whatever the guardian has not given back yet, the new daemon does
        # before it takes the domains up, so what it records is the original.
        d2.kill9()
        d3 = self.daemon(d1.state)
        self.check_taken_up(d3, vcpus, others, hog)
        d3.stop()
        self.assertTrue(self.given_back([hog.pid]))
        self.assertTrue(self.given_back(vcpus + others, ALL_CPUS), "not exactly their own back")

    def test_pool_made_at_run_time(self):
        """A pool made with `pool create` (the default pool destroyed to free
        its CPU) is in the record with its domain; a new daemon whose
        configured pool now has that CPU refuses to make it again, says so,
        and drops the domain that was in it (its pool is gone): nothing is
        half taken up."""
        d1 = self.daemon()
        hog = self.busy()
        d1.ctl("pool", "destroy", "main")
        d1.ctl("pool", "create", "p2", f"cpus={MANAGED_CPU}", "policy=credit2",
               "ratelimit_us=500")
        d1.ctl("attach", "hog", "--pool", "p2", "--pid", str(hog.pid), "weight=512")
        self.assertTrue(vstest.is_fifo(hog.pid))
        d1.stop()
        rec = json.loads(vstest.read(d1.state + ".live"))
        self.assertEqual(rec["pools"], [{"name": "p2", "cpus": str(MANAGED_CPU),
                                         "policy": "credit2",
                                         "params": rec["pools"][0]["params"]}])
        self.assertEqual(rec["pools"][0]["params"].get("ratelimit_us"), "500", rec)
        self.assertEqual([(x["name"], x["pool"], x["params"]) for x in rec["domains"]],
                         [("hog", "p2", {"weight": "512"})])
        d2 = self.daemon(d1.state)
        log = d2.read_log()
        self.assertIn(f"live record: pool p2 (cpus {MANAGED_CPU}, policy credit2): not made "
                      f"again:", log)
        self.assertIn("live record: domain hog (pid, pid", log)
        self.assertIn("not attached again: pool p2 is gone", log)
        self.assertEqual(self.domains(d2), {})
        self.assertEqual(vstest.policy(hog.pid), os.SCHED_OTHER)
        self.assertEqual([p["name"] for p in d2.json("pool", "list")["pools"]], ["main"])

    def spawn_with_pid(self, pid, tries=200):
        """A new process with pid `pid` (free again): the kernel hands out
        ns_last_pid + 1 next; another process may take it first, so retry."""
        for _ in range(tries):
            vstest.write("/proc/sys/kernel/ns_last_pid", str(pid - 1))
            p = Busy()
            if p.pid == pid:
                self.procs.append(p)
                return p
            p.stop()
        self.skipTest(f"pid {pid} could not be had again in {tries} tries")

    def test_reused_pid_is_not_adopted(self):
        d1 = self.daemon()
        old = self.busy()
        d1.ctl("attach", "old", "--pid", str(old.pid), "weight=512")
        d1.stop()
        pid = old.pid
        old.stop()
        self.assertIsNotNone(vstest.wait_until(lambda: vstest.exited(pid), 2.0))
        new = self.spawn_with_pid(pid)  # same pid, same executable (python3)
        d2 = self.daemon(d1.state)
        self.assertNotIn("old", self.domains(d2))
        self.assertEqual(vstest.policy(new.pid), os.SCHED_OTHER)
        self.assertIn(f"live record: domain old (pid, pid {pid}): not attached again: "
                      f"pid {pid}: its start time differs (not the process attached)",
                      d2.read_log())

    def test_qemu_replaced_on_the_same_socket_is_not_adopted(self):
        d1 = self.daemon()
        qpid, qmp, _ = self.qemu(d1, "q")
        d1.ctl("attach", "vm", "--qmp", qmp)
        d1.stop()
        os.kill(qpid, signal.SIGKILL)
        self.assertIsNotNone(vstest.wait_until(lambda: vstest.exited(qpid), 5.0))
        qpid2, qmp2, vcpus2 = self.qemu(d1, "q")  # the same path
        self.assertEqual(qmp2, qmp)
        d2 = self.daemon(d1.state)
        self.assertNotIn("vm", self.domains(d2))
        for t in vcpus2:
            self.assertEqual(vstest.policy(t), os.SCHED_OTHER)
        self.assertIn("live record: domain vm (qmp", d2.read_log())
        self.assertIn("not attached again", d2.read_log())

    def test_bad_record_changes_nothing(self):
        """A record that does not parse, of another boot, or not safe to read:
        nothing is taken up, the daemon starts and manages what it is given;
        a refused one is kept aside as STATE.live.bad."""
        d1 = self.daemon()
        hog = self.busy()
        d1.ctl("attach", "hog", "--pid", str(hog.pid))
        d1.stop()
        live = d1.state + ".live"
        good = vstest.read(live)
        cases = [
            ("garbage", "{\"vcpusched_live\": 1, \"domains\": [", "not JSON", True),
            ("version", good.replace('"vcpusched_live":1', '"vcpusched_live":7'),
             "version 7 (this daemon reads version 1)", True),
            ("boot", good.replace(vstest.read("/proc/sys/kernel/random/boot_id").strip(),
                                  "00000000-0000-0000-0000-000000000000"),
             "written in another boot", False),
        ]
        for what, text, why, aside in cases:
            with self.subTest(what):
                vstest.write(live, text)
                os.chmod(live, 0o600)
                d = self.daemon(d1.state)
                self.assertEqual(self.domains(d), {}, what)
                self.assertEqual(vstest.policy(hog.pid), os.SCHED_OTHER)
                self.assertIn(why, d.read_log())
                if aside:
                    self.assertEqual(vstest.read(live + ".bad"), text)
                d.ctl("attach", "hog", "--pid", str(hog.pid))  # and it works
                self.assertTrue(vstest.is_fifo(hog.pid))
                d.ctl("detach", "hog")
                d.stop()
        # Not ours to read: a symlink, another mode. Refused, left alone.
        target = os.path.join(d1.dir, "elsewhere")
        vstest.write(target, good)
        for what, make, why in (
                ("symlink", lambda: os.symlink(target, live), "a symlink: refused"),
                ("mode", lambda: (vstest.write(live, good), os.chmod(live, 0o644)),
                 "not mode 0600: refused")):
            with self.subTest(what):
                if os.path.lexists(live):
                    os.unlink(live)
                make()
                d = self.daemon(d1.state)
                self.assertEqual(self.domains(d), {}, what)
                self.assertIn(why, d.read_log())
                self.assertEqual(vstest.read(target), good)
                d.stop()


if __name__ == "__main__":
    unittest.main()
