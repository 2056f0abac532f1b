/*
 * util.c — clock, logging, randomness and small helpers used across the data path (see util.h).
 */
#include "core/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

const char *rcanvas_strerror(int err) {
    switch (err) {
    case RCANVAS_OK: return "success";
    case RCANVAS_EINVAL: return "invalid argument";
    case RCANVAS_ENOMEM: return "out of memory";
    case RCANVAS_EFRAME_SIZE: return "frame width or height is zero or above the maximum";
    case RCANVAS_EPITCH: return "row pitch is smaller than width times bytes per pixel";
    case RCANVAS_EFORMAT: return "unknown pixel format";
    case RCANVAS_ENULL: return "pixel pointer is NULL";
    case RCANVAS_ENET: return "cannot listen on the given host and port";
    case RCANVAS_ETHREAD: return "cannot start a thread";
    case RCANVAS_ECODEC: return "encoder library error";
    case RCANVAS_ECLOSED: return "server or canvas is closing";
    case RCANVAS_EEXIST: return "a canvas with this name exists";
    case RCANVAS_ENAME: return "canvas name must be 1-64 characters of [A-Za-z0-9_-]";
    case RCANVAS_EIO: return "input/output error";
    case RCANVAS_EBUSY: return "every staging buffer is in use; the frame was not taken";
    case RCANVAS_EDEVICE_LOST: return "the Vulkan device was lost";
    case RCANVAS_EVULKAN: return "Vulkan error";
    case RCANVAS_EADDRINUSE: return "address already in use";
    }
    return "unknown error";
}
