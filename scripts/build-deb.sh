#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# Build the Debian package (debian/, docs/packaging.md) from this checkout
# (tracked files plus new ones not yet committed) and print the .deb's
# path on stdout, alone: `deb=$(scripts/build-deb.sh)`. Progress goes to
# stderr, the build's output to build/deb/build.log.
#
# Run as root, it builds as nobody in a private directory: the package
# build needs no privilege (Rules-Requires-Root: no), and this shows it.
# Needs the build dependencies (scripts/deps.sh installs them).
#
#   scripts/build-deb.sh [--out DIR]     default DIR: build/deb
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
out=$top/build/deb
if [ "${1:-}" = "--out" ]; then
    out=$(realpath -m "$2")
fi

say() { echo "build-deb: $*" >&2; }

# One version: the project's and the package's.
version=$(sed -n 's/^project(vcpusched VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb_version=$(dpkg-parsechangelog -S Version)
if [ "$version" != "$deb_version" ]; then
    say "CMakeLists.txt says $version, debian/changelog $deb_version: add a changelog entry"
    exit 1
fi
dpkg-checkbuilddeps >&2 || { say "missing build dependencies (scripts/deps.sh)"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/vcpusched-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/vcpusched-$version
mkdir -p "$src" "$out"
# What git knows (committed or staged) plus new files it does not ignore.
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar -c --null -T - | tar -x -C "$src"

as_builder=()
if [ "$(id -u)" -eq 0 ]; then
    chown -R nobody:nogroup "$work"
    as_builder=(setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env)
fi
say "building vcpusched $version in $work (log: $out/build.log)"
if ! (cd "$src" && "${as_builder[@]}" env HOME="$work" PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        dpkg-buildpackage -us -uc -j"$(nproc)") >"$out/build.log" 2>&1; then
    tail -40 "$out/build.log" >&2
    say "dpkg-buildpackage failed (full log: $out/build.log)"
    exit 1
fi
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
for f in "$work"/vcpusched*_"$version"[._]*; do
    cp "$f" "$out/"
done
say "built $(cd "$out" && echo vcpusched*_"$version"[._]*)"
echo "$out/vcpusched_${version}_${arch}.deb"
