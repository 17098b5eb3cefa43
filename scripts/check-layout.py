#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Check that vcpusched's folders keep the rules their READMEs state.

Each folder of vcpusched/ (and qmp/, libvirt-hooks/) has a README.md with
  May include: FOLDER ...          (other folders its files may include)
  Never includes: HEADER ...       (optional: headers it must not include)
Every quoted #include is resolved (same folder, or FOLDER/path from
vcpusched/, or qmp.h) and checked against those lines. The folder table in
vcpusched/README.md and the map in docs/design.md must name every folder.

Usage: check-layout.py [--root DIR] [--selftest]   exit 0 clean, 1 violations
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)
GENERATED = {"vmlinux.h", "vcpusched.skel.h", "version.h"}  # made by the build (cmake/bpf.cmake, common/)
EXTERNAL = {"qmp.h": "qmp"}  # libraries outside vcpusched/, by their public header


def read_rules(readme):
    may, never = None, set()
    with open(readme, encoding="utf-8") as f:
        for line in f:
            if line.startswith("May include:"):
                words = line.split(":", 1)[1].split()
                may = set() if words == ["(nothing)"] else set(words)
            elif line.startswith("Never includes:"):
                never |= set(line.split(":", 1)[1].split())
    return may, never


def folders(root):
    """(name, path, is-under-vcpusched) of every checked folder."""
    out = []
    vs = os.path.join(root, "vcpusched")
    for name in sorted(os.listdir(vs)):
        if os.path.isdir(os.path.join(vs, name)):
            out.append((name, os.path.join(vs, name), True))
    for name in ("qmp", "libvirt-hooks"):
        if os.path.isdir(os.path.join(root, name)):
            out.append((name, os.path.join(root, name), False))
    return out


def check_file(path, folder, fdir, vsdir, may, never, errors):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    for kind, name in INCLUDE.findall(src):
        where = os.path.relpath(path, os.path.dirname(vsdir))
        if name in never or (kind == "<" and "<%s>" % name in never):
            errors.append("%s: includes %s, which %s/README.md forbids" % (where, name, folder))
            continue
        if kind == "<":
            continue
        if os.path.basename(name) in GENERATED:
            continue
        if os.path.exists(os.path.join(os.path.dirname(path), name)):
            if "/" in name and not name.startswith("bpf/"):
                errors.append("%s: includes %s by a relative path; use FOLDER/file.h" % (where, name))
            continue
        if name in EXTERNAL:
            target = EXTERNAL[name]
        elif "/" in name and os.path.exists(os.path.join(vsdir, name)):
            target = name.split("/", 1)[0]
        else:
            errors.append("%s: includes \"%s\", which is not in its folder nor vcpusched/FOLDER/" % (where, name))
            continue
        if target != folder and target not in may:
            errors.append("%s: includes %s, but %s/ may include only: %s" %
                          (where, name, folder, " ".join(sorted(may)) or "(nothing)"))


def check(root):
    errors = []
    vsdir = os.path.join(root, "vcpusched")
    with open(os.path.join(vsdir, "README.md"), encoding="utf-8") as f:
        table = f.read()
    design_path = os.path.join(root, "docs", "design.md")
    design = open(design_path, encoding="utf-8").read() if os.path.exists(design_path) else ""
    for folder, fdir, under in folders(root):
        readme = os.path.join(fdir, "README.md")
        if not os.path.exists(readme):
            errors.append("%s/: no README.md saying what it owns and may include" % folder)
            continue
        may, never = read_rules(readme)
        if may is None:
            errors.append("%s/README.md: no 'May include:' line" % folder)
            continue
        if under and "`%s/`" % folder not in table:
            errors.append("vcpusched/README.md: folder %s/ is missing from the table" % folder)
        if under and "`vcpusched/%s/`" % folder not in design:
            errors.append("docs/design.md: folder vcpusched/%s/ is missing from the map" % folder)
        for d, _, files in os.walk(fdir):
            for fn in sorted(files):
                if fn.endswith((".c", ".h")):
                    check_file(os.path.join(d, fn), folder, fdir, vsdir, may, never, errors)
    for name in re.findall(r"`vcpusched/([a-z_]+)/`", design):
        if not os.path.isdir(os.path.join(vsdir, name)):
            errors.append("docs/design.md: names vcpusched/%s/, which does not exist" % name)
    return errors


def selftest(root):
    """The check must fail on a tree that breaks a rule, and pass on the real one."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(root, "vcpusched"), os.path.join(tmp, "vcpusched"))
        shutil.copytree(os.path.join(root, "docs"), os.path.join(tmp, "docs"))
        bad = os.path.join(tmp, "vcpusched", "policy", "zz_bad.c")
        with open(bad, "w") as f:
            f.write('#include "core/sched_core.h"\n#include <unistd.h>\n')
        errs = check(tmp)
        want = ["zz_bad.c: includes core/sched_core.h", "zz_bad.c: includes unistd.h"]
        missing = [w for w in want if not any(w in e for e in errs)]
        if missing:
            print("selftest: the check did not catch: %s" % missing, file=sys.stderr)
            return 1
    print("selftest: a policy/ file including core/ and <unistd.h> is refused")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if args.selftest and selftest(root) != 0:
        return 1
    errors = check(root)
    for e in errors:
        print("check-layout: " + e, file=sys.stderr)
    if errors:
        return 1
    print("check-layout: %d folders keep their include rules" % len(folders(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
