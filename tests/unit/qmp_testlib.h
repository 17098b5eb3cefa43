/* SPDX-License-Identifier: ISC */
/*
 * qmp_testlib.h - helpers for the libqmp suites: captured fixtures from
 * tests/fixtures/qmp/, and a scripted fake QMP server (a forked child on a
 * UNIX socket that sends chosen bytes) to drive the transport into every
 * failure deterministically.
 */
#ifndef QMP_TESTLIB_H
#define QMP_TESTLIB_H

#include <stddef.h>
#include <sys/types.h>

/* A fixture file's contents (NUL-terminated, malloc'd); aborts the test if missing. */
char *qmp_fixture(const char *name, size_t *len);

enum fake_op {
    FAKE_END,           /* script done: drain the client until it closes, exit 0 */
    FAKE_SEND,          /* write arg verbatim */
    FAKE_SEND_BYTES,    /* write arg one byte per write(), to split lines across reads */
    FAKE_SEND_FIXTURE,  /* write the fixture file named arg */
    FAKE_SEND_BIG,      /* write a {"return": "aaa..."} line of n bytes; no LF if arg is NULL */
    FAKE_EXPECT,        /* read one command; its "execute" must be arg; remember its id */
    FAKE_REPLY,         /* write arg with %ID% / %PREV% replaced by the last two ids */
    FAKE_REPLY_FIXTURE, /* write the fixture named arg with its "id" set to the last id */
    FAKE_CLOSE,         /* close the connection and exit 0 */
    FAKE_HANG,          /* stop answering (but keep the socket open) until killed */
};

struct fake_step {
    enum fake_op op;
    const char *arg;
    size_t n;
};

/* The greeting and capabilities negotiation, as QEMU 7.2 does them. */
#define FAKE_HANDSHAKE                                                                             \
    {FAKE_SEND_FIXTURE, "greeting.json", 0}, {FAKE_EXPECT, "qmp_capabilities", 0},                 \
    {                                                                                              \
        FAKE_REPLY_FIXTURE, "capabilities-return.json", 0                                          \
    }

struct fake_server {
    char dir[64];
    char path[128];
    pid_t pid;
};

/*
 * main() brackets the suite with these: every fake server lives in a dir
 * under one base dir, removed at the end even after failed tests.
 */
void fake_base_create(void);
void fake_base_remove(void);

/* Listen on a fresh socket in a temp dir and fork a child that runs `script`. */
void fake_start(struct fake_server *fs, const struct fake_step *script);

/*
 * Stop the server (waiting up to a few seconds for it to finish its script,
 * then killing it) and remove its files. Returns the child's exit status:
 * 0 if every step matched, the failing step's number + 10 otherwise, -1 if
 * it had to be killed.
 */
int fake_stop(struct fake_server *fs);

/* Kill the server at once (for scripts that end in FAKE_HANG) and clean up. */
void fake_kill(struct fake_server *fs);

#endif /* QMP_TESTLIB_H */
