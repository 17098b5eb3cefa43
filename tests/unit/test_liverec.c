/* SPDX-License-Identifier: ISC */
/*
 * test_liverec.c - the live record's parser (vcpusched/daemon/liverec.c):
 * a record as the daemon writes it is read back field by field; every
 * malformed one (not JSON, another version, an unknown key, a wrong type
 * or range, a key its source does not take, a name twice, a bad name,
 * path or CPU list) is refused whole, with a message naming the field.
 * And a process's identity (vcpusched/host/procid.c), which tells the
 * process a record names from a stranger that got its pid.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liverec.h"
#include "testutil.h"

#define BOOT "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
#define HEAD "{\"vcpusched_live\":1,\"boot_id\":\"" BOOT "\",\"written_by\":\"0.1.0+git9.gabc\","
#define POOL_P2                                                                                    \
    "{\"name\":\"p2\",\"cpus\":\"2-3,5\",\"policy\":\"credit2\",\"params\":{\"ratelimit_us\":"     \
    "\"500\"}}"
#define DOM_PID                                                                                    \
    "{\"name\":\"hog\",\"source\":\"pid\",\"pid\":4242,\"start_time\":123456,\"exe_dev\":2049,"    \
    "\"exe_ino\":77,\"pool\":\"main\",\"params\":{\"weight\":\"512\",\"cap\":\"30\"}}"
#define DOM_QMP                                                                                    \
    "{\"name\":\"web1\",\"source\":\"qmp\",\"origin\":\"/run/vm/web 1.qmp\",\"pid\":5000,"         \
    "\"start_time\":9,\"exe_dev\":1,\"exe_ino\":2,\"qmp_dev\":25,\"qmp_ino\":5678,\"pool\":"       \
    "\"p2\","                                                                                      \
    "\"params\":{\"class\":\"background\"}}"
#define DOM_TIDS                                                                                   \
    "{\"name\":\"t\",\"source\":\"tids\",\"tids\":[11,12],\"pid\":10,\"start_time\":0,"            \
    "\"exe_dev\":0,\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"
#define DOM_LV                                                                                     \
    "{\"name\":\"vm-a\",\"source\":\"libvirt\",\"origin\":\"vm-a\",\"pid\":300,\"start_time\":5,"  \
    "\"exe_dev\":1,\"exe_ino\":2,\"pool\":\"main\",\"params\":{}}"
#define GOOD                                                                                       \
    HEAD "\"pools\":[" POOL_P2 "],\"domains\":[" DOM_PID "," DOM_QMP "," DOM_TIDS "," DOM_LV "]}"

/* A record with one domain `dom` and no pool. */
#define ONE(dom) HEAD "\"pools\":[],\"domains\":[" dom "]}"

static const char *
param(const struct kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].val;
    return NULL;
}

START_TEST(test_good_record)
{
    struct liverec rec;
    char err[256] = "";
    const struct liverec_dom *d;

    ck_assert_msg(liverec_parse(GOOD "\n", strlen(GOOD) + 1, &rec, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_str_eq(rec.boot_id, BOOT);
    ck_assert_str_eq(rec.written_by, "0.1.0+git9.gabc");
    ck_assert_uint_eq(rec.nr_pools, 1);
    ck_assert_str_eq(rec.pools[0].name, "p2");
    ck_assert_str_eq(rec.pools[0].policy, "credit2");
    ck_assert_uint_eq(cpuset_count(&rec.pools[0].cpus), 3);
    ck_assert(cpuset_has(&rec.pools[0].cpus, 5));
    ck_assert_str_eq(param(rec.pools[0].params, rec.pools[0].nr_params, "ratelimit_us"), "500");
    ck_assert_uint_eq(rec.nr_doms, 4);
    d = &rec.doms[0];
    ck_assert_str_eq(d->name, "hog");
    ck_assert_str_eq(d->source, "pid");
    ck_assert_str_eq(d->origin, "");
    ck_assert_int_eq(d->pid, 4242);
    ck_assert_uint_eq(d->ident.start_time, 123456);
    ck_assert_uint_eq(d->ident.exe_dev, 2049);
    ck_assert_uint_eq(d->ident.exe_ino, 77);
    ck_assert_str_eq(d->pool, "main");
    ck_assert_str_eq(param(d->params, d->nr_params, "weight"), "512");
    ck_assert_str_eq(param(d->params, d->nr_params, "cap"), "30");
    d = &rec.doms[1];
    ck_assert_str_eq(d->origin, "/run/vm/web 1.qmp");
    ck_assert_uint_eq(d->qmp_dev, 25);
    ck_assert_uint_eq(d->qmp_ino, 5678);
    ck_assert_str_eq(param(d->params, d->nr_params, "class"), "background");
    d = &rec.doms[2];
    ck_assert_uint_eq(d->nr_tids, 2);
    ck_assert_int_eq(d->tids[1], 12);
    ck_assert_str_eq(rec.doms[3].origin, "vm-a");
    liverec_free(&rec);
    /* Nothing to take up is a record too. */
    ck_assert_int_eq(liverec_parse(ONE(""), strlen(ONE("")), &rec, err, sizeof(err)), 0);
    ck_assert_uint_eq(rec.nr_doms, 0);
    liverec_free(&rec);
}
END_TEST

struct bad_case {
    const char *what;
    const char *text;
    int ret;
    const char *msg; /* a substring of the message */
};

static const struct bad_case bad_cases[] = {
    {"empty", "", -EPROTO, "not JSON"},
    {"truncated", "{\"vcpusched_live\":1,", -EPROTO, "not JSON"},
    {"null", "null", -EPROTO, "not JSON: null"},
    {"trailing", ONE("") "x", -EPROTO, "trailing characters"},
    {"two values", ONE("") ONE(""), -EPROTO, "trailing characters"},
    {"array", "[]", -EINVAL, "not a JSON object"},
    {"no version", "{\"boot_id\":\"" BOOT "\",\"pools\":[],\"domains\":[]}", -EINVAL,
     "record.vcpusched_live: missing"},
    {"version 2", "{\"vcpusched_live\":2,\"boot_id\":\"" BOOT "\",\"pools\":[],\"domains\":[]}",
     -ENOTSUP, "version 2 (this daemon reads version 1)"},
    {"version string", "{\"vcpusched_live\":\"1\",\"boot_id\":\"" BOOT "\"}", -EINVAL,
     "vcpusched_live: must be an integer"},
    {"unknown top key", HEAD "\"pools\":[],\"domains\":[],\"extra\":1}", -EINVAL,
     "record: unknown key \"extra\""},
    {"bad boot id", "{\"vcpusched_live\":1,\"boot_id\":\"x\",\"pools\":[],\"domains\":[]}", -EINVAL,
     "record.boot_id: not a boot id"},
    {"no domains", HEAD "\"pools\":[]}", -EINVAL, "record.domains: missing"},
    {"domains object", HEAD "\"pools\":[],\"domains\":{}}", -EINVAL,
     "record.domains: must be an array"},
    {"domain not object", ONE("1"), -EINVAL, "domains[0]: must be an object"},
    {"unknown domain key", ONE("{\"name\":\"a\",\"colour\":\"red\"}"), -EINVAL,
     "domains[0]: unknown key \"colour\""},
    {"bad name",
     ONE("{\"name\":\"a b\",\"source\":\"pid\",\"pid\":1,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].name: not a valid name"},
    {"pid zero",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":0,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].pid: must be an integer in 1..4194304"},
    {"pid string",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":\"5\",\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].pid: must be an integer"},
    {"pid float",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":5.0,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].pid: must be an integer"},
    {"negative start time",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":5,\"start_time\":-1,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].start_time: must be an integer"},
    {"no start time",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":5,\"exe_dev\":0,\"exe_ino\":0,"
         "\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].start_time: missing"},
    {"unknown source",
     ONE("{\"name\":\"a\",\"source\":\"ssh\",\"pid\":5,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].source: \"ssh\" is not pid, tids, qmp or libvirt"},
    {"pid with origin",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"origin\":\"/x\",\"pid\":5,\"start_time\":0,"
         "\"exe_dev\":0,\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0]: a key source pid does not take"},
    {"qmp without socket id",
     ONE("{\"name\":\"a\",\"source\":\"qmp\",\"origin\":\"/q\",\"pid\":5,\"start_time\":0,"
         "\"exe_dev\":0,\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].qmp_dev: missing"},
    {"qmp relative path",
     ONE("{\"name\":\"a\",\"source\":\"qmp\",\"origin\":\"q.sock\",\"pid\":5,\"start_time\":0,"
         "\"exe_dev\":0,\"exe_ino\":0,\"qmp_dev\":1,\"qmp_ino\":1,\"pool\":\"main\","
         "\"params\":{}}"),
     -EINVAL, "domains[0].origin: a QMP socket path"},
    {"qmp path with a newline",
     ONE("{\"name\":\"a\",\"source\":\"qmp\",\"origin\":\"/q\\n\",\"pid\":5,\"start_time\":0,"
         "\"exe_dev\":0,\"exe_ino\":0,\"qmp_dev\":1,\"qmp_ino\":1,\"pool\":\"main\","
         "\"params\":{}}"),
     -EINVAL, "domains[0].origin: not a valid text"},
    {"tids without tids",
     ONE("{\"name\":\"a\",\"source\":\"tids\",\"pid\":5,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].tids: missing"},
    {"tids twice",
     ONE("{\"name\":\"a\",\"source\":\"tids\",\"tids\":[6,6],\"pid\":5,\"start_time\":0,"
         "\"exe_dev\":0,\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].tids: 6 appears twice"},
    {"tid out of range",
     ONE("{\"name\":\"a\",\"source\":\"tids\",\"tids\":[6,99999999],\"pid\":5,\"start_time\":0,"
         "\"exe_dev\":0,\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].tids[1]: must be an integer"},
    {"pid source with tids",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"tids\":[6],\"pid\":5,\"start_time\":0,"
         "\"exe_dev\":0,\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "a key source pid does not take"},
    {"libvirt bad domain name",
     ONE("{\"name\":\"a\",\"source\":\"libvirt\",\"origin\":\"a/b\",\"pid\":5,\"start_time\":0,"
         "\"exe_dev\":0,\"exe_ino\":0,\"pool\":\"main\",\"params\":{}}"),
     -EINVAL, "domains[0].origin: not a valid name"},
    {"no pool",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":5,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"params\":{}}"),
     -EINVAL, "domains[0].pool: missing"},
    {"params array",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":5,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":[]}"),
     -EINVAL, "domains[0].params: must be an object"},
    {"param number",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":5,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{\"weight\":512}}"),
     -EINVAL, "domains[0].params.weight: must be a string"},
    {"param key",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":5,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{\"Weight\":\"1\"}}"),
     -EINVAL, "domains[0].params: key \"Weight\""},
    {"param empty",
     ONE("{\"name\":\"a\",\"source\":\"pid\",\"pid\":5,\"start_time\":0,\"exe_dev\":0,"
         "\"exe_ino\":0,\"pool\":\"main\",\"params\":{\"weight\":\"\"}}"),
     -EINVAL, "domains[0].params.weight: must be a string of 1.."},
    {"domain twice", ONE(DOM_PID "," DOM_PID), -EINVAL,
     "domains[1].name: domain hog appears twice"},
    {"pool bad cpus",
     HEAD "\"pools\":[{\"name\":\"p\",\"cpus\":\"3-1\",\"policy\":\"rr\",\"params\":{}}],"
          "\"domains\":[]}",
     -EINVAL, "pools[0].cpus:"},
    {"pool empty cpus",
     HEAD "\"pools\":[{\"name\":\"p\",\"cpus\":\"\",\"policy\":\"rr\",\"params\":{}}],"
          "\"domains\":[]}",
     -EINVAL, "pools[0].cpus: not a valid text"},
    {"pool bad policy",
     HEAD "\"pools\":[{\"name\":\"p\",\"cpus\":\"1\",\"policy\":\"Credit\",\"params\":{}}],"
          "\"domains\":[]}",
     -EINVAL, "pools[0].policy: not a valid key"},
    {"pool twice", HEAD "\"pools\":[" POOL_P2 "," POOL_P2 "],\"domains\":[]}", -EINVAL,
     "pools[1].name: pool p2 appears twice"},
    {"pool unknown key",
     HEAD "\"pools\":[{\"name\":\"p\",\"cpus\":\"1\",\"policy\":\"rr\",\"params\":{},\"x\":1}],"
          "\"domains\":[]}",
     -EINVAL, "pools[0]: unknown key \"x\""},
};

START_TEST(test_bad_record)
{
    const struct bad_case *c = &bad_cases[_i];
    struct liverec rec;
    char err[256] = "";
    int r = liverec_parse(c->text, strlen(c->text), &rec, err, sizeof(err));

    ck_assert_msg(r == c->ret, "%s: got %d (%s), expected %d", c->what, r, err, c->ret);
    ck_assert_msg(strstr(err, c->msg) != NULL, "%s: message '%s' lacks '%s'", c->what, err, c->msg);
    ck_assert_ptr_null(rec.root);
    ck_assert_ptr_null(rec.doms);
}
END_TEST

/* A pool of every other CPU of 1024: a CPU list longer than any parameter value. */
START_TEST(test_long_cpu_list)
{
    static char text[8192];
    size_t k =
        (size_t)snprintf(text, sizeof(text), HEAD "\"pools\":[{\"name\":\"odd\",\"cpus\":\"");
    struct liverec rec;
    char err[256] = "";

    for (unsigned int c = 1; c < CPUSET_MAX; c += 2)
        k += (size_t)snprintf(text + k, sizeof(text) - k, "%s%u", c > 1 ? "," : "", c);
    k += (size_t)snprintf(text + k, sizeof(text) - k,
                          "\",\"policy\":\"credit\",\"params\":{}}],\"domains\":[]}");
    ck_assert_uint_gt(k, VS_VALUE_SIZE);
    ck_assert_msg(liverec_parse(text, k, &rec, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(cpuset_count(&rec.pools[0].cpus), CPUSET_MAX / 2);
    ck_assert(cpuset_has(&rec.pools[0].cpus, CPUSET_MAX - 1));
    liverec_free(&rec);
}
END_TEST

/* A NUL byte, and a record over the size limit, are refused before parsing. */
START_TEST(test_bad_bytes)
{
    static const char nul[] = "{\"vcpusched_live\":1}\0{}";
    struct liverec rec;
    char err[256] = "";
    char *big = malloc(LIVEREC_MAX_BYTES + 2);

    ck_assert_int_eq(liverec_parse(nul, sizeof(nul) - 1, &rec, err, sizeof(err)), -EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "NUL byte"));
    ck_assert_ptr_nonnull(big);
    memset(big, ' ', LIVEREC_MAX_BYTES + 1);
    big[LIVEREC_MAX_BYTES + 1] = '\0';
    ck_assert_int_eq(liverec_parse(big, LIVEREC_MAX_BYTES + 1, &rec, err, sizeof(err)), -E2BIG);
    free(big);
}
END_TEST

/* Every single byte of a good record cut off: refused, never a crash or a half record. */
START_TEST(test_truncations)
{
    size_t len = strlen(GOOD);

    for (size_t n = 0; n < len; n++) {
        struct liverec rec;
        char err[256] = "";

        ck_assert_msg(liverec_parse(GOOD, n, &rec, err, sizeof(err)) < 0, "%zu bytes accepted", n);
        ck_assert_ptr_null(rec.doms);
    }
}
END_TEST

/* Real processes: this one, a child (another start time), one that exited. */
START_TEST(test_procid)
{
    struct procid self, again, child;
    char boot[PROCID_BOOT_ID_SIZE] = "";
    pid_t pid;
    int status;

    ck_assert_int_eq(procid_read(getpid(), &self), 0);
    ck_assert_int_eq(procid_read(getpid(), &again), 0);
    ck_assert(procid_same(&self, &again));
    ck_assert_str_eq(procid_differs(&self, &again), "");
    ck_assert_uint_ne(self.exe_ino, 0);
    usleep(20000); /* a clock tick (10 ms at USER_HZ 100) at least between the two starts */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pause();
        _exit(0);
    }
    ck_assert_int_eq(procid_read(pid, &child), 0);
    ck_assert_str_eq(procid_differs(&self, &child), "its start time differs");
    child.start_time = self.start_time;
    child.exe_ino++;
    ck_assert_str_eq(procid_differs(&self, &child), "its executable differs");
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(procid_read(pid, &child), -ESRCH);
    ck_assert_int_eq(procid_boot_id(boot, sizeof(boot)), 0);
    ck_assert_uint_eq(strlen(boot), PROCID_BOOT_ID_SIZE - 1);
}
END_TEST

static Suite *
liverec_suite(void)
{
    Suite *s = suite_create("liverec");
    TCase *tc = tcase_create("parse");

    tcase_add_test(tc, test_good_record);
    tcase_add_loop_test(tc, test_bad_record, 0, sizeof(bad_cases) / sizeof(bad_cases[0]));
    tcase_add_test(tc, test_long_cpu_list);
    tcase_add_test(tc, test_bad_bytes);
    tcase_add_test(tc, test_truncations);
    suite_add_tcase(s, tc);
    tc = tcase_create("procid");
    tcase_add_test(tc, test_procid);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(liverec_suite());
}
