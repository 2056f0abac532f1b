/* SPDX-License-Identifier: MIT */
/*
 * test_accept_backoff — how the network thread knows that libwebsockets failed to accept() a connection, which
 * starts the back-off of docs/security.md ("Out of file descriptors"; server.c, accept_backoff):
 *  - lws's log line, in the form of each version (lib/roles/listen/ops-listen.c: lwsl_err("accept: errno %d\n"));
 *    4.1 passes it as it is, 4.3 puts lwsl_timestamp()'s "[%04d/%02d/%02d %02d:%02d:%02d:%04d] %c: " first (the
 *    line that was missed: the back-off never started, a busy loop of failed accepts). Each is fed to lws's own
 *    logging, so that it reaches the callback the server installed, and the errno must come out of it;
 *  - the listening socket itself, whatever lws logs: a connection waiting while no descriptor can be made;
 *  - the pause: 50 ms, doubling up to 1 s while failures come soon after a pause, from 50 ms again after a quiet
 *    spell.
 * The integration (descriptors exhausted under a live server, 503s, viewers served) is test_fdlimit's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rcanvas.h"
#include "test.h"
#include "transport/accept_backoff.h"

static void quiet(void *user, rcanvas_log_level level, const char *line) {
    (void)user, (void)level;
    if (getenv("ACCEPT_BACKOFF_VERBOSE")) fprintf(stderr, "log: %s\n", line);
}

/* The lines as each version writes them (lws 4.3: an error line at 04:00:00 on 6 Dec 2026). */
static const struct {
    const char *line, *what;
    int err;
} k_lines[] = {
    {"accept: errno 24\n", "lws 4.1, EMFILE", EMFILE},
    {"[2026/12/06 04:00:00:0000] E: accept: errno 24\n", "lws 4.3, EMFILE", EMFILE},
    {"[2026/12/06 04:00:00:0000] E: accept: errno 23\n", "lws 4.3, ENFILE", ENFILE},
    {"[1796529600:0000] E: accept: errno 24\n", "lws 4.3 without local time, EMFILE", EMFILE},
};

static void test_lines(void) {
    for (size_t i = 0; i < sizeof k_lines / sizeof k_lines[0]; i++)
        CHECK_MSG(rc_lws_accept_errno(k_lines[i].line) == k_lines[i].err, "%s: errno %d read from \"%s\"",
                  k_lines[i].what, rc_lws_accept_errno(k_lines[i].line), k_lines[i].line);
    /* lines that report no failed accept */
    CHECK_EQ_INT(rc_lws_accept_errno("ERROR on binding fd 5 to port 8090 (-1 98)\n"), 0);
    CHECK_EQ_INT(rc_lws_accept_errno("[2026/12/06 04:00:00:0000] N: accepted new conn port 4242 on fd=7\n"), 0);
    CHECK_EQ_INT(rc_lws_accept_errno("[2026/12/06 04:00:00:0000] E: accept: errno \n"), 0);
    CHECK_EQ_INT(rc_lws_accept_errno(""), 0);
    CHECK_EQ_INT(rc_lws_accept_errno(NULL), 0);
}

/* Each line through lws's logging into the server's callback (this thread's, as lws logs on the thread whose
 * accept() failed); the back-off then starts with the shortest pause. */
static void test_through_lws(void) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.log = quiet;
    sc.log_level = RCANVAS_LOG_WARN;
    rcanvas_server *srv = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&sc, &srv), RCANVAS_OK);
    if (!srv) return;
    CHECK_EQ_INT(rc_lws_take_accept_errno(), 0);
    for (size_t i = 0; i < sizeof k_lines / sizeof k_lines[0]; i++) {
        lwsl_err("%s", k_lines[i].line);
        int e = rc_lws_take_accept_errno();
        CHECK_MSG(e == k_lines[i].err, "%s: the server's log callback took errno %d from lws", k_lines[i].what, e);
        CHECK_EQ_INT(rc_lws_take_accept_errno(), 0); /* taken once */
        /* net_main: a nonzero errno starts the back-off (accept_backoff), first with the shortest pause */
        CHECK(e != 0 && rc_accept_pause_next(0, 0, 1000000) == RC_ACCEPT_PAUSE_MIN_US);
    }
    lwsl_err("%s", "ERROR on binding fd 5 to port 8090 (-1 98)\n");
    CHECK_EQ_INT(rc_lws_take_accept_errno(), 0);
    rcanvas_server_free(srv);
}

static void test_listener(void) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t sl = sizeof sa;
    CHECK(lfd >= 0 && !bind(lfd, (struct sockaddr *)&sa, sizeof sa) && !listen(lfd, 16) &&
          !getsockname(lfd, (struct sockaddr *)&sa, &sl));
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(cfd >= 0);
    CHECK_EQ_INT(rc_listener_starved(lfd), 0); /* nobody waiting */

    struct rlimit rl0, rl;
    getrlimit(RLIMIT_NOFILE, &rl0);
    rl = rl0;
    rl.rlim_cur = 64;
    CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &rl), 0);
    int eaten[64], n = 0;
    while (n < 64) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;
        eaten[n++] = fd;
    }
    CHECK(n < 64 && errno == EMFILE);
    CHECK_EQ_INT(rc_listener_starved(lfd), 0); /* out of descriptors, but nobody waiting */
    CHECK_EQ_INT(connect(cfd, (struct sockaddr *)&sa, sizeof sa), 0); /* in the backlog: no descriptor needed */
    CHECK_EQ_INT(rc_listener_starved(lfd), EMFILE);
    CHECK(accept(lfd, NULL, NULL) < 0 && errno == EMFILE); /* what lws's accept() meets */
    close(eaten[--n]);
    CHECK_EQ_INT(rc_listener_starved(lfd), 0); /* a descriptor free again: accept() would work */
    while (n > 0) close(eaten[--n]);
    setrlimit(RLIMIT_NOFILE, &rl0);
    CHECK_EQ_INT(rc_listener_starved(-1), 0);
    close(cfd);
    close(lfd);
}

static void test_pauses(void) {
    const int64_t ms = 1000;
    CHECK_EQ_INT(rc_accept_pause_next(0, 0, 5000 * ms), 50 * ms); /* the first */
    /* failures again right after each pause: 100, 200, 400, 800, then 1000 ms and no longer */
    int64_t pause = 50 * ms, end = 5050 * ms;
    const int64_t want[] = {100, 200, 400, 800, 1000, 1000};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int64_t next = rc_accept_pause_next(pause, end, end + 1 * ms);
        CHECK_MSG(next == want[i] * ms, "pause %zu: %lld ms", i + 2, (long long)(next / ms));
        end += ms + next;
        pause = next;
    }
    /* a quiet spell of twice the last pause: from the start */
    CHECK_EQ_INT(rc_accept_pause_next(pause, end, end + 2 * pause), 50 * ms);
    CHECK_EQ_INT(rc_accept_pause_next(pause, end, end + 2 * pause - 1), 1000 * ms);
}

int main(void) {
    test_lines();
    test_listener(); /* before any server: its threads need descriptors */
    test_through_lws();
    test_pauses();
    TEST_MAIN_END();
}
