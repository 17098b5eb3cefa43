#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The scale benchmark: what scheduling costs as the number of managed vCPUs
grows, 10, 100 and 1,000 threads in one pool, under each policy.

  real threads  one vcpuschedd (shared pattern, CPU 1 managed) and one
                spin_target process whose N threads are attached as one
                domain of N vCPUs. Two loads:
                  busy     every thread always runnable (picks at the
                           policy's slice rate, no wake events);
                  wakeful  each thread runs 100 us every N x 200 us: 50 %
                           demand in total and ~5,000 wakes/s at every N,
                           so the per-event cost shows how it grows with N.
                Over --seconds: decisions/s (pool picks), events/s, the
                daemon's CPU time (all its threads, schedstat) as a share of
                one CPU, per managed vCPU and per decision.
  instructions  the same pool on the simulator (tests/sim, the same policy
                code on a simulated clock) under valgrind --tool=callgrind,
                counting instructions inside pool_pick() only: instructions
                per pick are exact and repeatable, whatever the machine is
                doing (--toggle-collect).

The table policy is left out: its spec lists slots by hand (a thousand
vCPUs do not fit a 2,047-byte parameter), and its pick is one array step
whatever the number of vCPUs.

Writes Markdown and JSON under bench/results/scale-<date>.*, with the
command at the top. Needs root (SCHED_FIFO), valgrind for the instruction
counts. Each real-thread cell holds the host's test lock
(tests/integration/run-exclusive)."""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

MANAGED_CPU, HOUSEKEEPING_CPU = 1, 0
RUN_EXCLUSIVE = os.path.join(SRC, "tests", "integration", "run-exclusive")
POLICIES = ("rr", "credit", "credit2")
SIZES = (10, 100, 1000)
WAKE_RUN_US, WAKE_PERIOD_PER_VCPU_US = 100, 200
SIM_SECONDS = 2  # simulated time per instruction count


def spin_specs(load, n):
    if load == "busy":
        return [f"busy*{n}"]
    return [f"sleep:{WAKE_PERIOD_PER_VCPU_US * n}:{WAKE_RUN_US}*{n}"]


def thread_cpu_ns(pid):
    """CPU time of every thread of `pid` (schedstat), 0 for a vanished one."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def pool_counters(d):
    pool = d.json("stats")["pools"][0]
    return pool["picks"], pool.get("events", 0)


def cell_real(spec):
    """One policy, size and load on real threads; runs under run-exclusive."""
    os.environ["VCPUSCHED_BUILD"] = spec["build"]  # read by vstest at import
    from vstest import Daemon
    exe = os.path.join(spec["build"], "bench", "spin_target")
    # On the managed CPU from the start: a thousand busy threads on the
    # housekeeping CPU would starve the daemon before it could attach them.
    proc = subprocess.Popen([exe, *spin_specs(spec["load"], spec["n"])], stdout=subprocess.PIPE,
                            text=True, preexec_fn=lambda: os.sched_setaffinity(0, {MANAGED_CPU}))
    d = None
    try:
        tids = [int(t) for t in proc.stdout.readline().split()]
        if len(tids) != spec["n"]:
            raise RuntimeError(f"spin_target gave {len(tids)} threads, wanted {spec['n']}")
        d = Daemon("--rt-runtime-us", "-1", policy=spec["policy"])
        d.start()
        d.ctl("attach", "scale", "--tid", ",".join(map(str, tids)))
        time.sleep(spec["warmup"])
        picks0, ev0 = pool_counters(d)
        cpu0, t0 = thread_cpu_ns(d.proc.pid), time.monotonic()
        time.sleep(spec["seconds"])
        picks1, ev1 = pool_counters(d)
        cpu1, wall = thread_cpu_ns(d.proc.pid), time.monotonic() - t0
        targets = sum(vs_run_ns(t) for t in tids)
    finally:
        if d is not None:
            d.cleanup()
        proc.kill()
        proc.wait()
    decisions = (picks1 - picks0) / wall
    daemon_share = (cpu1 - cpu0) / 1e9 / wall
    return {"decisions_per_s": decisions, "events_per_s": (ev1 - ev0) / wall,
            "daemon_cpu_pct": 100 * daemon_share,
            "daemon_cpu_pct_per_vcpu": 100 * daemon_share / spec["n"],
            "daemon_us_per_decision": (cpu1 - cpu0) / 1e3 / max(1, picks1 - picks0),
            "targets_run_s": targets / 1e9}


def vs_run_ns(tid):
    try:
        with open(f"/proc/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except OSError:
        return 0


def sim_scenario(policy, n, load):
    demand = ("busy" if load == "busy"
              else f"periodic period={WAKE_PERIOD_PER_VCPU_US * n}us run={WAKE_RUN_US}us")
    return (f"policy {policy}\ncpus 1\ndom scale vcpus={n} {demand}\n"
            f"run {SIM_SECONDS}s\nreport\n")


def cell_instructions(spec, tmp):
    """Instructions inside pool_pick() per pick, from callgrind on the simulator."""
    path = os.path.join(tmp, f"{spec['policy']}-{spec['n']}-{spec['load']}.sim")
    with open(path, "w") as f:
        f.write(sim_scenario(spec["policy"], spec["n"], spec["load"]))
    out = os.path.join(tmp, "callgrind.out")
    sim = os.path.join(spec["build"], "tests", "vcpusched-sim")
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        "--toggle-collect=pool_pick", sim, path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"vcpusched-sim under callgrind: {r.stderr[-500:]}")
    picks = re.search(r"^picks\s+(\d+)", r.stdout, re.M) or re.search(r"picks[=: ]+(\d+)",
                                                                         r.stdout)
    total = re.search(r"^summary: (\d+)", open(out).read(), re.M)
    if not picks or not total:
        raise RuntimeError(f"no picks or summary in the simulator's output:\n{r.stdout[-800:]}")
    return {"picks": int(picks[1]), "instructions": int(total[1]),
            "instructions_per_pick": int(total[1]) / max(1, int(picks[1]))}


def run_cell_child(spec):
    os.sched_setaffinity(0, {HOUSEKEEPING_CPU})
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        json.dump(cell_real(spec), sys.stdout)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"scale_bench: cell {spec['policy']} n={spec['n']} {spec['load']}: {e}",
              file=sys.stderr)
        return 1
    return 0


def run_real(spec):
    r = subprocess.run([RUN_EXCLUSIVE, sys.executable, os.path.abspath(__file__), "--cell",
                        json.dumps(spec)], stdout=subprocess.PIPE, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def fmt(x, nd=1):
    return "-" if x is None else f"{x:,.{nd}f}"


def report(cmdline, facts, rows, elapsed):
    lines = [f"# Scale: scheduling cost at 10, 100 and 1,000 vCPUs ({facts['date']})", "",
             f"Command: `{cmdline}`", "",
             f"Host: {facts['host']}; {facts['cpu']}; sched_rt_runtime_us -1 while the daemon "
             f"runs (restored after). Real threads: one pool on CPU {MANAGED_CPU}, shared "
             f"pattern, {facts['seconds']} s per cell after {facts['warmup']} s of warm-up. "
             f"Instructions: callgrind on the simulator, {SIM_SECONDS} s simulated, inside "
             f"pool_pick() only (the policy's pick and the pool layer's sequencing). "
             f"Run time {elapsed / 60:.1f} min.", "",
             "| policy | load | vCPUs | decisions/s | events/s | daemon CPU % | "
             "daemon CPU % per vCPU | daemon us / decision | instructions / pick |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        real, ins = r.get("real") or {}, r.get("instructions") or {}
        lines.append(
            f"| {r['policy']} | {r['load']} | {r['n']} | {fmt(real.get('decisions_per_s'), 0)} | "
            f"{fmt(real.get('events_per_s'), 0)} | {fmt(real.get('daemon_cpu_pct'), 2)} | "
            f"{fmt(real.get('daemon_cpu_pct_per_vcpu'), 4)} | "
            f"{fmt(real.get('daemon_us_per_decision'), 1)} | "
            f"{fmt(ins.get('instructions_per_pick'), 0)} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build", "ci"))
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--loads", default="busy,wakeful")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--no-real", action="store_true", help="instruction counts only")
    ap.add_argument("--no-instructions", action="store_true", help="real threads only")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.cell:
        return run_cell_child(json.loads(a.cell))
    if os.geteuid() != 0 and not a.no_real:
        sys.exit("scale_bench.py: run as root (or --no-real)")
    build = os.path.abspath(a.build)
    os.sched_setaffinity(0, {HOUSEKEEPING_CPU})
    cmdline = " ".join(shlex.quote(x) for x in [os.path.relpath(sys.argv[0], SRC)] + sys.argv[1:])
    facts = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
             "host": f"{platform.node()} {platform.release()} {os.cpu_count()} CPUs",
             "cpu": subprocess.run("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2",
                                   shell=True, capture_output=True, text=True).stdout.strip(),
             "seconds": a.seconds, "warmup": a.warmup}
    rows, failed, t0 = [], [], time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vs-scale-") as tmp:
        for policy in a.policies.split(","):
            for load in a.loads.split(","):
                for n in map(int, a.sizes.split(",")):
                    spec = {"build": build, "policy": policy, "load": load, "n": n,
                            "seconds": a.seconds, "warmup": a.warmup}
                    row = {"policy": policy, "load": load, "n": n}
                    print(f"cell: {policy} {load} n={n}", file=sys.stderr, flush=True)
                    if not a.no_real:
                        row["real"] = run_real(spec)
                        if row["real"] is None:
                            failed.append(f"{policy} {load} {n} (real)")
                    if not a.no_instructions:
                        try:
                            row["instructions"] = cell_instructions(spec, tmp)
                        except (RuntimeError, OSError) as e:
                            print(f"scale_bench: {e}", file=sys.stderr)
                            failed.append(f"{policy} {load} {n} (instructions)")
                    rows.append(row)
    md = report(cmdline, facts, rows, time.monotonic() - t0)
    print(md)
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, "scale-" + datetime.datetime.now().strftime("%Y%m%d-%H%M"))
    with open(base + ".md", "w") as f:
        f.write(md)
    with open(base + ".json", "w") as f:
        json.dump({"command": cmdline, "machine": facts, "rows": rows}, f, indent=1)
    print(f"wrote {base}.md and .json", file=sys.stderr)
    if failed:
        print("scale_bench: failed cells: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
