#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
#
# The package as an operator gets it (docs/packaging.md): builds the .deb
# (scripts/build-deb.sh), then checks
#   1. `cmake --install` of BUILD_DIR with DESTDIR puts every part under
#      its prefix, with the prefix's paths in the unit and the installer;
#   2. `dpkg-deb -c` lists exactly the expected files, modes and conffile;
#   3. lintian reports no error and no warning (overrides are explained in
#      debian/vcpusched.lintian-overrides);
#   4. in a clean Debian 12 root (debootstrap from this machine's apt
#      sources, cached in build/pkgtest/base): apt installs the .deb, the
#      hook in qemu.d is a complete copy of the packaged one (and replaces
#      the symlink earlier builds made, on upgrade), `systemd-analyze
#      verify` of the unit is clean, the packaged daemon starts on the
#      shipped configuration, reloads and stops; remove takes the hook out,
#      purge leaves no file behind (file lists compared).
# Needs root (chroot, mounts) and the network to Debian's mirror for the
# first root and for the package's dependencies.
#
#   scripts/check-package.sh [BUILD_DIR]     default BUILD_DIR: build/ci
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
work=$top/build/pkgtest
checks=0

say() { echo "check-package: $*" >&2; }
ok() { checks=$((checks + 1)); echo "check-package: ok: $* [${SECONDS}s]"; }
die() { say "FAIL: $*"; exit 1; }

# --- the chroot phase, in a mount namespace of its own ----------------------
# Everything mounted here disappears with the namespace, whatever fails.
if [ "${1:-}" = "--in-namespace" ]; then
    root=$2 deb=$3
    in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }
    # Every path of the root but apt's and dpkg's bookkeeping, logs and
    # caches: what a package may leave behind is anything else.
    snapshot() {
        (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \
            -o -path ./tmp -o -path ./var/cache/apt -o -path ./var/lib/apt -o -path ./var/log \
            -o -path ./var/cache/debconf -o -path ./var/cache/man -o -path ./var/cache/ldconfig \
            -o -path './var/lib/dpkg/*-old' -o -path ./var/lib/dpkg/status \
            -o -path ./var/lib/dpkg/available -o -path ./var/lib/dpkg/triggers \
            -o -path './var/lib/dpkg/lock*' \) -prune -o -print | LC_ALL=C sort) >"$1"
    }
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mkdir -p "$work/archives/partial"
    mount --bind "$work/archives" "$root/var/cache/apt/archives" # downloads kept across runs

    in_root apt-get -q update >/dev/null
    # The package's dependencies first, so that the file lists compare the
    # package alone.
    in_root apt-get -q satisfy -y --no-install-recommends "$(dpkg-deb -f "$deb" Depends)" \
        >"$work/satisfy.log" 2>&1 ||
        { tail -20 "$work/satisfy.log" >&2; die "cannot install the dependencies"; }
    snapshot "$work/before.txt"

    in_root apt-get -q install -y --no-install-recommends "/tmp/$(basename "$deb")" \
        >"$work/install.log" 2>&1 || { tail -20 "$work/install.log" >&2; die "apt install"; }
    ok "apt install ./$(basename "$deb") in a clean Debian 12 root"
    # The watchdog tests' fault injection (VCPUSCHED_FAULTS) is for test builds only.
    ! grep -q "VCPUSCHED_FAULT" "$root/usr/sbin/vcpuschedd" ||
        die "the packaged vcpuschedd has the test builds' fault injection compiled in"
    ok "no fault injection in the packaged daemon"
    hook=/usr/lib/vcpusched/vcpusched-hook
    dst=$root/etc/libvirt/hooks/qemu.d/50-vcpusched
    # The hook in qemu.d is a copy of the packaged one, not a link (AppArmor
    # checks an exec against a link's target: docs/packaging.md), complete,
    # executable, and no temporary file is left where libvirt could run it.
    hook_is_copy() {
        [ -f "$dst" ] && [ ! -L "$dst" ] && [ "$(stat -c %a "$dst")" = 755 ] &&
            cmp -s "$dst" "$root$hook" &&
            [ -z "$(find "$root/etc/libvirt/hooks" -name '.50-vcpusched.new')" ]
    }
    hook_is_copy || die "hook in qemu.d: $(ls -l "$dst" 2>&1)"
    echo "<domain type='kvm'><name>web1</name></domain>" |
        in_root /etc/libvirt/hooks/qemu.d/50-vcpusched web1 started begin - ||
        die "the installed hook does not run"
    ok "postinst installed $dst, a copy of $hook (mode 755, no temporary file)"
    # An upgrade from a build whose postinst made a symlink (and whose
    # prerm does nothing on upgrade): the new postinst (dpkg -i again runs
    # it as an upgrade does) replaces the link with the copy.
    ln -sfn "$hook" "$dst"
    in_root dpkg -i "/tmp/$(basename "$deb")" >>"$work/install.log" 2>&1 || die "dpkg -i again"
    hook_is_copy || die "after an upgrade from the symlink form: $(ls -l "$dst" 2>&1)"
    ok "upgrade from the symlink form: the link replaced by the copy"

    # systemd's own check of the unit as installed (man pages included).
    out=$(MANPATH=$root/usr/share/man systemd-analyze verify --root="$root" \
        /lib/systemd/system/vcpuschedd.service 2>&1) || die "systemd-analyze verify: $out"
    [ -z "$out" ] || die "systemd-analyze verify: $out"
    ok "systemd-analyze verify vcpuschedd.service: clean"
    systemd-analyze security --offline=true --root="$root" \
        /lib/systemd/system/vcpuschedd.service 2>/dev/null | tail -1 | sed 's/^/check-package: /'

    # The shipped configuration chooses no CPUs: the daemon refuses it
    # (exit 2, the unit's RestartPreventExitStatus) and says why.
    set +e
    out=$(chroot "$root" /usr/sbin/vcpuschedd --foreground --config /etc/vcpusched/vcpuschedd.conf \
        --libvirt none 2>&1)
    rc=$?
    set -e
    [ "$rc" -eq 2 ] && grep -q "no managed CPUs chosen" <<<"$out" ||
        die "the shipped configuration, no CPUs chosen: exit $rc: $out"
    grep -qx "RestartPreventExitStatus=2" "$root/lib/systemd/system/vcpuschedd.service" ||
        die "the unit restarts a daemon that refused its configuration"
    ok "the packaged daemon refuses the shipped configuration until CPUs are chosen (exit 2, not restarted)"

    # The packaged daemon on the shipped configuration and --cpus (real
    # SCHED_FIFO on the managed CPU: under the host lock).
    log=$work/daemon.log
    mkdir -p /run/lock
    flock /run/lock/vcpusched-test.lock bash -c '
        root=$1 log=$2
        chroot "$root" /usr/sbin/vcpuschedd --foreground --config /etc/vcpusched/vcpuschedd.conf \
            --cpus 1 --libvirt none >"$log" 2>&1 &
        pid=$!
        for _ in $(seq 100); do [ -S "$root/run/vcpusched/control.sock" ] && break; sleep 0.1; done
        chroot "$root" /usr/bin/vcpuschedctl pool list | grep -q "^main " || { kill $pid; exit 1; }
        kill -HUP $pid
        for _ in $(seq 100); do grep -q "reload: .*applied" "$log" && break; sleep 0.1; done
        kill -TERM $pid
        wait $pid' _ "$root" "$log" || { cat "$log" >&2; die "the packaged daemon"; }
    grep -q "reload: /etc/vcpusched/vcpuschedd.conf: 0 change(s) applied" "$log" ||
        { cat "$log" >&2; die "no reload in the daemon's log"; }
    ok "the packaged daemon started on the shipped configuration, reloaded, stopped (exit 0)"

    in_root apt-get -q remove -y vcpusched >"$work/remove.log" 2>&1 || die "apt remove"
    [ ! -e "$dst" ] && [ ! -L "$dst" ] || die "hook left in qemu.d after remove"
    [ -f "$root/etc/vcpusched/vcpuschedd.conf" ] || die "remove took the configuration"
    ok "apt remove: hook removed from qemu.d, configuration kept"
    in_root apt-get -q purge -y vcpusched >"$work/purge.log" 2>&1 || die "apt purge"
    snapshot "$work/after.txt"
    if ! diff -u "$work/before.txt" "$work/after.txt" >"$work/purge.diff"; then
        cat "$work/purge.diff" >&2
        die "apt purge left files behind (or took some)"
    fi
    ok "apt purge: the root's file list is what it was before the install ($(wc -l <"$work/before.txt") paths)"
    echo "$checks" >"$work/namespace-checks"
    exit 0
fi

build=${1:-$top/build/ci}
[ "$(id -u)" -eq 0 ] || die "run as root (chroot, mounts)"
mkdir -p "$work"
t0=$SECONDS

# --- 1. cmake --install into DESTDIR ----------------------------------------
[ -f "$build/CMakeCache.txt" ] || die "$build is not a configured build directory"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
rm -rf "$work/destdir"
DESTDIR=$work/destdir cmake --install "$build" >"$work/cmake-install.log"
d=$work/destdir$prefix
etc=$(sed -n 's/^CMAKE_INSTALL_SYSCONFDIR:PATH=//p' "$build/CMakeCache.txt")
case $etc in /*) ;; *) etc=$prefix/$etc ;; esac
for f in sbin/vcpuschedd bin/vcpuschedctl lib/vcpusched/vcpusched-hook \
    lib/vcpusched/vcpusched-hook-install lib/systemd/system/vcpuschedd.service \
    share/man/man8/vcpuschedd.8 share/man/man8/vcpuschedctl.8 share/man/man8/vcpusched-hook.8 \
    share/man/man5/vcpuschedd.conf.5; do
    [ -f "$d/$f" ] || die "cmake --install: no $prefix/$f"
done
[ -f "$work/destdir$etc/vcpusched/vcpuschedd.conf" ] || die "cmake --install: no $etc/vcpusched/vcpuschedd.conf"
grep -qx "ExecStart=$prefix/sbin/vcpuschedd --foreground --config $etc/vcpusched/vcpuschedd.conf" \
    "$d/lib/systemd/system/vcpuschedd.service" || die "the unit's ExecStart does not name $prefix"
grep -qx "hook=$prefix/lib/vcpusched/vcpusched-hook" "$d/lib/vcpusched/vcpusched-hook-install" ||
    die "the hook installer does not copy $prefix's hook"
ok "cmake --install (prefix $prefix, DESTDIR): every part, the unit and installer name $prefix"

# --- 2. the package's contents ----------------------------------------------
deb=$(scripts/build-deb.sh)
ok "scripts/build-deb.sh: $(basename "$deb"), built as nobody (or reused from the same sources) ($((SECONDS - t0)) s so far)"
expect="-rw-r--r-- ./etc/vcpusched/vcpuschedd.conf
-rw-r--r-- ./lib/systemd/system/vcpuschedd.service
-rwxr-xr-x ./usr/bin/vcpuschedctl
-rwxr-xr-x ./usr/lib/vcpusched/vcpusched-hook
-rwxr-xr-x ./usr/lib/vcpusched/vcpusched-hook-install
-rwxr-xr-x ./usr/sbin/vcpuschedd
-rw-r--r-- ./usr/share/doc/vcpusched/changelog.gz
-rw-r--r-- ./usr/share/doc/vcpusched/copyright
-rw-r--r-- ./usr/share/lintian/overrides/vcpusched
-rw-r--r-- ./usr/share/man/man5/vcpuschedd.conf.5.gz
-rw-r--r-- ./usr/share/man/man8/vcpusched-hook.8.gz
-rw-r--r-- ./usr/share/man/man8/vcpuschedctl.8.gz
-rw-r--r-- ./usr/share/man/man8/vcpuschedd.8.gz"
got=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $1, $6 }' | LC_ALL=C sort -k2)
[ "$got" = "$expect" ] || die "dpkg-deb -c:
$(diff <(echo "$expect") <(echo "$got"))"
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = /etc/vcpusched/vcpuschedd.conf ] ||
    die "conffiles is not /etc/vcpusched/vcpuschedd.conf"
ok "dpkg-deb -c: the $(echo "$expect" | wc -l) expected files, modes and conffile, nothing else"
# The build's own version (scripts/build-deb.sh), which the programs report.
pkg_version=$(dpkg-deb -f "$deb" Version)
release=$(dpkg-parsechangelog -S Version)
if commit=$(git rev-parse --short=7 HEAD 2>/dev/null); then
    this_build=$release+$(git rev-list --count HEAD).g$commit
    case $pkg_version in
    "$this_build" | "$this_build".d????????) ;;
    *) die "package version $pkg_version is not this build's ($release+N.g$commit[.dHASH])" ;;
    esac
    dpkg --compare-versions "$pkg_version" gt "$release" ||
        die "package version $pkg_version is not above release $release"
else
    [ "$pkg_version" = "$release" ] || die "package version $pkg_version outside git: not release $release"
fi
dpkg-deb -x "$deb" "$work/x"
said=$("$work/x/usr/sbin/vcpuschedd" --version)
rm -rf "$work/x"
[ "$said" = "vcpuschedd $pkg_version" ] || die "the packaged vcpuschedd says '$said', the package $pkg_version"
ok "version $pkg_version: this build's (release $release), and what the packaged vcpuschedd reports"

# --- 3. lintian --------------------------------------------------------------
changes=${deb%.deb}.changes
if ! lintian --fail-on error,warning "$changes" >"$work/lintian.txt" 2>&1; then
    cat "$work/lintian.txt" >&2
    die "lintian"
fi
lintian --display-info --pedantic --display-experimental "$changes" 2>/dev/null | sed 's/^/check-package: lintian: /' || true
ok "lintian: no error, no warning ($(lintian --version))"

# --- 4. a clean Debian 12 root -----------------------------------------------
# The mirror this machine's apt uses for bookworm (deb822 or one-line sources).
mirror=$(awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ { print u; exit }' \
    /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
    /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
base=$work/base
key="bookworm minbase +systemd,procps,man-db $mirror, host sources"
if [ "$(cat "$base/.vcpusched-key" 2>/dev/null)" != "$key" ]; then
    say "debootstrap bookworm from $mirror into $base (cached for later runs)"
    rm -rf "$base" "$base.tmp"
    debootstrap --variant=minbase --include=systemd,procps,man-db bookworm "$base.tmp" "$mirror" \
        >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap"; }
    # Packages are never started in it; the same apt sources as this machine.
    printf '#!/bin/sh\nexit 101\n' >"$base.tmp/usr/sbin/policy-rc.d"
    chmod 755 "$base.tmp/usr/sbin/policy-rc.d"
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        rm -f "$base.tmp/etc/apt/sources.list"
        cp /etc/apt/sources.list.d/debian.sources "$base.tmp/etc/apt/sources.list.d/"
    elif [ -f /etc/apt/sources.list ]; then
        grep -v -e '^#' -e '^$' /etc/apt/sources.list | grep debian >"$base.tmp/etc/apt/sources.list"
    fi
    echo "$key" >"$base.tmp/.vcpusched-key"
    mv "$base.tmp" "$base"
fi
root=$work/root
rm -rf "$root"
cp -a "$base" "$root"
cp "$deb" "$root/tmp/"
rm -f "$work/namespace-checks"
unshare --mount --propagation private "$0" --in-namespace "$root" "$deb"
checks=$((checks + $(cat "$work/namespace-checks")))
rm -rf "$root" "$work/destdir"
say "took $((SECONDS - t0)) s"
echo "check-package: $checks passed, 0 failed"
