/* SPDX-License-Identifier: ISC */
/*
 * discover.c - thread discovery from /proc and QMP; see discover.h.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "discover.h"
#include "qmp.h"

static int
proc_tgid(pid_t tid, pid_t *tgid)
{
    char path[64], line[256];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
    f = fopen(path, "re");
    if (f == NULL)
        return -ESRCH;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Tgid:", 5) == 0) {
            *tgid = (pid_t)atoi(line + 5);
            fclose(f);
            return 0;
        }
    }
    fclose(f);
    return -EPROTO;
}

static bool
is_task_of(pid_t pid, pid_t tid)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
    return access(path, F_OK) == 0;
}

int
discover_process(pid_t pid, pid_t *tids, unsigned int max, unsigned int *n, char *err,
                 size_t errlen)
{
    char path[64];
    struct dirent *e;
    DIR *d;

    *n = 0;
    if (pid <= 0) {
        snprintf(err, errlen, "bad pid %d", (int)pid);
        return -EINVAL;
    }
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (d == NULL) {
        snprintf(err, errlen, "no process %d", (int)pid);
        return -ESRCH;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (*n == max) {
            closedir(d);
            snprintf(err, errlen, "process %d has more than %u threads", (int)pid, max);
            return -E2BIG;
        }
        tids[(*n)++] = (pid_t)atoi(e->d_name);
    }
    closedir(d);
    return *n > 0 ? 0 : -ESRCH;
}

static int
check_distinct(const pid_t *tids, unsigned int n, char *err, size_t errlen)
{
    for (unsigned int i = 0; i < n; i++) {
        for (unsigned int j = 0; j < i; j++) {
            if (tids[i] == tids[j]) {
                snprintf(err, errlen, "thread %d listed twice", (int)tids[i]);
                return -EINVAL;
            }
        }
    }
    return 0;
}

int
discover_tids(pid_t *pid, const pid_t *in, unsigned int nin, pid_t *tids, unsigned int max,
              unsigned int *n, char *err, size_t errlen)
{
    int r;

    if (nin == 0 || nin > max) {
        snprintf(err, errlen, "1..%u thread ids, not %u", max, nin);
        return -EINVAL;
    }
    r = check_distinct(in, nin, err, errlen);
    if (r < 0)
        return r;
    for (unsigned int i = 0; i < nin; i++) {
        pid_t tgid;

        if (in[i] <= 0 || proc_tgid(in[i], &tgid) < 0 || !is_task_of(tgid, in[i])) {
            snprintf(err, errlen, "no thread %d", (int)in[i]);
            return -ESRCH;
        }
        if (*pid == 0)
            *pid = tgid;
        if (tgid != *pid) {
            snprintf(err, errlen, "thread %d belongs to process %d, not %d", (int)in[i], (int)tgid,
                     (int)*pid);
            return -EINVAL;
        }
        tids[i] = in[i];
    }
    *n = nin;
    return 0;
}

int
discover_check_vcpus(pid_t pid, const pid_t *tids, unsigned int n, char *err, size_t errlen)
{
    int r = check_distinct(tids, n, err, errlen);

    if (r < 0)
        return r;
    for (unsigned int i = 0; i < n; i++) {
        if (tids[i] == pid) {
            snprintf(err, errlen,
                     "vCPU thread id %d is the QEMU main thread (single-threaded TCG?)",
                     (int)tids[i]);
            return -EINVAL;
        }
        if (!is_task_of(pid, tids[i])) {
            snprintf(err, errlen, "vCPU thread %d is not a thread of QEMU process %d", (int)tids[i],
                     (int)pid);
            return -ESRCH;
        }
    }
    return 0;
}

int
discover_qmp(const char *path, pid_t *pid, pid_t *tids, unsigned int max, unsigned int *n,
             char *err, size_t errlen)
{
    struct qmp_opts opts = {.timeout_ms = DISCOVER_QMP_TIMEOUT_MS};
    struct qmp_vcpus vs = {0};
    struct qmp_conn *q;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    int r;

    *n = 0;
    r = qmp_connect(&q, path, &opts, err, errlen);
    if (r < 0)
        return r;
    /* The peer of the monitor socket is the QEMU process itself. */
    if (getsockopt(qmp_fd(q), SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        r = -errno;
        snprintf(err, errlen, "qmp %s: peer credentials: %s", path, strerror(errno));
        goto out;
    }
    *pid = cred.pid;
    r = qmp_query_vcpus(q, &vs, err, errlen);
    if (r < 0)
        goto out;
    if (vs.n > max) {
        snprintf(err, errlen, "qmp %s: %zu vCPUs (at most %u supported)", path, vs.n, max);
        r = -E2BIG;
        goto out;
    }
    for (size_t i = 0; i < vs.n; i++)
        tids[i] = vs.v[i].thread_id;
    *n = (unsigned int)vs.n;
    r = discover_check_vcpus(*pid, tids, *n, err, errlen);
out:
    qmp_vcpus_free(&vs);
    qmp_close(q);
    return r;
}
