#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Check that docs/metrics.md lists exactly the metric families
vcpuschedctl writes: each family of vcpusched/control/ctl_metrics.c (a
name and its type; counters end in _total as exposed) named in the first
column of a table row of the page, and no row names one the code lacks.

Usage: check-metrics-docs.py
       exit 0 clean, 1 a difference (each one printed)
"""
import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SUFFIX = {"COUNTER": "_total", "INFO": "_info"}


def code_families(src):
    """Exposed names of the families a source file defines: each
    `"name", M_TYPE` of its tables and family structs."""
    out = set()
    for name, kind in re.findall(r'"([a-z0-9_]+)",\s*M_([A-Z]+)\b', src):
        suffix = SUFFIX.get(kind, "")
        out.add(f"vcpusched_{name}" + ("" if name.endswith(suffix) else suffix))
    return out


def documented(page):
    """Every `vcpusched_*` name in the first cell of a table row."""
    out = set()
    for cell in re.findall(r"^\| ([^|]+) \|", page, re.M):
        out.update(re.findall(r"`(vcpusched_[a-z0-9_]+)(?:\{[^`]*\})?`", cell))
    return out


def main():
    with open(os.path.join(TOP, "vcpusched", "control", "ctl_metrics.c"), encoding="utf-8") as f:
        code = code_families(f.read())
    with open(os.path.join(TOP, "docs", "metrics.md"), encoding="utf-8") as f:
        docs = documented(f.read())
    if len(code) < 20:
        print(f"check-metrics-docs: only {len(code)} families found in ctl_metrics.c",
              file=sys.stderr)
        return 1
    diff = [f"docs/metrics.md does not list {n}" for n in sorted(code - docs)]
    diff += [f"docs/metrics.md lists {n}, which vcpuschedctl does not write"
             for n in sorted(docs - code)]
    for d in diff:
        print(f"check-metrics-docs: {d}", file=sys.stderr)
    if not diff:
        print(f"check-metrics-docs: {len(code)} metric families documented")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
