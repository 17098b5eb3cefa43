# SPDX-License-Identifier: ISC
"""The ping benchmark's report: Markdown tables (RTT distribution per
cell, the goals, the tail's causes, CPU shares, where network work runs)
and the plots (bench/ping_plots.py, run by a Python that has matplotlib)."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOADED = ("cpu", "net", "netmax", "burst", "cpu-nopin")


def pct(xs, p):
    s = sorted(xs)
    return s[max(1, min(len(s), int(p / 100.0 * len(s) + 0.999999))) - 1]


def plot_python():
    """An interpreter with matplotlib: this one, else Debian's (python3-matplotlib)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return py
    return None


def plot(base, res, a, rows):
    """PNG files: one CDF chart per background and one summary chart."""
    py = plot_python()
    if py is None:
        raise RuntimeError("no matplotlib: apt-get install python3-matplotlib "
                           "(scripts/deps.sh), or pass --no-plots")
    data = {"backgrounds": list(a.backgrounds),
            "rows": [{"spec": r.spec, "label": r.label()} for r in rows],
            "rtts": {r.spec: {bg: res[r.spec][bg]["rtts"] for bg in a.backgrounds}
                     for r in rows}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
    try:
        out = subprocess.run([py, os.path.join(HERE, "ping_plots.py"), f.name, base],
                             capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        raise RuntimeError(f"ping_plots.py failed: {out.stderr[-2000:]}")
    return out.stdout.split()


def bg_share(cell):
    """Mean CPU % of the background VMs' vCPU threads, and of ping+pong's."""
    if not cell["share"]:
        return None, None
    bg = [sum(v["vcpu_pct"] for k, v in s.items() if k not in ("ping", "pong"))
          for s in cell["share"]]
    pp = [sum(v["vcpu_pct"] for k, v in s.items() if k in ("ping", "pong"))
          for s in cell["share"]]
    return sum(bg) / len(bg), sum(pp) / len(pp)


def rt_setting(rt_runtime_us, before):
    """The run's RT throttling in words: the daemon's --rt-runtime-us, or
    the kernel's own setting when it was not given."""
    if rt_runtime_us is None:
        return f"the kernel's ({before}: vcpuschedd without --rt-runtime-us)"
    if rt_runtime_us < 0:
        return "off (vcpuschedd --rt-runtime-us -1 while it runs)"
    return f"{rt_runtime_us} (vcpuschedd --rt-runtime-us {rt_runtime_us} while it runs)"


def markdown(res, a, rows, meta, tail, plots):
    L = [f"# Ping tail latency between VMs ({meta['date']})", "",
         f"Command: `{meta['command']}`", "",
         f"Took {meta['seconds'] // 60} min {meta['seconds'] % 60} s. Host: {meta['host']}, "
         f"accel {meta['accel']}, {meta.get('qemu', '')}, {meta.get('libvirt_version', '')}, "
         f"{meta.get('vcpuschedd', '')} ({meta.get('git', '')}).", "",
         "## Settings", "",
         f"- Mode: **{a.mode}**" + (f", {meta.get('libvirt')}" if a.mode == "libvirt" else "")
         + ".",
         f"- RT throttling: **{rt_setting(a.rt_runtime_us, meta['rt_runtime_us_before'])}**; "
         f"`sched_rt_runtime_us` {meta['rt_runtime_us_before']} before the run, "
         f"{meta.get('rt_runtime_us_seen')} seen at each block and row start (kernel rows "
         f"included), {meta.get('rt_runtime_us_after')} after.",
         *[f"- Row `{d['row']}` left out: {d['why']}." for d in meta.get("rows_left_out", [])],
         f"- {a.reps} repetition(s); per row and repetition {a.count} pings every "
         f"{a.interval * 1000:g} ms, the first {a.warmup} after each switch of row dropped. "
         "All repetitions pooled per cell; rows rotated per repetition.",
         "- Guests: 1 vCPU, 128 MB each; every vCPU thread on CPU 1 (`<vcpupin>`), every "
         "emulator thread on CPU 0 (`<emulatorpin>`)"
         + (", except in `cpu-nopin`: no `<emulatorpin>`, QEMU's other threads kept off CPU 1 "
            "only by the daemon while it manages the VM (`others_on_managed`: how many of a "
            "guest's may run there)" if "cpu-nopin" in a.backgrounds else "")
         + ". vcpuschedd: `--cpus 1 --pattern shared"
         + (f" --rt-runtime-us {a.rt_runtime_us}" if a.rt_runtime_us is not None else "")
         + "`, pool `main`, one daemon per block.",
         f"- Backgrounds: {', '.join(a.backgrounds)}; cpu/burst: {a.hogs} VMs, burst "
         f"{a.burst[0]} ms run / {a.burst[1]} ms sleep; net: iperf3 TCP at {a.net_rate} "
         "Mbit/s, netmax: unlimited.", "",
         "| row | what runs the vCPUs | per-guest settings the kernel and daemon reported |",
         "|---|---|---|"]
    for r in rows:
        st = next((res[r.spec][bg]["settings"] for bg in reversed(a.backgrounds)
                   if res[r.spec][bg]["settings"]), None)
        desc = "; ".join(f"{k}: " + ", ".join(f"{kk}={vv}" for kk, vv in (
            v.items() if not isinstance(v.get("vcpusched"), dict) else
            list({kk: vv for kk, vv in v.items() if kk != "vcpusched"}.items()) +
            [("vcpusched", " ".join(f"{x}={y}" for x, y in v["vcpusched"].items()))]))
            for k, v in (st or {}).items())
        L.append(f"| `{r.spec}` | {r.label()} | {desc} |")
    L += goals(res, a, rows, tail)
    if plots:
        L += ["", "## Plots", ""]
        for p in plots:
            L.append(f"![{os.path.basename(p)}]({os.path.basename(p)})")
    L += rtt_table(res, a, rows)
    if tail:
        L += tail_table(tail, a, rows)
    L += net_table(res, a, rows)
    L += seen_table(res, a, rows)
    return "\n".join(L) + "\n"


def cell_p99(res, spec, bg):
    x = res.get(spec, {}).get(bg, {}).get("rtts")
    return pct(x, 99) if x else None


def top_cause(tail, spec, bg):
    c = tail and tail["cells"].get(f"{spec}|{bg}")
    if not c or not c["causes"]:
        return "no tail sample explained" + ("" if tail else " (--no-trace)")
    k, v = max(c["causes"].items(), key=lambda kv: kv[1]["n"])
    return f"{v['n']} of {c['explained']} tail samples: {k}, see [Why the tail is slow]" \
        "(#why-the-tail-is-slow)"


def verdict(ok, tail, spec, bg):
    return "**met**" if ok else f"**missed**: {top_cause(tail, spec, bg)}"


# The background class (issue 14) beside Xen's remedy and the peers.
CLASS_ROW, CLASS_PEERS = "credit2@@class=background", ("credit2", "credit@@cap=25", "kernel")


def goals(res, a, rows, tail):
    """The goals of the benchmark, met or missed, from this run's cells."""
    L = ["", "## Goals", "",
         "What the run should show, checked on its own cells: Credit2 keeps the ping tail "
         "whatever the background; Credit's default tail under bursty and flat-out network "
         "load is the Xen talk's pathology reproduced.", "",
         "| goal | background | measured | verdict |", "|---|---|---|---|"]
    c2 = cell_p99(res, "credit2", "none")
    for bg in a.backgrounds:
        if bg == "none":
            continue
        p = cell_p99(res, "credit2", bg)
        k = cell_p99(res, "kernel", bg)
        if p and c2:
            L.append(f"| credit2 p99 ≤ 1.2 × its no-background p99 ({c2:.2f} ms) | {bg} | "
                     f"{p:.2f} ms = {p / c2:.2f}× | "
                     f"{verdict(p <= 1.2 * c2, tail, 'credit2', bg)} |")
        if p and k:
            L.append(f"| credit2 p99 ≤ 0.5 × the stock kernel's p99 ({k:.2f} ms) | {bg} | "
                     f"{p:.2f} ms = {p / k:.2f}× | "
                     f"{verdict(p <= 0.5 * k, tail, 'credit2', bg)} |")
    c1 = cell_p99(res, "credit", "none")
    for bg in ("burst", "netmax"):
        p = cell_p99(res, "credit", bg)
        if p and c1:
            L.append(f"| credit (defaults) p99 ≥ 5 × its no-background p99 ({c1:.2f} ms): "
                     f"the pathology reproduced | {bg} | {p:.2f} ms = {p / c1:.2f}× | "
                     f"{verdict(p >= 5 * c1, tail, 'credit', bg)} |")
    return L + nopin_goals(res, a, rows, tail) + class_table(res, a, rows)


def nopin_goals(res, a, rows, tail):
    """Without `<emulatorpin>` the daemon keeps QEMU's other threads off
    the managed CPU itself (issue 19): a vcpusched row's tail as with it."""
    if not {"cpu", "cpu-nopin"} <= set(a.backgrounds):
        return []
    L = []
    for r in rows:
        if not r.vcpusched:
            continue
        p, q = cell_p99(res, r.spec, "cpu-nopin"), cell_p99(res, r.spec, "cpu")
        if not (p and q):
            continue
        st = res[r.spec]["cpu-nopin"]["settings"] or {}
        on = sum(v.get("others_on_managed", 0) for v in st.values())
        L.append(f"| {r.label()} p99 without `<emulatorpin>` ≤ 1.2 × with it ({q:.2f} ms); "
                 f"QEMU threads that may run on CPU 1: {on} | cpu-nopin | {p:.2f} ms = "
                 f"{p / q:.2f}× | {verdict(p <= 1.2 * q and on == 0, tail, r.spec, 'cpu-nopin')} |")
    return L


def class_table(res, a, rows):
    """The background class's p99 beside Credit2 alone, Credit with a cap on
    the background and the kernel, with what each costs the background VMs."""
    specs = [s for s in (CLASS_ROW,) + CLASS_PEERS if s in res]
    if CLASS_ROW not in specs:
        return []
    label = {r.spec: r.label() for r in rows}
    L = ["", "The background class (credit2, the background VMs in class background) beside "
         "Credit2 alone, Xen's cap remedy and the kernel: ping p99 in ms, and the background "
         "VMs' vCPU CPU % (summed, mean over repetitions), what each remedy costs them.", "",
         "| background | " + " | ".join(f"{label[s]}: p99 / bg CPU %" for s in specs) + " |",
         "|---|" + "---|" * len(specs)]
    for bg in a.backgrounds:
        if bg == "none":
            continue
        cells = []
        for s in specs:
            p, (b, _) = cell_p99(res, s, bg), bg_share(res[s][bg])
            cells.append("" if p is None else f"{p:.2f} / {'' if b is None else f'{b:.1f}'}")
        L.append(f"| {bg} | " + " | ".join(cells) + " |")
    return L


def rtt_table(res, a, rows):
    L = ["", "## RTT per cell (ms)", "",
         "`p99 runs`: range of the per-repetition p99. `bg CPU %`: the background VMs' "
         "vCPU threads, summed, mean over repetitions (what each remedy costs them); "
         "`ping+pong CPU %` likewise.", "",
         "| background | row | n | p50 | p99 | p99.9 | max | p99 runs | p99 / kernel | "
         "bg CPU % | ping+pong CPU % | lost |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for bg in a.backgrounds:
        base = res.get("kernel", {}).get(bg, {}).get("rtts")
        for r in rows:
            c = res[r.spec][bg]
            x = c["rtts"]
            if bg == "none" and r.bg_only():
                L.append(f"| {bg} | {r.label()} | no background VMs: same as `{r.base()}` "
                         "| | | | | | | | | |")
                continue
            if not x:
                L.append(f"| {bg} | {r.label()} | 0 | | | | | | | | | {c['lost']} |")
                continue
            ratio = f"{pct(x, 99) / pct(base, 99):.2f}" if base else ""
            b, pp = bg_share(c)
            L.append(f"| {bg} | {r.label()} | {len(x)} | {pct(x, 50):.2f} | {pct(x, 99):.2f} | "
                     f"{pct(x, 99.9):.2f} | {max(x):.2f} | {min(c['p99s']):.2f}-"
                     f"{max(c['p99s']):.2f} | {ratio} | "
                     f"{'' if b is None or bg == 'none' else f'{b:.1f}'} | "
                     f"{'' if pp is None else f'{pp:.1f}'} | {c['lost']} |")
    return L


def tail_table(tail, a, rows):
    L = ["", "## Why the tail is slow", "",
         "Every RTT above its cell's p99 (repetitions pooled), explained from the row's "
         "scheduling events (bench/ping_tail.py): in the sample's window on the host clock, "
         "how long the pong and ping vCPUs were runnable but not running on CPU 1, and "
         "the emulator threads on CPU 0; for the longest vCPU wait, who ran meanwhile, what "
         "ended the wait (the runner blocked, or was preempted at its slice end, at the "
         "ratelimit's end, at a tick, at the end of a background-class vCPU's alpha slice, "
         "by the kernel) and whether the runner had just "
         "woken itself (`BOOST`: under Credit a woken vCPU is boosted until the next tick "
         "and nothing preempts it), or, under Credit2, the waiter woke inside the "
         "runner's ratelimit (`no tickle`: Xen tickles no CPU whose runner is within its "
         "ratelimit, so the waiter waits out the slice the runner got while nobody "
         "waited, up to 10 ms). `aligned`: samples of the cell whose printing time "
         "was found in the trace.", "",
         "| background | row | p99 | tail n | explained | aligned | causes (count, median "
         "wait ms) |", "|---|---|---|---|---|---|---|"]
    for bg in a.backgrounds:
        for r in rows:
            c = tail["cells"].get(f"{r.spec}|{bg}")
            if not c:
                continue
            causes = "<br>".join(
                f"{v['n']}× {k} ({sorted(v['wait_ms'])[len(v['wait_ms']) // 2]:.1f})"
                for k, v in sorted(c["causes"].items(), key=lambda kv: -kv[1]["n"])[:4])
            L.append(f"| {bg} | {r.label()} | {c['p99']:.2f} | {c['n_tail']} | "
                     f"{c['explained']} | {c['aligned']}/{c['n']} | {causes} |")
    return L


def net_table(res, a, rows):
    """Where the network background's work runs: vCPU or emulator threads."""
    L = []
    for bg in ("net", "netmax"):
        if bg not in a.backgrounds:
            continue
        for r in rows:
            if r.spec not in ("kernel", "credit"):
                continue
            sh = res[r.spec][bg]["share"]
            if not sh:
                continue
            if not L:
                L = ["", "## Where the network background's work runs (TCG)", "",
                     "CPU time of each VM's vCPU threads (CPU 1) and of its other threads "
                     "(QEMU's main loop, I/O and RCU threads: CPU 0), % of one CPU, mean over "
                     "repetitions, from /proc schedstat.", "",
                     "| background | row | VM | vCPU % | emulator threads % |",
                     "|---|---|---|---|---|"]
            for vm in sorted(sh[0]):
                v = sum(s[vm]["vcpu_pct"] for s in sh if vm in s) / len(sh)
                o = sum(s[vm]["other_pct"] for s in sh if vm in s) / len(sh)
                L.append(f"| {bg} | {r.label()} | {vm} | {v:.1f} | {o:.1f} |")
    return L


def seen_table(res, a, rows):
    out = []
    for bg in a.backgrounds:
        for r in rows:
            runs = res[r.spec][bg]["seen"]
            for vm in sorted({n for x in runs for n in x}):
                vals = [x[vm] for x in runs if vm in x]
                avg = {k: sum(v.get(k, 0) for v in vals) / len(vals)
                       for k in sorted({k for v in vals for k in v})}
                extra = ", ".join(f"{k} {avg[k]:.0f}" for k in
                                  ("boosts", "parks", "resets", "steals") if k in avg)
                out.append(f"| {bg} | {r.label()} | {vm} | {avg['cpu_pct']:.1f} | "
                           f"{avg['wakes']:.0f} | {extra} |")
    if not out:
        return []
    return ["", "## What the scheduler saw", "",
            "Per VM, the daemon's own counters while the row ran (mean over repetitions; "
            "per second):", "",
            "| background | row | VM | CPU % | wakes/s | policy counters/s |",
            "|---|---|---|---|---|---|"] + out
