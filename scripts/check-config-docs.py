#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Check that every setting of vcpuschedd is documented where operators
look: the shipped packaging/vcpuschedd.conf (as a "#key value" default or
a "# key ..." description) and vcpuschedd.conf(5) (".It Cm key"); and that
vcpuschedctl(8) documents exactly the options `vcpuschedctl -h` shows.

The settings are the daemon's own: the long options of `vcpuschedd --help`
(each is a config file key), less those that are not (config, foreground,
verbose, help, version, policies).

Usage: check-config-docs.py VCPUSCHEDD [VCPUSCHEDCTL]
       exit 0 clean, 1 a difference (each one printed)
"""
import os
import re
import subprocess
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NOT_KEYS = {"config", "foreground", "verbose", "help", "version", "policies"}


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
    if len(sys.argv) > 2:
        missing += ctl_options(sys.argv[2])
    for m in missing:
        print(f"check-config-docs: {m}", file=sys.stderr)
    if not missing:
        print(f"check-config-docs: {len(keys)} settings documented in both")
    return 1 if missing else 0


# Long options vcpuschedctl(8) names that are another program's.
CTL_MAN_OTHERS = {"park"}  # vcpuschedd's, in the description of `stats`


def ctl_options(ctl):
    """vcpuschedctl's long options (its usage, which lists every command's)
    against those vcpuschedctl(8) names (`Fl \-name`), both ways."""
    usage = subprocess.run([ctl, "-h"], capture_output=True, text=True)
    opts = set(re.findall(r"--([a-z][a-z-]*)", usage.stdout + usage.stderr)) | {"help"}
    with open(os.path.join(TOP, "docs", "vcpuschedctl.8"), encoding="utf-8") as f:
        man = {m.replace("\\", "") for m in re.findall(r"Fl \\-([a-z][a-z\\-]*)", f.read())}
    if len(opts) < 10:
        return [f"only {sorted(opts)} in `{ctl} -h`"]
    return ([f"docs/vcpuschedctl.8 does not document '--{o}'" for o in sorted(opts - man)] +
            [f"docs/vcpuschedctl.8 documents '--{o}', which `vcpuschedctl -h` does not show"
             for o in sorted(man - opts - CTL_MAN_OTHERS)])


if __name__ == "__main__":
    sys.exit(main())
