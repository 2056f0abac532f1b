/* SPDX-License-Identifier: MIT */
/*
 * test_logq — the log queue (src/core/logq.c): lines come out in order with their level; a full queue drops and
 * counts, and the count comes with the next pop; loggers never wait for a reader that does not read (eight
 * threads log 20,000 lines each into a queue of 64 that nobody pops, and all return); a pop waits for a line from
 * another thread, times out, and returns RCANVAS_ECLOSED once closed and empty; long lines are cut, not overrun.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rcanvas.h"
#include "test.h"

static void test_order_and_drops(void) {
    rcanvas_log_queue *q;
    CHECK_EQ_INT(rcanvas_log_queue_new(0, &q), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_log_queue_new(65537, &q), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_log_queue_new(3, &q), RCANVAS_OK);
    char buf[64];
    rcanvas_log_level lv = RCANVAS_LOG_DEBUG;
    uint64_t dropped = 99;
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, 0, &lv, buf, sizeof buf, &dropped), 0);
    CHECK_EQ_INT(dropped, 0);
    rcanvas_log_queue_fn(q, RCANVAS_LOG_WARN, "one");
    rcanvas_log_queue_fn(q, RCANVAS_LOG_ERROR, "two");
    rcanvas_log_queue_fn(q, RCANVAS_LOG_INFO, "three");
    rcanvas_log_queue_fn(q, RCANVAS_LOG_INFO, "four"); /* full: dropped */
    rcanvas_log_queue_fn(q, RCANVAS_LOG_INFO, "five");
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, 0, &lv, buf, sizeof buf, &dropped), 1);
    CHECK(!strcmp(buf, "one") && lv == RCANVAS_LOG_WARN);
    CHECK_EQ_INT(dropped, 2);
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, 0, &lv, buf, sizeof buf, &dropped), 1);
    CHECK(!strcmp(buf, "two") && lv == RCANVAS_LOG_ERROR);
    CHECK_EQ_INT(dropped, 0);
    rcanvas_log_queue_fn(q, RCANVAS_LOG_DEBUG, "six"); /* wraps around the ring */
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, 0, &lv, buf, sizeof buf, NULL), 1);
    CHECK(!strcmp(buf, "three"));
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, 0, NULL, buf, sizeof buf, NULL), 1);
    CHECK(!strcmp(buf, "six"));
    /* a line longer than buf is cut to fit, NUL-terminated */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    rcanvas_log_queue_fn(q, RCANVAS_LOG_INFO, big);
    char small[8];
    memset(small, 'z', sizeof small);
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, 0, NULL, small, sizeof small, NULL), 1);
    CHECK(!strcmp(small, "xxxxxxx"));
    CHECK_EQ_INT(rcanvas_log_queue_pop(NULL, 0, NULL, small, sizeof small, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, 0, NULL, small, 0, NULL), RCANVAS_EINVAL);
    rcanvas_log_queue_close(q);
    rcanvas_log_queue_fn(q, RCANVAS_LOG_INFO, "after close");
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, -1, NULL, buf, sizeof buf, &dropped), RCANVAS_ECLOSED);
    CHECK_EQ_INT(dropped, 1);
    rcanvas_log_queue_free(q);
    rcanvas_log_queue_free(NULL);
}

#define LOGGERS 8
#define LINES 20000

static void *logger(void *q) {
    char line[64];
    for (int i = 0; i < LINES; i++) {
        snprintf(line, sizeof line, "line %d", i);
        rcanvas_log_queue_fn(q, RCANVAS_LOG_INFO, line);
    }
    return NULL;
}

/* Nobody pops while they log: every logger returns (a blocking queue would hang here until ctest's timeout), and
 * every line is either kept or counted. */
static void test_loggers_never_wait(void) {
    rcanvas_log_queue *q;
    CHECK_EQ_INT(rcanvas_log_queue_new(64, &q), RCANVAS_OK);
    pthread_t t[LOGGERS];
    for (int i = 0; i < LOGGERS; i++) pthread_create(&t[i], NULL, logger, q);
    for (int i = 0; i < LOGGERS; i++) pthread_join(t[i], NULL);
    char buf[64];
    uint64_t dropped = 0, d;
    int kept = 0;
    while (rcanvas_log_queue_pop(q, 0, NULL, buf, sizeof buf, &d) == 1) {
        dropped += d;
        kept++;
    }
    dropped += d;
    CHECK_EQ_INT(kept, 64);
    CHECK_EQ_INT(dropped, (uint64_t)LOGGERS * LINES - 64);
    rcanvas_log_queue_free(q);
}

static void *late_logger(void *q) {
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    rcanvas_log_queue_fn(q, RCANVAS_LOG_WARN, "late");
    return NULL;
}

static void *closer(void *q) {
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    rcanvas_log_queue_close(q);
    return NULL;
}

/* A pop waits for a line logged by another thread (an unbounded wait: it can only return through that line), and
 * a pop with no end returns when the queue is closed. */
static void test_pop_waits(void) {
    rcanvas_log_queue *q;
    CHECK_EQ_INT(rcanvas_log_queue_new(4, &q), RCANVAS_OK);
    char buf[64];
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, 20, NULL, buf, sizeof buf, NULL), 0); /* times out, nothing there */
    pthread_t t;
    pthread_create(&t, NULL, late_logger, q);
    rcanvas_log_level lv = RCANVAS_LOG_DEBUG;
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, -1, &lv, buf, sizeof buf, NULL), 1);
    CHECK(!strcmp(buf, "late") && lv == RCANVAS_LOG_WARN);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, closer, q);
    CHECK_EQ_INT(rcanvas_log_queue_pop(q, -1, NULL, buf, sizeof buf, NULL), RCANVAS_ECLOSED);
    pthread_join(t, NULL);
    rcanvas_log_queue_free(q);
}

int main(void) {
    test_order_and_drops();
    test_loggers_never_wait();
    test_pop_waits();
    TEST_MAIN_END();
}
