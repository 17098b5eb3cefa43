# SPDX-License-Identifier: ISC
"""Helpers for the rig's tests, inside the rig VM: the installed service
through systemctl and the installed vcpuschedctl, the VM's CPUs, and what
the kernel says about threads (vstest). The VM has 4 CPUs in 2 NUMA nodes
(0-1, 2-3); CPU 0 is its housekeeping CPU."""

import ctypes
import json
import os
import signal
import subprocess

import unittest

import vstest

PACKAGE = "vcpusched"
UNIT = "vcpuschedd.service"
UNIT_FILE = "/lib/systemd/system/vcpuschedd.service"
DAEMON = "/usr/sbin/vcpuschedd"
CTL = "/usr/bin/vcpuschedctl"
HOOK = "/usr/lib/vcpusched/vcpusched-hook"  # the packaged hook
HOOK_FILE = "/etc/libvirt/hooks/qemu.d/50-vcpusched"  # its copy, which libvirt runs
SRC = vstest.SRC
RIG = os.path.join(SRC, "tests", "rig")


def known_bug(reason):
    """Mark a rig test that shows a bug not fixed yet. It still runs; its
    failure is reported as a skip that names the bug (TAP "# TODO"), and
    its pass as a failure, so that the mark goes once the bug is fixed."""
    def mark(fn):
        fn = unittest.expectedFailure(fn)
        fn.known_bug = reason
        return fn
    return mark


class Spinner:
    """A thread as a vCPU thread is one: a C loop (bench/spin_target SPEC:
    busy, or sleep:PERIOD_US:RUN_US) that does no I/O once running, started
    SCHED_OTHER on the housekeeping CPU, and killed if the test dies."""

    EXE = os.path.join(vstest.BUILD, "bench", "spin_target")

    def __init__(self, spec="busy"):
        def setup():
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            os.sched_setaffinity(0, {vstest.HOUSEKEEPING_CPU})
        self.proc = subprocess.Popen([self.EXE, spec], stdout=subprocess.PIPE, text=True,
                                     preexec_fn=setup)
        self.pid = self.proc.pid
        self.tid = int(self.proc.stdout.readline().split()[0])  # once it spins

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


class Process:
    """A helper process of a test (argv), stopped by the test's tearDown and
    killed if the test dies."""

    def __init__(self, argv):
        self.proc = vstest.popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run(*cmd, check=True, timeout=120, stdin=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=stdin)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stdout}{r.stderr}")
    return r


def systemctl(*args, check=True):
    return run("systemctl", *args, check=check)


def unit_prop(name):
    return systemctl("show", "-p", name, "--value", UNIT).stdout.strip()


def main_pid():
    return int(unit_prop("MainPID"))


def ctl(*args, check=True):
    """The installed vcpuschedctl on the service's default socket."""
    return run(CTL, *args, check=check, timeout=30)


def ctl_json(*args):
    return json.loads(ctl("--json", *args).stdout)


def service_answers():
    return ctl("version", check=False).returncode == 0


def restored(procs, cpus=frozenset({vstest.HOUSEKEEPING_CPU})):
    """Every process back at SCHED_OTHER on the CPUs it started on."""
    return all(vstest.policy(p.tid) == os.SCHED_OTHER and os.sched_getaffinity(p.tid) == cpus
               for p in procs)


def rt_fraction():
    """The part of each second real-time threads may have: a stock Debian
    kernel (6.1) has no fair server, so the rig keeps the default RT
    throttling (950000 of 1000000 us) that leaves SCHED_OTHER work, per-CPU
    kernel threads included, the rest; with -1, FIFO hogs starve them and
    RCU stalls the VM."""
    runtime = int(vstest.read("/proc/sys/kernel/sched_rt_runtime_us"))
    period = int(vstest.read("/proc/sys/kernel/sched_rt_period_us"))
    return 1.0 if runtime < 0 else runtime / period


def show(what, shares, want):
    """Print measured shares beside the expected ones (the test's log)."""
    got = " ".join(f"{s:.3f}" for s in shares)
    exp = " ".join(f"{w:.3f}" for w in want)
    print(f"# {what}: shares {got} (expected {exp})", flush=True)
