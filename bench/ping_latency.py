#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Ping tail latency between two VMs under background load, comparing the
stock kernel scheduler, vcpusched's Credit and Credit2 side by side.

The Xen experiment (seeds-digest 001) on QEMU guests: a ping VM and a pong
VM exchange pings while background VMs load the same host CPU, either
CPU-bound (`yes > /dev/null`), network-bound (iperf3 between a netload and
a netsink VM) or bursty (`burst` VMs that sleep, wake and compute for a
while: the wake-then-run shape of the Xen experiment's network-bound VMs,
which Credit boosts and which then hold the CPU). Every guest has one vCPU; all vCPU threads share the managed
CPU, all emulator threads stay on the housekeeping CPU. For each repetition
and each background the schedulers run one after the other in a rotating
order, so they are compared under the same conditions, minutes apart at most.

  kernel   vCPU threads stay SCHED_OTHER, pinned to the managed CPU
  credit   vcpuschedd, pool policy credit (Xen defaults), every VM attached
  credit2  vcpuschedd, pool policy credit2 (Xen defaults), every VM attached

A spec may add pool parameters and domain parameters for the ping and pong
VMs and for the background VMs: 'credit:tslice_ms=5' (Xen's 5 ms slice),
'credit@@cap=25' (a cap on the background, Xen's other remedy).

Results: per scheduler and background, the RTT distribution over all
repetitions (p50/p99/p99.9/max, ms) and the spread of per-run p99, written
as Markdown and JSON (with every RTT) under bench/results/.
"""

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VM = os.path.join(SRC, "vm-images")
MANAGED, HOUSEKEEPING = "1", "0"
SCHEDULERS = ("kernel", "credit", "credit2")
# The default comparison, plus the remedy the Xen experiment tried first:
# Credit with a 5 ms slice (seeds-digest 001).
DEFAULT_SCHEDULERS = ("kernel", "credit", "credit2", "credit:tslice_ms=5")
# Held while any VM of the benchmark runs, so that tests and other benchmarks
# on this host (tests/integration/run-exclusive) never overlap with it.
LOCK = "/run/lock/vcpusched-test.lock"
BACKGROUNDS = ("none", "cpu", "net", "burst")
# Per-vCPU policy counters summed per VM in the "what the scheduler saw" table.
POLICY_COUNTERS = ("boosts", "parks", "resets", "steals")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


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


def sched_spec(spec):
    """'credit:tslice_ms=5@weight=512@cap=25' -> ('credit', ['tslice_ms=5'],
    ['weight=512'], ['cap=25']): the policy, its pool parameters, domain
    parameters for the ping and pong VMs, and domain parameters for the
    background VMs (Xen's remedy of capping the background)."""
    rest, _, doms = spec.partition("@")
    dom, _, bg = doms.partition("@")
    name, _, pool = rest.partition(":")
    if name not in SCHEDULERS:
        raise argparse.ArgumentTypeError(f"unknown scheduler {name!r} ({', '.join(SCHEDULERS)})")
    if name == "kernel" and (pool or dom or bg):
        raise argparse.ArgumentTypeError("the kernel scheduler takes no parameters")
    if "@" in bg:
        raise argparse.ArgumentTypeError(f"{spec!r}: at most two '@' parts")
    return (name, [kv for kv in pool.split(",") if kv], [kv for kv in dom.split(",") if kv],
            [kv for kv in bg.split(",") if kv])


def burst_spec(spec):
    try:
        run_ms, sleep_ms = (int(x) for x in spec.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--burst wants RUN_MS:SLEEP_MS, got {spec!r}")
    if run_ms < 1 or sleep_ms < 1:
        raise argparse.ArgumentTypeError("--burst: both times must be at least 1 ms")
    return run_ms, sleep_ms


def vs_lines(path):
    """The guest's VS- lines (serial console), kernel noise removed."""
    try:
        with open(path, errors="replace") as f:
            return [l.rstrip("\r\n") for l in f if l.startswith("VS-")]
    except FileNotFoundError:
        return []


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


class Guest:
    def __init__(self, bench, name, role, ip=None, peer=None, lport=None, rport=None,
                 extra=""):
        self.b, self.name, self.role = bench, name, role
        self.serial = os.path.join(bench.dir, f"{name}.log")
        self.pidfile = os.path.join(bench.dir, f"{name}.pid")
        self.qmp = os.path.join(bench.dir, f"{name}.qmp")
        args = [os.path.join(VM, "run-guest"), "--name", name, "--role", role,
                "--serial", self.serial, "--pidfile", self.pidfile, "--qmp", self.qmp,
                "--smp", "1", "--mem", "128", "--accel", bench.accel,
                "--cpu-affinity", HOUSEKEEPING, "--vcpu-affinity", MANAGED,
                "--kernel", bench.kernel, "--initrd", bench.initrd]
        if ip:
            args += ["--ip", ip]
        if peer:
            args += ["--peer", peer]
        if lport:
            args += ["--local-port", str(lport), "--remote-port", str(rport)]
        if extra:
            args += ["--extra-cmdline", extra]
        for f in (self.serial, self.qmp):
            if os.path.exists(f):
                os.unlink(f)
        self.pid = int(subprocess.run(args, check=True, capture_output=True,
                                      text=True).stdout.split()[-1])

    def wait_line(self, prefix, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for l in vs_lines(self.serial):
                if l.startswith(prefix):
                    return l
                if l.startswith("VS-ERROR"):
                    raise RuntimeError(f"{self.name}: {l}")
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: no {prefix} within {timeout} s: {vs_lines(self.serial)}")

    def alive(self):
        return os.path.exists(f"/proc/{self.pid}")

    def stop(self):
        subprocess.run([os.path.join(VM, "stop-guest"), self.pidfile], capture_output=True)


class Daemon:
    """A private vcpuschedd for one ping run, so that nothing (parameters,
    credit, counters) carries over from one scheduler to the next."""

    def __init__(self, bench, policy, pool_params):
        self.b = bench
        self.sock = os.path.join(bench.dir, "control.sock")
        cmd = [os.path.join(bench.build, "vcpusched", "vcpuschedd"), "--foreground",
               "--socket", self.sock, "--state", os.path.join(bench.dir, "state"),
               "--cpus", MANAGED, "--policy", policy, "--pattern", "shared",
               "--rt-runtime-us", str(bench.rt_runtime_us)]
        for kv in pool_params:
            cmd += ["--pool-param", kv]
        with open(os.path.join(bench.dir, "vcpuschedd.log"), "ab") as logf:
            self.proc = subprocess.Popen(cmd, stdout=logf, stderr=logf)
        deadline = time.monotonic() + 10
        while self.ctl("version", check=False).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("vcpuschedd did not start (see vcpuschedd.log)")
            time.sleep(0.05)

    def ctl(self, *args, check=True):
        r = subprocess.run([os.path.join(self.b.build, "vcpusched", "vcpuschedctl"),
                            "--socket", self.sock, *args], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"vcpuschedctl {' '.join(args)}: {r.stderr.strip()}")
        return r

    def counters(self):
        """Per VM, summed over its vCPUs: run time, wakes and the policy's
        counters, as the daemon reports them now."""
        out = {}
        for d in json.loads(self.ctl("list", "--json").stdout)["domains"]:
            v = {"run_ns": 0, "wakes": 0}
            for c in d["vcpus"]:
                v["run_ns"] += c["run_ns"]
                v["wakes"] += c["wakes"]
                for k, x in c.get("policy", {}).items():
                    if k in POLICY_COUNTERS and isinstance(x, (int, float)):
                        v[k] = v.get(k, 0) + x
            out[d["name"]] = v
        return time.monotonic(), out

    @staticmethod
    def seen(first, last):
        """What the scheduler saw of each VM between two counters() snapshots:
        CPU share (%), wakes and policy counters per second."""
        wall = max(last[0] - first[0], 1e-3)
        out = {}
        for vm, b in last[1].items():
            a = first[1].get(vm, {})
            out[vm] = {k: (b[k] - a.get(k, 0)) / wall for k in b}
            out[vm]["cpu_pct"] = out[vm].pop("run_ns") / 1e7
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=15)


class Bench:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build)
        self.dir = tempfile.mkdtemp(prefix="vcpusched-bench-")
        self.accel = subprocess.run([os.path.join(VM, "accel")], capture_output=True,
                                    text=True).stdout.strip() or "tcg"
        env = subprocess.run([os.path.join(VM, "build-image.sh")], check=True,
                             capture_output=True, text=True).stdout
        img = dict(l.split("=", 1) for l in env.split() if "=" in l)
        self.kernel, self.initrd = img["VS_KERNEL"], img["VS_INITRD"]
        self.rt_runtime_us = a.rt_runtime_us
        self.guests = []
        self.daemon = None
        self.port = 42000

    def ports(self):
        self.port += 2
        return self.port, self.port + 1

    def start(self, *args, **kw):
        g = Guest(self, *args, **kw)
        self.guests.append(g)
        return g

    def background(self, kind):
        """Start pong and the background VMs; return them once they are up."""
        lp, rp = self.ports()
        pong = self.start("pong", "pong", ip="10.0.0.2/24", lport=rp, rport=lp)
        bg = []
        if kind == "cpu":
            bg = [self.start(f"hog{i}", "hog") for i in range(self.a.hogs)]
        elif kind == "burst":
            run_ms, sleep_ms = self.a.burst
            bg = [self.start(f"burst{i}", "burst",
                             extra=f"vs.run_ms={run_ms} vs.sleep_ms={sleep_ms}")
                  for i in range(self.a.hogs)]
        elif kind == "net":
            nl, nr = self.ports()
            bg = [self.start("netsink", "netsink", ip="10.0.1.2/24", lport=nr, rport=nl),
                  self.start("netload", "netload", ip="10.0.1.1/24", peer="10.0.1.2",
                             lport=nl, rport=nr,
                             extra=f"vs.duration=3600 vs.rate={self.a.net_rate}")]
        for g in [pong] + bg:
            g.wait_line("VS-READY", 90)
        if kind == "net":
            bg[1].wait_line("VS-NET ", 90)
        return (lp, rp), [pong] + bg

    def attach(self, guests, params=()):
        for g in guests:
            self.daemon.ctl("attach", g.name, "--qmp", g.qmp, *params)

    def ping_run(self, spec, link, others):
        """One ping VM run under scheduler `spec`; returns the RTTs (ms) after
        warm-up and the lost count. others[0] is the pong VM."""
        lp, rp = link
        sched, pool_params, params, bg_params = sched_spec(spec)
        ping = None
        seen = {}
        try:
            if sched != "kernel":
                self.daemon = Daemon(self, sched, pool_params)
                self.attach(others[:1], params)
                self.attach(others[1:], bg_params)
            ping = self.start("ping", "ping", ip="10.0.0.1/24", peer="10.0.0.2", lport=lp,
                              rport=rp, extra=f"vs.count={self.a.count} "
                                              f"vs.interval={self.a.interval}")
            if sched != "kernel":
                deadline = time.monotonic() + 10
                while not os.path.exists(ping.qmp) and time.monotonic() < deadline:
                    time.sleep(0.02)
                self.attach([ping], params)
            ping.wait_line("VS-RTT", 120)  # booted: count from the first reply
            first = self.daemon.counters() if self.daemon else None
            ping.wait_line("VS-DONE", 120 + self.a.count * self.a.interval * 4)
            if self.daemon:
                seen = Daemon.seen(first, self.daemon.counters())
        finally:
            self.stop_daemon()  # first: it restores every thread, frozen ones too
            if ping:
                ping.stop()
                self.guests.remove(ping)
        rtts = [int(fields(l)["rtt_us"]) / 1000.0 for l in vs_lines(ping.serial)
                if l.startswith("VS-RTT")]
        lost = sum(1 for l in vs_lines(ping.serial) if l.startswith("VS-LOST"))
        return rtts[self.a.warmup:], lost, seen

    def stop_daemon(self):
        if self.daemon:
            self.daemon.stop()
            self.daemon = None

    def run(self):
        res = {s: {b: {"rtts": [], "p99s": [], "lost": 0, "seen": []}
                   for b in self.a.backgrounds}
               for s in self.a.schedulers}
        for rep in range(self.a.reps):
            for bg in self.a.backgrounds:
                with exclusive():
                    self.one_background(res, rep, bg)
        return res

    def one_background(self, res, rep, bg):
        link, others = self.background(bg)
        time.sleep(self.a.settle)
        order = self.a.schedulers[rep % len(self.a.schedulers):] + \
            self.a.schedulers[:rep % len(self.a.schedulers)]
        for sched in order:
            rtts, lost, seen = self.ping_run(sched, link, others)
            r = res[sched][bg]
            if seen:
                r["seen"].append(seen)
            r["rtts"] += rtts
            r["lost"] += lost
            if rtts:
                r["p99s"].append(percentile(rtts, 99))
            log(f"rep {rep + 1}/{self.a.reps} bg={bg:4} {sched:8} n={len(rtts)} "
                f"p50={percentile(rtts, 50):.2f} p99={percentile(rtts, 99):.2f} "
                f"max={max(rtts):.2f} ms lost={lost}" if rtts else f"{sched}: no RTT")
        for g in others:
            g.stop()
            self.guests.remove(g)

    def cleanup(self):
        self.stop_daemon()
        for g in self.guests:
            g.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def summarize(res, a, meta):
    lines = [f"# Ping tail latency between VMs ({meta['date']})", "",
             f"Command: `{meta['command']}`", "",
             f"Host: {meta['host']}, accel {meta['accel']}, sched_rt_runtime_us during "
             f"vcpuschedd runs: {a.rt_runtime_us}. {a.reps} repetition(s); per run "
             f"{a.count} pings every {a.interval} s, first {a.warmup} dropped. "
             "RTT in ms, all runs pooled; `p99 runs` is the range of per-run p99.", "",
             "| background | scheduler | n | p50 | p99 | p99.9 | max | p99 runs | "
             "p99 / kernel | lost |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for bg in a.backgrounds:
        base = res.get("kernel", {}).get(bg, {}).get("rtts") or None  # the stock scheduler
        for s in a.schedulers:
            r = res[s][bg]
            x = r["rtts"]
            if not x:
                lines.append(f"| {bg} | {s} | 0 | | | | | | | {r['lost']} |")
                continue
            ratio = f"{percentile(x, 99) / percentile(base, 99):.2f}" if base else ""
            lines.append(
                f"| {bg} | {s} | {len(x)} | {percentile(x, 50):.2f} | "
                f"{percentile(x, 99):.2f} | {percentile(x, 99.9):.2f} | {max(x):.2f} | "
                f"{min(r['p99s']):.2f}-{max(r['p99s']):.2f} | {ratio} | {r['lost']} |")
    lines += seen_table(res, a)
    return "\n".join(lines) + "\n"


def seen_table(res, a):
    """Per VM, the scheduler's own view while the ping VM pinged, averaged over
    repetitions: CPU share, wakes and policy counters per second. It says why
    a tail is what it is (who was boosted, who parked, how often credit reset)."""
    rows = []
    for bg in a.backgrounds:
        for s in a.schedulers:
            runs = res[s][bg]["seen"]
            for vm in sorted({n for r in runs for n in r}):
                vals = [r[vm] for r in runs if vm in r]
                avg = {k: sum(v.get(k, 0) for v in vals) / len(vals)
                       for k in sorted({k for v in vals for k in v})}
                extra = ", ".join(f"{k} {avg[k]:.0f}" for k in POLICY_COUNTERS if k in avg)
                rows.append(f"| {bg} | {s} | {vm} | {avg['cpu_pct']:.1f} | "
                            f"{avg['wakes']:.0f} | {extra} |")
    if not rows:
        return []
    return ["", "What the scheduler saw while the ping VM pinged, per VM (mean over "
            "repetitions; rates per second):", "",
            "| background | scheduler | VM | CPU % | wakes/s | policy counters/s |",
            "|---|---|---|---|---|---|"] + rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(SRC, "build", "main"))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--count", type=int, default=200, help="pings per run")
    p.add_argument("--interval", type=float, default=0.05, help="seconds between pings")
    p.add_argument("--warmup", type=int, default=10, help="pings dropped per run")
    p.add_argument("--hogs", type=int, default=2, help="VMs in the cpu and burst backgrounds")
    p.add_argument("--burst", default="20:20", type=burst_spec,
                   help="burst VMs: RUN_MS:SLEEP_MS, CPU after each wake and idle time")
    p.add_argument("--net-rate", type=int, default=20,
                   help="netload's iperf3 rate, Mbit/s (0: unlimited, CPU-bound under TCG)")
    p.add_argument("--settle", type=float, default=2.0, help="seconds before pinging")
    p.add_argument("--schedulers", default=" ".join(DEFAULT_SCHEDULERS),
                   help="space-separated specs POLICY[:POOL_PARAMS][@DOMAIN_PARAMS[@BG_PARAMS]], "
                        "e.g. 'credit:tslice_ms=5', 'credit@weight=512' (ping and pong VMs "
                        "only) or 'credit@@cap=25' (the background VMs only); parameters "
                        "comma-separated")
    p.add_argument("--backgrounds", default=",".join(BACKGROUNDS))
    p.add_argument("--rt-runtime-us", type=int, default=-1,
                   help="sched_rt_runtime_us while vcpuschedd runs (restored after)")
    p.add_argument("--out", default=os.path.join(SRC, "bench", "results"))
    a = p.parse_args()
    a.schedulers = tuple(a.schedulers.split())
    for spec in a.schedulers:
        sched_spec(spec)
    a.backgrounds = tuple(a.backgrounds.split(","))
    if os.geteuid() != 0:
        sys.exit("ping_latency.py: run as root")
    os.sched_setaffinity(0, {int(HOUSEKEEPING)})
    # Interrupted or terminated: unwind, so that the daemon restores every
    # thread and the VMs are stopped (a background job ignores SIGINT).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("ping_latency.py: terminated"))
    b = Bench(a)
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([os.path.relpath(sys.argv[0], SRC)] + sys.argv[1:]),
            "host": f"{platform.node()} {platform.release()} {os.cpu_count()} CPUs",
            "accel": b.accel}
    try:
        res = b.run()
    finally:
        b.cleanup()
    text = summarize(res, a, meta)
    print(text)
    os.makedirs(a.out, exist_ok=True)
    stamp = meta["date"].replace(":", "")
    with open(os.path.join(a.out, f"ping-latency-{stamp}.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, f"ping-latency-{stamp}.json"), "w") as f:
        json.dump({"meta": meta, "args": vars(a), "results": res}, f)
    log(f"results in {a.out}/ping-latency-{stamp}.md")


if __name__ == "__main__":
    main()
