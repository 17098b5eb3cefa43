#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""The POLICIES section of vcpuschedd.conf(5), from the code.

`vcpuschedd --policies` prints every policy's pool and domain parameters
(type, range, default, one line of help) from the schemas the daemon checks
input against. This script writes that as the man page's POLICIES section,
between its two marker comments, or checks that the page holds exactly
what it would write (lint.config_docs): a parameter, range or default
changed in the code and not in the page fails the tests.

Usage: policies-man.py VCPUSCHEDD [--write]   exit 0 same (or written), 1 differs
"""
import json
import os
import subprocess
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MAN = os.path.join(TOP, "docs", "vcpuschedd.conf.5")
BEGIN = '.\\" BEGIN POLICIES: scripts/policies-man.py writes this from vcpuschedd --policies\n'
END = '.\\" END POLICIES\n'


def text(s):
    """A line of running text, safe for mdoc."""
    s = s.replace("\\", "\\e")
    return "\\&" + s if s[:1] in (".", "'") else s


def param(p):
    if p["type"] == "bool":
        head, default = "on | off", "on" if p["default"] else "off"
    elif p["type"] == "int":
        head, default = f"{p['min']}..{p['max']}", str(p["default"])
    else:
        head, default = f"text (at most {p['max']} bytes)", None
    lines = [f".It Cm {p['name']} Ns = Ns Ar {head}"]
    help_ = p["help"][:1].upper() + p["help"][1:] if p["help"] else ""
    lines.append(text(f"{help_}." + (f" Default: {default}." if default is not None else "")))
    return lines


def params_list(title, ps):
    if not ps:
        return [".Pp", f"{title}: none."]
    out = [".Pp", f"{title}:", ".Bl -tag -width Ds"]
    for p in ps:
        out += param(p)
    return out + [".El"]


def section(policies):
    names = [p["name"] for p in policies]
    # The background class's parameters come with every policy: listed once.
    common = {k: [p for p in policies[0][k] if all(p["name"] in [q["name"] for q in o[k]]
                                                  for o in policies)]
              for k in ("pool_params", "dom_params")}
    skip = {k: {p["name"] for p in v} for k, v in common.items()}
    out = [".Sh POLICIES",
           "Each pool runs one policy; its parameters go on the pool's line",
           ".Pq Cm pool , pool-param ,",
           "a domain's with its attach, its libvirt metadata or",
           ".Ic vcpuschedctl set .",
           ".Ic vcpuschedd Fl \\-policies",
           "prints this list as JSON, as",
           ".Ic vcpuschedctl help",
           "does from a running daemon.",
           f"The policies: {', '.join(names)}."]
    for pol in policies:
        out += [f".Ss {pol['name']}", text(pol["summary"][:1].upper() + pol["summary"][1:] + ".")]
        out += params_list("Pool parameters",
                           [p for p in pol["pool_params"] if p["name"] not in skip["pool_params"]])
        out += params_list("Domain parameters",
                           [p for p in pol["dom_params"] if p["name"] not in skip["dom_params"]])
    out += [".Ss Every policy: the background class",
            "A domain with",
            ".Cm class Ns = Ns Li background",
            "runs when no foreground vCPU of its CPU wants it, plus one slice every alpha",
            ".Pq Xr vcpuschedctl 8 .",
            "Under every policy:"]
    out += params_list("Pool parameters", common["pool_params"])
    out += params_list("Domain parameters", common["dom_params"])
    return "".join(line + "\n" for line in out)


def main():
    daemon, write = sys.argv[1], "--write" in sys.argv[2:]
    r = subprocess.run([daemon, "--policies"], capture_output=True, text=True, check=True)
    want = BEGIN + section(json.loads(r.stdout)["policies"]) + END
    with open(MAN, encoding="utf-8") as f:
        man = f.read()
    if BEGIN not in man or END not in man:
        print(f"policies-man: {MAN} has no POLICIES markers", file=sys.stderr)
        return 1
    head, rest = man.split(BEGIN, 1)
    have, tail = rest.split(END, 1)
    if BEGIN + have + END == want:
        print("policies-man: the POLICIES section matches the code")
        return 0
    if write:
        with open(MAN, "w", encoding="utf-8") as f:
            f.write(head + want + tail)
        print(f"policies-man: {MAN} written")
        return 0
    print(f"policies-man: the POLICIES section of {MAN} differs from `vcpuschedd --policies`; "
          "run scripts/policies-man.py BUILD/vcpusched/vcpuschedd --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
