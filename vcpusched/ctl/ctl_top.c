/* SPDX-License-Identifier: ISC */
/*
 * ctl_top.c - the loop of `vcpuschedctl top` (ctl_top.h): samples every
 * interval, keys, signals and the terminal. The screen is drawn with a
 * handful of VT100/xterm sequences (alternate screen, home, erase) that
 * every terminal and multiplexer on a Linux host understands, not with
 * curses: nothing to link, and the frame is the very text batch mode
 * prints. Signals arrive through a signalfd next to the keyboard, so
 * q, Ctrl-C, SIGTERM and SIGHUP all leave by the one path that restores
 * the terminal; Ctrl-Z restores it before stopping.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/clock.h"
#include "control/ctl_proto.h"
#include "ctl_fetch.h"
#include "ctl_top.h"
#include "ctl_top_render.h"

#define TOP_DELAY_MIN_S   0.1
#define TOP_DELAY_MAX_S   3600.0
#define TOP_SAMPLE_MAX_MS 2000 /* a hung daemon must not hold q or Ctrl-C for long */
#define TOP_DEFAULT_ROWS  24
#define TOP_DEFAULT_COLS  80
#define TOP_STATUS_SIZE   (CTL_ERRLEN + 160)
#define TOP_KEYS          "keys: q quit, c/n/w/p sort by cpu/name/wakes/pool, v vcpus on/off, space refresh"

/* The screen: alternate buffer and no cursor while it runs; erase to the end of line, screen. */
#define TERM_ENTER "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"
#define TERM_LEAVE "\x1b[?25h\x1b[?1049l"
#define TERM_HOME  "\x1b[H"
#define TERM_EOL   "\x1b[K"
#define TERM_EOS   "\x1b[J"

struct top {
    const struct top_opts *o;
    const char *path;
    int timeout_ms;
    struct top_view view;
    struct top_sample cur;
    bool have; /* cur holds a sample */
    char status[TOP_STATUS_SIZE];
    struct termios saved;
    bool raw;
    sigset_t oldmask;
    int sig_fd;
    int rows, cols;
};

int
ctl_top_parse(struct top_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    static const struct option opts[] = {
        {"batch", no_argument, NULL, 'b'},       {"iterations", required_argument, NULL, 'n'},
        {"delay", required_argument, NULL, 'd'}, {"sort", required_argument, NULL, 's'},
        {"no-vcpus", no_argument, NULL, 'V'},    {NULL, 0, NULL, 0},
    };
    char *end;
    int ch, key;

    *o = (struct top_opts){.delay_s = 1.0, .sort = TOP_SORT_CPU, .vcpus = true};
    optind = 0; /* glibc: restart scanning from scratch */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":bn:d:s:", opts, NULL)) != -1) {
        switch (ch) {
        case 'b':
            o->batch = true;
            break;
        case 'n':
            errno = 0;
            o->iterations = strtol(optarg, &end, 10);
            if (optarg[0] == '\0' || *end != '\0' || errno != 0 || o->iterations < 1) {
                snprintf(err, errlen, "top: -n: '%s' is not a positive count", optarg);
                return -EINVAL;
            }
            break;
        case 'd':
            o->delay_s = strtod(optarg, &end);
            if (optarg[0] == '\0' || *end != '\0' || !(o->delay_s >= TOP_DELAY_MIN_S) ||
                !(o->delay_s <= TOP_DELAY_MAX_S)) {
                snprintf(err, errlen, "top: -d: '%s' is not %.1f..%.0f seconds", optarg,
                         TOP_DELAY_MIN_S, TOP_DELAY_MAX_S);
                return -EINVAL;
            }
            break;
        case 's':
            if ((key = top_sort_parse(optarg)) < 0) {
                snprintf(err, errlen, "top: -s: '%s' is not cpu, name, wakes or pool", optarg);
                return -EINVAL;
            }
            o->sort = (enum top_sort)key;
            break;
        case 'V':
            o->vcpus = false;
            break;
        case ':':
            snprintf(err, errlen, "top: %s needs a value", argv[optind - 1]);
            return -EINVAL;
        default:
            if (optopt != 0)
                snprintf(err, errlen, "top: unknown option -%c", optopt);
            else
                snprintf(err, errlen, "top: unknown option %s", argv[optind - 1]);
            return -EINVAL;
        }
    }
    if (optind != argc) {
        snprintf(err, errlen, "top: unexpected argument '%s'", argv[optind]);
        return -EINVAL;
    }
    return 0;
}

/*
 * A new sample, its rates against the last one, in order. Returns 0; 1
 * if the daemon answered with an error; -errno if it could not be
 * reached or answered garbage. `err` says why; the last sample is kept.
 */
static int
sample_take(struct top *t, char *err, size_t errlen)
{
    struct json_object *stats, *list;
    struct top_sample next;
    int errnum, r;

    r = ctl_fetch_sample(t->path, t->timeout_ms, &stats, &list, &errnum, err, errlen);
    if (r < 0 || errnum != 0)
        return r < 0 ? r : 1;
    r = top_sample_build(&next, stats, list, clock_mono_ns());
    if (r < 0) {
        top_sample_free(&next);
        snprintf(err, errlen, "%s", r == -ENOMEM ? "out of memory" : "unexpected reply shape");
        return r == -ENOMEM ? 1 : r;
    }
    top_sample_rates(&next, t->have ? &t->cur : NULL);
    top_sample_sort(&next, t->view.sort);
    if (t->have)
        top_sample_free(&t->cur);
    t->cur = next;
    t->have = true;
    return 0;
}

/* Sleep whole `s` seconds, through interruptions. */
static void
sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - floor(s)) * 1e9)};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* -b: a frame per interval on stdout, blank lines between them. */
static int
batch_run(struct top *t)
{
    char err[TOP_STATUS_SIZE];
    int r = sample_take(t, err, sizeof(err));

    for (long i = 0; r == 0 && (t->o->iterations == 0 || i < t->o->iterations); i++) {
        sleep_s(t->o->delay_s);
        if ((r = sample_take(t, err, sizeof(err))) != 0)
            break;
        if (i > 0)
            fputc('\n', stdout);
        if (top_render(stdout, &t->cur, &t->view) < 0) {
            snprintf(err, sizeof(err), "out of memory");
            r = 1;
        } else if (fflush(stdout) != 0) {
            return EXIT_REPLY; /* stdout is gone: nobody to tell */
        }
    }
    return r != 0 ? ctl_fetch_report("top", t->path, r, err) : 0;
}

/* --- The terminal. --- */

static void
term_size(struct top *t)
{
    struct winsize ws;

    t->rows = TOP_DEFAULT_ROWS;
    t->cols = TOP_DEFAULT_COLS;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
        t->rows = ws.ws_row;
        t->cols = ws.ws_col;
    }
}

/* Keys one at a time, unechoed; signals keys (Ctrl-C, Ctrl-Z) still work. Idempotent. */
static int
term_enter(struct top *t)
{
    struct termios raw;

    if (!t->raw && tcgetattr(STDIN_FILENO, &t->saved) < 0)
        return -errno;
    raw = t->saved;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0)
        return -errno;
    t->raw = true;
    fputs(TERM_ENTER, stdout);
    fflush(stdout);
    return 0;
}

static void
term_leave(struct top *t)
{
    if (!t->raw)
        return;
    fputs(TERM_LEAVE, stdout);
    fflush(stdout);
    (void)tcsetattr(STDIN_FILENO, TCSADRAIN, &t->saved);
    t->raw = false;
}

/* Bytes of the first `cols` characters of a UTF-8 line. */
static size_t
clip(const char *line, size_t len, int cols)
{
    size_t i = 0;

    for (int c = 0; i < len; i++) {
        if (((unsigned char)line[i] & 0xc0) != 0x80 && c++ == cols)
            break;
    }
    return i;
}

/*
 * The frame from the top-left corner, each line clipped to the width and
 * erased to its end, then the rest of the screen erased. A frame taller
 * than the screen ends with a line saying how much is hidden.
 */
static void
screen_draw(struct top *t)
{
    char *text = NULL, more[64];
    size_t len = 0, nlines = 0;
    FILE *m = open_memstream(&text, &len);
    int row = 0;

    if (m == NULL)
        return;
    t->view.status = t->status;
    (void)top_render(m, &t->cur, &t->view);
    if (fclose(m) != 0) {
        free(text);
        return;
    }
    for (size_t i = 0; i < len; i++)
        nlines += text[i] == '\n';
    fputs(TERM_HOME, stdout);
    for (char *p = text, *nl; row < t->rows && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        if (row == t->rows - 1 && nlines > (size_t)t->rows) {
            snprintf(more, sizeof(more), "(%zu more lines: a taller window, or v)",
                     nlines - (size_t)row);
            p = more;
            nl = more + strlen(more);
        }
        fwrite(p, 1, clip(p, (size_t)(nl - p), t->cols), stdout);
        fputs(TERM_EOL, stdout);
        if (++row < t->rows)
            fputs("\r\n", stdout);
        if (p == more)
            break;
    }
    fputs(TERM_EOS, stdout);
    fflush(stdout);
    free(text);
}

static void
refresh(struct top *t)
{
    char err[CTL_ERRLEN + 32];
    int r = sample_take(t, err, sizeof(err));

    if (r == 0)
        snprintf(t->status, sizeof(t->status), "%s", TOP_KEYS);
    else
        snprintf(t->status, sizeof(t->status), "vcpuschedd at %s: %s%s (retrying every %.1fs)",
                 t->path, err, r == -ENOENT || r == -ECONNREFUSED ? " (is it running?)" : "",
                 t->o->delay_s);
    screen_draw(t);
}

/* A key: false to quit. */
static bool
on_key(struct top *t, char c)
{
    int key = c == 'c'   ? TOP_SORT_CPU
              : c == 'n' ? TOP_SORT_NAME
              : c == 'w' ? TOP_SORT_WAKES
              : c == 'p' ? TOP_SORT_POOL
                         : -1;

    if (c == 'q' || c == 'Q')
        return false;
    if (key >= 0) {
        t->view.sort = (enum top_sort)key;
        top_sample_sort(&t->cur, t->view.sort);
    } else if (c == 'v') {
        t->view.vcpus = !t->view.vcpus;
    } else if (c == ' ') {
        refresh(t);
        return true;
    }
    screen_draw(t);
    return true;
}

/* A signal: false to quit. */
static bool
on_signal(struct top *t)
{
    struct signalfd_siginfo si;

    while (read(t->sig_fd, &si, sizeof(si)) == sizeof(si)) {
        switch (si.ssi_signo) {
        case SIGWINCH:
            term_size(t);
            break;
        case SIGTSTP: /* Ctrl-Z: give the terminal back, stop, take it again */
        case SIGCONT: /* continued after a stop from elsewhere: the shell may have reset it */
            if (si.ssi_signo == SIGTSTP) {
                term_leave(t);
                kill(getpid(), SIGSTOP);
            }
            if (term_enter(t) < 0)
                return false;
            term_size(t);
            break;
        default: /* SIGINT, SIGTERM, SIGHUP, SIGQUIT */
            return false;
        }
    }
    screen_draw(t);
    return true;
}

static int
signals_open(struct top *t)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGCONT};
    sigset_t set;

    sigemptyset(&set);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(&set, sigs[i]);
    if (sigprocmask(SIG_BLOCK, &set, &t->oldmask) < 0)
        return -errno;
    t->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    return t->sig_fd < 0 ? -errno : 0;
}

/* Milliseconds from now to `due` (0 if past). */
static int
ms_until(uint64_t due)
{
    uint64_t now = clock_mono_ns();

    return due > now ? (int)((due - now + 999999) / 1000000) : 0;
}

/* The loop: a refresh when due, keys and signals in between. */
static void
screen_loop(struct top *t)
{
    uint64_t period = (uint64_t)(t->o->delay_s * 1e9), due = clock_mono_ns() + period;
    long frames = 1;

    for (;;) {
        struct pollfd fds[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                                {.fd = t->sig_fd, .events = POLLIN}};
        char keys[64];
        ssize_t n;
        int r = poll(fds, 2, ms_until(due));

        if (r < 0 && errno != EINTR)
            return;
        if (fds[1].revents & POLLIN && !on_signal(t))
            return;
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            n = read(STDIN_FILENO, keys, sizeof(keys));
            if (n <= 0 && !(n < 0 && errno == EINTR))
                return; /* the terminal is gone */
            for (ssize_t i = 0; i < n; i++)
                if (!on_key(t, keys[i]))
                    return;
        }
        if (ms_until(due) == 0) {
            if (t->o->iterations > 0 && frames >= t->o->iterations)
                return;
            refresh(t);
            frames++;
            due += period;
            if (due < clock_mono_ns())
                due = clock_mono_ns() + period; /* fell behind (stopped, slow daemon) */
        }
    }
}

static int
screen_run(struct top *t)
{
    char err[TOP_STATUS_SIZE];
    int r;

    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "vcpuschedctl: top: standard input and output must be a terminal "
                        "(-b writes frames to a pipe)\n");
        return EXIT_USAGE;
    }
    /* The daemon is asked before the screen changes: an error stays readable. */
    if ((r = sample_take(t, err, sizeof(err))) != 0)
        return ctl_fetch_report("top", t->path, r, err);
    if ((r = signals_open(t)) < 0 || (r = term_enter(t)) < 0) {
        fprintf(stderr, "vcpuschedctl: top: terminal: %s\n", strerror(-r));
        if (t->sig_fd >= 0)
            close(t->sig_fd);
        sigprocmask(SIG_SETMASK, &t->oldmask, NULL);
        return EXIT_USAGE;
    }
    snprintf(t->status, sizeof(t->status), "%s", TOP_KEYS);
    term_size(t);
    screen_draw(t);
    screen_loop(t);
    term_leave(t);
    close(t->sig_fd);
    sigprocmask(SIG_SETMASK, &t->oldmask, NULL);
    return 0;
}

int
ctl_top_run(const struct top_opts *o, const char *path, int timeout_ms)
{
    struct top t = {
        .o = o,
        .path = path,
        .timeout_ms = timeout_ms < TOP_SAMPLE_MAX_MS ? timeout_ms : TOP_SAMPLE_MAX_MS,
        .view = {.sort = o->sort, .vcpus = o->vcpus, .delay_s = o->delay_s, .status = NULL},
        .sig_fd = -1,
    };
    int r = o->batch ? batch_run(&t) : screen_run(&t);

    if (t.have)
        top_sample_free(&t.cur);
    return r;
}
