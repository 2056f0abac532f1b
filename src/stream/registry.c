/* SPDX-License-Identifier: MIT */
/*
 * registry.c — the canvases of a runtime by name (see session.h). The transport finds canvases and opens
 * sessions here, under the registry lock, so a canvas being freed (removed first) can never get a new session.
 * Lock order: registry → canvas.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/canvas_internal.h"

struct rc_registry {
    pthread_mutex_t mu;
    rcanvas_canvas **list;
    int n, cap;
};

rc_registry *rc_registry_new(void) {
    rc_registry *r = calloc(1, sizeof(*r));
    if (r) pthread_mutex_init(&r->mu, NULL);
    return r;
}

void rc_registry_free(rc_registry *r) {
    if (!r) return;
    pthread_mutex_destroy(&r->mu);
    free(r->list);
    free(r);
}

static int find_locked(rc_registry *r, const char *name, size_t len) {
    for (int i = 0; i < r->n; i++)
        if (strlen(r->list[i]->name) == len && !memcmp(r->list[i]->name, name, len)) return i;
    return -1;
}

int rc_registry_add(rc_registry *r, rcanvas_canvas *c) {
    int ret = RCANVAS_OK;
    pthread_mutex_lock(&r->mu);
    if (find_locked(r, c->name, strlen(c->name)) >= 0) ret = RCANVAS_EEXIST;
    else if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        rcanvas_canvas **l = realloc(r->list, (size_t)cap * sizeof(*l));
        if (!l) ret = RCANVAS_ENOMEM;
        else r->list = l, r->cap = cap;
    }
    if (!ret) r->list[r->n++] = c;
    pthread_mutex_unlock(&r->mu);
    return ret;
}

void rc_registry_remove(rc_registry *r, rcanvas_canvas *c) {
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        if (r->list[i] == c) {
            r->list[i] = r->list[--r->n];
            break;
        }
    pthread_mutex_unlock(&r->mu);
}

int rc_registry_lookup(rc_registry *r, const char *name, size_t len, char *title, size_t title_cap) {
    pthread_mutex_lock(&r->mu);
    int i = find_locked(r, name, len);
    if (i >= 0 && title && title_cap) {
        rcanvas_canvas *c = r->list[i];
        pthread_mutex_lock(&c->mu);
        size_t n = strlen(c->title);
        if (n >= title_cap) n = title_cap - 1;
        memcpy(title, c->title, n);
        title[n] = '\0';
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return i >= 0;
}

int rc_registry_open(rc_registry *r, const char *name, size_t len, const rc_session_caps *caps, rc_session **out) {
    *out = NULL;
    pthread_mutex_lock(&r->mu);
    int i = find_locked(r, name, len);
    int ret = i >= 0 ? rc_session_open(r->list[i], caps, out) : RCANVAS_ECLOSED;
    pthread_mutex_unlock(&r->mu);
    return ret;
}

int64_t rc_registry_tick(rc_registry *r, int64_t now_us) {
    int64_t next = -1;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++) {
        int64_t d = rc_canvas_tick(r->list[i], now_us);
        if (d >= 0 && (next < 0 || d < next)) next = d;
    }
    pthread_mutex_unlock(&r->mu);
    return next;
}

/* The counters of each canvas for /metrics (session.h). */
int rc_registry_metrics(rc_registry *r, rc_canvas_metrics *out, int max) {
    pthread_mutex_lock(&r->mu);
    int n = r->n;
    for (int i = 0; i < n && i < max; i++) {
        rcanvas_canvas *c = r->list[i];
        pthread_mutex_lock(&c->mu);
        snprintf(out[i].name, sizeof out[i].name, "%s", c->name);
        out[i].viewers = c->nsessions;
        out[i].counters = c->counters;
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}
