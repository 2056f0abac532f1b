/* SPDX-License-Identifier: MIT */
/*
 * util.h — small shared pieces: the monotonic clock, logging through the app's callback, random tokens,
 * constant-time comparison.
 */
#ifndef RC_UTIL_H
#define RC_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "rcanvas.h"

/* CLOCK_MONOTONIC in microseconds. */
int64_t rc_now_us(void);

typedef struct rc_logger {
    rcanvas_log_fn fn;
    void *user;
    rcanvas_log_level level;
} rc_logger;

/* Formats and passes one line to the logger if level is enabled. Any thread. */
void rc_log(const rc_logger *lg, rcanvas_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fills out (2*nbytes+1 chars) with nbytes random bytes from getrandom(2), hex. 0 or RCANVAS_EIO. */
int rc_random_hex(char *out, size_t nbytes);

/* 1 if a (alen bytes) equals b (blen bytes), in time independent of where they differ. */
int rc_consttime_equal(const char *a, size_t alen, const char *b, size_t blen);

/* Number of online cores (≥ 1). */
int rc_cpu_count(void);

/* pthread_create(t, NULL, fn, arg) with every asynchronous signal blocked in the new thread (SIGINT, SIGTERM,
 * SIGPIPE, SIGCHLD, …; the fault signals SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT and the
 * profiler's SIGPROF stay open), so that a process-directed signal such as Ctrl-C goes to one of the app's
 * threads, which has a handler and is the one to wake up (a Python main thread, an asyncio selector), and never
 * to rcanvas' network, encoder or readback threads. Threads those threads start (codec libraries' own) inherit
 * the mask. The caller's own mask is unchanged. name (at most 15 bytes, else cut) names the thread for top -H and
 * /proc/PID/task/TID/comm, where bench-fanout splits the server's CPU by it. Returns pthread_create's 0 or error
 * number. Any thread. */
int rc_thread_create(pthread_t *t, const char *name, void *(*fn)(void *), void *arg);

#endif
