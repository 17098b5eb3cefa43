# SPDX-License-Identifier: ISC
"""Credit and Credit2 on real threads with real SCHED_FIFO on the managed
CPU: weights, caps, BOOST's wake latency, the tick exploit, and switching a
running pool between the two. Shares come from /proc/<pid>/schedstat over
3 s; sched_rt_runtime_us is set to -1 while the daemon runs (and restored)
so that the 50 ms real-time hole per second does not blur caps, on kernels
with the fair server (vstest.RT_OFF; before 6.12 the daemon refuses -1).

The tests marked vstest.timing check shares and latencies: each takes the
median of several windows (vstest.measure), records its margin and the
noise it measured (the windows' spread), and measures once more after a
miss (vstest.again). Shares between managed threads are taken of what the
threads had; a capped thread's of wall time (a cap is CPU time per period
of wall time); what the CPU gave nobody (idle, the dispatcher) of the time
it had after steal and interrupts (/proc/stat)."""

import os
import time
import unittest

import vstest

# Shares: the median of 6 windows of 0.5 s, +-3 points on a quiet host,
# else 3 standard errors of that median as this run measured them (bursts
# of hypervisor steal hit one thread of a pair, and Credit's 30 ms slices
# make 0.5 s windows coarse), at most +-6 points: the defects the checks are
# there for (weights ignored, a cap ignored, ticks alone) are 15+ points off.
TOL = 0.03
WIDEST = 0.06
WINDOW_S = 3.0
WINDOWS = 6
WINDOW1_S = WINDOW_S / WINDOWS


def check_split(tc, what, m, tid, want, why="a managed thread's part of what they had"):
    """A managed thread's median part of what the managed threads had."""
    return vstest.near(tc, what, m.med("split", tid), want, TOL, noise=m.noise("split", tid),
                       why=why, widest=WIDEST)


class PolicyTest(vstest.DaemonTestCase):
    def check_weights(self, policy):
        d = self.daemon(policy)
        a, b = self.spawn(), self.spawn()
        self.attach(d, "a", a, "weight=256")
        self.attach(d, "b", b, "weight=512")
        time.sleep(0.5)

        def body():
            m = vstest.measure([a.tid, b.tid], WINDOWS, WINDOW1_S)
            check_split(self, f"{policy} weight 256", m, a.tid, 1 / 3)
            check_split(self, f"{policy} weight 512", m, b.tid, 2 / 3)
        vstest.again(self, body)

    @vstest.timing
    def test_credit_weights(self):
        self.check_weights("credit")

    @vstest.timing
    def test_credit2_weights(self):
        self.check_weights("credit2")

    @vstest.timing
    def test_credit_cap25_next_to_hog(self):
        d = self.daemon("credit")
        capped, hog = self.spawn(), self.spawn()
        self.attach(d, "capped", capped, "cap=25")
        self.attach(d, "hog", hog)
        time.sleep(0.5)
        vstest.again(self, lambda: vstest.check_cap(
            self, "credit cap 25 next to a hog",
            vstest.measure([capped.tid, hog.tid], WINDOWS, WINDOW1_S), capped.tid, 25, hog.tid))
        parks = d.json("list")["domains"][0]["vcpus"][0]["policy"]["parks"]
        self.assertGreater(parks, 0, "a cap is enforced by parking")

    @vstest.timing
    def test_credit2_cap50_alone(self):
        d = self.daemon("credit2")
        capped = self.spawn()
        self.attach(d, "capped", capped, "cap=50")
        time.sleep(0.5)
        vstest.again(self, lambda: vstest.check_cap(
            self, "credit2 cap 50 alone", vstest.measure([capped.tid], WINDOWS, WINDOW1_S),
            capped.tid, 50))

    def boost_latency(self, boost):
        d = self.daemon("credit", f"boost={boost}")
        out = os.path.join(d.dir, "lat")
        hogs = [self.spawn(), self.spawn()]
        # Wakes every 10 ms, runs 1 ms: sleeps ~90 % of the time.
        io = self.spawn("latency", period_ms=10, run_ms=1, out=out)
        for i, h in enumerate(hogs):
            self.attach(d, f"hog{i}", h)
        self.attach(d, "io", io)
        # The steady state only: wakes from before the attach settled (the
        # thread moved onto the hogs' CPU mid-run) are dropped.
        time.sleep(0.5)
        settled = len(vstest.read_latencies(out))
        time.sleep(WINDOW_S)
        lat = vstest.read_latencies(out)[settled:]
        return (vstest.percentile(lat, 50), vstest.percentile(lat, 95), vstest.percentile(lat, 99),
                len(lat))

    @vstest.timing
    def test_credit_boost_lowers_wake_latency(self):
        def body():
            on50, on95, on99, n_on = self.boost_latency("on")
            self.tearDown()
            self.setUp()
            off50, off95, off99, n_off = self.boost_latency("off")
            self.tearDown()
            self.setUp()
            print(f"\ncredit wake latency us: boost on p50 {on50} p95 {on95} p99 {on99} "
                  f"(n={n_on}); boost off p50 {off50} p95 {off95} p99 {off99} (n={n_off})")
            vstest.within(self, "wakes logged with BOOST on", n_on, lo=100, scale=100,
                          why="~300 in 3 s")
            # Without BOOST an UNDER waker waits for the running UNDER hog's
            # 30 ms slice: the tail is slices, not microseconds. At p95:
            # bursts of hypervisor steal land in 1-3 % of the samples (p99
            # was theirs, tests/README.md); without BOOST most wakes wait.
            vstest.within(self, "p95 wake latency without BOOST over with it", off95 / max(on95, 1),
                          lo=5, scale=5, noise=None,
                          why="slices (~30 ms) against a boosted wake (~0.1-1 ms)")
        vstest.again(self, body)

    @vstest.timing
    def test_credit_tick_exploit_gets_no_more_than_its_share(self):
        # Credit's ticks are armed on multiples of 10 ms of the daemon's
        # CLOCK_MONOTONIC when the CPU leaves idle, then every 10 ms from
        # when each one fired, so they drift (~20 us a tick here) while the
        # CPU stays busy. The hog idles 0.1 ms just before every boundary
        # (the sly thread is asleep then too): the CPU goes idle, and the
        # next tick is re-armed on the boundary. The sly thread wakes 0.3 ms
        # after each boundary and sleeps 0.5 ms before the next, so no
        # tick ever finds it running. Sampled at ticks alone it stays
        # inactive and BOOSTed and takes ~88 % (measured with the measured
        # sightings of credit_charge disabled); with them it gets ~51 %.
        d = self.daemon("credit")
        ready = os.path.join(d.dir, "ready")
        hog = self.spawn("aligned", period_ms=10, wake_us=-200, sleep_us=300)
        sly = self.spawn("aligned", period_ms=10, wake_us=300, sleep_us=500, out=ready)
        # Attach once its loop runs: Python's start-up is CPU-bound, and a
        # tick seeing it then would activate it for good.
        self.assertIsNotNone(vstest.wait_until(lambda: os.path.exists(ready), 10))
        self.attach(d, "hog", hog)
        self.attach(d, "sly", sly)
        time.sleep(0.5)

        def body():
            before = {x["name"]: x["vcpus"][0]["policy"] for x in d.json("list")["domains"]}
            m = vstest.measure([hog.tid, sly.tid], WINDOWS, WINDOW1_S)
            st = {x["name"]: x["vcpus"][0]["policy"] for x in d.json("list")["domains"]}
            ticks = {n: st[n]["ticks"] - before[n]["ticks"] for n in st}
            print(f"\ncredit tick exploit: sly {m.med('split', sly.tid):.3f} of the CPU used; "
                  f"sly seen by {ticks['sly']} ticks, {st['sly']['sightings']} measured "
                  f"sightings; hog seen by {ticks['hog']} ticks")
            # The pattern really dodges the ticks (else this proves nothing):
            # the ticks run, and they see sly far less often than its part
            # of the CPU (a half) would have them do: ticks alone would
            # leave it UNDER and boosted, and it would take ~88 % of the CPU.
            # On a quiet host 1 tick in 300 sees it; a host whose hypervisor
            # steals in bursts (seen here: 10-33 % of a window) shifts the
            # pattern, and up to 1 in 5 do.
            vstest.within(self, "ticks that saw the hog in 3 s", ticks["hog"], lo=100, scale=100,
                          why="~300 ticks in 3 s")
            vstest.within(self, "sly's part of the ticks that saw either thread",
                          ticks["sly"] / max(ticks["sly"] + ticks["hog"], 1), hi=0.25, scale=0.25,
                          why="ticks undersample sly by 2x or more (its part of the CPU: 0.5)")
            check_split(self, "sly thread dodging every tick", m, sly.tid, 0.5)
            self.assertGreater(st["sly"]["sightings"], 0)
        vstest.again(self, body, attempts=3)

    @vstest.timing
    def test_credit2_sleeper_latency_reported(self):
        d = self.daemon("credit2")
        out = os.path.join(d.dir, "lat")
        for i in range(2):
            self.attach(d, f"hog{i}", self.spawn())
        self.attach(d, "io", self.spawn("latency", period_ms=10, run_ms=1, out=out))
        time.sleep(WINDOW_S)
        lat = vstest.read_latencies(out)
        print(f"\ncredit2 sleeper wake latency us under two hogs: p50 "
              f"{vstest.percentile(lat, 50)} p99 {vstest.percentile(lat, 99)} "
              f"max {max(lat)} (n={len(lat)})")
        vstest.within(self, "wakes logged in 3 s", len(lat), lo=100, scale=100,
                      why="~300: every 10 ms")

    # --- per-vCPU policy state in list --json -------------------------------

    def vcpu_state(self, d):
        """Each domain's vCPU 0 from `list --json`: (daemon view, policy view)."""
        doms = {x["name"]: x["vcpus"][0] for x in d.json("list")["domains"]}
        return {n: (v, v["policy"]) for n, v in doms.items()}

    def assert_ints(self, pol, keys, who):
        for k in keys:
            self.assertIn(k, pol, f"{who}: no {k} in {pol}")
            self.assertIsInstance(pol[k], int, f"{who}: {k} = {pol[k]!r}")

    @vstest.timing
    def test_credit_list_json_shows_vcpu_state(self):
        d = self.daemon("credit")
        hog, io = self.spawn(), self.spawn("sleeper", period_ms=5)
        self.attach(d, "hog", hog, "cap=50")
        self.attach(d, "io", io)
        time.sleep(1.0)
        st = self.vcpu_state(d)
        for name in ("hog", "io"):
            v, pol = st[name]
            self.assert_ints(pol, ("credit", "boosts", "parks", "run_ns"), name)
            self.assertIn("pri", pol, name)
            self.assertIn(pol["pri"], ("BOOST", "UNDER", "OVER"), name)
            # Bounded by one period of 300 credits, plus what a period burns.
            self.assertGreaterEqual(pol["credit"], -600, name)
            self.assertLessEqual(pol["credit"], 300, name)
            # Credit is burned from the run time the daemon measured.
            self.assertGreater(pol["run_ns"], 0, name)
            self.assertLessEqual(pol["run_ns"], v["run_ns"], name)
        # A cap is enforced by parking once the hog has run past it: within
        # a few accounting periods on a quiet host; later when the
        # hypervisor's steal kept it under its cap for a while (seen: none
        # in the first second).
        self.assertIsNotNone(vstest.wait_until(
            lambda: self.vcpu_state(d)["hog"][1]["parks"] > 0, vstest.stretch(5.0), step=0.1),
            "cap=50 parks the hog")
        self.assertEqual(st["io"][1]["parks"], 0)
        # Counted when an UNDER vCPU is boosted (a BOOST one that wakes stays
        # BOOST until a tick sees it running, which a short sleeper dodges).
        self.assertGreater(st["io"][1]["boosts"], 0, "an UNDER sleeper is boosted on wake")
        # About half a CPU for the capped hog over the second it ran.
        vstest.within(self, "run time charged to the cap-50 hog in ~1 s (s)",
                      st["hog"][1]["run_ns"] / 1e9, lo=0.3, hi=0.8, scale=0.25,
                      why="half of ~1 s, +-0.25 s: attach and start-up times vary")
        time.sleep(0.3)
        later = self.vcpu_state(d)
        self.assertGreater(later["hog"][1]["run_ns"], st["hog"][1]["run_ns"])
        self.assertGreater(later["io"][0]["wakes"], st["io"][0]["wakes"])

    @vstest.timing
    def test_credit2_list_json_shows_vcpu_state(self):
        d = self.daemon("credit2")
        # Sleeps 20 ms between bursts: runnable a few % of the time even
        # where each wake waits out the 1 ms ratelimit and a burst is slow.
        hog, io = self.spawn(), self.spawn("sleeper", period_ms=20)
        self.attach(d, "hog", hog, "cap=50")
        self.attach(d, "io", io)
        time.sleep(2.5)  # load decays over ~1 s from the 50 % a new vCPU starts at
        st = self.vcpu_state(d)
        for name in ("hog", "io"):
            v, pol = st[name]
            self.assert_ints(pol, ("credit_ns", "load_pct", "run_ns", "resets"), name)
            self.assertGreaterEqual(pol["credit_ns"], -10_000_000, name)  # CREDIT_MIN
            self.assertLessEqual(pol["credit_ns"], 10_500_000, name)  # INIT + carry-over
            self.assertGreaterEqual(pol["load_pct"], 0, name)
            self.assertLessEqual(pol["load_pct"], 100, name)
            self.assertGreater(pol["run_ns"], 0, name)
            self.assertLessEqual(pol["run_ns"], v["run_ns"], name)
        hog_pol, io_pol = st["hog"][1], st["io"][1]
        # A cap shows the budget: 50 % of the 10 ms period, one vCPU.
        self.assert_ints(hog_pol, ("budget_ns", "quota_ns", "dom_budget_ns", "parks"), "hog")
        self.assertEqual(hog_pol["quota_ns"], 5_000_000)
        self.assertLessEqual(hog_pol["budget_ns"], 5_000_000)
        self.assertLessEqual(hog_pol["dom_budget_ns"], 5_000_000)
        self.assertGreater(hog_pol["parks"], 0)
        self.assertNotIn("budget_ns", io_pol, "no cap, no budget")
        # Runnable about half the time (parked the rest) vs. almost never.
        vstest.within(self, "load of the cap-50 hog (%)", hog_pol["load_pct"], lo=30, scale=20,
                      why="~50: runnable while not parked")
        vstest.within(self, "load of a 20 ms sleeper (%)", io_pol["load_pct"], hi=25, scale=20,
                      why="a few %: runnable for its bursts")
        self.assertGreater(hog_pol["load_pct"], io_pol["load_pct"])
        time.sleep(0.3)
        later = self.vcpu_state(d)
        self.assertGreater(later["hog"][1]["run_ns"], hog_pol["run_ns"])
        self.assertGreater(later["hog"][1]["resets"], hog_pol["resets"])

    # --- bad parameters change nothing ------------------------------------

    def param_state(self, d):
        """What a refused request must not change: each domain's policy,
        vCPU count and parameters, and each pool's policy, CPUs and
        parameters, as `list --json` and `pool list --json` show them."""
        doms = [(x["name"], x["pool"], x["policy"], len(x["vcpus"]), x["params"])
                for x in d.json("list")["domains"]]
        pools = [(x["name"], x["policy"], x["cpus"], x["params"])
                 for x in d.json("pool", "list")["pools"]]
        return doms, pools

    def check_refused(self, d, cases):
        before = self.param_state(d)
        for args, words in cases:
            r = d.ctl(*args, check=False)
            what = " ".join(args)
            self.assertNotEqual(r.returncode, 0, f"{what} was accepted")
            # The message names the parameter and the value, and why.
            for w in words:
                self.assertIn(w, r.stderr, f"{what}: {r.stderr!r}")
            self.assertEqual(self.param_state(d), before, f"{what} changed the state")
        return before

    def test_credit_bad_parameters_refused(self):
        d = self.daemon("credit", "tslice_ms=30", "ratelimit_us=1000")
        a = self.spawn("sleeper")
        self.attach(d, "a", a, "weight=300", "cap=50")
        doms, pools = self.check_refused(d, [
            (("set", "a", "weight=0"), ["weight", "0", "out of range"]),
            (("set", "a", "cap=-5"), ["cap", "-5", "out of range"]),
            (("set", "a", "cap=101"), ["cap", "101", "100 x 1"]),
            (("set", "a", "weight=512", "cap=-5"), ["cap", "-5"]),  # all or nothing
            (("pool", "set", "main", "tslice_ms=5000"), ["tslice_ms", "5000", "out of range"]),
            (("pool", "set", "main", "ratelimit_us=50"), ["ratelimit_us", "50", "0 (off) or 100"]),
            (("pool", "set", "main", "tslice_ms=10", "ratelimit_us=20000"),
             ["ratelimit_us", "longer than tslice"]),
        ])
        self.assertEqual(doms[0][4], {"weight": "300", "cap": "50"})
        self.assertEqual(pools[0][3]["tslice_ms"], "30")
        self.assertEqual(pools[0][3]["ratelimit_us"], "1000")
        # Good values still go through (the refusals were not a dead pool).
        d.ctl("set", "a", "weight=512")
        d.ctl("pool", "set", "main", "ratelimit_us=500")
        doms, pools = self.param_state(d)
        self.assertEqual(doms[0][4]["weight"], "512")
        self.assertEqual(pools[0][3]["ratelimit_us"], "500")

    def test_credit2_bad_parameters_refused(self):
        d = self.daemon("credit2", "ratelimit_us=1000")
        ready = os.path.join(d.dir, "ready")
        two = self.spawn("sleepers", threads=2, out=ready)
        self.assertIsNotNone(vstest.wait_until(lambda: os.path.exists(ready), 10))
        self.attach(d, "two", two, "weight=300", "cap=150")
        doms, pools = self.check_refused(d, [
            (("set", "two", "cap=201"), ["cap", "201", "100 x 2"]),
            (("set", "two", "cap=70000"), ["cap", "70000"]),
            (("set", "two", "weight=0"), ["weight", "0", "out of range"]),
            (("set", "two", "weight=512", "cap=300"), ["cap", "300"]),  # all or nothing
            (("pool", "set", "main", "ratelimit_us=50"), ["ratelimit_us", "50", "below 100"]),
            (("pool", "set", "main", "ratelimit_us=600000"), ["ratelimit_us", "600000"]),
            (("pool", "set", "main", "ratelimit_us=-1"), ["ratelimit_us", "-1"]),
        ])
        self.assertEqual(doms[0][3], 2)
        self.assertEqual(doms[0][4], {"weight": "300", "cap": "150"})
        self.assertEqual(pools[0][3]["ratelimit_us"], "1000")
        d.ctl("set", "two", "cap=200")
        d.ctl("pool", "set", "main", "ratelimit_us=0")
        doms, pools = self.param_state(d)
        self.assertEqual(doms[0][4]["cap"], "200")
        self.assertEqual(pools[0][3]["ratelimit_us"], "0")

    def switch_around(self):
        """A Credit pool of two hogs (weights 512, 256) and a sleeper,
        switched to Credit2 and back twice: every thread kept, FIFO on the
        managed CPU, with its weight, after each switch."""
        d = self.daemon("credit")
        ps = [self.spawn() for _ in range(2)] + [self.spawn("sleeper")]
        for i, p in enumerate(ps):
            self.attach(d, f"d{i}", p, "weight=512" if i == 0 else "weight=256")
        for policy in ("credit2", "credit", "credit2", "credit"):
            d.ctl("pool", "set", "main", f"policy={policy}")
            time.sleep(0.3)
            doms = d.json("list")["domains"]
            self.assertEqual(len(doms), 3)
            self.assertTrue(all(x["policy"] == policy for x in doms))
            self.assertEqual([x["params"]["weight"] for x in doms], ["512", "256", "256"])
            for p in ps:
                self.assertTrue(vstest.is_fifo(p.tid))
                self.assertEqual(os.sched_getaffinity(p.tid), {vstest.MANAGED_CPU})
        self.assertEqual(d.json("stats")["pools"][0]["violations"], 0)
        return d, ps

    def test_switch_credit_credit2_keeps_every_thread(self):
        self.switch_around()

    @vstest.timing
    def test_weights_hold_after_switches(self):
        d, ps = self.switch_around()
        # Credit's accounting brings the credits apart in a few 30 ms
        # periods after the last switch; a window taken at once saw 0.5-0.6.
        time.sleep(1.0)
        vstest.again(self, lambda: check_split(
            self, "weight 512 after switches",
            vstest.measure([ps[0].tid, ps[1].tid], WINDOWS, WINDOW1_S), ps[0].tid, 2 / 3))
        self.assertEqual(d.json("stats")["pools"][0]["violations"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
