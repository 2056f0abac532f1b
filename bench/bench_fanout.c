/* SPDX-License-Identifier: MIT */
/*
 * bench-fanout — many viewers of one canvas: rcanvas-demo (the animated Mandelbrot by default) with N raw acking
 * viewers (tests/ws_viewers.c: one libwebsockets client thread in this process; each viewer sends its size, then
 * acks every frame as the browser does, without decoding). Per N it starts a fresh demo, waits until every viewer
 * has a frame, lets it settle, then measures for a window:
 *   fps per viewer (min / median / max), draws/s (distinct frames the app presented), Mbit/s over all viewers,
 *   the server's CPU (% of one core, from /proc/PID/stat) and its network thread's part (the thread named
 *   "rcanvas-net": /proc/PID/task/TID/stat), CPU µs per viewer-frame (server, and network thread alone), and this
 *   process's own CPU (the viewers), so that one sees whether the client side could be the limit.
 *   bench-fanout [--viewers 1,16,100] [--seconds S] [--codecs h264,jpeg] [--demo PATH] [-- DEMO ARGS...]
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ws_viewers.h"
#include "bench_util.h"

#define PROG "bench-fanout"
static const char *g_codecs; /* --codecs: NULL for protocol 1 viewers */
static const char USAGE[] =
    "usage: bench-fanout [options] [-- DEMO OPTIONS...]\n"
    "  --viewers LIST       comma-separated viewer counts, each 1-4096 (default 1,16,100)\n"
    "  --seconds S          measuring window per count, 1-600 (default 10)\n"
    "  --settle S           seconds between the last viewer's first frame and the window, 0-60 (default 2)\n"
    "  --size WxH           the size each viewer asks for (CSS px, pixel ratio 1; default 640x480)\n"
    "  --codecs LIST        the viewers decode these (the upgrade URL's codecs=, e.g. h264,jpeg: protocol 2);\n"
    "                       default: protocol 1 viewers (JPEG/PNG)\n"
    "  --demo PATH          the rcanvas-demo to run (default: rcanvas-demo beside this program)\n"
    "  --help               print this and exit\n"
    "  DEMO OPTIONS go to rcanvas-demo after --port 0 --max-viewers N (e.g. -- --codec jpeg --fps 60)\n";

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {}
}

/* utime + stime of a /proc stat file, in clock ticks; -1 if unreadable. comm (field 2) may hold spaces: parse
 * after its closing parenthesis. */
static long long stat_ticks(const char *path, char *comm, size_t comm_cap) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close) return -1;
    if (comm) snprintf(comm, comm_cap, "%.*s", (int)(close - open - 1), open + 1);
    unsigned long long ut = 0, st = 0;
    /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) return -1;
    return (long long)(ut + st);
}

/* CPU ticks of the process and of its thread named "rcanvas-net". */
static void server_ticks(pid_t pid, long long *all, long long *net) {
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    *all = stat_ticks(path, NULL, 0);
    *net = 0;
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[300], comm[64];
        snprintf(p, sizeof p, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
        long long t = stat_ticks(p, comm, sizeof comm);
        if (t > 0 && !strcmp(comm, "rcanvas-net")) *net += t;
    }
    closedir(d);
}

/* One thread's name and its time on a CPU (ns, /proc/PID/task/TID/schedstat's first field: finer than stat's
 * clock ticks, which a thread at a few per cent of a core fills only a few times a second). */
typedef struct {
    int tid;
    char comm[32];
    long long ns;
} thread_cpu;

#define MAX_THREADS 1024

/* Snapshot of every thread of pid; returns how many (at most MAX_THREADS). */
static int thread_cpus(pid_t pid, thread_cpu *out) {
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_THREADS) {
        if (e->d_name[0] == '.') continue;
        char p[300];
        snprintf(p, sizeof p, "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        long long ns = -1;
        int ok = fscanf(f, "%lld", &ns) == 1;
        fclose(f);
        snprintf(p, sizeof p, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
        if (!ok || stat_ticks(p, out[n].comm, sizeof out[n].comm) < 0) continue;
        out[n].tid = atoi(e->d_name);
        out[n].ns = ns;
        n++;
    }
    closedir(d);
    return n;
}

typedef struct {
    char comm[32];
    double us;
} name_cpu;

static int cmp_name_cpu(const void *a, const void *b) {
    double x = ((const name_cpu *)a)->us, y = ((const name_cpu *)b)->us;
    return (x < y) - (x > y);
}

/* The server's CPU between two snapshots split by thread name (threads of one name summed; a thread born in the
 * window counts from 0), µs per viewer-frame, largest first: where the us/vf column goes. */
static void print_thread_split(const thread_cpu *a, int na, const thread_cpu *b, int nb, uint64_t vf) {
    static name_cpu by[MAX_THREADS];
    int n = 0;
    for (int i = 0; i < nb; i++) {
        long long before = 0;
        for (int j = 0; j < na; j++)
            if (a[j].tid == b[i].tid) before = a[j].ns;
        double us = (double)(b[i].ns - before) / 1e3 / (double)(vf ? vf : 1);
        int k = 0;
        while (k < n && strcmp(by[k].comm, b[i].comm)) k++;
        if (k == n) snprintf(by[n++].comm, sizeof by[0].comm, "%s", b[i].comm), by[k].us = 0;
        by[k].us += us;
    }
    qsort(by, (size_t)n, sizeof by[0], cmp_name_cpu);
    printf("        us/vf by thread:");
    for (int k = 0; k < n && k < 8; k++) printf("%s %s %.1f", k ? "," : "", by[k].comm, by[k].us);
    printf("\n");
}

/* VmRSS of a process, MiB; -1 if unreadable. */
static double rss_mib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    double r = -1;
    while (fgets(line, sizeof line, f)) {
        long kb;
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) r = kb / 1024.0;
    }
    fclose(f);
    return r;
}

static double self_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

typedef struct demo {
    pid_t pid;
    int port;
    char token[160];
} demo;

/* Starts the demo with --port 0 --max-viewers max_viewers and the extra args; reads its URL. 0 or -1. */
static int demo_start(const char *exe, int max_viewers, char **extra, int nextra, demo *d) {
    int fd[2];
    if (pipe(fd)) return -1;
    char mv[16];
    snprintf(mv, sizeof mv, "%d", max_viewers);
    char **argv = calloc((size_t)nextra + 8, sizeof(char *));
    if (!argv) return -1;
    int k = 0;
    argv[k++] = (char *)exe;
    argv[k++] = "--port";
    argv[k++] = "0";
    argv[k++] = "--max-viewers";
    argv[k++] = mv;
    for (int i = 0; i < nextra; i++) argv[k++] = extra[i];
    argv[k] = NULL;
    pid_t pid = fork();
    if (pid < 0) {
        free(argv);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv(exe, argv);
        fprintf(stderr, "%s: cannot run %s: %s\n", PROG, exe, strerror(errno));
        _exit(127);
    }
    free(argv);
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[1024];
    int ok = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *u = strstr(line, "open http://");
        if (u && sscanf(u, "open http://127.0.0.1:%d/?token=%150[A-Za-z0-9_-]", &d->port, d->token) == 2) {
            ok = 1;
            break;
        }
    }
    if (f) fclose(f); /* the demo prints nothing more to stdout without --print-events */
    d->pid = pid;
    if (!ok) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return 0;
}

static void demo_stop(demo *d) {
    kill(d->pid, SIGINT);
    for (int i = 0; i < 50; i++) {
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid) return;
        sleep_ms(100);
    }
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
}


/* One row: n viewers; *min_fps: the slowest viewer's. Returns 0, or 1 if a viewer got no frame or was refused
 * (the row says so). */
static int run_row(const char *exe, int n, int max_viewers, double seconds, double settle, int w, int h,
                   char **extra, int nextra, double *min_fps) {
    *min_fps = 0;
    demo d;
    if (demo_start(exe, max_viewers, extra, nextra, &d)) {
        fprintf(stderr, "%s: %s did not print its URL\n", PROG, exe);
        return 1;
    }
    wsv_config cfg = {.port = d.port, .token = d.token, .n = n, .width = w, .height = h, .pixel_ratio = 1,
                      .codecs = g_codecs};
    wsv *v = NULL;
    if (wsv_start(&cfg, &v)) {
        fprintf(stderr, "%s: cannot start %d viewers\n", PROG, n);
        demo_stop(&d);
        return 1;
    }
    /* every viewer open and with a frame (or refused), 30 s at most */
    int64_t t0 = now_us();
    int have = 0, refused = 0, closed = 0;
    while (now_us() - t0 < 30000000) {
        have = refused = closed = 0;
        for (int i = 0; i < n; i++) {
            wsv_viewer_stats s;
            wsv_stats(v, i, &s);
            have += s.frames > 0;
            refused += s.state == 3;
            closed += s.state == 2;
        }
        if (have + refused + closed >= n) break;
        sleep_ms(50);
    }
    double join_s = (now_us() - t0) * 1e-6;
    sleep_ms((int)(settle * 1000));

    uint64_t *f0 = calloc((size_t)n, sizeof(uint64_t));
    uint32_t *s0 = calloc((size_t)n, sizeof(uint32_t));
    double *fps = calloc((size_t)n, sizeof(double));
    if (!f0 || !s0 || !fps) abort();
    uint64_t b0 = 0, b1 = 0;
    for (int i = 0; i < n; i++) {
        wsv_viewer_stats s;
        wsv_stats(v, i, &s);
        f0[i] = s.frames, s0[i] = s.last_seq;
    }
    wsv_totals(v, NULL, &b0, NULL, NULL, NULL);
    long long all0, net0, all1, net1;
    static thread_cpu th0[MAX_THREADS], th1[MAX_THREADS];
    int nth0 = thread_cpus(d.pid, th0);
    server_ticks(d.pid, &all0, &net0);
    double c0 = self_cpu_s();
    int64_t ta = now_us();
    sleep_ms((int)(seconds * 1000));
    int64_t tb = now_us();
    server_ticks(d.pid, &all1, &net1);
    int nth1 = thread_cpus(d.pid, th1);
    double c1 = self_cpu_s(), rss = rss_mib(d.pid);
    wsv_totals(v, NULL, &b1, NULL, NULL, NULL);
    double dt = (tb - ta) * 1e-6;
    uint64_t vf = 0;
    uint32_t draws = 0;
    int open = 0;
    for (int i = 0; i < n; i++) {
        wsv_viewer_stats s;
        wsv_stats(v, i, &s);
        vf += s.frames - f0[i];
        fps[i] = (double)(s.frames - f0[i]) / dt;
        if (s.last_seq - s0[i] > draws) draws = s.last_seq - s0[i];
        open += s.state == 1;
    }
    wsv_stop(v);
    demo_stop(&d);
    qsort(fps, (size_t)n, sizeof(double), bench_cmp_double);
    double tick = (double)sysconf(_SC_CLK_TCK);
    double cpu_s = (all1 - all0) / tick, net_s = (net1 - net0) / tick;
    printf("%7d %8.1f %8.1f %8.1f %8.1f %9.1f %8.0f %8.0f %9.1f %9.1f %8.0f %7.1f %6.1f  %s\n", n, fps[0],
           fps[n / 2], fps[n - 1], draws / dt, (double)(b1 - b0) * 8 / dt / 1e6, 100 * cpu_s / dt, 100 * net_s / dt,
           vf ? cpu_s * 1e6 / (double)vf : 0, vf ? net_s * 1e6 / (double)vf : 0, 100 * (c1 - c0) / dt, rss, join_s,
           open == n ? "" : "(not all open: see below)");
    print_thread_split(th0, nth0, th1, nth1, vf);
    if (open != n)
        printf("        %d of %d viewers open at the end (%d refused, %d closed before the window)\n", open, n,
               refused, closed);
    fflush(stdout);
    int bad = open != n || fps[0] <= 0;
    *min_fps = open == n ? fps[0] : 0;
    free(f0);
    free(s0);
    free(fps);
    return bad;
}

int main(int argc, char **argv) {
    int counts[64], ncounts = 0, w = 640, h = 480;
    double seconds = 10, settle = 2;
    static char exe_buf[4096];
    const char *exe = NULL;
    char **extra = NULL;
    int nextra = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--")) {
            extra = argv + i + 1;
            nextra = argc - i - 1;
            break;
        } else if (!strcmp(a, "--viewers")) {
            const char *rule = "a comma-separated list of integers from 1 to 4096";
            if (!(v = cli_value(argc, argv, &i))) return cli_missing(PROG, a, rule);
            char tmp[512];
            snprintf(tmp, sizeof tmp, "%s", v);
            ncounts = 0;
            for (char *save = NULL, *p = strtok_r(tmp, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
                long x;
                if (ncounts == 64 || cli_parse_long(p, 1, 4096, &x)) return cli_error(PROG, "%s %s: must be %s", a, v, rule);
                counts[ncounts++] = (int)x;
            }
            if (!ncounts) return cli_error(PROG, "%s %s: must be %s", a, v, rule);
        } else if (!strcmp(a, "--seconds")) {
            if (cli_number(PROG, a, cli_value(argc, argv, &i), 1, 600, &seconds)) return CLI_USAGE;
        } else if (!strcmp(a, "--settle")) {
            if (cli_number(PROG, a, cli_value(argc, argv, &i), 0, 60, &settle)) return CLI_USAGE;
        } else if (!strcmp(a, "--size")) {
            if (!(v = cli_value(argc, argv, &i))) return cli_missing(PROG, a, "WxH, e.g. 640x480");
            char x;
            if (sscanf(v, "%d%c%d", &w, &x, &h) != 3 || x != 'x' || w < 16 || h < 16 || w > 8192 || h > 8192)
                return cli_error(PROG, "%s %s: must be WxH, each 16-8192, e.g. 640x480", a, v);
        } else if (!strcmp(a, "--codecs")) {
            if (!(g_codecs = cli_value(argc, argv, &i))) return cli_missing(PROG, a, "a codec list such as h264,jpeg");
        } else if (!strcmp(a, "--demo")) {
            if (!(v = cli_value(argc, argv, &i))) return cli_missing(PROG, a, "the path of rcanvas-demo");
            exe = v;
        } else {
            int r = cli_rest(PROG, USAGE, a, NULL, NULL);
            if (r >= 0) return r;
        }
    }
    if (!ncounts) counts[0] = 1, counts[1] = 16, counts[2] = 100, ncounts = 3;
    if (!exe) { /* beside this program */
        ssize_t k = readlink("/proc/self/exe", exe_buf, sizeof exe_buf - 32);
        if (k <= 0) return cli_error(PROG, "--demo: needed (cannot find this program's folder)");
        exe_buf[k] = '\0';
        char *slash = strrchr(exe_buf, '/');
        strcpy(slash ? slash + 1 : exe_buf, "rcanvas-demo");
        exe = exe_buf;
    }
    if (access(exe, X_OK)) return cli_error(PROG, "--demo %s: not an executable program", exe);
    signal(SIGPIPE, SIG_IGN);
    int maxn = 0;
    for (int i = 0; i < ncounts; i++)
        if (counts[i] > maxn) maxn = counts[i];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench-fanout: %s --port 0 --max-viewers %d", exe, maxn);
    for (int i = 0; i < nextra; i++) printf(" %s", extra[i]);
    printf("\n  viewers %dx%d, pixel ratio 1; window %.0f s after every viewer's first frame + %.0f s; %ld cores; "
           "CPU in %% of one core\n",
           w, h, seconds, settle, cores);
    printf("%7s %8s %8s %8s %8s %9s %8s %8s %9s %9s %8s %7s %6s\n", "viewers", "fps min", "median", "max",
           "draws/s", "Mbit/s", "server%", "net%", "us/vf", "net us/vf", "client%", "RSS MiB", "join s");
    int bad = 0;
    double min_fps[64];
    for (int i = 0; i < ncounts; i++)
        bad |= run_row(exe, counts[i], maxn, seconds, settle, w, h, extra, nextra, &min_fps[i]);
    printf("us/vf: server CPU µs per viewer-frame (all threads: render, encode, send); net us/vf: the network "
           "thread's alone (send, acks, poll); RSS: the server's, at the end of the window\n");
    for (int i = 0; i < ncounts; i++) /* the goal: 100 viewers of the 640x480 animated demo, each >= 30 fps */
        if (counts[i] == 100 && w == 640 && h == 480 && !nextra)
            printf("goal: 100 viewers each >= 30 fps: %s (slowest %.1f fps)\n", min_fps[i] >= 30 ? "met" : "NOT met",
                   min_fps[i]);
    return bad;
}
