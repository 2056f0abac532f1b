/* SPDX-License-Identifier: MIT */
/*
 * canvas_events.c — input events from the viewers to the app: the canvas's event queue (RC_EVENT_QUEUE), merged
 * as rendercanvas does, and rcanvas_poll_event().
 */
#include "stream/canvas_internal.h"

static int same_pointer_state(const rcanvas_event *a, const rcanvas_event *b) {
    return a->buttons == b->buttons && a->modifiers == b->modifiers && a->ntouches == b->ntouches;
}

/* Queues ev for the app, merging as rendercanvas does; mu held. */
void rc_canvas_queue_event_locked(rcanvas_canvas *c, const rcanvas_event *in) {
    rcanvas_event ev = *in;
    if (c->ev_count > 0) {
        rcanvas_event *last = &c->events[(c->ev_head + c->ev_count - 1) % RC_EVENT_QUEUE];
        int merge = 0;
        if (ev.type == last->type) {
            if (ev.type == RCANVAS_EVENT_POINTER_MOVE) merge = same_pointer_state(&ev, last);
            else if (ev.type == RCANVAS_EVENT_WHEEL && ev.modifiers == last->modifiers) {
                ev.dx += last->dx;
                ev.dy += last->dy;
                merge = 1;
            } else if (ev.type == RCANVAS_EVENT_RESIZE)
                merge = 1;
        }
        if (merge) {
            *last = ev;
            pthread_cond_broadcast(&c->cv);
            return;
        }
    }
    if (c->ev_count == RC_EVENT_QUEUE) {
        c->ev_head = (c->ev_head + 1) % RC_EVENT_QUEUE;
        c->ev_count--;
        if (c->events_dropped++ % 256 == 0)
            rc_log(c->env.log, RCANVAS_LOG_WARN, "canvas '%s': event queue full (app not polling), dropping oldest",
                   c->name);
    }
    c->events[(c->ev_head + c->ev_count) % RC_EVENT_QUEUE] = ev;
    c->ev_count++;
    pthread_cond_broadcast(&c->cv);
}

int rcanvas_poll_event(rcanvas_canvas *c, rcanvas_event *out) {
    if (!c || !out) return RCANVAS_EINVAL;
    pthread_mutex_lock(&c->mu);
    int got = 0;
    if (c->ev_count > 0) {
        *out = c->events[c->ev_head];
        c->ev_head = (c->ev_head + 1) % RC_EVENT_QUEUE;
        c->ev_count--;
        got = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return got;
}
