# SPDX-License-Identifier: ISC
"""Kernel scheduling events of a short window, from a private tracefs
instance: every sched_switch on the traced CPUs (and sched_wakeup of chosen
threads), stamped with the TSC and converted to ns with a scale measured when the
instance opens (two trace_marker lines carrying CLOCK_MONOTONIC, 0.2 s
apart, while nothing real-time runs: a marker written later may be
delayed by a busy-polling dispatcher, so windows use markers only as
bounds). The kernel records into its own buffer
while the window lasts and the trace is read afterwards, so a starved
reader (the dedicated dispatcher busy-polls the housekeeping CPU) loses
nothing; the buffer's overrun counters are checked and reported.

Used by engine_bench.py; analysis helpers (stretches, gaps, wake-to-run,
CPU time by class) live here too, so they can be tested on a saved trace."""

import os
import re
import subprocess
import time

TRACEFS = "/sys/kernel/tracing"
BUFFER_KB = 32768  # per CPU: ~500k switch events, a few seconds at 5 us slices

LINE = re.compile(r"^\s*.+?-(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<ts>\d+): "
                  r"(?P<event>\w+): (?P<rest>.*)$")
SWITCH = re.compile(r"prev_comm=(?P<pc>.*?) prev_pid=(?P<pp>\d+) prev_prio=\d+ "
                    r"prev_state=(?P<ps>\S+) ==> next_comm=(?P<nc>.*?) next_pid=(?P<np>\d+) ")
WAKEUP = re.compile(r"comm=.*? pid=(?P<pid>\d+) prio=\d+ target_cpu=(?P<cpu>\d+)")
MARK = re.compile(r"vsbench-mark (\d+)")


def ensure_tracefs():
    """tracefs at TRACEFS, mounting it when it is not (hosts without systemd
    leave it unmounted); a clear error when that is impossible."""
    if os.path.isdir(os.path.join(TRACEFS, "instances")):
        return
    r = subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True,
                       text=True)
    if r.returncode != 0 or not os.path.isdir(os.path.join(TRACEFS, "instances")):
        raise RuntimeError(f"tracefs is not mounted at {TRACEFS} and mounting it failed "
                           f"({r.stderr.strip() or 'no instances/ after mount'}): as root, "
                           f"mount -t tracefs nodev {TRACEFS}")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _read(path):
    with open(path) as f:
        return f.read()


class Switch:
    __slots__ = ("ts", "cpu", "prev", "prev_state", "next", "next_comm")

    def __init__(self, ts, cpu, prev, prev_state, nxt, next_comm):
        self.ts, self.cpu, self.prev, self.prev_state = ts, cpu, prev, prev_state
        self.next, self.next_comm = nxt, next_comm


class Window:
    """One captured window: switches and wakeups in ns (CLOCK_MONOTONIC),
    the trace's overrun count, and the window's bounds."""

    def __init__(self, switches, wakeups, start_ns, end_ns, overrun, comms):
        self.switches, self.wakeups = switches, wakeups
        self.start_ns, self.end_ns = start_ns, end_ns
        self.overrun, self.comms = overrun, comms


class SchedTrace:
    """A tracefs instance owned by this process; remove with close()."""

    def __init__(self, cpus=(0, 1), wake_tids=()):
        ensure_tracefs()
        self.dir = os.path.join(TRACEFS, "instances", f"vsbench-{os.getpid()}")
        os.mkdir(self.dir)
        try:
            _write(self._p("trace_clock"), "x86-tsc")
            _write(self._p("tracing_cpumask"), "%x" % sum(1 << c for c in cpus))
            _write(self._p("buffer_size_kb"), str(BUFFER_KB))
            _write(self._p("events/sched/sched_switch/enable"), "1")
            if wake_tids:
                flt = " || ".join(f"pid == {t}" for t in wake_tids)
                _write(self._p("events/sched/sched_wakeup/filter"), flt)
                _write(self._p("events/sched/sched_wakeup/enable"), "1")
            _write(self._p("tracing_on"), "0")
        except OSError:
            self.close()
            raise
        self.cpus = cpus
        self.scale = self._calibrate()

    def _calibrate(self):
        """ns per TSC tick, from two markers 0.2 s apart."""
        _write(self._p("trace"), "")
        _write(self._p("tracing_on"), "1")
        self._mark()
        time.sleep(0.2)
        self._mark()
        _write(self._p("tracing_on"), "0")
        marks = [(int(m["ts"]), int(MARK.search(m["rest"])[1]))
                 for m in map(LINE.match, _read(self._p("trace")).splitlines())
                 if m and MARK.search(m["rest"])]
        (t0, m0), (t1, m1) = marks
        return (m1 - m0) / (t1 - t0)

    def _p(self, name):
        return os.path.join(self.dir, name)

    def _mark(self):
        _write(self._p("trace_marker"), "vsbench-mark %d" % time.clock_gettime_ns(
            time.CLOCK_MONOTONIC))

    def capture(self, seconds):
        """Record `seconds` of events and return a Window."""
        self.start()
        time.sleep(seconds)
        return self.stop()

    def start(self):
        _write(self._p("trace"), "")  # clears the buffers
        _write(self._p("tracing_on"), "1")
        self._mark()

    def stop(self):
        """End the window begun by start() and return it."""
        self.pause()
        return self.collect()

    def pause(self):
        """End the window; the events stay in the buffer until collect()."""
        self._mark()
        _write(self._p("tracing_on"), "0")

    def collect(self):
        """Read and parse the paused window (slow: do it once the CPU is free)."""
        overrun = 0
        for c in self.cpus:
            for line in _read(self._p(f"per_cpu/cpu{c}/stats")).splitlines():
                if line.startswith(("overrun:", "dropped events:")):
                    overrun += int(line.split(":")[1])
        return parse(_read(self._p("trace")), self.scale, overrun)

    def close(self):
        if os.path.isdir(self.dir):
            for ev in ("sched_switch", "sched_wakeup"):
                _write(self._p(f"events/sched/{ev}/enable"), "0")
            _write(self._p("tracing_on"), "0")
            os.rmdir(self.dir)


def parse(text, scale, overrun=0):
    """Parse a trace; TSC stamps become ns (scale: ns per tick) counted from
    the first marker, and the window ends at the second."""
    marks, raw_sw, raw_wk, comms = [], [], [], {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m is None:
            continue
        ts, ev, rest = int(m["ts"]), m["event"], m["rest"]
        if ev == "sched_switch":
            s = SWITCH.search(rest)
            if s:
                raw_sw.append((ts, int(m["cpu"]), int(s["pp"]), s["ps"], int(s["np"])))
                comms.setdefault(int(s["np"]), s["nc"])
                comms.setdefault(int(s["pp"]), s["pc"])
        elif ev == "sched_wakeup":
            w = WAKEUP.search(rest)
            if w:
                raw_wk.append((ts, int(w["pid"])))
        elif MARK.search(rest):
            marks.append((ts, int(MARK.search(rest)[1])))
    if len(marks) != 2 or marks[1][0] <= marks[0][0]:
        raise RuntimeError(f"trace: expected 2 markers, found {len(marks)}")
    t0, t1 = marks[0][0], marks[1][0]

    def ns(t):
        return round((t - t0) * scale)

    sw = [Switch(ns(t), c, p, ps, n, comms.get(n, "?")) for t, c, p, ps, n in raw_sw]
    wk = [(ns(t), pid) for t, pid in raw_wk]
    return Window(sw, wk, 0, ns(t1), overrun, comms)


def stretches(win, cpu, tids):
    """Per target on `cpu`: run = each continuous on-CPU stretch (switch-in
    to switch-out), gap = switch-out to the next switch-in. A switch-in of a
    thread already in, or a switch-out of one not in, means the kernel
    skipped a tracepoint: that stretch is dropped and counted."""
    runs, gaps, broken = [], [], 0
    on, off, seen = {}, {}, set()  # a first switch-out is the window's start, not a skip
    for s in win.switches:
        if s.cpu != cpu:
            continue
        if s.prev in tids:
            if s.prev in on:
                runs.append(s.ts - on.pop(s.prev))
            elif s.prev in seen:
                broken += 1
            off[s.prev] = s.ts
            seen.add(s.prev)
        if s.next in tids:
            seen.add(s.next)
            if s.next in on:
                broken += 1
            if s.next in off:
                gaps.append(s.ts - off.pop(s.next))
            on[s.next] = s.ts
    return runs, gaps, broken


def time_by_class(win, cpu, classes):
    """CPU time of `cpu` in the window by class: classes maps tid -> name;
    pid 0 is 'idle', anything else 'other:<comm>'. Returns {name: ns}."""
    out, cur, since = {}, None, None
    for s in win.switches:
        if s.cpu != cpu:
            continue
        if cur is not None:
            key = classes.get(cur) or ("idle" if cur == 0 else
                                       "other:" + win.comms.get(cur, "?"))
            out[key] = out.get(key, 0) + s.ts - since
        cur, since = s.next, s.ts
    return out


def wake_to_run(win, tid):
    """Latency from each sched_wakeup of tid to its next switch-in (ns)."""
    ins = [s.ts for s in win.switches if s.next == tid]
    out, j = [], 0
    for ts, pid in win.wakeups:
        if pid != tid:
            continue
        while j < len(ins) and ins[j] < ts:
            j += 1
        if j < len(ins):
            out.append(ins[j] - ts)
    return out


class Recorder:
    """A tracefs instance for long windows on CLOCK_MONOTONIC (trace_clock
    mono: µs in the text, the daemon's and the benchmark's clock, so no
    calibration) with any events and filters, e.g.
    {"sched/sched_switch": None, "sched/sched_wakeup": "pid == 12 || pid == 13"}.
    Each window is saved as the kernel's text (save()) and parsed later
    with parse_mono(), so that reading it costs nothing while measuring."""

    def __init__(self, events, name="vsping", buffer_kb=65536):
        ensure_tracefs()
        self.dir = os.path.join(TRACEFS, "instances", f"{name}-{os.getpid()}")
        os.mkdir(self.dir)
        self.events = list(events)
        try:
            _write(self._p("trace_clock"), "mono")
            _write(self._p("buffer_size_kb"), str(buffer_kb))
            _write(self._p("tracing_on"), "0")
            self.set_events(events)
        except OSError:
            self.close()
            raise

    def _p(self, name):
        return os.path.join(self.dir, name)

    def set_events(self, events):
        """Enable exactly these events (path under events/) with their filters."""
        for ev in self.events:
            _write(self._p(f"events/{ev}/enable"), "0")
        for ev, flt in events.items():
            _write(self._p(f"events/{ev}/filter"), flt or "0")
            _write(self._p(f"events/{ev}/enable"), "1")
        self.events = list(events)

    def clear(self):
        """Empty the buffer (slow with large buffers: tens of ms)."""
        _write(self._p("trace"), "")

    def start(self, clear=True):
        if clear:
            self.clear()
        _write(self._p("tracing_on"), "1")

    def stop(self):
        _write(self._p("tracing_on"), "0")

    def overrun(self):
        n = 0
        for c in range(os.cpu_count() or 1):
            try:
                for line in _read(self._p(f"per_cpu/cpu{c}/stats")).splitlines():
                    if line.startswith(("overrun:", "dropped events:")):
                        n += int(line.split(":")[1])
            except OSError:
                pass
        return n

    def save(self, path):
        """Copy the stopped window's text to `path`; returns the overrun count."""
        with open(self._p("trace"), "rb") as src, open(path, "wb") as dst:
            while True:
                b = src.read(1 << 20)
                if not b:
                    break
                dst.write(b)
        return self.overrun()

    def close(self):
        if os.path.isdir(self.dir):
            _write(self._p("tracing_on"), "0")
            for ev in self.events:
                try:
                    _write(self._p(f"events/{ev}/enable"), "0")
                except OSError:
                    pass
            os.rmdir(self.dir)


# Tracepoints print "name: fields", system calls "sys_write(fd: 1, ...)".
MONO_LINE = re.compile(r"^\s*.+?-(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<s>\d+)\.(?P<us>\d+): "
                       r"(?P<event>\w+)(?:: |\(| -> )(?P<rest>.*)$")
SWITCH_PRIO = re.compile(r"prev_comm=(?P<pc>.*?) prev_pid=(?P<pp>\d+) prev_prio=(?P<ppr>\d+) "
                         r"prev_state=(?P<ps>\S+) ==> next_comm=(?P<nc>.*?) next_pid=(?P<np>\d+) "
                         r"next_prio=(?P<npr>\d+)")


def parse_mono(path):
    """A Recorder window: (switches, wakeups, others, comms). switches are
    (ns, cpu, prev, prev_prio, prev_state, next, next_prio); wakeups
    (ns, pid, target_cpu, waker_tid); others (ns, tid, event, rest)."""
    sw, wk, other, comms = [], [], [], {}
    with open(path, errors="replace") as f:
        for line in f:
            m = MONO_LINE.match(line)
            if m is None:
                continue
            ns = int(m["s"]) * 1_000_000_000 + int(m["us"].ljust(9, "0")[:9])
            ev = m["event"]
            if ev == "sched_switch":
                s = SWITCH_PRIO.search(m["rest"])
                if s:
                    pp, np_ = int(s["pp"]), int(s["np"])
                    comms.setdefault(pp, s["pc"])
                    comms.setdefault(np_, s["nc"])
                    sw.append((ns, int(m["cpu"]), pp, int(s["ppr"]), s["ps"], np_,
                               int(s["npr"])))
            elif ev in ("sched_wakeup", "sched_waking"):
                w = WAKEUP.search(m["rest"])
                if w:
                    wk.append((ns, int(w["pid"]), int(w["cpu"]), int(m["tid"])))
            else:
                other.append((ns, int(m["tid"]), ev, m["rest"]))
    return sw, wk, other, comms
