#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The guests' kernel, Debian 12's cloud kernel, unpacked for the images
# (build-image.sh) and never installed: an installed kernel package gets a
# bootloader entry, and on a bare-metal host GRUB may then boot the cloud
# kernel, which lacks most hardware drivers. Fetches the package that
# linux-image-cloud-amd64 depends on (apt-get download) and unpacks it
# (dpkg-deb -x) into $VS_GUEST_KERNEL/<package>_<version> (default
# /var/cache/vcpusched/guest-kernel), once per version. Needs root and
# apt's package lists (scripts/deps.sh runs it after apt-get update).
#
# Usage: guest-kernel.sh      Prints the unpacked tree's path.
set -euo pipefail

base=${VS_GUEST_KERNEL:-/var/cache/vcpusched/guest-kernel}

die() { echo "guest-kernel: $*" >&2; exit 1; }

case ${1:-} in
'') ;;
-h | --help) sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) die "unknown argument '$1' (try --help)" ;;
esac
[ "$(id -u)" -eq 0 ] || die "run as root (it writes $base)"
for t in apt-cache apt-get dpkg-deb depmod; do
    command -v "$t" >/dev/null || die "$t not found"
done

pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
[ -n "$pkg" ] || die "apt knows no linux-image-cloud-amd64 (run apt-get update)"
ver=$(apt-cache policy "$pkg" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }')
[ -n "$ver" ] || die "apt has no version of $pkg to fetch (run apt-get update)"
dir=$base/${pkg}_$ver
kver=${pkg#linux-image-}
# A tree is renamed into place whole, its module index made last.
if [ -f "$dir/lib/modules/$kver/modules.dep" ]; then
    echo "$dir"
    exit 0
fi
rm -rf "$dir"

mkdir -p -m 0755 "$base"
tmp=$(mktemp -d "$base/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Readable by apt's _apt user, which downloads when it can.
chmod 0755 "$tmp"
(cd "$tmp" && apt-get download -q "$pkg=$ver" >/dev/null 2>"$tmp/apt.err") ||
    die "apt-get download $pkg=$ver failed: $(tail -n 3 "$tmp/apt.err")"
dpkg-deb -x "$tmp"/*.deb "$tmp/root" || die "dpkg-deb -x $pkg failed"
[ -f "$tmp/root/boot/vmlinuz-$kver" ] && [ -d "$tmp/root/lib/modules/$kver" ] ||
    die "$pkg $ver has no boot/vmlinuz-$kver and lib/modules/$kver"
# The module index the package's postinst would make: modprobe needs it
# (the rig mounts this tree at /lib/modules/<kver>).
depmod -b "$tmp/root" "$kver" || die "depmod $kver failed"
# What build-image.sh keys its images by, as dpkg would say it of an installed kernel.
echo "$pkg $ver" >"$tmp/root/.package"
chmod 0755 "$tmp/root"
chmod 0644 "$tmp/root/boot/vmlinuz-$kver"
mv -T "$tmp/root" "$dir"
echo "guest-kernel: $pkg $ver unpacked in $dir ($(du -sm "$dir" | cut -f1) MB)" >&2
echo "$dir"
