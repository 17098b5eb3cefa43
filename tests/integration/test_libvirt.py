# SPDX-License-Identifier: ISC
"""libvirt integration on real parts: a private libvirtd in a mount
namespace (libvirtd-private.sh) with the vcpusched hook installed, a
private vcpuschedd inside that namespace (so that it sees the private
/run/libvirt and the hook finds it at the default socket path), and real
TCG guests from vm-images. The steps run in order and share the guests:
(a) the hook attaches an opted-in domain at `virsh create`, a domain
without metadata is untouched; (b) `virsh metadata --live` changes a weight;
(b) also moves it to the background class and back; (c) invalid metadata
changes nothing and is logged; (c2) metadata is the whole setting: what it
omits is the default, a policy no pool runs keeps the domain in its pool; (d) the hook attaches a background domain,
destroy detaches;
(e) libvirtd restarted: the watcher reconnects and still applies changes;
(f) a daemon started after the domain attaches it (resync); (f_z) opted in
with metadata no pool fits or that does not parse: listed with the reason
in `stats` and as a metric, unlisted once managed; (g) vCPU
hot-plug and unplug with `virsh setvcpus --live` are managed within 1 s;
(h) with cgroup v2 parking, a capped domain's vCPU threads are frozen in the
threaded vcpuN groups libvirt made for them, thawed by the guardian after
kill -9, and `virsh destroy` of a parked domain leaves nothing behind.

Run: tests/integration/run-exclusive python3 -m unittest -v test_libvirt
(root; VCPUSCHED_BUILD=build dir)."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import vstest
from vstest import MANAGED_CPU, Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
LV = os.path.join(HERE, "libvirtd-private.sh")
MKDOMXML = os.path.join(vstest.SRC, "vm-images", "mkdomxml")
BUILD_IMAGE = os.path.join(vstest.SRC, "vm-images", "build-image.sh")
INSTALL = os.path.join(vstest.SRC, "libvirt-hooks", "install.sh")
HOOK = os.path.join(vstest.BUILD, "libvirt-hooks", "vcpusched-hook")
NS_URI = "https://vcpusched.org/xmlns/1"
# Deadlines, stretched under a sanitizer (vstest.stretch):
APPLY_S = vstest.stretch(2.0)  # a metadata change must show in `list` within this
HOTPLUG_S = vstest.stretch(1.0)  # a hot-plugged or unplugged vCPU must show in `list` within this


def missing_tools():
    return [t for t in ("libvirtd", "virsh", "nsenter", "unshare", "qemu-system-x86_64")
            if shutil.which(t) is None]


class NsDaemon(Daemon):
    """vcpuschedd inside the libvirtd namespace, listening on the default
    /run/vcpusched/control.sock there (a bind mount of a scratch directory,
    so vcpuschedctl reaches it from outside through self.sock)."""

    def __init__(self, ns, rundir, *args, **kw):
        super().__init__(*args, **kw)
        self.ns = ns
        self.sock = os.path.join(rundir, "control.sock")
        i = self.args.index("--socket")
        self.args[i + 1] = "/run/vcpusched/control.sock"

    def start(self, timeout=None):
        real = vstest.DAEMON
        try:
            vstest.DAEMON = "nsenter"
            self.args = [f"--mount={self.ns}", "--", real, *self.args]
            return super().start(timeout)
        finally:
            vstest.DAEMON = real
            self.args = self.args[3:]


class LibvirtTest(unittest.TestCase):
    daemon = None

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (namespaces, libvirtd, SCHED_FIFO)")
        if missing_tools():
            raise unittest.SkipTest(f"missing: {' '.join(missing_tools())}")
        vstest.pin_self_to_housekeeping()
        cls.T = tempfile.mkdtemp(prefix="vcpusched-test_libvirt.")
        os.chmod(cls.T, 0o755)  # QEMU (libvirt-qemu) writes its serial log here
        cls.scratch = os.path.join(cls.T, "libvirt")
        cls.env = dict(os.environ, VS_LIBVIRT_SCRATCH=cls.scratch)
        cls.addClassCleanup(cls.cleanup)
        img = subprocess.run([BUILD_IMAGE], capture_output=True, text=True, check=True).stdout
        cls.image = dict(re.findall(r"^(VS_\w+)=(\S+)$", img, re.M))
        cls.lv("start")
        cls.ns = os.path.join(cls.scratch, "mnt")
        cls.rundir = os.path.join(cls.T, "vsrun")
        os.mkdir(cls.rundir)
        cls.lv("exec", "sh", "-ec",
               f"mkdir -p /run/vcpusched && mount --bind '{cls.rundir}' /run/vcpusched")
        subprocess.run([INSTALL, "--hook", HOOK, "--hooks-dir",
                        os.path.join(cls.scratch, "etc", "hooks", "qemu.d"), "--pidfile",
                        os.path.join(cls.scratch, "run", "libvirtd.pid")],
                       check=True, capture_output=True)
        time.sleep(0.5)  # libvirtd rescans its hooks on SIGHUP
        cls.start_daemon()

    @classmethod
    def cleanup(cls):
        cls.print_guest_logs()
        if cls.daemon is not None:
            cls.daemon.cleanup()
        subprocess.run([LV, "stop"], env=cls.env, capture_output=True, timeout=120)
        for p in os.listdir("/proc"):  # backstop: any QEMU naming our scratch dir
            try:
                exe = os.readlink(f"/proc/{p}/exe")
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if "qemu-system" in exe and cls.T.encode() in cmd:
                os.kill(int(p), signal.SIGKILL)
        shutil.rmtree(cls.T, ignore_errors=True)

    @classmethod
    def print_guest_logs(cls):
        """The end of each guest's serial console and of libvirt's log of
        its QEMU: why a domain ended on its own (a guest kernel's panic,
        QEMU's exit), shown with a failure's output."""
        for top in (cls.T, cls.scratch):
            for dirpath, _, files in os.walk(top):
                for f in sorted(files):
                    path = os.path.join(dirpath, f)
                    if not f.endswith(".log") or os.path.getsize(path) == 0:
                        continue
                    try:
                        lines = vstest.read(path, "rb").decode(errors="replace").splitlines()
                    except OSError:
                        continue
                    print(f"# {os.path.relpath(path, cls.T)}, last lines:", *lines[-8:],
                          sep="\n# ", flush=True)

    @classmethod
    def lv(cls, *args, check=True):
        r = subprocess.run([LV, *args], env=cls.env, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError(f"libvirtd-private.sh {' '.join(args)}: {r.stderr}{r.stdout}")
        return r

    @classmethod
    def start_daemon(cls, *args):
        # The private libvirtd of the namespace (its /run/libvirt).
        cls.daemon = NsDaemon(cls.ns, cls.rundir, "--libvirt", "qemu:///system", *args,
                              policy="credit").start()

    @classmethod
    def virsh(cls, *args, check=True):
        return cls.lv("virsh", "-q", *args, check=check)

    @classmethod
    def create(cls, name, vs_sched=None, smp=2, current=None, extra=None, role="idle"):
        args = [MKDOMXML, "--kernel", cls.image["VS_KERNEL"], "--initrd", cls.image["VS_INITRD"],
                "--name", name, "--role", role, "--smp", str(smp),
                "--serial", os.path.join(cls.T, f"{name}.log"),
                "-o", os.path.join(cls.T, f"{name}.xml")]
        if vs_sched:
            args += ["--vs-sched", vs_sched]
        if current:
            args += ["--vcpus-current", str(current)]
        if extra:
            args += ["--extra-cmdline", extra]
        subprocess.run(args, check=True)
        cls.virsh("create", os.path.join(cls.T, f"{name}.xml"))

    # --- what libvirt and the daemon say ----------------------------------

    @classmethod
    def status_vcpus(cls, name):
        """(QEMU pid, vCPU tids) from libvirt's status file, in vCPU id order."""
        xml = cls.lv("exec", "cat", f"/run/libvirt/qemu/{name}.xml").stdout
        pid = int(re.search(r"<domstatus [^>]*pid='(\d+)'", xml).group(1))
        vcpus = sorted((int(i), int(t)) for i, t in
                       re.findall(r"<vcpu id='(\d+)' pid='(\d+)'/>", xml))
        return pid, [t for _, t in vcpus]

    def domain(self, name):
        for d in self.daemon.json("list")["domains"]:
            if d["name"] == name:
                return d
        return None

    def wait_domain(self, name, pred, timeout=APPLY_S):
        last = [None]

        def ok():
            last[0] = self.domain(name)
            return pred(last[0])
        return vstest.wait_until(ok, timeout, step=0.05), last[0]

    def assert_attached_like_status(self, name, source):
        pid, tids = self.status_vcpus(name)
        dom = self.domain(name)
        self.assertIsNotNone(dom, f"{name} not attached: {self.daemon.read_log()[-3000:]}")
        self.assertEqual(dom["source"], source)
        self.assertEqual(dom["pid"], pid)
        self.assertEqual([v["tid"] for v in dom["vcpus"]], tids)
        self.assertEqual(len(tids), 2)
        for t in tids:
            self.assertTrue(vstest.is_fifo(t), f"{name} vcpu thread {t} is not SCHED_FIFO")

    def log_wait(self, pattern, timeout):
        return vstest.wait_until(lambda: re.search(pattern, self.daemon.read_log()), timeout,
                                 step=0.1)

    # --- the steps, in order -----------------------------------------------

    def test_a_hook_attaches_opted_in_domain(self):
        self.create("vs-lv-on", "policy=credit weight=256")
        self.create("vs-lv-off")
        # The hook ran inside `virsh create` (started begin): its one message
        # made the daemon read the status file and attach.
        self.assert_attached_like_status("vs-lv-on", "libvirt")
        self.assertEqual(self.domain("vs-lv-on")["params"]["weight"], "256")
        self.assertIsNone(self.domain("vs-lv-off"))
        _, off = self.status_vcpus("vs-lv-off")
        for t in off:
            self.assertFalse(vstest.is_fifo(t), f"vs-lv-off thread {t} is SCHED_FIFO")
        # Its QEMU's other threads, which libvirt lets run anywhere (no
        # <emulatorpin> here), are kept off the pool's CPU while it is managed;
        # those of the domain not opted in keep libvirt's affinity.
        pid, vcpus = self.status_vcpus("vs-lv-on")
        others = [t for t in vstest.threads_of(pid) if t not in vcpus]
        for t in others:
            self.assertNotIn(MANAGED_CPU, os.sched_getaffinity(t), f"vs-lv-on thread {t}")
        kept = self.domain("vs-lv-on")["others"]
        print(f"\n# vs-lv-on: {len(others)} other threads, kept off the pool: {kept}")
        self.assertGreaterEqual(kept["kept_off"], 1, "libvirt let them on every CPU")
        off_pid, off_vcpus = self.status_vcpus("vs-lv-off")
        self.assertEqual({frozenset(os.sched_getaffinity(t)) for t in vstest.threads_of(off_pid)
                          if t not in off_vcpus},
                         {frozenset(os.sched_getaffinity(off_pid))})

    def set_meta(self, xml):
        self.virsh("metadata", "vs-lv-on", NS_URI, "--key", "vs", "--set", xml, "--live")

    def test_b_live_metadata_sets_weight(self):
        self.set_meta('<sched policy="credit" weight="512"/>')
        t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["params"]["weight"] == "512")
        self.assertIsNotNone(t, f"weight not 512 within {APPLY_S} s: {dom}")
        print(f"\n# metadata change applied in {t:.3f} s")

    def test_b_z_live_metadata_sets_class(self):
        self.set_meta('<sched policy="credit" weight="512" class="background"/>')
        t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["class"] == "background")
        self.assertIsNotNone(t, f"not background within {APPLY_S} s: {dom}")
        self.assertEqual([v["class"] for v in dom["vcpus"]], ["background"] * 2)
        self.assertEqual(dom["params"], {"weight": "512", "cap": "0", "class": "background"})
        before = self.daemon.read_log()
        self.set_meta('<sched policy="credit" weight="512" class="idle"/>')
        self.assertIsNotNone(vstest.wait_until(lambda: re.search(
            r"not applied.*class: 'idle' is not foreground or background",
            self.daemon.read_log()[len(before):]), 3, step=0.1), "no error logged for class=idle")
        self.assertEqual(self.domain("vs-lv-on")["class"], "background")
        self.set_meta('<sched policy="credit" weight="512" class="foreground"/>')
        t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["class"] == "foreground")
        self.assertIsNotNone(t, f"not foreground again within {APPLY_S} s: {dom}")
        self.assertEqual(self.daemon.json("stats")["pools"][0]["bg_domains"], 0)

    @unittest.skipIf(os.cpu_count() < 3, "a second pool needs a third CPU")
    def test_b2_metadata_moves_domain_between_pools(self):
        self.daemon.ctl("pool", "create", "p2", "cpus=2", "policy=credit2")
        try:
            self.set_meta('<sched pool="p2" cap="50"/>')
            t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["pool"] == "p2")
            self.assertIsNotNone(t, f"not moved to p2: {dom}")
            # Metadata is the whole setting: the weight it omits is the default.
            self.assertEqual((dom["policy"], dom["params"]["weight"], dom["params"]["cap"]),
                             ("credit2", "256", "50"))
            self.assertEqual(len(dom["vcpus"]), 2)
            self.set_meta('<sched pool="main" policy="credit" weight="512"/>')
            t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["pool"] == "main")
            self.assertIsNotNone(t, f"not moved back: {dom}")
        finally:
            self.daemon.ctl("pool", "destroy", "p2", check=False)

    def test_c_invalid_metadata_changes_nothing(self):
        cases = [('<sched policy="credit" weight="0"/>', r"not applied.*weight"),
                 ('<sched policy="credit" weight="lots"/>', r"not applied.*weight"),
                 ('<sched policy="Credit!"/>', r"invalid vcpusched metadata.*policy"),
                 ('<sched pool="nope" weight="64"/>', r"not applied.*no pool nope"),
                 ('<sched policy="credit" weight="9" weight="10"/>', None)]
        for xml, pattern in cases:
            with self.subTest(xml=xml):
                before = self.daemon.read_log()
                r = self.virsh("metadata", "vs-lv-on", NS_URI, "--key", "vs", "--set", xml,
                               "--live", check=False)
                if pattern is None:  # libvirt itself refuses it
                    self.assertNotEqual(r.returncode, 0)
                else:
                    self.assertIsNotNone(
                        vstest.wait_until(lambda: re.search(
                            pattern, self.daemon.read_log()[len(before):]), 3, step=0.1),
                        f"no error logged for {xml}: {self.daemon.read_log()[len(before):]}")
                dom = self.domain("vs-lv-on")
                self.assertEqual(dom["params"]["weight"], "512")
                self.assertEqual(dom["policy"], "credit")
                self.assertEqual(len(dom["vcpus"]), 2)
        self.set_meta('<sched policy="credit" weight="512"/>')  # valid again

    def test_c2_metadata_is_declarative(self):
        # The element is the domain's whole setting: what it omits is the
        # default, at once (and at every start: test_f).
        self.set_meta('<sched policy="credit" weight="512" cap="30" class="background"/>')
        t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["params"]["cap"] == "30")
        self.assertIsNotNone(t, f"cap not 30: {dom}")
        self.set_meta('<sched policy="credit" weight="512"/>')
        t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["params"]["cap"] == "0")
        self.assertIsNotNone(t, f"the cap stayed when the metadata dropped it: {dom}")
        self.assertEqual((dom["params"]["weight"], dom["class"]), ("512", "foreground"))
        # A policy no pool runs is a preference: the domain stays managed in
        # its pool, with the parameters that pool's policy knows, and the
        # log says so.
        before = self.daemon.read_log()
        self.set_meta('<sched policy="rr" weight="384" slice_ms="5"/>')
        t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["params"]["weight"] == "384")
        self.assertIsNotNone(t, f"not applied in pool main: {dom}")
        self.assertEqual((dom["pool"], dom["policy"]), ("main", "credit"))
        self.assertRegex(self.daemon.read_log()[len(before):],
                         r"vs-lv-on: no pool runs policy rr: pool main \(credit\); left out: slice_ms")
        self.set_meta('<sched policy="credit" weight="512"/>')
        t, _ = self.wait_domain("vs-lv-on", lambda d: d and d["params"]["weight"] == "512")
        self.assertIsNotNone(t)

    def test_d_destroy_detaches(self):
        self.create("vs-lv-tmp", "weight=128 class=background")
        pid, tids = self.status_vcpus("vs-lv-tmp")
        dom = self.domain("vs-lv-tmp")
        self.assertIsNotNone(dom)
        self.assertEqual(dom["class"], "background")  # through the hook
        self.virsh("destroy", "vs-lv-tmp")
        t, _ = self.wait_domain("vs-lv-tmp", lambda d: d is None)
        self.assertIsNotNone(t, "still attached after virsh destroy")
        self.assertIsNotNone(vstest.wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 10))
        for t in tids:
            self.assertFalse(os.path.exists(f"/proc/{pid}/task/{t}"))
        _, off = self.status_vcpus("vs-lv-off")
        for t in off:
            self.assertFalse(vstest.is_fifo(t))

    def test_e_libvirtd_restart_reconnects(self):
        self.lv("restart")
        self.assertIsNotNone(self.log_wait(r"libvirt: reconnected to", 20),
                             f"no reconnect logged: {self.daemon.read_log()[-2000:]}")
        self.assert_attached_like_status("vs-lv-on", "libvirt")  # reconnect: already attached
        self.set_meta('<sched policy="credit" weight="1024"/>')
        t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["params"]["weight"] == "1024")
        self.assertIsNotNone(t, f"weight not 1024 after the restart: {dom}")

    def test_f_daemon_started_after_domain_resyncs(self):
        self.daemon.cleanup()
        self.__class__.daemon = None
        _, tids = self.status_vcpus("vs-lv-on")
        for t in tids:
            self.assertFalse(vstest.is_fifo(t), "daemon stop must release the threads")
        self.start_daemon()
        t, _ = self.wait_domain("vs-lv-on", lambda d: d is not None, timeout=10)
        self.assertIsNotNone(t, f"not attached by resync: {self.daemon.read_log()[-2000:]}")
        self.assert_attached_like_status("vs-lv-on", "libvirt")
        self.assertEqual(self.domain("vs-lv-on")["params"], {"weight": "1024", "cap": "0"})
        self.assertIsNone(self.domain("vs-lv-off"))
        # `vcpuschedctl attach --libvirt` reads the same status file.
        self.daemon.ctl("attach", "off2", "--libvirt", "vs-lv-off")
        _, off = self.status_vcpus("vs-lv-off")
        self.assertEqual([v["tid"] for v in self.domain("off2")["vcpus"]], off)
        self.daemon.ctl("detach", "off2")
        # Metadata removed: detached.
        self.virsh("metadata", "vs-lv-on", NS_URI, "--remove", "--live")
        t, _ = self.wait_domain("vs-lv-on", lambda d: d is None)
        self.assertIsNotNone(t, "still attached after the metadata was removed")
        for t in tids + off:
            self.assertFalse(vstest.is_fifo(t))
        # Detached: its QEMU's other threads have libvirt's affinity back.
        pid, _ = self.status_vcpus("vs-lv-on")
        for t in vstest.threads_of(pid):
            if t not in tids:
                self.assertEqual(os.sched_getaffinity(t), os.sched_getaffinity(pid), f"thread {t}")
                self.assertIn(MANAGED_CPU, os.sched_getaffinity(t), f"thread {t}")

    def unattached(self):
        return {d["domain"]: d for d in self.daemon.json("stats")["libvirt_unattached"]["domains"]}

    def test_f_z_opted_in_but_not_managed_is_reported(self):
        # vs-lv-on runs, detached (test_f). Opted in with what no pool runs,
        # then with metadata that does not parse: listed with the reason, in
        # `stats` and as a metric; opted in as it can be: managed, unlisted.
        for xml, reason, error in (('<sched pool="nope"/>', "pool", "no pool nope"),
                                   ('<sched policy="Credit!"/>', "metadata", "policy")):
            with self.subTest(reason=reason):
                self.set_meta(xml)
                self.assertIsNotNone(vstest.wait_until(
                    lambda: self.unattached().get("vs-lv-on", {}).get("reason") == reason,
                    APPLY_S, step=0.05), f"not listed for {reason}: {self.unattached()}")
                entry = self.unattached()["vs-lv-on"]
                self.assertIn(error, entry["error"])
                self.assertIsNone(self.domain("vs-lv-on"))
                text = self.daemon.ctl("stats").stdout
                self.assertRegex(text, rf"libvirt domain vs-lv-on: opted in, not managed for "
                                       rf"\d+ s \({reason}\): .*{re.escape(error)}")
                prom = self.daemon.ctl("stats", "--prometheus").stdout
                self.assertIn(f'vcpusched_libvirt_unattached{{domain="vs-lv-on",reason="{reason}"}} 1',
                              prom)
        self.set_meta('<sched policy="credit" weight="256"/>')
        t, _ = self.wait_domain("vs-lv-on", lambda d: d is not None)
        self.assertIsNotNone(t, "not attached with valid metadata")
        self.assertNotIn("vs-lv-on", self.unattached())
        self.virsh("metadata", "vs-lv-on", NS_URI, "--remove", "--live")
        t, _ = self.wait_domain("vs-lv-on", lambda d: d is None)
        self.assertIsNotNone(t, "still attached after the metadata was removed")
        self.assertEqual(self.unattached(), {})

    def wait_vcpus_like_status(self, name, n):
        """Wait until libvirt's status file lists n vCPU threads, then until
        the daemon manages exactly those; returns (seconds from the status
        file's change to the daemon's, the tids)."""
        got = [None]

        def status_has_n():
            got[0] = self.status_vcpus(name)[1]
            return len(got[0]) == n
        self.assertIsNotNone(vstest.wait_until(status_has_n, 60, step=0.02),
                             f"libvirt never listed {n} vcpus of {name}: {got[0]}")
        t0, tids = time.monotonic(), got[0]
        t, dom = self.wait_domain(name, lambda d: d and [v["tid"] for v in d["vcpus"]] == tids,
                                  timeout=10)
        self.assertIsNotNone(t, f"{name}: daemon has {dom}, libvirt {tids}: "
                                f"{self.daemon.read_log()[-2000:]}")
        return time.monotonic() - t0, tids

    def test_g_vcpu_hotplug_and_unplug(self):
        # Kernel messages on the console: the test waits for the guest to
        # take the new CPU before it asks for the unplug.
        self.create("vs-lv-hp", "policy=credit weight=384", smp=2, current=1,
                    extra="vs.debug=1 loglevel=7")
        self.addCleanup(self.virsh, "destroy", "vs-lv-hp", check=False)
        _, (first,) = self.status_vcpus("vs-lv-hp")
        dom = self.domain("vs-lv-hp")
        self.assertEqual([v["tid"] for v in dom["vcpus"]], [first])
        # The guest must be up to answer the unplug (ACPI eject).
        log = os.path.join(self.T, "vs-lv-hp.log")
        self.assertIsNotNone(vstest.wait_until(
            lambda: os.path.exists(log) and "VS-READY" in vstest.read(log), 60, step=0.2))
        run_before = self.domain("vs-lv-hp")["vcpus"][0]["run_ns"]

        self.virsh("setvcpus", "vs-lv-hp", "2", "--live")
        took, tids = self.wait_vcpus_like_status("vs-lv-hp", 2)
        print(f"\n# setvcpus 2 --live: managed {took:.3f} s after the status file listed it")
        vstest.within(self, "hot-plugged vCPU managed (s)", took, hi=HOTPLUG_S)
        dom = self.domain("vs-lv-hp")
        self.assertEqual(dom["params"]["weight"], "384")
        self.assertEqual(dom["vcpus"][0]["tid"], first)
        self.assertGreaterEqual(dom["vcpus"][0]["run_ns"], run_before)  # not reset
        for t in tids:
            self.assertTrue(vstest.is_fifo(t), f"vcpu thread {t} is not SCHED_FIFO")

        # An eject request that arrives while the guest still handles the
        # insertion is lost: wait for the guest to have the CPU. libvirt
        # waits up to 5 s for QEMU to report the removal, so virsh runs
        # beside the test, which watches the thread itself.
        self.assertIsNotNone(vstest.wait_until(
            lambda: "CPU1 has been hot-added" in vstest.read(log), 30, step=0.1),
            f"the guest never took the new CPU: {vstest.read(log)[-1500:]}")
        time.sleep(0.5)
        pid, _ = self.status_vcpus("vs-lv-hp")
        gone = tids[1]
        virsh = subprocess.Popen([LV, "virsh", "-q", "setvcpus", "vs-lv-hp", "1", "--live"],
                                 env=self.env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        self.addCleanup(virsh.wait)
        # QEMU 7.2 may not tell libvirt that the unplug completed (the status
        # file then keeps the vCPU): the thread's exit says it.
        self.assertIsNotNone(vstest.wait_until(
            lambda: not os.path.exists(f"/proc/{pid}/task/{gone}"), 60, step=0.02),
            f"vcpu thread {gone} still there: {vstest.read(log)[-1500:]}")
        t0 = time.monotonic()
        t, dom = self.wait_domain("vs-lv-hp", lambda d: d and [v["tid"] for v in d["vcpus"]] ==
                                  [first], timeout=10)
        self.assertIsNotNone(t, f"unplugged vcpu not dropped: {dom}")
        took = time.monotonic() - t0
        print(f"# setvcpus 1 --live: dropped {took:.3f} s after its thread exited")
        vstest.within(self, "unplugged vCPU released (s)", took, hi=HOTPLUG_S)
        self.assertTrue(vstest.is_fifo(first))
        self.virsh("destroy", "vs-lv-hp")

    @staticmethod
    def v2_group(tid):
        return [line[3:] for line in vstest.read(f"/proc/{tid}/cgroup").splitlines()
                if line.startswith("0::")][0]

    def test_h_v2_parking_in_libvirts_vcpu_groups(self):
        v2 = next((line.split()[1] for line in vstest.read("/proc/self/mounts").splitlines()
                   if line.split()[2] == "cgroup2"), None)
        if v2 is None:
            self.skipTest("no cgroup2 hierarchy")
        self.daemon.cleanup()
        self.__class__.daemon = None
        self.start_daemon("--park", "v2")
        self.create("vs-lv-cap", "policy=credit cap=10", role="hog")
        pid, tids = self.status_vcpus("vs-lv-cap")
        groups, alone = {}, {}
        for t in tids:
            groups[t] = v2 + self.v2_group(t)
            # libvirt's own, threaded; a vCPU thread alone there is frozen in
            # place (with KVM, vcpu0 may hold KVM's nx-lpage-recovery task too:
            # then a threaded child group of ours).
            self.assertEqual(vstest.read(f"{groups[t]}/cgroup.type").strip(), "threaded")
            alone[t] = vstest.read(f"{groups[t]}/cgroup.threads").split() == [str(t)]
        self.assertTrue(any(alone.values()), groups)
        dom_group = os.path.dirname(groups[tids[0]])

        def park_group(t):
            return groups[t] if alone[t] else f"{groups[t]}/vcpusched-park-{t}"

        def frozen(t):
            try:
                return vstest.read(f"{park_group(t)}/cgroup.freeze").strip() == "1"
            except OSError:
                return False

        # The guest's hog runs on one vCPU, parked 90 % of the time (an idle
        # vCPU is never parked, as in Xen).
        self.assertIsNotNone(vstest.wait_until(lambda: any(frozen(t) for t in tids), 5.0),
                             f"no vCPU group ever frozen: {groups} "
                             f"{self.daemon.json('stats')['pools'][0]}")
        # Frozen in place: no group of ours, the threads where libvirt put them.
        for t in tids:
            if alone[t]:
                self.assertEqual(v2 + self.v2_group(t), groups[t])
                self.assertFalse([d for d in os.listdir(groups[t]) if os.path.isdir(
                    os.path.join(groups[t], d))], groups[t])
        self.assertEqual(self.daemon.json("stats")["pools"][0]["actuator_errors"], 0)
        # kill -9: the guardian thaws libvirt's groups within a second.
        self.daemon.kill9()
        took = vstest.wait_until(lambda: not any(
            frozen(t) or vstest.is_fifo(t) or v2 + self.v2_group(t) != groups[t] for t in tids),
            1.0)
        self.assertIsNotNone(took, "vCPU threads not thawed and back 1 s after kill -9")
        self.daemon.cleanup()
        self.__class__.daemon = None
        # A new daemon attaches it again (resync) and parks it; destroyed
        # while parked, it goes, and libvirt can remove all its groups.
        self.start_daemon("--park", "v2")
        t, _ = self.wait_domain("vs-lv-cap", lambda d: d is not None, timeout=10)
        self.assertIsNotNone(t, "not attached again by resync")
        self.assertIsNotNone(vstest.wait_until(lambda: any(frozen(t) for t in tids), 5.0))
        self.virsh("destroy", "vs-lv-cap")
        t, _ = self.wait_domain("vs-lv-cap", lambda d: d is None)
        self.assertIsNotNone(t, "still attached after virsh destroy")
        self.assertIsNotNone(vstest.wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 10))
        self.assertIsNotNone(vstest.wait_until(lambda: not os.path.exists(dom_group), 10),
                             f"{dom_group} left behind: {list(os.walk(dom_group))}")


if __name__ == "__main__":
    unittest.main()
