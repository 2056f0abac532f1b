/* SPDX-License-Identifier: MIT */
/*
 * test_signals — rcanvas' own threads (network, encoder pool) start with the asynchronous signals blocked
 * (core/util.c: rc_thread_create), so that a Ctrl-C goes to a thread of the app, the one with a handler
 * that has to wake up (a Python main thread, an asyncio selector), never to a library thread where it would be
 * handled without waking the app's loop. Checks (1) every thread the server started has SIGINT, SIGTERM and
 * SIGPIPE blocked and SIGSEGV open, (2) the caller's own mask is unchanged, and (3) with the main thread blocking
 * SIGINT (as an app with a signal thread does), 40 process-directed SIGINTs all land in the app's one thread
 * that takes them: without the masks the kernel hands most of them to rcanvas' threads.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "rcanvas.h"
#include "test.h"

/* The SigBlk mask of /proc/self/task/TID/status, or 0 with *ok = 0 if it cannot be read. */
static unsigned long long sigblk(const char *tid, int *ok) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    *ok = 0;
    if (!f) return 0;
    unsigned long long m = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "SigBlk: %llx", &m) == 1) {
            *ok = 1;
            break;
        }
    fclose(f);
    return m;
}

static int blocked(unsigned long long mask, int sig) { return (int)((mask >> (sig - 1)) & 1); }

static atomic_int g_app_tid, g_in_app, g_elsewhere, g_handled, g_stop;

static void on_sigint(int sig) {
    (void)sig;
    if (gettid() == atomic_load(&g_app_tid)) atomic_fetch_add(&g_in_app, 1);
    else atomic_fetch_add(&g_elsewhere, 1);
    atomic_fetch_add(&g_handled, 1);
}

static void *app_signal_thread(void *arg) {
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL); /* the app's thread for SIGINT */
    atomic_store(&g_app_tid, gettid());
    while (!atomic_load(&g_stop)) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(void) {
    rcanvas_server_config cfg;
    rcanvas_server_config_init(&cfg);
    cfg.port = 0;
    cfg.encode_threads = 3;
    rcanvas_server *srv = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &srv), RCANVAS_OK);
    if (!srv) TEST_MAIN_END();
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    rcanvas_canvas *cv = NULL;
    CHECK_EQ_INT(rcanvas_canvas_new(srv, &cc, &cv), RCANVAS_OK);

    /* (1) and (2): the masks, read from /proc */
    char self[32];
    snprintf(self, sizeof self, "%d", (int)gettid());
    int ok, others = 0;
    unsigned long long m = sigblk(self, &ok);
    CHECK(ok);
    CHECK_MSG(!blocked(m, SIGINT) && !blocked(m, SIGTERM), "the caller's mask changed: SigBlk %llx", m);
    /* A thread that glibc is still starting has every signal blocked until start_thread sets the inherited
     * mask: scan again until none shows that (up to 10 s on a loaded machine), then check. */
    char bad[1024] = "";
    for (int round = 0; round < 1000; round++) {
        int starting = 0;
        others = 0;
        bad[0] = 0;
        DIR *d = opendir("/proc/self/task");
        if (!d) {
            CHECK_MSG(0, "cannot read /proc/self/task");
            break;
        }
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.' || !strcmp(e->d_name, self)) continue;
            m = sigblk(e->d_name, &ok);
            if (!ok) continue; /* gone meanwhile */
            others++;
            if (blocked(m, SIGSEGV) && blocked(m, SIGBUS) && blocked(m, SIGFPE)) starting++;
            else if (!(blocked(m, SIGINT) && blocked(m, SIGTERM) && blocked(m, SIGPIPE) && blocked(m, SIGHUP)) ||
                     blocked(m, SIGSEGV) || blocked(m, SIGBUS) || blocked(m, SIGFPE) || blocked(m, SIGPROF))
                if (strlen(bad) < sizeof bad - 64) sprintf(bad + strlen(bad), " %.20s:%llx", e->d_name, m);
        }
        closedir(d);
        if (!starting) break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    /* each: SIGINT, SIGTERM, SIGPIPE, SIGHUP blocked; SIGSEGV, SIGBUS, SIGFPE, SIGPROF open */
    CHECK_MSG(!bad[0], "threads with another mask (TID:SigBlk):%s", bad);
    CHECK_MSG(others >= 4, "%d rcanvas threads seen, expected the network thread and 3 encoders", others);

    /* (3): where process-directed SIGINTs land */
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    pthread_t app;
    CHECK_EQ_INT(pthread_create(&app, NULL, app_signal_thread, NULL), 0);
    while (!atomic_load(&g_app_tid)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    const int n = 40;
    for (int i = 0; i < n; i++) {
        kill(getpid(), SIGINT);
        /* one at a time, so that none merges with a pending one; up to 10 s each (a loaded machine) */
        for (int w = 0; atomic_load(&g_handled) <= i && w < 10000; w++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    CHECK_EQ_INT(atomic_load(&g_handled), n);
    CHECK_EQ_INT(atomic_load(&g_elsewhere), 0);
    CHECK_EQ_INT(atomic_load(&g_in_app), n);
    atomic_store(&g_stop, 1);
    pthread_join(app, NULL);
    printf("%d rcanvas threads checked; %d of %d SIGINTs in the app's thread, %d elsewhere\n",
           others, atomic_load(&g_in_app), n, atomic_load(&g_elsewhere));

    rcanvas_server_free(srv);
    TEST_MAIN_END();
}
