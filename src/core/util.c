/* SPDX-License-Identifier: MIT */
/*
 * util.c — clock, logging, randomness and small helpers used across the data path (see util.h).
 */
#include "core/util.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int64_t rc_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void rc_log(const rc_logger *lg, rcanvas_log_level level, const char *fmt, ...) {
    if (!lg || !lg->fn || level > lg->level) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    lg->fn(lg->user, level, line);
}

int rc_random_hex(char *out, size_t nbytes) {
    unsigned char raw[64];
    if (nbytes > sizeof raw) return RCANVAS_EINVAL;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t n = getrandom(raw + got, nbytes - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return RCANVAS_EIO;
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    return RCANVAS_OK;
}

int rc_consttime_equal(const char *a, size_t alen, const char *b, size_t blen) {
    unsigned diff = (unsigned)(alen ^ blen);
    size_t n = alen < blen ? alen : blen;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)a[i] ^ (unsigned char)b[i];
    return diff == 0;
}

int rc_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

int rc_thread_create(pthread_t *t, const char *name, void *(*fn)(void *), void *arg) {
    static const int open_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, SIGPROF};
    sigset_t all, old;
    sigfillset(&all);
    for (size_t i = 0; i < sizeof open_signals / sizeof open_signals[0]; i++) sigdelset(&all, open_signals[i]);
    int e = pthread_sigmask(SIG_BLOCK, &all, &old); /* the new thread inherits the mask at creation */
    int r = pthread_create(t, NULL, fn, arg);
    if (!e) pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!r && name) {
        char cut[16];
        snprintf(cut, sizeof cut, "%s", name);
        pthread_setname_np(*t, cut); /* a name is a convenience: its failure is not the thread's */
    }
    return r;
}

const char *rcanvas_strerror(int err) {
    switch (err) {
#define RC_ERR_TEXT_(name, value, text)                                                                          \
    case RCANVAS_##name: return text;
        RCANVAS_ERRORS(RC_ERR_TEXT_)
#undef RC_ERR_TEXT_
    }
    return "unknown error";
}

/* The name tables of rcanvas.h (RCANVAS_CODECS, RCANVAS_OPTIONS): value → name, and back. */
typedef struct rc_name { int value; const char *name; } rc_name;
#define RC_NAME_ROW_(name, value, text) {value, text},
#define RC_CODEC_ROW_(name, value, text, wire) {value, text},
static const rc_name k_codec_names[] = {RCANVAS_CODECS(RC_CODEC_ROW_)};
static const rc_name k_option_names[] = {RCANVAS_OPTIONS(RC_NAME_ROW_)};
#undef RC_CODEC_ROW_
#undef RC_NAME_ROW_

static const char *name_of(const rc_name *t, size_t n, int value) {
    for (size_t i = 0; i < n; i++)
        if (t[i].value == value) return t[i].name;
    return NULL;
}
static int value_of(const rc_name *t, size_t n, const char *name) {
    for (size_t i = 0; name && i < n; i++)
        if (!strcmp(t[i].name, name)) return t[i].value;
    return RCANVAS_EINVAL;
}
#define NAMES_(t) t, sizeof t / sizeof t[0]
const char *rcanvas_codec_name(int codec) { return name_of(NAMES_(k_codec_names), codec); }
int rcanvas_codec_from_name(const char *name) { return value_of(NAMES_(k_codec_names), name); }
const char *rcanvas_option_name(int option) { return name_of(NAMES_(k_option_names), option); }
int rcanvas_option_from_name(const char *name) { return value_of(NAMES_(k_option_names), name); }
#undef NAMES_

const char *rcanvas_err_name(int err) {
    switch (err) {
#define RC_ERR_NAME_(name, value, text)                                                                          \
    case RCANVAS_##name: return "RCANVAS_" #name;
        RCANVAS_ERRORS(RC_ERR_NAME_)
#undef RC_ERR_NAME_
    }
    return "RCANVAS_UNKNOWN";
}
