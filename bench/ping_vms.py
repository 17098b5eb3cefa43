# SPDX-License-Identifier: ISC
"""The guests of the ping benchmark and the two ways to run them.

LibvirtHost: every guest is a libvirt domain made by vm-images/mkdomxml,
opted in to vcpusched with the <vs:sched/> metadata element and attached by
the installed hook when it starts; domain parameters change with `virsh
metadata --live`, opting out is `virsh metadata --remove --live`, the cgroup
CPU weight is `virsh schedinfo --live cpu_shares=N`, libvirt's own
<vcpusched> goes in the definition. The libvirtd is the system's when it is
usable (it answers on qemu:///system, the vcpusched hook is installed in
/etc/libvirt/hooks/qemu.d, nothing serves /run/vcpusched/control.sock,
where the hook looks for the benchmark's daemon, and it has no domain,
running or defined: the benchmark never touches a domain it did not
create), else a private one in a
mount namespace of its own (tests/integration/libvirtd-private.sh) with the
hook from the build installed there.

QemuHost: bare QEMU (vm-images/run-guest), attached over QMP with
vcpuschedctl; what libvirt does is done with the same system calls.

Both give Guest objects: name, role, QEMU pid, vCPU and other threads, the
serial log the guest's VS- lines go to."""

import json
import os
import re
import signal
import subprocess
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VM = os.path.join(SRC, "vm-images")
LV_PRIVATE = os.path.join(SRC, "tests", "integration", "libvirtd-private.sh")
HOOK_INSTALL = os.path.join(SRC, "libvirt-hooks", "install.sh")
NS_URI = "https://vcpusched.org/xmlns/1"
SYSTEM_SOCKET = "/run/vcpusched/control.sock"
SYSTEM_HOOK = "/etc/libvirt/hooks/qemu.d/50-vcpusched"
MANAGED, HOUSEKEEPING = "1", "0"
VCPU_COMM = re.compile(r"^CPU \d+/(TCG|KVM)$")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True, file=__import__("sys").stderr)


def run(cmd, check=True, timeout=120, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: "
                           f"{(r.stderr or r.stdout).strip()[-800:]}")
    return r


def threads(pid):
    """{tid: comm} of a process; {} once it is gone."""
    out = {}
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/comm") as f:
                    out[int(t)] = f.read().strip()
            except OSError:
                pass
    except OSError:
        pass
    return out


def run_ns(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


class Guest:
    """One running guest. `spec` holds what made it (role, addresses,
    kernel command line, libvirt's <vcpusched>, the metadata it started with)."""

    def __init__(self, name, role, serial, pid, spec):
        self.name, self.role, self.serial, self.pid, self.spec = name, role, serial, pid, spec
        self.qmp = spec.get("qmp")

    def vcpus(self):
        return sorted(t for t, c in threads(self.pid).items() if VCPU_COMM.match(c))

    def others(self):
        return sorted(t for t, c in threads(self.pid).items() if not VCPU_COMM.match(c))

    def alive(self):
        return os.path.exists(f"/proc/{self.pid}")

    def cpu_ns(self):
        """(vCPU ns, other threads ns) run so far."""
        v = o = 0
        for t, c in threads(self.pid).items():
            if VCPU_COMM.match(c):
                v += run_ns(self.pid, t)
            else:
                o += run_ns(self.pid, t)
        return v, o


def vs_lines(path):
    """The guest's VS- lines (serial console), kernel noise removed."""
    try:
        with open(path, errors="replace") as f:
            return [l.rstrip("\r\n") for l in f if l.startswith("VS-")]
    except FileNotFoundError:
        return []


def wait_line(guest, prefix, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for l in vs_lines(guest.serial):
            if l.startswith(prefix):
                return l
            if l.startswith("VS-ERROR"):
                raise RuntimeError(f"{guest.name}: {l}")
        time.sleep(0.1)
    raise RuntimeError(f"{guest.name}: no {prefix} within {timeout} s: "
                       f"{vs_lines(guest.serial)[-5:]}")


class Daemon:
    """A vcpuschedd for one block of runs (one background, one repetition)."""

    def __init__(self, build, sock, argv_prefix, args, logpath):
        self.build, self.sock = build, sock
        with open(logpath, "ab") as logf:
            self.proc = subprocess.Popen(argv_prefix + [
                os.path.join(build, "vcpusched", "vcpuschedd"), "--foreground"] + args,
                stdout=logf, stderr=logf)
        self.log = logpath
        deadline = time.monotonic() + 15
        while self.ctl("version", check=False).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"vcpuschedd did not start (see {logpath})")
            time.sleep(0.05)

    def ctl(self, *args, check=True):
        r = subprocess.run([os.path.join(self.build, "vcpusched", "vcpuschedctl"),
                            "--socket", self.sock, *args], capture_output=True, text=True,
                           timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError(f"vcpuschedctl {' '.join(args)}: {r.stderr.strip()}")
        return r

    def json(self, *args):
        # `help` prints the CLI's usage before the daemon's answer
        out = self.ctl("--json", *args).stdout.splitlines()
        return json.loads(next(l for l in reversed(out) if l.startswith("{")))

    def domains(self):
        return {d["name"]: d for d in self.json("list")["domains"]}

    def dom_defaults(self, policy):
        """Every domain parameter of `policy` at its default, {key: text}."""
        for p in self.json("help")["policies"]:
            if p["name"] == policy:
                out = {x["name"]: str(x["default"]) for x in p.get("dom_params") or []
                       if x["type"] in ("int", "bool")}
                if any(x["name"] == "class" for x in p.get("dom_params") or []):
                    out["class"] = "foreground"  # the background class (a string)
                return out
        raise RuntimeError(f"the daemon has no policy {policy}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class QemuHost:
    """Bare QEMU guests, attached over QMP."""

    mode = "qemu"
    describe = "bare QEMU (vm-images/run-guest), attached over QMP by vcpuschedctl"

    def __init__(self, bench):
        self.b = bench
        self.daemon = None

    def start_daemon(self, args):
        self.daemon = Daemon(self.b.build, os.path.join(self.b.dir, "control.sock"), [],
                             ["--socket", os.path.join(self.b.dir, "control.sock"),
                              "--state", os.path.join(self.b.dir, "state"), "--libvirt", "none"]
                             + args, os.path.join(self.b.dir, "vcpuschedd.log"))
        return self.daemon

    def start(self, name, role, meta=None, vcpusched=None, pin=True, **kw):
        """A QEMU, vCPU on MANAGED; the whole process on HOUSEKEEPING first
        when `pin` (what libvirt's `<emulatorpin>` does), else unpinned."""
        serial = os.path.join(self.b.dir, f"{name}.log")
        pidfile = os.path.join(self.b.dir, f"{name}.pid")
        qmp = os.path.join(self.b.dir, f"{name}.qmp")
        for f in (serial, qmp):
            if os.path.exists(f):
                os.unlink(f)
        args = [os.path.join(VM, "run-guest"), "--name", name, "--role", role,
                "--serial", serial, "--pidfile", pidfile, "--qmp", qmp, "--smp", "1",
                "--mem", "128", "--accel", self.b.accel,
                "--vcpu-affinity", MANAGED, "--kernel", self.b.kernel, "--initrd", self.b.initrd]
        args += ["--cpu-affinity", HOUSEKEEPING] if pin else []
        args += guest_args(kw)
        pid = int(run(args).stdout.split()[-1])
        g = Guest(name, role, serial, pid, dict(kw, qmp=qmp, pidfile=pidfile,
                                               vcpusched=vcpusched))
        if vcpusched:  # what libvirt's <vcpusched> does at start
            set_sched(g.vcpus(), *vcpusched)
        if meta is not None and self.daemon:
            deadline = time.monotonic() + 10
            while not os.path.exists(qmp) and time.monotonic() < deadline:
                time.sleep(0.02)
            self.opt_in(g, meta)
        return g

    def stop(self, g):
        run([os.path.join(VM, "stop-guest"), g.spec["pidfile"]], check=False)

    def opt_in(self, g, params):
        kv = [f"{k}={v}" for k, v in params.items()]
        if g.name in self.daemon.domains():
            if kv:
                self.daemon.ctl("set", g.name, *kv)
        else:
            self.daemon.ctl("attach", g.name, "--qmp", g.qmp, *kv)

    def opt_out(self, g):
        if g.name in self.daemon.domains():
            self.daemon.ctl("detach", g.name)

    def set_shares(self, g, shares):
        raise RuntimeError("cgroup CPU weight rows need --mode libvirt (libvirt's cgroups)")

    def shares(self, g):
        return None

    def cleanup(self):
        if self.daemon:
            self.daemon.stop()
            self.daemon = None


def guest_args(kw):
    a = []
    for opt, key in (("--ip", "ip"), ("--peer", "peer"), ("--extra-cmdline", "extra")):
        if kw.get(key):
            a += [opt, kw[key]]
    if kw.get("lport"):
        a += ["--local-port", str(kw["lport"]), "--remote-port", str(kw["rport"])]
    return a


def set_sched(tids, policy, prio=0):
    """sched_setscheduler on each thread, as libvirt's <vcpusched> does."""
    pol = {"other": os.SCHED_OTHER, "batch": os.SCHED_BATCH, "idle": os.SCHED_IDLE,
           "fifo": os.SCHED_FIFO, "rr": os.SCHED_RR}[policy]
    for t in tids:
        os.sched_setscheduler(t, pol, os.sched_param(prio))


def set_nice(tids, nice):
    for t in tids:
        os.setpriority(os.PRIO_PROCESS, t, nice)


def thread_sched(tid):
    """(policy name, rt priority, nice) of a thread."""
    names = {os.SCHED_OTHER: "other", os.SCHED_BATCH: "batch", os.SCHED_IDLE: "idle",
             os.SCHED_FIFO: "fifo", os.SCHED_RR: "rr"}
    pol = os.sched_getscheduler(tid) & ~0x40000000
    return names.get(pol, str(pol)), os.sched_getparam(tid).sched_priority, \
        os.getpriority(os.PRIO_PROCESS, tid)


class LibvirtHost:
    """Guests as libvirt domains, on the system's libvirtd or a private one."""

    mode = "libvirt"

    def __init__(self, bench, choice):
        self.b = bench
        self.daemon = None
        self.private = None
        why = self.system_unusable()
        if choice == "system" and why:
            raise RuntimeError(f"--libvirt system: the system libvirtd is not usable: {why}")
        if choice == "system" or (choice == "auto" and not why):
            self.sock = SYSTEM_SOCKET
            self.prefix = []
            self.describe = "the system libvirtd (qemu:///system), hook " + SYSTEM_HOOK
        else:
            self.start_private()
            self.describe = ("a private libvirtd in its own mount namespace "
                             f"(tests/integration/libvirtd-private.sh; system one: {why})")
        log(f"libvirt: {self.describe}")

    @staticmethod
    def system_unusable():
        """Why the system libvirtd cannot be used, or None."""
        if run(["virsh", "-q", "-c", "qemu:///system", "version"], check=False,
               timeout=20).returncode != 0:
            return "no libvirtd answers on qemu:///system"
        if not os.path.exists(SYSTEM_HOOK):
            return f"the vcpusched hook is not installed ({SYSTEM_HOOK})"
        if os.path.exists(SYSTEM_SOCKET):
            return f"{SYSTEM_SOCKET} exists (a vcpuschedd of the host's own is running)"
        # The benchmark's daemon would watch this libvirtd and the host's hook
        # would hand it every opted-in domain: only on a host that has none.
        others = run(["virsh", "-q", "-c", "qemu:///system", "list", "--all", "--name"],
                     check=False, timeout=20).stdout.split()
        if others:
            return (f"it has domains of its own ({', '.join(others[:5])}"
                    f"{', ...' if len(others) > 5 else ''}), which the benchmark keeps away from")
        return None

    def start_private(self):
        scratch = os.path.join(self.b.dir, "libvirt")
        self.env = dict(os.environ, VS_LIBVIRT_SCRATCH=scratch)
        self.private = scratch
        self.lv("start")
        self.ns = os.path.join(scratch, "mnt")
        rundir = os.path.join(self.b.dir, "vsrun")
        os.makedirs(rundir, exist_ok=True)
        self.lv("exec", "sh", "-ec",
                f"mkdir -p /run/vcpusched && mount --bind '{rundir}' /run/vcpusched")
        hook = os.path.join(self.b.build, "libvirt-hooks", "vcpusched-hook")
        run([HOOK_INSTALL, "--hook", hook, "--hooks-dir",
             os.path.join(scratch, "etc", "hooks", "qemu.d"), "--pidfile",
             os.path.join(scratch, "run", "libvirtd.pid")])
        time.sleep(0.5)  # libvirtd rescans its hooks on SIGHUP
        self.sock = os.path.join(rundir, "control.sock")
        self.prefix = ["nsenter", f"--mount={self.ns}", "--"]

    def lv(self, *args, check=True, timeout=120):
        return run([LV_PRIVATE, *args], check=check, timeout=timeout, env=self.env)

    def virsh(self, *args, check=True):
        if self.private:
            return self.lv("virsh", "-q", *args, check=check)
        return run(["virsh", "-q", "-c", "qemu:///system", *args], check=check)

    def read_root(self, path):
        """A file of libvirt's /run (the private namespace's, if any)."""
        if self.private:
            return self.lv("exec", "cat", path).stdout
        with open(path) as f:
            return f.read()

    def start_daemon(self, args):
        self.daemon = Daemon(self.b.build, self.sock, self.prefix,
                             ["--socket", SYSTEM_SOCKET, "--state",
                              os.path.join(self.b.dir, "state"), "--libvirt", "qemu:///system"]
                             + args, os.path.join(self.b.dir, "vcpuschedd.log"))
        return self.daemon

    def start(self, name, role, meta=None, vcpusched=None, pin=True, **kw):
        """A domain, vCPU on MANAGED; its emulator threads on HOUSEKEEPING
        (`<emulatorpin>`) when `pin`, else unpinned."""
        serial = os.path.join(self.b.dir, f"{name}.log")
        if os.path.exists(serial):
            os.unlink(serial)
        xml = os.path.join(self.b.dir, f"{name}.xml")
        args = [os.path.join(VM, "mkdomxml"), "--name", name, "--role", role,
                "--serial", serial, "--smp", "1", "--mem", "128", "--accel", self.b.accel,
                "--vcpu-cpus", MANAGED,
                "--kernel", self.b.kernel, "--initrd", self.b.initrd, "-o", xml]
        args += ["--emulator-cpus", HOUSEKEEPING] if pin else []
        args += guest_args(kw)
        if meta is not None:
            args += ["--vs-sched", " ".join(f"{k}={v}" for k, v in dict(pool="main", **meta).items())]
        if vcpusched:
            args += ["--vcpu-sched", ":".join(str(x) for x in vcpusched)]
        run(args)
        self.virsh("create", xml)
        pid = int(self.read_root(f"/run/libvirt/qemu/{name}.pid").strip())
        return Guest(name, role, serial, pid, dict(kw, vcpusched=vcpusched))

    def stop(self, g):
        self.virsh("destroy", g.name, check=False)

    def opt_in(self, g, params):
        attrs = "".join(f" {k}='{v}'" for k, v in dict(pool="main", **params).items())
        self.virsh("metadata", g.name, NS_URI, "--key", "vs", "--set", f"<sched{attrs}/>",
                   "--live")

    def opt_out(self, g):
        self.virsh("metadata", g.name, NS_URI, "--remove", "--live", check=False)

    def shares(self, g):
        out = self.virsh("schedinfo", g.name, "--live").stdout
        m = re.search(r"cpu_shares\s*:\s*(\d+)", out)
        return int(m.group(1)) if m else None

    def set_shares(self, g, shares):
        self.virsh("schedinfo", g.name, "--live", f"cpu_shares={shares}")

    def cleanup(self):
        if self.daemon:
            self.daemon.stop()
            self.daemon = None
        if self.private:
            self.lv("stop", check=False, timeout=300)
            self.private = None
