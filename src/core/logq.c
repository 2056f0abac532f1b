/* SPDX-License-Identifier: MIT */
/*
 * logq.c — a log function that never blocks the logging thread: lines go into a bounded ring under a mutex held
 * only for one copy, and a reader thread takes them (rcanvas_log_queue_*, include/rcanvas.h). Made for bindings
 * whose callbacks take an interpreter lock the app may hold for seconds.
 */
#include "rcanvas.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOGQ_LINE 1024

typedef struct logq_line {
    rcanvas_log_level level;
    char text[LOGQ_LINE];
} logq_line;

struct rcanvas_log_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when a line is added or the queue is closed */
    logq_line *ring;
    int cap, head, count; /* head: the oldest line */
    uint64_t dropped;     /* lines lost since the last pop (full, or closed) */
    int closed;
};

int rcanvas_log_queue_new(int max_lines, rcanvas_log_queue **out) {
    if (!out || max_lines < 1 || max_lines > 65536) return RCANVAS_EINVAL;
    *out = NULL;
    rcanvas_log_queue *q = calloc(1, sizeof *q);
    if (!q) return RCANVAS_ENOMEM;
    q->ring = calloc((size_t)max_lines, sizeof *q->ring);
    if (!q->ring) {
        free(q);
        return RCANVAS_ENOMEM;
    }
    q->cap = max_lines;
    pthread_mutex_init(&q->mu, NULL);
    /* CLOCK_MONOTONIC: a change of the wall clock must not stretch or cut a pop's timeout */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
    *out = q;
    return RCANVAS_OK;
}

void rcanvas_log_queue_fn(void *user, rcanvas_log_level level, const char *message) {
    rcanvas_log_queue *q = user;
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    if (q->closed || q->count == q->cap) {
        q->dropped++;
    } else {
        logq_line *l = &q->ring[(q->head + q->count) % q->cap];
        l->level = level;
        size_t n = message ? strnlen(message, LOGQ_LINE - 1) : 0;
        if (n) memcpy(l->text, message, n);
        l->text[n] = '\0';
        q->count++;
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

int rcanvas_log_queue_pop(rcanvas_log_queue *q, int timeout_ms, rcanvas_log_level *level, char *buf, size_t cap,
                          uint64_t *dropped) {
    if (!q || !buf || !cap) return RCANVAS_EINVAL;
    struct timespec until;
    if (timeout_ms > 0) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&q->mu);
    while (!q->count && !q->closed && timeout_ms != 0) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&q->cv, &q->mu);
        } else if (pthread_cond_timedwait(&q->cv, &q->mu, &until) == ETIMEDOUT) {
            break;
        }
    }
    if (dropped) *dropped = q->dropped;
    q->dropped = 0;
    int r;
    if (q->count) {
        logq_line *l = &q->ring[q->head];
        if (level) *level = l->level;
        size_t n = strnlen(l->text, cap - 1);
        memcpy(buf, l->text, n);
        buf[n] = '\0';
        q->head = (q->head + 1) % q->cap;
        q->count--;
        r = 1;
    } else {
        buf[0] = '\0';
        r = q->closed ? RCANVAS_ECLOSED : 0;
    }
    pthread_mutex_unlock(&q->mu);
    return r;
}

void rcanvas_log_queue_close(rcanvas_log_queue *q) {
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void rcanvas_log_queue_free(rcanvas_log_queue *q) {
    if (!q) return;
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->ring);
    free(q);
}
