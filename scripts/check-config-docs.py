#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Check that every setting of vcpuschedd is documented where operators
look: the shipped packaging/vcpuschedd.conf (as a "#key value" default or
a "# key ..." description) and vcpuschedd.conf(5) (".It Cm key").

The settings are the daemon's own: the long options of `vcpuschedd --help`
(each is a config file key), less those that are not (config, foreground,
verbose, help, version).

Usage: check-config-docs.py VCPUSCHEDD     exit 0 clean, 1 undocumented keys
"""
import os
import re
import subprocess
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NOT_KEYS = {"config", "foreground", "verbose", "help", "version"}


def main():
    daemon = sys.argv[1]
    usage = subprocess.run([daemon, "--help"], capture_output=True, text=True)
    keys = sorted(set(re.findall(r"--([a-z][a-z-]*)", usage.stderr + usage.stdout)) - NOT_KEYS)
    if len(keys) < 10:
        print(f"check-config-docs: only {keys} in `{daemon} --help`", file=sys.stderr)
        return 1
    with open(os.path.join(TOP, "packaging", "vcpuschedd.conf"), encoding="utf-8") as f:
        conf = f.read()
    with open(os.path.join(TOP, "docs", "vcpuschedd.conf.5"), encoding="utf-8") as f:
        man = f.read()
    missing = []
    for k in keys:
        if not re.search(rf"^# ?{re.escape(k)} ", conf, re.M):
            missing.append(f"packaging/vcpuschedd.conf does not describe '{k}'")
        if not re.search(rf"^\.It Cm {re.escape(k)}\b", man, re.M):
            missing.append(f"docs/vcpuschedd.conf.5 has no '.It Cm {k}'")
    for m in missing:
        print(f"check-config-docs: {m}", file=sys.stderr)
    if not missing:
        print(f"check-config-docs: {len(keys)} settings documented in both")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
