#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The rig suite, inside the rig VM (tests/rig/rig.sh runs it): the tests
tests/rig/tests.list names, in its order, each with a time limit: those
of one set (ci: CI's; full, the default: every test). Results
go to OUT/results.tap as each test ends (TAP 13: ok, not ok, # SKIP, and
"not ok # TODO" for a test marked rigtest.known_bug that fails), each
test's output to OUT/logs/NAME.log; tests/rig/result hands them to ctest.
Exits 0 once every test has a line, whatever the results.

usage: suite.py --out DIR [--set ci|full] [--only NAME[,NAME...]]"""

import argparse
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "integration")]


SETS = ("ci", "full")


def read_list(path):
    """[(name, unittest id, seconds, set)] from tests.list."""
    tests = []
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                name, test_id, limit, which = words
                if which not in SETS:
                    raise ValueError(f"{path}: {name}: set '{which}' is not ci or full")
                tests.append((name, test_id, int(limit), which))
    return tests


class TestTimeout(Exception):
    pass


class TapResult(unittest.TestResult):
    """One TAP line per test, written (and synced) when the test ends; the
    test's stdout and stderr (its children's too) go to its log."""

    def __init__(self, out, names, limits):
        super().__init__()
        self.out, self.names, self.limits = out, names, limits
        self.tap = open(os.path.join(out, "results.tap"), "w", buffering=1)
        self.tap.write(f"TAP version 13\n1..{len(names)}\n")
        self.n = 0
        self.reported = set()
        self.saved = None

    def startTest(self, test):
        super().startTest(test)
        self.n += 1
        self.t0 = time.monotonic()
        self.outcome = ("ok", "")
        name = self.names[test.id()]
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = (os.dup(1), os.dup(2))
        log = os.open(os.path.join(self.out, "logs", name + ".log"),
                      os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        print(f"# {name} ({test.id()}), limit {self.limits[test.id()]} s", flush=True)
        # The margins of its checks go to OUT/margins.jsonl under its ctest name.
        os.environ["VCPUSCHED_TEST"] = f"rig.{name}"
        os.environ["VCPUSCHED_MARGINS"] = os.path.join(self.out, "margins.jsonl")
        signal.alarm(self.limits[test.id()])
        console(f"TEST-START {name}")

    def stopTest(self, test):
        signal.alarm(0)
        name = self.names[test.id()]
        took = time.monotonic() - self.t0
        status, why = self.outcome
        print(f"# {name}: {status}{' ' + why if why else ''} in {took:.1f} s", flush=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        line = f"{'ok' if status in ('ok', 'skip') else 'not ok'} {self.n} - {name}"
        if status == "skip":
            line += f" # SKIP {why}"
        elif status == "todo":
            line += f" # TODO {why}"
        self.tap.write(f"{line}\n  # {took:.1f} s\n")
        self.reported.add(test.id())
        os.fsync(self.tap.fileno())
        console(f"TEST-END {name} {status} {took:.1f}s")
        super().stopTest(test)

    def addError(self, test, err):
        super().addError(test, err)
        self.fail_with(self.errors[-1][1])

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.fail_with(self.failures[-1][1])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcome = ("skip", reason.replace("\n", " "))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        print(self.expectedFailures[-1][1], flush=True)
        self.outcome = ("todo", f"known bug: {known_bug(test)}")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        print(f"# passes now: the bug is fixed, drop @known_bug ({known_bug(test)})", flush=True)
        self.outcome = ("not ok", "")

    def fail_with(self, text):
        print(text, flush=True)
        self.outcome = ("not ok", "")


def known_bug(test):
    return getattr(getattr(test, test._testMethodName), "known_bug", "")


def console(msg):
    """A RIG- line on the VM's console, which rig.sh echoes on the host."""
    try:
        with open("/dev/console", "w") as f:
            f.write(f"RIG-{msg}\n")
    except OSError:
        pass


def on_alarm(signum, frame):
    raise TestTimeout("time limit reached (tests/rig/tests.list)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", choices=SETS, default="full",
                    help="ci: the tests of CI's set; full: every test (default)")
    ap.add_argument("--only", help="comma-separated test names (default: all of the set)")
    args = ap.parse_args()
    tests = read_list(os.path.join(HERE, "tests.list"))
    if args.set == "ci":
        tests = [t for t in tests if t[3] == "ci"]
    if args.only:
        keep = args.only.split(",")
        unknown = set(keep) - {t[0] for t in tests}
        if unknown:
            ap.error(f"unknown test(s): {', '.join(sorted(unknown))}")
        tests = [t for t in tests if t[0] in keep]
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    signal.signal(signal.SIGALRM, on_alarm)
    suite = unittest.TestSuite()
    for _, test_id, _, _ in tests:
        suite.addTest(unittest.defaultTestLoader.loadTestsFromName(test_id))
    result = TapResult(args.out, {t[1]: t[0] for t in tests}, {t[1]: t[2] for t in tests})
    suite.run(result)
    # A class or module fixture that failed ran none of its tests: each
    # still gets its line, and the fixture's error in its log.
    fixture_errors = "".join(f"{test}: {text}" for test, text in result.errors
                             if not isinstance(test, unittest.TestCase))
    for name, test_id, _, _ in tests:
        if test_id not in result.reported:
            result.n += 1
            with open(os.path.join(args.out, "logs", name + ".log"), "a") as f:
                f.write(f"# {name}: not run\n{fixture_errors}")
            result.tap.write(f"not ok {result.n} - {name}\n  # not run\n")
    result.tap.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
