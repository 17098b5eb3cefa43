#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Run one test module's timing tests (those marked vstest.timing: shares,
rates, latencies) or its functional tests (the rest). ctest registers them
as timing.MODULE and integration.MODULE (tests/CMakeLists.txt): the timing
ones run alone on the machine and never under a sanitizer.

After the tests, whatever they left running or changed on the host is
named and put back (hostcheck.py), and that fails the run: the next test
starts on a clean host, and the leak is blamed on the module that made it.

usage: runtests.py MODULE timing|functional
Exits 0 if every test passed, 1 if one failed or left something, 77 if
the module has no test of that kind."""

import os
import sys
import unittest

import hostcheck


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def is_timing(test):
    return getattr(getattr(test, test._testMethodName, None), "timing", False)


def main(argv):
    if len(argv) != 3 or argv[2] not in ("timing", "functional"):
        print(__doc__.split("usage: ", 1)[1], file=sys.stderr)
        return 2
    module, kind = argv[1], argv[2]
    tests = [t for t in flatten(unittest.TestLoader().loadTestsFromName(module))
             if is_timing(t) == (kind == "timing")]
    if not tests:
        print(f"{module}: no {kind} tests")
        return 77
    result = unittest.TextTestRunner(verbosity=2).run(unittest.TestSuite(tests))
    left = hostcheck.check(mark=os.environ.get(hostcheck.MARK)) if os.geteuid() == 0 else []
    for line in left:
        print(f"{module}: left behind (now put back): {line}", file=sys.stderr)
    return 0 if result.wasSuccessful() and not left else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
