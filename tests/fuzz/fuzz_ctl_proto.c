/* SPDX-License-Identifier: ISC */
/*
 * fuzz_ctl_proto.c - libFuzzer target for the control protocol codec: any
 * bytes given to ctl_request_parse must be refused cleanly or accepted as
 * a request that formats back into a line parsing to the same request.
 * The same bytes also go through ctl_response_parse.
 *
 *   fuzz_ctl_proto -max_total_time=60 corpus/ tests/fixtures/ctl/requests
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "control/ctl_proto.h"

/* Not assert(): RelWithDebInfo defines NDEBUG, and the checks are the point. */
#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x))                                                                                  \
            abort();                                                                               \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_same(const struct ctl_request *a, const struct ctl_request *b)
{
    CHECK(a->cmd == b->cmd && a->pool_op == b->pool_op && a->target == b->target);
    CHECK(strcmp(a->name, b->name) == 0 && strcmp(a->pool, b->pool) == 0);
    CHECK(strcmp(a->policy, b->policy) == 0 && strcmp(a->cpus, b->cpus) == 0);
    CHECK(a->pid == b->pid && a->nr_tids == b->nr_tids);
    CHECK(memcmp(a->tids, b->tids, a->nr_tids * sizeof(pid_t)) == 0);
    CHECK(strcmp(a->qmp, b->qmp) == 0 && strcmp(a->libvirt, b->libvirt) == 0);
    CHECK(a->nr_params == b->nr_params);
    for (size_t i = 0; i < a->nr_params; i++)
        CHECK(strcmp(a->params[i].key, b->params[i].key) == 0 &&
              strcmp(a->params[i].val, b->params[i].val) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ctl_request a, b; /* 40 KiB each: off the fuzzer's stack */
    struct json_object *res = NULL;
    char err[CTL_ERRLEN];
    int errnum;
    char *line;

    if (ctl_request_parse((const char *)data, size, &a, err, sizeof(err)) == 0) {
        line = ctl_request_format(&a);
        CHECK(line != NULL);
        CHECK(ctl_request_parse(line, strlen(line), &b, err, sizeof(err)) == 0);
        check_same(&a, &b);
        free(line);
    } else {
        CHECK(err[0] != '\0');
    }
    if (ctl_response_parse((const char *)data, size, &res, &errnum, err, sizeof(err)) == 0)
        CHECK((res != NULL) == (errnum == 0));
    json_object_put(res);
    return 0;
}
