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
SHIPPED_CONF = os.path.join(vstest.SRC, "packaging", "vcpuschedd.conf")


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

        # CPUs that leave the host none (a resize refused), two restart-only keys.
        lines = d.reload(f"pool main cpus=0-{MANAGED_CPU} policy=credit2\npriority-base 20\n"
                         "events proc\n")
        self.assertTrue(grep(lines, r"reload: pool main: the pool would leave no housekeeping "
                                    r"cpu"), lines)
        self.assertTrue(grep(lines, r"reload: priority-base changed: not applied"), lines)
        self.assertTrue(grep(lines, r"reload: events changed: not applied"), lines)
        self.assertTrue(grep(lines, r": 0 change\(s\) applied, 3 refused$"), lines)
        self.assertEqual(d.pool("main")["policy"], "credit")  # the pool was left whole
        self.assertEqual((d.pool("main")["cpus"], d.pool("main")["resizes"]), ([MANAGED_CPU], 0))

        # A pool the daemon would refuse: named by its line, nothing changed.
        lines = d.reload(f"pool main cpus={MANAGED_CPU} policy=credit tslice_ms=0\n")
        self.assertTrue(grep(lines, r"reload: .*vcpuschedd.conf:1: pool main: tslice_ms: 0 is "
                                    r"out of range .*: nothing changed"), lines)
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

    def test_refuses_a_file_that_chooses_no_cpus(self):
        """A configuration file must name the managed CPUs: the shipped
        one alone, a file without pools, a pool without cpus= are refused
        at start (exit 2, the reason logged, nothing created), and a
        reload to such a file changes nothing. --cpus on the command line
        chooses too."""
        cases = [(vstest.read(SHIPPED_CONF), "vcpuschedd.conf: no managed CPUs chosen"),
                 ("log-level info\n", "vcpuschedd.conf: no managed CPUs chosen"),
                 ("policy credit2\n", "vcpuschedd.conf: pool main: no managed CPUs chosen"),
                 (f"pool main cpus={MANAGED_CPU}\npool web policy=rr\n",
                  "vcpuschedd.conf: pool web: no managed CPUs chosen")]
        for conf, why in cases:
            d = self.daemon(conf, start=False)
            with open(d.log, "ab") as logf:
                r = subprocess.run([vstest.DAEMON, *d.args], stdout=logf, stderr=logf,
                                   timeout=TIMEOUT)
            self.assertEqual(r.returncode, 2, d.read_log())
            self.assertIn(why, d.read_log())
            self.assertIn('e.g. "pool main cpus=2-15 policy=credit"', d.read_log())
            self.assertFalse(os.path.exists(d.state), "a refused start created the state file")
            self.assertFalse(os.path.exists(d.sock), "a refused start created the socket")
        ok = self.daemon(vstest.read(SHIPPED_CONF), "--cpus", str(MANAGED_CPU))
        self.assertEqual([p["cpus"] for p in ok.json("pool", "list")["pools"]], [[MANAGED_CPU]])
        ok.stop()
        d = self.daemon(f"pool p cpus={MANAGED_CPU}\n")
        lines = d.reload("log-level debug\n")
        self.assertTrue(grep(lines, r"no managed CPUs chosen.*: nothing changed"), lines)
        self.assertEqual([p["name"] for p in d.json("pool", "list")["pools"]], ["p"])

    def test_refuses_a_bad_pool_line_with_its_line(self):
        """A pool line the daemon would refuse when creating the pool (CPUs,
        policy, a parameter, a rule between two) is refused before anything
        is created, named by file and line: exit 2 at start (the unit does
        not restart it), nothing changed at a reload."""
        m = MANAGED_CPU
        cases = [(f"pool main cpus=1x\n", r"vcpuschedd.conf:1: pool main: cpus: "),
                 (f"log-level info\npool main cpus={m} policy=nope\n",
                  r"vcpuschedd.conf:2: pool main: unknown policy 'nope'"),
                 (f"pool main cpus={m}\npool-param tslice_ms=0\n",
                  r"vcpuschedd.conf:2: pool main: tslice_ms: 0 is out of range \[1, 1000\]"),
                 (f"pool main cpus={m} policy=credit tslice_ms=5 ratelimit_us=9000\n",
                  r"vcpuschedd.conf:1: pool main: ratelimit_us: 9000 is longer than tslice_ms 5"),
                 (f"pool main cpus={os.cpu_count() + 7}\n",
                  rf"vcpuschedd.conf:1: pool main: cpu {os.cpu_count() + 7} does not exist")]
        for conf, why in cases:
            with self.subTest(conf=conf):
                d = self.daemon(conf, start=False)
                with open(d.log, "ab") as logf:
                    r = subprocess.run([vstest.DAEMON, *d.args], stdout=logf, stderr=logf,
                                       timeout=TIMEOUT)
                self.assertEqual(r.returncode, 2, d.read_log())
                self.assertRegex(d.read_log(), why)
                self.assertFalse(os.path.exists(d.state), "a refused start created the state file")
        d = self.daemon(f"pool p cpus={m} policy=credit\n")
        lines = d.reload(f"pool p cpus={m} policy=credit tslice_ms=0\n")
        self.assertTrue(grep(lines, r"reload: .*vcpuschedd.conf:1: pool p: tslice_ms: 0 is out of "
                                    r"range.*: nothing changed"), lines)
        self.assertEqual(d.json("pool", "list")["pools"][0]["params"]["tslice_ms"], "30")

    def test_default_pool_leaves_an_eighth_of_each_node(self):
        """Without a file or --cpus the default pool takes every online CPU
        but the first ceil(n/8) of each NUMA node and their SMT siblings
        (on the 2-CPU test host: CPU 1, CPU 0 for the host); the rule on
        hosts up to 128 CPUs is unit.safe_defaults'."""
        d = Daemon("--libvirt", "none")
        d.args[d.args.index("--cpus"):d.args.index("--cpus") + 2] = []
        self.daemons.append(d)
        # Not pinned to CPU 0 as vstest starts daemons: it takes the CPUs
        # it may run on for the host's, as under systemd.
        every = set(range(os.cpu_count()))
        with open(d.log, "ab") as logf:
            d.proc = subprocess.Popen(
                [vstest.DAEMON, *d.args], stdout=logf, stderr=logf,
                preexec_fn=lambda: (vstest.child_setup(signal.SIGTERM),
                                    os.sched_setaffinity(0, every)))
        self.assertIsNotNone(vstest.wait_until(
            lambda: d.ctl("version", check=False).returncode == 0 or d.proc.poll() is not None,
            TIMEOUT))
        self.assertIsNone(d.proc.poll(), d.read_log())
        online = sorted(every)
        node_of, core_of = {}, {}
        for c in online:
            base = f"/sys/devices/system/cpu/cpu{c}"
            nodes = [n for n in os.listdir(base) if re.fullmatch(r"node\d+", n)]
            node_of[c] = int(nodes[0][4:]) if nodes else 0
            core_of[c] = (node_of[c], vstest.read(f"{base}/topology/physical_package_id").strip(),
                          vstest.read(f"{base}/topology/core_id").strip())
        keep = set()
        for n in set(node_of.values()):
            cpus = [c for c in online if node_of[c] == n]
            keep |= set(cpus[:-(-len(cpus) // 8)])
        with_siblings = {c for c in online if any(core_of[c] == core_of[k] for k in keep)}
        if with_siblings != set(online):
            keep = with_siblings
        want = [c for c in online if c not in keep]
        self.assertEqual(d.json("pool", "list")["pools"][0]["cpus"], want)
        if os.cpu_count() == 2:
            self.assertEqual(want, [MANAGED_CPU])
        self.assertIn("(the default: all but an eighth of each NUMA node)", d.read_log())


if __name__ == "__main__":
    unittest.main()
