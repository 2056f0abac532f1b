/*
 * canvas.c — the stream stage: rcanvas_present() copies the app's frame into a pooled frame buffer and feeds the
 * canvas's encode pipeline (one frame encoding, one pending; a newer present replaces the pending one); encoded
 * packets become `latest`, and the canvas notifies the runtime so the transports ask their sessions for it.
 * rcanvas_wait() decides when a draw is due (update mode, max_fps, and flow control on the active viewer's
 * unacked frames). Events from viewers queue here, merged as rendercanvas does. Idle canvases get their last
 * frame re-encoded losslessly (refinement). Sessions (the viewers' side) are in session.c.
 */
#include "stream/canvas_internal.h"

#include "codec/scale.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NEVER INT64_MAX
/* The video bitrate's top, a user maximum (RCANVAS_OPT_BITRATE_KBPS, --bitrate): each tier's encoder follows its
 * viewers' link up to it. Generous (issue 17: a fixed 8 Mbit/s left 15 of 20 Mbit/s unused and 25.6 dB on
 * loopback); the largest the option takes is RC_MAX_BITRATE_KBPS. */
#define RC_DEFAULT_BITRATE_KBPS 50000
#define RC_MAX_BITRATE_KBPS 200000
/* P-frames after a keyframe before their sizes teach the steering (rc_steer_video_frame): openh264's rate control
 * settles over the first few (measured on the pan loop at 2.7 Mbit/s: 265, 200 kB, … then 24 kB). */
#define RC_VIDEO_SETTLE_FRAMES 4
/* A tier that skipped the newest frame (its viewers' windows were full) encodes it once no newer one has come for
 * this long: a scene that stops reaches every viewer, and an animation does not pay twice. */
#define RC_CATCHUP_US 50000

static void set_prefs_locked(rcanvas_canvas *c);
static void codec_changed_locked(rcanvas_canvas *c);
static void set_tier0_locked(rcanvas_canvas *c);
static void apply_codec_change_locked(rcanvas_canvas *c);
static int tiers_busy_locked(const rcanvas_canvas *c);

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

/* Bounded by design (docs/security.md, "Limits"): one resize may not make the canvas render (and its frame slots,
 * encoders and packets hold) more than max_canvas_pixels, however large or dense the viewer's screen claims to be. */
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
    return ratio;
}

void rc_canvas_set_size_locked(rcanvas_canvas *c, double w, double h, double ratio) {
    uint32_t maxd = c->env.max_frame_dim;
    ratio = rc_canvas_clamp_ratio(c, w, h, ratio);
    c->size.width = w;
    c->size.height = h;
    c->size.pixel_ratio = ratio;
    double pw = floor(w * ratio + 0.5), ph = floor(h * ratio + 0.5);
    c->size.physical_width = pw < 1 ? 1 : pw > maxd ? maxd : (uint32_t)pw;
    c->size.physical_height = ph < 1 ? 1 : ph > maxd ? maxd : (uint32_t)ph;
}

/* A live codec must be built in (rc_codec_for), or AUTO. */
static int check_params(rcanvas_codec codec, int quality, rcanvas_subsampling ss) {
    if (codec != RCANVAS_CODEC_AUTO && !rc_codec_for(codec)) return RCANVAS_EINVAL;
    if (quality < 1 || quality > 100) return RCANVAS_EINVAL;
    if (ss != RCANVAS_SUBSAMP_420 && ss != RCANVAS_SUBSAMP_444) return RCANVAS_EINVAL;
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
    c->env = *env;
    memcpy(c->name, name, strlen(name) + 1);
    copy_utf8(c->title, sizeof c->title, cfg->title ? cfg->title : "rcanvas");
    c->mode = cfg->update_mode;
    c->max_fps = cfg->max_fps;
    c->max_in_flight = cfg->max_in_flight;
    c->params = (rc_encode_params){.codec = cfg->codec, .quality = cfg->quality, .subsampling = cfg->subsampling,
                                   .bitrate_kbps = RC_DEFAULT_BITRATE_KBPS};
    set_prefs_locked(c);
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

static void frame_release_locked(rc_frame_buf *fb) {
    if (!fb || fb->refs == 0) return;
    if (--fb->refs == 0 && fb->ext_release) {
        void (*release)(void *) = fb->ext_release;
        fb->ext_release = NULL;
        release(fb->ext_arg);
    }
}

void rc_canvas_close(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    pthread_cond_broadcast(&c->cv);
    rc_canvas_notify_locked(c); /* sessions see `closing`: the transport closes them */
    while (c->encoding || c->refine_running || tiers_busy_locked(c)) pthread_cond_wait(&c->cv, &c->mu);
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

/* Issue 12: the cursor viewers see, a CSS keyword; told to viewers like the title. */
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

int rcanvas_canvas_set_codec(rcanvas_canvas *c, rcanvas_codec codec, int quality, rcanvas_subsampling ss) {
    if (!c || check_params(codec, quality, ss)) return RCANVAS_EINVAL;
    pthread_mutex_lock(&c->mu);
    c->params.codec = codec;
    c->params.quality = quality;
    c->params.subsampling = ss;
    codec_changed_locked(c);
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

/* ---- tiers: the codecs the canvas encodes ---- */

/* The canvas's codec preference: one codec (then JPEG, which every viewer decodes), or RCANVAS_CODEC_AUTO:
 * H.264, VP9, VP8 (those built in), then JPEG. mu held. */
static void set_prefs_locked(rcanvas_canvas *c) {
    c->nprefs = 0;
    if (c->params.codec == RCANVAS_CODEC_AUTO) {
        static const rcanvas_codec order[] = {RCANVAS_CODEC_H264, RCANVAS_CODEC_VP9, RCANVAS_CODEC_VP8};
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
            if (rc_codec_for(order[i]) && !(c->codecs_disabled & (1u << order[i])))
                c->prefs[c->nprefs++] = rc_codec_for(order[i]);
    } else if (!(c->codecs_disabled & (1u << c->params.codec))) {
        c->prefs[c->nprefs++] = rc_codec_for(c->params.codec);
    }
    if (c->nprefs == 0 || c->prefs[c->nprefs - 1] != &rc_codec_jpeg) c->prefs[c->nprefs++] = &rc_codec_jpeg;
}

/* The canvas's codec changed: new preferences; every session moves to its best tier (with a keyframe). */
/* The codec preferences changed (an option, or a codec that failed): every session moves to its best tier, with a
 * keyframe. While a tier encodes, tiers cannot be rebuilt: the change waits for the encode to finish
 * (apply_codec_change_locked from tier_done_locked), and sessions stay where they are meanwhile. mu held. */
static void apply_codec_change_locked(rcanvas_canvas *c) {
    c->codec_change_pending = 0;
    set_prefs_locked(c);
    for (rc_session *s = c->sessions; s; s = s->next) { /* off their tiers, then each to its best one */
        if (s->tier >= 0) c->tiers[s->tier].nsessions--;
        s->tier = -1;
    }
    set_tier0_locked(c);
    for (rc_session *s = c->sessions; s; s = s->next) rc_session_place_locked(c, s);
    c->draw_requested = 1;
    pthread_cond_broadcast(&c->cv);
    rc_canvas_notify_locked(c);
}

static void codec_changed_locked(rcanvas_canvas *c) {
    if (tiers_busy_locked(c)) c->codec_change_pending = 1;
    else apply_codec_change_locked(c);
}

/* Clears tier t for reuse, keeping its scaled-frame buffer. mu held; t not busy. */
static void tier_reset(rc_tier *t) {
    uint8_t *scaled = t->scaled;
    size_t cap = t->scaled_cap;
    rc_packet_unref(t->latest);
    rc_codec_free(t->inst);
    memset(t, 0, sizeof(*t));
    t->scaled = scaled;
    t->scaled_cap = cap;
}

int rc_canvas_tier_for_locked(rcanvas_canvas *c, const rc_codec_type *codec, int rung) {
    int free_slot = -1;
    for (int i = 0; i < RC_MAX_TIERS; i++) /* first the tier of that codec and rung, if one is watched */
        if (c->tiers[i].codec == codec && c->tiers[i].rung == rung && c->tiers[i].nsessions) return i;
    for (int i = 0; i < RC_MAX_TIERS; i++) {
        rc_tier *t = &c->tiers[i];
        if (t->codec == codec && (t->rung == rung || !t->nsessions)) {
            t->rung = rung; /* a tier nobody watches takes the rung of its first viewer */
            return i;
        }
        if (free_slot < 0 && !t->codec && i > 0) free_slot = i;
    }
    if (free_slot < 0) { /* reuse a tier nobody watches (not 0) */
        for (int i = 1; i < RC_MAX_TIERS && free_slot < 0; i++)
            if (!c->tiers[i].nsessions && !c->tiers[i].busy) free_slot = i;
        if (free_slot < 0) return -1;
        tier_reset(&c->tiers[free_slot]);
    }
    c->tiers[free_slot].codec = codec;
    c->tiers[free_slot].rung = rung;
    return free_slot;
}

/* Tier 0 follows the first preference. mu held; only while tier 0 is not encoding. */
static void set_tier0_locked(rcanvas_canvas *c) {
    rc_tier *t = &c->tiers[0];
    if (t->codec == c->prefs[0]) return;
    int n = t->nsessions;
    tier_reset(t);
    t->codec = c->prefs[0];
    t->nsessions = n;
}

void rc_canvas_request_keyframe_locked(rcanvas_canvas *c, rc_tier *t) {
    if (t->keyframe_requested) return;
    t->keyframe_requested = 1;
    pthread_cond_broadcast(&c->cv);
    rc_canvas_notify_locked(c); /* the tick re-encodes the last frame as a keyframe if the scene is still */
}

/* ---- encode pipeline ---- */

/* Encodes frame fb with an intra, stripe-parallel codec into pk on the pool; done(task) runs when it is finished.
 * mu held; the pool takes its own lock only. */
static void submit_stripes(rcanvas_canvas *c, rc_encode_task *task, rc_frame_buf *fb, const rc_image *img,
                           const rc_codec_type *codec, const rc_encode_params *params, rc_encode_done_fn done,
                           rc_packet *pk) {
    task->img = *img;
    task->params = *params;
    task->codec = codec;
    task->seq = fb->seq;
    task->present_us = fb->present_us;
    task->stripes = 0;
    task->done = done;
    task->user = c;
    task->packet = pk;
    rc_encode_submit(c->env.pool, task);
}

/* 1 while some tier encodes (a frame, or a keyframe of `last`). mu held. */
static int tiers_busy_locked(const rcanvas_canvas *c) {
    for (int i = 0; i < RC_MAX_TIERS; i++)
        if (c->tiers[i].busy) return 1;
    return 0;
}

static void live_done(rc_encode_task *t, int status);
static void tier_done_locked(rcanvas_canvas *c, rc_tier *t, rc_packet *pk, int status, const char *error);

/* Runs a stateful codec on one whole frame (a worker thread; the tier is busy, so nobody else touches its
 * encoder). */
static void stream_job_run(rc_job *job, rc_worker *w) {
    rc_stream_job *j = (rc_stream_job *)job;
    /* the encoder's own threads (openh264, libvpx) are made in create or the first encode: unpinned, they may run
     * on every core instead of sharing this worker's one (VP8 at 1080p with 2 threads: 76–115 ms pinned, 31 ms
     * not, measured in review) */
    rc_worker_unpin(w);
    rc_tier *t = j->tier;
    rc_packet *pk = j->packet;
    int st = t->inst ? RCANVAS_OK : rc_codec_new(t->codec, &t->inst);
    rc_encode_info info = {0};
    if (!st) {
        if (j->force_keyframe) rc_codec_request_keyframe(t->inst);
        rc_buf_clear(&pk->tiles[0].data);
        st = rc_codec_encode(t->inst, &j->img, &j->params, &pk->tiles[0].data, &info);
    }
    if (!st) {
        pk->total_bytes = pk->tiles[0].data.len;
        if (info.keyframe) {
            pk->flags |= RC_PACKET_KEYFRAME;
            pk->depends_on = 0;
        }
    }
    rc_worker_repin(w);
    rcanvas_canvas *c = j->canvas;
    pthread_mutex_lock(&c->mu);
    tier_done_locked(c, t, pk, st, t->inst ? rc_codec_error(t->inst) : "encoder creation failed");
    /* as in live_done: notify and signal with mu held, nothing touches the canvas after the unlock */
    rc_canvas_notify_locked(c);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* The frame rate the app draws at when no viewer holds it back (smoothed), at most max_fps: what a tier's budget is
 * spread over. mu held. */
static double fps_goal_locked(const rcanvas_canvas *c) {
    double cap = c->max_fps > 0 ? c->max_fps : 60;
    return c->present_fps > 0 && c->present_fps < cap ? c->present_fps : cap;
}

/* A tier's encode settings for its viewers' link (rate.h): video gets its bitrate, frame-rate cap and scale here;
 * image codecs their quality from the previous frame (tier_done_locked). Returns the image to encode (fb's, or fb's
 * shrunk into the tier's buffer); sets the tier's frame-rate bookkeeping. mu held (the shrink runs under it too:
 * ~1 ms at 1080p with libyuv, and only on links too slow for the full size). */
static rc_image steer_tier_locked(rcanvas_canvas *c, rc_tier *t, rc_frame_buf *fb, int64_t now,
                                  rc_encode_params *params) {
    int stateful = (t->codec->flags & RC_CODEC_STATEFUL) != 0;
    double top_bps = (double)c->params.bitrate_kbps * 1000;
    if (!t->steer.scale_div) rc_steer_init(&t->steer, c->params.quality, top_bps);
    t->budget_bps = t->nsessions && c->rate_adapt ? rc_tier_budget_locked(c, (int)(t - c->tiers)) : RC_LINK_MAX_BPS;
    double goal = fps_goal_locked(c);
    if (t->last_encode_us && now > t->last_encode_us) { /* the rate this tier actually encodes at */
        double f = 1e6 / (double)(now - t->last_encode_us);
        t->enc_fps = t->enc_fps > 0 ? t->enc_fps + (f - t->enc_fps) / 8 : f;
    }
    t->last_encode_us = now;
    uint64_t px = (uint64_t)fb->img.width * fb->img.height;
    if (stateful) {
        /* issue 17: the encoder spends bitrate / params->fps on a frame, so params->fps is the rate frames are meant
         * to come at — the app's measured rate (fps_goal_locked) or the steering's cap —, never the rate the viewers
         * happened to take them at (that gave each frame bitrate / 2 fps on a slow link: bigger frames, fewer taken,
         * bigger frames, and 2 fps at 127 kB a frame), nor max_fps when the app draws slower. */
        rc_steer_video(&t->steer, top_bps, t->budget_bps, goal, px);
        double fps = round(t->steer.fps_cap > 0 && t->steer.fps_cap < goal ? t->steer.fps_cap : goal);
        if (fps < 1) fps = 1; /* whole frames a second: the encoder is not re-tuned for every smoothing step */
        double kbps = t->steer.bitrate_bps / 1000;
        params->fps = fps;
        params->bitrate_kbps = kbps < 100 ? 100 : kbps > RC_MAX_BITRATE_KBPS ? RC_MAX_BITRATE_KBPS : (int)kbps;
        double target = params->bitrate_kbps * 1000.0 / 8 / fps; /* bytes a frame */
        t->video_since_cut = target < 0.95 * t->video_target_bytes ? 0 : t->video_since_cut + 1;
        t->video_target_bytes = target;
    } else if (!(t->codec->flags & RC_CODEC_LOSSLESS)) {
        if (t->steer.quality > c->params.quality) t->steer.quality = c->params.quality;
        params->quality = t->steer.quality;
    }
    rc_image img = fb->img;
    if (t->steer.scale_div > 1 &&
        rc_image_downscale(&fb->img, t->steer.scale_div, &t->scaled, &t->scaled_cap, &img) != RCANVAS_OK)
        img = fb->img;
    return img;
}

/* ---- counters for /metrics (issue 11): kept here, under mu, read by rc_registry_metrics ---- */

/* One encode of tier t ended: its time goes into the histogram. mu held. */
static void count_encode_locked(rcanvas_canvas *c, rc_tier *t) {
    if (!t->metrics_start_us) return;
    static const double bounds[RC_ENCODE_MS_BUCKETS] = RC_ENCODE_MS_BOUNDS;
    double ms = (double)(rc_now_us() - t->metrics_start_us) / 1000.0;
    t->metrics_start_us = 0;
    int b = 0;
    while (b < RC_ENCODE_MS_BUCKETS && ms > bounds[b]) b++;
    c->counters.encode_ms_bucket[b]++;
    c->counters.encode_count++;
    c->counters.encode_ms_sum += ms;
}

/* Starts tier t on frame fb. Returns 1 if it was started. mu held. */
static int start_tier_locked(rcanvas_canvas *c, rc_tier *t, rc_frame_buf *fb) {
    rc_packet *pk = rc_packet_get(c->packets);
    if (!pk) return 0;
    int64_t now = rc_now_us();
    t->busy = 1;
    t->busy_seq = fb->seq;
    t->metrics_start_us = now;
    rc_encode_params params = c->params;
    params.codec = (rcanvas_codec)t->codec->wire_id;
    if (!params.threads) params.threads = (t->codec->flags & RC_CODEC_ONE_THREAD) ? 1 : rc_pool_threads(c->env.pool);
    if (!(params.fps > 0)) params.fps = c->max_fps > 0 ? c->max_fps : 60;
    rc_image img = steer_tier_locked(c, t, fb, now, &params);
    int force = !t->ref_id; /* no reference yet (or the encoder failed): a keyframe anyway */
    int requested = 0;      /* a viewer asked for a whole frame (intra codecs: its picture does not fit a partial one) */
    if (t->keyframe_requested && now - t->last_forced_us >= RC_KEYFRAME_MIN_US) {
        force = requested = 1;
        t->keyframe_requested = 0;
        t->last_forced_us = now;
    }
    if (t->codec->flags & RC_CODEC_STATEFUL) {
        pk->seq = fb->seq;
        pk->present_us = fb->present_us;
        pk->codec = t->codec;
        pk->width = img.width;
        pk->height = img.height;
        pk->ntiles = 1;
        pk->tiles[0].x = pk->tiles[0].y = 0;
        pk->tiles[0].w = img.width;
        pk->tiles[0].h = img.height;
        pk->id = ++t->next_id;
        pk->depends_on = t->ref_id;
        rc_stream_job *j = &t->sjob;
        j->job.run = stream_job_run;
        j->canvas = c;
        j->tier = t;
        j->img = img;
        j->params = params;
        j->packet = pk;
        j->force_keyframe = force;
        rc_pool_submit(c->env.pool, &j->job);
    } else {
        /* damage: only the tiles that changed since the oldest picture its viewers hold, or the whole frame (a
         * viewer asked for one; or the frame is shrunk, or the last one was: tiles of two sizes never mix) */
        int scaled = t->steer.scale_div > 1;
        rc_damage_plan_live_locked(c, t, fb, requested || scaled || t->coded_scaled, pk, &t->task);
        t->coded_scaled = scaled;
        if (scaled) pk->flags |= RC_PACKET_SCALED;
        submit_stripes(c, &t->task, fb, &img, t->codec, &params, live_done, pk);
    }
    return 1;
}

/* Moves `pending` into the encoders: every tier in use (and tier 0) that wants it encodes it. mu held; the pool
 * takes its own lock only. */
static void start_encode_locked(rcanvas_canvas *c) {
    if (c->codec_change_pending) apply_codec_change_locked(c); /* no tier is busy here */
    rc_frame_buf *fb = c->pending;
    c->pending = NULL;
    if (rc_damage_resolve_locked(c, fb)) { /* identical to `last`: no packet for any codec */
        c->counters.unchanged++;
        rc_damage_skip_locked(c, fb);
        frame_release_locked(fb);
        pthread_cond_broadcast(&c->cv); /* it counts as delivered: a draw may be due */
        rc_canvas_notify_locked(c);     /* the tick: refinement, keyframes of `last` */
        return;
    }
    c->encoding = fb;
    c->encoding_tiers = 0;
    c->encoding_ok = 0;
    int eligible = 0, skipped = 0;
    int64_t now = rc_now_us();
    for (int i = 0; i < RC_MAX_TIERS; i++) {
        rc_tier *t = &c->tiers[i];
        /* tier 0 encodes without viewers too (a joiner's frame is ready), unless it is a stateful codec: its
         * joiner needs a keyframe anyway, made from `last` (side_check_locked) */
        if (!t->codec || !(t->nsessions > 0 || (i == 0 && !(t->codec->flags & RC_CODEC_STATEFUL)))) continue;
        /* Every viewer at its own pace: a tier encodes a frame only if one of its viewers can take it now and its
         * frame-rate cap allows; otherwise it skips the frame (side_check_locked catches up on a scene that
         * stops), so slow viewers cost neither the fast ones' frame rate nor encodes nobody receives. */
        if (t->nsessions > 0 && (!rc_tier_wants_frame_locked(c, i) || !rc_steer_rate_allows(&t->steer, &t->cap_next_us, now))) {
            skipped = 1; /* its catch-up, if the scene stops here, is the tick's */
            continue;
        }
        eligible++;
        c->encoding_tiers += start_tier_locked(c, t, fb);
    }
    if (skipped) rc_canvas_notify_locked(c);
    if (c->encoding_tiers > 0) return;
    c->encoding = NULL;
    if (eligible) { /* every packet allocation failed */
        rc_log(c->env.log, RCANVAS_LOG_ERROR, "canvas '%s': out of memory for frame %u", c->name, fb->seq);
        c->counters.dropped++;
        if (fb->seq > c->failed_seq) c->failed_seq = fb->seq;
        frame_release_locked(fb);
    } else { /* nobody to encode for: the frame waits as `last` for a viewer's tier */
        rc_damage_commit_locked(c, fb, 0);
        frame_release_locked(c->last);
        c->last = fb;
    }
}

/* A tier finished its packet. When every tier is done with the frame, it becomes `last` and the next pending
 * frame starts. mu held. */
static void tier_done_locked(rcanvas_canvas *c, rc_tier *t, rc_packet *pk, int status, const char *error) {
    rc_packet *drop = pk;
    t->busy = 0;
    count_encode_locked(c, t);
    if (status == RCANVAS_OK) {
        if (pk->id) t->ref_id = pk->id;
        if (pk->flags & RC_PACKET_KEYFRAME) t->keyframe_requested = 0; /* every viewer waiting for one takes it */
        if (!t->latest || pk->seq >= t->latest->seq) {
            drop = t->latest;
            t->latest = pk;
        }
        t->failures = 0;
        if (t->codec->flags & RC_CODEC_STATEFUL) { /* issue 17: what frames cost the encoder */
            if (pk->flags & RC_PACKET_KEYFRAME) t->video_since_key = 0;
            else if (++t->video_since_key > RC_VIDEO_SETTLE_FRAMES)
                /* not right after a cut of its target (openh264 takes a few frames to follow one; and it reports no
                 * frame QP to tell its ceiling by) */
                if (t->video_since_cut > RC_VIDEO_SETTLE_FRAMES)
                    rc_steer_video_frame(&t->steer, pk->total_bytes, t->video_target_bytes);
        }
        if (!(t->codec->flags & RC_CODEC_STATEFUL)) { /* the next frame's quality, rate, size */
            uint64_t px = 0; /* the pixels coded: the changed tiles of a partial packet (damage), else all */
            for (int i = 0; i < pk->ntiles; i++) px += (uint64_t)pk->tiles[i].w * pk->tiles[i].h;
            if (px)
                rc_steer_image(&t->steer, (t->codec->flags & RC_CODEC_LOSSLESS) ? 0 : c->params.quality,
                               t->budget_bps, fps_goal_locked(c), px, pk->total_bytes);
        }
    } else {
        if (t->failures++ % 100 == 0)
            rc_log(c->env.log, RCANVAS_LOG_ERROR, "canvas '%s': %s encoding of a %ux%u frame failed: %s (%s)%s",
                   c->name, t->codec->name, pk->width, pk->height, rcanvas_strerror(status), error,
                   t->failures >= RC_TIER_FAILURES ? "" : "; retrying");
        t->ref_id = 0; /* its state is unknown: the next packet is a keyframe */
        if (t->failures == RC_TIER_FAILURES && t->codec != &rc_codec_jpeg) {
            /* it cannot code this (a frame above H.264's size limit, say): its viewers move to their next
             * codec, JPEG at worst, until the frame size changes */
            rc_log(c->env.log, RCANVAS_LOG_WARN, "canvas '%s': %s fails at %ux%u; its viewers fall back", c->name,
                   t->codec->name, pk->width, pk->height);
            c->codecs_disabled |= 1u << t->codec->wire_id;
            codec_changed_locked(c);
        }
    }
    if (t != &c->tiers[0] && t->nsessions == 0) { /* nobody watches it: keep no stale packet */
        if (drop != t->latest) rc_packet_unref(t->latest);
        t->latest = NULL;
        t->ref_id = 0;
    }
    rc_packet_unref(drop);
    rc_frame_buf *fb = c->encoding;
    if (t->side_frame) { /* `last` on this tier alone (side_check_locked), not part of a frame's encode */
        if (status == RCANVAS_OK && t->side_frame->seq > c->latest_seq) c->latest_seq = t->side_frame->seq;
        frame_release_locked(t->side_frame);
        t->side_frame = NULL;
        if (c->codec_change_pending && !tiers_busy_locked(c)) apply_codec_change_locked(c);
        if (!c->encoding && c->pending && !c->closing && !tiers_busy_locked(c)) start_encode_locked(c);
        return;
    }
    if (status == RCANVAS_OK) c->encoding_ok++;
    if (--c->encoding_tiers > 0) return;
    c->encoding = NULL;
    /* no tier could encode it: it counts as delivered for flow control (else the app would wait forever) */
    if (c->encoding_ok == 0 && pk->seq > c->failed_seq) c->failed_seq = pk->seq;
    if (c->encoding_ok > 0) c->counters.encoded++;
    else c->counters.dropped++;
    if (c->codec_change_pending && !tiers_busy_locked(c)) apply_codec_change_locked(c);
    if (c->encoding_ok > 0 && fb->seq > c->latest_seq) {
        rc_packet *old_refined = c->refined;
        c->latest_seq = fb->seq;
        c->refined = NULL;
        rc_packet_unref(old_refined);
        rc_damage_commit_locked(c, fb, 0);
        frame_release_locked(c->last);
        c->last = fb; /* the encoding slot's reference moves to `last` */
    } else {
        frame_release_locked(fb);
    }
    if (c->pending && !c->closing && !tiers_busy_locked(c)) start_encode_locked(c);
}

static void live_done(rc_encode_task *task, int status) {
    rcanvas_canvas *c = task->user;
    pthread_mutex_lock(&c->mu);
    rc_tier *t = (rc_tier *)((char *)task - offsetof(rc_tier, task));
    tier_done_locked(c, t, task->packet, status, task->error);
    /* Notify and signal with mu held: once it is released with `encoding` clear, rc_canvas_close returns and the
     * canvas and the runtime may be freed, so nothing here may touch them after the unlock. */
    rc_canvas_notify_locked(c);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Between frames, `last` encoded on one tier alone: as a keyframe for a tier whose viewers lack a reference (a
 * viewer joined a still scene), or as its newest frame for a tier that skipped it (its viewers' windows were full,
 * or its frame-rate cap) once no newer frame has come for RC_CATCHUP_US. Returns µs until one may start, or -1.
 * mu held. */
static int64_t side_check_locked(rcanvas_canvas *c, int64_t now_us) {
    int64_t next = -1;
    if (c->closing || c->pending || c->encoding || !c->last) return -1;
    for (int i = 0; i < RC_MAX_TIERS; i++) {
        rc_tier *t = &c->tiers[i];
        if (!t->codec || t->busy || !t->nsessions) continue;
        int64_t wait;
        if (t->keyframe_requested) {
            wait = t->last_forced_us + RC_KEYFRAME_MIN_US - now_us;
        } else if ((!t->latest || t->latest->seq < c->last->seq) && rc_tier_wants_frame_locked(c, i)) {
            wait = c->last_present_us + RC_CATCHUP_US - now_us;
            int64_t w2 = (t->steer.fps_cap > 0 ? t->cap_next_us - 2000 : t->last_encode_us + RC_CATCHUP_US) - now_us;
            if (w2 > wait) wait = w2; /* the cap, and no retry storm after a failed encode */
        } else {
            continue;
        }
        if (wait > 0) {
            if (next < 0 || wait < next) next = wait;
            continue;
        }
        if (!t->keyframe_requested) rc_steer_rate_allows(&t->steer, &t->cap_next_us, now_us); /* counts for the cap */
        c->last->refs++; /* held while the tier reads it; tier_done_locked lets go */
        t->side_frame = c->last;
        if (!start_tier_locked(c, t, c->last)) {
            frame_release_locked(t->side_frame);
            t->side_frame = NULL;
        }
    }
    return next;
}

static void refine_done(rc_encode_task *t, int status) {
    rcanvas_canvas *c = t->user;
    rc_packet *drop = t->packet, *old = NULL;
    pthread_mutex_lock(&c->mu);
    c->refine_running = 0;
    frame_release_locked(c->refine_src);
    c->refine_src = NULL;
    if (status == RCANVAS_OK && c->latest_seq == t->seq && !c->closing) {
        old = c->refined;
        c->refined = drop;
        drop = NULL;
    } else if (status != RCANVAS_OK) {
        rc_log(c->env.log, RCANVAS_LOG_WARN, "canvas '%s': lossless refinement of frame %u failed: %s",
               c->name, t->seq, t->error);
    }
    rc_packet_unref(drop);
    rc_packet_unref(old);
    rc_canvas_notify_locked(c); /* with mu held, as in live_done */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Starts the lossless refinement of `last` if one is due (no new frame for refine_ms, latest lossy). Returns the
 * µs until it would be due, or -1 if none is pending. */
static int64_t refine_check_locked(rcanvas_canvas *c, int64_t now_us) {
    int64_t ret = -1;
    rc_frame_buf *fb = c->last;
    if (c->closing || c->refine_ms <= 0 || !c->latest_seq || !fb || c->nsessions == 0) goto out;
    if (fb->seq != c->latest_seq) goto out;
    const rc_codec_type *codec = c->refine_codec ? c->refine_codec : &rc_codec_png;
    /* damage: some viewer will hold `last` lossy; the refinement covers the tiles not lossless in any of them,
     * those changed after `base` (0: all). One made already (or failed) for that base or an older one: done. */
    long base = rc_damage_refine_base_locked(c, codec);
    if (base < 0 || (c->damage.refine_seq == fb->seq && c->damage.refine_base <= (uint32_t)base)) goto out;
    if (c->pending || c->encoding || tiers_busy_locked(c)) goto out; /* its completion re-arms */
    /* One refinement at a time: refine_task and refine_src are single slots. Starting a second one while the
     * first still runs (a newer frame became `last` meanwhile) would overwrite refine_src, so the older frame's
     * buffer was never released; after a few such overlaps every frame slot stayed taken and the stream
     * stopped for good (issue 7). refine_done() wakes the network thread, whose check starts the newer one. */
    if (c->refine_running || c->draw_held) goto out; /* frames keep coming: the release of the hold re-arms */
    int64_t due = c->last_present_us + (int64_t)c->refine_ms * 1000;
    if (c->draw_held_us + (int64_t)c->refine_ms * 1000 > due) due = c->draw_held_us + (int64_t)c->refine_ms * 1000;
    if (now_us < due) {
        ret = due - now_us;
        goto out;
    }
    rc_packet *pk = rc_packet_get(c->packets);
    if (!pk) goto out;
    pk->flags = RC_PACKET_REFINE;
    c->refine_done_seq = fb->seq;
    c->refine_running = 1;
    fb->refs++;
    c->refine_src = fb;
    rc_encode_task *t = &c->refine_task;
    rc_damage_plan_refine_locked(c, (uint32_t)base, pk, t); /* its rectangles, or the whole frame */
    c->damage.refine_seq = fb->seq;
    c->damage.refine_base = pk->base_seq;
    rc_encode_params params = {.codec = (rcanvas_codec)codec->wire_id, .quality = 100,
                               .subsampling = RCANVAS_SUBSAMP_444};
    submit_stripes(c, t, fb, &fb->img, codec, &params, refine_done, pk);
out:
    return ret;
}

int64_t rc_canvas_tick(rcanvas_canvas *c, int64_t now_us) {
    pthread_mutex_lock(&c->mu);
    int64_t a = refine_check_locked(c, now_us);
    int64_t b = rc_session_check_stall_locked(c, now_us);
    int64_t k = side_check_locked(c, now_us);
    pthread_mutex_unlock(&c->mu);
    int64_t m = a < 0 ? b : b < 0 ? a : a < b ? a : b;
    return m < 0 ? k : k < 0 ? m : m < k ? m : k;
}

/* ---- frames in ---- */

/* fb (refs = 1, img set) becomes the newest frame: the pending one it replaces is never encoded. */
static void publish_locked(rcanvas_canvas *c, rc_frame_buf *fb) {
    int64_t now = rc_now_us();
    rc_damage_publish_locked(c, fb); /* before the pending frame it replaces goes */
    fb->seq = ++c->presented_seq;
    fb->present_us = now;
    /* the app's own frame rate: intervals in which no viewer held it back */
    if (c->last_present_us && now > c->last_present_us && c->draw_held_us < c->last_present_us) {
        double f = 1e6 / (double)(now - c->last_present_us);
        c->present_fps = c->present_fps > 0 ? c->present_fps + (f - c->present_fps) / 8 : f;
    }
    c->prev_present_us = c->last_present_us;
    c->last_present_us = now;
    if (fb->img.width != c->present_w || fb->img.height != c->present_h) {
        c->present_w = fb->img.width;
        c->present_h = fb->img.height;
        if (c->codecs_disabled) { /* a new size: the codecs that failed at the old one get another chance */
            c->codecs_disabled = 0;
            codec_changed_locked(c);
        }
    }
    c->counters.presented++;
    if (c->pending) {
        c->counters.dropped++; /* replaced before it was encoded */
        frame_release_locked(c->pending);
    }
    c->pending = fb;
    if (!c->encoding && !tiers_busy_locked(c)) start_encode_locked(c);
}

/* A slot that once held a much larger frame lets go of its memory when a smaller one comes (after a resize back
 * from a large size): free, not realloc, so that the big block (mmap'd by malloc) goes back to the system at once
 * instead of staying in the heap. The next copy allocates what it needs. Slot reserved (refs = 1), lock not held. */
#define RC_SHRINK_MIN_BYTES (4u << 20)
static void frame_buf_shrink(rc_frame_buf *fb, size_t need) {
    if (fb->cap <= RC_SHRINK_MIN_BYTES || fb->cap / 2 < need) return;
    free(fb->pixels);
    fb->pixels = NULL;
    fb->cap = 0;
}

/* What the canvas's live codec can encode (issue 11: a frame it cannot was accepted, then dropped with a log line).
 * Limits of the libraries: libjpeg-turbo 65500 a side, WebP 16383 (WEBP_MAX_DIMENSION), VP8 16383 (14 bits),
 * openh264 36864 macroblocks a frame (MAX_MBS_PER_FRAME: 4096 × 2304). AUTO falls back to JPEG per viewer, so
 * JPEG's limit holds there. 1 if w × h fits. Lock held (params). */
static int codec_fits_locked(const rcanvas_canvas *c, uint32_t w, uint32_t h) {
    switch (c->params.codec) {
    case RCANVAS_CODEC_WEBP:
    case RCANVAS_CODEC_VP8: return w <= 16383 && h <= 16383;
    case RCANVAS_CODEC_H264: return (uint64_t)((w + 15) / 16) * ((h + 15) / 16) <= 36864;
    case RCANVAS_CODEC_PNG:
    case RCANVAS_CODEC_VP9:
    case RCANVAS_CODEC_AV1: return 1; /* max_frame_dim (≤ 65535) is within their limits */
    default: return w <= 65500 && h <= 65500; /* JPEG, and AUTO's fallback */
    }
}

int rcanvas_present(rcanvas_canvas *c, const rcanvas_frame *f) {
    if (!c || !f) return RCANVAS_EINVAL;
    if (!f->pixels) return RCANVAS_ENULL;
    unsigned bpp = rc_format_bpp(f->format);
    if (!bpp) return RCANVAS_EFORMAT;
    uint32_t maxd = c->env.max_frame_dim;
    if (f->width == 0 || f->height == 0 || f->width > maxd || f->height > maxd) return RCANVAS_EFRAME_SIZE;
    size_t row = (size_t)f->width * bpp;
    if (f->pitch < row) return RCANVAS_EPITCH;

    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_ECLOSED;
    }
    if (!codec_fits_locked(c, f->width, f->height)) {
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_EFRAME_SIZE;
    }
    rc_frame_buf *fb = NULL;
    for (int i = 0; i < RC_FRAME_BUFS && !fb; i++)
        if (c->frames[i].refs == 0) fb = &c->frames[i];
    if (fb) fb->refs = 1; /* reserved for this present; no other slot points at it */
    rc_frame_buf *prev = fb ? rc_damage_present_begin(c) : NULL; /* held while we diff against it */
    pthread_mutex_unlock(&c->mu);
    if (!fb) return RCANVAS_EBUSY; /* only if several threads present on one canvas at once */

    size_t need = row * f->height;
    frame_buf_shrink(fb, need);
    if (fb->cap < need) {
        uint8_t *p = realloc(fb->pixels, need);
        if (!p) {
            pthread_mutex_lock(&c->mu);
            fb->refs = 0;
            frame_release_locked(prev);
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
    rc_damage_compute(fb, prev, NULL, 0, 0); /* the tiles that differ from the frame before, outside the lock */

    pthread_mutex_lock(&c->mu);
    frame_release_locked(prev);
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

/* An external frame, with a source's damage bitmap (dirty) or without (NULL: the CPU diff). The diff runs outside
 * the lock, against a reference to the frame presented before. */
static int present_external(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                            const uint8_t *dirty, uint32_t tiles_x, uint32_t tiles_y) {
    pthread_mutex_lock(&c->mu);
    rc_frame_buf *fb = take_external_locked(c, img, release, arg);
    if (!fb) {
        int r = c->closing ? RCANVAS_ECLOSED : RCANVAS_EBUSY;
        if (dirty) rc_damage_carry_locked(c, img, dirty, tiles_x, tiles_y); /* the next frame's bitmap needs it */
        pthread_mutex_unlock(&c->mu);
        release(arg);
        return r;
    }
    rc_frame_buf *prev = dirty ? NULL : rc_damage_present_begin(c);
    pthread_mutex_unlock(&c->mu);
    rc_damage_compute(fb, prev, dirty, tiles_x, tiles_y);
    pthread_mutex_lock(&c->mu);
    frame_release_locked(prev);
    if (c->closing) {
        frame_release_locked(fb); /* releases the pixels */
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_ECLOSED;
    }
    publish_locked(c, fb);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

int rc_canvas_present_external(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg) {
    return present_external(c, img, release, arg, NULL, 0, 0);
}

int rc_canvas_present_external_damage(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                                      const uint8_t *dirty, uint32_t tiles_x, uint32_t tiles_y) {
    if (dirty && (tiles_x != rc_damage_tiles(img->width) || tiles_y != rc_damage_tiles(img->height)))
        dirty = NULL; /* not this frame's grid: the CPU diff */
    return present_external(c, img, release, arg, dirty, tiles_x, tiles_y);
}

void rc_canvas_release_external(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    if (c->pending && c->pending->ext_release) {
        frame_release_locked(c->pending);
        c->pending = NULL;
    }
    /* a running encode may start the next pending frame: wait until the pipeline is empty of external frames */
    while (c->encoding || c->refine_running || tiers_busy_locked(c) || (c->pending && c->pending->ext_release)) {
        if (c->pending && c->pending->ext_release) {
            frame_release_locked(c->pending);
            c->pending = NULL;
        }
        if (c->encoding || c->refine_running || tiers_busy_locked(c)) pthread_cond_wait(&c->cv, &c->mu);
    }
    if (c->last && c->last->ext_release) {
        frame_release_locked(c->last);
        c->last = NULL;
    }
    pthread_mutex_unlock(&c->mu);
}

int rc_canvas_present_external_encoded(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                                       const rc_codec_type *codec, const uint8_t *data, size_t len) {
    /* The bytes serve only a canvas whose one tier in use is that codec's (a JPEG canvas whose viewers all decode
     * JPEG); otherwise the frame goes through the CPU pipeline, which encodes every tier. */
    pthread_mutex_lock(&c->mu);
    /* ... and whose encoder runs at the top (the GPU encoder has one quality, full size, every frame) */
    const rc_steer *st = &c->tiers[0].steer;
    int only = c->tiers[0].codec && c->tiers[0].codec->wire_id == codec->wire_id && !c->encoding &&
               !tiers_busy_locked(c) &&
               (!st->scale_div || (st->scale_div == 1 && !(st->fps_cap > 0) && st->quality >= c->params.quality));
    for (int i = 1; i < RC_MAX_TIERS; i++)
        if (c->tiers[i].nsessions) only = 0;
    pthread_mutex_unlock(&c->mu);
    if (!only) return rc_canvas_present_external(c, img, release, arg);
    /* the packet is filled outside the lock: one tile, the whole frame */
    rc_packet *pk = len <= UINT32_MAX ? rc_packet_get(c->packets) : NULL;
    if (!pk || rc_buf_reserve(&pk->tiles[0].data, len)) {
        rc_packet_unref(pk);
        release(arg);
        return RCANVAS_ENOMEM;
    }
    memcpy(rc_buf_data(&pk->tiles[0].data), data, len);
    pk->tiles[0].data.len = len;
    pk->tiles[0].x = pk->tiles[0].y = 0;
    pk->tiles[0].w = img->width;
    pk->tiles[0].h = img->height;
    pk->ntiles = 1;
    pk->total_bytes = len;
    pk->codec = codec;
    pk->flags = RC_PACKET_KEYFRAME | ((codec->flags & RC_CODEC_LOSSLESS) ? RC_PACKET_LOSSLESS : 0);
    pk->width = img->width;
    pk->height = img->height;
    rc_packet *old_latest = NULL, *old_refined = NULL;
    pthread_mutex_lock(&c->mu);
    only = c->tiers[0].codec && c->tiers[0].codec->wire_id == codec->wire_id && !c->encoding &&
           !tiers_busy_locked(c) && !c->codec_change_pending;
    for (int i = 1; i < RC_MAX_TIERS; i++)
        if (c->tiers[i].nsessions) only = 0;
    if (!only) { /* a viewer or a codec change came in between: the CPU pipeline after all */
        pthread_mutex_unlock(&c->mu);
        rc_packet_unref(pk);
        return rc_canvas_present_external(c, img, release, arg);
    }
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
    c->counters.presented++;
    c->counters.encoded++; /* encoded by its source (GPU JPEG) */
    if (c->pending) { /* an older frame waiting for the CPU encoder: never encoded */
        c->counters.dropped++;
        frame_release_locked(c->pending);
        c->pending = NULL;
    }
    old_latest = c->tiers[0].latest;
    old_refined = c->refined;
    c->tiers[0].latest = pk;
    c->tiers[0].keyframe_requested = 0; /* it has the newest frame, decodable alone */
    c->latest_seq = pk->seq;
    c->refined = NULL;
    fb->dmg_base = 0;
    rc_damage_commit_locked(c, fb, 1); /* sent whole */
    frame_release_locked(c->last);
    c->last = fb; /* source of the lossless refinement */
    rc_packet_unref(old_latest);
    rc_packet_unref(old_refined);
    rc_canvas_notify_locked(c);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

/* ---- scheduling ---- */

static int draw_due_locked(rcanvas_canvas *c, int64_t now, int64_t *next_us) {
    if (c->nsessions == 0 || c->mode == RCANVAS_UPDATE_MANUAL) return 0;
    if (!rc_sessions_visible_locked(c)) return 0; /* every view is scrolled away or in a hidden tab */
    /* The app draws at the pace of the fastest visible viewer (issue 10): a draw is allowed while some visible
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

/* ---- events (from sessions) ---- */

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

/* ---- options ---- */

int rcanvas_canvas_set_option(rcanvas_canvas *c, rcanvas_option opt, int value) {
    if (!c) return RCANVAS_EINVAL;
    int r = RCANVAS_OK;
    pthread_mutex_lock(&c->mu);
    switch (opt) {
    case RCANVAS_OPT_CODEC:
        if (check_params((rcanvas_codec)value, c->params.quality, c->params.subsampling)) r = RCANVAS_EINVAL;
        else {
            c->params.codec = (rcanvas_codec)value;
            codec_changed_locked(c);
        }
        break;
    case RCANVAS_OPT_BITRATE_KBPS:
        if (value < 100 || value > 200000) r = RCANVAS_EINVAL;
        else c->params.bitrate_kbps = value;
        break;
    case RCANVAS_OPT_KEYFRAME_INTERVAL:
        if (value < 0 || value > 100000) r = RCANVAS_EINVAL;
        else c->params.keyframe_interval = value;
        break;
    case RCANVAS_OPT_ENCODER_THREADS:
        if (value < 0 || value > 64) r = RCANVAS_EINVAL;
        else c->params.threads = value;
        break;
    case RCANVAS_OPT_REFINE_CODEC: {
        const rc_codec_type *rc = value == RCANVAS_CODEC_PNG    ? &rc_codec_png
                                  : value == RCANVAS_CODEC_WEBP ? rc_codec_by_name("webp-lossless")
                                                                : NULL;
        if (!rc) r = RCANVAS_EINVAL;
        else c->refine_codec = rc;
        break;
    }
    case RCANVAS_OPT_QUALITY:
        if (value < 1 || value > 100) r = RCANVAS_EINVAL;
        else c->params.quality = value;
        break;
    case RCANVAS_OPT_SUBSAMPLING:
        if (value != RCANVAS_SUBSAMP_420 && value != RCANVAS_SUBSAMP_444) r = RCANVAS_EINVAL;
        else c->params.subsampling = (rcanvas_subsampling)value;
        break;
    case RCANVAS_OPT_REFINE_MS:
        if (value < 0) r = RCANVAS_EINVAL;
        else c->refine_ms = value;
        break;
    case RCANVAS_OPT_MAX_IN_FLIGHT:
        if (value < 1 || value > RC_MAX_INFLIGHT) r = RCANVAS_EINVAL;
        else {
            c->max_in_flight = value;
            for (rc_session *s = c->sessions; s; s = s->next)
                s->window = rc_link_window(&s->link, fps_goal_locked(c), value, RC_MAX_INFLIGHT);
        }
        break;
    case RCANVAS_OPT_UPDATE_MODE:
        if (value < RCANVAS_UPDATE_MANUAL || value > RCANVAS_UPDATE_FASTEST) r = RCANVAS_EINVAL;
        else c->mode = (rcanvas_update_mode)value;
        break;
    case RCANVAS_OPT_MAX_FPS:
        if (value < 0 || value > 1000) r = RCANVAS_EINVAL;
        else c->max_fps = value;
        break;
    case RCANVAS_OPT_RATE_ADAPT:
        if (value != 0 && value != 1) r = RCANVAS_EINVAL;
        else c->rate_adapt = value;
        break;
    default: r = RCANVAS_EINVAL; break;
    }
    if (!r) {
        pthread_cond_broadcast(&c->cv); /* a mode or window change may make a draw due */
        rc_canvas_notify_locked(c);     /* a wider window may let sessions send */
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

int rcanvas_canvas_get_option(rcanvas_canvas *c, rcanvas_option opt, int *value) {
    if (!c || !value) return RCANVAS_EINVAL;
    int r = RCANVAS_OK;
    pthread_mutex_lock(&c->mu);
    switch (opt) {
    case RCANVAS_OPT_CODEC: *value = (int)c->params.codec; break;
    case RCANVAS_OPT_BITRATE_KBPS: *value = c->params.bitrate_kbps; break;
    case RCANVAS_OPT_KEYFRAME_INTERVAL: *value = c->params.keyframe_interval; break;
    case RCANVAS_OPT_ENCODER_THREADS: *value = c->params.threads; break;
    case RCANVAS_OPT_REFINE_CODEC: *value = c->refine_codec ? c->refine_codec->wire_id : RCANVAS_CODEC_PNG; break;
    case RCANVAS_OPT_QUALITY: *value = c->params.quality; break;
    case RCANVAS_OPT_SUBSAMPLING: *value = (int)c->params.subsampling; break;
    case RCANVAS_OPT_REFINE_MS: *value = c->refine_ms; break;
    case RCANVAS_OPT_MAX_IN_FLIGHT: *value = c->max_in_flight; break;
    case RCANVAS_OPT_UPDATE_MODE: *value = (int)c->mode; break;
    case RCANVAS_OPT_MAX_FPS: *value = (int)(c->max_fps + 0.5); break;
    case RCANVAS_OPT_RATE_ADAPT: *value = c->rate_adapt; break;
    default: r = RCANVAS_EINVAL; break;
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

/* ---- introspection ---- */

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
