/* SPDX-License-Identifier: ISC */
/*
 * test_ctl_proto.c - the control protocol codec: every malformed request
 * of docs/protocol.md is refused with the right errno and a message naming
 * the field; every valid one survives format -> parse unchanged.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "control/ctl_proto.h"
#include "testutil.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* --- Helpers to build long lines at run time. --- */

/* A malloc'd string: `head`, then `n` copies of `unit` joined by `sep`, then `tail`. */
static char *
repeat(const char *head, const char *unit, const char *sep, size_t n, const char *tail)
{
    size_t len = strlen(head) + n * (strlen(unit) + strlen(sep)) + strlen(tail) + 1;
    char *s = malloc(len), *p = s;

    ck_assert_ptr_nonnull(s);
    p += sprintf(p, "%s", head);
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s%s", i > 0 ? sep : "", unit);
    sprintf(p, "%s", tail);
    return s;
}

/* tids [1, 2, ..., n] */
static char *
tids_line(size_t n)
{
    char *s = malloc(n * 10 + 128), *p = s;

    ck_assert_ptr_nonnull(s);
    p += sprintf(p, "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"tids\":[");
    for (size_t i = 1; i <= n; i++)
        p += sprintf(p, "%s%zu", i > 1 ? "," : "", i);
    sprintf(p, "]}}");
    return s;
}

/* n distinct params k0..k(n-1) */
static char *
params_line(size_t n)
{
    char *s = malloc(n * 16 + 128), *p = s;

    ck_assert_ptr_nonnull(s);
    p += sprintf(p, "{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"a\",\"params\":{");
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s\"k%zu\":\"1\"", i > 0 ? "," : "", i);
    sprintf(p, "}}}");
    return s;
}

static char *
gen_name64(void)
{
    return repeat("{\"v\":1,\"cmd\":\"detach\",\"args\":{\"name\":\"", "a", "", 64, "\"}}");
}
static char *
gen_tids1025(void)
{
    return tids_line(1025);
}
static char *
gen_params17(void)
{
    return params_line(17);
}
static char *
gen_qmp108(void)
{
    return repeat("{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"qmp\":\"/", "q", "", 107,
                  "\"}}");
}
static char *
gen_val2048(void)
{
    return repeat("{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"a\",\"params\":{\"k\":\"", "v", "",
                  2048, "\"}}}");
}
static char *
gen_key32(void)
{
    return repeat("{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"a\",\"params\":{\"", "k", "", 32,
                  "\":\"1\"}}}");
}
static char *
gen_cpus_long(void)
{
    return repeat("{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"create\",\"name\":\"p\",\"policy\":"
                  "\"rr\",\"cpus\":\"",
                  "1", "", CPULIST_TEXT_MAX, "\"}}");
}
static char *
gen_line64k(void)
{
    return repeat("{\"v\":1,\"cmd\":\"list\"}", " ", "", CTL_LINE_MAX, "");
}
static char *
gen_deep(void)
{
    return repeat("{\"v\":1,\"cmd\":\"list\",\"args\":", "[", "", 100, "");
}

/* --- Malformed requests. --- */

struct bad_case {
    const char *what;
    const char *line; /* NULL: use gen() */
    size_t len;       /* 0: strlen(line) */
    char *(*gen)(void);
    int err;         /* expected -errno */
    const char *msg; /* expected substring of the message */
};

#define ATTACH(args) "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\"," args "}}"
#define SET(params)  "{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"web1\",\"params\":" params "}}"
#define POOL(args)   "{\"v\":1,\"cmd\":\"pool\",\"args\":{" args "}}"
#define DETACH(name) "{\"v\":1,\"cmd\":\"detach\",\"args\":{\"name\":" name "}}"
#define MOVE(args)   "{\"v\":1,\"cmd\":\"move\",\"args\":{\"name\":\"web1\"" args "}}"
#define HOOK(args)   "{\"v\":1,\"cmd\":\"hook\",\"args\":{\"name\":\"web1\"" args "}}"

static const struct bad_case bad_cases[] = {
    /* Framing: not JSON, not an object, trailing garbage, NUL, size. */
    {"empty line", "", 0, NULL, -EPROTO, "not JSON"},
    {"blank line", "   ", 0, NULL, -EPROTO, "not JSON"},
    {"not json", "hello", 0, NULL, -EPROTO, "not JSON"},
    {"truncated", "{\"v\":1,", 0, NULL, -EPROTO, "not JSON"},
    {"single quotes", "{\"v\":1,\"cmd\":'list'}", 0, NULL, -EPROTO, "not JSON"},
    {"trailing comma", "{\"v\":1,\"cmd\":\"list\",}", 0, NULL, -EPROTO, "not JSON"},
    {"bad utf-8", "{\"v\":1,\"cmd\":\"list\",\"x\":\"\xff\xfe\"}", 0, NULL, -EPROTO, "not JSON"},
    {"nesting too deep", NULL, 0, gen_deep, -EPROTO, "not JSON"},
    {"array", "[1,2]", 0, NULL, -EPROTO, "not a JSON object"},
    {"number", "42", 0, NULL, -EPROTO, "not a JSON object"},
    {"string", "\"list\"", 0, NULL, -EPROTO, "not a JSON object"},
    {"null", "null", 0, NULL, -EPROTO, "not a JSON object"},
    {"trailing garbage", "{\"v\":1,\"cmd\":\"list\"} x", 0, NULL, -EPROTO, "trailing"},
    {"two objects", "{\"v\":1,\"cmd\":\"list\"}{}", 0, NULL, -EPROTO, "trailing"},
    {"raw NUL inside", "{\"v\":1,\"cmd\":\"list\"}\0", 22, NULL, -EPROTO, "NUL byte"},
    {"raw NUL in a string", "{\"v\":1,\"cmd\":\"li\0st\"}", 21, NULL, -EPROTO, "NUL byte"},
    {"line of 64 KiB", NULL, 0, gen_line64k, -E2BIG, "longer than 65536"},
    /* Version. */
    {"v missing", "{\"cmd\":\"list\"}", 0, NULL, -EINVAL, "v: missing"},
    {"v a string", "{\"v\":\"1\",\"cmd\":\"list\"}", 0, NULL, -EINVAL, "v: must be an integer"},
    {"v a double", "{\"v\":1.0,\"cmd\":\"list\"}", 0, NULL, -EINVAL, "v: must be an integer"},
    {"v null", "{\"v\":null,\"cmd\":\"list\"}", 0, NULL, -EINVAL, "v: must be an integer"},
    {"v 2", "{\"v\":2,\"cmd\":\"list\"}", 0, NULL, -EPROTO, "version 2 is not supported"},
    {"v 0", "{\"v\":0,\"cmd\":\"list\"}", 0, NULL, -EPROTO, "version 0"},
    {"v huge", "{\"v\":99999999999999999999,\"cmd\":\"list\"}", 0, NULL, -EPROTO, "not supported"},
    /* Command. */
    {"cmd missing", "{\"v\":1}", 0, NULL, -EINVAL, "cmd: missing"},
    {"cmd a number", "{\"v\":1,\"cmd\":3}", 0, NULL, -EINVAL, "cmd: must be a string"},
    {"cmd unknown", "{\"v\":1,\"cmd\":\"reboot\"}", 0, NULL, -EINVAL, "unknown command \"reboot\""},
    {"cmd wrong case", "{\"v\":1,\"cmd\":\"LIST\"}", 0, NULL, -EINVAL, "unknown command"},
    {"cmd empty", "{\"v\":1,\"cmd\":\"\"}", 0, NULL, -EINVAL, "unknown command"},
    {"cmd with \\u0000", "{\"v\":1,\"cmd\":\"list\\u0000x\"}", 0, NULL, -EINVAL,
     "unknown command \"list\\x00x\""},
    {"cmd escape in message", "{\"v\":1,\"cmd\":\"\\u001b[31m\"}", 0, NULL, -EINVAL,
     "\"\\x1b[31m\""},
    /* Keys and args. */
    {"unknown top key", "{\"v\":1,\"cmd\":\"list\",\"verbose\":true}", 0, NULL, -EINVAL,
     "request: unknown key \"verbose\""},
    {"args not object", "{\"v\":1,\"cmd\":\"detach\",\"args\":[\"web1\"]}", 0, NULL, -EINVAL,
     "args: must be an object"},
    {"args null", "{\"v\":1,\"cmd\":\"list\",\"args\":null}", 0, NULL, -EINVAL,
     "args: must be an object"},
    {"args missing", "{\"v\":1,\"cmd\":\"detach\"}", 0, NULL, -EINVAL, "args: missing"},
    {"list with an arg", "{\"v\":1,\"cmd\":\"list\",\"args\":{\"all\":true}}", 0, NULL, -EINVAL,
     "args: unknown key \"all\""},
    {"detach extra key", "{\"v\":1,\"cmd\":\"detach\",\"args\":{\"name\":\"a\",\"force\":true}}", 0,
     NULL, -EINVAL, "unknown key \"force\""},
    {"attach typo key", ATTACH("\"pids\":[1]"), 0, NULL, -EINVAL, "unknown key \"pids\""},
    {"any_process not a bool", ATTACH("\"pid\":5,\"any_process\":1"), 0, NULL, -EINVAL,
     "any_process: must be true or false"},
    {"any_process with qmp", ATTACH("\"qmp\":\"/q\",\"any_process\":true"), 0, NULL, -EINVAL,
     "any_process: only with pid or tids"},
    {"help unknown key", "{\"v\":1,\"cmd\":\"help\",\"args\":{\"name\":\"rr\"}}", 0, NULL, -EINVAL,
     "args: unknown key \"name\""},
    {"help bad policy", "{\"v\":1,\"cmd\":\"help\",\"args\":{\"policy\":\"Credit\"}}", 0, NULL,
     -EINVAL, "policy: \"Credit\" has a character outside [a-z0-9_]"},
    /* Names. */
    {"name missing", "{\"v\":1,\"cmd\":\"detach\",\"args\":{}}", 0, NULL, -EINVAL, "name: missing"},
    {"name a number", DETACH("5"), 0, NULL, -EINVAL, "name: must be a string"},
    {"name empty", DETACH("\"\""), 0, NULL, -EINVAL, "name: must not be empty"},
    {"name blank", DETACH("\"web 1\""), 0, NULL, -EINVAL,
     "name: \"web 1\" has a character outside [A-Za-z0-9_.:+@-]"},
    {"name slash", DETACH("\"../x\""), 0, NULL, -EINVAL, "outside"},
    {"name utf-8", DETACH("\"w\xc3\xa9\""), 0, NULL, -EINVAL, "\"w\\xc3\\xa9\" has a character"},
    {"name control", DETACH("\"a\\nb\""), 0, NULL, -EINVAL, "\"a\\x0ab\""},
    {"name \\u0000", DETACH("\"a\\u0000b\""), 0, NULL, -EINVAL, "name: contains a NUL"},
    {"name 64 bytes", NULL, 0, gen_name64, -EINVAL, "name: longer than 63 bytes"},
    /* Attach targets. */
    {"attach no target", ATTACH("\"pool\":\"main\""), 0, NULL, -EINVAL,
     "attach needs one of pid, tids, qmp, libvirt"},
    {"attach pid and qmp", ATTACH("\"pid\":5,\"qmp\":\"/q\""), 0, NULL, -EINVAL,
     "pid and qmp: give only one"},
    {"attach tids and libvirt", ATTACH("\"tids\":[5],\"libvirt\":\"x\""), 0, NULL, -EINVAL,
     "give only one"},
    {"pid 0", ATTACH("\"pid\":0"), 0, NULL, -EINVAL, "pid: 0 is out of range [1, 4194304]"},
    {"pid negative", ATTACH("\"pid\":-5"), 0, NULL, -EINVAL, "pid: -5 is out of range"},
    {"pid too big", ATTACH("\"pid\":4194305"), 0, NULL, -EINVAL, "pid: 4194305 is out of range"},
    {"pid overflow", ATTACH("\"pid\":99999999999999999999999"), 0, NULL, -EINVAL, "pid:"},
    {"pid a string", ATTACH("\"pid\":\"5\""), 0, NULL, -EINVAL, "pid: must be an integer"},
    {"pid a double", ATTACH("\"pid\":5.5"), 0, NULL, -EINVAL, "pid: must be an integer"},
    {"pid exponent", ATTACH("\"pid\":1e3"), 0, NULL, -EINVAL, "pid: must be an integer"},
    {"pid null", ATTACH("\"pid\":null"), 0, NULL, -EINVAL, "pid: must be an integer"},
    {"tids not array", ATTACH("\"tids\":5"), 0, NULL, -EINVAL, "tids: must be an array"},
    {"tids empty", ATTACH("\"tids\":[]"), 0, NULL, -EINVAL, "tids: must not be empty"},
    {"tids 1025", NULL, 0, gen_tids1025, -E2BIG, "tids: more than 1024"},
    {"tids zero", ATTACH("\"tids\":[1,0]"), 0, NULL, -EINVAL, "tids[1]: 0 is out of range"},
    {"tids negative", ATTACH("\"tids\":[-1]"), 0, NULL, -EINVAL, "tids[0]: -1 is out of range"},
    {"tids duplicate", ATTACH("\"tids\":[7,8,9,8]"), 0, NULL, -EINVAL, "tids: 8 appears twice"},
    {"tids string", ATTACH("\"tids\":[1,\"2\"]"), 0, NULL, -EINVAL, "tids[1]: must be an integer"},
    {"tids double", ATTACH("\"tids\":[1.5]"), 0, NULL, -EINVAL, "tids[0]: must be an integer"},
    {"tids nested", ATTACH("\"tids\":[[1]]"), 0, NULL, -EINVAL, "tids[0]: must be an integer"},
    {"qmp relative", ATTACH("\"qmp\":\"run/q.sock\""), 0, NULL, -EINVAL,
     "qmp: must be an absolute path"},
    {"qmp empty", ATTACH("\"qmp\":\"\""), 0, NULL, -EINVAL, "qmp: must not be empty"},
    {"qmp 108 bytes", NULL, 0, gen_qmp108, -EINVAL, "qmp: longer than 107 bytes"},
    {"qmp control", ATTACH("\"qmp\":\"/a\\tb\""), 0, NULL, -EINVAL,
     "qmp: \"/a\\x09b\" has a character outside printable"},
    {"qmp a number", ATTACH("\"qmp\":7"), 0, NULL, -EINVAL, "qmp: must be a string"},
    {"libvirt bad", ATTACH("\"libvirt\":\"my vm\""), 0, NULL, -EINVAL,
     "libvirt: \"my vm\" has a character"},
    {"pool bad", ATTACH("\"pid\":5,\"pool\":\"a/b\""), 0, NULL, -EINVAL, "pool: \"a/b\""},
    /* Params. */
    {"params not object", SET("[\"weight=5\"]"), 0, NULL, -EINVAL, "params: must be an object"},
    {"params a string", SET("\"weight=5\""), 0, NULL, -EINVAL, "params: must be an object"},
    {"param value a number", SET("{\"weight\":512}"), 0, NULL, -EINVAL,
     "params.weight: must be a string"},
    {"param value bool", SET("{\"boost\":true}"), 0, NULL, -EINVAL,
     "params.boost: must be a string"},
    {"param value null", SET("{\"cap\":null}"), 0, NULL, -EINVAL, "params.cap: must be a string"},
    {"param value object", SET("{\"cap\":{}}"), 0, NULL, -EINVAL, "params.cap: must be a string"},
    {"param value empty", SET("{\"cap\":\"\"}"), 0, NULL, -EINVAL, "params.cap: must not be empty"},
    {"param value control", SET("{\"cap\":\"1\\n2\"}"), 0, NULL, -EINVAL,
     "params.cap: \"1\\x0a2\""},
    {"param value \\u0000", SET("{\"cap\":\"1\\u00002\"}"), 0, NULL, -EINVAL,
     "params.cap: contains a NUL"},
    {"param value 2048", NULL, 0, gen_val2048, -EINVAL, "params.k: longer than 2047 bytes"},
    {"param key upper", SET("{\"Weight\":\"5\"}"), 0, NULL, -EINVAL,
     "params: key \"Weight\" has a character outside [a-z0-9_]"},
    {"param key dash", SET("{\"w-x\":\"5\"}"), 0, NULL, -EINVAL, "params: key \"w-x\""},
    {"param key empty", SET("{\"\":\"5\"}"), 0, NULL, -EINVAL,
     "params: key \"\" is not 1..31 bytes"},
    {"param key 32", NULL, 0, gen_key32, -EINVAL, "is not 1..31 bytes"},
    {"params 17", NULL, 0, gen_params17, -E2BIG, "params: more than 16 keys"},
    {"set params missing", "{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"a\"}}", 0, NULL, -EINVAL,
     "params: missing"},
    {"set params empty", SET("{}"), 0, NULL, -EINVAL, "params: must not be empty"},
    {"set name missing", "{\"v\":1,\"cmd\":\"set\",\"args\":{\"params\":{\"a\":\"1\"}}}", 0, NULL,
     -EINVAL, "name: missing"},
    /* Pool operations. */
    {"pool args missing", "{\"v\":1,\"cmd\":\"pool\"}", 0, NULL, -EINVAL, "args: missing"},
    {"pool op missing", POOL("\"name\":\"p\""), 0, NULL, -EINVAL, "op: missing"},
    {"pool op number", POOL("\"op\":1"), 0, NULL, -EINVAL, "op: must be a string"},
    {"pool op unknown", POOL("\"op\":\"resize\""), 0, NULL, -EINVAL,
     "op: unknown pool operation \"resize\""},
    {"pool list extra", POOL("\"op\":\"list\",\"name\":\"p\""), 0, NULL, -EINVAL,
     "pool list: unknown key \"name\""},
    {"pool create no name", POOL("\"op\":\"create\",\"cpus\":\"1\",\"policy\":\"rr\""), 0, NULL,
     -EINVAL, "name: missing"},
    {"pool create no cpus", POOL("\"op\":\"create\",\"name\":\"p\",\"policy\":\"rr\""), 0, NULL,
     -EINVAL, "cpus: missing"},
    {"pool create no policy", POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"1\""), 0, NULL,
     -EINVAL, "policy: missing"},
    {"pool create bad policy",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"1\",\"policy\":\"Credit\""), 0, NULL,
     -EINVAL, "policy: \"Credit\""},
    {"pool create cpus syntax",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"1-\",\"policy\":\"rr\""), 0, NULL, -EINVAL,
     "cpus: expected a CPU number"},
    {"pool create cpus descending",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"3-1\",\"policy\":\"rr\""), 0, NULL, -EINVAL,
     "cpus: range 3-1 is descending"},
    {"pool create cpus twice",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"1-3,2\",\"policy\":\"rr\""), 0, NULL,
     -EINVAL, "cpus: CPU 2 is listed twice"},
    {"pool create cpus empty item",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"1,,2\",\"policy\":\"rr\""), 0, NULL, -EINVAL,
     "cpus: expected"},
    {"pool create cpus letters",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"1a\",\"policy\":\"rr\""), 0, NULL, -EINVAL,
     "cpus: unexpected 'a'"},
    {"pool create cpus 1025",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"0-1024\",\"policy\":\"rr\""), 0, NULL,
     -EINVAL, "cpus: CPU 1024 is beyond 1023"},
    {"pool create cpus huge",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":\"99999\",\"policy\":\"rr\""), 0, NULL,
     -EINVAL, "cpus: CPU 99999 is beyond 1023"},
    {"pool create cpus too long", NULL, 0, gen_cpus_long, -EINVAL, "cpus: longer than 5119 bytes"},
    {"pool create cpus number",
     POOL("\"op\":\"create\",\"name\":\"p\",\"cpus\":1,\"policy\":\"rr\""), 0, NULL, -EINVAL,
     "cpus: must be a string"},
    {"pool set nothing", POOL("\"op\":\"set\",\"name\":\"p\""), 0, NULL, -EINVAL,
     "pool set needs cpus, a policy or params"},
    {"pool set cpus and policy",
     POOL("\"op\":\"set\",\"name\":\"p\",\"cpus\":\"1\",\"policy\":\"rr\""), 0, NULL, -EINVAL,
     "pool set: cpus change alone"},
    {"pool set cpus and params",
     POOL("\"op\":\"set\",\"name\":\"p\",\"cpus\":\"1\",\"params\":{\"a\":\"1\"}"), 0, NULL,
     -EINVAL, "pool set: cpus change alone"},
    {"pool set cpus empty", POOL("\"op\":\"set\",\"name\":\"p\",\"cpus\":\"\""), 0, NULL, -EINVAL,
     "cpus: "},
    {"pool set cpus bad", POOL("\"op\":\"set\",\"name\":\"p\",\"cpus\":\"3-1\""), 0, NULL, -EINVAL,
     "cpus: "},
    {"pool set bad params", POOL("\"op\":\"set\",\"name\":\"p\",\"params\":{\"x\":1}"), 0, NULL,
     -EINVAL, "params.x: must be a string"},
    {"pool destroy no name", POOL("\"op\":\"destroy\""), 0, NULL, -EINVAL, "name: missing"},
    /* Move and the hook's message. */
    {"move no pool", MOVE(""), 0, NULL, -EINVAL, "pool: missing"},
    {"move bad pool", MOVE(",\"pool\":\"a b\""), 0, NULL, -EINVAL, "pool: \"a b\" has a character"},
    {"move extra key", MOVE(",\"pool\":\"p\",\"tids\":[1]"), 0, NULL, -EINVAL,
     "args: unknown key \"tids\""},
    {"move params a string", MOVE(",\"pool\":\"p\",\"params\":\"w=1\""), 0, NULL, -EINVAL,
     "params: must be an object"},
    {"hook no op", HOOK(""), 0, NULL, -EINVAL, "op: missing"},
    {"hook unknown op", HOOK(",\"op\":\"migrate\""), 0, NULL, -EINVAL,
     "op: unknown hook operation \"migrate\""},
    {"hook op number", HOOK(",\"op\":1"), 0, NULL, -EINVAL, "op: must be a string"},
    {"hook xml empty", HOOK(",\"op\":\"started\",\"xml\":\"\""), 0, NULL, -EINVAL,
     "xml: must not be empty"},
    {"hook xml escape byte", HOOK(",\"op\":\"started\",\"xml\":\"<a>\\u001b</a>\""), 0, NULL,
     -EINVAL, "xml: \"<a>\\x1b</a>\" has a character outside printable characters, tab"},
    {"hook xml NUL", HOOK(",\"op\":\"started\",\"xml\":\"<a>\\u0000</a>\""), 0, NULL, -EINVAL,
     "xml: contains a NUL"},
    {"hook bad name", "{\"v\":1,\"cmd\":\"hook\",\"args\":{\"name\":\"a/b\",\"op\":\"started\"}}",
     0, NULL, -EINVAL, "name: \"a/b\""},
    {"pool destroy extra", POOL("\"op\":\"destroy\",\"name\":\"p\",\"policy\":\"rr\""), 0, NULL,
     -EINVAL, "pool destroy: unknown key \"policy\""},
};

START_TEST(test_request_malformed)
{
    const struct bad_case *c = &bad_cases[_i];
    char *owned = c->gen != NULL ? c->gen() : NULL;
    const char *line = owned != NULL ? owned : c->line;
    size_t len = c->len != 0 ? c->len : strlen(line);
    struct ctl_request *req = malloc(sizeof(*req));
    char err[CTL_ERRLEN] = "";
    int r;

    ck_assert_ptr_nonnull(req);
    r = ctl_request_parse(line, len, req, err, sizeof(err));
    ck_assert_msg(r == c->err, "%s: got %d (%s), expected %d", c->what, r, err, c->err);
    ck_assert_msg(strstr(err, c->msg) != NULL, "%s: message '%s' lacks '%s'", c->what, err, c->msg);
    for (const char *p = err; *p != '\0'; p++)
        ck_assert_msg((unsigned char)*p >= 0x20 && *p != 0x7f, "%s: raw control byte in '%s'",
                      c->what, err);
    free(req);
    free(owned);
}
END_TEST

/* --- Valid requests: parse, format, parse again. --- */

struct good_case {
    const char *what;
    const char *line;
    const char *canonical; /* what ctl_request_format writes back (without '\n') */
};

static const struct good_case good_cases[] = {
    {"version", "{\"v\":1,\"cmd\":\"version\"}", "{\"v\":1,\"cmd\":\"version\"}"},
    {"list with empty args, blanks and newline",
     " {\"cmd\": \"list\", \"v\": 1, \"args\": {}}\t\r\n", "{\"v\":1,\"cmd\":\"list\"}"},
    {"stats", "{\"v\":1,\"cmd\":\"stats\"}", "{\"v\":1,\"cmd\":\"stats\"}"},
    {"help", "{\"v\":1,\"cmd\":\"help\"}", "{\"v\":1,\"cmd\":\"help\",\"args\":{}}"},
    {"help policy", "{\"v\":1,\"cmd\":\"help\",\"args\":{\"policy\":\"credit2\"}}",
     "{\"v\":1,\"cmd\":\"help\",\"args\":{\"policy\":\"credit2\"}}"},
    {"pool set cpus", POOL("\"cpus\":\"2-5,7\",\"name\":\"main\",\"op\":\"set\""),
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"set\",\"name\":\"main\",\"cpus\":\"2-5,7\"}}"},
    {"move", MOVE(",\"pool\":\"p2\""),
     "{\"v\":1,\"cmd\":\"move\",\"args\":{\"name\":\"web1\",\"pool\":\"p2\"}}"},
    {"move params", MOVE(",\"params\":{\"weight\":\"128\"},\"pool\":\"p2\""),
     "{\"v\":1,\"cmd\":\"move\",\"args\":{\"name\":\"web1\",\"pool\":\"p2\",\"params\":{"
     "\"weight\":\"128\"}}}"},
    {"hook stopped, no xml", HOOK(",\"op\":\"stopped\""),
     "{\"v\":1,\"cmd\":\"hook\",\"args\":{\"name\":\"web1\",\"op\":\"stopped\"}}"},
    {"hook started, xml with line ends",
     HOOK(",\"xml\":\"<domain>\\n\\t<name>x</name>\\r\\n</domain>\",\"op\":\"started\""),
     "{\"v\":1,\"cmd\":\"hook\",\"args\":{\"name\":\"web1\",\"op\":\"started\",\"xml\":"
     "\"<domain>\\n\\t<name>x</name>\\r\\n</domain>\"}}"},
    {"attach pid", ATTACH("\"pid\":4242"),
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"pid\":4242}}"},
    {"attach tids pool params",
     ATTACH("\"tids\":[4250,4251,4194304],\"pool\":\"main\",\"params\":{\"weight\":\"512\",\"cap\":"
            "\"50\"}"),
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"tids\":[4250,4251,4194304],"
     "\"pool\":"
     "\"main\",\"params\":{\"weight\":\"512\",\"cap\":\"50\"}}}"},
    {"attach pid any_process", ATTACH("\"pid\":4242,\"any_process\":true"),
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"pid\":4242,\"any_process\":true}}"},
    {"attach pid any_process false", ATTACH("\"pid\":4242,\"any_process\":false"),
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"pid\":4242}}"},
    {"attach qmp", ATTACH("\"qmp\":\"/run/vm/web1 (copy).qmp\""),
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"qmp\":\"/run/vm/web1 "
     "(copy).qmp\"}}"},
    {"attach libvirt",
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"libvirt\":\"Web-1.x:y+z@h\",\"name\":\"Web-1.x:y+z@h_"
     "\"}}",
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"Web-1.x:y+z@h_\",\"libvirt\":\"Web-1.x:y+z@"
     "h\"}}"},
    {"attach params utf-8 value", ATTACH("\"pid\":1,\"params\":{\"table\":\"caf\xc3\xa9\"}"),
     "{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"web1\",\"pid\":1,\"params\":{\"table\":"
     "\"caf\xc3\xa9\"}}}"},
    {"detach", DETACH("\"web1\""), "{\"v\":1,\"cmd\":\"detach\",\"args\":{\"name\":\"web1\"}}"},
    {"set", SET("{\"weight\":\"512\"}"),
     "{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"web1\",\"params\":{\"weight\":\"512\"}}}"},
    {"pool list", POOL("\"op\":\"list\""), "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"list\"}}"},
    {"pool create",
     POOL("\"op\":\"create\",\"name\":\"p2\",\"cpus\":\"2-3,5\",\"policy\":\"credit2\",\"params\":{"
          "\"ratelimit_us\":\"500\"}"),
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"create\",\"name\":\"p2\",\"cpus\":\"2-3,5\","
     "\"policy\":"
     "\"credit2\",\"params\":{\"ratelimit_us\":\"500\"}}}"},
    {"pool set policy", POOL("\"op\":\"set\",\"name\":\"main\",\"policy\":\"credit2\""),
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"set\",\"name\":\"main\",\"policy\":\"credit2\"}"
     "}"},
    {"pool set params", POOL("\"op\":\"set\",\"name\":\"main\",\"params\":{\"tslice_ms\":\"10\"}"),
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"set\",\"name\":\"main\",\"params\":{\"tslice_"
     "ms\":\"10\"}}}"},
    {"pool destroy", POOL("\"op\":\"destroy\",\"name\":\"p2\""),
     "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"destroy\",\"name\":\"p2\"}}"},
};

static void
assert_same_request(const struct ctl_request *a, const struct ctl_request *b)
{
    ck_assert_int_eq(a->cmd, b->cmd);
    ck_assert_int_eq(a->pool_op, b->pool_op);
    ck_assert_str_eq(a->name, b->name);
    ck_assert_str_eq(a->pool, b->pool);
    ck_assert_str_eq(a->policy, b->policy);
    ck_assert_str_eq(a->cpus, b->cpus);
    ck_assert_int_eq(a->target, b->target);
    ck_assert_int_eq(a->pid, b->pid);
    ck_assert_uint_eq(a->nr_tids, b->nr_tids);
    ck_assert_mem_eq(a->tids, b->tids, a->nr_tids * sizeof(pid_t));
    ck_assert_str_eq(a->qmp, b->qmp);
    ck_assert_str_eq(a->libvirt, b->libvirt);
    ck_assert_int_eq(a->hook_op, b->hook_op);
    ck_assert_str_eq(a->xml, b->xml);
    ck_assert_uint_eq(a->nr_params, b->nr_params);
    for (size_t i = 0; i < a->nr_params; i++) {
        ck_assert_str_eq(a->params[i].key, b->params[i].key);
        ck_assert_str_eq(a->params[i].val, b->params[i].val);
    }
}

START_TEST(test_request_roundtrip)
{
    const struct good_case *c = &good_cases[_i];
    struct ctl_request *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    char err[CTL_ERRLEN] = "", *line;
    size_t n;
    int r;

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    r = ctl_request_parse(c->line, strlen(c->line), a, err, sizeof(err));
    ck_assert_msg(r == 0, "%s: %s", c->what, err);
    line = ctl_request_format(a);
    ck_assert_ptr_nonnull(line);
    n = strlen(line);
    ck_assert_msg(n > 0 && line[n - 1] == '\n', "%s: no newline", c->what);
    ck_assert_msg(strncmp(line, c->canonical, n - 1) == 0 && strlen(c->canonical) == n - 1,
                  "%s:\n got %s\nwant %s", c->what, line, c->canonical);
    r = ctl_request_parse(line, n, b, err, sizeof(err));
    ck_assert_msg(r == 0, "%s: reparse: %s", c->what, err);
    assert_same_request(a, b);
    free(line);
    free(a);
    free(b);
}
END_TEST

/* Requests built by hand (as vcpuschedctl and the hook do), for every command. */
START_TEST(test_request_built_roundtrip)
{
    static const struct {
        enum ctl_cmd cmd;
        enum ctl_pool_op op;
        enum ctl_target target;
    } shapes[] = {
        {CTL_VERSION, 0, 0},
        {CTL_ATTACH, 0, CTL_TARGET_PID},
        {CTL_ATTACH, 0, CTL_TARGET_TIDS},
        {CTL_ATTACH, 0, CTL_TARGET_QMP},
        {CTL_ATTACH, 0, CTL_TARGET_LIBVIRT},
        {CTL_DETACH, 0, 0},
        {CTL_SET, 0, 0},
        {CTL_LIST, 0, 0},
        {CTL_STATS, 0, 0},
        {CTL_POOL, CTL_POOL_LIST, 0},
        {CTL_POOL, CTL_POOL_CREATE, 0},
        {CTL_POOL, CTL_POOL_SET, 0},
        {CTL_POOL, CTL_POOL_DESTROY, 0},
        {CTL_MOVE, 0, 0},
        {CTL_HOOK, 0, 0},
    };
    struct ctl_request *a = calloc(1, sizeof(*a)), *b = malloc(sizeof(*b));
    char err[CTL_ERRLEN] = "", *line;
    int r;

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    a->cmd = shapes[_i].cmd;
    a->pool_op = shapes[_i].op;
    a->target = shapes[_i].target;
    if (a->cmd == CTL_ATTACH || a->cmd == CTL_DETACH || a->cmd == CTL_SET || a->cmd == CTL_MOVE ||
        a->cmd == CTL_HOOK || (a->cmd == CTL_POOL && a->pool_op != CTL_POOL_LIST))
        strcpy(a->name, "vm.1");
    if (a->cmd == CTL_ATTACH || a->cmd == CTL_MOVE)
        strcpy(a->pool, "fast");
    if (a->cmd == CTL_HOOK) {
        a->hook_op = CTL_HOOK_RELEASE;
        strcpy(a->xml, "<domain>\n  <name>vm.1</name>\t\\\"</domain>\r\n");
    }
    if (a->target == CTL_TARGET_PID)
        a->pid = 1234;
    for (unsigned int i = 0; a->target == CTL_TARGET_TIDS && i < VS_THREADS_MAX; i++)
        a->tids[a->nr_tids++] = (pid_t)(VS_THREADS_MAX - i); /* order kept: vCPU index */
    if (a->target == CTL_TARGET_QMP)
        strcpy(a->qmp, "/run/qemu/vm.1.qmp");
    if (a->target == CTL_TARGET_LIBVIRT)
        strcpy(a->libvirt, "vm.1");
    if (a->cmd == CTL_POOL && a->pool_op == CTL_POOL_CREATE) {
        strcpy(a->cpus, "1,3-4");
        strcpy(a->policy, "credit");
    }
    if (a->cmd == CTL_POOL && a->pool_op == CTL_POOL_SET)
        strcpy(a->policy, "credit2");
    if (a->cmd == CTL_ATTACH || a->cmd == CTL_SET || a->cmd == CTL_MOVE ||
        (a->cmd == CTL_POOL && a->pool_op >= CTL_POOL_CREATE)) {
        for (int i = 0; i < VS_PARAMS_MAX && a->pool_op != CTL_POOL_DESTROY; i++) {
            char k[8], v[8];

            snprintf(k, sizeof(k), "k%d", i);
            snprintf(v, sizeof(v), "%d", i * 7);
            ck_assert_int_eq(ctl_request_add_param(a, k, v, err, sizeof(err)), 0);
        }
    }
    line = ctl_request_format(a);
    ck_assert_ptr_nonnull(line);
    r = ctl_request_parse(line, strlen(line), b, err, sizeof(err));
    ck_assert_msg(r == 0, "shape %d: %s: %s", _i, line, err);
    assert_same_request(a, b);
    free(line);
    free(a);
    free(b);
}
END_TEST

/* The longest valid values of each kind are accepted (limits are inclusive). */
START_TEST(test_request_limits_inclusive)
{
    struct ctl_request *req = malloc(sizeof(*req));
    char err[CTL_ERRLEN] = "", *line;

    ck_assert_ptr_nonnull(req);
    line = repeat("{\"v\":1,\"cmd\":\"detach\",\"args\":{\"name\":\"", "a", "", 63, "\"}}");
    ck_assert_msg(ctl_request_parse(line, strlen(line), req, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(strlen(req->name), 63);
    free(line);
    line = tids_line(VS_THREADS_MAX);
    ck_assert_msg(ctl_request_parse(line, strlen(line), req, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(req->nr_tids, VS_THREADS_MAX);
    ck_assert_int_eq(req->tids[VS_THREADS_MAX - 1], VS_THREADS_MAX);
    free(line);
    line = params_line(VS_PARAMS_MAX);
    ck_assert_msg(ctl_request_parse(line, strlen(line), req, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(req->nr_params, VS_PARAMS_MAX);
    free(line);
    line = repeat("{\"v\":1,\"cmd\":\"set\",\"args\":{\"name\":\"a\",\"params\":{\"k\":\"", "v", "",
                  VS_VALUE_SIZE - 1, "\"}}}");
    ck_assert_msg(ctl_request_parse(line, strlen(line), req, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(strlen(req->params[0].val), VS_VALUE_SIZE - 1);
    free(line);
    line = repeat("{\"v\":1,\"cmd\":\"attach\",\"args\":{\"name\":\"a\",\"qmp\":\"/", "q", "", 106,
                  "\"}}");
    ck_assert_msg(ctl_request_parse(line, strlen(line), req, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(strlen(req->qmp), 107);
    free(line);
    /* A line of 65535 bytes plus its newline is exactly the limit. */
    line = repeat("{\"v\":1,\"cmd\":\"list\"}", " ", "", CTL_LINE_MAX - 1 - 20, "");
    ck_assert_uint_eq(strlen(line), CTL_LINE_MAX - 1);
    ck_assert_msg(ctl_request_parse(line, strlen(line), req, err, sizeof(err)) == 0, "%s", err);
    free(line);
    free(req);
}
END_TEST

/* A failed parse leaves no stale fields from a previous request. */
START_TEST(test_request_parse_resets)
{
    static const char a[] = ATTACH("\"tids\":[5,6],\"params\":{\"w\":\"1\"}");
    static const char l[] = "{\"v\":1,\"cmd\":\"list\"}";
    struct ctl_request *req = malloc(sizeof(*req));
    char err[CTL_ERRLEN];

    ck_assert_ptr_nonnull(req);
    ck_assert_int_eq(ctl_request_parse(a, strlen(a), req, err, sizeof(err)), 0);
    ck_assert_int_eq(ctl_request_parse(l, strlen(l), req, err, sizeof(err)), 0);
    ck_assert_int_eq(req->cmd, CTL_LIST);
    ck_assert_uint_eq(req->nr_tids, 0);
    ck_assert_uint_eq(req->nr_params, 0);
    ck_assert_str_eq(req->name, "");
    free(req);
}
END_TEST

START_TEST(test_request_readonly)
{
    struct ctl_request req;

    memset(&req, 0, sizeof(req.cmd) + sizeof(req.pool_op));
    for (int c = CTL_VERSION; c <= CTL_HOOK; c++) {
        req.cmd = (enum ctl_cmd)c;
        req.pool_op = CTL_POOL_LIST;
        ck_assert_int_eq(ctl_request_is_readonly(&req), c == CTL_VERSION || c == CTL_LIST ||
                                                            c == CTL_STATS || c == CTL_POOL ||
                                                            c == CTL_HELP);
    }
    for (int op = CTL_POOL_CREATE; op <= CTL_POOL_DESTROY; op++) {
        req.cmd = CTL_POOL;
        req.pool_op = (enum ctl_pool_op)op;
        ck_assert(!ctl_request_is_readonly(&req));
    }
    ck_assert_str_eq(ctl_request_name(&req), "pool destroy");
}
END_TEST

START_TEST(test_request_add_param_limits)
{
    struct ctl_request *req = calloc(1, sizeof(*req));
    char err[CTL_ERRLEN], *big = repeat("", "x", "", VS_VALUE_SIZE, "");

    ck_assert_ptr_nonnull(req);
    ck_assert_int_eq(ctl_request_add_param(req, "k", big, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(
        ctl_request_add_param(req, "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", "1", err, sizeof(err)),
        -EINVAL);
    for (int i = 0; i < VS_PARAMS_MAX; i++)
        ck_assert_int_eq(ctl_request_add_param(req, "k", "1", err, sizeof(err)), 0);
    ck_assert_int_eq(ctl_request_add_param(req, "k", "1", err, sizeof(err)), -E2BIG);
    ck_assert_uint_eq(req->nr_params, VS_PARAMS_MAX);
    free(big);
    free(req);
}
END_TEST

/* --- Responses. --- */

START_TEST(test_response_ok)
{
    struct json_object *res = json_object_new_object(), *got;
    char msg[CTL_ERRLEN];
    int errnum = -1;
    char *line;

    json_object_object_add(res, "version", json_object_new_string("0.1.0"));
    line = ctl_response_format_ok(res);
    ck_assert_str_eq(line, "{\"v\":1,\"ok\":true,\"result\":{\"version\":\"0.1.0\"}}\n");
    ck_assert_int_eq(ctl_response_parse(line, strlen(line), &got, &errnum, msg, sizeof(msg)), 0);
    ck_assert_int_eq(errnum, 0);
    ck_assert_str_eq(json_object_get_string(json_object_object_get(got, "version")), "0.1.0");
    json_object_put(got);
    free(line);
    line = ctl_response_format_ok(NULL);
    ck_assert_str_eq(line, "{\"v\":1,\"ok\":true,\"result\":{}}\n");
    free(line);
}
END_TEST

START_TEST(test_response_error)
{
    struct json_object *got = (struct json_object *)1;
    char msg[CTL_ERRLEN];
    int errnum;
    char *line;

    line = ctl_response_format_error(-EINVAL, "weight: 0 is out of range [1, 65535]");
    ck_assert_str_eq(line, "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"EINVAL\",\"message\":"
                           "\"weight: 0 is out of range [1, 65535]\"}}\n");
    ck_assert_int_eq(ctl_response_parse(line, strlen(line), &got, &errnum, msg, sizeof(msg)), 0);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(errnum, EINVAL);
    ck_assert_str_eq(msg, "weight: 0 is out of range [1, 65535]");
    free(line);
    /* No message: the errno's description; unknown errno: EIO. */
    line = ctl_response_format_error(EBUSY, NULL);
    ck_assert_ptr_nonnull(strstr(line, "\"code\":\"EBUSY\",\"message\":\"busy\""));
    free(line);
    line = ctl_response_format_error(4000, "");
    ck_assert_ptr_nonnull(strstr(line, "\"code\":\"EIO\""));
    free(line);
}
END_TEST

static const struct {
    const char *line;
    int ret, errnum;
} response_cases[] = {
    {"nope", -EPROTO, 0},
    {"[]", -EPROTO, 0},
    {"{\"ok\":true,\"result\":{}}", -EPROTO, 0},
    {"{\"v\":2,\"ok\":true,\"result\":{}}", -EPROTO, 0},
    {"{\"v\":1,\"result\":{}}", -EPROTO, 0},
    {"{\"v\":1,\"ok\":1,\"result\":{}}", -EPROTO, 0},
    {"{\"v\":1,\"ok\":true}", -EPROTO, 0},
    {"{\"v\":1,\"ok\":true,\"result\":[]}", -EPROTO, 0},
    {"{\"v\":1,\"ok\":false}", -EPROTO, 0},
    {"{\"v\":1,\"ok\":false,\"error\":{\"code\":\"EINVAL\"}}", -EPROTO, 0},
    {"{\"v\":1,\"ok\":false,\"error\":{\"code\":5,\"message\":\"x\"}}", -EPROTO, 0},
    {"{\"v\":1,\"ok\":false,\"error\":{\"code\":\"EWHAT\",\"message\":\"x\"}}", 0, EIO},
    {"{\"v\":1,\"ok\":false,\"error\":{\"code\":\"ENOENT\",\"message\":\"x\"},\"new\":1}", 0,
     ENOENT},
    {"{\"v\":1,\"ok\":true,\"result\":{},\"extra\":[1]}\n", 0, 0},
};

START_TEST(test_response_malformed)
{
    struct json_object *got = NULL;
    char msg[CTL_ERRLEN] = "";
    int errnum = -1, r;

    r = ctl_response_parse(response_cases[_i].line, strlen(response_cases[_i].line), &got, &errnum,
                           msg, sizeof(msg));
    ck_assert_msg(r == response_cases[_i].ret, "%s: %d (%s)", response_cases[_i].line, r, msg);
    if (r == 0)
        ck_assert_int_eq(errnum, response_cases[_i].errnum);
    else
        ck_assert_ptr_null(got);
    json_object_put(got);
}
END_TEST

START_TEST(test_errno_names)
{
    static const int all[] = {EPERM,  ENOENT, ESRCH,     EINVAL, EEXIST,     EBUSY,  ENOMEM,
                              EPROTO, E2BIG,  ETIMEDOUT, EIO,    EADDRINUSE, ENOTSUP};

    for (size_t i = 0; i < NELEM(all); i++) {
        ck_assert_int_eq(ctl_errno_value(ctl_errno_name(all[i])), all[i]);
        ck_assert_str_eq(ctl_errno_name(-all[i]), ctl_errno_name(all[i]));
    }
    ck_assert_str_eq(ctl_errno_name(EINVAL), "EINVAL");
    ck_assert_str_eq(ctl_errno_name(9999), "EIO");
    ck_assert_int_eq(ctl_errno_value("EFOO"), 0);
    ck_assert_int_eq(ctl_errno_value(""), 0);
}
END_TEST

/* --- CPU lists: pool create parses its cpus once, into req.cpuset. --- */

START_TEST(test_cpulist)
{
    static const struct {
        const char *cpus;
        int ret;
        unsigned int count;
    } cases[] = {
        {"1", 0, 1},         {"0-3", 0, 4},       {"5,1,3-4", 0, 4},    {"0-1023", 0, 1024},
        {"", -EINVAL, 0},    {",", -EINVAL, 0},   {"1,", -EINVAL, 0},   {"-1", -EINVAL, 0},
        {"2-1", -EINVAL, 0}, {"1 2", -EINVAL, 0}, {"1024", -EINVAL, 0}, {"1,1", -EINVAL, 0},
    };
    struct ctl_request *req = malloc(sizeof(*req));
    char line[256], err[CTL_ERRLEN];

    ck_assert_ptr_nonnull(req);
    for (size_t i = 0; i < NELEM(cases); i++) {
        int r;

        snprintf(line, sizeof(line),
                 "{\"v\":1,\"cmd\":\"pool\",\"args\":{\"op\":\"create\",\"name\":\"p\","
                 "\"cpus\":\"%s\",\"policy\":\"rr\"}}",
                 cases[i].cpus);
        r = ctl_request_parse(line, strlen(line), req, err, sizeof(err));
        ck_assert_msg(r == cases[i].ret, "'%s': %d (%s)", cases[i].cpus, r, err);
        if (r == 0)
            ck_assert_uint_eq(cpuset_count(&req->cpuset), cases[i].count);
        else
            ck_assert_msg(strstr(err, "cpus: ") != NULL, "'%s': %s", cases[i].cpus, err);
    }
    free(req);
}
END_TEST

static Suite *
ctl_proto_suite(void)
{
    Suite *s = suite_create("ctl_proto");
    TCase *tc = tcase_create("request");

    tcase_add_loop_test(tc, test_request_malformed, 0, NELEM(bad_cases));
    tcase_add_loop_test(tc, test_request_roundtrip, 0, NELEM(good_cases));
    tcase_add_loop_test(tc, test_request_built_roundtrip, 0, 15);
    tcase_add_test(tc, test_request_limits_inclusive);
    tcase_add_test(tc, test_request_parse_resets);
    tcase_add_test(tc, test_request_readonly);
    tcase_add_test(tc, test_request_add_param_limits);
    suite_add_tcase(s, tc);
    tc = tcase_create("response");
    tcase_add_test(tc, test_response_ok);
    tcase_add_test(tc, test_response_error);
    tcase_add_loop_test(tc, test_response_malformed, 0, NELEM(response_cases));
    tcase_add_test(tc, test_errno_names);
    tcase_add_test(tc, test_cpulist);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return run_suite(ctl_proto_suite());
}
