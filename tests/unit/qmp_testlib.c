/* SPDX-License-Identifier: ISC */
/*
 * qmp_testlib.c - fixtures and the scripted fake QMP server for the libqmp
 * suites. The server is a forked child, so a client that hangs or crashes
 * cannot take it down, and it dies with its parent (PR_SET_PDEATHSIG).
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "qmp_testlib.h"

/* Bound on every wait of the fake server, so a broken test cannot hang it. */
#define FAKE_WAIT_MS 10000
/* Longest command line the fake server reads. */
#define FAKE_LINE_MAX 4096

char *
qmp_fixture(const char *name, size_t *len)
{
    char path[512];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof(path), "%s/%s", QMP_FIXTURE_DIR, name);
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "fixture %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len != NULL)
        *len = (size_t)n;
    return buf;
}

/* Base of the fake servers' dirs; set before the tests fork, never changed after. */
static char fake_base[] = "/tmp/qmp-fake-XXXXXX";

void
fake_base_create(void)
{
    if (mkdtemp(fake_base) == NULL) {
        perror("mkdtemp");
        exit(EXIT_FAILURE);
    }
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void
fake_base_remove(void)
{
    nftw(fake_base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* State of the child while it runs a script. */
struct fake_child {
    int fd;
    char id[FAKE_LINE_MAX];   /* JSON text of the last command's id */
    char prev[FAKE_LINE_MAX]; /* and of the one before */
};

static int
fake_poll(int fd, short ev)
{
    struct pollfd p = {.fd = fd, .events = ev};

    return poll(&p, 1, FAKE_WAIT_MS) == 1 ? 0 : -1;
}

static int
fake_write(int fd, const char *buf, size_t len, size_t chunk)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len < chunk ? len : chunk);

        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One command line from the client; the client ends each with LF. */
static int
fake_read_line(int fd, char *buf, size_t size)
{
    size_t len = 0;

    while (len + 1 < size) {
        if (fake_poll(fd, POLLIN) < 0 || read(fd, buf + len, 1) != 1)
            return -1;
        if (buf[len] == '\n')
            break;
        len++;
    }
    buf[len] = '\0';
    return 0;
}

static int
fake_expect(struct fake_child *ch, const char *cmd)
{
    char line[FAKE_LINE_MAX];
    struct json_object *o, *ex, *id;
    int r = -1;

    if (fake_read_line(ch->fd, line, sizeof(line)) < 0)
        return -1;
    o = json_tokener_parse(line);
    if (o != NULL && json_object_object_get_ex(o, "execute", &ex) &&
        strcmp(json_object_get_string(ex), cmd) == 0 && json_object_object_get_ex(o, "id", &id)) {
        memcpy(ch->prev, ch->id, sizeof(ch->prev));
        snprintf(ch->id, sizeof(ch->id), "%s", json_object_to_json_string(id));
        r = 0;
    }
    json_object_put(o);
    return r;
}

/* Expand %ID% and %PREV% in a reply template. */
static int
fake_reply(struct fake_child *ch, const char *tmpl)
{
    char out[FAKE_LINE_MAX * 3];
    size_t len = 0;

    while (*tmpl != '\0' && len + FAKE_LINE_MAX < sizeof(out)) {
        if (strncmp(tmpl, "%ID%", 4) == 0 || strncmp(tmpl, "%PREV%", 6) == 0) {
            const char *v = tmpl[1] == 'I' ? ch->id : ch->prev;

            len += (size_t)snprintf(out + len, sizeof(out) - len, "%s", v);
            tmpl += tmpl[1] == 'I' ? 4 : 6;
        } else {
            out[len++] = *tmpl++;
        }
    }
    return fake_write(ch->fd, out, len, len);
}

static int
fake_reply_fixture(struct fake_child *ch, const char *name)
{
    char *text = qmp_fixture(name, NULL);
    struct json_object *o = json_tokener_parse(text), *id = json_tokener_parse(ch->id);
    const char *s;
    int r;

    json_object_object_add(o, "id", id);
    s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED);
    r = fake_write(ch->fd, s, strlen(s), strlen(s));
    if (r == 0)
        r = fake_write(ch->fd, "\r\n", 2, 2);
    json_object_put(o);
    free(text);
    return r;
}

static int
fake_send_big(struct fake_child *ch, size_t n, bool terminate)
{
    char *buf = malloc(n + 3);
    int r;

    memset(buf, 'a', n);
    memcpy(buf, "{\"return\": \"", 12);
    memcpy(buf + n - 2, "\"}", 2);
    memcpy(buf + n, "\r\n", 2);
    r = fake_write(ch->fd, buf, terminate ? n + 2 : n, n + 2);
    free(buf);
    return r;
}

/* Run one step; 1 ends the script successfully, -1 fails it. */
static int
fake_step(struct fake_child *ch, const struct fake_step *s)
{
    char *text;
    size_t len;
    int r;

    switch (s->op) {
    case FAKE_SEND:
        return fake_write(ch->fd, s->arg, strlen(s->arg), strlen(s->arg));
    case FAKE_SEND_BYTES:
        return fake_write(ch->fd, s->arg, strlen(s->arg), 1);
    case FAKE_SEND_FIXTURE:
        text = qmp_fixture(s->arg, &len);
        r = fake_write(ch->fd, text, len, len);
        free(text);
        return r;
    case FAKE_SEND_BIG:
        return fake_send_big(ch, s->n, s->arg != NULL);
    case FAKE_EXPECT:
        return fake_expect(ch, s->arg);
    case FAKE_REPLY:
        return fake_reply(ch, s->arg);
    case FAKE_REPLY_FIXTURE:
        return fake_reply_fixture(ch, s->arg);
    case FAKE_HANG:
        for (;;)
            pause();
    case FAKE_CLOSE:
        return 1;
    case FAKE_END:
        /* Let the client finish reading; it closes first. */
        while (fake_poll(ch->fd, POLLIN) == 0 && read(ch->fd, &len, 1) > 0)
            ;
        return 1;
    }
    return -1;
}

static void
fake_child_run(int lfd, const struct fake_step *script)
{
    struct fake_child ch = {.fd = -1};
    int r = 0;

    signal(SIGPIPE, SIG_IGN);
    if (fake_poll(lfd, POLLIN) < 0)
        _exit(2);
    ch.fd = accept(lfd, NULL, NULL);
    close(lfd);
    if (ch.fd < 0)
        _exit(2);
    for (int i = 0; r == 0; i++) {
        r = fake_step(&ch, &script[i]);
        if (r < 0)
            _exit(10 + i);
    }
    close(ch.fd);
    _exit(0);
}

void
fake_start(struct fake_server *fs, const struct fake_step *script)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    pid_t parent = getpid();
    int lfd;

    snprintf(fs->dir, sizeof(fs->dir), "%s/s-XXXXXX", fake_base);
    ck_assert_ptr_nonnull(mkdtemp(fs->dir));
    snprintf(fs->path, sizeof(fs->path), "%s/qmp.sock", fs->dir);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fs->path);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(lfd, 4), 0);
    fs->pid = fork();
    ck_assert_int_ge(fs->pid, 0);
    if (fs->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(2);
        fake_child_run(lfd, script);
    }
    close(lfd);
}

void
fake_kill(struct fake_server *fs)
{
    kill(fs->pid, SIGKILL);
    fake_stop(fs);
}

int
fake_stop(struct fake_server *fs)
{
    int status = 0;
    pid_t r = 0;

    for (int i = 0; i < 300 && r == 0; i++) {
        r = waitpid(fs->pid, &status, WNOHANG);
        if (r == 0)
            nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    if (r == 0) {
        kill(fs->pid, SIGKILL);
        waitpid(fs->pid, &status, 0);
    }
    unlink(fs->path);
    rmdir(fs->dir);
    if (r == 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}
