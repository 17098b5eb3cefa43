#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The margins of a suite's timing, share, rate and latency checks: every
such check writes what it measured, its bound, its margin and the noise it
measured to BUILD/margins.jsonl (tests/integration/vstest.py; the rig's to
BUILD/rig/margins.jsonl). scripts/test.sh prints this after each suite.

usage: margins.py BUILD [--top N] [--failed]
  the N (10) checks with the smallest margins, as a part of their scale
  (the tolerance, or the bound), with the noise beside them; with --failed,
  first the checks of the tests ctest lists as failed (LastTestsFailed.log),
  then each failed test's output from ctest's LastTest.log."""

import argparse
import json
import os
import re
import sys


def rows(build):
    out = []
    for path in (os.path.join(build, "margins.jsonl"), os.path.join(build, "rig", "margins.jsonl")):
        try:
            with open(path) as f:
                for line in f:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass  # a line cut short by a killed test
        except OSError:
            pass
    return out


def fmt(x):
    return "-" if x is None else f"{x:.4g}"


def table(rs):
    lines = [f"  {'margin':>8} {'of scale':>8} {'noise':>8}  {'measured':>10} {'bound':>21}  check"]
    for r in rs:
        rel = "-" if r.get("rel") is None else f"{100 * r['rel']:.0f}%"
        bound = f"[{fmt(r.get('lo'))}, {fmt(r.get('hi'))}]"
        tries = f" (attempt {r['attempt']})" if r.get("attempt", 1) > 1 else ""
        lines.append(f"  {fmt(r['margin']):>8} {rel:>8} {fmt(r.get('noise')):>8}  "
                     f"{fmt(r['got']):>10} {bound:>21}  {r['ctest']} {r['test'].split('.')[-1]}: "
                     f"{r['check']}{tries}{'' if r['ok'] else '  MISSED'}")
    return "\n".join(lines)


def key(r):
    return r["rel"] if r.get("rel") is not None else r["margin"]


def failed_tests(build):
    try:
        with open(os.path.join(build, "Testing", "Temporary", "LastTestsFailed.log")) as f:
            return [line.strip().split(":", 1)[1] for line in f if ":" in line]
    except OSError:
        return []


def outputs(build, names):
    """Each named test's output from LastTest.log."""
    try:
        with open(os.path.join(build, "Testing", "Temporary", "LastTest.log"),
                  errors="replace") as f:
            log = f.read()
    except OSError:
        return {}
    out = {}
    for m in re.finditer(r'^\d+/\d+ Testing: (\S+)\n(.*?)^"\1" end time', log, re.M | re.S):
        if m.group(1) in names:
            out[m.group(1)] = m.group(2)
    return out


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("usage: ", 1)[1])
    ap.add_argument("build")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--failed", action="store_true")
    a = ap.parse_args()
    rs = rows(a.build)
    name = os.path.basename(os.path.normpath(a.build))
    if a.failed:
        failed = failed_tests(a.build)
        print(f"== {name}: failed tests: {' '.join(failed) or 'none listed'}")
        for t in failed:
            mine = sorted((r for r in rs if r["ctest"] == t), key=key)
            if mine:
                print(f"-- {t}: its checks, smallest margin first\n{table(mine)}")
            else:
                print(f"-- {t}: no margins recorded (it failed before or outside a timing check)")
        for t, text in outputs(a.build, failed).items():
            print(f"\n-- output of {t}\n{text.rstrip()}")
        print()
    if not rs:
        print(f"== {name}: no timing checks recorded")
        return 0
    missed = [r for r in rs if not r["ok"]]
    small = sorted(rs, key=key)[:a.top]
    print(f"== {name}: the {len(small)} smallest of {len(rs)} timing margins "
          f"({len(missed)} missed, of which "
          f"{sum(1 for r in missed if r.get('attempt', 1) == 1)} measured again)")
    print(table(small))
    return 0


if __name__ == "__main__":
    sys.exit(main())
