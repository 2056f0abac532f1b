/*
 * canvas.c — the stream stage: rcanvas_present() copies the app's frame into a pooled frame buffer and feeds the
 * canvas's encode pipeline (one frame encoding, one pending; a newer present replaces the pending one); encoded
 * packets become `latest` for the transport to send. rcanvas_wait() decides when a draw is due (update mode,
 * max_fps, and flow control on the active viewer's unacked frames). Events from viewers queue here, merged as
 * rendercanvas does. Idle canvases get their last frame re-encoded losslessly (refinement).
 */
#include "stream/canvas.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/server_internal.h"

#define NEVER INT64_MAX

void rcanvas_canvas_config_init(rcanvas_canvas_config *cfg) {
    if (!cfg) return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->name = "";
    cfg->title = "rcanvas";
    cfg->width = 640;
    cfg->height = 480;
    cfg->pixel_ratio = 1.0;
    cfg->update_mode = RCANVAS_UPDATE_ONDEMAND;
    cfg->max_fps = 60;
    cfg->max_in_flight = 2;
    cfg->codec = RCANVAS_CODEC_JPEG;
    cfg->quality = 85;
    cfg->subsampling = RCANVAS_SUBSAMP_420;
    cfg->refine_ms = 300;
}

static int valid_name(const char *n) {
    size_t len = strlen(n);
    if (len > RC_NAME_MAX) return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = n[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-'))
            return 0;
    }
    return 1;
}

/* Copies at most cap-1 bytes of a UTF-8 string, cutting at a character boundary. */
static void copy_utf8(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80) n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void set_size_locked(rcanvas_canvas *c, double w, double h, double ratio) {
    uint32_t maxd = rc_server_max_frame_dim(c->server);
    c->size.width = w;
    c->size.height = h;
    c->size.pixel_ratio = ratio;
    double pw = floor(w * ratio + 0.5), ph = floor(h * ratio + 0.5);
    c->size.physical_width = pw < 1 ? 1 : pw > maxd ? maxd : (uint32_t)pw;
    c->size.physical_height = ph < 1 ? 1 : ph > maxd ? maxd : (uint32_t)ph;
}

static int check_params(rcanvas_codec codec, int quality, rcanvas_subsampling ss) {
    if (codec != RCANVAS_CODEC_JPEG && codec != RCANVAS_CODEC_PNG) return RCANVAS_EINVAL;
    if (quality < 1 || quality > 100) return RCANVAS_EINVAL;
    if (ss != RCANVAS_SUBSAMP_420 && ss != RCANVAS_SUBSAMP_444) return RCANVAS_EINVAL;
    return RCANVAS_OK;
}

int rcanvas_canvas_new(rcanvas_server *server, const rcanvas_canvas_config *cfg, rcanvas_canvas **out) {
    if (!server || !cfg || !out) return RCANVAS_EINVAL;
    *out = NULL;
    const char *name = cfg->name ? cfg->name : "";
    if (!valid_name(name)) return RCANVAS_ENAME;
    if (cfg->update_mode < RCANVAS_UPDATE_MANUAL || cfg->update_mode > RCANVAS_UPDATE_FASTEST) return RCANVAS_EINVAL;
    if (!(cfg->max_fps >= 0 && cfg->max_fps <= 1000) || cfg->max_in_flight < 1 || cfg->max_in_flight > 16)
        return RCANVAS_EINVAL;
    if (check_params(cfg->codec, cfg->quality, cfg->subsampling)) return RCANVAS_EINVAL;
    if (cfg->refine_ms < 0 || cfg->width < 1 || cfg->height < 1 || cfg->width > 32768 || cfg->height > 32768 ||
        !(cfg->pixel_ratio > 0 && cfg->pixel_ratio <= 16))
        return RCANVAS_EINVAL;

    rcanvas_canvas *c = calloc(1, sizeof(*c));
    if (!c) return RCANVAS_ENOMEM;
    c->packets = rc_packet_pool_new();
    if (!c->packets) {
        free(c);
        return RCANVAS_ENOMEM;
    }
    c->server = server;
    memcpy(c->name, name, strlen(name) + 1);
    copy_utf8(c->title, sizeof c->title, cfg->title ? cfg->title : "rcanvas");
    c->mode = cfg->update_mode;
    c->max_fps = cfg->max_fps;
    c->max_in_flight = cfg->max_in_flight;
    c->params = (rc_encode_params){.codec = cfg->codec, .quality = cfg->quality, .subsampling = cfg->subsampling};
    c->refine_ms = cfg->refine_ms;
    c->draw_requested = 1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    set_size_locked(c, cfg->width, cfg->height, cfg->pixel_ratio);

    int r = rc_server_attach(server, c);
    if (r) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        rc_packet_pool_free(c->packets);
        free(c);
        return r;
    }
    *out = c;
    return RCANVAS_OK;
}

static void frame_release_locked(rc_frame_buf *fb) {
    if (!fb || fb->refs == 0) return;
    if (--fb->refs == 0 && fb->ext_release) {
        void (*release)(void *) = fb->ext_release;
        fb->ext_release = NULL;
        release(fb->ext_arg);
    }
}

void rcanvas_canvas_free(rcanvas_canvas *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    rc_server_detach(c->server, c); /* viewers closed and gone */
    pthread_mutex_lock(&c->mu);
    while (c->encoding || c->refine_running) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    rc_packet_unref(c->latest);
    rc_packet_unref(c->refined);
    for (int i = 0; i < RC_FRAME_BUFS; i++) free(c->frames[i].pixels);
    rc_packet_pool_free(c->packets);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

int rcanvas_canvas_set_title(rcanvas_canvas *c, const char *title) {
    if (!c || !title) return RCANVAS_EINVAL;
    pthread_mutex_lock(&c->mu);
    copy_utf8(c->title, sizeof c->title, title);
    c->title_version++;
    pthread_mutex_unlock(&c->mu);
    rc_server_wake(c->server);
    return RCANVAS_OK;
}

int rcanvas_canvas_set_codec(rcanvas_canvas *c, rcanvas_codec codec, int quality, rcanvas_subsampling ss) {
    if (!c || check_params(codec, quality, ss)) return RCANVAS_EINVAL;
    pthread_mutex_lock(&c->mu);
    c->params = (rc_encode_params){.codec = codec, .quality = quality, .subsampling = ss};
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

void rcanvas_canvas_get_size(rcanvas_canvas *c, rcanvas_size *out) {
    if (!c || !out) return;
    pthread_mutex_lock(&c->mu);
    *out = c->size;
    pthread_mutex_unlock(&c->mu);
}

int rcanvas_canvas_viewer_count(rcanvas_canvas *c) {
    if (!c) return RCANVAS_EINVAL;
    pthread_mutex_lock(&c->mu);
    int n = c->viewers;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- encode pipeline ---- */

static void live_done(rc_encode_task *t, int status);

/* Moves `pending` into the encoder. Called with mu held; the pool takes its own lock only. */
static void start_encode_locked(rcanvas_canvas *c) {
    rc_frame_buf *fb = c->pending;
    c->pending = NULL;
    rc_packet *pk = rc_packet_get(c->packets);
    if (!pk) {
        rc_log(rc_server_logger(c->server), RCANVAS_LOG_ERROR, "canvas '%s': out of memory for frame %u", c->name,
               fb->seq);
        if (fb->seq > c->failed_seq) c->failed_seq = fb->seq;
        frame_release_locked(fb);
        return;
    }
    c->encoding = fb;
    rc_encode_task *t = &c->live_task;
    t->img = fb->img;
    t->params = c->params;
    t->seq = fb->seq;
    t->present_us = fb->present_us;
    t->stripes = 0;
    t->done = live_done;
    t->user = c;
    t->packet = pk;
    rc_encode_submit(rc_server_pool(c->server), t);
}

static void live_done(rc_encode_task *t, int status) {
    rcanvas_canvas *c = t->user;
    rc_packet *pk = t->packet, *old_latest = NULL, *old_refined = NULL;
    pthread_mutex_lock(&c->mu);
    rc_frame_buf *fb = c->encoding;
    c->encoding = NULL;
    if (status == RCANVAS_OK && (!c->latest || pk->seq > c->latest->seq)) {
        old_latest = c->latest;
        old_refined = c->refined;
        c->latest = pk;
        c->refined = NULL;
        frame_release_locked(c->last);
        c->last = fb; /* the encoding slot's reference moves to `last` */
    } else {
        if (status != RCANVAS_OK) {
            rc_log(rc_server_logger(c->server), RCANVAS_LOG_ERROR, "canvas '%s': encoding frame %u failed: %s (%s)",
                   c->name, t->seq, rcanvas_strerror(status), t->error);
            if (t->seq > c->failed_seq) c->failed_seq = t->seq;
        }
        old_latest = pk;
        frame_release_locked(fb);
    }
    if (c->pending && !c->closing) start_encode_locked(c);
    rc_packet_unref(old_latest);
    rc_packet_unref(old_refined);
    /* Wake and signal with mu held: once it is released with `encoding` clear, canvas_free (or server_free)
     * may free the canvas and the server, so nothing here may touch them after the unlock. */
    rc_server_wake(c->server);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void refine_done(rc_encode_task *t, int status) {
    rcanvas_canvas *c = t->user;
    rc_packet *drop = t->packet, *old = NULL;
    pthread_mutex_lock(&c->mu);
    c->refine_running = 0;
    frame_release_locked(c->refine_src);
    c->refine_src = NULL;
    if (status == RCANVAS_OK && c->latest && c->latest->seq == t->seq && !c->closing) {
        old = c->refined;
        c->refined = drop;
        drop = NULL;
    } else if (status != RCANVAS_OK) {
        rc_log(rc_server_logger(c->server), RCANVAS_LOG_WARN, "canvas '%s': lossless refinement of frame %u failed: %s",
               c->name, t->seq, t->error);
    }
    rc_packet_unref(drop);
    rc_packet_unref(old);
    rc_server_wake(c->server); /* with mu held, as in live_done */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

int64_t rc_canvas_refine_check(rcanvas_canvas *c, int64_t now_us) {
    int64_t ret = -1;
    pthread_mutex_lock(&c->mu);
    rc_frame_buf *fb = c->last;
    if (c->closing || c->refine_ms <= 0 || !c->latest || !fb || c->viewers == 0) goto out;
    if ((c->latest->flags & RC_FLAG_LOSSLESS) || c->refine_done_seq == c->latest->seq || fb->seq != c->latest->seq)
        goto out;
    if (c->pending || c->encoding) goto out; /* a newer frame is on its way; its completion re-arms */
    /* One refinement at a time: refine_task and refine_src are single slots. Starting a second one while the
     * first still runs (a newer frame became `last` meanwhile) would overwrite refine_src, so the older frame's
     * buffer was never released; after a few such overlaps every frame slot stayed taken and the stream
     * stopped for good (issue 7). refine_done() wakes the network thread, whose check starts the newer one. */
    if (c->refine_running) goto out;
    int64_t due = c->last_present_us + (int64_t)c->refine_ms * 1000;
    if (now_us < due) {
        ret = due - now_us;
        goto out;
    }
    rc_packet *pk = rc_packet_get(c->packets);
    if (!pk) goto out;
    pk->flags = RC_FLAG_REFINE;
    c->refine_done_seq = fb->seq;
    c->refine_running = 1;
    fb->refs++;
    c->refine_src = fb;
    rc_encode_task *t = &c->refine_task;
    t->img = fb->img;
    t->params = (rc_encode_params){.codec = RCANVAS_CODEC_PNG, .quality = 100, .subsampling = RCANVAS_SUBSAMP_444};
    t->seq = fb->seq;
    t->present_us = fb->present_us;
    t->stripes = 0;
    t->done = refine_done;
    t->user = c;
    t->packet = pk;
    rc_encode_submit(rc_server_pool(c->server), t);
out:
    pthread_mutex_unlock(&c->mu);
    return ret;
}

/* ---- frames in ---- */

/* fb (refs = 1, img set) becomes the newest frame: the pending one it replaces is never encoded. */
static void publish_locked(rcanvas_canvas *c, rc_frame_buf *fb) {
    int64_t now = rc_now_us();
    fb->seq = ++c->presented_seq;
    fb->present_us = now;
    c->last_present_us = now;
    if (c->pending) frame_release_locked(c->pending);
    c->pending = fb;
    if (!c->encoding) start_encode_locked(c);
}

int rcanvas_present(rcanvas_canvas *c, const rcanvas_frame *f) {
    if (!c || !f) return RCANVAS_EINVAL;
    if (!f->pixels) return RCANVAS_ENULL;
    unsigned bpp = rc_format_bpp(f->format);
    if (!bpp) return RCANVAS_EFORMAT;
    uint32_t maxd = rc_server_max_frame_dim(c->server);
    if (f->width == 0 || f->height == 0 || f->width > maxd || f->height > maxd) return RCANVAS_EFRAME_SIZE;
    size_t row = (size_t)f->width * bpp;
    if (f->pitch < row) return RCANVAS_EPITCH;

    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_ECLOSED;
    }
    rc_frame_buf *fb = NULL;
    for (int i = 0; i < RC_FRAME_BUFS && !fb; i++)
        if (c->frames[i].refs == 0) fb = &c->frames[i];
    if (fb) fb->refs = 1; /* reserved for this present; no other slot points at it */
    pthread_mutex_unlock(&c->mu);
    if (!fb) return RCANVAS_EBUSY; /* only if several threads present on one canvas at once */

    size_t need = row * f->height;
    if (fb->cap < need) {
        uint8_t *p = realloc(fb->pixels, need);
        if (!p) {
            pthread_mutex_lock(&c->mu);
            fb->refs = 0;
            pthread_mutex_unlock(&c->mu);
            return RCANVAS_ENOMEM;
        }
        fb->pixels = p;
        fb->cap = need;
    }
    const uint8_t *src = f->pixels;
    if (f->pitch == row) memcpy(fb->pixels, src, need);
    else
        for (uint32_t y = 0; y < f->height; y++) memcpy(fb->pixels + y * row, src + y * f->pitch, row);
    fb->img = (rc_image){.pixels = fb->pixels, .width = f->width, .height = f->height, .pitch = row,
                         .format = f->format};

    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        fb->refs = 0;
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_ECLOSED;
    }
    publish_locked(c, fb);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

/* A free frame slot holding the external pixels (refs = 1), or NULL (closing, or all slots taken: then the
 * caller unlocks and releases). */
static rc_frame_buf *take_external_locked(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg) {
    rc_frame_buf *fb = NULL;
    for (int i = 0; i < RC_FRAME_BUFS && !fb && !c->closing; i++)
        if (c->frames[i].refs == 0) fb = &c->frames[i];
    if (!fb) return NULL;
    fb->refs = 1;
    fb->img = *img;
    fb->ext_release = release;
    fb->ext_arg = arg;
    return fb;
}

int rc_canvas_present_external(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg) {
    pthread_mutex_lock(&c->mu);
    rc_frame_buf *fb = take_external_locked(c, img, release, arg);
    if (!fb) {
        int r = c->closing ? RCANVAS_ECLOSED : RCANVAS_EBUSY;
        pthread_mutex_unlock(&c->mu);
        release(arg);
        return r;
    }
    publish_locked(c, fb);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

void rc_canvas_release_external(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    if (c->pending && c->pending->ext_release) {
        frame_release_locked(c->pending);
        c->pending = NULL;
    }
    /* a running encode may start the next pending frame: wait until the pipeline is empty of external frames */
    while (c->encoding || c->refine_running || (c->pending && c->pending->ext_release)) {
        if (c->pending && c->pending->ext_release) {
            frame_release_locked(c->pending);
            c->pending = NULL;
        }
        if (c->encoding || c->refine_running) pthread_cond_wait(&c->cv, &c->mu);
    }
    if (c->last && c->last->ext_release) {
        frame_release_locked(c->last);
        c->last = NULL;
    }
    pthread_mutex_unlock(&c->mu);
}

int rc_canvas_present_external_encoded(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                                       const uint8_t *jpeg, size_t len) {
    /* the packet is filled outside the lock: one tile, the whole frame */
    rc_packet *pk = len <= UINT32_MAX ? rc_packet_get(c->packets) : NULL;
    if (!pk || rc_buf_reserve(&pk->tiles[0], len)) {
        rc_packet_unref(pk);
        release(arg);
        return RCANVAS_ENOMEM;
    }
    memcpy(rc_buf_data(&pk->tiles[0]), jpeg, len);
    pk->tiles[0].len = len;
    pk->ntiles = 1;
    pk->total_bytes = len;
    pk->codec = RCANVAS_CODEC_JPEG;
    pk->width = img->width;
    pk->height = img->height;
    rc_packet *old_latest = NULL, *old_refined = NULL;
    pthread_mutex_lock(&c->mu);
    rc_frame_buf *fb = take_external_locked(c, img, release, arg);
    if (!fb) {
        int r = c->closing ? RCANVAS_ECLOSED : RCANVAS_EBUSY;
        pthread_mutex_unlock(&c->mu);
        rc_packet_unref(pk);
        release(arg);
        return r;
    }
    int64_t now = rc_now_us();
    fb->seq = ++c->presented_seq;
    fb->present_us = now;
    c->last_present_us = now;
    pk->seq = fb->seq;
    pk->present_us = now;
    rc_frame_header h = {.version = RCANVAS_PROTOCOL_VERSION, .codec = RCANVAS_CODEC_JPEG, .flags = RC_FLAG_LAST_TILE,
                         .seq = fb->seq, .tile_index = 0, .tile_count = 1, .timestamp_us = now,
                         .frame_width = img->width, .frame_height = img->height, .w = img->width, .h = img->height,
                         .payload_bytes = (uint32_t)len};
    rc_frame_header_write(rc_packet_tile_msg(pk, 0), &h);
    if (c->pending) { /* an older frame waiting for the CPU encoder: never encoded */
        frame_release_locked(c->pending);
        c->pending = NULL;
    }
    old_latest = c->latest;
    old_refined = c->refined;
    c->latest = pk;
    c->refined = NULL;
    frame_release_locked(c->last);
    c->last = fb; /* source of the lossless refinement */
    rc_packet_unref(old_latest);
    rc_packet_unref(old_refined);
    rc_server_wake(c->server);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

/* ---- scheduling ---- */

static int draw_due_locked(rcanvas_canvas *c, int64_t now, int64_t *next_us) {
    if (c->viewers == 0 || c->mode == RCANVAS_UPDATE_MANUAL) return 0;
    uint32_t done = c->active_acked > c->failed_seq ? c->active_acked : c->failed_seq;
    uint32_t in_flight = c->presented_seq > done ? c->presented_seq - done : 0;
    if (in_flight >= (uint32_t)c->max_in_flight) return 0; /* an ack wakes us */
    if (c->mode == RCANVAS_UPDATE_ONDEMAND && !c->draw_requested) return 0;
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

/* ---- viewers, acks, events (from the network thread) ---- */

int rc_canvas_viewer_join(rcanvas_canvas *c, uint32_t viewer_id) {
    pthread_mutex_lock(&c->mu);
    c->viewers++;
    int active = 0;
    if (!c->active_viewer) {
        c->active_viewer = viewer_id;
        c->active_acked = c->presented_seq;
        active = 1;
    }
    /* The first viewer needs a frame; a passive one is served the newest encoded frame, no new draw. */
    if (active || c->presented_seq == 0) c->draw_requested = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return active;
}

void rc_canvas_viewer_leave(rcanvas_canvas *c, uint32_t viewer_id, uint32_t new_active, uint32_t new_active_acked) {
    pthread_mutex_lock(&c->mu);
    if (c->viewers > 0) c->viewers--;
    if (c->active_viewer == viewer_id) {
        c->active_viewer = new_active;
        c->active_acked = new_active_acked;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void rc_canvas_set_active(rcanvas_canvas *c, uint32_t viewer_id, uint32_t acked) {
    pthread_mutex_lock(&c->mu);
    c->active_viewer = viewer_id;
    c->active_acked = acked;
    c->draw_requested = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void rc_canvas_ack(rcanvas_canvas *c, uint32_t viewer_id, uint32_t seq) {
    pthread_mutex_lock(&c->mu);
    if (viewer_id == c->active_viewer && seq > c->active_acked && seq <= c->presented_seq) {
        c->active_acked = seq;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
}

static int same_pointer_state(const rcanvas_event *a, const rcanvas_event *b) {
    return a->buttons == b->buttons && a->modifiers == b->modifiers && a->ntouches == b->ntouches;
}

void rc_canvas_push_event(rcanvas_canvas *c, const rcanvas_event *in) {
    rcanvas_event ev = *in;
    pthread_mutex_lock(&c->mu);
    if (ev.type == RCANVAS_EVENT_RESIZE) {
        if (ev.viewer_id != c->active_viewer) { /* only the active viewer sizes the canvas */
            pthread_mutex_unlock(&c->mu);
            return;
        }
        set_size_locked(c, ev.width, ev.height, ev.pixel_ratio);
        c->draw_requested = 1;
    }
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
            pthread_mutex_unlock(&c->mu);
            return;
        }
    }
    if (c->ev_count == RC_EVENT_QUEUE) {
        c->ev_head = (c->ev_head + 1) % RC_EVENT_QUEUE;
        c->ev_count--;
        if (c->events_dropped++ % 256 == 0)
            rc_log(rc_server_logger(c->server), RCANVAS_LOG_WARN,
                   "canvas '%s': event queue full (app not polling), dropping oldest", c->name);
    }
    c->events[(c->ev_head + c->ev_count) % RC_EVENT_QUEUE] = ev;
    c->ev_count++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
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
