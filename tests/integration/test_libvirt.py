# SPDX-License-Identifier: ISC
"""libvirt integration on real parts: a private libvirtd in a mount
namespace (libvirtd-private.sh) with the vcpusched hook installed, a
private vcpuschedd inside that namespace (so that it sees the private
/run/libvirt and the hook finds it at the default socket path), and real
TCG guests from vm-images. The steps run in order and share the guests:
(a) the hook attaches an opted-in domain at `virsh create`, a domain
without metadata is untouched; (b) `virsh metadata --live` changes a weight;
(c) invalid metadata changes nothing and is logged; (d) destroy detaches;
(e) libvirtd restarted: the watcher reconnects and still applies changes;
(f) a daemon started after the domain attaches it (resync).

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
from vstest import Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
LV = os.path.join(HERE, "libvirtd-private.sh")
MKDOMXML = os.path.join(vstest.SRC, "vm-images", "mkdomxml")
BUILD_IMAGE = os.path.join(vstest.SRC, "vm-images", "build-image.sh")
INSTALL = os.path.join(vstest.SRC, "libvirt-hooks", "install.sh")
HOOK = os.path.join(vstest.BUILD, "libvirt-hooks", "vcpusched-hook")
NS_URI = "https://vcpusched.org/xmlns/1"
APPLY_S = 2.0  # a metadata change must show in `list` within this


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
    def lv(cls, *args, check=True):
        r = subprocess.run([LV, *args], env=cls.env, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError(f"libvirtd-private.sh {' '.join(args)}: {r.stderr}{r.stdout}")
        return r

    @classmethod
    def start_daemon(cls):
        cls.daemon = NsDaemon(cls.ns, cls.rundir, policy="credit").start()

    @classmethod
    def virsh(cls, *args, check=True):
        return cls.lv("virsh", "-q", *args, check=check)

    @classmethod
    def create(cls, name, vs_sched=None, smp=2):
        args = [MKDOMXML, "--kernel", cls.image["VS_KERNEL"], "--initrd", cls.image["VS_INITRD"],
                "--name", name, "--role", "idle", "--smp", str(smp), 
                "--serial", os.path.join(cls.T, f"{name}.log"),
                "-o", os.path.join(cls.T, f"{name}.xml")]
        if vs_sched:
            args += ["--vs-sched", vs_sched]
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
        # The hook ran inside `virsh create` (started begin): attached by tids.
        self.assert_attached_like_status("vs-lv-on", "tids")
        self.assertEqual(self.domain("vs-lv-on")["params"]["weight"], "256")
        self.assertIsNone(self.domain("vs-lv-off"))
        _, off = self.status_vcpus("vs-lv-off")
        for t in off:
            self.assertFalse(vstest.is_fifo(t), f"vs-lv-off thread {t} is SCHED_FIFO")

    def set_meta(self, xml):
        self.virsh("metadata", "vs-lv-on", NS_URI, "--key", "vs", "--set", xml, "--live")

    def test_b_live_metadata_sets_weight(self):
        self.set_meta('<sched policy="credit" weight="512"/>')
        t, dom = self.wait_domain("vs-lv-on", lambda d: d and d["params"]["weight"] == "512")
        self.assertIsNotNone(t, f"weight not 512 within {APPLY_S} s: {dom}")
        print(f"\n# metadata change applied in {t:.3f} s")

    def test_c_invalid_metadata_changes_nothing(self):
        cases = [('<sched policy="credit" weight="0"/>', r"not applied.*weight"),
                 ('<sched policy="credit" weight="lots"/>', r"not applied.*weight"),
                 ('<sched policy="Credit!"/>', r"invalid vcpusched metadata.*policy"),
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

    def test_d_destroy_detaches(self):
        self.create("vs-lv-tmp", "weight=128")
        pid, tids = self.status_vcpus("vs-lv-tmp")
        self.assertIsNotNone(self.domain("vs-lv-tmp"))
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
        self.assert_attached_like_status("vs-lv-on", "tids")  # the reconnect hook: EEXIST
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
        self.assertEqual(self.domain("vs-lv-on")["params"]["weight"], "1024")
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


if __name__ == "__main__":
    unittest.main()
