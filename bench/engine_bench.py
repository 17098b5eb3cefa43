#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The engine benchmark: the elevation trick as vcpuschedd performs it,
beside the paper's numbers (seeds-digest 000).

  1. switch precision: two busy targets on the managed CPU under rr, per
     slice, for processes, pthreads and vCPUs, shared and dedicated pattern;
     run per slot and gap from the kernel's sched_switch events.
  2. CPU-cycle cost: a counting loop against a busy loop under rr; the
     counter's rate over its rate alone on the CPU (ideal 0.5).
  3. wake-to-elevate: a periodic sleeper against a hog, --events bpf vs
     proc: the daemon's wake->MID histogram and the kernel's wake->run, plus
     bench/wake_latency.

Each measurement cell runs in a child process under
tests/integration/run-exclusive (the machine-wide flock), so other tests can
interleave between cells. See bench/README.md for how to run and read it."""

import argparse
import contextlib
import ctypes
import datetime
import json
import math
import mmap
import os
import platform
import shlex
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

import schedtrace  # noqa: E402

# Set from the command line (--managed-cpu and friends), in every cell too.
MANAGED_CPU, HOUSEKEEPING_CPU, DISPATCHER_CPU = 1, 0, 0
# The daemon's --rt-runtime-us (-1: no 50 ms hole a second; a stock 6.1
# kernel without a fair server needs throttling kept, see --rt-runtime-us).
DAEMON_RT_RUNTIME = -1
RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
RUN_EXCLUSIVE = os.path.join(SRC, "tests", "integration", "run-exclusive")
SLICES_US = [5, 10, 20, 50, 100, 150]
OUTLIER_NS = 1_000_000  # a stretch over 1 ms is interference, not the slice (all slices <= 150 us)
WARMUP_S = 0.3          # after attach, before measuring: the first picks settle
SLEEPER_PERIOD_US, SLEEPER_RUN_US = 2000, 50

# The paper's switch precision (us): at 5 us, and the fixed amount the
# shared pattern adds to run and gap at every slice; dedicated adds none.
PAPER_SHARED_ADD = {"process": (0.5, 4.6), "pthread": (0.5, 4.2), "vcpu": (2.2, 9.4)}


# --- statistics ---------------------------------------------------------------

def pct(sorted_xs, p):
    if not sorted_xs:
        return None
    return sorted_xs[min(len(sorted_xs) - 1, max(0, math.ceil(p / 100 * len(sorted_xs)) - 1))]


def summarize(ns):
    """Distribution of durations in ns, reported in us. mean/sd exclude the
    outliers (> OUTLIER_NS), which are counted; percentiles and max use all."""
    xs = sorted(ns)
    kept = [x for x in xs if x <= OUTLIER_NS]
    out = {"n": len(xs), "outliers": len(xs) - len(kept)}
    if kept:
        mean = sum(kept) / len(kept)
        out["mean"] = mean / 1e3
        out["sd"] = math.sqrt(sum((x - mean) ** 2 for x in kept) / len(kept)) / 1e3
    for name, p in (("p50", 50), ("p99", 99), ("p999", 99.9)):
        out[name] = pct(xs, p) / 1e3 if xs else None
    out["max"] = xs[-1] / 1e3 if xs else None
    return out


def mean_sd(xs):
    if not xs:
        return None, None
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


# --- the parts of a cell ------------------------------------------------------

class RtGuard:
    """Restore sched_rt_runtime_us on exit whatever happened (the daemon
    restores it too; this covers a daemon that died)."""

    def __enter__(self):
        self.saved = open(RT_RUNTIME).read().strip()
        print(f"  sched_rt_runtime_us at cell start: {self.saved}", file=sys.stderr)
        return self

    def __exit__(self, *exc):
        if open(RT_RUNTIME).read().strip() != self.saved:
            with open(RT_RUNTIME, "w") as f:
                f.write(self.saved)


def child_setup(cpu):
    """In a spin_target child: pinned to `cpu`, and killed when the cell
    child that started it dies, however it dies (no spinner left behind)."""
    def setup():
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.sched_setaffinity(0, {cpu})
    return setup


class Targets:
    """The scheduled things: spin_target processes or pthreads, or one
    2-vCPU TCG guest running the hog role. attach() hands them to a daemon.
    A failure half-way stops what was started."""

    def __init__(self, build, kind, specs, tmp, cpu=None):
        self.kind, self.procs, self.tids, self.guest_pidfile = kind, [], [], None
        cpu = HOUSEKEEPING_CPU if cpu is None else cpu
        exe = os.path.join(build, "bench", "spin_target")
        try:
            if kind == "vcpu":
                self._boot_guest(tmp)
                return
            groups = [specs] if kind == "pthread" else [[s] for s in specs]
            for g in groups:
                p = subprocess.Popen([exe, *g], stdout=subprocess.PIPE, text=True,
                                     preexec_fn=child_setup(cpu))
                self.procs.append(p)
                self.tids += [int(t) for t in p.stdout.readline().split()]
        except BaseException:
            self.stop()
            raise

    def _boot_guest(self, tmp):
        self.guest_pidfile, self.qmp = os.path.join(tmp, "g.pid"), os.path.join(tmp, "g.qmp")
        log = os.path.join(tmp, "g.log")
        subprocess.run([os.path.join(SRC, "vm-images", "run-guest"), "--name", "vsbench",
                        "--role", "hog", "--smp", "2", "--serial", log, "--pidfile",
                        self.guest_pidfile, "--qmp", self.qmp,
                        "--cpu-affinity", str(HOUSEKEEPING_CPU)],
                       check=True, capture_output=True)
        deadline = time.monotonic() + 60
        while "VS-HOG" not in open(log, errors="replace").read():
            if time.monotonic() > deadline:
                raise RuntimeError("guest: no VS-HOG line in 60 s")
            time.sleep(0.2)
        pid = int(open(self.guest_pidfile).read())
        for t in sorted(os.listdir(f"/proc/{pid}/task")):
            if open(f"/proc/{pid}/task/{t}/comm").read().startswith("CPU "):
                self.tids.append(int(t))

    def attach(self, d):
        if self.kind == "vcpu":
            d.ctl("attach", "g", "--qmp", self.qmp)
        elif self.kind == "pthread":
            d.ctl("attach", "t", "--tid", ",".join(map(str, self.tids)))
        else:
            for i, p in enumerate(self.procs):
                d.ctl("attach", f"p{i}", "--pid", str(p.pid))

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()
        if self.guest_pidfile:
            subprocess.run([os.path.join(SRC, "vm-images", "stop-guest"), self.guest_pidfile],
                           capture_output=True)


def start_daemon(policy, pattern, events="bpf", params=()):
    from vstest import Daemon
    args = ["--pattern", pattern, "--rt-runtime-us", str(DAEMON_RT_RUNTIME)]
    if pattern == "dedicated":
        args += ["--dispatcher-cpu", str(DISPATCHER_CPU)]
    for p in params:
        args += ["--pool-param", p]
    return Daemon(*args, cpus=str(MANAGED_CPU), policy=policy, events=events).start()


def daemon_tids(d):
    return [int(t) for t in os.listdir(f"/proc/{d.proc.pid}/task")]


def cpu_ns(tids, dtids):
    """CPU time so far (schedstat) of the targets and of the daemon's threads."""
    def run(t):
        try:
            return int(open(f"/proc/{t}/schedstat").read().split()[0])
        except OSError:
            return 0
    return sum(map(run, tids)), sum(map(run, dtids))


def check_elevated(tids):
    """Every target at SCHED_FIFO on the managed CPU, or the cell is void."""
    for t in tids:
        if os.sched_getscheduler(t) & ~0x40000000 != os.SCHED_FIFO:
            raise RuntimeError(f"target {t} is not SCHED_FIFO after attach")
        if os.sched_getaffinity(t) != {MANAGED_CPU}:
            raise RuntimeError(f"target {t} is not pinned to cpu {MANAGED_CPU}")


def cpu_classes(win, tids, dtids):
    classes = {t: "targets" for t in tids}
    classes.update({t: "vcpuschedd" for t in dtids})
    spent = schedtrace.time_by_class(win, MANAGED_CPU, classes)
    span = (win.end_ns - win.start_ns) or 1
    return {k: v / span for k, v in sorted(spent.items(), key=lambda kv: -kv[1]) if v / span > 0.001}


# --- cells (each runs in a child under run-exclusive) -------------------------

def cell_switch(spec, tmp):
    """Two busy targets under rr: for each slice and rep a daemon and a
    trace window. The trace is parsed after the daemon has gone, so that a
    dedicated dispatcher spinning on this CPU does not slow the parsing."""
    with contextlib.ExitStack() as stack:
        trace = stack.enter_context(contextlib.closing(schedtrace.SchedTrace(traced_cpus())))
        targets = Targets(spec["build"], spec["kind"], ["busy", "busy"], tmp)
        stack.callback(targets.stop)
        return [switch_result(slice_us, [switch_rep(spec, slice_us, targets, trace)
                                         for _ in range(spec["reps"])])
                for slice_us in spec["slices"]]


def switch_rep(spec, slice_us, targets, trace):
    d = start_daemon("rr", spec["pattern"], params=[f"slice_us={slice_us}"])
    try:
        targets.attach(d)
        time.sleep(WARMUP_S)
        check_elevated(targets.tids)
        dtids = daemon_tids(d)
        trace.start()
        t0, cpu0 = time.monotonic_ns(), cpu_ns(targets.tids, dtids)
        time.sleep(spec["seconds"])
        wall, cpu1 = time.monotonic_ns() - t0, cpu_ns(targets.tids, dtids)
        trace.pause()
        stats = d.json("stats")
    finally:
        d.cleanup()
    win = trace.collect()
    runs, gaps, broken = schedtrace.stretches(win, MANAGED_CPU, set(targets.tids))
    on_cpu1 = [s for s in win.switches if s.cpu == MANAGED_CPU]
    return {"runs": runs, "gaps": gaps, "broken": broken, "overrun": win.overrun,
            "switches_per_s": len(on_cpu1) / ((win.end_ns - win.start_ns) / 1e9),
            "cpu1": cpu_classes(win, targets.tids, dtids),
            "share": [(b - a) / wall for a, b in zip(cpu0, cpu1)],
            "events": stats.get("events"), "rt_runtime_us": stats.get("rt_runtime_us")}


def switch_result(slice_us, reps):
    runs = [x for r in reps for x in r["runs"]]
    gaps = [x for r in reps for x in r["gaps"]]
    rep_run = [summarize(r["runs"]).get("mean") for r in reps]
    rep_gap = [summarize(r["gaps"]).get("mean") for r in reps]
    return {"slice_us": slice_us, "run": summarize(runs), "gap": summarize(gaps),
            "rep_run_means": rep_run, "rep_gap_means": rep_gap,
            "broken": sum(r["broken"] for r in reps), "overrun": sum(r["overrun"] for r in reps),
            "switches_per_s": [r["switches_per_s"] for r in reps],
            "cpu1": [r["cpu1"] for r in reps], "events": reps[0]["events"],
            "targets_share": [r["share"][0] for r in reps],
            "daemon_share": [r["share"][1] for r in reps],
            "rt_runtime_us": reps[0]["rt_runtime_us"]}


class Counter:
    """Reads a spin_target count:FILE counter: iterations per second and
    the thread's CPU time over a window."""

    def __init__(self, path, tid):
        self.tid = tid
        self.f = open(path, "r+b")
        self.m = mmap.mmap(self.f.fileno(), 4096)

    def window(self, seconds):
        def snap():
            return (time.monotonic_ns(), struct.unpack_from("Q", self.m, 0)[0],
                    int(open(f"/proc/{self.tid}/schedstat").read().split()[0]))
        t0, c0, r0 = snap()
        time.sleep(seconds)
        t1, c1, r1 = snap()
        return {"rate": (c1 - c0) / ((t1 - t0) / 1e9), "share": (r1 - r0) / (t1 - t0),
                "per_cpu_s": (c1 - c0) / max(1, r1 - r0) * 1e9}


def cell_cycle(spec, tmp):
    return [cycle_slice({**spec, "slice_us": s}, tmp) for s in spec["slices"]]


def cycle_slice(spec, tmp):
    """Counter vs busy under rr at one slice: alone, then (scheduled, alone)
    x reps; each scheduled rate over the mean of the alone rates around it."""
    build, path = spec["build"], os.path.join(tmp, f"count{spec['slice_us']}")
    with contextlib.ExitStack() as stack:
        counter = Targets(build, "process", [f"count:{path}"], tmp, cpu=MANAGED_CPU)
        stack.callback(counter.stop)
        busy = Targets(build, "process", ["busy"], tmp)
        stack.callback(busy.stop)
        c = Counter(path, counter.tids[0])
        alone, sched = [c.window(spec["seconds"])], []
        for _ in range(spec["reps"]):
            d = start_daemon("rr", spec["pattern"], params=[f"slice_us={spec['slice_us']}"])
            try:
                counter.attach(d)
                d.ctl("attach", "busy", "--pid", str(busy.procs[0].pid))
                time.sleep(WARMUP_S)
                check_elevated(counter.tids + busy.tids)
                sched.append(c.window(spec["seconds"]))
            finally:
                d.cleanup()  # detach: the counter goes back to cpu 1 alone, busy to cpu 0
            time.sleep(0.1)
            alone.append(c.window(spec["seconds"]))
    ratios = [s["rate"] / ((alone[i]["rate"] + alone[i + 1]["rate"]) / 2)
              for i, s in enumerate(sched)]
    return {"slice_us": spec["slice_us"], "pattern": spec["pattern"], "ratios": ratios,
            "shares": [s["share"] for s in sched],
            "efficiency": [s["per_cpu_s"] / alone[0]["per_cpu_s"] for s in sched],
            "alone_rates": [a["rate"] for a in alone]}


def cell_wake(spec, tmp):
    """A sleeper (wakes every 2 ms, runs 50 us) against a hog, both attached."""
    build = spec["build"]
    with contextlib.ExitStack() as stack:
        sleeper = Targets(build, "process", [f"sleep:{SLEEPER_PERIOD_US}:{SLEEPER_RUN_US}"], tmp)
        stack.callback(sleeper.stop)
        hog = Targets(build, "process", ["busy"], tmp)
        stack.callback(hog.stop)
        trace = stack.enter_context(
            contextlib.closing(schedtrace.SchedTrace(traced_cpus(), wake_tids=sleeper.tids)))
        d = start_daemon(spec["policy"], "shared", events=spec["events"])
        try:
            sleeper.attach(d)
            d.ctl("attach", "hog", "--pid", str(hog.procs[0].pid))
            time.sleep(WARMUP_S)
            check_elevated(sleeper.tids + hog.tids)
            win = trace.capture(spec["seconds"])
            stats = d.json("stats")
        finally:
            d.cleanup()
    pool = stats["pools"][0]
    return {"events": stats["events"], "policy": spec["policy"],
            "daemon_p50_ns": pool.get("wake_to_mid_p50_ns"),
            "daemon_p99_ns": pool.get("wake_to_mid_p99_ns"), "wakes": pool.get("wakes"),
            "wake_to_run": summarize(schedtrace.wake_to_run(win, sleeper.tids[0])),
            "overrun": win.overrun}


def cell_wake_latency(spec, tmp):
    exe = os.path.join(spec["build"], "bench", "wake_latency")
    r = subprocess.run([exe, "-n", str(spec["wakes"])], capture_output=True, text=True,
                       timeout=300)
    return {"cmd": f"{exe} -n {spec['wakes']}", "rc": r.returncode,
            "stdout": r.stdout, "stderr": r.stderr[-2000:]}


CELLS = {"switch": cell_switch, "cycle": cell_cycle, "wake": cell_wake,
         "wake_latency": cell_wake_latency}


def use_cpus(cpus):
    """The CPUs of this run ({"managed", "housekeeping", "dispatcher"}) and
    the daemon's --rt-runtime-us ("rt_runtime_us")."""
    global MANAGED_CPU, HOUSEKEEPING_CPU, DISPATCHER_CPU, DAEMON_RT_RUNTIME
    MANAGED_CPU, HOUSEKEEPING_CPU = cpus["managed"], cpus["housekeeping"]
    DISPATCHER_CPU, DAEMON_RT_RUNTIME = cpus["dispatcher"], cpus["rt_runtime_us"]


def traced_cpus():
    return tuple(sorted({HOUSEKEEPING_CPU, MANAGED_CPU, DISPATCHER_CPU}))


def run_cell_child(spec):
    """Entry of the child: run one cell, print its result as JSON."""
    use_cpus(spec["cpus"])
    os.sched_setaffinity(0, {HOUSEKEEPING_CPU})
    os.environ["VCPUSCHED_BUILD"] = spec["build"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so that cleanups run
    try:
        with RtGuard(), tempfile.TemporaryDirectory(prefix="vsbench-") as tmp:
            result = CELLS[spec["exp"]](spec, tmp)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"engine_bench: cell {spec['exp']}: {e}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout)
    return 0


def run_cell(spec):
    """One cell in a child under run-exclusive; None if it failed (the
    child has said why on stderr and stopped everything it started)."""
    r = subprocess.run([RUN_EXCLUSIVE, sys.executable, os.path.abspath(__file__), "--cell",
                        json.dumps(spec)], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)


# --- the run and its report ---------------------------------------------------

def plan(args):
    base = {"build": os.path.abspath(args.build),
            "cpus": {"managed": MANAGED_CPU, "housekeeping": HOUSEKEEPING_CPU,
                     "dispatcher": DISPATCHER_CPU, "rt_runtime_us": DAEMON_RT_RUNTIME}}
    cells = []
    if "switch" in args.only:
        for kind in args.kinds:
            for pattern in args.patterns:
                # One cell (one hold of the lock, ~30 s) per row group: all slices
                # of a kind and pattern; the guest boots once (TCG boot is ~10 s).
                # --cell-per-slice splits process and pthread groups further.
                groups = ([[s] for s in args.slices] if args.cell_per_slice and kind != "vcpu"
                          else [args.slices])
                for g in groups:
                    cells.append({**base, "exp": "switch", "kind": kind, "pattern": pattern,
                                  "slices": g, "reps": args.reps, "seconds": args.seconds})
    if "cycle" in args.only:
        for pattern in args.patterns:
            cells.append({**base, "exp": "cycle", "pattern": pattern, "slices": args.slices,
                          "reps": args.reps, "seconds": args.seconds})
    if "wake" in args.only:
        for ev in ("bpf", "proc"):
            cells.append({**base, "exp": "wake", "events": ev, "policy": "credit",
                          "seconds": 3 * args.seconds * args.reps})
        cells.append({**base, "exp": "wake_latency", "wakes": 1000 * args.reps})
    return cells


def machine_facts(build):
    def sh(cmd):
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "kernel": platform.release(),
            "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
            "clocksource": sh("cat /sys/devices/system/clocksource/clocksource0/current_clocksource"),
            "rt_runtime_us_before": int(open(RT_RUNTIME).read()),
            "qemu": sh("qemu-system-x86_64 --version | head -1"),
            "accel": sh(os.path.join(SRC, "vm-images", "accel")),
            "virt": sh("systemd-detect-virt || true"),
            "cpus": f"managed {MANAGED_CPU}, housekeeping {HOUSEKEEPING_CPU}, "
                    f"dispatcher {DISPATCHER_CPU}",
            "git": sh(f"git -C {SRC} rev-parse --short HEAD"), "build": build}


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def paper(kind, pattern, slice_us):
    if kind not in PAPER_SHARED_ADD:
        return "-"
    a, b = PAPER_SHARED_ADD[kind] if pattern == "shared" else (0.0, 0.0)
    return f"{slice_us + a:.1f} / {slice_us + b:.1f}"


def table_switch(results):
    lines = ["| target | pattern | slice | run mean ± sd | run p50 / p99 / max | gap mean ± sd | "
             "gap p50 / p99 / max | n runs | >1 ms | paper run / gap |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for spec, res in results:
        for r in res:
            ru, ga = r["run"], r["gap"]
            lines.append(
                f"| {spec['kind']} | {spec['pattern']} | {r['slice_us']} | "
                f"{fmt(ru.get('mean'))} ± {fmt(ru.get('sd'))} | "
                f"{fmt(ru['p50'])} / {fmt(ru['p99'])} / {fmt(ru['max'])} | "
                f"{fmt(ga.get('mean'))} ± {fmt(ga.get('sd'))} | "
                f"{fmt(ga['p50'])} / {fmt(ga['p99'])} / {fmt(ga['max'])} | {ru['n']} | "
                f"{ru['outliers']}+{ga['outliers']} | {paper(spec['kind'], spec['pattern'], r['slice_us'])} |")
    return lines


def table_cpu1(results):
    lines = ["| target | pattern | slice | switches/s | rep means run / gap (us) | "
             f"targets / vcpuschedd CPU (schedstat) | CPU {MANAGED_CPU} time (trace, first rep) | "
             "broken |",
             "|---|---|---|---|---|---|---|---|"]
    for spec, res in results:
        for r in res:
            where = ", ".join(f"{k} {v * 100:.1f}%" for k, v in list(r["cpu1"][0].items())[:4])
            reps = "; ".join(f"{fmt(a)} / {fmt(b)}" for a, b in zip(r["rep_run_means"],
                                                                    r["rep_gap_means"]))
            sw = "/".join(f"{x:.0f}" for x in r["switches_per_s"])
            share = "; ".join(f"{a * 100:.0f}% / {b * 100:.0f}%"
                              for a, b in zip(r["targets_share"], r["daemon_share"]))
            lines.append(f"| {spec['kind']} | {spec['pattern']} | {r['slice_us']} | {sw} | "
                         f"{reps} | {share} | {where} | {r['broken']} |")
    return lines


def table_cycle(results):
    lines = ["| pattern | slice | counter rate / alone (ideal 0.5) | reps | counter CPU share | "
             "iterations per CPU-second / alone |", "|---|---|---|---|---|---|"]
    for r in (r for _, res in results for r in res):
        m, sd = mean_sd(r["ratios"])
        lines.append(f"| {r['pattern']} | {r['slice_us']} | {fmt(m, 3)} ± {fmt(sd, 3)} | "
                     f"{len(r['ratios'])} | {fmt(mean_sd(r['shares'])[0], 3)} | "
                     f"{fmt(mean_sd(r['efficiency'])[0], 3)} |")
    return lines


def table_wake(results):
    lines = ["| events | policy | daemon wake→MID p50 / p99 (log2 bucket, us) | "
             "kernel wake→run p50 / p99 / max (us) | wakes traced |", "|---|---|---|---|---|"]
    for _, r in results:
        w = r["wake_to_run"]
        lines.append(f"| {r['events']} | {r['policy']} | {fmt(r['daemon_p50_ns'] / 1e3)} / "
                     f"{fmt(r['daemon_p99_ns'] / 1e3)} | {fmt(w['p50'])} / {fmt(w['p99'])} / "
                     f"{fmt(w['max'])} | {w['n']} |")
    return lines


def report(cmdline, facts, results, elapsed_s):
    by = {k: [(s, r) for s, r in results if s["exp"] == k] for k in CELLS}
    md = [f"# Engine benchmark, {facts['date']}", "",
          f"Command: `{cmdline}`  ", f"Wall time: {elapsed_s:.0f} s", "",
          "Machine: " + ", ".join(f"{k} `{v}`" for k, v in facts.items() if k != "date"), "",
          f"Daemon: `vcpuschedd --cpus {MANAGED_CPU} --policy rr --pool-param slice_us=N "
          f"--rt-runtime-us {DAEMON_RT_RUNTIME}` (`--pattern dedicated --dispatcher-cpu "
          f"{DISPATCHER_CPU}` for "
          "dedicated"
          + (": the dedicated dispatcher busy-polls the housekeeping CPU"
             if DISPATCHER_CPU == HOUSEKEEPING_CPU else ", a CPU of its own")
          + f"; targets and driver start on CPU {HOUSEKEEPING_CPU}). "
          f"Times in µs from sched_switch on CPU {MANAGED_CPU} (tracefs, TSC clock). "
          "mean ± sd exclude "
          "stretches over 1 ms (counted in `>1 ms`, runs+gaps); p50/p99/max include them.", ""]
    if by["switch"]:
        md += ["## Switch precision", ""] + table_switch(by["switch"]) + [""]
        md += [f"### Where CPU {MANAGED_CPU} went", ""] + table_cpu1(by["switch"]) + [""]
    if by["cycle"]:
        md += ["## CPU-cycle cost (processes)", ""] + table_cycle(by["cycle"]) + [""]
    if by["wake"]:
        md += ["## Wake-to-elevate", ""] + table_wake(by["wake"]) + [""]
    for spec, r in by["wake_latency"]:
        md += ["### bench/wake_latency", "", f"`{r['cmd']}` (rc {r['rc']})", "", "```",
               r["stdout"].rstrip(), "```", ""]
    return "\n".join(md)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--reps", type=int, default=2, help="trace windows per cell (default 2)")
    ap.add_argument("--seconds", type=float, default=1.0, help="length of one window")
    ap.add_argument("--slices", default=",".join(map(str, SLICES_US)))
    ap.add_argument("--kinds", default="process,pthread,vcpu")
    ap.add_argument("--patterns", default="shared,dedicated")
    ap.add_argument("--only", default="switch,cycle,wake")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--cell-per-slice", action="store_true",
                    help="take the lock per slice for processes and pthreads")
    ap.add_argument("--managed-cpu", type=int, default=MANAGED_CPU,
                    help="the pool's CPU, where targets run (default 1)")
    ap.add_argument("--housekeeping-cpu", type=int, default=HOUSEKEEPING_CPU,
                    help="where the driver, daemon and targets start (default 0)")
    ap.add_argument("--dispatcher-cpu", type=int,
                    help="the dedicated dispatcher's CPU (default: the housekeeping CPU)")
    ap.add_argument("--rt-runtime-us", type=int, default=DAEMON_RT_RUNTIME,
                    help="the daemon's --rt-runtime-us (default -1: no RT throttling; keep "
                    "950000 on a kernel without a fair server, e.g. Debian 12's 6.1)")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        return run_cell_child(json.loads(args.cell))
    use_cpus({"managed": args.managed_cpu, "housekeeping": args.housekeeping_cpu,
              "dispatcher": args.housekeeping_cpu if args.dispatcher_cpu is None
              else args.dispatcher_cpu, "rt_runtime_us": args.rt_runtime_us})
    if MANAGED_CPU in (HOUSEKEEPING_CPU, DISPATCHER_CPU):
        ap.error("--managed-cpu must differ from the housekeeping and dispatcher CPUs")
    args.slices = [int(s) for s in args.slices.split(",")]
    args.kinds, args.patterns = args.kinds.split(","), args.patterns.split(",")
    args.only = args.only.split(",")
    os.sched_setaffinity(0, {HOUSEKEEPING_CPU})
    cmdline = " ".join(shlex.quote(a) for a in sys.argv)
    facts = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
             **machine_facts(os.path.abspath(args.build))}
    t0, results, failed = time.monotonic(), [], []
    for spec in plan(args):
        what = (f"{spec['exp']} {spec.get('kind', '')} {spec.get('pattern', '')} "
                f"{spec.get('slices', spec.get('slice_us', spec.get('events', '')))}")
        print(f"cell: {what}", file=sys.stderr, flush=True)
        t = time.monotonic()
        r = run_cell(spec)
        if r is None:
            failed.append(what)
        else:
            results.append((spec, r))
        print(f"  {time.monotonic() - t:.1f} s{' FAILED' if r is None else ''}",
              file=sys.stderr, flush=True)
    if failed:
        print("engine_bench: failed cells (see above): " + "; ".join(failed), file=sys.stderr)
        return 1
    facts["rt_runtime_us_after"] = int(open(RT_RUNTIME).read())
    md = report(cmdline, facts, results, time.monotonic() - t0)
    print(md)
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
    base = os.path.join(args.out, f"engine-{stamp}")
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    with open(base + ".json", "w") as f:
        json.dump({"command": cmdline, "machine": facts,
                   "cells": [{"spec": s, "result": strip(r)} for s, r in results]}, f, indent=1)
    print(f"wrote {base}.md and .json", file=sys.stderr)


def strip(r):
    """Results without raw samples (kept small enough to commit)."""
    if isinstance(r, list):
        return [strip(x) for x in r]
    return {k: v for k, v in r.items() if k not in ("runs", "gaps")}


if __name__ == "__main__":
    sys.exit(main())
