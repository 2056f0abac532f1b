/* SPDX-License-Identifier: MIT */
/*
 * ratelog.h — rate-limited logging (so that running out of file descriptors does not flood the log): at most one
 * line per key per interval; the lines of that key in between are counted, not written, and the count is said on
 * the next line of that key that is written ("… (1234 more like this in 1.0 s)") or by rc_ratelog_flush.
 * Meant for what a hostile or broken peer can repeat at will: libwebsockets' own error lines (accept: errno 24 on
 * every poll round), refused requests, malformed messages.
 * Thread-safe (one mutex per rc_ratelog); keys are compared as strings, at most RC_RATELOG_KEY-1 bytes of them.
 */
#ifndef RC_RATELOG_H
#define RC_RATELOG_H

#include <pthread.h>
#include <stdint.h>

#include "core/util.h"

#define RC_RATELOG_SLOTS 32 /* keys remembered; past that the one written longest ago is forgotten (its count is
                               then written with the line that takes its place) */
#define RC_RATELOG_KEY 64

typedef struct rc_ratelog_slot {
    char key[RC_RATELOG_KEY];  /* "" = free */
    int64_t last_us;           /* when a line of this key was last written */
    uint64_t suppressed;       /* lines of this key not written since */
    rcanvas_log_level level;   /* the level of the last suppressed line (for rc_ratelog_flush) */
} rc_ratelog_slot;

typedef struct rc_ratelog {
    pthread_mutex_t mu;
    int64_t interval_us;
    uint64_t total_suppressed; /* since init, for tests and /metrics */
    rc_ratelog_slot slot[RC_RATELOG_SLOTS];
} rc_ratelog;

/* interval_us > 0: one line per key per interval. */
void rc_ratelog_init(rc_ratelog *rl, int64_t interval_us);
void rc_ratelog_destroy(rc_ratelog *rl);

/* Like rc_log, but at most one line per key per interval (now_us: rc_now_us(), passed for tests). A line of the
 * level that the logger does not show is neither written nor counted. Returns 1 if the line was written, 0 if it
 * was counted (or not shown). Any thread. */
int rc_log_limited_at(rc_ratelog *rl, const rc_logger *lg, const char *key, int64_t now_us, rcanvas_log_level level,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
#define rc_log_limited(rl, lg, key, level, ...) rc_log_limited_at(rl, lg, key, rc_now_us(), level, __VA_ARGS__)

/* Writes "N more like: KEY" for every key whose interval has passed with lines counted, so that a flood that
 * stopped is still accounted for. Call it now and then (a timer). Any thread. */
void rc_ratelog_flush(rc_ratelog *rl, const rc_logger *lg, int64_t now_us);

/* A key for a line whose numbers vary (fds, ports, addresses): the line's first RC_RATELOG_KEY-1 bytes with each
 * run of digits replaced by one '#' ("ERROR on binding fd 5 to port 8090" → "ERROR on binding fd # to port #"). */
void rc_ratelog_key(const char *line, char *key);

#endif
