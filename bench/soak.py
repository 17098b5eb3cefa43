#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The hostile operator's campaign as a script (scripts/soak.sh): what a
fair but unkind operator does to vcpuschedd over an hour, with the checks
that must hold every time.

  kill9      N x kill -9 of a daemon with QEMU guests attached (one parked
             by a cap) and CPU hogs on the housekeeping CPU: every vCPU
             thread back at its original policy, affinity and cgroups
             within 1 s (the guardian), then a new daemon on the same state
  restart    N x kill -9 and a new daemon at once (a service manager's
             Restart=): it must answer within 3 s with nothing stranded
  malformed  a corpus of malformed requests on the raw socket and through
             vcpuschedctl: each refused with an error, state unchanged
  fuzz       each libFuzzer target for --fuzz-seconds (10 min by default)
  churn      N attach/detach cycles of real processes: daemon RSS and fds
  guests     N QEMU guest start/attach/kill cycles: reaped, RSS and fds
  libvirtd   N restarts of a private libvirtd with an opted-in domain: the
             domain stays managed and a metadata change still applies

Results: a summary table on stdout, bench/results/soak-<date>.md and .json.
Root only; touches nothing it did not start. Not part of CI (an hour)."""

import argparse
import datetime
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

import vstest  # noqa: E402
from vstest import Busy, Daemon  # noqa: E402

RUN_GUEST = os.path.join(SRC, "vm-images", "run-guest")
STOP_GUEST = os.path.join(SRC, "vm-images", "stop-guest")
RESTORE_LIMIT_S = 1.0
RESTART_LIMIT_S = 3.0


# --- what a thread looks like, and what the daemon costs --------------------

def thread_state(pid, tid):
    """Policy, priority, affinity and cgroups of a thread: what the daemon
    must give back exactly."""
    return (os.sched_getscheduler(tid) & ~0x40000000, os.sched_getparam(tid).sched_priority,
            frozenset(os.sched_getaffinity(tid)),
            vstest.read(f"/proc/{pid}/task/{tid}/cgroup"))


def footprint(pid):
    """RSS (kB) and open fds of a process."""
    rss = int(re.search(r"VmRSS:\s+(\d+)", vstest.read(f"/proc/{pid}/status")).group(1))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def percentile(xs, p):
    return vstest.percentile(xs, p) if xs else float("nan")


class Guest:
    """A tiny TCG guest (the hog role) under bare QEMU with a QMP socket,
    its emulator threads on the housekeeping CPU."""

    def __init__(self, tmp, name, smp=2):
        self.pidfile = os.path.join(tmp, f"{name}.pid")
        self.qmp = os.path.join(tmp, f"{name}.qmp")
        subprocess.run([RUN_GUEST, "--name", name, "--role", "hog", "--smp", str(smp),
                        "--serial", os.path.join(tmp, f"{name}.log"), "--pidfile", self.pidfile,
                        "--qmp", self.qmp, "--cpu-affinity", str(vstest.HOUSEKEEPING_CPU)],
                       check=True, capture_output=True)
        self.pid = int(vstest.read(self.pidfile))
        self.vcpus = self.wait_vcpus(smp)

    def wait_vcpus(self, smp):
        def found():
            tids = [t for t in vstest.threads_of(self.pid)
                    if vstest.read(f"/proc/{self.pid}/task/{t}/comm").startswith("CPU ")]
            return tids if len(tids) == smp else None
        vstest.wait_until(lambda: found() is not None, 10)
        return found() or []

    def alive(self):
        return os.path.exists(f"/proc/{self.pid}")

    def stop(self):
        subprocess.run([STOP_GUEST, self.pidfile], capture_output=True)


# --- campaigns -------------------------------------------------------------

def kill9_rounds(args, tmp, restart_at_once):
    """kill -9 rounds on one state file. restart_at_once: the next daemon
    starts right after the kill (measured: time to answer); otherwise the
    round measures the guardian's restore time first."""
    guests = [Guest(tmp, f"k{i}") for i in range(2)]
    hogs = [Busy() for _ in range(args.load)]  # SCHED_OTHER load on the housekeeping CPU
    state = os.path.join(tmp, "state")
    orig = {(g.pid, t): thread_state(g.pid, t) for g in guests for t in g.vcpus}
    restore, answer, stranded, failures = [], [], 0, []
    try:
        # At once: one more daemon than restarts, as the first start follows no kill.
        for n in range(args.rounds if not restart_at_once else args.restarts + 1):
            d = Daemon(policy=random.choice(["credit", "credit2", "rr"] if n % 3 else ["credit"]))
            d.state, d.args[d.args.index("--state") + 1] = state, state
            t0 = time.monotonic()
            d.start(timeout=RESTART_LIMIT_S + 7)
            if restart_at_once and n > 0:
                answer.append(time.monotonic() - t0)
            try:
                d.ctl("attach", "k0", "--qmp", guests[0].qmp)
                extra = ["cap=1"] if d.args[d.args.index("--policy") + 1] == "credit" else []
                d.ctl("attach", "k1", "--qmp", guests[1].qmp, *extra)
                time.sleep(random.uniform(0.05, 1.0))
                t0 = time.monotonic()
                d.proc.send_signal(signal.SIGKILL)
                d.proc.wait()
                if restart_at_once:
                    continue  # the next daemon starts now, the guardian may still restore
                took = vstest.wait_until(
                    lambda: all(thread_state(p, t) == s for (p, t), s in orig.items()), 5.0,
                    step=0.002)
                if took is None:
                    stranded += 1
                    failures.append(f"round {n}: not restored within 5 s")
                    took = 5.0
                else:
                    took = time.monotonic() - t0
                restore.append(took)
            except Exception as e:  # noqa: BLE001 - a round fails, the campaign goes on
                failures.append(f"round {n}: {e}")
                d.stop()
            finally:
                d.check_log()
        last = Daemon(policy="rr")  # restores anything the last round left
        last.state, last.args[last.args.index("--state") + 1] = state, state
        last.start(timeout=10)
        last.cleanup()
        left = sum(thread_state(p, t) != s for (p, t), s in orig.items())
    finally:
        for h in hogs:
            h.stop()
        for g in guests:
            g.stop()
    return {"restore_s": restore, "answer_s": answer, "stranded": stranded + left,
            "failures": failures}


def raw_request(sock_path, line, timeout=5.0):
    """Send one raw line, return the parsed reply (or None if the daemon
    closed the connection without one)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        s.sendall(line)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf) if buf.strip() else None


MALFORMED_RAW = [
    b"\n", b"{\n", b"}\n", b"[]\n", b"null\n", b"42\n", b"\"attach\"\n", b"{} {}\n",
    b"{\"v\":1,\"cmd\":\"list\"} x\n", b"{\"v\":1,\"cmd\":\"list\"}\x00\n",
    b"\xff\xfe{\"v\":1}\n", b"{\"v\":\"1\",\"cmd\":\"list\"}\n", b"{\"v\":1.0,\"cmd\":\"list\"}\n",
    b"{\"v\":2,\"cmd\":\"list\"}\n", b"{\"cmd\":\"list\"}\n", b"{\"v\":1}\n",
    b"{\"v\":1,\"cmd\":\"LIST\"}\n", b"{\"v\":1,\"cmd\":\"rm -rf\"}\n",
    b"{\"v\":1,\"cmd\":\"list\",\"x\":1}\n", b"{\"v\":1,\"cmd\":\"attach\"}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":[]}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"\",\"pid\":1}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a b\",\"pid\":5}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"" + b"x" * 64 + b"\",\"pid\":5}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"pid\":\"5\"}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"pid\":-5}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"pid\":99999999999}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"tids\":[]}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"qmp\":\"relative.sock\"}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"pid\":5,\"qmp\":\"/x\"}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"pid\":5,\"params\":{\"w\":5}}}\n",
    b"{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"pid\":5,\"params\":{\"W\":\"5\"}}}\n",
    b"{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"nosuch\",\"params\":{\"weight\":\"5\"}}}\n",
    b"{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"explode\"}}\n",
    b"{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"create\",\"name\":\"p\",\"cpus\":\"5-3\"}}\n",
    b"{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"create\",\"name\":\"p\",\"cpus\":\"1,1\"}}\n",
    b"{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"create\",\"name\":\"p\",\"cpus\":\"4096\"}}\n",
    b"{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"destroy\",\"name\":\"main\"}}\n",
    b"[" * 40 + b"]" * 40 + b"\n",
    b"{\"v\":1,\"cmd\":\"list\",\"args\":{\"a\":" + b"[" * 40 + b"]" * 40 + b"}}\n",
]

MALFORMED_CLI = [
    ("attach", "x", "--pid", "4194000"), ("attach", "bad name", "--pid", "1"),
    ("attach", "y", "--tid", "999999999"), ("set", "h", "weight=0"), ("set", "h", "weight=65536"),
    ("set", "h", "cap=-5"), ("set", "h", "cap=101"), ("set", "h", "nosuch=1"),
    ("set", "nosuch", "weight=5"), ("detach", "nosuch"),
    ("pool", "set", "main", "tslice_ms=5000"), ("pool", "set", "main", "ratelimit_us=50"),
    ("pool", "set", "main", "policy=nosuch"), ("pool", "create", "p2", "cpus=0", "policy=rr"),
]


def malformed(args, tmp):
    """Every malformed request refused with an error; list, pools and the
    managed thread unchanged."""
    d = Daemon(policy="credit").start()
    hog = Busy()
    refused, wrong = 0, []
    try:
        d.ctl("attach", "h", "--pid", str(hog.pid), "weight=512")

        def snapshot():
            doms = d.json("list")["domains"]
            pools = [(p["name"], p["policy"], p["cpus"], p["params"], p["domains"])
                     for p in d.json("pool", "list")["pools"]]
            st = thread_state(hog.pid, hog.pid)  # the priority is LOW or MID
            return [(x["name"], x["pool"], x.get("params")) for x in doms], pools, st[0], st[2]
        before = snapshot()
        for line in MALFORMED_RAW:
            reply = raw_request(d.sock, line)
            if reply is not None and reply.get("ok") is False and reply["error"]["message"]:
                refused += 1
            else:
                wrong.append(f"raw {line[:60]!r}: {reply}")
        for argv in MALFORMED_CLI:
            r = d.ctl(*argv, check=False)
            if r.returncode in (1, 2) and r.stderr.strip():
                refused += 1
            else:
                wrong.append(f"cli {' '.join(argv)}: rc {r.returncode}")
        big = raw_request(d.sock, b"{\"v\":1,\"cmd\":\"list\",\"x\":\"" + b"a" * 70000 + b"\"}\n")
        refused += big is not None and big["error"]["code"] == "E2BIG"
        after = snapshot()
        if before != after:
            wrong.append(f"state changed: {before} -> {after}")
    finally:
        hog.stop()
        d.cleanup()
    return {"requests": len(MALFORMED_RAW) + len(MALFORMED_CLI) + 1, "refused": refused,
            "unchanged": not any(w.startswith("state") for w in wrong), "failures": wrong}


def fuzz(args, tmp):
    """Each libFuzzer target of the clang build, --fuzz-seconds each."""
    out = {}
    fdir = os.path.join(args.fuzz_build, "tests")
    for name in sorted(os.listdir(fdir)):
        f = os.path.join(fdir, name)
        if not name.startswith("fuzz_") or not os.path.isfile(f) or not os.access(f, os.X_OK):
            continue
        corpus = os.path.join(tmp, f"corpus-{name}")
        os.makedirs(corpus, exist_ok=True)
        cmd = [f, f"-max_total_time={args.fuzz_seconds}", "-print_final_stats=1", corpus]
        seeds = os.path.join(SRC, "tests", "fuzz", "corpus", name)
        if os.path.isdir(seeds):
            cmd.append(seeds)
        dic = os.path.join(SRC, "tests", "fuzz", f"{name}.dict")
        if os.path.exists(dic):
            cmd.insert(1, f"-dict={dic}")
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        execs = re.search(r"stat::number_of_executed_units:\s+(\d+)", r.stderr)
        out[name] = {"rc": r.returncode, "seconds": round(time.monotonic() - t0),
                     "execs": int(execs.group(1)) if execs else 0,
                     "corpus": len(os.listdir(corpus)),
                     "tail": r.stderr.strip().splitlines()[-3:] if r.returncode else []}
    return out


def churn(args, tmp):
    """Attach/detach cycles of real processes, the daemon's footprint
    sampled every 100 cycles."""
    d = Daemon(policy="credit").start()
    procs = [Busy("sleeper", period_ms=5) for _ in range(4)]
    samples, failures = [footprint(d.proc.pid)], []
    try:
        for n in range(args.cycles):
            p = procs[n % len(procs)]
            try:
                d.ctl("attach", f"c{n}", "--pid", str(p.pid), f"weight={random.randint(1, 1000)}")
                d.ctl("detach", f"c{n}")
            except RuntimeError as e:
                failures.append(f"cycle {n}: {e}")
            if (n + 1) % 100 == 0:
                samples.append(footprint(d.proc.pid))
        left = [p.pid for p in procs if vstest.is_fifo(p.pid)]
        if left:
            failures.append(f"threads left at SCHED_FIFO: {left}")
    finally:
        for p in procs:
            p.stop()
        d.cleanup()
    return {"cycles": args.cycles, "rss_kb": [s[0] for s in samples],
            "fds": [s[1] for s in samples], "failures": failures}


def guests(args, tmp):
    """Guest start, QMP attach, kill -9 of QEMU, reaped: the daemon's
    footprint every 10 cycles."""
    d = Daemon(policy="credit2").start()
    samples, reap, failures = [footprint(d.proc.pid)], [], []
    try:
        for n in range(args.guests):
            g = Guest(tmp, f"g{n % 4}")
            try:
                d.ctl("attach", f"g{n}", "--qmp", g.qmp)
                time.sleep(random.uniform(0.05, 0.3))
                t0 = time.monotonic()
                os.kill(g.pid, signal.SIGKILL)
                took = vstest.wait_until(
                    lambda: f"g{n}" not in [x["name"] for x in d.json("list")["domains"]], 5.0)
                if took is None:
                    failures.append(f"cycle {n}: still listed 5 s after kill -9")
                else:
                    reap.append(time.monotonic() - t0)
            except RuntimeError as e:
                failures.append(f"cycle {n}: {e}")
            finally:
                g.stop()
            if (n + 1) % 10 == 0:
                samples.append(footprint(d.proc.pid))
    finally:
        d.cleanup()
    return {"cycles": args.guests, "reap_s": reap, "rss_kb": [s[0] for s in samples],
            "fds": [s[1] for s in samples], "failures": failures}


def libvirtd_restarts(args, tmp):
    """A private libvirtd with the hook and an opted-in domain, restarted
    again and again: after each restart the watcher reconnects, the domain
    is still managed and a weight change by metadata applies."""
    import test_libvirt as tl  # the same private libvirtd and daemon as the tests
    applied, failures = [], []
    try:
        tl.LibvirtTest.setUpClass()
        cls = tl.LibvirtTest
        cls.create("lvs", vs_sched="policy=credit weight=256")
        ok = vstest.wait_until(lambda: "lvs" in [x["name"] for x in
                                                 cls.daemon.json("list")["domains"]], 30)
        if ok is None:
            return {"restarts": 0, "failures": ["domain never attached"]}
        for n in range(args.libvirtd):
            cls.lv("restart")
            w = 300 + n
            t0 = time.monotonic()
            ok = False
            while time.monotonic() - t0 < 60 and not ok:
                r = cls.virsh("metadata", "lvs", tl.NS_URI, "--key", "vs", "--live", "--set",
                              f'<sched policy="credit" weight="{w}"/>', check=False)
                ok = r.returncode == 0 and vstest.wait_until(
                    lambda: any(x["name"] == "lvs" and str(x["params"].get("weight")) == str(w)
                                for x in cls.daemon.json("list")["domains"]), 2.0) is not None
                if not ok:
                    time.sleep(0.5)
            dom = [x for x in cls.daemon.json("list")["domains"] if x["name"] == "lvs"]
            if ok and not all(vstest.is_fifo(v["tid"]) for v in dom[0]["vcpus"]):
                failures.append(f"restart {n}: a vCPU thread is not at SCHED_FIFO")
            elif ok:
                applied.append(time.monotonic() - t0)
            else:
                failures.append(f"restart {n}: weight {w} not applied within 60 s")
        cls.virsh("destroy", "lvs", check=False)
    finally:
        tl.LibvirtTest.doClassCleanups()
    return {"restarts": args.libvirtd, "applied_s": applied, "failures": failures}


# --- report ------------------------------------------------------------------

def fmt_s(xs):
    if not xs:
        return "-"
    return (f"p50 {percentile(xs, 50) * 1e3:.1f} ms, p99 {percentile(xs, 99) * 1e3:.1f} ms, "
            f"max {max(xs) * 1e3:.1f} ms")


def summary(res):
    rows = [(f"{k}: step failed", "crashed", v["failures"][0][:120], False)
            for k, v in res.items() if list(v) == ["failures"]]
    res = {k: v for k, v in res.items() if list(v) != ["failures"]}
    if "kill9" in res:
        k = res["kill9"]
        within = sum(t <= RESTORE_LIMIT_S for t in k["restore_s"])
        rows.append(("kill -9, restore within 1 s", f"{within}/{len(k['restore_s'])}",
                     fmt_s(k["restore_s"]), k["stranded"] == 0 and not k["failures"]
                     and within == len(k["restore_s"])))
    if "restart" in res:
        k = res["restart"]
        within = sum(t <= RESTART_LIMIT_S for t in k["answer_s"])
        rows.append(("restart right after kill -9, answer within 3 s",
                     f"{within}/{len(k['answer_s'])}", fmt_s(k["answer_s"]),
                     k["stranded"] == 0 and not k["failures"] and within == len(k["answer_s"])))
    if "malformed" in res:
        m = res["malformed"]
        rows.append(("malformed requests refused, state unchanged",
                     f"{m['refused']}/{m['requests']}", "unchanged" if m["unchanged"] else
                     "CHANGED", m["refused"] == m["requests"] and not m["failures"]))
    for name, f in res.get("fuzz", {}).items():
        rows.append((f"{name}, {f['seconds']} s", "clean" if f["rc"] == 0 else f"rc {f['rc']}",
                     f"{f['execs']:,} execs, corpus {f['corpus']}", f["rc"] == 0))
    for key, what in (("churn", "attach/detach cycles"), ("guests", "guest start/kill cycles")):
        if key in res:
            c = res[key]
            extra = f"; reaped {fmt_s(c['reap_s'])}" if key == "guests" else ""
            rows.append((f"{c['cycles']} {what}", f"{len(c['failures'])} failed",
                         f"RSS {c['rss_kb'][0]:,} -> {c['rss_kb'][-1]:,} kB (max "
                         f"{max(c['rss_kb']):,}), fds {c['fds'][0]} -> {c['fds'][-1]} (max "
                         f"{max(c['fds'])}){extra}", not c["failures"] and
                         c["fds"][-1] <= c["fds"][0] and c["rss_kb"][-1] <= c["rss_kb"][0] * 1.1))
    if "libvirtd" in res:
        lv = res["libvirtd"]
        rows.append((f"libvirtd restarted {lv['restarts']}x, metadata applies after",
                     f"{len(lv.get('applied_s', []))}/{lv['restarts']}",
                     fmt_s(lv.get("applied_s", [])), not lv["failures"]))
    return rows


def write_report(args, res, rows, started, took):
    stamp = started.strftime("%Y%m%d-%H%M")
    base = os.path.join(args.out, f"soak-{stamp}")
    with open(base + ".json", "w") as f:
        json.dump({"command": " ".join(sys.argv), "started": started.isoformat(),
                   "seconds": round(took), "results": res}, f, indent=1)
    uname = os.uname()
    lines = [f"# Soak: the hostile operator's campaign ({started:%Y-%m-%d %H:%M})", "",
             f"Command: `{args.command}`", "",
             f"Host: {uname.nodename} {uname.release}, {os.cpu_count()} CPUs; "
             f"sched_rt_runtime_us {vstest.read('/proc/sys/kernel/sched_rt_runtime_us').strip()}; "
             f"{args.load} CPU hogs on the housekeeping CPU during the kill -9 rounds. "
             f"Run time {took / 60:.1f} min.", "",
             "| check | result | detail | pass |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {'yes' if ok else '**no**'} |" for a, b, c, ok in rows]
    fails = [(k, v["failures"]) for k, v in res.items() if v.get("failures")]
    if fails:
        lines += ["", "## Failures", ""]
        for k, fs in fails:
            lines += [f"- {k}: {x}" for x in fs[:20]]
    lines += ["", "Raw figures: the JSON file beside this one.", ""]
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines))
    return base + ".md"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build", "ci"))
    ap.add_argument("--fuzz-build", default=os.path.join(SRC, "build", "fuzz"))
    ap.add_argument("--only", default="kill9,restart,malformed,fuzz,churn,guests,libvirtd")
    ap.add_argument("--rounds", type=int, default=100, help="kill -9 rounds")
    ap.add_argument("--restarts", type=int, default=20)
    ap.add_argument("--fuzz-seconds", type=int, default=600)
    ap.add_argument("--cycles", type=int, default=1000, help="attach/detach cycles")
    ap.add_argument("--guests", type=int, default=100, help="guest start/kill cycles")
    ap.add_argument("--libvirtd", type=int, default=20, help="libvirtd restarts")
    ap.add_argument("--load", type=int, default=4, help="hogs on the housekeeping CPU (kill9)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--command", default=" ".join(sys.argv), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak.py: must run as root")
    args.build, args.fuzz_build = os.path.abspath(args.build), os.path.abspath(args.fuzz_build)
    os.environ["VCPUSCHED_BUILD"] = args.build
    vstest.BUILD, vstest.DAEMON = args.build, os.path.join(args.build, "vcpusched", "vcpuschedd")
    vstest.CTL = os.path.join(args.build, "vcpusched", "vcpuschedctl")
    vstest.pin_self_to_housekeeping()
    random.seed(args.seed)
    steps = {"kill9": lambda t: kill9_rounds(args, t, False),
             "restart": lambda t: kill9_rounds(args, t, True),
             "malformed": lambda t: malformed(args, t), "fuzz": lambda t: fuzz(args, t),
             "churn": lambda t: churn(args, t), "guests": lambda t: guests(args, t),
             "libvirtd": lambda t: libvirtd_restarts(args, t)}
    started, t0, res = datetime.datetime.now(), time.monotonic(), {}
    for name in args.only.split(","):
        print(f"== {name}", flush=True)
        tmp = tempfile.mkdtemp(prefix=f"vcpusched-soak-{name}.")
        os.chmod(tmp, 0o755)
        try:
            res[name] = steps[name](tmp)
        except Exception as e:  # noqa: BLE001 - record it, go on with the next step
            res[name] = {"failures": [f"{type(e).__name__}: {e}"]}
        finally:
            subprocess.run(["rm", "-rf", tmp])
    rows = summary(res)
    width = max(len(r[0]) for r in rows) if rows else 10
    for a, b, c, ok in rows:
        print(f"{a:<{width}}  {b:>10}  {'ok  ' if ok else 'FAIL'}  {c}")
    path = write_report(args, res, rows, started, time.monotonic() - t0)
    print(f"report: {path}")
    return 0 if rows and all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
