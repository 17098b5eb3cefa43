#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""What tests may leave on the host, found, named and put back: the RT
runtime, processes a test started (every ctest test carries VCPUSCHED_TEST
in its environment, and its children inherit it), their threads at a
real-time policy, test guests (QEMU named vs*-), the tests' private
libvirtd, and vcpusched's or the tests' cgroups. It touches nothing else.

As ctest's fixtures host.before and host.after (tests/CMakeLists.txt) it
runs before and after the whole suite; tests/integration/runtests.py runs
it after each Python module for that module's own processes. Exits 1 if
it found anything (and put it back), 0 if the host was clean.

usage: hostcheck.py before|after"""

import os
import re
import signal
import subprocess
import sys
import time

MARK = "VCPUSCHED_TEST"
RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
# The kernel's default; a host that boots with another sets this variable.
RT_WANT = int(os.environ.get("VCPUSCHED_HOST_RT_RUNTIME_US", "950000"))
GUEST_NAME = re.compile(rb"-name\x00(guest=)?vs[a-z]*-")
HERE = os.path.dirname(os.path.abspath(__file__))
LIBVIRTD_PRIVATE = os.path.join(HERE, "libvirtd-private.sh")
LIBVIRTD_SCRATCH = os.environ.get("VS_LIBVIRT_SCRATCH", "/tmp/vcpusched-libvirtd")


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def ancestors():
    """This process and its ancestors (a test's own driver is no leftover)."""
    out, pid = set(), os.getpid()
    while pid > 1:
        out.add(pid)
        try:
            pid = int(read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def describe(pid):
    try:
        cmd = read(f"/proc/{pid}/cmdline", "rb").replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        cmd = "?"
    return f"pid {pid} ({cmd.strip()[:120]})"


def rt_threads(pid):
    """Threads of pid at SCHED_FIFO or SCHED_RR."""
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                if os.sched_getscheduler(int(t)) & ~0x40000000 in (os.SCHED_FIFO, os.SCHED_RR):
                    out.append(int(t))
            except OSError:
                pass
    except OSError:
        pass
    return out


def leftover_processes(mark=None):
    """[(pid, why)] of processes a test started: carrying the marker (equal
    to `mark` if given), or a test guest by its name."""
    skip, found = ancestors(), []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) in skip:
            continue
        pid = int(p)
        try:
            env = read(f"/proc/{pid}/environ", "rb").split(b"\0")
            cmd = read(f"/proc/{pid}/cmdline", "rb")
        except OSError:
            continue
        tag = next((e.split(b"=", 1)[1].decode(errors="replace") for e in env
                    if e.startswith(MARK.encode() + b"=")), None)
        if tag is not None and (mark is None or tag == mark):
            found.append((pid, f"started by test {tag}"))
        elif mark is None and b"qemu-system" in cmd and GUEST_NAME.search(cmd):
            found.append((pid, "a test guest"))
    return found


def cgroup_mounts():
    out = []
    for line in read("/proc/mounts").splitlines():
        dev, path, fstype, opts = line.split()[:4]
        if fstype == "cgroup2" or (fstype == "cgroup" and "freezer" in opts.split(",")):
            out.append((path, fstype == "cgroup2"))
    return out


def own_groups(daemons_running):
    """Groups the tests made (vcpusched-test-*), and, when no daemon of the
    host's own runs, vcpusched's park groups (v2 vcpusched-park-*, the v1
    freezer's vcpusched/), deepest first."""
    found = []
    for mount, v2 in cgroup_mounts():
        for dirpath, dirs, _ in os.walk(mount):
            for d in dirs:
                test = d.startswith("vcpusched-test-")
                park = (d.startswith("vcpusched-park-") if v2 else
                        (d == "vcpusched" and dirpath == mount))
                if test or (park and not daemons_running):
                    found.append(os.path.join(dirpath, d))
    return sorted(found, key=lambda p: -p.count("/"))


def release_group(path):
    """Thaw a group, hand its threads to its parent, remove it."""
    for sub, _, _ in sorted(os.walk(path), key=lambda w: -w[0].count("/")):
        for f, val in (("cgroup.freeze", "0"), ("freezer.state", "THAWED")):
            try:
                with open(os.path.join(sub, f), "w") as fh:
                    fh.write(val)
            except OSError:
                pass
        parent = os.path.dirname(sub)
        for f in ("cgroup.threads", "cgroup.procs", "tasks"):
            try:
                ids = read(os.path.join(sub, f)).split()
            except OSError:
                continue
            for i in ids:
                try:
                    with open(os.path.join(parent, f), "w") as fh:
                        fh.write(i)
                except OSError:
                    pass
        for _ in range(50):
            try:
                os.rmdir(sub)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


def libvirtd_private_running():
    try:
        pid = int(read(os.path.join(LIBVIRTD_SCRATCH, "run", "libvirtd.pid")).strip())
        return os.readlink(f"/proc/{pid}/exe").endswith("/libvirtd")
    except (OSError, ValueError):
        return False


def host_daemons():
    """vcpuschedd processes no test started (the host's own service)."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if read(f"/proc/{p}/comm").strip() != "vcpuschedd":
                continue
            if MARK.encode() + b"=" not in read(f"/proc/{p}/environ", "rb"):
                out.append(int(p))
        except OSError:
            pass
    return out


def check(mark=None, fix=True):
    """Every leftover as a line of text; with fix, put each back."""
    found = []
    procs = leftover_processes(mark)
    for pid, why in procs:
        rt = rt_threads(pid)
        found.append(f"{describe(pid)}: {why}" +
                     (f", threads {rt} at a real-time policy" if rt else ""))
    if mark is None and libvirtd_private_running():
        found.append(f"the tests' private libvirtd ({LIBVIRTD_SCRATCH}) still runs")
        if fix:
            subprocess.run([LIBVIRTD_PRIVATE, "stop"], capture_output=True, timeout=120)
    groups = own_groups(bool(host_daemons()))
    for g in groups:
        found.append(f"cgroup {g} left")
    if fix:
        for g in groups:  # thawed first: a frozen thread cannot die
            release_group(g)
        for pid, _ in procs:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    try:
        rt = int(read(RT_RUNTIME).strip())
    except OSError:
        rt = RT_WANT
    if rt != RT_WANT:
        found.append(f"sched_rt_runtime_us is {rt}, not {RT_WANT}")
        if fix:
            with open(RT_RUNTIME, "w") as f:
                f.write(str(RT_WANT))
    return found


def main(argv):
    if len(argv) != 2 or argv[1] not in ("before", "after"):
        print(__doc__.split("usage: ", 1)[1], file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("hostcheck: not root: nothing a test could leave can be checked")
        return 0
    found = check()
    if not found:
        print(f"hostcheck {argv[1]}: the host is clean")
        return 0
    print(f"hostcheck {argv[1]}: found and put back:")
    for f in found:
        print(f"  {f}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
