/* SPDX-License-Identifier: ISC */
/*
 * test_control_cli.c - the real vcpuschedctl binary against a real control
 * server (control.c) whose handler answers with canned results from
 * the JSON files in tests/fixtures/ctl: its tables are compared with golden files
 * (golden.h; VCPUSCHED_UPDATE_GOLDEN=1 rewrites them), the request lines it sends
 * with what its words mean, and its exit codes with vcpuschedctl(8):
 * 0 ok, 1 error reply, 2 usage, 3 daemon unreachable.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "golden.h"
#include "test_control_lib.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_ARGS 16

/* The last request the canned server got, as ctl_request_format wrote it back. */
struct canned {
    pthread_mutex_t lock;
    char *last;
};

static struct json_object *
fixture(const char *name)
{
    return fixture_load(CTL_FIXTURE_DIR, name);
}

/* help.json is a real daemon's `help` reply; one policy is picked as it would. */
static int
canned_help(const char *policy, struct json_object **result, char *err, size_t errlen)
{
    struct json_object *all = fixture("help.json"), *arr, *one;

    if (policy[0] == '\0') {
        *result = all;
        return 0;
    }
    ck_assert(json_object_object_get_ex(all, "policies", &arr));
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        struct json_object *p = json_object_array_get_idx(arr, i), *name;

        if (json_object_object_get_ex(p, "name", &name) &&
            strcmp(json_object_get_string(name), policy) == 0) {
            one = json_object_new_array();
            json_object_array_add(one, json_object_get(p));
            *result = json_object_new_object();
            json_object_object_add(*result, "policies", one);
            json_object_put(all);
            return 0;
        }
    }
    json_object_put(all);
    snprintf(err, errlen, "no policy '%s' (vcpuschedctl help lists them)", policy);
    return -ENOENT;
}

static int
canned_handler(void *ctx, const struct ctl_request *req, const struct control_peer *peer,
               struct json_object **result, char *err, size_t errlen)
{
    struct canned *cn = ctx;

    (void)peer;
    pthread_mutex_lock(&cn->lock);
    free(cn->last);
    cn->last = ctl_request_format(req);
    pthread_mutex_unlock(&cn->lock);
    switch (req->cmd) {
    case CTL_VERSION:
        *result = json_object_new_object();
        json_object_object_add(*result, "version", json_object_new_string("0.1.0"));
        json_object_object_add(*result, "protocol", json_object_new_int(1));
        return 0;
    case CTL_LIST:
        *result = fixture("list.json");
        return 0;
    case CTL_STATS:
        *result = fixture("stats.json");
        return 0;
    case CTL_ATTACH:
        *result = fixture("domain.json");
        return 0;
    case CTL_SET:
        if (strcmp(req->params[0].key, "weight") == 0 && strcmp(req->params[0].val, "0") == 0) {
            snprintf(err, errlen, "weight: 0 is out of range [1, 65535]");
            return -EINVAL;
        }
        *result = fixture("domain.json");
        return 0;
    case CTL_DETACH:
        if (strcmp(req->name, "ghost") == 0) {
            snprintf(err, errlen, "%s: not attached", req->name);
            return -ENOENT;
        }
        return 0;
    case CTL_POOL:
        if (req->pool_op == CTL_POOL_LIST)
            *result = fixture("pools.json");
        return 0;
    case CTL_HELP:
        return canned_help(req->policy, result, err, errlen);
    case CTL_MOVE:
        if (strcmp(req->pool, "nope") == 0) {
            snprintf(err, errlen, "no pool %s", req->pool);
            return -ENOENT;
        }
        *result = fixture("domain.json");
        return 0;
    case CTL_HOOK:
        return -ENOSYS;
    }
    return -ENOSYS;
}

/* --- Running the binary. --- */

struct run {
    int status; /* exit code */
    char out[1 << 16], err[1 << 16];
};

static void
drain(int fd, char *buf, size_t cap, size_t *len)
{
    ssize_t n = read(fd, buf + *len, cap - 1 - *len);

    if (n > 0)
        *len += (size_t)n;
    buf[*len] = '\0';
}

/* Run vcpuschedctl with argv (NULL-terminated) and VCPUSCHED_SOCKET = sock. */
static void
run_ctl(struct run *r, const char *sock, const char *const *args)
{
    char *argv[MAX_ARGS + 2] = {NULL};
    int out[2], err[2], status;
    size_t olen = 0, elen = 0;
    pid_t pid;

    ck_assert_int_eq(pipe(out), 0);
    ck_assert_int_eq(pipe(err), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        setenv("VCPUSCHED_SOCKET", sock, 1);
        argv[0] = strdup("vcpuschedctl");
        for (int i = 0; args[i] != NULL && i < MAX_ARGS; i++)
            argv[i + 1] = strdup(args[i]);
        execv(VCPUSCHEDCTL_BIN, argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    for (;;) {
        struct pollfd p[2] = {{.fd = out[0], .events = POLLIN}, {.fd = err[0], .events = POLLIN}};

        if (poll(p, 2, 10000) <= 0)
            break;
        if (p[0].revents)
            drain(out[0], r->out, sizeof(r->out), &olen);
        if (p[1].revents)
            drain(err[0], r->err, sizeof(r->err), &elen);
        if ((p[0].revents & POLLHUP) && !(p[0].revents & POLLIN) && (p[1].revents & POLLHUP) &&
            !(p[1].revents & POLLIN))
            break;
    }
    r->out[olen] = r->err[elen] = '\0';
    close(out[0]);
    close(err[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    r->status = WEXITSTATUS(status);
}

/* --- Cases against the canned server. --- */

struct cli_case {
    const char *args[MAX_ARGS];
    int status;
    const char *golden;  /* stdout must equal this fixture file; NULL: stdout must be empty */
    const char *err;     /* stderr must contain this; NULL: stderr must be empty */
    const char *request; /* the server's last request must be this line; NULL: not checked */
};

static const struct cli_case cli_cases[] = {
    /* Tables and JSON. */
    {{"list"}, 0, "list.txt", NULL, "{\"v\":1,\"cmd\":\"list\"}\n"},
    {{"stats"}, 0, "stats.txt", NULL, "{\"v\":1,\"cmd\":\"stats\"}\n"},
    {{"pool", "list"},
     0,
     "pools.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"list\"}}\n"},
    {{"--json", "list"}, 0, "list-json.txt", NULL, NULL},
    {{"list", "--json"}, 0, "list-json.txt", NULL, NULL},
    {{"-j", "stats"}, 0, "stats-json.txt", NULL, NULL},
    {{"version"}, 0, "version.txt", NULL, "{\"v\":1,\"cmd\":\"version\"}\n"},
    {{"version", "--json"}, 0, "version-json.txt", NULL, NULL}, /* one JSON value */
    /* Requests built from words. */
    {{"attach", "web1", "--tid", "4250,4251", "--pool", "main", "weight=512", "cap=50"},
     0,
     "attach.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"tids\":[4250,4251],\"pool\":"
     "\"main\",\"params\":{\"weight\":\"512\",\"cap\":\"50\"}}}\n"},
    {{"attach", "--pid", "4242", "web1"},
     0,
     "attach.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"pid\":4242}}\n"},
    {{"attach", "web1", "--tid", "1", "--tid", "3,2"},
     0,
     "attach.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"tids\":[1,3,2]}}\n"},
    {{"attach", "web1", "--libvirt", "web1"},
     0,
     "attach.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"libvirt\":\"web1\"}}\n"},
    {{"attach", "web1", "--qmp", "/run/vm/web1.qmp"},
     0,
     "attach.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"qmp\":\"/run/vm/web1.qmp\"}}\n"},
    {{"set", "web1", "weight=256"},
     0,
     "attach.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"web1\",\"params\":{\"weight\":\"256\"}}}\n"},
    {{"detach", "web1"},
     0,
     NULL,
     NULL,
     "{\"v\":1,\"cmd\":\"detach\",\"args\":{\"name\":\"web1\"}}\n"},
    {{"move", "web1", "p2", "weight=128"},
     0,
     "attach.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"move\",\"args\":{\"name\":\"web1\",\"pool\":\"p2\",\"params\":{"
     "\"weight\":\"128\"}}}\n"},
    {{"move", "web1", "p2"},
     0,
     "attach.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"move\",\"args\":{\"name\":\"web1\",\"pool\":\"p2\"}}\n"},
    {{"--json", "detach", "web1"}, 0, "empty-json.txt", NULL, NULL},
    {{"pool", "create", "p2", "cpus=2-3", "policy=credit2", "ratelimit_us=500"},
     0,
     NULL,
     NULL,
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"create\",\"name\":\"p2\",\"cpus\":\"2-3\","
     "\"policy\":\"credit2\",\"params\":{\"ratelimit_us\":\"500\"}}}\n"},
    {{"pool", "set", "main", "policy=rr", "slice_us=100"},
     0,
     NULL,
     NULL,
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"set\",\"name\":\"main\",\"policy\":\"rr\","
     "\"params\":{\"slice_us\":\"100\"}}}\n"},
    {{"pool", "set", "main", "tslice_ms=10"},
     0,
     NULL,
     NULL,
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"set\",\"name\":\"main\",\"params\":"
     "{\"tslice_ms\":\"10\"}}}\n"},
    {{"pool", "set", "main", "cpus=2-5"},
     0,
     NULL,
     NULL,
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"set\",\"name\":\"main\",\"cpus\":\"2-5\"}}\n"},
    {{"pool", "destroy", "p2"},
     0,
     NULL,
     NULL,
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"destroy\",\"name\":\"p2\"}}\n"},
    /* Exit 1: the daemon's error, on one line, subject first. */
    {{"set", "web1", "weight=0"},
     1,
     NULL,
     "vcpuschedctl: set web1: weight: 0 is out of range [1, 65535]\n",
     NULL},
    {{"detach", "ghost"}, 1, NULL, "vcpuschedctl: detach ghost: ghost: not attached\n", NULL},
    {{"move", "web1", "nope"}, 1, NULL, "vcpuschedctl: move web1: no pool nope\n", NULL},
    {{"move", "web1"}, 2, NULL, "usage: vcpuschedctl [options] move NAME POOL", NULL},
    /* Exit 2: the command line is wrong; nothing is sent. */
    {{NULL}, 2, NULL, "usage: vcpuschedctl", NULL},
    {{"frobnicate"}, 2, NULL, "unknown command 'frobnicate'", NULL},
    {{"pool"}, 2, NULL, "unknown command 'pool'", NULL},
    {{"pool", "resize", "p"}, 2, NULL, "unknown command 'pool'", NULL},
    {{"--bogus", "list"}, 2, NULL, "usage:", NULL},
    {{"--timeout", "0", "list"}, 2, NULL, "--timeout: '0' is not 1..3600000 milliseconds", NULL},
    {{"list", "extra"}, 2, NULL, "usage: vcpuschedctl [options] list [--json]", NULL},
    {{"list", "--pid", "5"}, 2, NULL, "usage: vcpuschedctl [options] list", NULL},
    {{"attach", "web1"}, 2, NULL, "attach: give one of --pid, --tid, --qmp, --libvirt", NULL},
    {{"attach", "web1", "--pid", "5", "--qmp", "/q"}, 2, NULL, "give only one of", NULL},
    {{"attach", "web1", "--tid", "1,x"}, 2, NULL, "attach: --tid: 'x' is not a thread id", NULL},
    {{"attach", "web1", "--pid", "-4"}, 2, NULL, "attach: --pid: '-4' is not a process id", NULL},
    {{"attach", "web1", "--tid", "5,5"},
     2,
     NULL,
     "vcpuschedctl: attach web1: tids: 5 appears twice",
     NULL},
    {{"attach", "we b", "--pid", "5"}, 2, NULL, "name: \"we b\" has a character outside", NULL},
    {{"attach", "web1", "--pid"}, 2, NULL, "usage: vcpuschedctl [options] attach NAME", NULL},
    {{"set", "web1"}, 2, NULL, "usage: vcpuschedctl [options] set NAME key=value ...", NULL},
    {{"set", "web1", "weight"}, 2, NULL, "set: 'weight' is not key=value", NULL},
    {{"set", "web1", "=5"}, 2, NULL, "set: '=5' is not key=value", NULL},
    {{"set", "web1", "Weight=5"},
     2,
     NULL,
     "set web1: params: key \"Weight\" has a character",
     NULL},
    {{"set", "web1", "weight="}, 2, NULL, "set web1: params.weight: must not be empty", NULL},
    {{"pool", "create", "p2", "policy=rr"}, 2, NULL, "pool create p2: cpus: missing", NULL},
    {{"pool", "create", "p2", "cpus=3-1", "policy=rr"},
     2,
     NULL,
     "cpus: range 3-1 is descending",
     NULL},
    {{"pool", "set", "main"},
     2,
     NULL,
     "pool set main: pool set needs cpus, a policy or params",
     NULL},
    {{"pool", "set", "main", "cpus=2-5", "policy=rr"},
     2,
     NULL,
     "pool set main: pool set: cpus change alone",
     NULL},
    {{"detach"}, 2, NULL, "usage: vcpuschedctl [options] detach NAME", NULL},
    {{"help", "nosuch"}, 1, NULL, "help: no policy 'nosuch'", NULL},
    /* The daemon knows the policies; the CLI links none. */
    {{"help", "rr"}, 0, "help-rr.txt", NULL, NULL},
    /* Metrics: stats, then list, formatted as one text. */
    {{"stats", "--openmetrics"}, 0, "stats-openmetrics.txt", NULL, "{\"v\":1,\"cmd\":\"list\"}\n"},
    {{"stats", "--prometheus"}, 0, "stats-prometheus.txt", NULL, "{\"v\":1,\"cmd\":\"list\"}\n"},
    {{"list", "--openmetrics"}, 2, NULL, "usage: vcpuschedctl [options] list", NULL},
    {{"--json", "stats", "--prometheus"},
     2,
     NULL,
     "stats: give one of --json, --openmetrics and --prometheus",
     NULL},
    /* top, batch mode: two samples of the same canned results, so every rate is 0. */
    {{"top", "-b", "-n", "1", "-d", "0.1"},
     0,
     "top-batch.txt",
     NULL,
     "{\"v\":1,\"cmd\":\"list\"}\n"},
    {{"top"}, 2, NULL, "top: standard input and output must be a terminal", NULL},
    {{"top", "-d", "0"}, 2, NULL, "top: -d: '0' is not 0.1..3600 seconds", NULL},
    {{"top", "-d", "1x"}, 2, NULL, "top: -d: '1x' is not 0.1..3600 seconds", NULL},
    {{"top", "-n", "0"}, 2, NULL, "top: -n: '0' is not a positive count", NULL},
    {{"top", "-s", "mem"}, 2, NULL, "top: -s: 'mem' is not cpu, name, wakes or pool", NULL},
    {{"top", "-b", "extra"}, 2, NULL, "top: unexpected argument 'extra'", NULL},
    {{"top", "-n"}, 2, NULL, "top: -n needs a value", NULL},
    {{"top", "-x"}, 2, NULL, "top: unknown option -x", NULL},
    {{"top", "--frobnicate"}, 2, NULL, "top: unknown option --frobnicate", NULL},
    {{"--json", "top"}, 2, NULL, "top: no --json", NULL},
};

static struct canned cn;
static struct tserver srv;

START_TEST(test_cli_case)
{
    const struct cli_case *c = &cli_cases[_i];
    struct run *r = calloc(1, sizeof(*r));

    memset(&cn, 0, sizeof(cn));
    pthread_mutex_init(&cn.lock, NULL);
    tserver_start(&srv, CONTROL_GROUP_ROOT, canned_handler, &cn, 0);
    run_ctl(r, srv.path, c->args);
    ck_assert_msg(r->status == c->status, "%s ...: exit %d, want %d; stderr: %s",
                  c->args[0] ? c->args[0] : "(none)", r->status, c->status, r->err);
    if (c->golden != NULL)
        golden_compare(CTL_FIXTURE_DIR, c->golden, r->out);
    else
        ck_assert_msg(r->out[0] == '\0', "unexpected stdout: %s", r->out);
    if (c->err != NULL)
        ck_assert_msg(strstr(r->err, c->err) != NULL, "stderr '%s' lacks '%s'", r->err, c->err);
    else
        ck_assert_msg(r->err[0] == '\0', "unexpected stderr: %s", r->err);
    pthread_mutex_lock(&cn.lock);
    if (c->request != NULL)
        ck_assert_msg(cn.last != NULL && strcmp(cn.last, c->request) == 0,
                      "request:\n got %s\nwant %s", cn.last ? cn.last : "(none)\n", c->request);
    if (c->status == 2)
        ck_assert_msg(cn.last == NULL, "a usage error sent %s", cn.last);
    pthread_mutex_unlock(&cn.lock);
    tserver_stop(&srv);
    free(cn.last);
    free(r);
}
END_TEST

/* A relative --qmp path is made absolute against the caller's directory. */
START_TEST(test_cli_qmp_relative)
{
    static const char *const args[] = {"attach", "web1", "--qmp", "vm.qmp", NULL};
    struct run *r = calloc(1, sizeof(*r));
    char cwd[256], want[512];

    memset(&cn, 0, sizeof(cn));
    pthread_mutex_init(&cn.lock, NULL);
    tserver_start(&srv, CONTROL_GROUP_ROOT, canned_handler, &cn, 0);
    run_ctl(r, srv.path, args);
    ck_assert_int_eq(r->status, 0);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    snprintf(want, sizeof(want),
             "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"qmp\":\"%s/vm.qmp\"}}\n",
             cwd);
    ck_assert_str_eq(cn.last, want);
    tserver_stop(&srv);
    free(cn.last);
    free(r);
}
END_TEST

/* --- Exit 3: no daemon, a mute one, a garbled one. --- */

START_TEST(test_cli_no_daemon)
{
    static const char *const args[] = {"list", NULL};
    static const char *const over[] = {"--socket", "/nonexistent/vcpusched.sock", "list", NULL};
    static const char *const top[] = {"top", "-b", NULL};
    static const char *const metrics[] = {"stats", "--openmetrics", NULL};
    struct run *r = calloc(1, sizeof(*r));

    run_ctl(r, "/nonexistent/control.sock", args);
    ck_assert_int_eq(r->status, 3);
    ck_assert_str_eq(r->err, "vcpuschedctl: list: cannot talk to vcpuschedd at "
                             "/nonexistent/control.sock: No such file or directory (is it "
                             "running?)\n");
    run_ctl(r, "/nonexistent/control.sock", over); /* --socket wins over the environment */
    ck_assert_int_eq(r->status, 3);
    ck_assert_ptr_nonnull(strstr(r->err, "/nonexistent/vcpusched.sock"));
    run_ctl(r, "/nonexistent/control.sock", top);
    ck_assert_int_eq(r->status, 3);
    ck_assert_str_eq(r->err, "vcpuschedctl: top: cannot talk to vcpuschedd at "
                             "/nonexistent/control.sock: No such file or directory (is it "
                             "running?)\n");
    ck_assert_str_eq(r->out, "");
    run_ctl(r, "/nonexistent/control.sock", metrics);
    ck_assert_int_eq(r->status, 3);
    ck_assert_ptr_nonnull(strstr(r->err, "vcpuschedctl: stats: cannot talk to vcpuschedd"));
    ck_assert_str_eq(r->out, "");
    free(r);
}
END_TEST

/* A listener that never answers, or answers garbage: 3, within the timeout. */
static void *
garble(void *arg)
{
    int lfd = *(int *)arg, fd = accept(lfd, NULL, NULL);
    char buf[256];

    if (fd >= 0) {
        if (read(fd, buf, sizeof(buf)) > 0 && write(fd, "not json\n", 9) < 0)
            buf[0] = '\0';
        close(fd);
    }
    return NULL;
}

static int
listen_at(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 4), 0);
    return fd;
}

/* Each a command that asks for stats first: plain, metrics, top. */
static const char *const mute_args[][9] = {
    {"--timeout", "300", "stats", NULL},
    {"--timeout", "300", "stats", "--openmetrics", NULL},
    {"--timeout", "300", "top", "-b", "-n", "1", "-d", "0.1", NULL},
};

START_TEST(test_cli_mute_and_garbled_daemon)
{
    const char *const *args = mute_args[_i];
    struct run *r = calloc(1, sizeof(*r));
    char dir[] = "/tmp/vcpusched-cli-XXXXXX", path[128];
    pthread_t t;
    uint64_t t0;
    int lfd;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/mute.sock", dir);
    lfd = listen_at(path);
    t0 = tnow_ms();
    run_ctl(r, path, args);
    ck_assert_int_eq(r->status, 3);
    ck_assert_ptr_nonnull(strstr(r->err, "no reply in time"));
    ck_assert_uint_lt(tnow_ms() - t0, 3000);
    close(lfd); /* its backlog still holds the mute connection */
    unlink(path);
    lfd = listen_at(path);
    pthread_create(&t, NULL, garble, &lfd);
    run_ctl(r, path, args);
    pthread_join(t, NULL);
    ck_assert_int_eq(r->status, 3);
    ck_assert_ptr_nonnull(strstr(r->err, "response: not JSON"));
    close(lfd);
    unlink(path);
    rmdir(dir);
    free(r);
}
END_TEST

/* help: the usage, then every policy the daemon answers with. */
START_TEST(test_cli_help)
{
    static const char *const args[] = {"help", NULL};
    struct json_object *all = fixture("help.json"), *arr, *name;
    struct run *r = calloc(1, sizeof(*r));
    char want[128];

    memset(&cn, 0, sizeof(cn));
    pthread_mutex_init(&cn.lock, NULL);
    tserver_start(&srv, CONTROL_GROUP_ROOT, canned_handler, &cn, 0);
    run_ctl(r, srv.path, args);
    tserver_stop(&srv);
    ck_assert_msg(r->status == 0, "exit %d: %s", r->status, r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "usage: vcpuschedctl"));
    ck_assert(json_object_object_get_ex(all, "policies", &arr));
    ck_assert_uint_ge(json_object_array_length(arr), 4);
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        ck_assert(json_object_object_get_ex(json_object_array_get_idx(arr, i), "name", &name));
        snprintf(want, sizeof(want), "\n%s: ", json_object_get_string(name));
        ck_assert_msg(strstr(r->out, want) != NULL, "help lacks policy %s", want + 1);
    }
    json_object_put(all);
    free(r);
}
END_TEST

static Suite *
cli_suite(void)
{
    Suite *s = suite_create("vcpuschedctl");
    TCase *tc = tcase_create("cli");

    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_cli_case, 0, NELEM(cli_cases));
    tcase_add_test(tc, test_cli_qmp_relative);
    tcase_add_test(tc, test_cli_no_daemon);
    tcase_add_loop_test(tc, test_cli_mute_and_garbled_daemon, 0, NELEM(mute_args));
    tcase_add_test(tc, test_cli_help);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(cli_suite());
    int failed;

    signal(SIGPIPE, SIG_IGN);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
