# SPDX-License-Identifier: ISC
"""Why each slow ping was slow, from the kernel's scheduling events.

ping_latency.py records every row with a tracefs instance
(schedtrace.Recorder, CLOCK_MONOTONIC): sched_switch on every CPU (with
the priorities, so an elected vCPU at the daemon's middle level shows as
such), sched_wakeup of every guest thread, and the ping guest's writes to
its serial log. The guest prints one VS-RTT line per reply; the byte
offset of that line in the log and the traced writes give the moment it
was printed, so each RTT sample gets its window on the host's clock:
[printed - rtt - 2 ms, printed].

In that window, per sample:
- how long the pong and ping vCPUs were runnable but not running (woken,
  or preempted, until switched in), and the emulator threads of both VMs
  (housekeeping CPU), and who ran on the CPU meanwhile;
- for the longest vCPU wait: what ended it (the runner blocked; the
  policy's slice end, ratelimit end or tick; a preemption after some other
  time; the kernel's own preemption) and the runner's state when the vCPU
  woke (it had just woken itself: under Credit a BOOSTed vCPU that nothing
  preempts, xen-sched.md behaviour 8), and how far into its run the
  runner was (under Credit2 a wake inside the runner's ratelimit tickles
  nobody, so the wait lasts the runner's whole credit slice).
Samples above the cell's p99 (all repetitions pooled) make the tail table.
The windows are exported in Chrome's JSON trace format (gzip), which
Perfetto's UI (ui.perfetto.dev) and chrome://tracing open."""

import bisect
import gzip
import json
import os
import re

import schedtrace

MS = 1_000_000
WRITE_COUNT = re.compile(r"count: (0x[0-9a-f]+|\d+)")
WINDOW_PAD_NS = 2 * MS  # before the round trip: the send and its kick
EXPORT_PAD_NS = 5 * MS
KEEP_TOP = 0.03  # per run: samples kept for the pooled tail (superset of the top 1%)


class Timeline:
    """Per thread: running and waiting (runnable, not running) intervals,
    from switches and wakeups; per CPU: who ran when."""

    def __init__(self, sw, wk, tids):
        self.run = {t: [] for t in tids}   # (start, end, cpu, prio)
        self.wait = {t: [] for t in tids}  # (start, end, why: wake|preempt)
        self.cpu = {}                      # cpu -> [(start, end, tid, prio, end state)]
        on, waiting = {}, {}
        events = [(e[0], 1, e) for e in sw] + [(w[0], 0, w) for w in wk]
        events.sort(key=lambda x: (x[0], x[1]))
        cur = {}
        for ts, kind, e in events:
            if kind == 0:
                t = e[1]
                if t in self.wait and t not in on and t not in waiting:
                    waiting[t] = (ts, "wake")
                continue
            _, c, prev, pprio, pstate, nxt, nprio = e
            if c in cur and cur[c][1] != prev:
                # A switch-in the trace lacks: this kernel records no switch
                # away from idle on the managed CPU (0 of 558 in one row,
                # while CPU 0 has them all). prev has run since its wake-up
                # there, or since the CPU's last recorded switch.
                s, tid, pr = cur[c]
                t_in = waiting[prev][0] if prev in waiting and waiting[prev][0] >= s else s
                self.cpu.setdefault(c, []).append((s, t_in, tid, pr, "?"))
                if tid in self.run and on.get(tid, (None,))[0] == c:
                    _, s_on, p_on = on.pop(tid)
                    self.run[tid].append((s_on, t_in, c, p_on))
                cur[c] = (t_in, prev, pprio)
                if prev in self.run:
                    if prev in waiting:
                        w_s, why = waiting.pop(prev)
                        if t_in > w_s:
                            self.wait[prev].append((w_s, t_in, why))
                    on[prev] = (c, t_in, pprio)
            if c in cur:
                s, tid, pr = cur[c]
                self.cpu.setdefault(c, []).append((s, ts, tid, pr, pstate))
            cur[c] = (ts, nxt, nprio)
            if prev in self.run and on.get(prev, (None,))[0] == c:
                _, s, pr = on.pop(prev)
                self.run[prev].append((s, ts, c, pr))
                if pstate.startswith("R"):
                    waiting[prev] = (ts, "preempt")
            if nxt in self.run:
                if nxt in waiting:
                    s, why = waiting.pop(nxt)
                    self.wait[nxt].append((s, ts, why))
                on[nxt] = (c, ts, nprio)

    def waits_in(self, tid, a, b):
        """Waiting time of tid clipped to [a, b], and the intervals."""
        tot, ivs = 0, []
        for s, e, why in self.wait.get(tid, ()):
            if e <= a or s >= b:
                continue
            tot += min(e, b) - max(s, a)
            ivs.append((s, e, why))
        return tot, ivs

    def who_ran(self, c, a, b):
        """{tid: ns} on CPU c in [a, b]."""
        out = {}
        for s, e, tid, _, _ in self.cpu.get(c, ()):
            if e <= a or s >= b:
                continue
            out[tid] = out.get(tid, 0) + min(e, b) - max(s, a)
        return out


def _writes(other):
    """(ns, bytes) of each write to the serial log: write() carries its
    count; a writev() (QEMU's) is its entry paired with the thread's next
    exit, whose return value is the count."""
    w, entered = [], {}
    for ns, tid, ev, rest in other:
        if ev == "sys_write" or ev.startswith("sys_enter_write"):
            m = WRITE_COUNT.search(rest)
            if m:
                w.append((ns, int(m.group(1), 0)))
        elif ev == "sys_writev":
            if rest.startswith("fd:"):
                entered[tid] = ns
            elif tid in entered:
                n = int(rest.split()[0], 16)
                if n < 1 << 62:  # an error is a negative value printed as unsigned
                    w.append((entered.pop(tid), n))
                else:
                    entered.pop(tid)
    return sorted(w)


def align(trace, writes):
    """seq -> ns at which its VS-RTT line was printed, from the byte
    offsets of the lines and the traced writes (the file had size0 bytes
    when tracing began). The third byte of the line is looked up, so an
    off-by-one or two at the start (a write in flight) does not matter."""
    if not writes or trace["size0"] != trace["size1"]:
        return {}
    ends, acc = [], trace["size0"]
    for _, n in writes:
        acc += n
        ends.append(acc)
    out = {}
    for seq, off in trace["offsets"]:
        k = bisect.bisect_right(ends, off + 2)
        if k < len(writes):
            out[seq] = writes[k][0]
    return out


def label(tmap, comms, tid):
    if tid == 0:
        return "idle"
    g = tmap.get(tid)
    if g:
        return f"{g[0]} {g[1]}"
    return "host:" + comms.get(tid, "?")


def stretch_start(tl, c, tid, t_out, daemon):
    """Start of tid's stretch on CPU c that ends at t_out, joining runs
    interrupted only by the daemon's dispatcher or idle."""
    segs = [x for x in tl.cpu.get(c, ()) if x[1] <= t_out]
    i = len(segs) - 1
    start = None
    while i >= 0:
        s, e, t = segs[i][:3]
        if t == tid:
            start = s
        elif t not in daemon and t != 0 and start is not None:
            break
        elif start is None and t != tid and t not in daemon:
            break
        i -= 1
    return start


def decide(tl, row, tmap, comms, waiter, ws, we, daemon):
    """What ended the longest wait of `waiter` ([ws, we] on CPU 1) and what
    the runner was doing when it began."""
    ran = tl.who_ran(1, ws, we)
    ran_vm = {t: n for t, n in ran.items() if t != 0 and t not in daemon}
    runner = max(ran_vm, key=ran_vm.get) if ran_vm else None
    out = {"runner": label(tmap, comms, runner) if runner else "idle",
           "idle_ms": ran.get(0, 0) / MS,
           "daemon_ms": sum(n for t, n in ran.items() if t in daemon) / MS,
           "ran": {label(tmap, comms, t): round(n / MS, 3) for t, n in
                   sorted(ran.items(), key=lambda x: -x[1])[:4]}}
    if runner is None:
        out["ended"] = "CPU idle or daemon only"
        return out
    # The runner's last switch-out before the waiter ran, and how it left.
    segs = [x for x in tl.cpu.get(1, ()) if x[2] == runner and x[1] <= we + 1000]
    if not segs:
        out["ended"] = "unknown"
        return out
    s_last, t_out, _, prio, state = segs[-1]
    out["runner_prio"] = prio
    blocked = not state.startswith("R")
    st = stretch_start(tl, 1, runner, t_out, daemon) or s_last
    L = (t_out - st) / MS
    out["runner_ran_ms"] = round(L, 3)
    # Did the runner wake just before its stretch (a fresh waker: BOOST under Credit)?
    rw = [w for w in _wakes(tl, runner) if st - 2 * MS <= w <= ws]
    out["runner_woke_ms_before"] = round((ws - rw[-1]) / MS, 3) if rw else None
    p = dict(kv.split("=", 1) for kv in row["pool"])
    # How far into its run the runner was when the waiter woke. Under Credit2
    # a wake in the runner's first ratelimit (less Xen's 50 us tolerance)
    # tickles nobody (is_preemptable), so the waiter waits out the slice the
    # runner was given while nobody waited: up to its credit, at most 10 ms.
    cover = [x for x in tl.cpu.get(1, ()) if x[2] == runner and x[0] <= ws < x[1]]
    if cover:
        into = (ws - (stretch_start(tl, 1, runner, cover[-1][1], daemon) or cover[-1][0])) / MS
        out["woke_into_run_ms"] = round(into, 3)
        if row["sched"] == "credit2" and not blocked:
            rl_ms = float(p.get("ratelimit_us", 1000)) / 1000
            out["inside_ratelimit"] = rl_ms > 0.05 and into <= rl_ms - 0.05
    if blocked:
        out["ended"] = "runner blocked"
    elif row["sched"] == "kernel":
        out["ended"] = "kernel preempted the runner"
    else:
        tslice = {"credit": float(p.get("tslice_ms", 30)),
                  "rr": float(p.get("slice_us", 1000)) / 1000}.get(row["sched"])
        rl = float(p.get("ratelimit_us", 1000)) / 1000
        tick = tslice / 3 if row["sched"] == "credit" else None
        # A background-class runner is held after its alpha slice (a ratelimit's length too).
        held = row["bg"].get("class") == "background" and \
            tmap.get(runner, ("",))[0] not in ("ping", "pong")
        if tslice and abs(L - tslice) <= max(0.5, 0.1 * tslice):
            out["ended"] = "slice end"
        elif held and abs(L - float(p.get("bg_slice_us", 1000)) / 1000) <= 0.3:
            out["ended"] = "background class slice end"
        elif abs(L - rl) <= 0.3:
            out["ended"] = "ratelimit end"
        elif tick and min(t_out % int(tick * MS), int(tick * MS) - t_out % int(tick * MS)) \
                <= 0.3 * MS:
            out["ended"] = "tick"
        else:
            out["ended"] = "policy preempted the runner"
    if row["sched"] == "credit" and out["runner_woke_ms_before"] is not None:
        tick_ns = int(float(p.get("tslice_ms", 30)) / 3 * MS)
        woke = ws - int(out["runner_woke_ms_before"] * MS)
        out["runner_boosted"] = woke // tick_ns == ws // tick_ns
    return out


def _wakes(tl, tid):
    return sorted(s for s, e, why in tl.wait.get(tid, ()) if why == "wake")


def explain_run(trace):
    """Explanations of one row run's slowest samples (top KEEP_TOP), and
    their windows as Chrome trace events. Deletes the raw trace."""
    path = trace["path"]
    try:
        sw, wk, other, comms = schedtrace.parse_mono(path)
    finally:
        os.unlink(path)
    tmap = {int(t): tuple(v) for t, v in trace["threads"].items()}
    keys = {v: t for t, v in tmap.items()}
    daemon = {t for t, v in tmap.items() if v[0] == "vcpuschedd"}
    tl = Timeline(sw, wk, list(tmap))
    writes = _writes(other)
    when = align(trace, writes)
    rtts = dict(zip((s for s, _ in trace["offsets"]), trace["rtts"]))
    if not rtts:
        return {"samples": {}, "aligned": 0, "n": 0}
    ordered = sorted(rtts.values())
    cut = ordered[max(0, int(len(ordered) * (1 - KEEP_TOP)) - 1)]
    p50 = ordered[len(ordered) // 2]
    ping_v, pong_v = keys.get(("ping", "vcpu")), keys.get(("pong", "vcpu"))
    emus = [t for t, v in tmap.items() if v[0] in ("ping", "pong") and v[1] == "emu"]
    samples = {}
    for seq, rtt in rtts.items():
        if rtt < cut or seq not in when:
            continue
        b = when[seq]
        a = b - int(rtt * MS) - WINDOW_PAD_NS
        w_pong, iv_pong = tl.waits_in(pong_v, a, b) if pong_v else (0, [])
        w_ping, iv_ping = tl.waits_in(ping_v, a, b) if ping_v else (0, [])
        w_emu = max((tl.waits_in(t, a, b)[0] for t in emus), default=0)
        excess = max(rtt - p50, 0.001)
        comp = {"pong vCPU": w_pong / MS, "ping vCPU": w_ping / MS, "emulator threads": w_emu / MS}
        top = max(comp, key=comp.get)
        x = {"seq": seq, "rtt": rtt, "t": b, "pong_wait_ms": round(w_pong / MS, 3),
             "ping_wait_ms": round(w_ping / MS, 3), "emu_wait_ms": round(w_emu / MS, 3),
             "cpu0": {label(tmap, comms, t): round(n / MS, 3) for t, n in sorted(
                 tl.who_ran(0, a, b).items(), key=lambda x: -x[1])[:3]}}
        if sum(comp.values()) < 0.5 * excess:
            x["cause"] = "no long wait: emulation and guest work"
        elif top == "emulator threads":
            x["cause"] = "emulator threads waited (CPU 0)"
        else:
            x["cause"] = f"{top} waited"
            ivs = iv_pong if top == "pong vCPU" else iv_ping
            ws, we, _ = max(ivs, key=lambda i: min(i[1], b) - max(i[0], a))
            x["wait"] = [round((ws - a) / MS, 3), round((we - ws) / MS, 3)]
            x.update(decide(tl, trace["row"], tmap, comms, pong_v if top == "pong vCPU"
                            else ping_v, ws, we, daemon))
        x["events"] = window_events(tl, tmap, comms, a - EXPORT_PAD_NS, b + EXPORT_PAD_NS,
                                    [t for t in (ping_v, pong_v) if t])
        samples[seq] = x
    return {"samples": samples, "aligned": len(when), "n": len(rtts),
            "overrun": trace["overrun"], "writes": len(writes),
            "size_moved": trace["size1"] - trace["size0"]}


def window_events(tl, tmap, comms, a, b, waiters):
    """Chrome trace events of [a, b]: who ran on each CPU, the vCPUs' waits."""
    ev = []
    for c in sorted(tl.cpu):
        for s, e, tid, prio, _ in tl.cpu[c]:
            if e <= a or s >= b:
                continue
            ev.append({"ph": "X", "pid": 1, "tid": c, "ts": s / 1000, "dur": (e - s) / 1000,
                       "name": label(tmap, comms, tid),
                       "args": {"tid": tid, "prio": prio}})
    for t in waiters:
        for s, e, why in tl.wait.get(t, ()):
            if e <= a or s >= b:
                continue
            ev.append({"ph": "X", "pid": 2, "tid": t, "ts": s / 1000, "dur": (e - s) / 1000,
                       "name": f"waiting ({why})", "args": {"thread": label(tmap, comms, t)}})
    return ev


def analyse(res, a, rows):
    """Per cell: the explained samples above the pooled p99, and a table of
    causes. res[spec][bg]["explained"] holds each run's explain_run()."""
    cells = {}
    for r in rows:
        for bg in a.backgrounds:
            cell = res[r.spec][bg]
            if not cell["rtts"] or not cell.get("explained"):
                continue
            p99 = sorted(cell["rtts"])[max(0, int(len(cell["rtts"]) * 0.99 + 0.999999) - 1)]
            tail = [x for run in cell["explained"] for x in run["samples"].values()
                    if x["rtt"] > p99]
            n_tail = sum(1 for x in cell["rtts"] if x > p99)
            aligned = sum(run["aligned"] for run in cell["explained"])
            n = sum(run["n"] for run in cell["explained"])
            causes = {}
            for x in tail:
                key = x["cause"]
                if "ended" in x:
                    why = x["ended"]
                    if x.get("runner_boosted"):
                        why = "runner BOOST (woke " \
                              f"{x['runner_woke_ms_before']:.1f} ms before), {why}"
                    if x.get("inside_ratelimit"):
                        why = f"woke inside the runner's ratelimit (no tickle), {why}"
                    other = " (SCHED_OTHER)" if x.get("runner_prio", 0) >= 100 and (
                        r.vcpusched or r.pp_vcpusched()) else ""
                    key = f"{x['cause']}: {x['runner']}{other} ran; {why}"
                c = causes.setdefault(key, {"n": 0, "wait_ms": []})
                c["n"] += 1
                w = x.get("wait", [0, max(x["pong_wait_ms"], x["ping_wait_ms"], x["emu_wait_ms"])])
                c["wait_ms"].append(w[1])
            cells[f"{r.spec}|{bg}"] = {
                "spec": r.spec, "bg": bg, "p99": p99, "n_tail": n_tail,
                "explained": len(tail), "aligned": aligned, "n": n,
                "overrun": sum(run.get("overrun", 0) for run in cell["explained"]),
                "causes": causes, "samples": tail}
    return {"cells": cells}


def export(tail, path):
    """The windows of every explained tail sample as one gzipped Chrome JSON
    trace: process 1 = CPUs (a track per CPU), 2 = ping/pong vCPU waits,
    3 = the tail samples (a slice per RTT with its explanation)."""
    ev = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "CPUs"}},
          {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "vCPU waits"}},
          {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "tail samples"}},
          {"ph": "M", "pid": 1, "tid": 0, "name": "thread_name", "args": {"name": "CPU 0"}},
          {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "CPU 1"}}]
    named = set()
    for key, cell in tail["cells"].items():
        for x in cell["samples"]:
            for e in x.pop("events", []):
                if e["pid"] == 2 and e["tid"] not in named:
                    named.add(e["tid"])
                    ev.append({"ph": "M", "pid": 2, "tid": e["tid"], "name": "thread_name",
                               "args": {"name": e["args"]["thread"]}})
                ev.append(e)
            ev.append({"ph": "X", "pid": 3, "tid": 1, "ts": (x["t"] - x["rtt"] * MS) / 1000,
                       "dur": x["rtt"] * 1000, "name": f"{cell['bg']} {cell['spec']} "
                       f"seq {x['seq']}: {x['rtt']:.1f} ms",
                       "args": {k: v for k, v in x.items() if k not in ("t",)}})
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev, "displayTimeUnit": "ms"}, f)
    return path


def check_chrome_trace(path):
    """Schema check of a Chrome JSON trace (the Trace Event Format): a
    traceEvents list whose events have the fields their phase needs.
    Returns the number of events; raises ValueError on the first bad one."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    if not isinstance(evs, list):
        raise ValueError("traceEvents is not a list")
    for i, e in enumerate(evs):
        ph = e.get("ph")
        if ph not in ("X", "M", "i", "B", "E", "C"):
            raise ValueError(f"event {i}: unknown phase {ph!r}")
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("name"), str):
            raise ValueError(f"event {i}: pid and name are required")
        if ph == "X":
            if not all(isinstance(e.get(k), (int, float)) for k in ("ts", "dur")) or \
                    e["dur"] < 0 or not isinstance(e.get("tid"), int):
                raise ValueError(f"event {i}: X needs tid, ts and dur >= 0")
        if ph == "M" and e["name"] not in ("process_name", "thread_name") or \
                ph == "M" and not isinstance(e.get("args", {}).get("name"), str):
            raise ValueError(f"event {i}: bad metadata event")
    return len(evs)
