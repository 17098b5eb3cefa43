# SPDX-License-Identifier: ISC
"""The Xen reference rig: Xen 4.17 (Debian 12's packages, built by
build-rig.sh) booted under QEMU with a PV dom0 pinned to pCPU 0, driven
through a command channel on the second serial port (dom0-init).

    with Rig(smp=4) as rig:            # boots; the QEMU is always stopped
        rig.sh("xl list")              # -> output (raises on a non-zero exit)
        rig.pool("p1", "credit", [1])
        rig.create("a", role="hog", pool="p1", weight=512)
        t = rig.vcpu_times()           # {(dom, vcpu): seconds of CPU}

Xen's own console (and dom0's, hvc0) goes to console.log in the work
directory; the domUs' consoles to /var/log/xen/guest-NAME.log in dom0.
"""

import base64
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] xenrig: {msg}", flush=True,
          file=__import__("sys").stderr)


def build():
    """Build (or reuse) the rig's images; returns build-rig.sh's variables."""
    out = subprocess.run([os.path.join(HERE, "build-rig.sh")], check=True,
                         capture_output=True, text=True).stdout
    return dict(l.split("=", 1) for l in out.split() if "=" in l)


def accel():
    """kvm where the host has hardware KVM, else tcg (vm-images/accel)."""
    r = subprocess.run([os.path.join(SRC, "vm-images", "accel")], capture_output=True, text=True)
    return r.stdout.strip() or "tcg"


class RigError(RuntimeError):
    pass


class Rig:
    """One booted rig. smp: Xen's pCPUs (pCPU 0 is dom0's own); mem_mb: the
    machine; dom0_mb: dom0's share; host_cpus: the host CPUs QEMU may use."""

    def __init__(self, smp=4, mem_mb=3072, dom0_mb=512, sched="credit", host_cpus=None,
                 workdir=None, boot_timeout=240):
        self.img = build()
        self.smp, self.mem_mb, self.dom0_mb, self.sched = smp, mem_mb, dom0_mb, sched
        self.host_cpus = host_cpus
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="vcpusched-xenrig-")
        self.console = os.path.join(self.dir, "console.log")
        self.sock_path = os.path.join(self.dir, "shell.sock")
        self.boot_timeout = boot_timeout
        self.proc = None
        self.sock = None
        self.buf = b""
        self.seq = 0
        self.accel = accel()
        self.boot_s = None

    # --- lifecycle ------------------------------------------------------------

    def qemu_cmd(self):
        xen_args = (f"dom0_mem={self.dom0_mb}M,max:{self.dom0_mb}M dom0_max_vcpus=1 "
                    "dom0_vcpus_pin console=com1 com1=115200,8n1 loglvl=all guest_loglvl=all "
                    f"sched={self.sched} noreboot")
        dom0 = f"{self.img['XR_DOM0_KERNEL']} console=hvc0 rdinit=/init quiet"
        cpu = "host" if self.accel == "kvm" else "max,-smap,-smep"
        return ["qemu-system-x86_64", "-name", "xenrig,debug-threads=on", "-M", "q35", "-cpu", cpu, "-smp", str(self.smp),
                "-m", str(self.mem_mb), "-accel",
                "kvm" if self.accel == "kvm" else "tcg,thread=multi",
                "-display", "none", "-nodefaults", "-no-user-config", "-no-reboot",
                "-kernel", self.img["XR_XEN"], "-append", xen_args,
                "-initrd", f"{dom0},{self.img['XR_DOM0_INITRD']}",
                "-chardev", f"file,id=con,path={self.console}", "-serial", "chardev:con",
                "-chardev", f"socket,id=sh,path={self.sock_path},server=on,wait=off",
                "-serial", "chardev:sh"]

    def start(self):
        t0 = time.monotonic()
        cmd = self.qemu_cmd()
        pre = None
        if self.host_cpus is not None:
            cpus = set(self.host_cpus)
            pre = lambda: os.sched_setaffinity(0, cpus)  # noqa: E731
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.dir, "qemu.err"), "wb"),
                                     preexec_fn=pre, start_new_session=True)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(self.sock_path)
                break
            except OSError:
                self.sock.close()
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RigError(f"QEMU did not start: {self.read(os.path.join(self.dir, 'qemu.err'))}")
                time.sleep(0.05)
        self.wait_ready(t0)
        self.boot_s = time.monotonic() - t0
        log(f"dom0 ready in {self.boot_s:.1f} s ({self.accel}, -smp {self.smp})")
        return self

    def wait_ready(self, t0):
        while time.monotonic() - t0 < self.boot_timeout:
            con = self.read(self.console)
            if "XR-READY" in con:
                return
            m = re.search(r"XR-ERROR.*", con)
            if m or self.proc.poll() is not None or "Panic on CPU" in con:
                raise RigError(f"dom0 failed: {m.group(0) if m else con[-3000:]}")
            time.sleep(0.2)
        raise RigError(f"dom0 not ready in {self.boot_timeout} s:\n{self.read(self.console)[-3000:]}")

    def pin(self, pcpu_host, fifo=()):
        """Move the QEMU threads of Xen's pCPUs ({pcpu: host CPU}) to host
        CPUs; every other QEMU thread goes to the CPUs in `rest`. The pCPUs
        in `fifo` run SCHED_FIFO 1 (others SCHED_OTHER): on the managed host
        CPU they then keep it against stray host work, as vcpusched's
        elevated vCPU threads do (real-time throttling still leaves the host
        its 5%; the threads end with QEMU)."""
        rest = pcpu_host.get("rest")
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            comm = self.read(f"/proc/{self.proc.pid}/task/{tid}/comm").strip()
            m = re.match(r"CPU (\d+)/", comm)
            cpu = pcpu_host.get(int(m.group(1))) if m else None
            cpus = {cpu} if cpu is not None else rest
            try:
                if cpus:
                    os.sched_setaffinity(int(tid), cpus)
                if m and int(m.group(1)) in fifo:
                    os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(1))
                elif m:
                    os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass

    def pcpu_delay_ns(self, pcpu):
        """How long the QEMU thread of Xen's pCPU `pcpu` has waited, runnable,
        for a host CPU (schedstat's run delay): time Xen's clock counted as
        spent on that pCPU while nothing ran there. It is stolen from
        whichever vCPU was running, and from a parked one's budget periods."""
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            comm = self.read(f"/proc/{self.proc.pid}/task/{tid}/comm").strip()
            if comm.startswith(f"CPU {pcpu}/"):
                return int(self.read(f"/proc/{self.proc.pid}/task/{tid}/schedstat").split()[1])
        return 0

    def stop(self):
        if self.sock:
            self.sock.close()
            self.sock = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, exc_type, *exc):
        self.stop()
        if exc_type is None and self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)  # kept on failure, for its logs

    @staticmethod
    def read(path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    # --- the command channel ------------------------------------------------------

    def run(self, script, timeout=120):
        """Run a shell script in dom0; returns (rc, output)."""
        self.seq += 1
        sid = f"c{self.seq}"
        line = f"{sid} {base64.b64encode(script.encode()).decode()}\n".encode()
        # The tty layer takes at most 4 KB per line: feed it slowly.
        for i in range(0, len(line), 512):
            self.sock.sendall(line[i:i + 512])
            time.sleep(0.005)
        end = re.compile(rb"XR-END " + sid.encode() + rb" (\d+)\r?\n")
        deadline = time.monotonic() + timeout
        self.sock.settimeout(1.0)
        while True:
            m = end.search(self.buf)
            if m:
                out = self.buf[:m.start()].decode(errors="replace")
                self.buf = self.buf[m.end():]
                return int(m.group(1)), out
            if time.monotonic() > deadline:
                raise RigError(f"dom0: no answer in {timeout} s to: {script[:200]}")
            if self.proc.poll() is not None:
                raise RigError(f"QEMU exited:\n{self.read(self.console)[-3000:]}")
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise RigError("command channel closed")
            self.buf += data

    def sh(self, script, timeout=120):
        rc, out = self.run(script, timeout)
        if rc != 0:
            raise RigError(f"dom0: '{script[:300]}' exited {rc}:\n{out[-3000:]}")
        return out

    # --- xl -----------------------------------------------------------------------

    def pools_init(self):
        """Leave Pool-0 with dom0's pCPU 0 only; the others become free."""
        for cpu in range(1, self.smp):
            self.sh(f"xl cpupool-cpu-remove Pool-0 {cpu}")

    def pool(self, name, sched, cpus):
        cfg = f'name="{name}"\nsched="{sched}"\ncpus=[{",".join(map(str, cpus))}]\n'
        self.sh(f"cat > /tmp/{name}.pool <<'EOF'\n{cfg}EOF\nxl cpupool-create /tmp/{name}.pool")

    def pool_destroy(self, name):
        self.sh(f"xl cpupool-destroy {name}")

    def create(self, name, role="hog", pool=None, vcpus=1, mem_mb=128, weight=None, cap=None,
               extra="", vif=None, paused=False):
        """Create a PV domU running `role` (vm-images/guest/init, or the rig's
        xr.wake sleeper when extra says so); vif = ip of its network card."""
        cmdline = f"console=hvc0 quiet panic=-1 vs.role={role} {extra}".strip()
        if vif:
            cmdline += f" vs.ip={vif}"
        cfg = [f'name="{name}"', 'type="pv"', f'kernel="/boot/domu-vmlinux"',
               f'ramdisk="/boot/domu-initrd.gz"', f'extra="{cmdline}"', f"memory={mem_mb}",
               f"vcpus={vcpus}", 'on_poweroff="destroy"', 'on_crash="destroy"']
        if pool:
            cfg.append(f'pool="{pool}"')
        if weight:
            cfg.append(f"cpu_weight={weight}")
        if cap:
            cfg.append(f"cap={cap}")
        if vif:
            mac = "00:16:3e:%02x:%02x:%02x" % tuple(int(x) for x in vif.split("/")[0].split(".")[1:])
            cfg.append(f"vif=['mac={mac},bridge=xenbr0,script=vif-xr']")
        text = "\n".join(cfg) + "\n"
        self.sh(f"cat > /tmp/{name}.cfg <<'EOF'\n{text}EOF\n"
                f"xl create {'-p ' if paused else ''}-q /tmp/{name}.cfg", timeout=180)

    def destroy(self, *names):
        """Destroy domUs and their console logs (a later domain of the same
        name must not find the old one's lines)."""
        for n in names:
            self.run(f"xl destroy {n}; rm -f /var/log/xen/guest-{n}.log")

    def domains(self):
        out = self.sh("xl list")
        return [l.split()[0] for l in out.splitlines()[1:] if l.split()]

    def vcpu_times(self):
        """{(domain, vcpu): CPU seconds} from xl vcpu-list, and under the key
        "t" dom0's uptime half-way through it (the snapshot's time: xl alone
        takes ~1 s to start under TCG, so host-side timestamps would blur a
        20 s window by several per cent)."""
        out = self.sh("cat /proc/uptime; xl vcpu-list; cat /proc/uptime")
        ups = [float(l.split()[0]) for l in out.splitlines()
               if re.match(r"^[\d.]+ [\d.]+$", l.strip())]
        t = {"t": sum(ups) / len(ups)} if ups else {}
        for l in out.splitlines()[1:]:
            w = l.split()
            if len(w) >= 7 and w[1].isdigit():
                try:
                    t[(w[0], int(w[2]))] = float(w[5])
                except ValueError:
                    pass
        return t

    def console_of(self, name):
        return self.sh(f"cat /var/log/xen/guest-{name}.log 2>/dev/null; true")

    def wait_console(self, name, word, timeout=120):
        """Wait for `word` on a domU's console; a guest that reports a
        failure (VS-ERROR: it then powers off) ends the wait at once."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.console_of(name)
            if word in out:
                return out
            if "VS-ERROR" in out:
                raise RigError(f"{name}: failed before {word}:\n{out[-2000:]}")
            time.sleep(1.0)
        raise RigError(f"{name}: no {word} in {timeout} s:\n{self.console_of(name)[-2000:]}")
