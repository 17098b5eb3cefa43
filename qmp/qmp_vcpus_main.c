/* SPDX-License-Identifier: ISC */
/*
 * qmp_vcpus_main.c - qmp-vcpus: print the vCPU threads of a running QEMU,
 * asked through its QMP socket (query-cpus-fast). A demo and debugging
 * aid for libqmp; the daemon uses the library directly.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "qmp.h"

/* Exit codes: 0 success, 1 QMP or QEMU failure, 2 bad usage. */
#define EXIT_USAGE 2

static void
usage(FILE *f)
{
    fprintf(f, "usage: qmp-vcpus SOCKET [--timeout-ms N] [--json]\n"
               "  print cpu-index, host thread id, topology and qom-path of each vCPU\n"
               "  of the QEMU whose QMP monitor listens on SOCKET\n");
}

static void
print_id(int id)
{
    if (id < 0)
        printf(" %6s", "-");
    else
        printf(" %6d", id);
}

static void
print_table(const struct qmp_vcpus *vs)
{
    printf("%5s %8s %6s %6s %6s %6s %6s %6s  %s\n", "CPU", "TID", "NODE", "SOCKET", "DIE", "CLUSTR",
           "CORE", "THREAD", "QOM-PATH");
    for (size_t i = 0; i < vs->n; i++) {
        const struct qmp_vcpu *v = &vs->v[i];

        printf("%5d %8d", v->cpu_index, (int)v->thread_id);
        print_id(v->props.node_id);
        print_id(v->props.socket_id);
        print_id(v->props.die_id);
        print_id(v->props.cluster_id);
        print_id(v->props.core_id);
        print_id(v->props.thread_id);
        printf("  %s\n", v->qom_path);
    }
}

static void
json_add_id(struct json_object *o, const char *key, int id)
{
    if (id >= 0)
        json_object_object_add(o, key, json_object_new_int(id));
}

/* Same member names as query-cpus-fast, so scripts can switch sources. */
static int
print_json(const struct qmp_vcpus *vs)
{
    struct json_object *arr = json_object_new_array();

    if (arr == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < vs->n; i++) {
        const struct qmp_vcpu *v = &vs->v[i];
        struct json_object *o = json_object_new_object(), *p = json_object_new_object();

        json_object_object_add(o, "cpu-index", json_object_new_int(v->cpu_index));
        json_object_object_add(o, "thread-id", json_object_new_int((int)v->thread_id));
        json_object_object_add(o, "qom-path", json_object_new_string(v->qom_path));
        json_object_object_add(o, "target", json_object_new_string(v->target));
        json_add_id(p, "node-id", v->props.node_id);
        json_add_id(p, "socket-id", v->props.socket_id);
        json_add_id(p, "die-id", v->props.die_id);
        json_add_id(p, "cluster-id", v->props.cluster_id);
        json_add_id(p, "core-id", v->props.core_id);
        json_add_id(p, "thread-id", v->props.thread_id);
        json_object_object_add(o, "props", p);
        json_object_array_add(arr, o);
    }
    printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(arr);
    return 0;
}

static int
parse_timeout(const char *s, int *ms)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v <= 0 || v > INT_MAX)
        return -EINVAL;
    *ms = (int)v;
    return 0;
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {{"timeout-ms", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct qmp_opts qo = {.timeout_ms = QMP_TIMEOUT_MS_DEFAULT};
    struct qmp_vcpus vs;
    struct qmp_conn *c;
    char err[QMP_ERRLEN] = "";
    bool json = false;
    int ch, r;

    while ((ch = getopt_long(argc, argv, "t:jh", opts, NULL)) != -1) {
        if (ch == 'j') {
            json = true;
        } else if (ch == 'h') {
            usage(stdout);
            return EXIT_SUCCESS;
        } else if (ch != 't' || parse_timeout(optarg, &qo.timeout_ms) < 0) {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return EXIT_USAGE;
    }
    r = qmp_connect(&c, argv[optind], &qo, err, sizeof(err));
    if (r == 0) {
        r = qmp_query_vcpus(c, &vs, err, sizeof(err));
        qmp_close(c);
    }
    if (r < 0) {
        fprintf(stderr, "qmp-vcpus: %s\n", err);
        return EXIT_FAILURE;
    }
    if (json)
        r = print_json(&vs);
    else
        print_table(&vs);
    qmp_vcpus_free(&vs);
    return r < 0 || fflush(stdout) != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
