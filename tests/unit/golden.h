/* SPDX-License-Identifier: ISC */
/*
 * golden.h - fixtures for tests of text output: JSON inputs, and golden
 * files to compare the output with; with VCPUSCHED_UPDATE_GOLDEN=1 in the
 * environment a golden file is rewritten instead (review the diff before
 * committing it).
 */
#ifndef VCPUSCHED_GOLDEN_H
#define VCPUSCHED_GOLDEN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* DIR/NAME parsed, or the test fails. */
static inline struct json_object *
fixture_load(const char *dir, const char *name)
{
    char path[512];
    struct json_object *o;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    o = json_object_from_file(path);
    ck_assert_msg(o != NULL, "fixture %s", path);
    return o;
}

static inline void
golden_compare(const char *dir, const char *name, const char *got)
{
    char path[512], *want;
    long len;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (getenv("VCPUSCHED_UPDATE_GOLDEN") != NULL) {
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(got, f);
        fclose(f);
        return;
    }
    f = fopen(path, "r");
    ck_assert_msg(f != NULL, "golden file %s missing (VCPUSCHED_UPDATE_GOLDEN=1 writes it)", path);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    want = calloc(1, (size_t)len + 1);
    ck_assert_int_eq(fread(want, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    ck_assert_msg(strcmp(want, got) == 0, "%s differs:\n--- want\n%s--- got\n%s", name, want, got);
    free(want);
}

#endif /* VCPUSCHED_GOLDEN_H */
