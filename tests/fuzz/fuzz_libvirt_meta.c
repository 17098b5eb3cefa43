/* SPDX-License-Identifier: ISC */
/*
 * fuzz_libvirt_meta.c - libFuzzer target for the libvirt XML parser: any
 * bytes given as a domain definition, a metadata element or a status file
 * must be refused with a message and nothing filled in, or accepted with
 * every field within the protocol's limits.
 *
 *   fuzz_libvirt_meta -max_total_time=60 corpus/ tests/fixtures/libvirt
 */
#include <libxml/parser.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libvirt/libvirt_meta.h"

/* Not assert(): RelWithDebInfo defines NDEBUG, and the checks are the point. */
#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x))                                                                                  \
            abort();                                                                               \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_meta(int r, const struct libvirt_meta *m, const char *err)
{
    if (r < 0) {
        CHECK(err[0] != '\0' && !m->present && m->nr_params == 0);
        return;
    }
    CHECK(r == 0 && m->nr_params <= VS_PARAMS_MAX);
    CHECK(m->pool[0] == '\0' || names_valid(m->pool));
    for (size_t i = 0; i < m->nr_params; i++)
        CHECK(m->keys[i][0] != '\0' && m->vals[i][0] != '\0');
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct libvirt_status st;
    struct libvirt_meta m;
    char err[256];
    int r;

    r = libvirt_meta_parse_domain((const char *)data, size, &m, err, sizeof(err));
    check_meta(r, &m, err);
    r = libvirt_meta_parse_element((const char *)data, size, &m, err, sizeof(err));
    check_meta(r, &m, err);
    r = libvirt_meta_parse_status((const char *)data, size, &st, err, sizeof(err));
    CHECK(r == 0 ? st.nr_vcpus > 0 && st.pid > 0 : err[0] != '\0' && st.nr_vcpus == 0);
    for (unsigned int i = 1; r == 0 && i < st.nr_vcpus; i++)
        CHECK(st.ids[i - 1] < st.ids[i]);
    return 0;
}
