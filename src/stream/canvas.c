/* SPDX-License-Identifier: MIT */
/*
 * canvas.c — the canvas's lifecycle and core: configuration defaults, name and size checks, create, close and
 * destroy, the title and cursor, and what the runtime and tests read of a canvas (accessors, introspection). The
 * canvas's other jobs are in canvas_*.c (one each, named in its first line); sessions (the viewers' side) are in
 * session.c, and canvas_internal.h holds what they share.
 */
#include "stream/canvas_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The video bitrate's top, a user maximum (RCANVAS_OPT_BITRATE_KBPS, --bitrate): each tier's encoder follows its
 * viewers' link up to it. Generous (a fixed 8 Mbit/s left 15 of 20 Mbit/s unused and 25.6 dB on loopback); the largest
 * the option takes is RC_MAX_BITRATE_KBPS (canvas_internal.h). */
#define RC_DEFAULT_BITRATE_KBPS 50000

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
    cfg->subsampling = RCANVAS_SUBSAMP_AUTO;
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

/* What the canvas's live codec can encode (a frame it cannot would be accepted, then dropped with a log line).
 * Limits of the libraries: libjpeg-turbo 65500 a side, WebP 16383 (WEBP_MAX_DIMENSION), VP8 16383 (14 bits),
 * openh264 36864 macroblocks a frame (MAX_MBS_PER_FRAME: 4096 × 2304; h264-gpu keeps to it too, for its fallback). AUTO falls back to JPEG per viewer, so
 * JPEG's limit holds there. 1 if w × h fits. Lock held (params). */
int rc_canvas_codec_fits_locked(const rcanvas_canvas *c, uint32_t w, uint32_t h) {
    switch (c->params.codec) {
    case RCANVAS_CODEC_WEBP:
    case RCANVAS_CODEC_VP8: return w <= 16383 && h <= 16383;
    case RCANVAS_CODEC_H264: /* h264-gpu too: kept to openh264's limit, which it falls back to */ return (uint64_t)((w + 15) / 16) * ((h + 15) / 16) <= 36864;
    case RCANVAS_CODEC_PNG:
    case RCANVAS_CODEC_VP9:
    case RCANVAS_CODEC_AV1: return 1; /* max_frame_dim (≤ 65535) is within their limits */
    default: return w <= 65500 && h <= 65500; /* JPEG, and AUTO's fallback */
    }
}

/* A side of the canvas in physical pixels: logical × ratio rounded, 1 to maxd (0: no bound). */
static uint32_t physical_side(double logical, double ratio, uint32_t maxd) {
    double p = floor(logical * ratio + 0.5);
    return p < 1 ? 1 : maxd && p > maxd ? maxd : (uint32_t)p;
}

/* Bounded by design (docs/security.md, "Limits"): one resize may not make the canvas render (and its frame slots,
 * encoders and packets hold) more than max_canvas_pixels, however large or dense the viewer's screen claims to be;
 * nor a frame its live codec cannot encode (a 5K window at pixel ratio 1 is 57600 macroblocks, openh264's limit
 * 36864: every frame was refused and the viewer froze on the last one). */
double rc_canvas_clamp_ratio(const rcanvas_canvas *c, double w, double h, double ratio) {
    const rc_canvas_env *e = &c->env;
    if (e->max_pixel_ratio > 0 && ratio > e->max_pixel_ratio) ratio = e->max_pixel_ratio;
    if (e->max_frame_dim && w * ratio > e->max_frame_dim) ratio = e->max_frame_dim / w;
    if (e->max_frame_dim && h * ratio > e->max_frame_dim) ratio = e->max_frame_dim / h;
    if (e->max_canvas_pixels && w * ratio * h * ratio > (double)e->max_canvas_pixels)
        ratio = sqrt((double)e->max_canvas_pixels / (w * h));
    /* rounding to whole pixels may add up to half a pixel a side: step down until the product fits */
    while (e->max_canvas_pixels && floor(w * ratio + 0.5) * floor(h * ratio + 0.5) > (double)e->max_canvas_pixels)
        ratio *= 0.999;
    /* the live codec's own limit, on the size rc_canvas_set_size_locked makes (0.1 % a step: from a 5K window to
     * H.264's limit, about 220 steps) */
    for (int i = 0; i < 20000 && !rc_canvas_codec_fits_locked(c, physical_side(w, ratio, e->max_frame_dim),
                                                               physical_side(h, ratio, e->max_frame_dim));
         i++)
        ratio *= 0.999;
    return ratio;
}

void rc_canvas_set_size_locked(rcanvas_canvas *c, double w, double h, double ratio) {
    uint32_t maxd = c->env.max_frame_dim;
    ratio = rc_canvas_clamp_ratio(c, w, h, ratio);
    /* A new logical size with the same bitmap (an app that draws a fixed-size bitmap, stretched by the viewers as
     * rendercanvas' contract says) would be skipped as identical, and every viewer kept the old aspect's picture:
     * the next frame goes out whole. */
    if (w != c->size.width || h != c->size.height) c->damage.resized = 1;
    c->size.width = w;
    c->size.height = h;
    c->size.pixel_ratio = ratio;
    c->size.physical_width = physical_side(w, ratio, maxd);
    c->size.physical_height = physical_side(h, ratio, maxd);
}

/* A live codec must be built in (rc_codec_for), or AUTO. */
int rc_canvas_check_params(rcanvas_codec codec, int quality, rcanvas_subsampling ss) {
    if (codec != RCANVAS_CODEC_AUTO && !rc_codec_for(codec)) return RCANVAS_EINVAL;
    if (quality < 1 || quality > 100) return RCANVAS_EINVAL;
    if (ss != RCANVAS_SUBSAMP_420 && ss != RCANVAS_SUBSAMP_444 && ss != RCANVAS_SUBSAMP_AUTO) return RCANVAS_EINVAL;
    return RCANVAS_OK;
}

int rc_canvas_create(const rc_canvas_env *env, const rcanvas_canvas_config *cfg, rcanvas_canvas **out) {
    if (!env || !cfg || !out) return RCANVAS_EINVAL;
    *out = NULL;
    const char *name = cfg->name ? cfg->name : "";
    if (!valid_name(name)) return RCANVAS_ENAME;
    if (cfg->update_mode < RCANVAS_UPDATE_MANUAL || cfg->update_mode > RCANVAS_UPDATE_FASTEST) return RCANVAS_EINVAL;
    if (!(cfg->max_fps >= 0 && cfg->max_fps <= 1000) || cfg->max_in_flight < 1 ||
        cfg->max_in_flight > RC_MAX_INFLIGHT)
        return RCANVAS_EINVAL;
    if (rc_canvas_check_params(cfg->codec, cfg->quality, cfg->subsampling)) return RCANVAS_EINVAL;
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
    c->env = *env;
    for (int i = 0; i < RC_FRAME_BUFS; i++) c->frames[i].owner = c;
    memcpy(c->name, name, strlen(name) + 1);
    copy_utf8(c->title, sizeof c->title, cfg->title ? cfg->title : "rcanvas");
    c->mode = cfg->update_mode;
    c->max_fps = cfg->max_fps;
    c->max_in_flight = cfg->max_in_flight;
    c->params = (rc_encode_params){.codec = cfg->codec, .quality = cfg->quality, .subsampling = cfg->subsampling,
                                   .bitrate_kbps = RC_DEFAULT_BITRATE_KBPS};
    rc_canvas_set_prefs_locked(c);
    c->tiers[0].codec = c->prefs[0];
    c->refine_ms = cfg->refine_ms;
    c->rate_adapt = 1;
    c->draw_requested = 1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    rc_canvas_set_size_locked(c, cfg->width, cfg->height, cfg->pixel_ratio);
    c->damage.resized = 0; /* its first frame is whole anyway */
    *out = c;
    return RCANVAS_OK;
}

const char *rc_canvas_name(const rcanvas_canvas *c) { return c->name; }
void *rc_canvas_owner(const rcanvas_canvas *c) { return c->env.owner; }
const rc_logger *rc_canvas_logger(const rcanvas_canvas *c) { return c->env.log; }
uint32_t rc_canvas_max_frame_dim(const rcanvas_canvas *c) { return c->env.max_frame_dim; }

void rc_canvas_notify_locked(rcanvas_canvas *c) {
    if (c->env.notify) c->env.notify(c->env.notify_user);
}

void rc_canvas_get_params(rcanvas_canvas *c, rc_encode_params *out) {
    pthread_mutex_lock(&c->mu);
    *out = c->params;
    pthread_mutex_unlock(&c->mu);
}

void rc_canvas_set_source_codec(rcanvas_canvas *c, const rc_codec_type *codec) {
    pthread_mutex_lock(&c->mu);
    c->source_codec = codec;
    rc_canvas_notify_locked(c);
    pthread_mutex_unlock(&c->mu);
}

void rc_frame_release_locked(rc_frame_buf *fb) {
    if (!fb || fb->refs == 0) return;
    if (--fb->refs == 0 && fb->ext_release) {
        void (*release)(void *) = fb->ext_release;
        fb->ext_release = NULL;
        release(fb->ext_arg);
    }
    /* a slot freed long after the canvas went much smaller (a still scene presents no more frames that would
     * reuse it, canvas_present.c) lets go of its big block now: an mmap'd block, so this is one munmap */
    if (fb->refs == 0 && fb->cap > RC_SHRINK_MIN_BYTES && fb->owner && fb->owner->keep_px &&
        fb->cap / 2 >= fb->owner->keep_px * 4) {
        free(fb->pixels);
        fb->pixels = NULL;
        fb->cap = 0;
    }
}

void rc_canvas_close(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    pthread_cond_broadcast(&c->cv);
    rc_canvas_notify_locked(c); /* sessions see `closing`: the transport closes them */
    while (c->encoding || c->refine_running || rc_canvas_tiers_busy_locked(c)) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void rc_canvas_wait_sessions(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    while (c->nsessions > 0) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void rc_canvas_destroy(rcanvas_canvas *c) {
    if (!c) return;
    for (int i = 0; i < RC_MAX_TIERS; i++) {
        rc_packet_unref(c->tiers[i].latest);
        rc_codec_free(c->tiers[i].inst);
        free(c->tiers[i].scaled);
    }
    rc_packet_unref(c->refined);
    for (int i = 0; i < RC_FRAME_BUFS; i++) {
        if (c->frames[i].refs && c->frames[i].ext_release) c->frames[i].ext_release(c->frames[i].ext_arg);
        free(c->frames[i].pixels);
        rc_damage_map_free(&c->frames[i].dmg);
    }
    rc_damage_state_free(&c->damage);
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
    rc_canvas_notify_locked(c);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

/* The cursor viewers see, a CSS keyword; told to viewers like the title. */
int rcanvas_canvas_set_cursor(rcanvas_canvas *c, const char *cursor) {
    if (!c || !cursor) return RCANVAS_EINVAL;
    size_t n = strlen(cursor);
    if (n == 0 || n >= sizeof c->cursor) return RCANVAS_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!((cursor[i] >= 'a' && cursor[i] <= 'z') || cursor[i] == '-')) return RCANVAS_EINVAL;
    pthread_mutex_lock(&c->mu);
    if (strcmp(c->cursor, cursor)) {
        memcpy(c->cursor, cursor, n + 1);
        c->cursor_version++;
        rc_canvas_notify_locked(c);
    }
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
    int n = c->nsessions;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- introspection ---- */

void rc_canvas_get_counters(rcanvas_canvas *c, rc_canvas_counters *out) {
    pthread_mutex_lock(&c->mu);
    *out = c->counters;
    pthread_mutex_unlock(&c->mu);
}

void rc_canvas_get_debug(rcanvas_canvas *c, rc_canvas_debug *out) {
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&c->mu);
    out->presented_seq = c->presented_seq;
    rc_packet *l0 = c->tiers[0].latest;
    out->latest_seq = c->latest_seq;
    out->latest_bytes = l0 ? l0->total_bytes : 0;
    out->latest_codec = l0 ? l0->codec : NULL;
    out->refined_seq = c->refined ? c->refined->seq : 0;
    out->encoding_seq = c->encoding ? c->encoding->seq : 0;
    out->pending_seq = c->pending ? c->pending->seq : 0;
    if (c->pending) memcpy(out->first_pixel, c->pending->img.pixels, 4);
    out->last_seq = c->last ? c->last->seq : 0;
    out->refine_running = c->refine_running;
    out->refine_seq = c->refine_src ? c->refine_src->seq : 0;
    out->slots = RC_FRAME_BUFS;
    for (int i = 0; i < RC_FRAME_BUFS; i++) out->free_slots += c->frames[i].refs == 0;
    out->sessions = c->nsessions;
    out->active_session = c->active ? c->active->id : 0;
    out->active_acked = c->active_acked;
    out->skipped = c->damage.skipped;
    pthread_mutex_unlock(&c->mu);
}

rc_packet *rc_canvas_latest_packet(rcanvas_canvas *c, int refined) {
    pthread_mutex_lock(&c->mu);
    rc_packet *p = rc_packet_ref(refined ? c->refined : c->tiers[0].latest);
    pthread_mutex_unlock(&c->mu);
    return p;
}
