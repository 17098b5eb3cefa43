/* SPDX-License-Identifier: ISC */
/*
 * test_notify.c - the daemon's sd_notify(3) sender (vcpusched/daemon/
 * notify.c) against real datagram sockets, a path and an abstract name,
 * as systemd's manager listens; and what it refuses. The watchdog's
 * interval from systemd's variables.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"
#include "testutil.h"

/* Bind a datagram socket at `name` (leading '@': abstract) and return it. */
static int
listener(const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(fd, 0);
    memcpy(sa.sun_path, name, len);
    if (name[0] == '@')
        sa.sun_path[0] = '\0';
    ck_assert_int_eq(
        bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
        0);
    return fd;
}

static void
expect_datagram(int fd, const char *want)
{
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

    ck_assert_int_eq(n, (ssize_t)strlen(want));
    buf[n] = '\0';
    ck_assert_str_eq(buf, want);
}

START_TEST(unset_is_not_an_error)
{
    char err[128] = "";

    unsetenv("NOTIFY_SOCKET");
    ck_assert_int_eq(notify_send("READY=1", err, sizeof(err)), 0);
    setenv("NOTIFY_SOCKET", "", 1);
    ck_assert_int_eq(notify_send("READY=1", err, sizeof(err)), 0);
}
END_TEST

START_TEST(path_socket)
{
    char dir[] = "/tmp/vcpusched-notify-XXXXXX", path[128], err[128] = "";
    int fd;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/notify", dir);
    fd = listener(path);
    setenv("NOTIFY_SOCKET", path, 1);
    ck_assert_int_eq(notify_send("READY=1\nSTATUS=running", err, sizeof(err)), 1);
    expect_datagram(fd, "READY=1\nSTATUS=running");
    ck_assert_int_eq(notify_send("STOPPING=1", err, sizeof(err)), 1);
    expect_datagram(fd, "STOPPING=1");
    close(fd);
    unlink(path);
    /* Nobody listens any more: an error with the path, not a crash. */
    ck_assert_int_lt(notify_send("READY=1", err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, path) != NULL, "err: %s", err);
    rmdir(dir);
}
END_TEST

START_TEST(abstract_socket)
{
    char name[64], err[128] = "";
    int fd;

    snprintf(name, sizeof(name), "@vcpusched-notify-test-%d", (int)getpid());
    fd = listener(name);
    setenv("NOTIFY_SOCKET", name, 1);
    ck_assert_int_eq(notify_send("RELOADING=1", err, sizeof(err)), 1);
    expect_datagram(fd, "RELOADING=1");
    close(fd);
}
END_TEST

START_TEST(bad_addresses)
{
    char longname[200], err[128] = "";

    setenv("NOTIFY_SOCKET", "relative/notify", 1);
    ck_assert_int_eq(notify_send("READY=1", err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "relative/notify") != NULL, "err: %s", err);
    memset(longname, 'x', sizeof(longname) - 1);
    longname[0] = '/';
    longname[sizeof(longname) - 1] = '\0';
    setenv("NOTIFY_SOCKET", longname, 1);
    ck_assert_int_eq(notify_send("READY=1", err, sizeof(err)), -EINVAL);
}
END_TEST

/* WATCHDOG_USEC / WATCHDOG_PID as systemd sets them, and what is not for us. */
START_TEST(watchdog_interval)
{
    ck_assert_uint_eq(notify_watchdog_usec("10000000", NULL, 42), 10000000);
    ck_assert_uint_eq(notify_watchdog_usec("10000000", "42", 42), 10000000);
    ck_assert_uint_eq(notify_watchdog_usec("10000000", "43", 42), 0); /* another process's */
    ck_assert_uint_eq(notify_watchdog_usec(NULL, "42", 42), 0);
    ck_assert_uint_eq(notify_watchdog_usec("", NULL, 42), 0);
    ck_assert_uint_eq(notify_watchdog_usec("0", NULL, 42), 0);
    ck_assert_uint_eq(notify_watchdog_usec("10s", NULL, 42), 0);
    ck_assert_uint_eq(notify_watchdog_usec("-5", NULL, 42), 0);
    ck_assert_uint_eq(notify_watchdog_usec("10000000", "x42", 42), 0);
    ck_assert_uint_eq(notify_watchdog_usec("99999999999999999999999", NULL, 42), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("notify");
    TCase *tc = tcase_create("notify");

    tcase_add_test(tc, unset_is_not_an_error);
    tcase_add_test(tc, path_socket);
    tcase_add_test(tc, abstract_socket);
    tcase_add_test(tc, bad_addresses);
    tcase_add_test(tc, watchdog_interval);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
