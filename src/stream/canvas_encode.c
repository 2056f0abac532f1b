/* SPDX-License-Identifier: MIT */
/*
 * canvas_encode.c — the canvas's encode pipeline: `pending` goes to every tier in use that wants it (one frame
 * encoding, lock-step over the tiers), each tier's packet becomes its `latest`, and the frame becomes `last`;
 * stateful codecs run as one job on the pool, intra codecs as stripes. Also the encode-time counters for /metrics.
 */
#include "stream/canvas_internal.h"

#include "codec/scale.h"

#include <stddef.h>

/* Encodes frame fb with an intra, stripe-parallel codec into pk on the pool; done(task) runs when it is finished.
 * mu held; the pool takes its own lock only. */
void rc_canvas_submit_stripes(rcanvas_canvas *c, rc_encode_task *task, rc_frame_buf *fb, const rc_image *img,
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
    /* a failed create's reason before the lock (a GPU codec's takes its device module's lock) */
    const char *why = t->inst ? rc_codec_error(t->inst) : rc_codec_create_error(t->codec);
    pthread_mutex_lock(&c->mu);
    tier_done_locked(c, t, pk, st, why);
    /* as in live_done: notify and signal with mu held, nothing touches the canvas after the unlock */
    rc_canvas_notify_locked(c);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* ---- counters for /metrics: kept here, under mu, read by rc_registry_metrics ---- */

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
int rc_canvas_start_tier_locked(rcanvas_canvas *c, rc_tier *t, rc_frame_buf *fb) {
    if (!rc_canvas_want_pixels_locked(c, fb)) return 0; /* it came encoded: the app is asked for its pixels */
    rc_packet *pk = rc_packet_get(c->packets);
    if (!pk) return 0;
    int64_t now = rc_now_us();
    t->busy_seq = fb->seq;
    t->metrics_start_us = now;
    rc_encode_params params = c->params;
    params.codec = (rcanvas_codec)t->codec->wire_id;
    if (!params.threads) params.threads = (t->codec->flags & RC_CODEC_ONE_THREAD) ? 1 : rc_pool_threads(c->env.pool);
    if (!(params.fps > 0)) params.fps = c->max_fps > 0 ? c->max_fps : 60;
    int paint = t->paint_next && (t->codec->flags & RC_CODEC_PAINT) && t->ref_id;
    t->paint_next = 0;
    t->state = paint ? RC_TIER_PAINT : RC_TIER_LIVE;
    rc_image img;
    const rc_codec_type *codec = t->codec; /* what this packet is coded with: a small frame's is PNG */
    if (paint) { /* a paint-over: the live frame's settings, the tier's size (the steering is not run for it) */
        params = t->live_params;
        params.paint = 1;
        img = fb->img;
        if (t->steer.scale_div > 1 &&
            rc_image_downscale(&fb->img, t->steer.scale_div, &t->scaled, &t->scaled_cap, &img) != RCANVAS_OK)
            img = fb->img;
        pk->flags |= RC_PACKET_PAINT;
    } else {
        img = rc_canvas_steer_tier_locked(c, t, fb, now, &params, &codec);
        params.paint = 0;
        if (t->codec->flags & RC_CODEC_STATEFUL) t->live_params = params;
    }
    /* the size divisor this encode's time counts at (rc_steer_cpu): a live frame of the tier's own codec */
    t->enc_div = paint || codec != t->codec || !img.width ? 0 : (int)((fb->img.width + img.width / 2) / img.width);
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
        if (img.width != fb->img.width || img.height != fb->img.height) pk->flags |= RC_PACKET_SCALED;
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
        int scaled = img.width != fb->img.width || img.height != fb->img.height;
        rc_damage_plan_live_locked(c, t, fb, requested || scaled || t->coded_scaled, pk, &t->task);
        t->coded_scaled = scaled;
        if (scaled) pk->flags |= RC_PACKET_SCALED;
        rc_canvas_submit_stripes(c, &t->task, fb, &img, codec, &params, live_done, pk);
    }
    return 1;
}

/* Moves `pending` into the encoders: every tier in use (and tier 0) that wants it encodes it. mu held; the pool
 * takes its own lock only. */
void rc_canvas_start_encode_locked(rcanvas_canvas *c) {
    if (c->codec_change_pending) rc_canvas_apply_codec_change_locked(c); /* no tier is busy here */
    rc_frame_buf *fb = c->pending;
    c->pending = NULL;
    if (rc_damage_resolve_locked(c, fb)) { /* identical to `last`: no packet for any codec */
        c->counters.unchanged++;
        rc_damage_skip_locked(c, fb);
        rc_frame_release_locked(fb);
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
         * joiner needs a keyframe anyway, made from `last` (side_check_locked, canvas_refine.c) */
        if (!t->codec || !(t->nsessions > 0 || (i == 0 && !(t->codec->flags & RC_CODEC_STATEFUL)))) continue;
        /* Every viewer at its own pace: a tier encodes a frame only if one of its viewers can take it now and its
         * frame-rate cap allows; otherwise it skips the frame (side_check_locked catches up on a scene that
         * stops), so slow viewers cost neither the fast ones' frame rate nor encodes nobody receives. */
        if (t->nsessions > 0 && (!rc_tier_wants_frame_locked(c, i) || !rc_steer_rate_allows(&t->steer, &t->cap_next_us, now))) {
            skipped = 1; /* its catch-up, if the scene stops here, is the tick's */
            continue;
        }
        eligible++;
        c->encoding_tiers += rc_canvas_start_tier_locked(c, t, fb);
    }
    if (skipped) rc_canvas_notify_locked(c);
    if (c->encoding_tiers > 0) return;
    c->encoding = NULL;
    if (eligible) { /* every packet allocation failed */
        rc_log(c->env.log, RCANVAS_LOG_ERROR, "canvas '%s': out of memory for frame %u", c->name, fb->seq);
        c->counters.dropped++;
        if (fb->seq > c->failed_seq) c->failed_seq = fb->seq;
        rc_frame_release_locked(fb);
    } else { /* nobody to encode for: the frame waits as `last` for a viewer's tier */
        rc_damage_commit_locked(c, fb, 0);
        rc_frame_release_locked(c->last);
        c->last = fb;
    }
}

/* Tier t's encode failed: logged (once in 100), its encoder's state forgotten, and after RC_TIER_FAILURES in a row
 * (at once for a stateful codec whose encoder could not be made) its encoder is given up at this frame size: its
 * viewers fall back to their next codec, JPEG at worst. mu held. */
static void tier_fail_locked(rcanvas_canvas *c, rc_tier *t, const rc_packet *pk, int status, const char *error) {
    if (t->failures++ % 100 == 0)
        rc_log(c->env.log, RCANVAS_LOG_ERROR, "canvas '%s': %s encoding of a %ux%u frame failed: %s (%s)%s", c->name,
               t->codec->name, pk->width, pk->height, rcanvas_strerror(status), error,
               t->failures >= RC_TIER_FAILURES ? "" : "; retrying");
    t->ref_id = 0; /* its state is unknown: the next packet is a keyframe */
    /* a stateful codec whose encoder could not be made (h264-gpu on a host without a GPU) will not be made on the
     * next frame either: its viewers fall back now, not after RC_TIER_FAILURES frames (a still scene may not draw
     * them for long) */
    if ((t->codec->flags & RC_CODEC_STATEFUL) && !t->inst && t->failures < RC_TIER_FAILURES)
        t->failures = RC_TIER_FAILURES;
    if (t->failures == RC_TIER_FAILURES && t->codec != &rc_codec_jpeg) {
        /* it cannot code this (a frame above H.264's size limit, say): its viewers move to their next codec, JPEG
         * at worst, until the frame size changes */
        rc_log(c->env.log, RCANVAS_LOG_WARN, "canvas '%s': %s fails at %ux%u; its viewers fall back", c->name,
               t->codec->name, pk->width, pk->height);
        if (rc_codec_index(t->codec) >= 0) c->codecs_disabled |= 1u << rc_codec_index(t->codec);
        rc_canvas_codec_changed_locked(c);
    }
}

/* Tier t is done with its encode (ok: pk is its newest packet): the frame moves on. A side encode (`last` on this
 * tier alone) only releases its frame; a frame's encode, once every tier is done with it, makes it `last` (if any
 * tier coded it) and starts the next pending frame. mu held. */
static void tier_advance_locked(rcanvas_canvas *c, rc_tier *t, uint32_t seq, int ok) {
    rc_frame_buf *fb = c->encoding;
    if (t->side_frame) { /* `last` on this tier alone (side_check_locked), not part of a frame's encode */
        if (ok && t->side_frame->seq > c->latest_seq) c->latest_seq = t->side_frame->seq;
        rc_frame_release_locked(t->side_frame);
        t->side_frame = NULL;
        if (c->codec_change_pending && !rc_canvas_tiers_busy_locked(c)) rc_canvas_apply_codec_change_locked(c);
        if (!c->encoding && c->pending && !c->closing && !rc_canvas_tiers_busy_locked(c))
            rc_canvas_start_encode_locked(c);
        return;
    }
    if (ok) c->encoding_ok++;
    if (--c->encoding_tiers > 0) return;
    c->encoding = NULL;
    /* no tier could encode it: it counts as delivered for flow control (else the app would wait forever) */
    if (c->encoding_ok == 0 && seq > c->failed_seq) c->failed_seq = seq;
    if (c->encoding_ok > 0) c->counters.encoded++;
    else c->counters.dropped++;
    if (c->codec_change_pending && !rc_canvas_tiers_busy_locked(c)) rc_canvas_apply_codec_change_locked(c);
    if (c->encoding_ok > 0 && fb->seq > c->latest_seq) {
        rc_packet *old_refined = c->refined;
        c->latest_seq = fb->seq;
        c->refined = NULL;
        rc_packet_unref(old_refined);
        rc_damage_commit_locked(c, fb, 0);
        rc_frame_release_locked(c->last);
        c->last = fb; /* the encoding slot's reference moves to `last` */
    } else {
        rc_frame_release_locked(fb);
    }
    if (c->pending && !c->closing && !rc_canvas_tiers_busy_locked(c)) rc_canvas_start_encode_locked(c);
}

/* A tier finished its packet: the tier is idle again; a good packet teaches the steering (rc_tier_learn) and
 * becomes its newest, a failure is handled (tier_fail_locked); then the frame moves on (tier_advance_locked). mu
 * held. */
static void tier_done_locked(rcanvas_canvas *c, rc_tier *t, rc_packet *pk, int status, const char *error) {
    rc_packet *drop = pk;
    uint32_t seq = pk->seq;
    t->state = RC_TIER_IDLE;
    if (status == RCANVAS_OK) rc_tier_learn(t, pk, c->params.quality, rc_canvas_fps_goal_locked(c));
    count_encode_locked(c, t);
    if (status == RCANVAS_OK) {
        if (pk->id) t->ref_id = pk->id;
        if (pk->flags & RC_PACKET_KEYFRAME) t->keyframe_requested = 0; /* every viewer waiting for one takes it */
        if (!t->latest || pk->seq >= t->latest->seq) {
            drop = t->latest;
            t->latest = pk;
        }
        t->failures = 0;
    } else {
        tier_fail_locked(c, t, pk, status, error);
    }
    if (t != &c->tiers[0] && t->nsessions == 0) { /* nobody watches it: keep no stale packet */
        if (drop != t->latest) rc_packet_unref(t->latest);
        t->latest = NULL;
        t->ref_id = 0;
    }
    rc_packet_unref(drop);
    tier_advance_locked(c, t, seq, status == RCANVAS_OK);
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
