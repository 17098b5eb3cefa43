# SPDX-License-Identifier: ISC
"""vcpuschedd as a service runs it, on real threads: readiness and reloads
reported on a real sd_notify socket, journal priorities on stderr, and
what SIGHUP applies from the re-read configuration file and what it
refuses (vcpuschedd(8), RELOAD), checked through the control socket."""

import os
import re
import signal
import socket
import subprocess
import unittest

import vstest
from vstest import Busy, Daemon, MANAGED_CPU

TIMEOUT = 10


class ServiceDaemon(Daemon):
    """A private daemon configured by a file only (as the unit runs it):
    no --cpus or --policy on its command line to override the file."""

    def __init__(self, conf, *args, env=None):
        super().__init__(env=env)
        self.conf = os.path.join(self.dir, "vcpuschedd.conf")
        self.write_conf(conf)
        self.args = ["--foreground", "--config", self.conf, "--socket", self.sock,
                     "--state", self.state, "--libvirt", "none", *args]

    def write_conf(self, text):
        with open(self.conf + ".tmp", "w") as f:
            f.write(text)
        os.rename(self.conf + ".tmp", self.conf)

    def reload(self, conf=None, last=r"reload: .*(change\(s\) applied|nothing changed|no file)"):
        """Rewrite the file (if given), SIGHUP, wait for the reload's last
        line (at log level warning an applied reload's is an info line, not
        written: pass another); return the log lines the reload wrote."""
        if conf is not None:
            self.write_conf(conf)
        before = len(self.read_log().splitlines())
        self.proc.send_signal(signal.SIGHUP)
        end = re.compile(last)
        ok = vstest.wait_until(lambda: any(end.search(l) for l in self.new_lines(before)),
                               TIMEOUT)
        if ok is None:
            raise AssertionError(f"no end of reload in the log:\n{self.read_log()[-3000:]}")
        return self.new_lines(before)

    def new_lines(self, before):
        return self.read_log().splitlines()[before:]

    def pool(self, name):
        pools = {p["name"]: p for p in self.json("pool", "list")["pools"]}
        return pools.get(name)


def grep(lines, pattern):
    return [l for l in lines if re.search(pattern, l)]


class ServiceTest(unittest.TestCase):
    def setUp(self):
        vstest.pin_self_to_housekeeping()
        self.daemons = []
        self.procs = []

    def tearDown(self):
        for d in self.daemons:
            d.cleanup()
        for p in self.procs:
            p.stop()
        for p in self.procs:
            self.assertFalse(os.path.exists(f"/proc/{p.pid}") and vstest.is_fifo(p.pid))

    def daemon(self, conf, *args, env=None, start=True):
        d = ServiceDaemon(conf, *args, env=env)
        self.daemons.append(d)
        return d.start() if start else d

    # --- what systemd sees --------------------------------------------------

    def test_notify_ready_reloading_stopping(self):
        """READY=1 only once the control socket answers; RELOADING=1 then
        READY=1 around a reload; STOPPING=1 at SIGTERM, then exit 0."""
        d = self.daemon(f"pool main cpus={MANAGED_CPU} policy=credit\n", start=False)
        path = os.path.join(d.dir, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        sock.settimeout(TIMEOUT)
        d.env = dict(os.environ, NOTIFY_SOCKET=path)
        with open(d.log, "ab") as logf:
            d.proc = subprocess.Popen([vstest.DAEMON, *d.args], stdout=logf, stderr=logf,
                                      env=d.env, preexec_fn=lambda: os.sched_setaffinity(
                                          0, {vstest.HOUSEKEEPING_CPU}))
        try:
            msg = sock.recv(4096).decode()
            # Ready means ready: the socket answers at once.
            self.assertEqual(d.ctl("version", check=False).returncode, 0, d.read_log())
            self.assertIn("READY=1", msg.split("\n"))
            d.proc.send_signal(signal.SIGHUP)
            reloading = sock.recv(4096).decode().split("\n")
            self.assertIn("RELOADING=1", reloading)
            self.assertTrue(any(re.fullmatch(r"MONOTONIC_USEC=\d+", l) for l in reloading),
                            reloading)
            self.assertIn("READY=1", sock.recv(4096).decode().split("\n"))
            d.proc.send_signal(signal.SIGTERM)
            self.assertIn("STOPPING=1", sock.recv(4096).decode().split("\n"))
            self.assertEqual(d.proc.wait(TIMEOUT), 0)
        finally:
            sock.close()

    def test_journal_priorities(self):
        """With stderr as the journal's stream (JOURNAL_STREAM), each line
        carries its syslog priority and no time stamp of its own."""
        d = self.daemon("priority-base 10\n", "--cpus", str(MANAGED_CPU), start=False)
        open(d.log, "w").close()
        st = os.stat(d.log)
        d.env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
        d.start()
        d.reload("priority-base 11\n")  # refused: a warning, <4>
        d.stop()
        lines = d.read_log().splitlines()
        self.assertTrue(grep(lines, r"^<6>ready on "), lines)
        self.assertTrue(grep(lines, r"^<4>reload: priority-base changed"), lines)
        self.assertFalse([l for l in lines if not re.match(r"<[0-7]>", l)], lines)
        # Without it, the foreground format: name and time stamp.
        plain = self.daemon("", "--cpus", str(MANAGED_CPU))
        plain.stop()
        self.assertTrue(grep(plain.read_log().splitlines(), r"^vcpuschedd\[\d+\.\d+\]: ready on "))

    # --- what a reload applies ----------------------------------------------

    def test_reload_pool_parameters_and_policy(self):
        d = self.daemon(f"pool main cpus={MANAGED_CPU} policy=credit tslice_ms=30\n")
        hog = Busy()
        self.procs.append(hog)
        d.ctl("attach", "hog", "--pid", str(hog.pid), "weight=512")
        self.assertEqual(d.pool("main")["params"]["tslice_ms"], "30")

        lines = d.reload(f"pool main cpus={MANAGED_CPU} policy=credit tslice_ms=10 "
                         "ratelimit_us=500\n")
        self.assertTrue(grep(lines, r"reload: pool main: tslice_ms=10"), lines)
        self.assertTrue(grep(lines, r"reload: .*: 1 change\(s\) applied$"), lines)
        p = d.pool("main")
        self.assertEqual((p["policy"], p["params"]["tslice_ms"], p["params"]["ratelimit_us"]),
                         ("credit", "10", "500"))

        # The same file again: nothing to do.
        self.assertTrue(grep(d.reload(), r": 0 change\(s\) applied$"))

        # A runtime change to a parameter the file names is undone.
        d.ctl("pool", "set", "main", "tslice_ms=20")
        self.assertEqual(d.pool("main")["params"]["tslice_ms"], "20")
        d.reload()
        self.assertEqual(d.pool("main")["params"]["tslice_ms"], "10")

        # A policy switch, with the domain attached and still managed.
        lines = d.reload(f"pool main cpus={MANAGED_CPU} policy=credit2\n")
        self.assertTrue(grep(lines, r"reload: pool main: policy credit -> credit2"), lines)
        self.assertEqual(d.pool("main")["policy"], "credit2")
        doms = d.json("list")["domains"]
        self.assertEqual([x["name"] for x in doms], ["hog"])
        self.assertEqual(doms[0]["params"]["weight"], "512")
        self.assertTrue(vstest.is_fifo(hog.pid))

    def test_reload_refuses_what_needs_a_restart(self):
        conf = f"pool main cpus={MANAGED_CPU} policy=credit\npriority-base 10\n"
        d = self.daemon(conf)
        before = d.pool("main")

        # Another pool's CPUs, a restart-only key, a parameter the policy refuses.
        lines = d.reload(f"pool main cpus=0-{MANAGED_CPU} policy=credit2\npriority-base 20\n"
                         "events proc\n")
        self.assertTrue(grep(lines, r"reload: pool main: cpus differ"), lines)
        self.assertTrue(grep(lines, r"reload: priority-base changed: not applied"), lines)
        self.assertTrue(grep(lines, r"reload: events changed: not applied"), lines)
        self.assertTrue(grep(lines, r": 0 change\(s\) applied, 3 refused$"), lines)
        self.assertEqual(d.pool("main")["policy"], "credit")  # the pool was left whole

        lines = d.reload(f"pool main cpus={MANAGED_CPU} policy=credit tslice_ms=0\n")
        self.assertTrue(grep(lines, r"reload: pool main: .*tslice_ms"), lines)
        self.assertTrue(grep(lines, r"1 refused$"), lines)
        self.assertEqual(d.pool("main")["params"], before["params"])

        # A file that does not parse changes nothing, and says where.
        lines = d.reload(f"pool main cpus={MANAGED_CPU} policy=credit2\nlog-level loud\n")
        self.assertTrue(grep(lines, r"vcpuschedd.conf:2: log-level: 'loud' is not one of "
                                    r".*: nothing changed"), lines)
        self.assertEqual(d.pool("main")["policy"], "credit")
        self.assertEqual(d.ctl("version", check=False).returncode, 0)

    def test_reload_creates_missing_pools(self):
        conf = f"pool main cpus={MANAGED_CPU} policy=rr slice_us=2000\n"
        d = self.daemon(conf)
        d.ctl("pool", "destroy", "main")
        self.assertIsNone(d.pool("main"))
        lines = d.reload()
        self.assertTrue(grep(lines, r"reload: pool main: created, policy rr"), lines)
        p = d.pool("main")
        self.assertEqual((p["policy"], p["cpus"], p["params"]["slice_us"]),
                         ("rr", [MANAGED_CPU], "2000"))
        # A new pool that would take the last housekeeping CPU is refused;
        # a pool the file no longer names stays.
        lines = d.reload("pool other cpus=0 policy=credit\n")
        self.assertTrue(grep(lines, r"reload: pool other: .*housekeeping"), lines)
        self.assertTrue(grep(lines, r"reload: pool main is not in the configuration: kept"),
                        lines)
        self.assertIsNone(d.pool("other"))
        self.assertIsNotNone(d.pool("main"))

    def test_reload_log_level(self):
        conf = f"pool main cpus={MANAGED_CPU} policy=credit\n"
        d = self.daemon(conf + "log-level info\n")
        lines = d.reload(conf + "log-level warning\n", last=r"reload: log level warning")
        self.assertTrue(grep(lines, r"reload: log level warning"), lines)
        # At warning, info lines (the housekeeping CPUs a pool change logs) are gone.
        n = len(d.read_log().splitlines())
        d.ctl("pool", "destroy", "main")
        d.ctl("pool", "create", "main", f"cpus={MANAGED_CPU}", "policy=credit")
        self.assertFalse(grep(d.new_lines(n), r"housekeeping cpus"), d.new_lines(n))
        lines = d.reload(conf + "log-level info\n")
        self.assertTrue(grep(lines, r"reload: log level info"), lines)
        n = len(d.read_log().splitlines())
        d.ctl("pool", "destroy", "main")
        self.assertTrue(grep(d.new_lines(n), r"housekeeping cpus"), d.new_lines(n))

    def test_reload_without_config_file(self):
        d = Daemon("--libvirt", "none")
        self.daemons.append(d)
        d.start()
        before = len(d.read_log().splitlines())
        d.proc.send_signal(signal.SIGHUP)
        self.assertIsNotNone(vstest.wait_until(
            lambda: grep(d.read_log().splitlines()[before:], r"started without --config"),
            TIMEOUT))
        self.assertEqual(d.ctl("version", check=False).returncode, 0)


if __name__ == "__main__":
    unittest.main()
