/* SPDX-License-Identifier: MIT */
/*
 * canvas_encode.c — the canvas's encode pipeline: `pending` goes to every tier in use that wants it (one frame
 * encoding, lock-step over the tiers; each tier's encode is tier.c's), and once every tier is done with it the
 * frame becomes `last` and the next pending frame starts; intra codecs' stripes go onto the pool from here.
 */
#include "stream/canvas_internal.h"

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
        if (t->nsessions > 0 && (!rc_tier_wants_frame_locked(c, i) || !rc_steer_rate_allows(&t->steer, now))) {
            skipped = 1; /* its catch-up, if the scene stops here, is the tick's */
            continue;
        }
        eligible++;
        c->encoding_tiers += rc_tier_start_locked(c, t, fb, RC_TIER_LIVE);
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

/* Tier t is done with its encode (ok: pk is its newest packet): the frame moves on. A side encode (`last` on this
 * tier alone) only releases its frame; a frame's encode, once every tier is done with it, makes it `last` (if any
 * tier coded it) and starts the next pending frame. mu held. */
void rc_canvas_advance_locked(rcanvas_canvas *c, rc_tier *t, uint32_t seq, int ok) {
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
