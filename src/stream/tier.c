/* SPDX-License-Identifier: MIT */
/*
 * tier.c — the tier (tier.h) as a handle of its canvas, after libuv's handle files over one internal header: what
 * a tier does on its own (reset, and what a finished packet teaches its steering: rate.c owns the models), its
 * acquisition for a viewer's codec and rung, keyframe requests, its encode settings for its viewers' link, the
 * start of an encode and its finish (learn, fail, then the canvas's frame moves on: rc_canvas_advance_locked in
 * canvas_encode.c), and what its viewers ask of it. Every function runs under the canvas's mutex, as every tier
 * field is guarded by it, but the pool's callbacks (stream_job_run, live_done), which take it once the encode,
 * run outside it, is done (the tier is busy meanwhile, so nothing else touches its encoder).
 */
#include "stream/canvas_internal.h"

#include "codec/scale.h"
#include "core/util.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

void rc_tier_reset(rc_tier *t) {
    uint8_t *scaled = t->scaled;
    size_t cap = t->scaled_cap;
    rc_packet_unref(t->latest);
    rc_codec_free(t->inst);
    memset(t, 0, sizeof(*t));
    t->scaled = scaled;
    t->scaled_cap = cap;
}

void rc_tier_unwatched(rc_tier *t) {
    rc_packet_unref(t->latest);
    t->latest = NULL;
    t->ref_id = 0;
}

void rc_tier_learn(rc_tier *t, const rc_packet *pk, int quality, double fps_goal) {
    int stateful = (t->codec->flags & RC_CODEC_STATEFUL) != 0;
    uint64_t px = 0; /* the pixels coded: the changed tiles of a partial packet (damage), else all */
    for (int i = 0; i < pk->ntiles; i++) px += (uint64_t)pk->tiles[i].w * pk->tiles[i].h;
    if (t->metrics_start_us) /* what a live frame costs the encoder (rc_steer_cpu): rate.c says which count */
        rc_steer_encoded(&t->steer, (double)(rc_now_us() - t->metrics_start_us),
                         px * 10 >= (uint64_t)pk->width * pk->height * 9, stateful && (pk->flags & RC_PACKET_KEYFRAME));
    if (stateful) { /* what frames cost the encoder: rate.c decides which teach it */
        rc_steer_video_done(&t->steer, (pk->flags & RC_PACKET_KEYFRAME) != 0, (pk->flags & RC_PACKET_PAINT) != 0,
                            pk->total_bytes);
    } else { /* the next frame's quality, rate, size */
        /* a small frame sent lossless instead of the tier's codec: what its PNG costs a pixel */
        if (pk->codec != t->codec) rc_steer_small_done(&t->steer, pk->total_bytes, px);
        if (px)
            rc_steer_image(&t->steer, (pk->codec->flags & RC_CODEC_LOSSLESS) ? 0 : quality, t->budget_bps, fps_goal,
                           px, pk->total_bytes);
    }
}

/* ---- acquisition and keyframe requests ---- */

int rc_tier_acquire_locked(rcanvas_canvas *c, const rc_codec_type *codec, int rung) {
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
            if (!c->tiers[i].nsessions && !rc_tier_busy(&c->tiers[i])) free_slot = i;
        if (free_slot < 0) return -1;
        rc_tier_reset(&c->tiers[free_slot]);
    }
    c->tiers[free_slot].codec = codec;
    c->tiers[free_slot].rung = rung;
    return free_slot;
}

void rc_tier_request_keyframe_locked(rcanvas_canvas *c, rc_tier *t) {
    if (t->keyframe_requested) return;
    t->keyframe_requested = 1;
    pthread_cond_broadcast(&c->cv);
    rc_canvas_notify_locked(c); /* the tick re-encodes the last frame as a keyframe if the scene is still */
}

/* ---- settings ---- */

void rc_tier_steer_init_locked(const rcanvas_canvas *c, rc_tier *t) {
    if (t->steer.scale_div) return;
    int64_t cap_next_us = t->steer.cap_next_us; /* the cap's schedule is kept from the first frame's start */
    rc_steer_init(&t->steer, c->params.quality, (double)c->params.bitrate_kbps * 1000);
    t->steer.cap_next_us = cap_next_us;
}

int rc_tier_small_lossless_locked(const rcanvas_canvas *c, const rc_tier *t, const rc_image *img) {
    if ((t->codec->flags & (RC_CODEC_STATEFUL | RC_CODEC_LOSSLESS)) || !rc_canvas_small_frame_locked(c, img)) return 0;
    if (!(t->steer.small_bpp > 0)) return 1; /* not measured yet: try it */
    double fps = rc_canvas_fps_goal_locked(c);
    if (fps > RC_STEER_FPS_MIN) fps = RC_STEER_FPS_MIN;
    return t->steer.small_bpp * (double)img->width * img->height * 8 * fps <= t->budget_bps;
}

rc_image rc_tier_steer_locked(rcanvas_canvas *c, rc_tier *t, rc_frame_buf *fb, int64_t now,
                              rc_encode_params *params, const rc_codec_type **codec) {
    int stateful = (t->codec->flags & RC_CODEC_STATEFUL) != 0;
    double top_bps = (double)c->params.bitrate_kbps * 1000;
    rc_tier_steer_init_locked(c, t);
    t->budget_bps = t->nsessions && c->rate_adapt ? rc_tier_budget_locked(c, (int)(t - c->tiers)) : RC_LINK_MAX_BPS;
    double goal = rc_canvas_fps_goal_locked(c);
    rc_steer_started(&t->steer, now);
    uint64_t px = (uint64_t)fb->img.width * fb->img.height;
    int looked = 0; /* the detector looked at this frame */
    /* the CPUs' limit (rate.h): the encoder's time for a frame and the slowest decoder's among its visible viewers,
     * against the app's rate (held back by the windows, its rate is the viewers': then the cap) */
    if (t->nsessions && c->rate_adapt) {
        /* text and 1-px lines keep their size whatever the CPUs (rate.h, keep_size), looked at every few frames */
        if (--t->detail_age <= 0) {
            t->fine_detail = rc_image_fine_detail(&fb->img);
            t->detail_age = RC_DETAIL_EVERY;
            looked = 1;
        }
        t->steer.keep_size = t->fine_detail;
        rc_cost dec; /* the slowest of its visible viewers' decoders, at each size they measured */
        memset(&dec, 0, sizeof dec);
        for (const rc_session *s = c->sessions; s; s = s->next)
            if (s->tier == (int)(t - c->tiers) && s->visible)
                for (int k = 0; k < 3; k++)
                    if (s->dec_cost.n[k] >= RC_CPU_SAMPLES) {
                        if (s->dec_cost.at[k] > dec.at[k]) dec.at[k] = s->dec_cost.at[k];
                        if (s->dec_cost.seen[k] > dec.seen[k]) dec.seen[k] = s->dec_cost.seen[k];
                        dec.n[k] = RC_CPU_SAMPLES;
                    }
        /* Video: the decoders' limit only, and a larger size back after RC_CPU_VIDEO_UP_CALLS: each size step
         * restarts the encoder (a keyframe), and a shrunk tier paints shrunk (canvas_refine.c). Measured: with the
         * encoder's time counted too, openh264 on the loaded 2-core machine stepped sizes every few seconds (4
         * keyframes in 4 s in video_link.test's rotate case) and a stopped pan was never painted sharp
         * (paint.test). Its encoder's limit stays the link steering's business, as before. */
        rc_steer_cpu(&t->steer, stateful || (t->codec->flags & RC_CODEC_LOSSLESS) ? 0 : c->params.quality,
                     rc_canvas_unheld_fps_locked(c, now), stateful ? NULL : &t->steer.enc_cost, &dec,
                     stateful ? RC_CPU_VIDEO_UP_CALLS : RC_STEER_SIZE_UP_CALLS, px);
        if (!stateful && !(t->codec->flags & RC_CODEC_LOSSLESS) && t->steer.cpu_div > t->steer.scale_div) {
            t->steer.scale_div = t->steer.cpu_div; /* an image codec's next frame already (rc_steer_image keeps it) */
            if (t->steer.quality > RC_CPU_Q_MAX) t->steer.quality = RC_CPU_Q_MAX;
        }
    }
    if (stateful) {
        /* the encoder spends bitrate / params->fps on a frame, so params->fps is the rate frames are meant
         * to come at — the app's measured rate (fps_goal_locked) or the steering's cap —, never the rate the viewers
         * happened to take them at (that gave each frame bitrate / 2 fps on a slow link: bigger frames, fewer taken,
         * bigger frames, and 2 fps at 127 kB a frame), nor max_fps when the app draws slower by itself. */
        goal = rc_canvas_unheld_fps_locked(c, now);
        rc_steer_video(&t->steer, top_bps, t->budget_bps, goal, px);
        double fps = round(t->steer.fps_cap > 0 && t->steer.fps_cap < goal ? t->steer.fps_cap : goal);
        /* Fill the link: where the encoder itself cannot make that many frames (busy most of each frame's time at
         * that rate), frames sized for bitrate / fps left the rest of the link unused (H.264 carried 2.1 of 4
         * Mbit/s on a pan the 2-core machine encoded at half the app's rate). Each frame is sized for the rate the
         * encoder can keep, from its own time a frame (rc_video_fill_fps): the bits a second stay the link's. */
        double kept = rc_video_fill_fps(fps, t->steer.enc_us);
        t->steer.fill_fps = kept < fps ? kept : 0;
        fps = kept;
        if (fps < 1) fps = 1; /* whole frames a second: the encoder is not re-tuned for every smoothing step */
        /* text and lines as screen content (rate.h, rc_screen_mode_step), unless its encoder falls behind */
        params->screen = (t->codec->flags & RC_CODEC_SCREEN) &&
                         rc_screen_mode_step(&t->screen, looked, t->fine_detail, t->steer.fill_fps > 0, now);
        double kbps = t->steer.bitrate_bps / 1000;
        params->fps = fps;
        params->bitrate_kbps = kbps < 100 ? 100 : kbps > RC_MAX_BITRATE_KBPS ? RC_MAX_BITRATE_KBPS : (int)kbps;
        double target = params->bitrate_kbps * 1000.0 / 8 / fps; /* bytes a frame */
        rc_steer_video_target(&t->steer, target);
    } else if (!(t->codec->flags & RC_CODEC_LOSSLESS)) {
        if (t->steer.quality > c->params.quality) t->steer.quality = c->params.quality;
        params->quality = t->steer.quality;
    }
    *codec = t->codec;
    rc_image img = fb->img;
    if (rc_tier_small_lossless_locked(c, t, &fb->img)) { /* exact pixels, whole size */
        *codec = &rc_codec_png;
        params->codec = RCANVAS_CODEC_PNG;
        return img;
    }
    if (t->steer.scale_div > 1 &&
        rc_image_downscale(&fb->img, t->steer.scale_div, &t->scaled, &t->scaled_cap, &img) != RCANVAS_OK)
        img = fb->img;
    return img;
}

/* ---- start and finish ---- */

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

int rc_tier_start_locked(rcanvas_canvas *c, rc_tier *t, rc_frame_buf *fb, rc_tier_state kind) {
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
    int paint = kind == RC_TIER_PAINT && (t->codec->flags & RC_CODEC_PAINT) && t->ref_id;
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
        img = rc_tier_steer_locked(c, t, fb, now, &params, &codec);
        params.paint = 0;
        if (t->codec->flags & RC_CODEC_STATEFUL) t->live_params = params;
    }
    /* the size divisor this encode's time counts at (rc_steer_cpu): a live frame of the tier's own codec */
    t->steer.enc_div = paint || codec != t->codec || !img.width ? 0 : (int)((fb->img.width + img.width / 2) / img.width);
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

/* A tier finished its packet: the tier is idle again; a good packet teaches the steering (rc_tier_learn) and
 * becomes its newest, a failure is handled (tier_fail_locked); then the frame moves on (rc_canvas_advance_locked). mu
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
        if (drop == t->latest) drop = NULL;
        rc_tier_unwatched(t);
    }
    rc_packet_unref(drop);
    rc_canvas_advance_locked(c, t, seq, status == RCANVAS_OK);
}

/* ---- what its viewers ask of it ---- */

int rc_tier_wants_frame_locked(rcanvas_canvas *c, int t) {
    const rc_packet *l = c->tiers[t].latest;
    /* Room means what pick_locked gives a packet to: a window not full *and* a link not full (rc_link_full). A
     * tier that encoded past a viewer held by its link alone made video packets it never received: the
     * next one it could take depended on one it had not got, so it asked for a keyframe, a big one, that filled its
     * link again — 15 keyframes in 41 frames at 4 Mbit/s, ~3 a second for a slow viewer beside a fast one. */
    for (rc_session *s = c->sessions; s; s = s->next)
        if (s->tier == t && s->visible && !s->closing &&
            ((s->n_inflight < s->window && !rc_link_full(&s->link, s->n_inflight, s->inflight_bytes)) || !l ||
             s->given_seq >= l->seq)) /* room, or one frame ahead of it */
            return 1;
    return 0;
}

double rc_tier_budget_locked(rcanvas_canvas *c, int t) {
    double b = RC_LINK_MAX_BPS;
    for (rc_session *s = c->sessions; s; s = s->next)
        if (s->tier == t && s->visible && s->link.target_bps < b) b = s->link.target_bps;
    return b;
}
