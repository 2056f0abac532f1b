/* SPDX-License-Identifier: MIT */
/*
 * test_ratelog — rate-limited logging (src/core/ratelog.c): one line per key per interval, the others
 * counted and said on the next line of that key or by the flush; keys apart; digits folded in keys; a full table
 * says the count of the key it forgets.
 */
#include <stdio.h>
#include <string.h>

#include "core/ratelog.h"
#include "test.h"

typedef struct lines {
    int n;
    char last[512];
    char all[4096];
} lines;

static void collect(void *user, rcanvas_log_level level, const char *line) {
    (void)level;
    lines *l = user;
    l->n++;
    snprintf(l->last, sizeof l->last, "%s", line);
    size_t o = strlen(l->all);
    snprintf(l->all + o, sizeof l->all - o, "%s\n", line);
}

static void test_one_key(void) {
    lines got = {0};
    rc_logger lg = {.fn = collect, .user = &got, .level = RCANVAS_LOG_INFO};
    rc_ratelog rl;
    rc_ratelog_init(&rl, 1000000);
    int64_t t = 5000000;
    int written = 0;
    for (int i = 0; i < 100000; i++) /* 100,000 lines in 0.1 s: one written */
        written += rc_log_limited_at(&rl, &lg, "accept", t + i, RCANVAS_LOG_ERROR, "accept: errno %d", 24);
    CHECK_EQ_INT(written, 1);
    CHECK_EQ_INT(got.n, 1);
    CHECK(!strcmp(got.last, "accept: errno 24"));
    CHECK_EQ_INT((int)rl.total_suppressed, 99999);
    /* the next one after the interval carries the count */
    CHECK_EQ_INT(rc_log_limited_at(&rl, &lg, "accept", t + 1000000, RCANVAS_LOG_ERROR, "accept: errno 24"), 1);
    CHECK_EQ_INT(got.n, 2);
    CHECK_MSG(strstr(got.last, "accept: errno 24 (99999 more like this in 1.0 s)") != NULL, "got '%s'", got.last);
    /* a flood that stops is still accounted for by the flush, once */
    for (int i = 1; i <= 7; i++) rc_log_limited_at(&rl, &lg, "accept", t + 1000000 + i, RCANVAS_LOG_ERROR, "x");
    rc_ratelog_flush(&rl, &lg, t + 1500000); /* too early */
    CHECK_EQ_INT(got.n, 2);
    rc_ratelog_flush(&rl, &lg, t + 2000000);
    CHECK_EQ_INT(got.n, 3);
    CHECK_MSG(!strcmp(got.last, "7 more like this in 1.0 s: accept"), "got '%s'", got.last);
    rc_ratelog_flush(&rl, &lg, t + 9000000); /* nothing left to say */
    CHECK_EQ_INT(got.n, 3);
    rc_ratelog_destroy(&rl);
}

static void test_keys_and_levels(void) {
    lines got = {0};
    rc_logger lg = {.fn = collect, .user = &got, .level = RCANVAS_LOG_WARN};
    rc_ratelog rl;
    rc_ratelog_init(&rl, 1000000);
    CHECK_EQ_INT(rc_log_limited_at(&rl, &lg, "a", 0, RCANVAS_LOG_WARN, "a1"), 1);
    CHECK_EQ_INT(rc_log_limited_at(&rl, &lg, "b", 1, RCANVAS_LOG_WARN, "b1"), 1); /* another key: its own line */
    CHECK_EQ_INT(rc_log_limited_at(&rl, &lg, "a", 2, RCANVAS_LOG_WARN, "a2"), 0);
    CHECK_EQ_INT(rc_log_limited_at(&rl, &lg, "a", 3, RCANVAS_LOG_INFO, "hidden"), 0); /* below the level: not counted */
    CHECK_EQ_INT((int)rl.total_suppressed, 1);
    CHECK_EQ_INT(got.n, 2);
    /* a full table forgets the key written longest ago, and says its count */
    for (int i = 0; i < RC_RATELOG_SLOTS - 2; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        CHECK_EQ_INT(rc_log_limited_at(&rl, &lg, k, 10 + i, RCANVAS_LOG_WARN, "%s", k), 1);
    }
    got.all[0] = '\0';
    CHECK_EQ_INT(rc_log_limited_at(&rl, &lg, "new", 100, RCANVAS_LOG_WARN, "new"), 1);
    CHECK_MSG(!strcmp(got.all, "1 more like: a\nnew\n"), "got '%s'", got.all);
    CHECK_EQ_INT(rc_log_limited_at(&rl, &lg, "a", 101, RCANVAS_LOG_WARN, "a3"), 1); /* forgotten: written again */
    rc_ratelog_destroy(&rl);
}

static void test_key_folding(void) {
    char k[RC_RATELOG_KEY];
    rc_ratelog_key("ERROR on binding fd 5 to port 8090 (-1 98)", k);
    CHECK_MSG(!strcmp(k, "ERROR on binding fd # to port # (-# #)"), "got '%s'", k);
    rc_ratelog_key("accept: errno 24", k);
    char k2[RC_RATELOG_KEY];
    rc_ratelog_key("accept: errno 23", k2);
    CHECK(!strcmp(k, k2));
    char longline[300];
    memset(longline, 'x', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    rc_ratelog_key(longline, k);
    CHECK_EQ_INT((int)strlen(k), RC_RATELOG_KEY - 1);
}

int main(void) {
    test_one_key();
    test_keys_and_levels();
    test_key_folding();
    TEST_MAIN_END();
}
