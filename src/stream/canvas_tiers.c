/* SPDX-License-Identifier: MIT */
/*
 * canvas_tiers.c — the canvas's side of its encoder tiers: the codec preferences and a change of them (every
 * viewer placed again), tier 0 following the first preference, whether some tier encodes, and the frame rates a
 * tier's budget is spread over. The tier itself (acquisition, settings, its encodes) is tier.c's.
 */
#include "stream/canvas_internal.h"

static void set_tier0_locked(rcanvas_canvas *c);

static int usable(const rcanvas_canvas *c, const rc_codec_type *t) {
    return t && !(c->codecs_disabled & (1u << rc_codec_index(t)));
}

/* The canvas's codec preference: one codec (then JPEG, which every viewer decodes), or RCANVAS_CODEC_AUTO:
 * H.264, VP9, VP8 (those built in), then JPEG. The codec's encoder is the one chosen by name (c->encoder), then its
 * default where that one cannot run (h264-gpu: openh264, for a host without a GPU or a frame it cannot code). mu
 * held. */
void rc_canvas_set_prefs_locked(rcanvas_canvas *c) {
    c->nprefs = 0;
    if (c->params.codec == RCANVAS_CODEC_AUTO) {
        static const rcanvas_codec order[] = {RCANVAS_CODEC_H264, RCANVAS_CODEC_VP9, RCANVAS_CODEC_VP8};
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
            if (usable(c, rc_codec_for(order[i]))) c->prefs[c->nprefs++] = rc_codec_for(order[i]);
    } else {
        if (usable(c, c->encoder)) c->prefs[c->nprefs++] = c->encoder;
        if (usable(c, rc_codec_for(c->params.codec))) c->prefs[c->nprefs++] = rc_codec_for(c->params.codec);
    }
    if (c->nprefs == 0 || c->prefs[c->nprefs - 1] != &rc_codec_jpeg) c->prefs[c->nprefs++] = &rc_codec_jpeg;
}

/* The codec preferences changed (an option, or a codec that failed): every session moves to its best tier, with a
 * keyframe. While a tier encodes, tiers cannot be rebuilt: the change waits for the encode to finish (this, from
 * rc_canvas_advance_locked in canvas_encode.c), and sessions stay where they are meanwhile. mu held. */
void rc_canvas_apply_codec_change_locked(rcanvas_canvas *c) {
    c->codec_change_pending = 0;
    rc_canvas_set_prefs_locked(c);
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

void rc_canvas_codec_changed_locked(rcanvas_canvas *c) {
    if (rc_canvas_tiers_busy_locked(c)) c->codec_change_pending = 1;
    else rc_canvas_apply_codec_change_locked(c);
}

/* Tier 0 follows the first preference. mu held; only while tier 0 is not encoding. */
static void set_tier0_locked(rcanvas_canvas *c) {
    rc_tier *t = &c->tiers[0];
    if (t->codec == c->prefs[0]) return;
    int n = t->nsessions;
    rc_tier_reset(t);
    t->codec = c->prefs[0];
    t->nsessions = n;
}

/* 1 while some tier encodes (a frame, or a keyframe of `last`). mu held. */
int rc_canvas_tiers_busy_locked(const rcanvas_canvas *c) {
    for (int i = 0; i < RC_MAX_TIERS; i++)
        if (rc_tier_busy(&c->tiers[i])) return 1;
    return 0;
}

/* The frame rate the app draws at when no viewer holds it back (smoothed), at most max_fps: what a tier's budget is
 * spread over. mu held. */
double rc_canvas_fps_goal_locked(const rcanvas_canvas *c) {
    double cap = c->max_fps > 0 ? c->max_fps : 60;
    return c->present_fps > 0 && c->present_fps < cap ? c->present_fps : cap;
}

/* The frame rate a video encoder's frames are sized for (bitrate / this a frame). The app's measured rate, unless
 * its draws were held back by the viewers' windows within the last RC_VIDEO_HELD_US: then that rate is the
 * viewers', not the app's, and sizing frames by it feeds itself (seen under load on 20 Mbit/s: frames
 * sized for 4 fps, 446 kB each, took so long that the app stayed at 4 fps); the cap then, and the steering's own
 * frame-rate cap (rc_steer_video) lowers it where the link needs that. */
double rc_canvas_unheld_fps_locked(const rcanvas_canvas *c, int64_t now) {
    double cap = c->max_fps > 0 ? c->max_fps : 60;
    if (c->draw_held || (c->draw_held_us && now - c->draw_held_us < RC_VIDEO_HELD_US)) return cap;
    return rc_canvas_fps_goal_locked(c);
}

int rc_canvas_small_frame_locked(const rcanvas_canvas *c, const rc_image *img) {
    uint64_t px = (uint64_t)img->width * img->height;
    uint64_t canvas_px = (uint64_t)c->size.physical_width * c->size.physical_height;
    return px <= RC_SMALL_MAX_PX && px * RC_SMALL_AREA_DIV <= canvas_px;
}
