# SPDX-License-Identifier: ISC
"""The packaged service under systemd, in the rig VM: `dpkg -i` of the
Debian package built from this checkout installs every file as packaged,
the unit disabled and stopped, the hook copied into qemu.d and libvirtd
reloaded by its postinst; the operator's `systemctl enable` and `start` run the
packaged unit; with the shipped configuration alone (no managed CPUs
chosen) the service refuses to start, says why in the journal and is not
restarted; `systemctl reload` switches a pool's policy with its domain attached;
`systemctl restart` and `kill -9` of the main process (systemd restarts
it) each give every managed thread back before the next daemon serves,
and the next daemon takes every domain up again from the live record;
`kill -STOP` of the main process: its guardian's watchdog gives every
thread back and ends it, systemd restarts it, the new daemon reports the
trip and takes the domains up again. In test order: install first (tests/rig/tests.list)."""

import os
import signal
import tempfile
import time
import unittest
import urllib.request

import rigtest
import vstest
from rigtest import ctl, ctl_json, main_pid, systemctl, unit_prop

CONF = "/etc/vcpusched/vcpuschedd.conf"
SHIPPED_CONF = os.path.join(rigtest.SRC, "packaging", "vcpuschedd.conf")


def libvirtd_reloads():
    """How many reloads of libvirtd.service systemd has logged this boot."""
    return rigtest.run("journalctl", "-b", "-q", "-o", "cat", "-u", "libvirtd.service",
                       check=False).stdout.count("Reloaded libvirtd.service")


class ServiceTest(unittest.TestCase):
    def setUp(self):
        vstest.pin_self_to_housekeeping()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.stop()

    def hogs(self, n):
        ps = [rigtest.Spinner() for _ in range(n)]
        self.procs.extend(ps)
        for i, p in enumerate(ps):
            ctl("attach", f"svc{i}", "--pid", str(p.pid))
        for p in ps:
            self.assertTrue(vstest.is_fifo(p.tid))
            self.assertLessEqual(os.sched_getaffinity(p.tid), {1, 2, 3})
        return ps

    def install(self, step):
        script = os.path.join(rigtest.RIG, "guest", "install-vcpusched")
        r = rigtest.run(script, step, check=False, timeout=600)
        print(r.stdout, r.stderr, flush=True)
        self.assertEqual(r.returncode, 0, f"{script} {step} failed")

    def test_install(self):
        deb = os.environ["VS_RIG_DEB"]
        version = rigtest.run("dpkg-deb", "-f", deb, "Version").stdout.strip()
        # libvirtd (enabled on this root) runs: the postinst must make it
        # look for hooks again (deb-systemd-invoke try-reload-or-restart).
        self.assertEqual(systemctl("is-active", "libvirtd.service", check=False).stdout.strip(),
                         "active")
        reloads_before = libvirtd_reloads()
        t0 = time.monotonic()
        self.install("package")
        print(f"# dpkg -i {os.path.basename(deb)}: {time.monotonic() - t0:.1f} s", flush=True)
        self.assertEqual(rigtest.run("dpkg-query", "-W", "-f", "${Status} ${Version}",
                                     rigtest.PACKAGE).stdout, f"install ok installed {version}")
        # Every file as the package shipped it (no output: no mismatch).
        self.assertEqual(rigtest.run("dpkg", "--verify", rigtest.PACKAGE).stdout, "")
        for path in (rigtest.UNIT_FILE, rigtest.DAEMON, rigtest.CTL,
                     "/usr/lib/vcpusched/vcpusched-hook"):
            self.assertEqual(rigtest.run("dpkg", "-S", path).stdout.strip(),
                             f"{rigtest.PACKAGE}: {path}")
        # The package's promise: installed disabled and not started, the
        # hook copied into qemu.d by its postinst (a file, not a link: under
        # AppArmor libvirtd may execute only what lies under
        # /etc/libvirt/hooks, and an exec is checked against a link's target).
        self.assertEqual(unit_prop("FragmentPath"), rigtest.UNIT_FILE)
        self.assertEqual(unit_prop("UnitFileState"), "disabled")
        self.assertEqual(unit_prop("ActiveState"), "inactive")
        self.assertFalse(os.path.islink(rigtest.HOOK_FILE), f"{rigtest.HOOK_FILE} is a link")
        self.assertEqual(os.stat(rigtest.HOOK_FILE).st_mode & 0o7777, 0o755)
        self.assertEqual(vstest.read(rigtest.HOOK_FILE, "rb"), vstest.read(rigtest.HOOK, "rb"))
        self.assertIsNotNone(vstest.wait_until(lambda: libvirtd_reloads() > reloads_before, 10,
                                               step=0.5),
                             "the postinst did not reload libvirtd")

        self.install("service")
        if unit_prop("ActiveState") != "active":
            print(systemctl("status", "--no-pager", "-l", rigtest.UNIT, check=False).stdout)
        self.assertEqual(unit_prop("ActiveState"), "active")
        self.assertEqual(systemctl("is-enabled", rigtest.UNIT).stdout.strip(), "enabled")
        # The packaged unit as shipped, no drop-in of the rig's.
        self.assertEqual(unit_prop("FragmentPath"), rigtest.UNIT_FILE)
        self.assertEqual(unit_prop("DropInPaths"), "")
        self.assertEqual(os.readlink(f"/proc/{main_pid()}/exe"), rigtest.DAEMON)
        self.assertIsNotNone(vstest.wait_until(rigtest.service_answers, 20, step=0.2),
                             "the service does not answer on its socket")
        pools = ctl_json("pool", "list")["pools"]
        self.assertEqual([(p["name"], p["policy"], p["cpus"]) for p in pools],
                         [("main", "credit", [1, 2, 3])])
        # systemd puts it in its own cgroup of the v2-only hierarchy.
        self.assertEqual(vstest.read(f"/proc/{main_pid()}/cgroup").strip(),
                         f"0::/system.slice/{rigtest.UNIT}")

    @staticmethod
    def journal_since(t):
        """The unit's journal from wall-clock time t (time.time()) on."""
        return rigtest.run("journalctl", "-q", "-o", "cat", "-u", rigtest.UNIT,
                           f"--since=@{t - 1:.0f}", check=False).stdout

    def test_refuses_without_managed_cpus(self):
        """The package's own configuration chooses no CPUs: `systemctl
        start` fails, the journal says why, and systemd does not restart it
        (exit status 2, RestartPreventExitStatus=2)."""
        rig_conf = vstest.read(CONF)
        systemctl("stop", rigtest.UNIT)
        restarts = int(unit_prop("NRestarts"))
        since = time.time()
        try:
            with open(CONF, "w") as f:
                f.write(vstest.read(SHIPPED_CONF))
            r = systemctl("start", rigtest.UNIT, check=False)
            self.assertNotEqual(r.returncode, 0, "the service started without managed CPUs")
            self.assertEqual(unit_prop("ActiveState"), "failed")
            self.assertEqual(unit_prop("ExecMainStatus"), "2")
            journal = self.journal_since(since)
            print(journal, flush=True)
            self.assertIn(f"{CONF}: no managed CPUs chosen", journal)
            time.sleep(3.0)  # RestartSec=1s: a restart would have come
            self.assertEqual(unit_prop("ActiveState"), "failed")
            self.assertEqual(int(unit_prop("NRestarts")), restarts)
        finally:
            with open(CONF, "w") as f:
                f.write(rig_conf)
            systemctl("reset-failed", rigtest.UNIT, check=False)
            systemctl("start", rigtest.UNIT)
        self.assertEqual(unit_prop("ActiveState"), "active")
        self.assertIsNotNone(vstest.wait_until(rigtest.service_answers, 20, step=0.2))

    def test_refuses_throttling_off_without_fair_server(self):
        """On Debian 12's kernel (6.1: no fair server) `rt-runtime-us -1`
        would starve a busy managed CPU's kworkers and RCU threads: the
        daemon refuses it (exit 2, the reason said) before it changes
        anything, unless forced with rt-runtime-unsafe."""
        release = os.uname().release
        major, minor = (int(x) for x in release.split(".")[:2])
        if (major, minor) >= (6, 12):
            self.skipTest(f"kernel {release} has the fair server: -1 is allowed")
        rt = vstest.read("/proc/sys/kernel/sched_rt_runtime_us")
        with tempfile.TemporaryDirectory(prefix="vcpusched-test-") as tmp:
            r = rigtest.run(rigtest.DAEMON, "--foreground", "--cpus", "1", "--libvirt", "none",
                            "--socket", f"{tmp}/sock", "--state", f"{tmp}/state",
                            "--rt-runtime-us", "-1", check=False, timeout=30)
            self.assertEqual(os.listdir(tmp), [], "a refused start created files")
        print(r.stderr, flush=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("has no fair server", r.stderr)
        self.assertIn("rt-runtime-unsafe yes", r.stderr)
        self.assertEqual(vstest.read("/proc/sys/kernel/sched_rt_runtime_us"), rt)

    def test_reload_switches_policy_live(self):
        conf = CONF
        shipped = vstest.read(conf)
        hog = self.hogs(1)[0]
        before = main_pid()
        try:
            with open(conf, "w") as f:
                f.write(shipped.replace("policy=credit\n", "policy=credit2\n"))
            # Type=notify: reload returns once the daemon says READY=1 again.
            systemctl("reload", rigtest.UNIT)
            self.assertEqual([(p["name"], p["policy"]) for p in ctl_json("pool", "list")["pools"]],
                             [("main", "credit2")])
        finally:
            with open(conf, "w") as f:
                f.write(shipped)
            systemctl("reload", rigtest.UNIT)
        self.assertEqual([(p["name"], p["policy"]) for p in ctl_json("pool", "list")["pools"]],
                         [("main", "credit")])
        self.assertEqual(main_pid(), before)
        self.assertEqual(unit_prop("ActiveState"), "active")
        # The domain stayed attached and managed through both switches.
        self.assertEqual(len(ctl_json("list")["domains"]), 1)
        self.assertTrue(vstest.is_fifo(hog.tid))
        ctl("detach", "svc0")
        self.assertTrue(rigtest.restored([hog]))

    def taken_up(self, hogs):
        """The new daemon manages every hog again, taken up from the live
        record the old one left in /run/vcpusched (RuntimeDirectoryPreserve=restart)."""
        names = sorted(x["name"] for x in ctl_json("list")["domains"])
        self.assertEqual(names, [f"svc{i}" for i in range(len(hogs))])
        for p in hogs:
            self.assertTrue(vstest.is_fifo(p.tid))
            self.assertLessEqual(os.sched_getaffinity(p.tid), {1, 2, 3})
        journal = rigtest.run("journalctl", "-q", "-o", "cat", f"_PID={main_pid()}",
                              check=False).stdout
        self.assertIn(f"live record: {len(hogs)} domain(s) and 0 pool(s) taken up, 0 entries not",
                      journal)

    def test_restart_restores_every_thread(self):
        hogs = self.hogs(3)
        before, since = main_pid(), time.time()
        systemctl("restart", rigtest.UNIT)
        self.assertNotEqual(main_pid(), before)
        self.assertEqual(unit_prop("ActiveState"), "active")
        self.assertIsNotNone(vstest.wait_until(rigtest.service_answers, 20, step=0.2))
        # The stop gave every thread back itself: the new daemon found none
        # left in the state file ("restored N thread(s) left by ...").
        self.assertNotIn("left by a previous daemon", self.journal_since(since))
        self.taken_up(hogs)
        ctl("detach", "svc1")
        self.assertTrue(rigtest.restored([hogs[1]]))

    def test_kill9_systemd_restarts_and_threads_were_restored(self):
        hogs = self.hogs(3)
        before, restarts = main_pid(), int(unit_prop("NRestarts"))
        t0 = time.monotonic()
        os.kill(before, signal.SIGKILL)
        # The guardian gives every thread back before a new daemon serves
        # (systemd waits for the unit's cgroup to empty, and the state
        # file's lock makes a new daemon wait for the restore).
        restored_at = served_at = None
        while time.monotonic() - t0 < 30 and served_at is None:
            if restored_at is None and rigtest.restored(hogs):
                restored_at = time.monotonic() - t0
            if main_pid() not in (0, before) and rigtest.service_answers():
                served_at = time.monotonic() - t0
                self.assertIsNotNone(restored_at, "a new daemon served before the restore")
            time.sleep(0.01)
        self.assertIsNotNone(restored_at, "threads still managed 30 s after kill -9")
        self.assertIsNotNone(served_at, "systemd did not bring the daemon back in 30 s")
        print(f"# kill -9: threads restored within {restored_at:.3f} s, a new daemon "
              f"(pid {main_pid()}) served after {served_at:.3f} s", flush=True)
        self.assertEqual(int(unit_prop("NRestarts")), restarts + 1)
        self.taken_up(hogs)

    def test_watchdog_stop_systemd_restarts(self):
        """`kill -STOP` of the main process with four hogs on the pool's
        three CPUs (one waits): the guardian gives every thread back and
        ends the daemon (SIGKILL), systemd restarts the unit, the new
        daemon reports the trip."""
        hogs = self.hogs(4)
        before, restarts = main_pid(), int(unit_prop("NRestarts"))
        trips = ctl_json("stats")["watchdog"]["trips"]
        since = time.time()
        t0 = time.monotonic()
        os.kill(before, signal.SIGSTOP)
        try:
            restored_at = vstest.wait_until(lambda: rigtest.restored(hogs), 30, step=0.02)
            self.assertIsNotNone(restored_at, "threads still managed 30 s after kill -STOP")
            served_at = vstest.wait_until(
                lambda: main_pid() not in (0, before) and rigtest.service_answers(), 60,
                step=0.1)
            self.assertIsNotNone(served_at, "systemd did not bring the daemon back in 60 s")
        finally:
            if not vstest.exited(before):
                os.kill(before, signal.SIGCONT)
        print(f"# kill -STOP: threads given back within {restored_at:.3f} s, a new daemon "
              f"(pid {main_pid()}) served after {time.monotonic() - t0:.3f} s", flush=True)
        self.assertTrue(vstest.exited(before), "the stopped daemon is still there")
        self.assertEqual(int(unit_prop("NRestarts")), restarts + 1)
        journal = self.journal_since(since)
        print(journal, flush=True)
        self.assertRegex(journal, r"watchdog: cpu [123]: thread \d+ runnable without running "
                                  r"for \d+ ms, no dispatcher pass for \d+ ms")
        self.assertIn(f"watchdog: {trips + 1} trip(s) since boot", journal)
        self.assertEqual(ctl_json("stats")["watchdog"]["trips"], trips + 1)
        self.taken_up(hogs)

    def test_metrics_served_by_node_exporter(self):
        """The documented Prometheus set-up on the packaged unit: the
        metrics file in node_exporter's textfile directory (writable under
        ProtectSystem=strict through the unit's ReadWritePaths=), Debian's
        prometheus-node-exporter serving it (a real client scraping the
        file), `promtool check metrics` clean on it."""
        textfile = "/var/lib/prometheus/node-exporter"
        prom = os.path.join(textfile, "vcpusched.prom")
        shipped = vstest.read(CONF)
        try:
            vstest.write(CONF, shipped + f"metrics-file {prom}\nmetrics-period 1\n")
            systemctl("restart", rigtest.UNIT)  # metrics-file takes a restart
            self.assertIsNotNone(vstest.wait_until(lambda: os.path.exists(prom), 30),
                                 f"no {prom}: {self.journal_since(time.time() - 60)}")
            exporter = rigtest.Process(["prometheus-node-exporter", "--web.listen-address",
                                        "127.0.0.1:9109", "--collector.disable-defaults",
                                        "--collector.textfile",
                                        f"--collector.textfile.directory={textfile}"])
            self.procs.append(exporter)
            got = [""]

            def scraped():
                try:
                    with urllib.request.urlopen("http://127.0.0.1:9109/metrics", timeout=5) as r:
                        got[0] = r.read().decode()
                except OSError:
                    return False
                return "vcpusched_uptime_seconds" in got[0]
            self.assertIsNotNone(vstest.wait_until(scraped, 60, step=0.5),
                                 f"node_exporter serves no vcpusched series: {got[0][-2000:]}")
            series = sorted({line.split("{")[0].split(" ")[0] for line in got[0].splitlines()
                             if line.startswith("vcpusched_")})
            print(f"# node_exporter serves {len(series)} vcpusched series", flush=True)
            self.assertIn("vcpusched_pool_info", series)
            self.assertIn('node_textfile_scrape_error 0', got[0])
            r = rigtest.run("promtool", "check", "metrics", check=False,
                            stdin=vstest.read(prom))
            print(f"# promtool check metrics: {r.returncode} {r.stdout}{r.stderr}", flush=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            vstest.write(CONF, shipped)
            systemctl("restart", rigtest.UNIT)
        self.assertFalse(os.path.exists(prom), "a stopped daemon left its metrics file")


if __name__ == "__main__":
    unittest.main()
