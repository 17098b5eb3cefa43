/* SPDX-License-Identifier: ISC */
/*
 * test_libvirt_meta.c - the parser of vcpusched's libvirt metadata and of
 * libvirt's status file: the captured fixtures, every malformed case
 * refused with a message and nothing filled in, and the pool choice.
 */
#include <check.h>
#include <errno.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libvirt/libvirt_meta.h"
#include "testutil.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define NS       "xmlns:vs='https://vcpusched.org/xmlns/1'"
#define DOM(md)  "<domain type='qemu'><name>d</name><metadata>" md "</metadata></domain>"

static char *
fixture(const char *name, size_t *len)
{
    char path[512];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof(path), "%s/%s", LIBVIRT_FIXTURE_DIR, name);
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

START_TEST(test_domain_fixture)
{
    struct libvirt_meta m;
    char err[256], desc[256];
    size_t len;
    char *xml = fixture("domain-started.xml", &len);

    ck_assert_int_eq(libvirt_meta_parse_domain(xml, len, &m, err, sizeof(err)), 0);
    ck_assert(m.present);
    ck_assert_str_eq(m.policy, "credit");
    ck_assert_str_eq(m.pool, "");
    ck_assert_uint_eq(m.nr_params, 1);
    ck_assert_str_eq(m.keys[0], "weight");
    ck_assert_str_eq(m.vals[0], "512");
    libvirt_meta_format(&m, desc, sizeof(desc));
    ck_assert_str_eq(desc, "policy=credit weight=512");
    free(xml);
}
END_TEST

START_TEST(test_status_fixture)
{
    struct libvirt_status *st = calloc(1, sizeof(*st));
    char err[256];
    size_t len;
    char *xml = fixture("status-running.xml", &len);

    ck_assert_int_eq(libvirt_meta_parse_status(xml, len, st, err, sizeof(err)), 0);
    ck_assert_int_eq(st->pid, 24190);
    ck_assert_uint_eq(st->nr_vcpus, 2);
    ck_assert_uint_eq(st->ids[0], 0);
    ck_assert_int_eq(st->tids[0], 24196);
    ck_assert_uint_eq(st->ids[1], 1);
    ck_assert_int_eq(st->tids[1], 24197);
    ck_assert_str_eq(st->name, "cap1");
    ck_assert(st->meta.present);
    ck_assert_str_eq(st->meta.policy, "credit");
    free(xml);
    free(st);
}
END_TEST

/* Valid domains: present?, pool, policy, params as "k=v k=v". */
static const struct {
    const char *xml;
    bool present;
    const char *desc;
} good_domains[] = {
    {"<domain><name>d</name></domain>", false, ""},
    {DOM(""), false, ""},
    {"<domain><metadata/></domain>", false, ""},
    {DOM("<x:other xmlns:x='http://example.org/x' a='1'/>"), false, ""},
    {DOM("<other/>"), false, ""},
    {DOM("<vs:sched " NS "/>"), true, ""},
    {DOM("<vs:sched " NS "></vs:sched>"), true, ""},
    {DOM("<vs:sched " NS ">\n  </vs:sched>"), true, ""},
    {DOM("<vs:sched " NS " pool='p2' policy='credit2' weight='128' cap='50'/>"), true,
     "pool=p2 policy=credit2 weight=128 cap=50"},
    {DOM("<x:a xmlns:x='urn:x'/><vs:sched " NS " weight='7'/><b/>"), true, "weight=7"},
    {DOM("<sched xmlns='https://vcpusched.org/xmlns/1' weight='1'/>"), true, "weight=1"},
    /* Values are the daemon's to judge (weight=0 is refused there, not here). */
    {DOM("<vs:sched " NS " weight='0'/>"), true, "weight=0"},
    {DOM("<vs:sched " NS " weight='abc'/>"), true, "weight=abc"},
    /* The background class travels like any parameter (the daemon checks it). */
    {DOM("<vs:sched " NS " policy='credit2' class='background'/>"), true,
     "policy=credit2 class=background"},
};

START_TEST(test_domain_good)
{
    struct libvirt_meta m;
    char err[256] = "", desc[256];
    const char *xml = good_domains[_i].xml;

    ck_assert_msg(libvirt_meta_parse_domain(xml, strlen(xml), &m, err, sizeof(err)) == 0, "%s: %s",
                  xml, err);
    ck_assert_int_eq(m.present, good_domains[_i].present);
    libvirt_meta_format(&m, desc, sizeof(desc));
    ck_assert_str_eq(desc, good_domains[_i].desc);
}
END_TEST

static const struct {
    const char *xml;
    int r;
    const char *msg; /* a part of the message */
} bad_domains[] = {
    {"", -EINVAL, "not well-formed"},
    {"not xml at all", -EINVAL, "not well-formed"},
    {"<domain><metadata>", -EINVAL, "not well-formed"},
    {"{\"v\": 1}", -EINVAL, "not well-formed"},
    {"<!DOCTYPE domain [<!ENTITY x 'y'>]><domain/>", -EINVAL, "DTD"},
    {"<!DOCTYPE domain SYSTEM 'file:///etc/passwd'><domain/>", -EINVAL, "DTD"},
    {"<domstatus/>", -EINVAL, "root element"},
    {"<x:domain xmlns:x='urn:x'/>", -EINVAL, "root element"},
    {DOM("<vs:sched " NS "/><vs:sched " NS "/>"), -EINVAL, "two elements"},
    {DOM("<vs:sched " NS "/><vs:other " NS "/>"), -EINVAL, "two elements"},
    {DOM("<vs:policy " NS "/>"), -EINVAL, "unknown element"},
    {"<domain><metadata/><metadata/></domain>", -EINVAL, "two <metadata>"},
    {DOM("<vs:sched " NS " pool='a b'/>"), -EINVAL, "pool:"},
    {DOM("<vs:sched " NS " pool=''/>"), -EINVAL, "pool:"},
    {DOM("<vs:sched " NS " pool='p/../x'/>"), -EINVAL, "pool:"},
    {DOM("<vs:sched " NS
         " pool='aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'/>"),
     -EINVAL, "pool:"},
    {DOM("<vs:sched " NS " policy='Credit'/>"), -EINVAL, "policy:"},
    {DOM("<vs:sched " NS " policy=''/>"), -EINVAL, "policy:"},
    {DOM("<vs:sched " NS " policy='credit;rm'/>"), -EINVAL, "policy:"},
    {DOM("<vs:sched " NS " weight=''/>"), -EINVAL, "weight:"},
    {DOM("<vs:sched " NS " weight='1&#10;2'/>"), -EINVAL, "weight:"},
    {DOM("<vs:sched " NS " Weight='1'/>"), -EINVAL, "parameter name"},
    {DOM("<vs:sched " NS " vs:weight='1'/>"), -EINVAL, "namespace"},
    {DOM("<vs:sched " NS " weight='1' weight='2'/>"), -EINVAL, "not well-formed"},
    {DOM("<vs:sched " NS " policy='credit' policy='rr'/>"), -EINVAL, "not well-formed"},
    {DOM("<vs:sched " NS "><vs:weight>1</vs:weight></vs:sched>"), -EINVAL, "child element"},
    {DOM("<vs:sched " NS ">512</vs:sched>"), -EINVAL, "text"},
    {DOM("<vs:sched " NS " a='1' b='1' c='1' d='1' e='1' f='1' g='1' h='1' i='1' j='1' k='1' "
         "l='1' m='1' n='1' o='1' p='1' q='1'/>"),
     -E2BIG, "more than 16"},
};

START_TEST(test_domain_bad)
{
    struct libvirt_meta m;
    char err[256] = "";
    const char *xml = bad_domains[_i].xml;
    int r;

    memset(&m, 0xa5, sizeof(m));
    r = libvirt_meta_parse_domain(xml, strlen(xml), &m, err, sizeof(err));
    ck_assert_msg(r == bad_domains[_i].r, "%s: got %d (%s)", xml, r, err);
    ck_assert_msg(strstr(err, bad_domains[_i].msg) != NULL, "%s: message '%s' lacks '%s'", xml, err,
                  bad_domains[_i].msg);
    ck_assert(!m.present);
    ck_assert_uint_eq(m.nr_params, 0);
    ck_assert_str_eq(m.policy, "");
}
END_TEST

START_TEST(test_domain_too_long)
{
    size_t len = LIBVIRT_XML_MAX + 1;
    char *xml = malloc(len + 1);
    struct libvirt_meta m;
    char err[256];

    ck_assert_ptr_nonnull(xml);
    memset(xml, ' ', len);
    memcpy(xml, "<domain>", 8);
    memcpy(xml + len - 9, "</domain>", 9);
    xml[len] = '\0';
    ck_assert_int_eq(libvirt_meta_parse_domain(xml, len, &m, err, sizeof(err)), -E2BIG);
    ck_assert_int_eq(libvirt_meta_parse_domain(xml, len - 1, &m, err, sizeof(err)), -EINVAL);
    free(xml);
}
END_TEST

/* virDomainGetMetadata's output (no prefix), and "nothing there". */
static const struct {
    const char *xml;
    int r;
    bool present;
    const char *desc;
} elements[] = {
    {NULL, 0, false, ""},
    {"", 0, false, ""},
    {"  \n", 0, false, ""},
    {"<sched policy=\"credit\" weight=\"512\"/>", 0, true, "policy=credit weight=512"},
    {"<sched class=\"background\"/>", 0, true, "class=background"},
    {"<sched xmlns=\"https://vcpusched.org/xmlns/1\" cap=\"10\"/>", 0, true, "cap=10"},
    {"<sched/>", 0, true, ""},
    {"<other/>", -EINVAL, false, ""},
    {"<sched xmlns=\"urn:other\"/>", -EINVAL, false, ""},
    {"<sched weight=\"1\" weight=\"2\"/>", -EINVAL, false, ""},
    {"<sched policy=\"CREDIT\"/>", -EINVAL, false, ""},
    {"<sched weight=\"1\"", -EINVAL, false, ""},
    {"<!DOCTYPE sched><sched/>", -EINVAL, false, ""},
};

START_TEST(test_element)
{
    struct libvirt_meta m;
    char err[256] = "", desc[256];
    const char *xml = elements[_i].xml;
    int r = libvirt_meta_parse_element(xml, xml ? strlen(xml) : 0, &m, err, sizeof(err));

    ck_assert_msg(r == elements[_i].r, "%s: got %d (%s)", xml ? xml : "NULL", r, err);
    ck_assert_int_eq(m.present, elements[_i].present);
    libvirt_meta_format(&m, desc, sizeof(desc));
    ck_assert_str_eq(desc, elements[_i].desc);
    if (r < 0)
        ck_assert(err[0] != '\0');
}
END_TEST

#define ST(vcpus) "<domstatus state='running' pid='100'><vcpus>" vcpus "</vcpus></domstatus>"

static const struct {
    const char *xml;
    int r;
    unsigned int n;
    pid_t tid0;
} statuses[] = {
    {ST("<vcpu id='0' pid='101'/>"), 0, 1, 101},
    {ST("<vcpu id='1' pid='102'/><vcpu id='0' pid='101'/>"), 0, 2, 101}, /* sorted by id */
    {ST("<vcpu id='0'/><vcpu id='1'/>"), -ESRCH, 0, 0},                  /* single-threaded TCG */
    {ST(""), -ESRCH, 0, 0},
    {"<domstatus pid='100'/>", -ESRCH, 0, 0},
    {ST("<vcpu id='0' pid='101'/><vcpu id='0' pid='102'/>"), -EINVAL, 0, 0},
    {ST("<vcpu id='0' pid='101'/><vcpu id='1' pid='101'/>"), -EINVAL, 0, 0},
    {ST("<vcpu id='0' pid='100'/>"), -EINVAL, 0, 0}, /* QEMU's main thread */
    {ST("<vcpu id='0' pid='x'/>"), -EINVAL, 0, 0},
    {ST("<vcpu id='0' pid='-5'/>"), -EINVAL, 0, 0},
    {ST("<vcpu id='0' pid='99999999'/>"), -EINVAL, 0, 0},
    {ST("<vcpu pid='101'/>"), -EINVAL, 0, 0},
    {"<domstatus><vcpus><vcpu id='0' pid='101'/></vcpus></domstatus>", -EINVAL, 0, 0},
    {"<domstatus pid='0'/>", -EINVAL, 0, 0},
    {"<domain pid='100'/>", -EINVAL, 0, 0},
    {"<domstatus pid='100'", -EINVAL, 0, 0},
    {"<domstatus pid='100'><vcpus><vcpu id='0' pid='101'/></vcpus>"
     "<domain><metadata><vs:sched " NS "/><vs:sched " NS "/></metadata></domain></domstatus>",
     -EINVAL, 0, 0},
};

START_TEST(test_status)
{
    struct libvirt_status *st = calloc(1, sizeof(*st));
    char err[256] = "";
    const char *xml = statuses[_i].xml;
    int r = libvirt_meta_parse_status(xml, strlen(xml), st, err, sizeof(err));

    ck_assert_msg(r == statuses[_i].r, "%s: got %d (%s)", xml, r, err);
    ck_assert_uint_eq(st->nr_vcpus, statuses[_i].n);
    if (r == 0)
        ck_assert_int_eq(st->tids[0], statuses[_i].tid0);
    if (r == -ESRCH)
        ck_assert_int_eq(st->pid, 100); /* the /proc fallback needs it */
    if (r < 0)
        ck_assert(err[0] != '\0');
    free(st);
}
END_TEST

static const struct libvirt_pool pools3[] = {
    {"main", "credit"}, {"p2", "credit2"}, {"p3", "credit2"}};

static const struct {
    size_t nr_pools; /* of pools3 */
    const char *pool, *policy, *current;
    int r;
    const char *want;
} choices[] = {
    {3, "", "", NULL, 0, "main"},        {3, "", "", "p3", 0, "p3"},
    {3, "", "credit2", NULL, 0, "p2"},   {3, "", "credit2", "p3", 0, "p3"},
    {3, "", "credit2", "main", 0, "p2"}, {3, "", "credit", "p3", 0, "main"},
    {3, "p3", "", "main", 0, "p3"},      {3, "p3", "credit2", NULL, 0, "p3"},
    {3, "p3", "credit", NULL, 1, "p3"},  {3, "nope", "", NULL, -ENOENT, ""},
    {3, "", "rr", NULL, 1, "main"},      {3, "", "rr", "p3", 1, "p3"},
    {0, "", "", NULL, -ENOENT, ""},      {0, "", "credit", NULL, -ENOENT, ""},
};

START_TEST(test_choose_pool)
{
    struct libvirt_meta m;
    char pool[VS_NAME_SIZE] = "", err[256] = "";
    int r;

    memset(&m, 0, sizeof(m));
    m.present = true;
    snprintf(m.pool, sizeof(m.pool), "%s", choices[_i].pool);
    snprintf(m.policy, sizeof(m.policy), "%s", choices[_i].policy);
    r = libvirt_meta_choose_pool(&m, pools3, choices[_i].nr_pools, choices[_i].current, pool,
                                 sizeof(pool), err, sizeof(err));
    ck_assert_msg(r == choices[_i].r, "case %d: got %d (%s)", _i, r, err);
    if (r >= 0)
        ck_assert_str_eq(pool, choices[_i].want);
    /* 1: the policy named is not the pool's, and the note says so. */
    ck_assert(r == 0 ? err[0] == '\0' : err[0] != '\0');
}
END_TEST

START_TEST(test_names_and_kv)
{
    struct libvirt_meta m;
    const char *xml = DOM("<vs:sched " NS " weight='5' cap='7'/>");
    char err[256];

    ck_assert(names_valid("vm-1.a:b+c@d_e"));
    ck_assert(!names_valid(""));
    ck_assert(!names_valid("a/b"));
    ck_assert(!names_valid("a b"));
    ck_assert_int_eq(libvirt_meta_parse_domain(xml, strlen(xml), &m, err, sizeof(err)), 0);
    ck_assert_uint_eq(m.nr_params, 2);
    ck_assert_str_eq(m.keys[0], "weight");
    ck_assert_str_eq(m.vals[0], "5");
    ck_assert_str_eq(m.keys[1], "cap");
    ck_assert_str_eq(m.vals[1], "7");
}
END_TEST

static Suite *
libvirt_meta_suite(void)
{
    Suite *s = suite_create("libvirt_meta");
    TCase *tc = tcase_create("parse");

    tcase_add_test(tc, test_domain_fixture);
    tcase_add_test(tc, test_status_fixture);
    tcase_add_loop_test(tc, test_domain_good, 0, NELEM(good_domains));
    tcase_add_loop_test(tc, test_domain_bad, 0, NELEM(bad_domains));
    tcase_add_test(tc, test_domain_too_long);
    tcase_add_loop_test(tc, test_element, 0, NELEM(elements));
    tcase_add_loop_test(tc, test_status, 0, NELEM(statuses));
    tcase_add_loop_test(tc, test_choose_pool, 0, NELEM(choices));
    tcase_add_test(tc, test_names_and_kv);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    xmlInitParser();
    return run_suite(libvirt_meta_suite());
}
