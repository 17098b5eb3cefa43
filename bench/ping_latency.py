#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Ping tail latency between two VMs under background load: vcpusched's
policies against the stock kernel scheduler and what a libvirt operator
does today, side by side, with every tail sample explained.

The Xen experiment (seeds-digest 001) on 1-vCPU QEMU guests: a ping VM
pings a pong VM while background VMs load the same host CPU. Every vCPU
thread shares the managed CPU 1; emulator threads stay on the housekeeping
CPU 0. Backgrounds:

  none     ping and pong alone
  cpu      2 hog VMs (`yes > /dev/null`)
  net      netload -> netsink, iperf3 TCP at --net-rate Mbit/s
  netmax   the same, unlimited (flat out)
  burst    2 burst VMs (sleep, wake, compute: --burst RUN_MS:SLEEP_MS)
  cpu-nopin  the cpu background with no VM's emulator threads pinned (no
           `<emulatorpin>`): QEMU's other threads may run on CPU 1, and
           only the daemon keeps them off while it manages the VM (not in
           the default list; `--backgrounds cpu,cpu-nopin` compares them)

Rows (--schedulers, see bench/ping_rows.py): vcpusched policies and the
stock kernel with the operator's knobs. By default (--mode libvirt) every
guest is a libvirt domain opted in with <vs:sched/> and attached by the
vcpusched hook when it starts; a vcpusched row is set with `vcpuschedctl
pool set main policy=...` and `virsh metadata --live` on each domain, a
kernel row removes the metadata (the daemon lets go) and then renices,
chrt's or `virsh schedinfo`s. --mode qemu does the same on bare QEMU over
QMP. For each repetition and background one block: the VMs start, the ping
VM pings for the whole block, and the rows follow one another in an order
rotated per repetition; each row discards --warmup pings after its switch
and then takes --count. A tracefs recorder keeps each row's scheduling
events; bench/ping_tail.py explains every RTT above the cell's p99 from
them and exports the windows as a trace Perfetto opens.

Results: bench/results/ping-latency-<date>.md, .json (every RTT), -<bg>.png
(CDF per background), -summary.png, -tail.json.gz (Perfetto).
"""

import argparse
import contextlib
import datetime
import fcntl
import glob
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ping_report  # noqa: E402
import ping_tail  # noqa: E402
import schedtrace  # noqa: E402
from ping_rows import parse_rows  # noqa: E402
from ping_vms import (HOUSEKEEPING, MANAGED, LibvirtHost, QemuHost, log, run, set_nice,  # noqa: E402
                      set_sched, thread_sched, vs_lines, wait_line)

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VM = os.path.join(SRC, "vm-images")
LOCK = "/run/lock/vcpusched-test.lock"
DEFAULT_BACKGROUNDS = ("none", "cpu", "net", "netmax", "burst")
BACKGROUNDS = DEFAULT_BACKGROUNDS + ("cpu-nopin",)
DEFAULT_ROWS = ("kernel", "kernel@@nice=19", "kernel@@sched=idle", "kernel@@shares=2",
                "kernel@sched=fifo:1", "credit", "credit:tslice_ms=5", "credit@@cap=25",
                "credit2", "credit2@@class=background", "rr")
POLICY_COUNTERS = ("boosts", "parks", "resets", "steals")
SEQ_LIMIT = 60000  # busybox ping's 16-bit sequence wraps at 65536
RT_PATH = "/proc/sys/kernel/sched_rt_runtime_us"


def percentile(xs, p):
    """Nearest-rank percentile of a non-empty list."""
    s = sorted(xs)
    k = max(1, min(len(s), int(p / 100.0 * len(s) + 0.999999)))
    return s[k - 1]


@contextlib.contextmanager
def exclusive():
    os.makedirs(os.path.dirname(LOCK), exist_ok=True)
    with open(LOCK, "a") as f:
        if os.environ.get("VCPUSCHED_LOCK_HELD") != "1":
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def burst_spec(spec):
    try:
        run_ms, sleep_ms = (int(x) for x in spec.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--burst wants RUN_MS:SLEEP_MS, got {spec!r}")
    if run_ms < 1 or sleep_ms < 1:
        raise argparse.ArgumentTypeError("--burst: both times must be at least 1 ms")
    return run_ms, sleep_ms


class SerialTail:
    """The ping guest's VS-RTT lines as they arrive: seq -> (rtt_us, byte
    offset of the line in the serial file). The 16-bit sequence is
    unwrapped; each ping guest restarts it at 0."""

    def __init__(self, path):
        self.path, self.pos, self.buf = path, 0, b""
        self.rtt, self.last, self.base, self.prev = {}, -1, 0, -1

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return self.last
        start = self.pos - len(self.buf)
        self.pos += len(data)
        self.buf += data
        off = start
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            if line.startswith(b"VS-RTT "):
                f = dict(kv.split(b"=", 1) for kv in line.split()[1:] if b"=" in kv)
                raw = int(f[b"seq"])
                if raw < self.prev - 30000:
                    self.base += 65536
                self.prev = raw
                seq = self.base + raw
                self.rtt.setdefault(seq, (int(f[b"rtt_us"]), off))
                self.last = max(self.last, seq)
            off += len(line) + 1
        return self.last

    def size(self):
        return os.path.getsize(self.path) if os.path.exists(self.path) else 0


class Bench:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build)
        self.dir = tempfile.mkdtemp(prefix="vcpusched-bench-")
        os.chmod(self.dir, 0o755)  # libvirt's QEMU (libvirt-qemu) writes serial logs here
        self.accel = run([os.path.join(VM, "accel")]).stdout.strip() or "tcg"
        img = dict(l.split("=", 1) for l in run([os.path.join(VM, "build-image.sh")],
                                                timeout=600).stdout.split() if "=" in l)
        self.kernel, self.initrd = img["VS_KERNEL"], img["VS_INITRD"]
        self.host = None
        self.guests = {}
        self.pin = True  # emulator threads on HOUSEKEEPING (cpu-nopin: not)
        self.port = 42000
        self.rt_before = self.read_rt()
        self.rt_seen = set()
        self.rec = self.rec_key = None
        self.pair_sched = None

    @staticmethod
    def read_rt():
        with open(RT_PATH) as f:
            return int(f.read())

    def open_host(self):
        self.host = (LibvirtHost(self, self.a.libvirt) if self.a.mode == "libvirt"
                     else QemuHost(self))

    def ports(self):
        self.port += 2
        return self.port, self.port + 1

    def meta(self):
        """Metadata a domain starts with: opted in, pool defaults."""
        return {}

    # --- guests -------------------------------------------------------------------

    def start(self, key, name, role, **kw):
        g = self.host.start(self.a.prefix + name, role, pin=self.pin, **kw)
        self.guests[key] = g
        return g

    def stop(self, key):
        g = self.guests.pop(key, None)
        if g:
            self.host.stop(g)

    def start_pair(self, vcpusched=None, meta=True):
        """pong, then ping (which pings until the block ends); opted in to
        vcpusched (the hook attaches them) when `meta`."""
        lp, rp = self.link
        m = self.meta() if meta else None
        self.start("pong", "pong", "pong", ip="10.0.0.2/24", lport=rp, rport=lp,
                   meta=m, vcpusched=vcpusched)
        # ping boots beside pong and waits for it (vs.wait, 60 s)
        self.start("ping", "ping", "ping", ip="10.0.0.1/24", peer="10.0.0.2", lport=lp,
                   rport=rp, meta=m, vcpusched=vcpusched,
                   extra=f"vs.count={SEQ_LIMIT} vs.interval={self.a.interval} vs.poweroff=0")
        wait_line(self.guests["pong"], "VS-READY", 180)
        wait_line(self.guests["ping"], "VS-RTT", 180)
        self.pair_sched = vcpusched
        self.serial = SerialTail(self.guests["ping"].serial)

    def restart_pair(self, vcpusched, meta=True):
        log(f"  restarting ping and pong (libvirt <vcpusched> {vcpusched})")
        self.stop("ping")
        self.stop("pong")
        self.pause_bg(True)
        try:
            self.start_pair(vcpusched, meta)
        finally:
            self.pause_bg(False)

    def pause_bg(self, on):
        """Background VMs stopped while ping and pong boot (a TCG boot is
        CPU-bound and would take several times as long)."""
        for g in self.bg_guests():
            with contextlib.suppress(ProcessLookupError):
                os.kill(g.pid, signal.SIGSTOP if on else signal.SIGCONT)

    def background(self, kind):
        self.link = self.ports()
        self.pin = kind != "cpu-nopin"
        bg = {}
        if kind in ("cpu", "cpu-nopin"):
            for i in range(self.a.hogs):
                bg[f"hog{i}"] = dict(role="hog")
        elif kind == "burst":
            run_ms, sleep_ms = self.a.burst
            for i in range(self.a.hogs):
                bg[f"burst{i}"] = dict(role="burst",
                                       extra=f"vs.run_ms={run_ms} vs.sleep_ms={sleep_ms}")
        elif kind in ("net", "netmax"):
            nl, nr = self.ports()
            rate = self.a.net_rate if kind == "net" else 0
            bg["netsink"] = dict(role="netsink", ip="10.0.1.2/24", lport=nr, rport=nl)
            bg["netload"] = dict(role="netload", ip="10.0.1.1/24", peer="10.0.1.2", lport=nl,
                                 rport=nr, extra=f"vs.duration=3600 vs.rate={rate}")
        for name, kw in bg.items():
            role = kw.pop("role")
            self.start(name, name, role, meta=self.meta(), **kw)
        for name in bg:
            wait_line(self.guests[name], "VS-READY", 180)
        self.start_pair()
        if "netload" in bg:
            wait_line(self.guests["netload"], "VS-NET ", 180)
        return list(bg)

    # --- rows ----------------------------------------------------------------------

    def bg_guests(self):
        return [g for k, g in self.guests.items() if k not in ("ping", "pong")]

    def pp_guests(self):
        return [self.guests["pong"], self.guests["ping"]]

    def reset_knobs(self):
        """Every vCPU back to SCHED_OTHER nice 0 and every domain to its
        default CPU weight, except a pair started with libvirt <vcpusched>."""
        for g in self.guests.values():
            if g in self.pp_guests() and self.pair_sched:
                continue
            for t in g.vcpus():
                pol, _, nice = thread_sched(t)
                if pol in ("batch", "idle"):
                    set_sched([t], "other")
                if nice:
                    set_nice([t], 0)
            if self.shares_default.get(g.name) is not None and \
                    self.host.shares(g) != self.shares_default[g.name]:
                self.host.set_shares(g, self.shares_default[g.name])

    def apply_knobs(self, guests, knobs):
        for g in guests:
            if "nice" in knobs:
                set_nice(g.vcpus(), int(knobs["nice"]))
            if knobs.get("sched") in ("batch", "idle", "other"):
                set_sched(g.vcpus(), knobs["sched"])
            if "shares" in knobs:
                self.host.set_shares(g, int(knobs["shares"]))

    def switch(self, row):
        """Put every guest in the state `row` asks for, the operator's way."""
        d = self.host.daemon
        want = row.pp_vcpusched()
        if want != self.pair_sched:
            if not row.vcpusched:
                for g in self.guests.values():
                    self.host.opt_out(g)
                self.wait_attached(set())
            self.restart_pair(want, meta=row.vcpusched)
        self.reset_knobs()
        if row.vcpusched:
            d.ctl("pool", "set", "main", f"policy={row.sched}", *row.pool)
            defaults = d.dom_defaults(row.sched)
            want_params = {}
            for g in self.guests.values():
                params = dict(defaults, **(row.pp if g in self.pp_guests() else row.bg))
                self.host.opt_in(g, params)
                want_params[g.name] = params
            self.wait_attached(set(want_params), row.sched, want_params)
        else:
            for g in self.guests.values():
                self.host.opt_out(g)
            self.wait_attached(set())
            self.apply_knobs(self.bg_guests(), row.bg)
            self.apply_knobs(self.pp_guests(), {k: v for k, v in row.pp.items()
                                                if k != "sched" or want is None})
        return self.settings()

    def wait_attached(self, names, policy=None, params=None, timeout=10):
        """Until the daemon manages exactly `names` (with `policy` and
        `params`): the watcher applies metadata changes asynchronously."""
        deadline = time.monotonic() + timeout
        while True:
            doms = self.host.daemon.domains()
            ok = set(doms) == names and all(
                (policy is None or doms[n]["policy"] == policy) and
                all(param_of(doms[n], k) == str(v) for k, v in params[n].items())
                for n in names) if params else set(doms) == names
            if ok:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the daemon manages {sorted(doms)} "
                                   f"({[(n, d['policy'], d['params']) for n, d in doms.items()]})"
                                   f", expected {sorted(names)} {policy} {params}")
            time.sleep(0.05)

    def settings(self):
        """What each guest's vCPU threads run under, as the kernel says."""
        out = {}
        doms = self.host.daemon.domains()
        for k, g in self.guests.items():
            pol, prio, nice = thread_sched(g.vcpus()[0])
            s = {"sched": pol, "rt_prio": prio, "nice": nice,
                 "others_on_managed": others_on(g, int(MANAGED))}
            if g.name in doms:
                s["vcpusched"] = {"policy": doms[g.name]["policy"],
                                  "class": param_of(doms[g.name], "class"),
                                  **doms[g.name]["params"]}
            sh = self.host.shares(g)
            if sh is not None:
                s["cpu_shares"] = sh
            out[k] = s
        return out

    def counters(self):
        """Per guest: CPU time of vCPU and other threads; the daemon's
        per-VM run time, wakes and policy counters."""
        t = time.monotonic()
        cpu = {k: g.cpu_ns() for k, g in self.guests.items()}
        seen = {}
        for name, d in self.host.daemon.domains().items():
            v = {"run_ns": 0, "wakes": 0}
            for c in d["vcpus"]:
                v["run_ns"] += c["run_ns"]
                v["wakes"] += c["wakes"]
                for key, x in c.get("policy", {}).items():
                    if key in POLICY_COUNTERS and isinstance(x, (int, float)):
                        v[key] = v.get(key, 0) + x
            seen[name] = v
        return t, cpu, seen

    def delta(self, first, last):
        wall = max(last[0] - first[0], 1e-3)
        share = {k: {"vcpu_pct": (last[1][k][0] - first[1][k][0]) / wall / 1e7,
                     "other_pct": (last[1][k][1] - first[1][k][1]) / wall / 1e7}
                 for k in last[1] if k in first[1]}
        seen = {}
        byname = {g.name: k for k, g in self.guests.items()}
        for name, b in last[2].items():
            a = first[2].get(name, {})
            s = {key: (b[key] - a.get(key, 0)) / wall for key in b}
            s["cpu_pct"] = s.pop("run_ns") / 1e7
            seen[byname.get(name, name)] = s
        return share, seen

    def row_run(self, row, tracedir, idx):
        if self.serial.last + self.a.warmup + self.a.count + 200 > SEQ_LIMIT:
            self.restart_pair(self.pair_sched, meta=bool(self.host.daemon.domains()))
        sett = self.switch(row)
        self.rt_seen.add(self.read_rt())
        rec = self.recorder() if self.a.trace else None
        first = self.serial.poll() + 1 + self.a.warmup
        while self.serial.poll() < first - 3:
            time.sleep(0.02)
        trace = None
        if rec:
            for _ in range(20):  # begin between two lines, so offsets are exact
                rec.stop()
                rec.clear()  # before the sizes: clearing takes longer than a line
                size0 = self.serial.size()
                rec.start(clear=False)
                size1 = self.serial.size()
                if size0 == size1:
                    break
        c0 = self.counters()
        last = first + self.a.count - 1
        deadline = time.monotonic() + self.a.count * self.a.interval * 4 + 30
        while self.serial.poll() < last + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        c1 = self.counters()
        if rec:
            rec.stop()
            path = os.path.join(tracedir, f"{idx:03d}.trace")
            overrun = rec.save(path)
            trace = {"path": path, "size0": size0, "size1": size1, "overrun": overrun,
                     "serial": self.guests["ping"].serial,
                     "threads": self.thread_map(), "seqs": [first, last]}
        rtts, lost, offsets = [], 0, []
        for s in range(first, last + 1):
            if s in self.serial.rtt:
                rtts.append(self.serial.rtt[s][0] / 1000.0)
                offsets.append((s, self.serial.rtt[s][1]))
            else:
                lost += 1
        share, seen = self.delta(c0, c1)
        if trace:
            trace["offsets"] = offsets
            trace["rtts"] = rtts
        return {"rtts": rtts, "lost": lost, "share": share, "seen": seen, "settings": sett,
                "trace": trace}

    def thread_map(self):
        """tid -> (guest, kind) for every thread of every guest, and the daemon's."""
        m = {}
        for k, g in self.guests.items():
            for t in g.vcpus():
                m[t] = (k, "vcpu")
            for t in g.others():
                m[t] = (k, "emu")
        d = self.host.daemon.proc.pid
        for t in _all_tids(d):
            m[t] = ("vcpuschedd", "daemon")
        return m

    def recorder(self):
        """The tracefs recorder for the current guests (made again when
        ping and pong restart: new thread ids)."""
        tids = [t for g in self.guests.values() for t in g.vcpus() + g.others()]
        key = tuple(sorted(tids))
        if self.rec is not None and self.rec_key == key:
            return self.rec
        if self.rec is not None:
            self.rec.close()
        ping = self.guests["ping"]
        w = serial_writer(ping)
        events = {"sched/sched_switch": None,
                  "sched/sched_wakeup": " || ".join(f"pid == {t}" for t in tids)}
        if w is not None:  # QEMU writes with writev (count in the exit), virtlogd with write
            pids = "(" + " || ".join(f"common_pid == {t}" for t in _all_tids(w[0])) + ")"
            events["syscalls/sys_enter_write"] = f"{pids} && fd == {w[1]}"
            events["syscalls/sys_enter_writev"] = f"{pids} && fd == {w[1]}"
            events["syscalls/sys_exit_writev"] = pids
        self.rec, self.rec_key = schedtrace.Recorder(events), key
        return self.rec

    def block(self, res, rep, bgname, rows, tracedir):
        t0 = time.monotonic()
        self.shares_default = {}
        daemon_args = ["--cpus", MANAGED, "--policy", "credit", "--pattern", "shared"]
        if self.a.rt_runtime_us is not None:  # else the kernel's throttling, as a host has it
            daemon_args += ["--rt-runtime-us", str(self.a.rt_runtime_us)]
        self.host.start_daemon(daemon_args)
        try:
            bg = self.background(bgname)
            for g in self.guests.values():
                self.shares_default[g.name] = self.host.shares(g)
            self.hooked = sorted(self.host.daemon.domains())
            log(f"rep {rep + 1} bg={bgname}: up in {time.monotonic() - t0:.0f} s, attached by "
                f"the {'hook' if self.host.mode == 'libvirt' else 'QMP'}: {self.hooked}")
            time.sleep(self.a.settle)
            order = rows[rep % len(rows):] + rows[:rep % len(rows)]
            order = [r for r in order if not (bgname == "none" and r.bg_only())]
            traces = []
            for i, row in enumerate(order):
                r = self.row_run(row, tracedir, i)
                cell = res[row.spec][bgname]
                cell["rtts"] += r["rtts"]
                cell["lost"] += r["lost"]
                if r["rtts"]:
                    cell["p99s"].append(percentile(r["rtts"], 99))
                cell["share"].append(r["share"])
                if r["seen"]:
                    cell["seen"].append(r["seen"])
                cell["settings"] = r["settings"]
                cell["order"].append(i)
                if r["trace"]:
                    r["trace"].update(spec=row.spec, bg=bgname, rep=rep, row=vars_row(row))
                    traces.append(r["trace"])
                x = r["rtts"]
                log(f"rep {rep + 1}/{self.a.reps} bg={bgname:6} {row.spec:22} n={len(x)} "
                    f"p50={percentile(x, 50):.2f} p99={percentile(x, 99):.2f} "
                    f"max={max(x):.2f} ms lost={r['lost']}" if x else f"{row.spec}: no RTT")
        finally:
            if self.rec is not None:
                self.rec.close()
                self.rec = None
            for k in list(self.guests):
                self.stop(k)
            self.host.daemon.stop()
        t1 = time.monotonic()
        for tr in traces:  # the VMs are gone: parsing disturbs nothing
            x = ping_tail.explain_run(tr)
            res[tr["spec"]][bgname]["explained"].append(x)
            if x["aligned"] < x["n"]:
                log(f"  {tr['spec']}: {x['aligned']} of {x['n']} lines timed ({x.get('writes')} "
                    f"writes traced; the log grew {x.get('size_moved')} bytes as tracing began)")
        log(f"rep {rep + 1} bg={bgname}: traces explained in {time.monotonic() - t1:.0f} s")
        res["_blocks"].append({"rep": rep, "bg": bgname, "seconds": time.monotonic() - t0,
                               "attached_by_hook": self.hooked})

    def run(self, rows):
        res = {r.spec: {b: {"rtts": [], "p99s": [], "lost": 0, "seen": [], "share": [],
                            "order": [], "settings": None, "explained": []}
                        for b in self.a.backgrounds}
               for r in rows}
        res["_blocks"] = []
        tracedir = os.path.join(self.dir, "traces")
        os.makedirs(tracedir, exist_ok=True)
        self.open_host()
        for rep in range(self.a.reps):
            for bg in self.a.backgrounds:
                with exclusive():
                    self.rt_seen.add(self.read_rt())
                    self.block(res, rep, bg, rows, tracedir)
        return res

    def cleanup(self):
        if self.rec is not None:
            with contextlib.suppress(Exception):
                self.rec.close()
        for k in list(self.guests):
            with contextlib.suppress(Exception):
                self.stop(k)
        if self.host:
            self.host.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


def others_on(g, cpu):
    """How many of a guest's non-vCPU threads may run on `cpu`: 0 when
    `<emulatorpin>` or the daemon keeps them off it."""
    n = 0
    for t in g.others():
        with contextlib.suppress(OSError):
            n += cpu in os.sched_getaffinity(t)
    return n


def param_of(dom, key):
    """A domain parameter as the daemon lists it (the class is a field)."""
    if key == "class":
        return dom.get("class", dom["params"].get("class", "foreground"))
    return str(dom["params"].get(key))


def vars_row(row):
    return {"sched": row.sched, "pool": row.pool, "pp": row.pp, "bg": row.bg,
            "label": row.label()}


def _all_tids(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _fds(pid):
    """{fd: link target} of a process; {} once it is gone."""
    out = {}
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                out[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
    return out


def serial_writer(g):
    """(pid, fd) whose writes put the ping guest's lines in its serial log,
    or None. Bare QEMU writes the file itself; under libvirt QEMU writes a
    pipe and virtlogd the file, so QEMU's end of the one pipe (besides its
    stderr) it shares with the file's writer is taken: its writes are the
    moments the guest printed, not when virtlogd got round to them."""
    mine = _fds(g.pid)
    fd = next((f for f, t in mine.items() if t == g.serial), None)
    if fd is not None:
        return g.pid, fd
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == g.pid:
            continue
        theirs = _fds(int(d))
        wfd = next((f for f, t in theirs.items() if t == g.serial), None)
        if wfd is None:
            continue
        pipes = set(t for t in theirs.values() if t.startswith("pipe:"))
        shared = [f for f, t in mine.items() if f > 2 and t in pipes]
        return (g.pid, shared[0]) if len(shared) == 1 else (int(d), wfd)
    return None


def rt_group_sched():
    """Whether the kernel runs real-time group scheduling (a cgroup v1 cpu
    hierarchy with cpu.rt_runtime_us, or the file in a v2 root)."""
    return bool(glob.glob("/sys/fs/cgroup/cpu*/cpu.rt_runtime_us") or
                os.path.exists("/sys/fs/cgroup/cpu.rt_runtime_us"))


def rows_possible(rows, rt_arg, rt_before):
    """The rows this host can run, and (spec, why) for those it cannot.
    libvirt's FIFO <vcpusched> puts each vCPU in a cgroup of its own whose
    cpu.rt_runtime_us is 0: with real-time group scheduling and throttling
    on, the kernel refuses SCHED_FIFO there (EPERM) and the domain does not
    start. Throttling off (-1) stops the kernel enforcing group budgets."""
    rt = rt_arg if rt_arg is not None else rt_before
    if rt == -1 or not rt_group_sched():
        return rows, []
    why = ("libvirt's real-time <vcpusched> cannot start here: real-time group scheduling "
           f"with throttling on (sched_rt_runtime_us {rt}) gives its per-vCPU cgroups no RT "
           "budget (cpu.rt_runtime_us 0, EPERM)")
    return ([r for r in rows if r.pp_vcpusched() is None],
            [(r.spec, why) for r in rows if r.pp_vcpusched() is not None])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Publication size: --reps 3 --count 1000 (3,000 RTTs "
                                       "per cell, ~80 min on a 2-CPU host).")
    p.add_argument("--build", default=os.path.join(SRC, "build", "main"))
    p.add_argument("--mode", choices=("libvirt", "qemu"), default="libvirt",
                   help="guests as libvirt domains (default) or bare QEMU attached over QMP")
    p.add_argument("--libvirt", choices=("auto", "system", "private"), default="auto",
                   help="which libvirtd: the system's if usable (auto), else a private one")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--count", type=int, default=150, help="pings per row and repetition")
    p.add_argument("--interval", type=float, default=0.02, help="seconds between pings")
    p.add_argument("--warmup", type=int, default=50,
                   help="pings dropped after each switch of row")
    p.add_argument("--hogs", type=int, default=2, help="VMs in the cpu and burst backgrounds")
    p.add_argument("--burst", default="20:20", type=burst_spec,
                   help="burst VMs: RUN_MS:SLEEP_MS, CPU after each wake and idle time")
    p.add_argument("--net-rate", type=int, default=20,
                   help="the net background's iperf3 rate, Mbit/s (netmax: unlimited)")
    p.add_argument("--settle", type=float, default=2.0, help="seconds before the first row")
    p.add_argument("--schedulers", default=" ".join(DEFAULT_ROWS),
                   help="space-separated rows POLICY[:POOL_PARAMS][@PINGPONG[@BG]] "
                        "(bench/ping_rows.py), e.g. 'credit:tslice_ms=5', 'credit@@cap=25', "
                        "'kernel@@nice=19', 'kernel@sched=fifo:1'")
    p.add_argument("--backgrounds", default=",".join(DEFAULT_BACKGROUNDS),
                   help=f"comma-separated, of {', '.join(BACKGROUNDS)}")
    p.add_argument("--rt-runtime-us", type=int, default=None,
                   help="sched_rt_runtime_us while vcpuschedd runs (restored after); default: "
                        "left as the kernel has it (-1, throttling off, only on a kernel with "
                        "the fair server, Linux >= 6.12: the daemon refuses it elsewhere)")
    p.add_argument("--no-trace", dest="trace", action="store_false",
                   help="no scheduling trace, no tail explanation")
    p.add_argument("--no-plots", dest="plots", action="store_false")
    p.add_argument("--prefix", default="vsb-", help="prefix of the guests' names")
    p.add_argument("--out", default=os.path.join(SRC, "bench", "results"))
    a = p.parse_args()
    try:
        rows = parse_rows(a.schedulers)
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    a.schedulers = tuple(r.spec for r in rows)
    a.backgrounds = tuple(a.backgrounds.split(","))
    for b in a.backgrounds:
        if b not in BACKGROUNDS:
            p.error(f"unknown background {b!r} ({', '.join(BACKGROUNDS)})")
    if a.count < 1 or a.reps < 1 or a.warmup < 0 or a.interval <= 0:
        p.error("--count and --reps must be at least 1, --warmup at least 0, --interval > 0")
    if a.mode == "qemu" and any("shares" in r.bg or "shares" in r.pp for r in rows):
        p.error("cpu_shares rows act on libvirt's cgroups: use --mode libvirt")
    if os.geteuid() != 0:
        sys.exit("ping_latency.py: run as root")
    os.sched_setaffinity(0, {int(HOUSEKEEPING)})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("ping_latency.py: terminated"))
    t0 = time.monotonic()
    b = Bench(a)
    rows, dropped = rows_possible(rows, a.rt_runtime_us, b.rt_before)
    for spec, why in dropped:
        log(f"row {spec} left out: {why}")
    a.schedulers = tuple(r.spec for r in rows)
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([os.path.relpath(sys.argv[0], SRC)] + sys.argv[1:]),
            "host": f"{platform.node()} {platform.release()} {os.cpu_count()} CPUs",
            "accel": b.accel, "rt_runtime_us_before": b.rt_before,
            "rt_throttling": ping_report.rt_setting(a.rt_runtime_us, b.rt_before),
            "rows_left_out": [{"row": spec, "why": why} for spec, why in dropped]}
    try:
        res = b.run(rows)
        meta["libvirt"] = getattr(b.host, "describe", "")
        meta["rt_runtime_us_seen"] = sorted(b.rt_seen)
        meta["rt_runtime_us_after"] = b.read_rt()
        meta["seconds"] = round(time.monotonic() - t0)
        meta["qemu"] = run(["qemu-system-x86_64", "--version"]).stdout.splitlines()[0]
        meta["libvirt_version"] = run(["libvirtd", "--version"], check=False).stdout.strip()
        meta["vcpuschedd"] = run([os.path.join(b.build, "vcpusched", "vcpuschedd"),
                                  "--version"], check=False).stdout.strip()
        meta["git"] = run(["git", "-C", SRC, "describe", "--always", "--dirty"],
                          check=False).stdout.strip()
        meta["blocks"] = res.pop("_blocks")
        tail = ping_tail.analyse(res, a, rows) if a.trace else None
    finally:
        b.cleanup()
    for r in rows:
        for bg in a.backgrounds:
            res[r.spec][bg].pop("explained", None)
    os.makedirs(a.out, exist_ok=True)
    stamp = "ping-latency-" + meta["date"].replace(":", "")
    base = os.path.join(a.out, stamp)
    if tail:
        meta["perfetto"] = os.path.basename(ping_tail.export(tail, base + "-tail.json.gz"))
    plots = ping_report.plot(base, res, a, rows) if a.plots else []
    text = ping_report.markdown(res, a, rows, meta, tail, plots)
    print(text)
    with open(base + ".md", "w") as f:
        f.write(text)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "args": vars(a), "rows": {r.spec: vars_row(r) for r in rows},
                   "results": res, "tail": tail and tail["cells"]}, f)
    log(f"results in {base}.md ({meta['seconds']} s)")


if __name__ == "__main__":
    main()
