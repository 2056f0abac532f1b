/* SPDX-License-Identifier: MIT */
/*
 * test_fdlimit — out of file descriptors: with the process at its `ulimit -n` and clients hammering the
 * port, libwebsockets 4.1 used to log "accept: errno 24" on every poll round (508,906 lines in 10 s). Now its lines
 * and ours are rate-limited (core/ratelog.h) and accepting backs off (server.c: accept_backoff): the log gets a
 * handful of lines, the viewers already connected keep getting frames, the hammering clients are answered 503
 * (plain http) instead of hanging, and once descriptors are free again a new viewer joins. Twice: with lws's lines,
 * and with lws logging nothing, where only the listening socket shows that accepting fails (lws 4.3's lines, a
 * timestamp first, were once not recognized, and nothing backed off). Not timed: the bounds are on line counts and
 * on frames arriving at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rcanvas.h"
#include "test.h"
#include "ws_viewers.h"

static atomic_int g_lines, g_errno_lines, g_backoff_lines;

static void on_log(void *user, rcanvas_log_level level, const char *line) {
    (void)user;
    (void)level;
    atomic_fetch_add(&g_lines, 1);
    if (strstr(line, "errno 24")) atomic_fetch_add(&g_errno_lines, 1);
    if (strstr(line, "cannot accept")) atomic_fetch_add(&g_backoff_lines, 1);
    if (getenv("FDLIMIT_VERBOSE")) fprintf(stderr, "log: %s\n", line);
}

typedef struct app {
    rcanvas_canvas *cv;
    atomic_int stop;
} app;

static void *app_main(void *arg) {
    app *a = arg;
    static uint8_t px[320 * 240 * 4];
    uint32_t n = 0;
    while (!atomic_load(&a->stop)) {
        int wake = rcanvas_wait(a->cv, 50);
        if (wake < 0) break;
        if (!(wake & RCANVAS_WAKE_DRAW)) continue;
        memset(px, (int)(n++ * 7), sizeof px);
        rcanvas_frame f = {px, 320, 240, 320 * 4, RCANVAS_FORMAT_RGBA8, 0};
        rcanvas_present(a->cv, &f);
    }
    return NULL;
}

static uint64_t frames_of(wsv *w) {
    uint64_t f, b;
    int o, c, r;
    wsv_totals(w, &f, &b, &o, &c, &r);
    return f;
}

static int wait_frames(wsv *w, uint64_t min, int ms) {
    for (int i = 0; i < ms / 20 && frames_of(w) < min; i++) usleep(20000);
    return frames_of(w) >= min;
}

/* The hammering client (a child process, with descriptors of its own): connects again and again for ms, reads
 * what comes back for up to 1.5 s, and writes how many connections were answered 503 to fd out. */
static void hammer(int port, int ms, int out) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int answered = 0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms) break;
        for (int k = 0; k < 20; k++) { /* 20 at once, then read them */
            int fds[20];
            int n = 0;
            for (; n < 20; n++) {
                fds[n] = socket(AF_INET, SOCK_STREAM, 0);
                if (fds[n] < 0 || connect(fds[n], (struct sockaddr *)&sa, sizeof sa)) {
                    if (fds[n] >= 0) close(fds[n]);
                    break;
                }
                struct timeval tv = {1, 500000};
                setsockopt(fds[n], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            }
            for (int i = 0; i < n; i++) {
                char buf[64] = "";
                if (recv(fds[i], buf, sizeof buf - 1, 0) > 0 && !strncmp(buf, "HTTP/1.1 503", 12)) answered++;
                close(fds[i]);
            }
            break;
        }
    }
    (void)!write(out, &answered, sizeof answered);
}

/* The process out of descriptors for 3 s while a child hammers the port; then descriptors are freed. lws_lines:
 * lws's own lines are on (its "accept: errno 24" is then logged, rate-limited), else lws logs nothing: only the
 * listening socket can tell the server that accepting fails (as when lws 4.3's lines, timestamp first, went
 * unrecognized). */
static void starve(int port, wsv *w, int lws_lines) {
    int errno0 = atomic_load(&g_errno_lines), backoff0 = atomic_load(&g_backoff_lines);
    int pfd[2];
    CHECK_EQ_INT(pipe(pfd), 0);
    /* this process (the server's) out of descriptors, before the hammering starts: were the child forked first,
     * its first connections could be accepted while descriptors are still free (seen on a many-core CI machine:
     * no accept ever failed, and the child waited on those idle connections instead) */
    int eaten[256], neaten = 0;
    while (neaten < 256) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;
        eaten[neaten++] = fd;
    }
    CHECK(neaten > 0 && neaten < 256);
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < neaten; i++) close(eaten[i]); /* the child's own room for its sockets */
        close(pfd[0]);
        hammer(port, 2500, pfd[1]);
        _exit(0);
    }
    close(pfd[1]);
    int lines0 = atomic_load(&g_lines);
    uint64_t f0 = frames_of(w);
    usleep(3000000); /* the hammering, and half a second after */
    uint64_t f1 = frames_of(w);
    int lines = atomic_load(&g_lines) - lines0;
    for (int i = 0; i < neaten; i++) close(eaten[i]);
    int answered = -1;
    (void)!read(pfd[0], &answered, sizeof answered);
    close(pfd[0]);
    int st = 0;
    waitpid(child, &st, 0);

    int errno_lines = atomic_load(&g_errno_lines) - errno0, backoff_lines = atomic_load(&g_backoff_lines) - backoff0;
    printf("%s: out of descriptors for 3 s: %d log lines (%d \"errno 24\", %d back-off), viewers' frames %llu -> %llu, "
           "%d hammering connections answered 503\n",
           lws_lines ? "lws logging" : "lws silent", lines, errno_lines, backoff_lines, (unsigned long long)f0,
           (unsigned long long)f1, answered);
    CHECK_MSG(lines <= 8, "%d lines logged in 3 s", lines);
    if (lws_lines) {
        CHECK(errno_lines >= 1); /* it did run out (else the test proves nothing) */
        CHECK(errno_lines <= 2);
        CHECK(backoff_lines >= 1 && backoff_lines <= 2);
    } else { /* the back-off's line may fall in the same 5 s as the first run's (rate-limited): the 503s below,
              * which only the back-off writes, show that it ran */
        CHECK_EQ_INT(errno_lines, 0);
    }
    CHECK_MSG(f1 >= f0 + 10, "the viewers got %llu frames meanwhile", (unsigned long long)(f1 - f0));
    CHECK_MSG(answered >= 1, "%d connections answered 503", answered);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 200;
    CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &rl), 0);

    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.log = on_log;
    sc.log_level = RCANVAS_LOG_WARN;
    rcanvas_server *srv = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&sc, &srv), RCANVAS_OK);
    if (!srv) TEST_MAIN_END();
    app a = {0};
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    cc.max_fps = 30;
    CHECK_EQ_INT(rcanvas_canvas_new(srv, &cc, &a.cv), RCANVAS_OK);
    pthread_t th;
    pthread_create(&th, NULL, app_main, &a);
    int port = rcanvas_server_port(srv);

    wsv_config vc = {.port = port, .token = rcanvas_server_token(srv), .n = 2, .width = 320, .height = 240};
    wsv *w = NULL;
    CHECK_EQ_INT(wsv_start(&vc, &w), 0);
    CHECK_MSG(wait_frames(w, 6, 10000), "the viewers got %llu frames before", (unsigned long long)frames_of(w));

    starve(port, w, 1);
    /* descriptors free again: a new viewer joins (after at most one pause) */
    wsv_config vc2 = vc;
    vc2.n = 1;
    wsv *w2 = NULL;
    CHECK_EQ_INT(wsv_start(&vc2, &w2), 0);
    CHECK_MSG(wait_frames(w2, 3, 10000), "the new viewer got %llu frames", (unsigned long long)frames_of(w2));
    wsv_stop(w2);

    /* again with lws logging nothing: the listener alone starts the back-off */
    lws_set_log_level(0, NULL);
    starve(port, w, 0);
    wsv *w3 = NULL;
    CHECK_EQ_INT(wsv_start(&vc2, &w3), 0);
    CHECK_MSG(wait_frames(w3, 3, 10000), "the third viewer got %llu frames", (unsigned long long)frames_of(w3));
    wsv_stop(w3);
    wsv_stop(w);
    atomic_store(&a.stop, 1);
    pthread_join(th, NULL);
    rcanvas_server_free(srv);
    TEST_MAIN_END();
}
