/* SPDX-License-Identifier: MIT */
/*
 * test_app.h — what the browser tests' apps (rcanvas-test-marker, -pan, -pixels, -two) share: a stop flag set by
 * SIGINT and SIGTERM (the test's finally kills the app), a monotonic clock in seconds, and the start of a server
 * with one canvas that prints the viewer's URL on a line the test reads ("PROG: open URL").
 */
#ifndef RC_TEST_APP_H
#define RC_TEST_APP_H

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rcanvas.h"

static volatile sig_atomic_t g_stop = 0;

static void app_on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

/* SIGINT and SIGTERM set g_stop: the app's loop ends and it frees what it made. */
static inline void app_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = app_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static inline double app_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A server of scfg with one canvas of ccfg into *srv and *cv; prints "prog: open URL" (flushed) and catches the
 * signals. Returns 0, or 1 after printing the error to stderr (nothing left to free then). */
static inline int app_open(const char *prog, const rcanvas_server_config *scfg, const rcanvas_canvas_config *ccfg,
                           rcanvas_server **srv, rcanvas_canvas **cv) {
    *srv = NULL;
    *cv = NULL;
    int r = rcanvas_server_new(scfg, srv);
    if (!r) r = rcanvas_canvas_new(*srv, ccfg, cv);
    if (r) {
        fprintf(stderr, "%s: %s\n", prog, rcanvas_strerror(r));
        rcanvas_server_free(*srv);
        *srv = NULL;
        return 1;
    }
    char url[512];
    rcanvas_server_url(*srv, NULL, url, sizeof url);
    printf("%s: open %s\n", prog, url);
    fflush(stdout);
    app_catch_signals();
    return 0;
}

#endif
