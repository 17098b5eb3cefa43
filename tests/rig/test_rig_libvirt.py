# SPDX-License-Identifier: ISC
"""libvirt on a systemd, cgroup-v2-only host, in the rig VM: the system
libvirtd (socket-activated by systemd), the hook the package linked and
the packaged service. A domain opted in by its metadata (a 2-vCPU hog, the
tiny guest nested under TCG) is attached by the hook at `virsh create`,
its vCPU threads in libvirt's per-vCPU cgroups; `virsh metadata` changes
its weight live; what the daemon charges its vCPUs is what they ran; a
cap parks it through cgroup.freeze in libvirt's vcpuN cgroup; `virsh
destroy` detaches it. The steps run in order (a to e) and share the
domain; the service tests run before them."""

import os
import re
import tempfile
import time
import unittest

import vstest
from rigtest import ctl_json, run

NS_URI = "https://vcpusched.org/xmlns/1"
DOM = "rig-lv"
APPLY_S = 10.0  # a metadata change shows in `list` within this (TCG)
def virsh(*args, check=True):
    return run("virsh", "-q", "-c", "qemu:///system", *args, check=check, timeout=300)


def status_vcpus():
    """(QEMU pid, vCPU tids in vCPU order) from libvirt's status file."""
    xml = vstest.read(f"/run/libvirt/qemu/{DOM}.xml")
    pid = int(re.search(r"<domstatus [^>]*pid='(\d+)'", xml).group(1))
    vcpus = sorted((int(i), int(t)) for i, t in re.findall(r"<vcpu id='(\d+)' pid='(\d+)'/>", xml))
    return pid, [t for _, t in vcpus]


def domain():
    return next((d for d in ctl_json("list")["domains"] if d["name"] == DOM), None)


def thread_cgroup(tid):
    """The cgroup v2 directory of one thread."""
    line = vstest.read(f"/proc/{tid}/cgroup").strip()
    assert line.startswith("0::"), line
    return "/sys/fs/cgroup" + line[3:]


def destroy():
    if virsh("domstate", DOM, check=False).returncode == 0:
        virsh("destroy", DOM, check=False)


class LibvirtTest(unittest.TestCase):
    tmp = None

    def setUp(self):
        vstest.pin_self_to_housekeeping()

    def wait_domain(self, pred, timeout=APPLY_S):
        last = [None]

        def ok():
            last[0] = domain()
            return pred(last[0])
        return vstest.wait_until(ok, timeout, step=0.1), last[0]

    def test_a_hook_attaches_opted_in_domain(self):
        cls = self.__class__
        cls.tmp = tempfile.mkdtemp(prefix="vcpusched-rig-lv.")
        os.chmod(cls.tmp, 0o755)  # QEMU (libvirt-qemu) writes its serial log here
        unittest.addModuleCleanup(destroy)
        # The tiny guest's image, built on the host before boot (rig.sh).
        img = {k: os.environ[k] for k in ("VS_KERNEL", "VS_INITRD")}
        xml = os.path.join(cls.tmp, f"{DOM}.xml")
        run(os.path.join(vstest.SRC, "vm-images", "mkdomxml"), "--kernel", img["VS_KERNEL"],
            "--initrd", img["VS_INITRD"], "--name", DOM, "--role", "hog", "--smp", "2",
            "--emulator-cpus", "0", "--vs-sched", "policy=credit weight=256",
            "--serial", os.path.join(cls.tmp, f"{DOM}.log"), "-o", xml)
        t0 = time.monotonic()
        virsh("version")  # the first call probes QEMU's capabilities (slow under TCG)
        t1 = time.monotonic()
        virsh("create", xml)
        print(f"# first virsh call {t1 - t0:.1f} s, virsh create {time.monotonic() - t1:.1f} s",
              flush=True)
        pid, tids = status_vcpus()
        self.assertEqual(len(tids), 2)
        # The hook ran inside `virsh create` (started begin). The hook and the
        # daemon's watcher end in the same code (source "libvirt"): the hook's
        # own journal line shows it attached the domain, not the watcher.
        dom = domain()
        self.assertIsNotNone(dom, f"{DOM} not attached: {ctl_json('list')}")
        self.assertEqual((dom["source"], dom["pid"], dom["pool"]), ("libvirt", pid, "main"))

        def hook_said():
            return f"domain {DOM} started: attached" in run(
                "journalctl", "-q", "-o", "cat", "-t", "vcpusched-hook", check=False).stdout
        self.assertIsNotNone(vstest.wait_until(hook_said, 10, step=0.5),
                             "no 'started: attached' from vcpusched-hook in the journal")
        self.assertEqual([v["tid"] for v in dom["vcpus"]], tids)
        self.assertEqual(dom["params"]["weight"], "256")
        for i, t in enumerate(tids):
            self.assertTrue(vstest.is_fifo(t), f"vCPU {i} thread {t} is not SCHED_FIFO")
            self.assertLessEqual(os.sched_getaffinity(t), {1, 2, 3})
            # libvirt's layout on a systemd, cgroup v2 host.
            cg = thread_cgroup(t)
            self.assertRegex(cg, r"^/sys/fs/cgroup/machine\.slice/machine-qemu\\x2d\d+\\x2d"
                             r"rig\\x2dlv\.scope/libvirt/vcpu" + str(i) + "$")
            self.assertEqual(vstest.read(f"{cg}/cgroup.type").strip(), "threaded")

    def set_meta(self, attrs):
        virsh("metadata", DOM, NS_URI, "--key", "vs", "--set", f"<sched {attrs}/>", "--live")

    def test_b_metadata_changes_weight_live(self):
        self.set_meta('policy="credit" weight="512"')
        t, dom = self.wait_domain(lambda d: d and d["params"]["weight"] == "512")
        self.assertIsNotNone(t, f"weight not 512 within {APPLY_S} s: {dom}")
        print(f"# metadata change applied in {t:.3f} s", flush=True)

    def test_c_charged_time_is_what_the_kernel_says(self):
        # Over 10 s of the guest booting, what the daemon charged each vCPU
        # is what the kernel says it ran (within 10 %). Records reach the
        # pool late in a 3-CPU pool under TCG: charged per interval, an open
        # run was charged past its end again at each switch (up to 125x).
        def both():
            return {v["tid"]: (v["run_ns"], vstest.run_ns(v["tid"])) for v in domain()["vcpus"]}

        def counters():  # what the printout explains the figures with
            try:
                st = ctl_json("stats")
            except RuntimeError as e:  # the control thread may starve (known bug below)
                print(f"# no stats: {e}", flush=True)
                return None
            pool = next(p for p in st["pools"] if p["name"] == "main")
            return {k: pool[k] for k in ("charge_overshoot_ns", "charge_overshoot_max_ns",
                                         "charge_stale_runs")} | {
                k: st["event_source"][k] for k in ("records", "inferred", "lost")}

        c0, before = counters(), both()
        time.sleep(10)
        after, c1 = both(), counters()
        if c0 and c1:
            print("# over the 10 s: " + ", ".join(f"{k} +{c1[k] - c0[k]}" for k in c0), flush=True)
        res = {}
        for tid, (charged, kernel) in after.items():
            res[tid] = (charged - before[tid][0], kernel - before[tid][1])
            print(f"# vCPU thread {tid}, 10 s: charged {res[tid][0] / 1e9:.3f} s, "
                  f"the kernel says {res[tid][1] / 1e9:.3f} s", flush=True)
        for tid, (charged, kernel) in res.items():
            vstest.within(self, f"thread {tid}: charged run time (s)", charged / 1e9,
                          lo=(kernel * 0.9 - 10_000_000) / 1e9, hi=(kernel * 1.1 + 10_000_000) / 1e9,
                          scale=kernel * 0.1 / 1e9, why="what the kernel says it ran, +-10 %")

    def test_d_cap_parks_through_cgroup_freeze(self):
        _, tids = status_vcpus()
        cgs = [thread_cgroup(t) for t in tids]
        self.set_meta('policy="credit" weight="512" cap="10"')

        def frozen_now():
            return [cg for cg in cgs
                    if "frozen 1" in vstest.read(f"{cg}/cgroup.events").splitlines()]

        seen = vstest.wait_until(frozen_now, 3 * APPLY_S, step=0.01)
        self.assertIsNotNone(seen, f"no vcpuN cgroup frozen within {APPLY_S} s under cap=10: "
                             f"{domain()}")
        parks = sum(v["policy"].get("parks", 0) for v in domain()["vcpus"])
        self.assertGreater(parks, 0)
        print(f"# cap=10: frozen {frozen_now()} after {seen:.3f} s, parks {parks}", flush=True)
        # Without the cap nothing stays frozen.
        self.set_meta('policy="credit" weight="512" cap="0"')
        self.assertIsNotNone(vstest.wait_until(lambda: not frozen_now(), APPLY_S, step=0.05),
                             "still frozen after cap=0")
        for t in tids:
            self.assertTrue(vstest.is_fifo(t))

    def test_e_destroy_detaches(self):
        pid, tids = status_vcpus()
        virsh("destroy", DOM)
        t, _ = self.wait_domain(lambda d: d is None)
        self.assertIsNotNone(t, "still attached after virsh destroy")
        self.assertIsNotNone(vstest.wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 30))


if __name__ == "__main__":
    unittest.main()
