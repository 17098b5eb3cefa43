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
# A package built from the same sources is reused: DIR/build.key records
# what the last build was made of (every file copied, the installed
# packages' versions, the kernel BTF that vmlinux.h is dumped from), so
# the rig (tests/rig/rig.sh) and scripts/check-package.sh in one
# scripts/test.sh run build it once. --rebuild builds regardless.
#
#   scripts/build-deb.sh [--out DIR] [--rebuild]     default DIR: build/deb
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
out=$top/build/deb
rebuild=0
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    *) echo "build-deb: unknown argument '$1' (--out DIR, --rebuild)" >&2; exit 2 ;;
    esac
done

say() { echo "build-deb: $*" >&2; }

# One release: the project's and the changelog's.
release=$(sed -n 's/^project(vcpusched VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb_release=$(dpkg-parsechangelog -S Version)
if [ "$release" != "$deb_release" ]; then
    say "CMakeLists.txt says $release, debian/changelog $deb_release: add a changelog entry"
    exit 1
fi
dpkg-checkbuilddeps >&2 || { say "missing build dependencies (scripts/deps.sh)"; exit 1; }
arch=$(dpkg-architecture -qDEB_HOST_ARCH)

# What git knows (committed or staged) plus new files it does not ignore.
sources() {
    git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done
}
sources_hash=$(sources | tar -c --null -T - --mtime=@0 --owner=0 --group=0 --numeric-owner |
    sha256sum | cut -d' ' -f1)

# Each build its own version, above the release it builds on and in the
# order of main's history, so that apt upgrades one build to the next and
# can be sent back (docs/packaging.md, "Upgrades and rollback"):
# RELEASE+N.gSHA for commit SHA, the Nth of its history; sources that are
# not that commit's add .dHASH (theirs, 8 digits), which sorts after it.
# Outside a git checkout: the release's version.
version=$release
if commit=$(git rev-parse --short=7 HEAD 2>/dev/null); then
    version=$release+$(git rev-list --count HEAD).g$commit
    [ -z "$(git status --porcelain --untracked-files=normal)" ] || version=$version.d${sources_hash:0:8}
fi
deb=$out/vcpusched_${version}_${arch}.deb

# One build at a time (the rig and check-package.sh may ask at once): the
# second waits, then reuses the first one's package.
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

# What the package is made of: the sources' names, modes, contents and
# symlinks (a tar without times or owners), every installed package's
# version (the toolchain, the -dev packages and what dpkg-shlibdeps reads),
# and the kernel BTF the BPF program compiles against.
key=$({
    echo "$sources_hash $version"
    dpkg-query -W -f '${Package} ${Version} ${Architecture}\n'
    sha256sum /sys/kernel/btf/vmlinux 2>/dev/null || true
} | sha256sum | cut -d' ' -f1)
if [ "$rebuild" = 0 ] && [ -f "$deb" ] && [ -f "$out/vcpusched_${version}_${arch}.changes" ] &&
    [ "$(cat "$out/build.key" 2>/dev/null)" = "$key" ]; then
    say "reusing $deb (built from these sources: $out/build.key)"
    echo "$deb"
    exit 0
fi
mkdir -p "$out"
rm -f "$out/build.key"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/vcpusched-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/vcpusched-$version
mkdir -p "$src"
sources | tar -c --null -T - | tar -x -C "$src"
# The build's changelog entry, in the copy (the checkout's changelog names
# releases): dated as its commit, so that the same commit builds the same.
if [ "$version" != "$release" ]; then
    {
        echo "vcpusched ($version) unstable; urgency=medium"
        echo
        echo "  * Build of commit $commit, on top of release $release."
        echo
        echo " -- $(dpkg-parsechangelog -S Maintainer)  $(git log -1 --format=%cD HEAD)"
        echo
        cat debian/changelog
    } >"$src/debian/changelog"
fi

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
for f in "$work"/vcpusched*_"$version"[._]*; do
    cp "$f" "$out/"
done
echo "$key" >"$out/build.key"
say "built $(cd "$out" && echo vcpusched*_"$version"[._]*)"
echo "$deb"
