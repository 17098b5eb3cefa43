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
# --no-reload: link only (the Debian package's postinst reloads libvirt
# itself, through deb-systemd-invoke, which honours policy-rc.d).
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
link=$dir/50-vcpusched

if [ "$uninstall" = 1 ]; then
    rm -f "$link"
    echo "install.sh: removed $link"
    exit 0
fi
[ -x "$hook" ] || { echo "install.sh: $hook is not an executable" >&2; exit 1; }
mkdir -p "$dir"
# A symlink: dpkg never leaves .dpkg-old copies of it, which libvirt would run too.
ln -sfn "$hook" "$link.tmp"
mv -T "$link.tmp" "$link"
echo "install.sh: $link -> $hook"
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
