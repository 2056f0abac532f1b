/* SPDX-License-Identifier: MIT */
/*
 * canvas_schedule.c — when the app draws: rcanvas_wait() decides when a draw is due (update mode, max_fps, and
 * flow control on the visible viewers' unacked frames) and wakes for events; rcanvas_request_draw().
 */
#include "stream/canvas_internal.h"

#include <time.h>

#define NEVER INT64_MAX

static int draw_due_locked(rcanvas_canvas *c, int64_t now, int64_t *next_us) {
    if (c->nsessions == 0 || c->mode == RCANVAS_UPDATE_MANUAL) return 0;
    if (!rc_sessions_visible_locked(c)) return 0; /* every view is scrolled away or in a hidden tab */
    /* The app draws at the pace of the fastest visible viewer: a draw is allowed while some visible
     * viewer holds fewer unacked frames than its window. Slower viewers get the newest frame their own window
     * allows (their tiers skip frames); which viewer is active (sizes the canvas) plays no part. */
    int room = 0;
    for (rc_session *s = c->sessions; s && !room; s = s->next) {
        if (!s->visible || s->closing) continue;
        uint32_t done = s->acked_seq > c->failed_seq ? s->acked_seq : c->failed_seq;
        done = rc_damage_done_locked(c, done); /* identical frames (not sent) count once the one they repeat does */
        uint32_t in_flight = c->presented_seq > done ? c->presented_seq - done : 0;
        if (in_flight < (uint32_t)s->window) room = 1;
    }
    int wanted = c->mode != RCANVAS_UPDATE_ONDEMAND || c->draw_requested;
    if (!room) {
        if (wanted) { /* frames keep coming: no refinement meanwhile */
            c->draw_held = 1;
            c->draw_held_us = now;
        }
        return 0; /* an ack wakes us */
    }
    if (c->draw_held) {
        c->draw_held = 0;
        c->draw_held_us = now;
        rc_canvas_notify_locked(c); /* the tick re-arms the refinement */
    }
    if (!wanted) return 0;
    if (c->mode != RCANVAS_UPDATE_FASTEST && c->max_fps > 0) {
        int64_t at = c->last_draw_us + (int64_t)(1e6 / c->max_fps);
        if (now < at) {
            *next_us = at;
            return 0;
        }
    }
    return 1;
}

int rcanvas_wait(rcanvas_canvas *c, int timeout_ms) {
    if (!c) return RCANVAS_EINVAL;
    int64_t now = rc_now_us();
    int64_t deadline = timeout_ms < 0 ? NEVER : now + (int64_t)timeout_ms * 1000;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        if (c->closing) {
            pthread_mutex_unlock(&c->mu);
            return RCANVAS_ECLOSED;
        }
        int mask = c->ev_count > 0 ? RCANVAS_WAKE_EVENTS : 0;
        if (c->pixels_wanted_seq && c->pixels_wanted_seq != c->pixels_woken_seq && c->last &&
            c->last->seq == c->pixels_wanted_seq && !c->last->img.pixels) {
            mask |= RCANVAS_WAKE_PIXELS; /* once per frame: rcanvas_present_pixels() brings them */
            c->pixels_woken_seq = c->pixels_wanted_seq;
        }
        int64_t next = NEVER;
        if (draw_due_locked(c, now, &next)) {
            mask |= RCANVAS_WAKE_DRAW;
            c->last_draw_us = now;
            c->draw_requested = 0;
        }
        if (mask || now >= deadline) {
            pthread_mutex_unlock(&c->mu);
            return mask;
        }
        int64_t until = next < deadline ? next : deadline;
        if (until == NEVER) {
            pthread_cond_wait(&c->cv, &c->mu);
        } else {
            struct timespec ts = {.tv_sec = until / 1000000, .tv_nsec = (long)(until % 1000000) * 1000};
            int e = pthread_cond_timedwait(&c->cv, &c->mu, &ts);
            (void)e; /* ETIMEDOUT or a signal: either way re-evaluate */
        }
        now = rc_now_us();
    }
}

void rcanvas_request_draw(rcanvas_canvas *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->draw_requested = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}
