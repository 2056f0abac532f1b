/* SPDX-License-Identifier: MIT */
/*
 * ratelog.c — rate-limited logging (see ratelog.h).
 */
#include "core/ratelog.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void rc_ratelog_init(rc_ratelog *rl, int64_t interval_us) {
    memset(rl, 0, sizeof *rl);
    pthread_mutex_init(&rl->mu, NULL);
    rl->interval_us = interval_us > 0 ? interval_us : 1;
}

void rc_ratelog_destroy(rc_ratelog *rl) { pthread_mutex_destroy(&rl->mu); }

/* The slot of key, or the one to reuse for it (free, else written longest ago); *found says which. Under mu. */
static rc_ratelog_slot *find(rc_ratelog *rl, const char *key, int *found) {
    rc_ratelog_slot *oldest = &rl->slot[0];
    for (int i = 0; i < RC_RATELOG_SLOTS; i++) {
        rc_ratelog_slot *s = &rl->slot[i];
        if (s->key[0] && !strncmp(s->key, key, RC_RATELOG_KEY - 1)) {
            *found = 1;
            return s;
        }
        if (!s->key[0]) {
            if (oldest->key[0]) oldest = s;
        } else if (oldest->key[0] && s->last_us < oldest->last_us) {
            oldest = s;
        }
    }
    *found = 0;
    return oldest;
}

int rc_log_limited_at(rc_ratelog *rl, const rc_logger *lg, const char *key, int64_t now_us, rcanvas_log_level level,
                      const char *fmt, ...) {
    if (!lg || !lg->fn || level > lg->level) return 0;
    char line[512], evicted[RC_RATELOG_KEY] = "";
    uint64_t before = 0, evicted_n = 0;
    int64_t since_us = 0;
    pthread_mutex_lock(&rl->mu);
    int found;
    rc_ratelog_slot *s = find(rl, key, &found);
    if (found && now_us - s->last_us < rl->interval_us) {
        s->suppressed++;
        s->level = level;
        rl->total_suppressed++;
        pthread_mutex_unlock(&rl->mu);
        return 0;
    }
    if (found) {
        before = s->suppressed;
        since_us = now_us - s->last_us;
    } else if (s->key[0] && s->suppressed) { /* a forgotten key's count is said, not lost */
        snprintf(evicted, sizeof evicted, "%s", s->key);
        evicted_n = s->suppressed;
    }
    snprintf(s->key, sizeof s->key, "%s", key);
    s->last_us = now_us;
    s->suppressed = 0;
    pthread_mutex_unlock(&rl->mu);

    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (evicted_n) rc_log(lg, level, "%llu more like: %s", (unsigned long long)evicted_n, evicted);
    if (before)
        rc_log(lg, level, "%s (%llu more like this in %.1f s)", line, (unsigned long long)before, since_us / 1e6);
    else
        rc_log(lg, level, "%s", line);
    return 1;
}

void rc_ratelog_flush(rc_ratelog *rl, const rc_logger *lg, int64_t now_us) {
    for (int i = 0; i < RC_RATELOG_SLOTS; i++) {
        char key[RC_RATELOG_KEY];
        uint64_t n = 0;
        rcanvas_log_level level = RCANVAS_LOG_WARN;
        double secs = 0;
        pthread_mutex_lock(&rl->mu);
        rc_ratelog_slot *s = &rl->slot[i];
        if (s->key[0] && s->suppressed && now_us - s->last_us >= rl->interval_us) {
            snprintf(key, sizeof key, "%s", s->key);
            n = s->suppressed;
            level = s->level;
            secs = (now_us - s->last_us) / 1e6;
            s->suppressed = 0;
            s->last_us = now_us; /* the next line of it waits an interval: the flood may go on */
        }
        pthread_mutex_unlock(&rl->mu);
        if (n) rc_log(lg, level, "%llu more like this in %.1f s: %s", (unsigned long long)n, secs, key);
    }
}

void rc_ratelog_key(const char *line, char *key) {
    size_t o = 0;
    for (const char *p = line; *p && o < RC_RATELOG_KEY - 1; p++) {
        if (*p >= '0' && *p <= '9') {
            if (o == 0 || key[o - 1] != '#') key[o++] = '#';
        } else {
            key[o++] = *p;
        }
    }
    key[o] = '\0';
}
