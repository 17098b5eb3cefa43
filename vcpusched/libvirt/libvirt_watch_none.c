/* SPDX-License-Identifier: ISC */
/*
 * libvirt_watch_none.c - the libvirt watcher of a daemon built without libvirt
 * (cmake/libvirt.cmake): says so. `attach --libvirt` still works, as it
 * reads libvirt's status file (libvirt_vcpus.c) and never calls libvirt.
 */
#include <errno.h>
#include <stdio.h>

#include "libvirt_watch.h"

int
libvirt_watch_start(struct libvirt_watch **out, const char *uri,
                    const struct libvirt_watch_ops *ops, void *ctx, char *err, size_t errlen)
{
    (void)ops;
    (void)ctx;
    *out = NULL;
    snprintf(err, errlen, "%s: this vcpuschedd was built without libvirt (VCPUSCHED_LIBVIRT)", uri);
    return -ENOTSUP;
}

void
libvirt_watch_stop(struct libvirt_watch *w)
{
    (void)w;
}
