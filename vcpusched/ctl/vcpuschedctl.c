/* SPDX-License-Identifier: ISC */
/*
 * vcpuschedctl.c - the command-line client of vcpuschedd (vcpuschedctl(8)).
 * As in vmctl and tmux, one table of {name, builder, view, usage} drives
 * both dispatch and usage(). A builder turns the words into a struct
 * ctl_request; the request is checked by the daemon's own codec before
 * it is sent, so bad input fails here, with the daemon's wording.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "control/ctl_client.h"
#include "common/version.h"
#include "control/ctl_metrics.h"
#include "control/ctl_proto.h"
#include "ctl_fetch.h"
#include "ctl_show.h"
#include "ctl_top.h"

#define CTL_TIMEOUT_MS_DEFAULT 10000 /* attach may wait on a slow QEMU (TCG guests) */
#define CTL_TIMEOUT_MS_MAX     3600000

struct ctl_command;

struct ctl_opts {
    const char *socket;
    bool json;
    int timeout_ms;
    const struct ctl_command *cmd;
    struct ctl_request *req;
    /* Commands that are not one request (top, stats --openmetrics) run this instead. */
    int (*run)(struct ctl_opts *o);
    enum ctl_metrics_format metrics;
    struct top_opts top;
};

struct ctl_command {
    const char *name; /* one or two words */
    enum ctl_cmd cmd;
    enum ctl_pool_op pool_op;
    const char *usage; /* what follows the name */
    /* Fill o->req from the words after the name (argv[0] is the last name word). */
    int (*build)(struct ctl_opts *o, int argc, char **argv);
    /* The result as a table; NULL: print nothing on success. */
    int (*show)(FILE *f, struct json_object *result);
};

static int build_attach(struct ctl_opts *, int, char **);
static int build_name(struct ctl_opts *, int, char **);
static int build_set(struct ctl_opts *, int, char **);
static int build_move(struct ctl_opts *, int, char **);
static int build_none(struct ctl_opts *, int, char **);
static int build_help(struct ctl_opts *, int, char **);
static int build_pool_words(struct ctl_opts *, int, char **);
static int build_top(struct ctl_opts *, int, char **);
static int show_version(FILE *, struct json_object *);

static const struct ctl_command commands[] = {
    {"attach", CTL_ATTACH, 0,
     "NAME (--pid PID | --tid TID[,TID...] | --qmp SOCKET | --libvirt DOMAIN) [--pool POOL] "
     "[--any-process] [key=value ...]",
     build_attach, ctl_show_domain},
    {"detach", CTL_DETACH, 0, "NAME", build_name, NULL},
    {"set", CTL_SET, 0, "NAME key=value ...", build_set, ctl_show_domain},
    {"move", CTL_MOVE, 0, "NAME POOL [key=value ...]", build_move, ctl_show_domain},
    {"list", CTL_LIST, 0, "[--json]", build_none, ctl_show_list},
    {"stats", CTL_STATS, 0, "[--json | --openmetrics | --prometheus]", build_none, ctl_show_stats},
    {"pool list", CTL_POOL, CTL_POOL_LIST, "[--json]", build_none, ctl_show_pools},
    {"pool create", CTL_POOL, CTL_POOL_CREATE, "NAME cpus=LIST policy=NAME [key=value ...]",
     build_pool_words, NULL},
    {"pool set", CTL_POOL, CTL_POOL_SET, "NAME cpus=LIST | NAME [policy=NAME] [key=value ...]",
     build_pool_words, NULL},
    {"pool destroy", CTL_POOL, CTL_POOL_DESTROY, "NAME", build_name, NULL},
    {"version", CTL_VERSION, 0, "", build_none, show_version},
    {"help", CTL_HELP, 0, "[POLICY]", build_help, ctl_show_policies},
    {"top", CTL_LIST, 0, TOP_USAGE, build_top, NULL},
};

#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *f)
{
    fprintf(f, "usage: vcpuschedctl [--socket PATH] [--json] [--timeout MS] COMMAND [ARGS]\n"
               "commands:\n");
    for (size_t i = 0; i < NR_COMMANDS; i++)
        fprintf(f, "    %s%s%s\n", commands[i].name, commands[i].usage[0] ? " " : "",
                commands[i].usage);
    fprintf(f, "socket: --socket, else $%s, else %s\n", CTL_SOCKET_ENV, CTL_SOCKET_DEFAULT);
}

static int
usage_of(const struct ctl_command *c)
{
    fprintf(stderr, "usage: vcpuschedctl [options] %s%s%s\n", c->name, c->usage[0] ? " " : "",
            c->usage);
    return EXIT_USAGE;
}

__attribute__((format(printf, 1, 2))) static int
bad(const char *fmt, ...)
{
    va_list ap;

    fputs("vcpuschedctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

/* --- Building requests from words. --- */

/* Copy a word into a fixed field, refusing (not cutting) what does not fit. */
static int
copy_word(char *dst, size_t size, const char *src, const char *what)
{
    if (strlen(src) >= size)
        return bad("%s: longer than %zu bytes", what, size - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* key=value words as params; `take` may claim some (pool create's cpus=). */
static int
add_params(struct ctl_opts *o, int argc, char **argv,
           int (*take)(struct ctl_opts *, const char *, const char *))
{
    char err[CTL_ERRLEN], key[VS_KEY_SIZE];

    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - argv[i]) : 0;
        int r;

        if (klen == 0)
            return bad("%s: '%s' is not key=value", o->cmd->name, argv[i]);
        if (klen >= sizeof(key))
            return bad("%s: key '%.*s' is longer than %zu bytes", o->cmd->name, (int)klen, argv[i],
                       sizeof(key) - 1);
        memcpy(key, argv[i], klen);
        key[klen] = '\0';
        if (take != NULL && (r = take(o, key, eq + 1)) <= 0) {
            if (r < 0)
                return EXIT_USAGE;
            continue;
        }
        if (ctl_request_add_param(o->req, key, eq + 1, err, sizeof(err)) < 0)
            return bad("%s: %s", o->cmd->name, err);
    }
    return 0;
}

static int
parse_pid(const char *s, pid_t *out)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(s, &end, 10);
    if (s[0] == '\0' || *end != '\0' || errno != 0 || x <= 0 || x > INT_MAX)
        return -EINVAL;
    *out = (pid_t)x;
    return 0;
}

/* --tid 1,2,3 (repeatable: the lists add up, in order). */
static int
add_tids(struct ctl_request *req, char *list)
{
    char *save = NULL;

    for (char *t = strtok_r(list, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        if (req->nr_tids == VS_THREADS_MAX)
            return bad("attach: --tid: more than %d threads", VS_THREADS_MAX);
        if (parse_pid(t, &req->tids[req->nr_tids]) < 0)
            return bad("attach: --tid: '%s' is not a thread id", t);
        req->nr_tids++;
    }
    return 0;
}

/* A relative QMP path is the caller's: make it absolute for the daemon. */
static int
set_qmp(struct ctl_request *req, const char *path)
{
    char cwd[PATH_MAX], abs[PATH_MAX + CTL_QMP_SIZE];

    if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL) {
        snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
        path = abs;
    }
    return copy_word(req->qmp, sizeof(req->qmp), path, "attach: --qmp");
}

static int
set_target(struct ctl_request *req, enum ctl_target t)
{
    if (req->target != CTL_TARGET_NONE && req->target != t)
        return bad("attach: give only one of --pid, --tid, --qmp, --libvirt");
    req->target = t;
    return 0;
}

static int
attach_option(struct ctl_opts *o, int ch, char *arg)
{
    struct ctl_request *req = o->req;

    switch (ch) {
    case 'p':
        if (set_target(req, CTL_TARGET_PID) != 0)
            return EXIT_USAGE;
        return parse_pid(arg, &req->pid) < 0 ? bad("attach: --pid: '%s' is not a process id", arg)
                                             : 0;
    case 't':
        return set_target(req, CTL_TARGET_TIDS) != 0 ? EXIT_USAGE : add_tids(req, arg);
    case 'q':
        return set_target(req, CTL_TARGET_QMP) != 0 ? EXIT_USAGE : set_qmp(req, arg);
    case 'l':
        if (set_target(req, CTL_TARGET_LIBVIRT) != 0)
            return EXIT_USAGE;
        return copy_word(req->libvirt, sizeof(req->libvirt), arg, "attach: --libvirt");
    case 'P':
        return copy_word(req->pool, sizeof(req->pool), arg, "attach: --pool");
    case 'A':
        req->any_process = true;
        return 0;
    case 'j':
        o->json = true;
        return 0;
    default:
        return usage_of(o->cmd);
    }
}

static int run_metrics(struct ctl_opts *o);

static void
metrics_option(struct ctl_opts *o, enum ctl_metrics_format fmt)
{
    o->metrics = fmt;
    o->run = run_metrics;
}

/*
 * getopt_long over a command's words (options may follow NAME); leaves
 * the positional words in argv[optind..argc).
 */
static int
command_options(struct ctl_opts *o, int argc, char **argv, bool attach)
{
    static const struct option attach_opts[] = {
        {"pid", required_argument, NULL, 'p'},  {"tid", required_argument, NULL, 't'},
        {"qmp", required_argument, NULL, 'q'},  {"libvirt", required_argument, NULL, 'l'},
        {"pool", required_argument, NULL, 'P'}, {"any-process", no_argument, NULL, 'A'},
        {"json", no_argument, NULL, 'j'},       {NULL, 0, NULL, 0},
    };
    static const struct option plain_opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"openmetrics", no_argument, NULL, 'o'},
        {"prometheus", no_argument, NULL, 'm'},
        {NULL, 0, NULL, 0},
    };
    int ch, r;

    optind = 0; /* glibc: restart scanning from scratch */
    while ((ch = getopt_long(argc, argv, "", attach ? attach_opts : plain_opts, NULL)) != -1) {
        if (ch == 'j')
            o->json = true;
        else if ((ch == 'o' || ch == 'm') && o->cmd->cmd == CTL_STATS)
            metrics_option(o, ch == 'o' ? CTL_METRICS_OPENMETRICS : CTL_METRICS_PROMETHEUS);
        else if (!attach || ch == '?' || ch == ':')
            return usage_of(o->cmd);
        else if ((r = attach_option(o, ch, optarg)) != 0)
            return r;
    }
    return 0;
}

static int
build_none(struct ctl_opts *o, int argc, char **argv)
{
    int r = command_options(o, argc, argv, false);

    if (r == 0 && optind != argc)
        r = usage_of(o->cmd);
    return r;
}

/*
 * help [POLICY]: the usage, then the daemon's policies and their
 * parameters (the daemon knows them; this program links no policy).
 */
static int
build_help(struct ctl_opts *o, int argc, char **argv)
{
    int r = command_options(o, argc, argv, false);

    if (r == 0 && argc - optind > 1)
        r = usage_of(o->cmd);
    if (r != 0)
        return r;
    if (argc - optind == 1)
        return copy_word(o->req->policy, VS_KEY_SIZE, argv[optind], "policy");
    usage(stdout);
    printf("\npolicies:\n");
    return 0;
}

/* detach NAME, pool destroy NAME */
static int
build_name(struct ctl_opts *o, int argc, char **argv)
{
    int r = command_options(o, argc, argv, false);

    if (r == 0 && argc - optind != 1)
        r = usage_of(o->cmd);
    return r != 0 ? r : copy_word(o->req->name, VS_NAME_SIZE, argv[optind], "name");
}

static int
build_attach(struct ctl_opts *o, int argc, char **argv)
{
    int r = command_options(o, argc, argv, true);

    if (r != 0)
        return r;
    if (argc - optind < 1)
        return usage_of(o->cmd);
    if (o->req->target == CTL_TARGET_NONE) {
        bad("attach: give one of --pid, --tid, --qmp, --libvirt");
        return usage_of(o->cmd);
    }
    if (copy_word(o->req->name, VS_NAME_SIZE, argv[optind], "name") != 0)
        return EXIT_USAGE;
    return add_params(o, argc - optind - 1, argv + optind + 1, NULL);
}

static int
build_set(struct ctl_opts *o, int argc, char **argv)
{
    int r = command_options(o, argc, argv, false);

    if (r == 0 && argc - optind < 2)
        r = usage_of(o->cmd);
    if (r == 0)
        r = copy_word(o->req->name, VS_NAME_SIZE, argv[optind], "name");
    return r != 0 ? r : add_params(o, argc - optind - 1, argv + optind + 1, NULL);
}

static int
build_move(struct ctl_opts *o, int argc, char **argv)
{
    int r = command_options(o, argc, argv, false);

    if (r == 0 && argc - optind < 2)
        r = usage_of(o->cmd);
    if (r == 0)
        r = copy_word(o->req->name, VS_NAME_SIZE, argv[optind], "name");
    if (r == 0)
        r = copy_word(o->req->pool, VS_NAME_SIZE, argv[optind + 1], "pool");
    return r != 0 ? r : add_params(o, argc - optind - 2, argv + optind + 2, NULL);
}

/* Claims cpus= and policy= among pool words: 0 taken, 1 a parameter, -1 error. */
static int
take_pool_word(struct ctl_opts *o, const char *key, const char *val)
{
    if (strcmp(key, "policy") == 0)
        return copy_word(o->req->policy, VS_KEY_SIZE, val, "policy") != 0 ? -1 : 0;
    if (strcmp(key, "cpus") == 0)
        return copy_word(o->req->cpus, CTL_CPUS_SIZE, val, "cpus") != 0 ? -1 : 0;
    return 1;
}

static int
build_pool_words(struct ctl_opts *o, int argc, char **argv)
{
    int r = command_options(o, argc, argv, false);

    if (r == 0 && argc - optind < 1)
        r = usage_of(o->cmd);
    if (r == 0)
        r = copy_word(o->req->name, VS_NAME_SIZE, argv[optind], "name");
    return r != 0 ? r : add_params(o, argc - optind - 1, argv + optind + 1, take_pool_word);
}

static int run_top(struct ctl_opts *o);

/* top [-b] [-n N] [-d SECONDS] [-s KEY] [--no-vcpus]: ctl_top.c */
static int
build_top(struct ctl_opts *o, int argc, char **argv)
{
    char err[CTL_ERRLEN];

    if (o->json)
        return bad("top: no --json (list --json or stats --openmetrics give the numbers)");
    if (ctl_top_parse(&o->top, argc, argv, err, sizeof(err)) < 0) {
        bad("%s", err);
        return usage_of(o->cmd);
    }
    o->run = run_top;
    return 0;
}

/* --- Talking to the daemon. --- */

static int
show_version(FILE *f, struct json_object *result)
{
    struct json_object *v = NULL, *p = NULL;

    json_object_object_get_ex(result, "version", &v);
    json_object_object_get_ex(result, "protocol", &p);
    fprintf(f, "vcpuschedd %s (protocol %s)\n", v != NULL ? json_object_get_string(v) : "?",
            p != NULL ? json_object_get_string(p) : "?");
    return 0;
}

/* "set web1", "pool create p2", "list": the subject of messages. */
static const char *
subject(const struct ctl_request *req, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", ctl_request_name(req), req->name[0] ? " " : "", req->name);
    return buf;
}

/*
 * Check the request with the daemon's codec: the words were turned into
 * a request, the request into a line; that line must parse.
 */
static int
request_check(struct ctl_opts *o, char **line)
{
    struct ctl_request *parsed = malloc(sizeof(*parsed));
    char err[CTL_ERRLEN], what[VS_NAME_SIZE + 32];
    int r = -ENOMEM;

    *line = ctl_request_format(o->req);
    if (*line != NULL && parsed != NULL)
        r = ctl_request_parse(*line, strlen(*line), parsed, err, sizeof(err));
    free(parsed);
    if (r == -ENOMEM)
        return bad("out of memory");
    if (r < 0)
        return bad("%s: %s", subject(o->req, what, sizeof(what)), err);
    return 0;
}

static int
result_print(struct ctl_opts *o, struct json_object *result)
{
    const char *s;

    if (o->json) {
        s = json_object_to_json_string_ext(result,
                                           JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        printf("%s\n", s);
    } else if (o->cmd->show != NULL && o->cmd->show(stdout, result) < 0) {
        fprintf(stderr, "vcpuschedctl: unexpected result shape; the JSON is:\n%s\n",
                json_object_to_json_string(result));
        return EXIT_REPLY;
    }
    return fflush(stdout) == 0 ? 0 : EXIT_REPLY;
}

static int
run(struct ctl_opts *o)
{
    const char *path = ctl_client_socket_path(o->socket), *reply;
    char err[CTL_ERRLEN], what[VS_NAME_SIZE + 32], *line;
    struct json_object *result = NULL;
    struct ctl_client cl;
    int r, errnum = 0;
    size_t len;

    if ((r = request_check(o, &line)) != 0) {
        free(line);
        return r;
    }
    r = ctl_client_connect(&cl, path, o->timeout_ms, err, sizeof(err));
    if (r == 0 && (r = ctl_client_call(&cl, line, &reply, &len, err, sizeof(err))) == 0)
        r = ctl_response_parse(reply, len, &result, &errnum, err, sizeof(err));
    ctl_client_close(&cl);
    free(line);
    subject(o->req, what, sizeof(what));
    if (r < 0 || errnum != 0)
        return ctl_fetch_report(what, path, r, err);
    r = result_print(o, result);
    json_object_put(result);
    return r;
}

/* stats --openmetrics | --prometheus: `stats` and `list` as metrics (ctl_metrics.c). */
static int
run_metrics(struct ctl_opts *o)
{
    const char *path = ctl_client_socket_path(o->socket);
    struct json_object *stats, *list;
    char err[CTL_ERRLEN];
    int errnum, r;

    if (o->json)
        return bad("stats: give one of --json, --openmetrics and --prometheus");
    r = ctl_fetch_sample(path, o->timeout_ms, &stats, &list, &errnum, err, sizeof(err));
    if (r < 0 || errnum != 0)
        return ctl_fetch_report("stats", path, r, err);
    r = ctl_metrics_write(stdout, stats, list, o->metrics);
    json_object_put(stats);
    json_object_put(list);
    if (r == 0 && fflush(stdout) != 0)
        r = -errno;
    if (r < 0) {
        fprintf(stderr, "vcpuschedctl: stats: %s\n", strerror(-r));
        return EXIT_REPLY;
    }
    return 0;
}

static int
run_top(struct ctl_opts *o)
{
    return ctl_top_run(&o->top, ctl_client_socket_path(o->socket), o->timeout_ms);
}

/* --- Main. --- */

/* The command named by argv[0] (and argv[1] for two-word names). */
static const struct ctl_command *
command_find(int argc, char **argv, int *words)
{
    for (size_t i = 0; i < NR_COMMANDS; i++) {
        const char *name = commands[i].name, *sp = strchr(name, ' ');

        if (sp == NULL && strcmp(argv[0], name) == 0) {
            *words = 1;
            return &commands[i];
        }
        if (sp != NULL && argc > 1 && strncmp(argv[0], name, (size_t)(sp - name)) == 0 &&
            argv[0][sp - name] == '\0' && strcmp(argv[1], sp + 1) == 0) {
            *words = 2;
            return &commands[i];
        }
    }
    return NULL;
}

static int
global_options(struct ctl_opts *o, int argc, char **argv)
{
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char *end;
    long ms;
    int ch;

    while ((ch = getopt_long(argc, argv, "+s:jt:h", opts, NULL)) != -1) {
        switch (ch) {
        case 's':
            o->socket = optarg;
            break;
        case 'j':
            o->json = true;
            break;
        case 't':
            ms = strtol(optarg, &end, 10);
            if (optarg[0] == '\0' || *end != '\0' || ms <= 0 || ms > CTL_TIMEOUT_MS_MAX)
                return bad("--timeout: '%s' is not 1..%d milliseconds", optarg, CTL_TIMEOUT_MS_MAX);
            o->timeout_ms = (int)ms;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct ctl_opts o = {.timeout_ms = CTL_TIMEOUT_MS_DEFAULT};
    int words = 0, r;

    if ((r = global_options(&o, argc, argv)) != 0)
        return r;
    argc -= optind;
    argv += optind;
    if (argc == 0 || (o.cmd = command_find(argc, argv, &words)) == NULL) {
        if (argc > 0)
            fprintf(stderr, "vcpuschedctl: unknown command '%s'\n", argv[0]);
        usage(stderr);
        return EXIT_USAGE;
    }
    o.req = calloc(1, sizeof(*o.req));
    if (o.req == NULL)
        return bad("out of memory");
    o.req->cmd = o.cmd->cmd;
    o.req->pool_op = o.cmd->pool_op;
    r = o.cmd->build(&o, argc - words + 1, argv + words - 1);
    /* With --json, the daemon's answer alone: the output is one JSON value. */
    if (r == 0 && strcmp(o.cmd->name, "version") == 0 && !o.json)
        printf("vcpuschedctl %s\n", VCPUSCHED_VERSION);
    if (r == 0)
        r = o.run != NULL ? o.run(&o) : run(&o);
    free(o.req);
    return r;
}
