/* SPDX-License-Identifier: MIT */
/*
 * canvas_refine.c — what the canvas does between frames, on its tick: the lossless refinement of a still scene
 * (its last frame re-encoded losslessly once no frame came for refine_ms), and `last` encoded on one tier alone
 * (a keyframe for a viewer that joined a still scene, the catch-up of a tier that skipped the newest frame, the
 * paint-over of a video tier: its newest frame re-coded sharper).
 */
#include "stream/canvas_internal.h"

/* A tier that skipped the newest frame (its viewers' windows were full) encodes it once no newer one has come for
 * this long: a scene that stops reaches every viewer, and an animation does not pay twice. */
#define RC_CATCHUP_US 50000

/* Paint-over: when motion stops, a video tier re-codes its newest frame at a fixed high quality
 * (rc_encode_params.paint: H.264 at QP 24 with the rate control off, as P-frames on the same reference chain), so the
 * picture of a pause is sharp long before the lossless refinement comes, and motion resumes with no keyframe.
 * It starts once no new frame came for RC_PAINT_WAIT_FRAMES frame intervals of the app (1.5: one late frame of a
 * drag at 30 fps is not a stop; 50 ms is what a stop costs), and makes at most RC_PAINT_FRAMES frames of one still
 * frame (measured on the 1080p pan: 32.3, 32.6, 38.7, 40.3 dB after 1, 2, 3, 4 — 473, 8, 19, 2 kB — and little
 * after). A paint frame depends on the one before: the next is made only once every viewer of the tier was given
 * the previous one (a viewer that missed one would need a keyframe when motion resumes), and none once a viewer
 * has the frame lossless (it would not take it: the refinement drawn is better, and the chain would break). */
#define RC_PAINT_FRAMES 4
#define RC_PAINT_WAIT_FRAMES 1.5
/* ... and never sooner than this after the last new frame (identical ones do not count: damage), so that a late
 * frame of a motion is not taken for a stop: a paint frame is ~400 kB at 1080p. */
#define RC_PAINT_WAIT_MIN_US 150000
/* ... and only where a paint frame crosses the tier's link within RC_PAINT_MAX_US, a paint frame taken as
 * RC_PAINT_BITS_PER_PX bits a coded pixel (the first paint frame of the 1080p pan: 473 kB, 1.83 bit a pixel): on
 * 4 Mbit/s it took 1 s, a drag resumed in it waited behind it, and the lossless refinement came 0.8 s later than
 * without it. There the refinement is what sharpens the picture. */
#define RC_PAINT_MAX_US 300000
#define RC_PAINT_BITS_PER_PX 2.0

/* 1 if tier t may code its newest frame (`last`) once more as a paint-over now, 0 if not (yet: a viewer of it is
 * given the next paint frame first, which wakes the tick). mu held. */
static int paint_ready_locked(rcanvas_canvas *c, rc_tier *t) {
    const rc_packet *l = t->latest;
    if (!(t->codec->flags & RC_CODEC_PAINT) || !l || !l->id || !t->ref_id || l->id != t->ref_id ||
        l->seq != c->last->seq || t->keyframe_requested)
        return 0;
    if (t->paint_seq == l->seq && t->paint_count >= RC_PAINT_FRAMES) return 0;
    /* at the size the newest packet has (rc_image_downscale's): another would restart the encoder (a keyframe) */
    int div = t->steer.scale_div > 1 ? t->steer.scale_div : 1;
    if (l->width != c->last->img.width / div || l->height != c->last->img.height / div) return 0;
    if (RC_PAINT_BITS_PER_PX * l->width * l->height > t->budget_bps * (RC_PAINT_MAX_US / 1e6)) return 0;
    int viewers = 0;
    for (rc_session *s = c->sessions; s; s = s->next) {
        if (s->tier != (int)(t - c->tiers) || s->closing) continue;
        if (s->lossless_seq >= l->seq) return 0; /* it has the refinement: no more paint of this frame */
        if (!s->visible) continue;
        if (s->need_keyframe || s->last_id != l->id) return 0; /* not given the newest packet yet */
        viewers++;
    }
    return viewers > 0;
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
        if (!t->codec || rc_tier_busy(t) || !t->nsessions) continue;
        int64_t wait;
        rc_tier_state kind = RC_TIER_LIVE; /* what the encode started here is: a paint-over of `last`, or live */
        if (t->keyframe_requested) {
            wait = t->last_forced_us + RC_KEYFRAME_MIN_US - now_us;
        } else if ((!t->latest || t->latest->seq < c->last->seq) && rc_tier_wants_frame_locked(c, i)) {
            wait = c->last_present_us + RC_CATCHUP_US - now_us;
            int64_t w2 = (t->steer.fps_cap > 0 ? t->steer.cap_next_us - 2000 : t->steer.started_us + RC_CATCHUP_US) - now_us;
            if (w2 > wait) wait = w2; /* the cap, and no retry storm after a failed encode */
        } else if (paint_ready_locked(c, t)) {
            double fps = rc_canvas_fps_goal_locked(c);
            int64_t after = (int64_t)(RC_PAINT_WAIT_FRAMES * 1e6 / (fps > 1 ? fps : 1));
            if (after < RC_PAINT_WAIT_MIN_US) after = RC_PAINT_WAIT_MIN_US;
            wait = c->last_present_us + after - now_us;
            if (wait <= 0) {
                if (t->paint_seq != t->latest->seq) t->paint_count = 0;
                t->paint_seq = t->latest->seq;
                t->paint_count++;
                kind = RC_TIER_PAINT;
            }
        } else {
            continue;
        }
        if (wait > 0) {
            if (next < 0 || wait < next) next = wait;
            continue;
        }
        if (!rc_canvas_want_pixels_locked(c, c->last)) continue; /* it came encoded: its pixels re-arm the tick */
        if (!t->keyframe_requested && kind != RC_TIER_PAINT) /* counts for the cap (a paint frame does not) */
            rc_steer_rate_allows(&t->steer, now_us);
        c->last->refs++; /* held while the tier reads it; its finish (tier.c) lets go */
        t->side_frame = c->last;
        if (!rc_tier_start_locked(c, t, c->last, kind)) {
            rc_frame_release_locked(t->side_frame);
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
    rc_frame_release_locked(c->refine_src);
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
    rc_canvas_notify_locked(c); /* with mu held, as in live_done (tier.c) */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

#define RC_DRAW_HOLD_STALE_US 1000000

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
    if (c->pending || c->encoding || rc_canvas_tiers_busy_locked(c)) goto out; /* its completion re-arms */
    /* One refinement at a time: refine_task and refine_src are single slots. Starting a second one while the
     * first still runs (a newer frame became `last` meanwhile) would overwrite refine_src, so the older frame's
     * buffer was never released; after a few such overlaps every frame slot stayed taken and the stream
     * stopped for good. refine_done() wakes the network thread, whose check starts the newer one. */
    if (c->refine_running) goto out;
    /* frames keep coming (the app waits for room in a window): the release of the hold re-arms. But only rcanvas_wait
     * releases it: an app that stopped waiting (it presents when its data changes, or it is done) left the hold set,
     * and its still picture was never refined (test_soak under ASan on a loaded machine: its last pause of 10 s got
     * none). A hold not renewed for RC_DRAW_HOLD_STALE_US is over. */
    if (c->draw_held && now_us - c->draw_held_us < RC_DRAW_HOLD_STALE_US) {
        ret = c->draw_held_us + RC_DRAW_HOLD_STALE_US - now_us;
        goto out;
    }
    int64_t due = c->last_present_us + (int64_t)c->refine_ms * 1000;
    if (c->draw_held_us + (int64_t)c->refine_ms * 1000 > due) due = c->draw_held_us + (int64_t)c->refine_ms * 1000;
    if (now_us < due) {
        ret = due - now_us;
        goto out;
    }
    if (!rc_canvas_want_pixels_locked(c, fb)) goto out; /* it came encoded: its pixels re-arm the tick */
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
    rc_canvas_submit_stripes(c, t, fb, &fb->img, codec, &params, refine_done, pk);
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
