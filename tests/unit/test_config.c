/* SPDX-License-Identifier: ISC */
/*
 * test_config.c - the daemon's configuration (vcpusched/daemon/config.c):
 * the installed default file states exactly the built-in defaults, keys
 * and options agree, bad lines name their line, and parsing the command
 * line twice (as a reload does) gives the same configuration.
 */
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "config.h"
#include "testutil.h"

#define ERRLEN 512

static char tmpdir[64];

static void
setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/vcpusched-config-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *
write_file(const char *name, const char *text)
{
    static char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/*
 * The shipped vcpuschedd.conf with every "#key value" line uncommented
 * (those state the defaults) must configure exactly what config_defaults
 * does, the default pool "main" aside (the file names its policy).
 */
START_TEST(shipped_file_states_the_defaults)
{
    char line[1024], text[16384] = "", err[ERRLEN] = "";
    struct config want, got;
    unsigned int defaults = 0;
    regex_t re;
    FILE *f = fopen(VCPUSCHED_CONF_SRC, "r");

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(regcomp(&re, "^#[a-z][a-z-]* [^ ]", REG_NOSUB), 0);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (regexec(&re, line, 0, NULL, 0) == 0) {
            strncat(text, line + 1, sizeof(text) - strlen(text) - 1);
            defaults++;
        }
    }
    regfree(&re);
    fclose(f);
    ck_assert_uint_ge(defaults, 10); /* the test means something */
    config_defaults(&want);
    config_defaults(&got);
    ck_assert_msg(config_load_file(&got, write_file("defaults.conf", text), err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_uint_eq(got.nr_pools, 1);
    ck_assert_str_eq(got.pools[0].name, "main");
    ck_assert_str_eq(got.pools[0].policy, "credit");
    ck_assert_str_eq(got.pools[0].cpus, "");
    ck_assert_str_eq(got.pools[0].params, "");
    memset(got.pools, 0, sizeof(got.pools));
    got.nr_pools = 0;
    memset(got.at, 0, sizeof(got.at)); /* where the last line came from */
    ck_assert_msg(memcmp(&want, &got, sizeof(want)) == 0,
                  "a \"#key value\" line of %s is not the built-in default", VCPUSCHED_CONF_SRC);
}
END_TEST

START_TEST(log_level)
{
    char err[ERRLEN] = "";
    struct config c;

    config_defaults(&c);
    ck_assert_int_eq(c.log_level, LOG_VERBOSE_INFO);
    ck_assert_int_eq(
        config_load_file(&c, write_file("a.conf", "log-level debug\n"), err, sizeof(err)), 0);
    ck_assert_int_eq(c.log_level, LOG_VERBOSE_DEBUG);
    ck_assert_int_eq(config_load_file(&c, write_file("b.conf", "# quiet\nlog-level warning\n"), err,
                                      sizeof(err)),
                     0);
    ck_assert_int_eq(c.log_level, LOG_VERBOSE_WARN);
    /* A bad value: its file and line, and the level unchanged. */
    ck_assert_int_eq(
        config_load_file(&c, write_file("c.conf", "\n\nlog-level loud\n"), err, sizeof(err)),
        -EINVAL);
    ck_assert_msg(strstr(err, "c.conf:3: log-level: 'loud' is not one of warning|info|debug"), "%s",
                  err);
    ck_assert_int_eq(c.log_level, LOG_VERBOSE_WARN);
}
END_TEST

/* The command line overrides the file; parsing it again gives the same. */
START_TEST(parse_twice)
{
    char conf[160], err[ERRLEN] = "";
    char *argv[] = {
        "vcpuschedd", "-f", "--config",     conf,          "--log-level",     "debug", "--cpus",
        "3",          "-v", "--pool-param", "tslice_ms=5", "--priority-base", "20",    NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
    struct config a, b;

    snprintf(conf, sizeof(conf), "%s",
             write_file("p.conf", "log-level warning\ncpus 1\npriority-base 12\n"
                                  "pool web cpus=2 policy=credit2 ratelimit_us=500\n"));
    config_defaults(&a);
    config_defaults(&b);
    ck_assert_msg(config_parse(&a, argc, argv, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(config_parse(&b, argc, argv, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(a.log_level, LOG_VERBOSE_DEBUG);
    ck_assert_int_eq(a.verbose, 1);
    ck_assert_int_eq(a.prio_base, 20);
    ck_assert_uint_eq(a.nr_pools, 2);
    ck_assert_str_eq(a.pools[0].name, "main");
    ck_assert_str_eq(a.pools[0].cpus, "3");
    ck_assert_str_eq(a.pools[0].params, "tslice_ms=5");
    ck_assert_str_eq(a.pools[1].params, "ratelimit_us=500");
    ck_assert_msg(memcmp(&a, &b, sizeof(a)) == 0, "a second parse differs");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, shipped_file_states_the_defaults);
    tcase_add_test(tc, log_level);
    tcase_add_test(tc, parse_twice);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
