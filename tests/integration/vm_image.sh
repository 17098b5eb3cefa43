#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# vm-images/build-image.sh: builds from a clean cache, a second call reuses
# the entry (same key, same bytes), a forced rebuild gives identical bytes
# (reproducible), another SOURCE_DATE_EPOCH gives another key, and bad input
# is refused without touching the cache; a cache other users cannot reach
# is published where they can.
. "$(dirname "$0")/vm_lib.sh"

cache=$T/cache
build() { VS_IMAGE_CACHE=$cache "$vm_dir/build-image.sh" "$@" 2>"$T/build.err"; }
sums() { (cd "$1" && sha256sum vmlinuz initrd.img); }

t0=$(now)
build >"$T/first" || bail "first build failed: $(cat "$T/build.err")"
build_s=$(elapsed "$t0")
. "$T/first"
first_key=$VS_IMAGE_KEY
first_sums=$(sums "$VS_IMAGE_DIR")
note "clean build ${build_s} s; initrd $(stat -c %s "$VS_INITRD") bytes, kernel $(stat -c %s "$VS_KERNEL") bytes, key $first_key"
check "first build writes kernel and initrd under the cache" \
    test -s "$cache/$first_key/vmlinuz" -a -s "$cache/$first_key/initrd.img"
check "initrd is a gzip'd newc cpio with /init and iperf3" \
    sh -c "zcat '$VS_INITRD' | cpio -it --quiet | grep -qx init && zcat '$VS_INITRD' | cpio -it --quiet | grep -qx usr/bin/iperf3"

# The kernel: the package guest-kernel.sh unpacked (deps.sh ran it), never installed.
gk=$("$vm_dir/guest-kernel.sh" 2>"$T/gk.err") || bail "guest-kernel.sh failed: $(cat "$T/gk.err")"
kver=$(basename "$gk" | sed 's/^linux-image-//; s/_.*//')
check "guest-kernel.sh again: the same tree, nothing fetched" \
    test "$("$vm_dir/guest-kernel.sh" 2>"$T/gk2.err")" = "$gk" -a ! -s "$T/gk2.err"
check "the image's kernel is the unpacked one" cmp -s "$VS_KERNEL" "$gk/boot/vmlinuz-$kver"
check "its modules come from the unpacked tree" test "$VS_KERNEL_MODULES" = "$gk/lib/modules/$kver"
check "the unpacked tree names its package" grep -qx "linux-image-$kver [^ ]*" "$gk/.package"
check "and has the module index modprobe reads" test -s "$gk/lib/modules/$kver/modules.dep"

t0=$(now)
build >"$T/second" || bail "second build failed"
note "cached call $(elapsed "$t0") s"
. "$T/second"
check "second call reuses the entry (same key)" test "$VS_IMAGE_KEY" = "$first_key"
check "second call says it reuses" grep -q reusing "$T/build.err"
check "second call leaves the bytes alone" test "$(sums "$VS_IMAGE_DIR")" = "$first_sums"

build --force >"$T/third" || bail "forced rebuild failed"
. "$T/third"
check "forced rebuild is byte-identical (reproducible)" test "$(sums "$VS_IMAGE_DIR")" = "$first_sums"
check "one entry in the cache" test "$(find "$cache" -mindepth 1 -maxdepth 1 ! -name '.*' | wc -l)" -eq 1

SOURCE_DATE_EPOCH=1600000000 build >"$T/fourth" || bail "build with another epoch failed"
. "$T/fourth"
check "another SOURCE_DATE_EPOCH gives another key" test "$VS_IMAGE_KEY" != "$first_key"

# A cache other users cannot reach (a clone in root's 0700 home): the entry
# is published where libvirt's QEMU user can read it.
mkdir -m 0700 "$T/private"
VS_IMAGE_CACHE=$T/private/cache VS_IMAGE_SHARED=$T/shared "$vm_dir/build-image.sh" \
    >"$T/fifth" 2>"$T/build.err" || bail "build in a 0700 directory failed: $(cat "$T/build.err")"
. "$T/fifth"
check "a 0700 cache publishes its entry to the shared directory" \
    test "$VS_IMAGE_DIR" = "$T/shared/$VS_IMAGE_KEY"
check "the published images are readable by another user" \
    runuser -u nobody -- sh -c "test -r '$VS_KERNEL' && test -r '$VS_INITRD'"
check "the published images are the cached bytes" \
    test "$(sums "$VS_IMAGE_DIR")" = "$(sums "$T/private/cache/$VS_IMAGE_KEY")"

before=$(ls -A "$cache" | sort)
check "unknown option is refused" sh -c "! VS_IMAGE_CACHE='$cache' '$vm_dir/build-image.sh' --bogus 2>'$T/err'"
check "unknown option gets a clear message" grep -q "unknown argument '--bogus'" "$T/err"
check "bad SOURCE_DATE_EPOCH is refused" sh -c "! SOURCE_DATE_EPOCH=abc VS_IMAGE_CACHE='$cache' '$vm_dir/build-image.sh' 2>'$T/err'"
check "bad SOURCE_DATE_EPOCH gets a clear message" grep -q "SOURCE_DATE_EPOCH must be a number" "$T/err"
check "refused calls change nothing in the cache" test "$(ls -A "$cache" | sort)" = "$before"
finish
