#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# Build the Xen reference rig from Debian 12's own packages, fetched with
# `apt-get download` and unpacked with `dpkg -x` (nothing is installed on the
# host): Xen 4.17's hypervisor, a PV dom0 (the generic kernel, which has
# CONFIG_XEN_DOM0) on a busybox initramfs with xl, xenstored, xenconsoled,
# xentrace and xenalyze, and the PV domU (the same kernel as an ELF vmlinux,
# vm-images/guest/init behind a small wrapper, busybox, iperf3, a static
# spin_target). Cached under a key hashed from the recipe (these scripts,
# the guest init, spin_target.c) and every package version that goes in.
#
# Usage: build-rig.sh [--cache DIR] [--force]
# Prints, on stdout, shell assignments for the caller to eval:
#   XR_DIR=...  XR_XEN=...  XR_DOM0_KERNEL=...  XR_DOM0_INITRD=...
#   XR_DOMU_KERNEL=...  XR_DOMU_INITRD=...  XR_KEY=...
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
cache=${VS_XEN_CACHE:-$here/cache}
force=0
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
# Fetched from the archive (never installed): the kernel package is added
# from linux-image-amd64's dependency, so a kernel update gives a new key.
debs=(xen-hypervisor-4.17-amd64 xen-utils-4.17 xen-utils-common xenstore-utils
      libxenstore4 libxencall1 libxenevtchn1 libxenforeignmemory1 libxengnttab1
      libxenmisc4.17 libxentoollog1 libxendevicemodel1 libxenhypfs1 libxentoolcore1 libyajl2)
# Taken from the host (already there for vm-images and the build).
host_pkgs=(busybox-static iperf3 libgcc-s1 libc6-dev gcc)
dom0_modules=(xen-evtchn xen-gntdev xen-gntalloc xen-privcmd xenfs xen-netback llc stp bridge)
domu_modules=(xen-netfront)
dom0_bins=(xl xenstored xenconsoled xen-init-dom0 xentrace xentop)

die() { echo "build-rig: $*" >&2; exit 1; }
log() { echo "build-rig: $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
    --cache) [ $# -ge 2 ] || die "--cache needs a directory"; cache=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
    esac
done

host_version() {
    dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null |
        awk '$1 == "install" && $3 == "installed" { print $4 }'
}

# The version apt would fetch (the candidate); empty if unknown to apt.
candidate() {
    apt-cache policy "$1" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }'
}

kernel_pkg() {
    apt-cache depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}

check_inputs() {
    local p missing=()
    for p in "${host_pkgs[@]}"; do
        [ -n "$(host_version "$p")" ] || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] ||
        die "missing Debian packages: ${missing[*]} (run scripts/deps.sh)"
    for p in cpio gzip python3 apt-get dpkg-deb; do
        command -v "$p" >/dev/null || die "missing tool $p"
    done
    kpkg=$(kernel_pkg)
    [ -n "$kpkg" ] || die "apt knows no linux-image-amd64 (run apt-get update)"
    for p in "${debs[@]}" "$kpkg"; do
        [ -n "$(candidate "$p")" ] || die "apt knows no $p (run apt-get update)"
    done
}

# Host libraries a binary loads, resolved with the unpacked Xen libraries first.
ldd_libs() {
    LD_LIBRARY_PATH=$1/usr/lib/x86_64-linux-gnu ldd "$2" | awk '
        $2 == "=>" && $3 ~ /^\// { print $3 }
        $1 ~ /^\// { print $1 }' | sort -u
}

cache_key() {
    local p
    {
        sha256sum "$here/build-rig.sh" "$here/dom0-init" "$here/domu-init" \
            "$src/vm-images/guest/init" "$src/bench/spin_target.c" | awk '{ print $1 }'
        echo "SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
        for p in "${debs[@]}" "$kpkg"; do echo "deb $p $(candidate "$p")"; done
        for p in "${host_pkgs[@]}" libc6 libuuid1 zlib1g liblzma5 libzstd1 libssl3 libsctp1 libiperf0; do
            echo "host $p $(host_version "$p")"
        done
    } | tee "$1" | sha256sum | cut -c1-16
}

# Download (once, kept in $cache/debs) and unpack every package into $1.
unpack_debs() {
    local root=$1 p f
    mkdir -p "$cache/debs"
    for p in "${debs[@]}" "$kpkg"; do
        f=$(ls "$cache/debs/${p}_$(candidate "$p" | sed 's/:/%3a/')_"*.deb 2>/dev/null | head -n 1 || true)
        if [ -z "$f" ]; then
            log "fetching $p"
            (cd "$cache/debs" && apt-get download -q "$p" >/dev/null 2>&1) ||
                die "apt-get download $p failed"
            f=$(ls "$cache/debs/${p}_"*.deb | sort -V | tail -n 1)
        fi
        dpkg-deb -x "$f" "$root"
    done
}

copy_modules() {
    local pkgroot=$1 dst=$2 m f
    shift 2
    mkdir -p "$dst/lib/modules"
    for m in "$@"; do
        f=$(find "$pkgroot/lib/modules" -name "$m.ko" | head -n 1)
        [ -n "$f" ] || die "module $m not in $kpkg"
        cp "$f" "$dst/lib/modules/$m.ko"
        echo "$m" >> "$dst/lib/modules/load-order"
    done
}

copy_libs() {
    local pkgroot=$1 dst=$2 bin lib
    shift 2
    for bin in "$@"; do
        for lib in $(ldd_libs "$pkgroot" "$bin"); do
            case $lib in
            "$pkgroot"/*) mkdir -p "$dst/usr/lib/x86_64-linux-gnu"; cp -L "$lib" "$dst/usr/lib/x86_64-linux-gnu/" ;;
            *) mkdir -p "$dst$(dirname "$lib")"; cp -L "$lib" "$dst$lib" ;;
            esac
        done
    done
}

base_root() {
    local root=$1
    mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,etc,usr/bin,usr/sbin,var/log,var/lib}
    cp /bin/busybox "$root/bin/busybox"
    echo 'hosts: files' > "$root/etc/nsswitch.conf"
    echo '127.0.0.1 localhost' > "$root/etc/hosts"
}

build_dom0() {
    local pkg=$1 root=$2 b
    base_root "$root"
    cp "$here/dom0-init" "$root/init"
    copy_modules "$pkg" "$root" "${dom0_modules[@]}"
    mkdir -p "$root/usr/lib/xen-4.17/bin" "$root/etc/xen/scripts" "$root/var/lib/xen" \
        "$root/var/log/xen" "$root/var/lib/xenstored" "$root/usr/lib/x86_64-linux-gnu"
    for b in "${dom0_bins[@]}"; do
        cp "$pkg/usr/lib/xen-4.17/bin/$b" "$root/usr/sbin/$b"
    done
    cp "$pkg/usr/bin/xenalyze" "$pkg/usr/bin/xenstore" "$root/usr/bin/"
    for b in read write ls rm; do ln -sf xenstore "$root/usr/bin/xenstore-$b"; done
    copy_libs "$pkg" "$root" "${dom0_bins[@]/#/$pkg/usr/lib/xen-4.17/bin/}" "$pkg/usr/bin/xenstore"
    # xl aborts after a create without it (pthread_cancel needs libgcc_s).
    cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$root/usr/lib/x86_64-linux-gnu/"
    cp "$here/vif-xr" "$root/etc/xen/scripts/vif-xr"
    printf 'autoballoon="off"\nlockfile="/run/xl.lock"\n' > "$root/etc/xen/xl.conf"
}

build_domu() {
    local pkg=$1 root=$2 tmp=$3 lib
    base_root "$root"
    cp "$here/domu-init" "$root/init"
    cp "$src/vm-images/guest/init" "$root/init.vs"
    copy_modules "$pkg" "$root" "${domu_modules[@]}"
    cp "$(command -v iperf3)" "$root/usr/bin/iperf3"
    for lib in $(ldd_libs "$pkg" "$(command -v iperf3)"); do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
    gcc -O2 -static -pthread -o "$root/usr/bin/spin_target" "$src/bench/spin_target.c" ||
        die "cannot build a static spin_target"
}

# The xz payload of a bzImage, as an ELF vmlinux (libxl's PV builder wants one).
extract_vmlinux() {
    python3 - "$1" "$2" <<'EOF'
import lzma, sys
data = open(sys.argv[1], "rb").read()
at = data.find(b"\xfd7zXZ\x00")
if at < 0:
    sys.exit("no xz payload in " + sys.argv[1])
out = lzma.LZMADecompressor().decompress(data[at:])
if out[:4] != b"\x7fELF":
    sys.exit("the payload is not an ELF image")
open(sys.argv[2], "wb").write(out)
EOF
}

pack_root() {
    local root=$1 out=$2
    find "$root" -type d -exec chmod 0755 {} +
    find "$root" -type f -exec chmod 0644 {} +
    find "$root"/bin "$root"/usr/bin "$root"/usr/sbin "$root"/init* "$root"/etc/xen/scripts \
        -type f -exec chmod 0755 {} + 2>/dev/null || true
    find "$root" -name 'ld-linux*' -exec chmod 0755 {} +
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    (cd "$root" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
        cpio --null --quiet --reproducible -H newc -o -R 0:0) | gzip -n -6 > "$out"
}

build() {
    local tmp=$1 dir=$2 pkg=$1/pkg
    mkdir -p "$pkg"
    unpack_debs "$pkg"
    gzip -dc "$pkg/boot/xen-4.17-amd64.gz" > "$tmp/xen"
    cp "$(ls "$pkg"/boot/vmlinuz-* | head -n 1)" "$tmp/dom0-vmlinuz"
    extract_vmlinux "$tmp/dom0-vmlinuz" "$tmp/domu-vmlinux"
    build_domu "$pkg" "$tmp/domu" "$tmp"
    pack_root "$tmp/domu" "$tmp/domu-initrd.gz"
    build_dom0 "$pkg" "$tmp/dom0"
    # xl create reads the domU's kernel and ramdisk from dom0's root.
    mkdir -p "$tmp/dom0/boot"
    cp "$tmp/domu-vmlinux" "$tmp/domu-initrd.gz" "$tmp/dom0/boot/"
    pack_root "$tmp/dom0" "$tmp/dom0-initrd.gz"
    rm -rf "$pkg" "$tmp/dom0" "$tmp/domu"
    chmod 0644 "$tmp"/xen "$tmp"/*vmlinu* "$tmp"/*.gz
    (cd "$tmp" && sha256sum xen dom0-vmlinuz dom0-initrd.gz domu-vmlinux domu-initrd.gz > sha256sums)
    chmod 0755 "$tmp"
    rm -rf "$dir"
    mv "$tmp" "$dir"
}

cache_valid() {
    [ -f "$1/sha256sums" ] && (cd "$1" && sha256sum --quiet -c sha256sums >/dev/null 2>&1)
}

main() {
    local key dir start
    check_inputs
    mkdir -p "$cache"
    exec 9>"$cache/.lock"
    flock 9
    start=$(date +%s.%N)
    tmp=$(mktemp -d "$cache/.build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    key=$(cache_key "$tmp/manifest")
    dir=$cache/$key
    if [ $force -eq 0 ] && cache_valid "$dir"; then
        log "reusing $dir"
    else
        log "building $dir"
        build "$tmp" "$dir"
        log "built in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"
    fi
    printf 'XR_DIR=%q\nXR_XEN=%q\nXR_DOM0_KERNEL=%q\nXR_DOM0_INITRD=%q\nXR_DOMU_KERNEL=%q\nXR_DOMU_INITRD=%q\nXR_KEY=%q\n' \
        "$dir" "$dir/xen" "$dir/dom0-vmlinuz" "$dir/dom0-initrd.gz" "$dir/domu-vmlinux" \
        "$dir/domu-initrd.gz" "$key"
}

main
