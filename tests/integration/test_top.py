# SPDX-License-Identifier: ISC
"""The operator's view on a real daemon with real threads at SCHED_FIFO:
`vcpuschedctl stats --openmetrics` and `--prometheus` read by the real
parsers of Python's prometheus_client, the daemon's --metrics-file as
node_exporter's textfile collector would read it (every read whole while it
is rewritten), and `vcpuschedctl top` on a real terminal (tmux): the
attached domains and their vCPUs with sane numbers, resizing, and q, Ctrl-C
and SIGTERM all giving the terminal back as it was."""

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import vstest
from vstest import Busy, CTL, Daemon

try:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
except ImportError:  # a Python not from Debian (pyenv): Debian's python3-prometheus-client
    sys.path.append("/usr/lib/python3/dist-packages")
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as prom_parse


def families(parse, text):
    return {f.name: f for f in parse(text)}


def samples(fam, **labels):
    """The samples of a family whose labels include `labels`."""
    return [s for s in fam.samples if all(s.labels.get(k) == v for k, v in labels.items())]


class Tmux:
    """A private tmux server with one window of a fixed size running `cmd`."""

    def __init__(self, cmd, width=160, height=40):
        self.name = f"vstop{os.getpid()}x{time.monotonic_ns()}"
        self.run("-f", "/dev/null", "new-session", "-d", "-x", str(width), "-y", str(height),
                 cmd)

    def run(self, *args):
        return subprocess.run(["tmux", "-L", self.name, *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout

    def screen(self):
        return self.run("capture-pane", "-p")

    def wait(self, pred, timeout=10):
        """The screen once pred(screen) holds; fails with the last screen."""
        last = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.screen()
            if pred(last):
                return last
            time.sleep(0.05)
        raise AssertionError(f"screen never matched:\n{last}")

    def keys(self, *keys):
        self.run("send-keys", *keys)

    def resize(self, width, height):
        self.run("resize-window", "-x", str(width), "-y", str(height))

    def shell_pid(self):
        return int(self.run("display-message", "-p", "#{pane_pid}").strip())

    def kill(self):
        """The server, the pane's shell and whatever it runs, gone before
        this returns (kill-server alone returns before they are)."""
        try:
            server = int(self.run("display-message", "-p", "#{pid}").strip())
            shell = self.shell_pid()
        except (subprocess.SubprocessError, ValueError):
            server = shell = None
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True, timeout=10)
        for pid, group in ((shell, True), (server, False)):
            if pid is None:
                continue
            try:
                (os.killpg if group else os.kill)(pid, signal.SIGKILL)
            except OSError:
                pass
            vstest.wait_until(lambda: vstest.exited(pid), 5)


# After top exits, the shell says how and shows the terminal's modes.
AFTER = "; echo TOP-EXIT=$?; stty -a; echo STTY-DONE; sleep 600"


def top_cmd(sock, *args):
    return "taskset -c 0 " + " ".join(shlex.quote(a) for a in
                                      [CTL, "--socket", sock, "top", *args]) + AFTER


def row(screen, first):
    """The words of the first line whose first word is `first`."""
    for line in screen.splitlines():
        words = line.split()
        if words and words[0] == first:
            return words
    return None


def rates_known(screen, name):
    r = row(screen, name)
    return r is not None and r[4] != "-"


def assert_exits(test, term, status):
    """top exits with `status` and the terminal is as it was: stty -a after
    it shows line editing and echo back on, and its screen gone."""
    screen = term.wait(lambda s: "STTY-DONE" in s)
    test.assertIn(f"TOP-EXIT={status}", screen)
    modes = screen.split()
    test.assertIn("icanon", modes, screen)
    test.assertIn("echo", modes, screen)
    test.assertNotIn("-icanon", modes)
    test.assertNotIn("POOL", modes, "top's screen is still shown")
    return screen


class TopTest(unittest.TestCase):
    def setUp(self):
        vstest.pin_self_to_housekeeping()
        self.procs, self.daemons, self.terms = [], [], []

    def tearDown(self):
        for t in self.terms:
            t.kill()
        for d in self.daemons:
            d.cleanup()
        for p in self.procs:
            p.stop()
        for p in self.procs:
            self.assertFalse(os.path.exists(f"/proc/{p.pid}") and vstest.is_fifo(p.pid))

    def daemon(self, *args, policy="credit"):
        d = Daemon(*args, policy=policy)
        self.daemons.append(d)
        return d.start()

    def domains(self, d):
        """A CPU hog and a thread that wakes every 5 ms, attached as hog and
        waker, given half a second to settle (Python's start-up competes
        with the hog)."""
        hog, waker = Busy(), Busy("waker", period_ms=5)
        self.procs += [hog, waker]
        d.ctl("attach", "hog", "--pid", str(hog.pid), "weight=512")
        d.ctl("attach", "waker", "--pid", str(waker.pid))
        time.sleep(0.5)
        return hog, waker

    def term(self, cmd, **kw):
        t = Tmux(cmd, **kw)
        self.terms.append(t)
        return t

    # --- metrics ---------------------------------------------------------

    def test_openmetrics_read_by_prometheus_client(self):
        d = self.daemon()
        hog, waker = self.domains(d)
        time.sleep(1)
        text = d.ctl("stats", "--openmetrics").stdout
        self.assertTrue(text.endswith("\n# EOF\n"))
        fams = families(om_parse, text)
        for name, (typ, unit) in {
                "vcpusched_uptime_seconds": ("gauge", "seconds"),
                "vcpusched_pool": ("info", ""),
                "vcpusched_pool_picks": ("counter", ""),
                "vcpusched_pool_dispatcher_cpu_seconds": ("counter", "seconds"),
                "vcpusched_pool_wake_to_mid_seconds": ("histogram", "seconds"),
                "vcpusched_domain": ("info", ""),
                "vcpusched_vcpu_run_seconds": ("counter", "seconds"),
                "vcpusched_vcpu_wakes": ("counter", ""),
                "vcpusched_vcpu_boosts": ("counter", ""),
                "vcpusched_vcpu_state": ("gauge", ""),
                "vcpusched_event_ring_bytes": ("gauge", "bytes")}.items():
            self.assertIn(name, fams)
            self.assertEqual((fams[name].type, fams[name].unit), (typ, unit), name)
        for f in fams.values():
            self.assertTrue(f.name.startswith("vcpusched_"), f.name)
        uptime = fams["vcpusched_uptime_seconds"].samples[0].value
        run = {s.labels["domain"]: s.value for s in fams["vcpusched_vcpu_run_seconds"].samples}
        self.assertEqual(set(run), {"hog", "waker"})
        vstest.within(self, "hog's run time in its first 1.5 s (s)", run["hog"], lo=0.5,
                      why="~95 % of 1.5 s; generous: a functional check")
        self.assertLess(run["hog"] + run["waker"], uptime)
        wakes = samples(fams["vcpusched_vcpu_wakes"], domain="waker")[0].value
        vstest.within(self, "waker's wakes in 1.5 s", wakes, lo=50,
                      why="200/s for 1.5 s; generous: a functional check")
        info = {s.labels["domain"]: s.labels for s in fams["vcpusched_vcpu"].samples}
        self.assertEqual(info["hog"]["tid"], str(hog.pid))
        self.assertEqual(info["waker"]["pool"], "main")
        states = samples(fams["vcpusched_vcpu_state"], domain="hog")
        self.assertEqual(sum(s.value for s in states), 1)
        hist = fams["vcpusched_pool_wake_to_mid_seconds"].samples
        inf = [s.value for s in hist if s.labels.get("le") == "+Inf"][0]
        count = [s.value for s in hist if s.name.endswith("_count")][0]
        total = [s.value for s in hist if s.name.endswith("_sum")][0]
        self.assertEqual(inf, count)
        self.assertGreater(count, 50)
        self.assertGreater(total, 0)
        vstest.within(self, "mean wake-to-MID (s)", total / count, hi=0.1,
                      why="well under 100 ms; generous: a functional check")
        # Counters only grow (run time is charged at the policy's ticks: give it a few).
        time.sleep(0.3)
        again = families(om_parse, d.ctl("stats", "--openmetrics").stdout)
        run2 = {s.labels["domain"]: s.value for s in again["vcpusched_vcpu_run_seconds"].samples}
        self.assertGreater(run2["hog"], run["hog"])

    def test_prometheus_text_matches_openmetrics(self):
        d = self.daemon(policy="credit2")
        self.domains(d)
        time.sleep(0.5)
        prom = d.ctl("stats", "--prometheus").stdout
        om = d.ctl("stats", "--openmetrics").stdout
        self.assertNotIn("# EOF", prom)
        self.assertNotIn("# UNIT", prom)
        self.assertNotIn(" info\n", prom)  # node_exporter refuses the info type
        pf, of = families(prom_parse, prom), families(om_parse, om)
        names = lambda fams: {s.name for f in fams.values() for s in f.samples}
        self.assertEqual(names(pf), names(of))
        self.assertIn("vcpusched_vcpu_credit_resets_total", names(pf))  # Credit2
        self.assertNotIn("vcpusched_vcpu_boosts_total", names(pf))

    def test_metrics_file_replaced_atomically(self):
        out = tempfile.mkdtemp(prefix="vcpusched-metrics-")
        path = os.path.join(out, "vcpusched.prom")
        try:
            d = self.daemon("--metrics-file", path, "--metrics-period", "1")
            self.assertTrue(os.path.exists(path), "no file at start-up")
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o644)
            self.domains(d)
            self.assertIsNotNone(vstest.wait_until(
                lambda: 'domain="hog"' in vstest.read(path), 3),
                "the file never showed the attached domain")
            # Read it as fast as possible while it is rewritten: always whole.
            inodes, uptimes, reads = set(), set(), 0
            t0 = time.monotonic()
            while time.monotonic() - t0 < 2.5:
                with open(path) as f:
                    inodes.add(os.fstat(f.fileno()).st_ino)
                    text = f.read()
                fams = families(prom_parse, text)
                self.assertIn("vcpusched_vcpu_run_seconds", fams)
                self.assertIn("vcpusched_vcpu_migrations", fams)  # the last family: whole
                uptimes.add(fams["vcpusched_uptime_seconds"].samples[0].value)
                reads += 1
                time.sleep(0.002)
            self.assertGreater(reads, 100)
            self.assertGreaterEqual(len(inodes), 2, "the file was not replaced")
            self.assertGreaterEqual(len(uptimes), 2, "the file was not rewritten")
            d.stop()
            self.assertEqual(os.listdir(out), [], "a stopped daemon leaves a file behind")
        finally:
            subprocess.run(["rm", "-rf", out])

    def test_metrics_file_from_the_config_file(self):
        out = tempfile.mkdtemp(prefix="vcpusched-metrics-")
        conf = os.path.join(out, "vcpuschedd.conf")
        path = os.path.join(out, "m.prom")
        with open(conf, "w") as f:
            f.write(f"metrics-file {path}\nmetrics-period 1\n")
        try:
            self.daemon("--config", conf)
            families(prom_parse, vstest.read(path))
        finally:
            subprocess.run(["rm", "-rf", out])

    def test_bad_metrics_file_refused_before_anything(self):
        # A read-only directory, as ProtectSystem=strict makes /var/lib for a
        # unit without ReadWritePaths=: refused with exit 2 (no restart loop).
        ro = tempfile.mkdtemp(prefix="vcpusched-test_top-ro.")
        self.addCleanup(os.rmdir, ro)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", ro], check=True)
        self.addCleanup(subprocess.run, ["umount", ro], check=True)
        for args, status, msg in [
                (["--metrics-file", f"{ro}/m.prom"], 2,
                 f"metrics file {ro}/m.prom: cannot create a file next to it: Read-only file "
                 "system (a service unit's ProtectSystem=strict: add the directory to "
                 "ReadWritePaths=, systemctl edit vcpuschedd)"),
                (["--metrics-file", "/nonexistent-dir/m.prom"], 2,
                 "metrics file /nonexistent-dir/m.prom: cannot create a file next to it: "
                 "No such file or directory"),
                (["--metrics-file", "m.prom"], 2,
                 "metrics-file: 'm.prom' is not an absolute path to a file"),
                (["--metrics-file", "/tmp/"], 2, "is not an absolute path to a file"),
                (["--metrics-period", "0"], 2, "metrics-period: '0' is not an integer in [1, 3600]")]:
            d = Daemon(*args)
            self.daemons.append(d)
            with self.assertRaises(RuntimeError):
                d.start()
            self.assertEqual(d.proc.returncode, status, args)
            self.assertIn(msg, d.read_log())
            self.assertFalse(os.path.exists(d.sock), "a socket despite the error")

    # --- top -------------------------------------------------------------

    def test_top_batch_shows_domains_and_vcpus(self):
        d = self.daemon()
        hog, waker = self.domains(d)
        r = d.ctl("top", "-b", "-n", "2", "-d", "0.5")
        self.assertEqual(r.stdout.count("vcpuschedctl top - "), 2, r.stdout)
        last = r.stdout[r.stdout.rindex("vcpuschedctl top - "):]
        h, w = row(last, "hog"), row(last, "waker")
        self.assertEqual(h[1:4], ["main", "credit", "1"])
        # A hog next to a light waker: most of what the CPU gave them (a share
        # of wall time would measure the host's steal, 50 % at times here).
        self.assertTrue(float(h[4]) >= 5 * float(w[4]) and float(h[4]) <= 101, last)
        self.assertTrue(0 <= float(h[5]) <= 100, last)  # waited, as a part of each second
        self.assertTrue(float(w[6]) > 20, last)  # wakes/s of a 5 ms sleeper
        self.assertNotEqual(w[7], "-")  # Credit counts boosts
        self.assertEqual(w[8], "-")  # not resets
        lines = last.splitlines()
        vcpu = lines[lines.index(next(l for l in lines if l.startswith("hog "))) + 1].split()
        self.assertEqual(vcpu[:3], ["vcpu0", str(hog.pid), "1"])
        self.assertEqual(float(vcpu[3]), float(h[4]))

    def test_top_batch_credit2_resets(self):
        d = self.daemon(policy="credit2")
        self.domains(d)
        out = d.ctl("top", "-b", "-n", "2", "-d", "0.5", "-s", "name").stdout
        last = out[out.rindex("vcpuschedctl top - "):]
        h, w = row(last, "hog"), row(last, "waker")
        self.assertLess(last.index("\nhog "), last.index("\nwaker "))  # sorted by name
        self.assertEqual(h[2], "credit2")
        self.assertEqual(h[7], "-")  # no boosts in Credit2
        self.assertNotEqual(h[8], "-")  # resets/s
        self.assertTrue(float(w[6]) > 20, last)

    def test_top_on_a_terminal(self):
        d = self.daemon()
        hog, _ = self.domains(d)
        t = self.term(top_cmd(d.sock, "-d", "0.5"), width=160, height=40)
        screen = t.wait(lambda s: rates_known(s, "hog") and rates_known(s, "waker"))
        self.assertTrue(screen.startswith("vcpuschedctl top - vcpuschedd up "), screen)
        self.assertIn("keys: q quit", screen)
        h, w = row(screen, "hog"), row(screen, "waker")
        self.assertTrue(float(h[4]) >= 5 * float(w[4]) and float(h[4]) <= 101, screen)
        lines = screen.splitlines()
        vcpu = lines[next(i for i, l in enumerate(lines) if l.startswith("hog ")) + 1].split()
        self.assertEqual(vcpu[:3], ["vcpu0", str(hog.pid), "1"])
        self.assertTrue(all(len(l) <= 160 for l in lines))
        # A smaller window: lines cut to its width, and a line saying what is hidden.
        t.resize(60, 10)
        screen = t.wait(lambda s: "more lines" in s)
        self.assertTrue(all(len(l) <= 60 for l in screen.splitlines()), screen)
        self.assertLessEqual(len(screen.rstrip("\n").splitlines()), 10)
        # Sort by name, then quit with q.
        t.resize(160, 40)
        t.keys("n")
        t.wait(lambda s: "sorted by name" in s)
        t.keys("q")
        assert_exits(self, t, 0)

    def test_top_leaves_cleanly_on_ctrl_c_and_sigterm(self):
        d = self.daemon()
        self.domains(d)
        t = self.term(top_cmd(d.sock))
        t.wait(lambda s: row(s, "hog") is not None)
        t.keys("C-c")
        assert_exits(self, t, 0)
        t = self.term(top_cmd(d.sock))
        t.wait(lambda s: row(s, "hog") is not None)
        shell = t.shell_pid()
        top = [int(p) for p in subprocess.run(["pgrep", "-P", str(shell)], capture_output=True,
                                              text=True).stdout.split()]
        self.assertEqual(len(top), 1)
        os.kill(top[0], signal.SIGTERM)
        assert_exits(self, t, 0)

    def test_top_keeps_going_when_the_daemon_goes(self):
        d = self.daemon()
        self.domains(d)
        t = self.term(top_cmd(d.sock, "-d", "0.3"))
        t.wait(lambda s: row(s, "hog") is not None)
        d.stop()
        screen = t.wait(lambda s: "(is it running?) (retrying every 0.3s)" in s)
        self.assertIn(f"vcpuschedd at {d.sock}: ", screen)
        self.assertIsNotNone(row(screen, "hog"))  # the last sample stays
        t.keys("q")
        assert_exits(self, t, 0)

    def test_top_without_a_daemon(self):
        sock = "/nonexistent/vcpusched.sock"
        t = self.term(top_cmd(sock))
        screen = assert_exits(self, t, 3)
        self.assertIn(f"vcpuschedctl: top: cannot talk to vcpuschedd at {sock}: No such file or "
                      "directory (is it running?)", screen)
        r = subprocess.run([CTL, "--socket", sock, "top", "-b"], capture_output=True, text=True,
                           timeout=10)
        self.assertEqual((r.returncode, r.stdout), (3, ""))


if __name__ == "__main__":
    unittest.main()
