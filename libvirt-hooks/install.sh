#!/bin/sh
# SPDX-License-Identifier: ISC
#
# Install the vcpusched libvirt hook as a qemu.d drop-in (never the shared
# /etc/libvirt/hooks/qemu, which other tools own) and make libvirtd look
# for hooks again: libvirt finds hook drivers only at start or on SIGHUP.
#
#   install.sh [--hook /usr/lib/vcpusched/vcpusched-hook] [--hooks-dir DIR]
#              [--pidfile FILE] [--no-reload] [--uninstall]
#
# The hook is copied, not linked: AppArmor checks an exec against the
# symlink's target, and Debian's and Ubuntu's libvirtd profile lets
# libvirtd execute only under /etc/libvirt/hooks/ (ix: the hook stays in
# libvirtd's profile), not /usr/lib/vcpusched or /usr/local. On SELinux
# hosts a file there gets the policy's hook type (virt_hook_t).
# docs/packaging.md, "The hook in qemu.d", says why in full.
#
# --no-reload: install only (the Debian package's postinst reloads
# libvirt itself, through deb-systemd-invoke, which honours policy-rc.d).
set -eu

hook=/usr/lib/vcpusched/vcpusched-hook
dir=/etc/libvirt/hooks/qemu.d
pidfile=
reload=1
uninstall=0
while [ $# -gt 0 ]; do
    case $1 in
    --hook) hook=$2; shift ;;
    --hooks-dir) dir=$2; shift ;;
    --pidfile) pidfile=$2; shift ;;
    --no-reload) reload=0 ;;
    --uninstall) uninstall=1 ;;
    *) echo "usage: install.sh [--hook PATH] [--hooks-dir DIR] [--pidfile FILE] [--no-reload] [--uninstall]" >&2
       exit 2 ;;
    esac
    shift
done
dst=$dir/50-vcpusched
# The copy is written beside qemu.d, under a name libvirt never runs (it
# runs /etc/libvirt/hooks/DRIVER and every executable file in DRIVER.d,
# listed at each call), then renamed into place: libvirt sees the old hook
# or the new one, never a partial file. Where qemu.d is another file
# system, inside it, still not executable until it is complete.
tmpdir=$(dirname "$dir")

if [ "$uninstall" = 1 ]; then
    rm -f "$dst" "$tmpdir/.50-vcpusched.new" "$dir/.50-vcpusched.new"
    echo "install.sh: removed $dst"
    exit 0
fi
[ -f "$hook" ] && [ -x "$hook" ] || { echo "install.sh: $hook is not an executable file" >&2; exit 1; }
mkdir -p "$dir"
[ "$(stat -c %d "$tmpdir")" = "$(stat -c %d "$dir")" ] || tmpdir=$dir
tmp=$tmpdir/.50-vcpusched.new
rm -f "$tmp"
(umask 077 && cat "$hook" >"$tmp")
sync "$tmp" # a crash after the rename leaves the whole file, not an empty one
chmod 0755 "$tmp"
mv -T "$tmp" "$dst" # replaces a file, or the symlink earlier versions made
# SELinux: the label the policy gives hooks (virt_hook_t on Fedora/RHEL).
if command -v selinuxenabled >/dev/null 2>&1 && selinuxenabled && command -v restorecon >/dev/null 2>&1; then
    restorecon "$dst" || true
fi
echo "install.sh: $dst (a copy of $hook)"
[ "$reload" = 1 ] || exit 0

# SIGHUP makes libvirtd (or virtqemud on modular hosts) rescan its hooks.
if [ -n "$pidfile" ]; then
    kill -HUP "$(cat "$pidfile")" && echo "install.sh: libvirtd reloaded"
elif command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl try-reload-or-restart libvirtd.service virtqemud.service 2>/dev/null || true
    echo "install.sh: libvirtd/virtqemud reloaded"
else
    for pf in /run/libvirtd.pid /run/virtqemud.pid /var/run/libvirtd.pid; do
        [ -f "$pf" ] && kill -HUP "$(cat "$pf")" 2>/dev/null && echo "install.sh: $pf reloaded"
    done
fi
exit 0
