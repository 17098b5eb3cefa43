# SPDX-License-Identifier: ISC
"""The background class on real threads with real SCHED_FIFO on the
managed CPU, through a real vcpuschedd, under Credit and Credit2 (and rr
and table for the control plane): a periodic foreground sleeper (wakes
every 10 ms, runs 1 ms) next to two background hogs keeps its wake-to-run
tail (p99 within 2x of the same sleeper alone), the hogs get at least
85 % of the CPU (work conservation), and once the sleeper is gone they
get at least 97 % after beta (batch mode). Under Credit2 batch mode is
held to what Credit2 gives the same two hogs as foreground domains
(within 2 points) instead: Credit2 switches two equal hogs about every
1 ms (its ratelimit), and each switch costs a dispatcher pass (~25 us
here), so the policy alone gets ~96 % on this host. Bad values are
refused with a clear error and change nothing.

Wake-to-run is measured from the sleeper's side: it sleeps to absolute
times and logs how late it ran (vstest.Busy('latency')), which includes
everything between the timer and the thread running (the daemon's pass,
the elevation). CPU shares come from /proc/<pid>/schedstat against wall
time. sched_rt_runtime_us is -1 while the daemon runs (and restored) where
the kernel has the fair server (vstest.RT_OFF), so that the 50 ms
real-time hole per second does not count against the hogs.
Shares are medians of windows (vstest.measure) of the CPU time the CPU had
after steal and interrupts (/proc/stat): the hypervisor's steal on a shared
host is not the scheduler's doing. Each check records its margin and the
noise it measured; the timing tests run alone, never under a sanitizer."""

import os
import statistics
import time
import unittest

import vstest

WINDOW_S = 4.0  # CPU shares
LAT_S = 8.0  # latency phases: ~800 wakes, so that p99 is not two or three outliers
WINDOWS = 4  # shares: the median of 4 windows
BETA_MS = 500
# The hogs' part of the CPU time the sleeper left them (work conservation
# beside a foreground sleeper): measured 0.95-0.98 here; a class layer
# that idles the CPU between background slices loses far more.
BESIDE_MIN = 0.90
# Batch mode: the hogs' part of the CPU's time once the sleeper is gone.
# Measured 0.985-0.995 under Credit; each Credit2 switch (every 1 ms, its
# ratelimit) costs a dispatcher pass, so Credit2 is held to itself.
BATCH_MIN = 0.97
BATCH_VS_FG = 0.03  # Credit2, two windows one after the other


class BackgroundClassTest(vstest.DaemonTestCase):
    def latencies(self, path, start):
        """Sleeper latencies (us) logged since line `start`, the first 20 dropped."""
        with open(path) as f:
            xs = [int(l) for l in f if l.strip()]
        return xs[start + 20:], len(xs)

    def pool(self, d):
        return d.json("stats")["pools"][0]

    def check_sleeper_and_hogs(self, policy, *params):
        d = self.daemon(policy, f"bg_beta_ms={BETA_MS}", *params)
        out = os.path.join(d.dir, "lat")
        io = self.spawn("latency", period_ms=10, run_ms=1, out=out)
        self.assertIsNotNone(vstest.wait_until(lambda: os.path.exists(out), 10))
        self.attach(d, "io", io)
        # The sleeper alone, then beside two background hogs, in one daemon.
        time.sleep(0.5)
        _, n0 = self.latencies(out, 0)
        time.sleep(LAT_S)
        alone, n1 = self.latencies(out, n0)
        hogs = [self.spawn(), self.spawn()]
        tids = [h.tid for h in hogs]
        for i, h in enumerate(hogs):
            self.attach(d, f"hog{i}", h, "class=background")
        time.sleep(0.5)
        _, n2 = self.latencies(out, 0)
        m1 = vstest.measure(tids + [io.tid], WINDOWS, LAT_S / WINDOWS)
        beside, _ = self.latencies(out, n2)
        # The hogs' part of what the sleeper left them, per window.
        left = [sum(w.run[t] for t in tids) / max(w.avail - w.run[io.tid], 1) for w in m1.windows]
        st = self.pool(d)
        doms = {x["name"]: x for x in d.json("list")["domains"]}
        # The sleeper stops: batch mode after beta, the hogs take the CPU.
        io.stop()
        time.sleep(BETA_MS / 1000 + 0.5)
        m2 = vstest.measure(tids, WINDOWS, WINDOW_S / WINDOWS)
        batch = [sum(w.of_avail.values()) for w in m2.windows]
        st2 = self.pool(d)
        doms2 = {x["name"]: x for x in d.json("list")["domains"]}
        # The same hogs as foreground domains: what the policy alone gives them.
        for i in range(2):
            d.ctl("set", f"hog{i}", "class=foreground")
        time.sleep(0.3)
        m3 = vstest.measure(tids, WINDOWS, WINDOW_S / WINDOWS)
        alone_fg = [sum(w.of_avail.values()) for w in m3.windows]
        med, sd = statistics.median, vstest.noise
        p = vstest.percentile
        print(f"\n{policy}: sleeper wake-to-run us alone p50 {p(alone, 50)} p95 {p(alone, 95)} "
              f"p99 {p(alone, 99)} max {max(alone)} (n={len(alone)}); beside two background "
              f"hogs p50 {p(beside, 50)} p95 {p(beside, 95)} p99 {p(beside, 99)} max "
              f"{max(beside)} (n={len(beside)}); "
              f"hogs {med(left):.3f} of what the sleeper left, {med(batch):.3f} of the CPU "
              f"after beta ({med(alone_fg):.3f} as foreground domains); steal "
              f"{m1.part('steal')[0]:.3f} of wall time; "
              f"gap slices {st['bg_gap_slices']}, alpha {st['bg_alpha_slices']}, "
              f"batch entered {st2['bg_batch_enters']}, left {st2['bg_batch_exits']}; "
              f"missed wakes {d.json('stats')['event_source']['missed_wakes']}")
        vstest.within(self, "sleeper wakes alone", len(alone), lo=600, scale=600,
                      why="~800 in 8 s")
        vstest.within(self, "sleeper wakes beside the hogs", len(beside), lo=600, scale=600,
                      why="~800 in 8 s")
        # The tail at p95: the hypervisor steals this VM's idle CPU in
        # bursts (up to 110 ms of a second measured while the sleeper was
        # alone), which lands in 1-3 % of the samples and made p99 a figure
        # of the host, either way (ratios of 0.005 and 33 on good code). A
        # foreground wake may wait for at most one background slice (1 ms)
        # before the class re-picks; without the class and BOOST p95 is
        # 30 ms slices (tests/README.md, the defects).
        base = p(alone, 95)
        vstest.within(self, "sleeper p95 wake-to-run beside background hogs (us)",
                      p(beside, 95), hi=max(2 * base, base + 1000), scale=max(base, 1000),
                      why="within 2x of the sleeper alone, or one background slice (1 ms) more")
        vstest.within(self, "background hogs' part of what the sleeper left", med(left),
                      lo=BESIDE_MIN, noise=sd(left), scale=1 - BESIDE_MIN,
                      why="work conservation; 0.95-0.98 measured")
        if policy == "credit2":
            vstest.within(self, "batch mode against the same hogs in the foreground",
                          med(batch) - med(alone_fg), lo=-BATCH_VS_FG,
                          noise=sd(batch) + sd(alone_fg), scale=BATCH_VS_FG,
                          why="Credit2 switches every 1 ms either way; a class layer that "
                              "still held the hogs would lose far more")
        else:
            vstest.within(self, "background hogs in batch mode", med(batch), lo=BATCH_MIN,
                          noise=sd(batch), scale=1 - BATCH_MIN,
                          why="0.985-0.995 measured: the hogs alone on the CPU")
        # While the sleeper ran: normal mode, gaps, no batch; then batch.
        self.assertEqual(st["bg_domains"], 2)
        self.assertEqual(st["bg_batch_enters"], 0)
        self.assertGreater(st["bg_gap_slices"], 100)
        self.assertEqual(st2["bg_batch_enters"], 1)
        self.assertEqual(doms["io"]["class"], "foreground")
        self.assertEqual(doms["hog0"]["class"], "background")
        self.assertEqual(doms["hog0"]["params"].get("class"), "background")
        self.assertEqual(doms["hog0"]["vcpus"][0]["class"], "background")
        self.assertEqual(doms["hog0"]["vcpus"][0]["mode"], "normal")
        self.assertEqual(doms2["hog1"]["vcpus"][0]["mode"], "batch")
        self.assertEqual(st2["violations"], 0)
        for h in hogs:
            self.assertTrue(vstest.is_fifo(h.tid))
        return d, hogs

    @vstest.timing
    def test_credit2_sleeper_beside_background_hogs(self):
        self.check_sleeper_and_hogs("credit2")

    @vstest.timing
    def test_credit_sleeper_beside_background_hogs(self):
        d, hogs = self.check_sleeper_and_hogs("credit")
        # Background again, batch mode after beta; a foreground wake ends it at once.
        for i in range(2):
            d.ctl("set", f"hog{i}", "class=background")
        self.assertIsNotNone(vstest.wait_until(
            lambda: self.pool(d)["bg_batch_enters"] >= 2, 2), "no batch mode")
        # Counted from here: the hogs' switch to foreground above left batch too.
        exits = self.pool(d)["bg_batch_exits"]
        w = self.spawn("sleeper", period_ms=50)
        self.attach(d, "w", w)
        self.assertIsNotNone(vstest.wait_until(
            lambda: self.pool(d)["bg_batch_exits"] > exits, 2),
            "no batch exit on a foreground wake")
        doms = {x["name"]: x for x in d.json("list")["domains"]}
        self.assertEqual(doms["hog0"]["vcpus"][0]["mode"], "normal")

    def test_class_set_live_and_bad_values_refused(self):
        for policy, extra in (("rr", ()), ("table", ("table=a,b",))):
            with self.subTest(policy=policy):
                self.tearDown()
                self.setUp()
                d = self.daemon(policy, *extra)
                a, b = self.spawn("sleeper"), self.spawn()
                self.attach(d, "a", a)
                self.attach(d, "b", b, "class=background")
                before = (d.json("list")["domains"], d.json("pool", "list")["pools"][0]["params"])
                for args, words in [
                        (("set", "a", "class=idle"), ["class", "idle", "foreground or background"]),
                        (("pool", "set", "main", "bg_alpha_ms=0"), ["bg_alpha_ms", "0"]),
                        (("pool", "set", "main", "bg_slice_us=300000"),
                         ["bg_slice_us", "300000", "not shorter than bg_alpha_ms 200"]),
                        (("pool", "set", "main", "bg_beta_ms=100", "bg_gamma=1"), ["bg_gamma"]),
                ]:
                    r = d.ctl(*args, check=False)
                    self.assertNotEqual(r.returncode, 0, f"{args} was accepted")
                    for w in words:
                        self.assertIn(w, r.stderr, f"{args}: {r.stderr!r}")
                    now = (d.json("list")["domains"],
                           d.json("pool", "list")["pools"][0]["params"])
                    self.assertEqual([(x["name"], x["class"], x["params"]) for x in now[0]],
                                     [(x["name"], x["class"], x["params"]) for x in before[0]])
                    self.assertEqual(now[1], before[1])
                self.assertEqual(before[1]["bg_alpha_ms"], "200")
                self.assertEqual(before[1]["bg_beta_ms"], "500")
                self.assertEqual(before[1]["bg_slice_us"], "1000")
                # Good values go through, live; the class follows a policy switch.
                d.ctl("pool", "set", "main", "bg_alpha_ms=100", "bg_beta_ms=2000")
                d.ctl("set", "a", "class=background")
                d.ctl("set", "b", "class=foreground")
                d.ctl("pool", "set", "main", "policy=credit2")
                doms = {x["name"]: x for x in d.json("list")["domains"]}
                self.assertEqual(doms["a"]["class"], "background")
                self.assertEqual(doms["b"]["class"], "foreground")
                pool = d.json("pool", "list")["pools"][0]
                self.assertEqual(pool["policy"], "credit2")
                self.assertEqual(pool["params"]["bg_alpha_ms"], "100")
                self.assertEqual(pool["params"]["bg_beta_ms"], "2000")
                self.assertEqual(self.pool(d)["bg_domains"], 1)
                self.assertEqual(self.pool(d)["violations"], 0)
                help_ = d.ctl("help", "credit2").stdout
                for k in ("bg_alpha_ms", "bg_beta_ms", "bg_slice_us", "class"):
                    self.assertIn(k, help_)


if __name__ == "__main__":
    unittest.main(verbosity=2)
