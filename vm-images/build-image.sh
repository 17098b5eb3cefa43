#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# Build the tiny benchmark guest from Debian 12 packages: the cloud kernel and
# an initramfs of busybox-static, the virtio-net modules, iperf3 (with the
# shared libraries ldd names) and guest/init. Reproducible (sorted file list,
# fixed mtimes, cpio --reproducible, gzip -n) and cached under a key hashed
# from this script, the recipe, its init, SOURCE_DATE_EPOCH and the package
# versions. Another recipe (--recipe FILE, see guest/recipe) builds another
# initramfs the same way: the real-host rig's (tests/rig/initramfs.recipe).
#
# Usage: build-image.sh [--cache DIR] [--recipe FILE] [--force]
# Prints, on stdout, shell assignments for the caller to eval:
#   VS_IMAGE_DIR=...  VS_KERNEL=...  VS_INITRD=...  VS_IMAGE_KEY=...
#   VS_KERNEL_MODULES=...  (the kernel's module tree, for a VM that boots this root)
# The kernel is the one vm-images/guest-kernel.sh unpacked, else an
# installed linux-image-*-cloud-amd64.
#
# The images go to QEMU, which libvirt runs as its own user: when other
# users cannot reach the cache (a clone in root's 0700 home), the entry is
# published to $VS_IMAGE_SHARED (default /var/cache/vcpusched/images),
# root's and readable by all, and those paths are printed instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${VS_IMAGE_CACHE:-$here/cache}
shared=${VS_IMAGE_SHARED:-/var/cache/vcpusched/images}
kernels=${VS_GUEST_KERNEL:-/var/cache/vcpusched/guest-kernel}
recipe=$here/guest/recipe
force=0
# Fixed mtime for every file in the archive; part of the cache key.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
# Host tools the build itself needs, with the package that provides each.
tools=(cpio:cpio gzip:gzip ldd:libc-bin sha256sum:coreutils dpkg-query:dpkg)

die() { echo "build-image: $*" >&2; exit 1; }
log() { echo "build-image: $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
    --cache) [ $# -ge 2 ] || die "--cache needs a directory"; cache=$2; shift 2 ;;
    --recipe) [ $# -ge 2 ] || die "--recipe needs a file"; recipe=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
    esac
done
[ -f "$recipe" ] || die "no recipe file '$recipe'"
recipe=$(realpath "$recipe")
# The recipe sets init (a path relative to the recipe's folder), modules, binaries and packages.
# shellcheck source=guest/recipe
. "$recipe"
init=$(cd "$(dirname "$recipe")" && realpath "$init")
[ -f "$init" ] || die "$recipe: no init file '$init'"
case $SOURCE_DATE_EPOCH in
''|*[!0-9]*) die "SOURCE_DATE_EPOCH must be a number of seconds, got '$SOURCE_DATE_EPOCH'" ;;
esac

pkg_version() {
    dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null |
        awk '$1 == "install" && $3 == "installed" { print $4 }'
}

check_inputs() {
    local t missing=()
    for t in "${tools[@]}"; do
        command -v "${t%%:*}" >/dev/null || missing+=("${t#*:}")
    done
    for t in "${packages[@]}"; do
        [ -n "$(pkg_version "$t")" ] || missing+=("$t")
    done
    [ ${#missing[@]} -eq 0 ] ||
        die "missing Debian packages: ${missing[*]} (run scripts/deps.sh, or apt-get install ${missing[*]})"
}

# The cloud kernel: the newest unpacked by guest-kernel.sh, else the newest
# installed (deps.sh installed it before it unpacked it). Its package is
# part of the key.
find_kernel() {
    local k
    k=$(find "$kernels"/*/boot -maxdepth 1 -name 'vmlinuz-*-cloud-amd64' 2>/dev/null | sort -V | tail -n 1)
    [ -n "$k" ] || k=$(find /boot -maxdepth 1 -name 'vmlinuz-*-cloud-amd64' | sort -V | tail -n 1)
    [ -n "$k" ] || die "no cloud kernel in $kernels or /boot (run scripts/deps.sh, or vm-images/guest-kernel.sh)"
    [ -r "$k" ] || die "$k is not readable (run as root)"
    echo "$k"
}

# The tree a kernel came with: "" for /boot/vmlinuz-*, else the unpacked package's.
kernel_tree() {
    case $1 in
    /boot/*) echo "" ;;
    *) dirname "$(dirname "$1")" ;;
    esac
}

# "package version" of the kernel.
kernel_package() {
    local tree p
    tree=$(kernel_tree "$1")
    if [ -n "$tree" ]; then
        cat "$tree/.package"
    else
        p=$(dpkg-query -S "$1" | cut -d: -f1)
        echo "$p $(pkg_version "$p")"
    fi
}

# The kernel's module tree.
kernel_modules() {
    echo "$(kernel_tree "$1")/lib/modules/${1##*/vmlinuz-}"
}

# Path of one module file, compressed or not.
find_module() {
    local mods=$1 name=$2 f
    f=$(find "$mods/kernel" -regextype posix-extended \
        -regex ".*/$name\.ko(\.(xz|zst|gz))?" | sort | head -n 1)
    [ -n "$f" ] || die "module $name not found under $mods"
    echo "$f"
}

# Shared libraries the recipe's binaries load, as ldd names them (absolute paths only).
binary_libs() {
    [ ${#binaries[@]} -gt 0 ] || return 0
    ldd "${binaries[@]}" | awk '
        $2 == "=>" && $3 ~ /^\// { print $3 }
        $1 ~ /^\// { print $1 }' | sort -u
}

# Lines "package version" for every package a file of the image comes from.
input_versions() {
    local kernel=$1 f
    {
        for f in "${packages[@]}"; do echo "$f"; done
        for f in $(binary_libs); do
            dpkg-query -S "$(realpath "$f")" 2>/dev/null | cut -d: -f1 | cut -d, -f1 ||
                dpkg-query -S "$f" | cut -d: -f1 | cut -d, -f1
        done
    } | sort -u | while read -r f; do
        echo "$f $(pkg_version "$f")"
    done
    kernel_package "$kernel"
}

cache_key() {
    {
        sha256sum "$here/build-image.sh" "$recipe" "$init" | awk '{ print $1 }'
        echo "SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
        echo "kernel=$(basename "$1")"
        input_versions "$1"
    } | tee "$2" | sha256sum | cut -c1-16
}

# Copy a module, decompressed (busybox insmod takes plain .ko files).
copy_module() {
    local src=$1 dst=$2
    case $src in
    *.ko) cp "$src" "$dst" ;;
    *.ko.xz) xz -dc "$src" > "$dst" || die "cannot decompress $src (install xz-utils)" ;;
    *.ko.zst) zstd -qdc "$src" > "$dst" || die "cannot decompress $src (install zstd)" ;;
    *.ko.gz) gzip -dc "$src" > "$dst" ;;
    esac
}

populate_root() {
    local root=$1 mods=$2 m lib b
    mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,usr/bin,lib/modules}
    cp /bin/busybox "$root/bin/busybox"
    cp "$init" "$root/init"
    for m in "${modules[@]}"; do
        copy_module "$(find_module "$mods" "$m")" "$root/lib/modules/$m.ko"
    done
    printf '%s\n' "${modules[@]}" > "$root/lib/modules/load-order"
    for b in "${binaries[@]}"; do
        mkdir -p "$root$(dirname "$b")"
        cp "$b" "$root$b"
    done
    for lib in $(binary_libs); do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
    # iperf3 resolves numeric addresses only, but glibc still reads these.
    echo 'hosts: files' > "$root/etc/nsswitch.conf"
    echo '127.0.0.1 localhost' > "$root/etc/hosts"
}

# Same bytes for the same inputs: modes, owners, mtimes and order fixed.
pack_root() {
    local root=$1 out=$2
    find "$root" -type d -exec chmod 0755 {} +
    find "$root" -type f -exec chmod 0644 {} +
    chmod 0755 "$root/init" "$root/bin/busybox"
    for b in "${binaries[@]}"; do chmod 0755 "$root$b"; done
    find "$root" -name 'ld-linux*' -exec chmod 0755 {} +
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    (cd "$root" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
        cpio --null --quiet --reproducible -H newc -o -R 0:0) |
        gzip -n -9 > "$out"
}

# Build into the staging directory $2, which then becomes the cache entry $1.
build() {
    local kernel=$1 tmp=$2 dir=$3
    populate_root "$tmp/root" "$(kernel_modules "$kernel")"
    pack_root "$tmp/root" "$tmp/initrd.img"
    cp "$kernel" "$tmp/vmlinuz"
    chmod 0644 "$tmp/vmlinuz" "$tmp/initrd.img"
    (cd "$tmp/root" && find . -mindepth 1 | LC_ALL=C sort) > "$tmp/files"
    rm -rf "$tmp/root"
    # Written last: a directory with a valid sha256sums is a complete entry.
    (cd "$tmp" && sha256sum vmlinuz initrd.img > sha256sums)
    chmod 0755 "$tmp"
    rm -rf "$dir"
    mv "$tmp" "$dir"
}

cache_valid() {
    [ -f "$1/sha256sums" ] && (cd "$1" && sha256sum --quiet -c sha256sums >/dev/null 2>&1)
}

# True if every directory on the way to $1 lets other users through and
# the files in it are readable by them (what libvirt's QEMU user needs).
readable_by_others() {
    local d=$1
    while [ "$d" != / ] && [ -n "$d" ]; do
        [ $((0$(stat -c %a "$d") & 01)) -ne 0 ] || return 1
        d=$(dirname "$d")
    done
    [ $((0$(stat -c %a "$1/vmlinuz") & 04)) -ne 0 ] && [ $((0$(stat -c %a "$1/initrd.img") & 04)) -ne 0 ]
}

# Copy entry $1 (key $2) to the shared directory, unless a valid copy is there.
publish() {
    local src=$1 key=$2 dst=$shared/$2 stage
    if cache_valid "$dst" && readable_by_others "$dst"; then
        echo "$dst"
        return
    fi
    mkdir -p -m 0755 "$shared"
    stage=$(mktemp -d "$shared/.publish.XXXXXX")
    cp "$src/vmlinuz" "$src/initrd.img" "$src/sha256sums" "$stage/"
    chmod 0644 "$stage"/*
    chmod 0755 "$stage"
    rm -rf "$dst"
    mv "$stage" "$dst"
    readable_by_others "$dst" || die "published $dst, but other users still cannot read it"
    log "the cache $cache is not readable by other users (libvirt's QEMU): published $dst"
    echo "$dst"
}

main() {
    local kernel key dir start
    check_inputs
    kernel=$(find_kernel)
    mkdir -p "$cache"
    # One build at a time per cache; later callers then reuse the entry.
    exec 9>"$cache/.lock"
    flock 9
    start=$(date +%s.%N)
    # Global: the EXIT trap runs after main's locals are gone.
    tmp=$(mktemp -d "$cache/.build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    key=$(cache_key "$kernel" "$tmp/manifest")
    dir=$cache/$key
    if [ $force -eq 0 ] && cache_valid "$dir"; then
        log "reusing $dir"
    else
        log "building $dir"
        build "$kernel" "$tmp" "$dir"
        log "built in $(awk -v s="$start" -v e="$(date +%s.%N)" \
            'BEGIN { printf "%.1f", e - s }') s, initrd $(stat -c %s "$dir/initrd.img") bytes"
    fi
    readable_by_others "$dir" || dir=$(publish "$dir" "$key")
    printf 'VS_IMAGE_DIR=%q\nVS_KERNEL=%q\nVS_INITRD=%q\nVS_IMAGE_KEY=%q\nVS_KERNEL_MODULES=%q\n' \
        "$dir" "$dir/vmlinuz" "$dir/initrd.img" "$key" "$(kernel_modules "$kernel")"
}

main
