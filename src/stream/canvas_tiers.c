/* SPDX-License-Identifier: MIT */
/*
 * canvas_tiers.c — the canvas's encoder tiers and their steering: the codec preferences and a change of them,
 * which tier (a codec × a rate rung, RC_RUNGS) a viewer's codec and rung get, keyframe requests, and a tier's
 * encode settings for its viewers' link (rc_steer, rate.h). The encodes themselves are canvas_encode.c's.
 */
#include "stream/canvas_internal.h"

#include "codec/scale.h"

#include <math.h>
#include <string.h>

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

/* The canvas's codec changed: new preferences; every session moves to its best tier (with a keyframe). */
/* The codec preferences changed (an option, or a codec that failed): every session moves to its best tier, with a
 * keyframe. While a tier encodes, tiers cannot be rebuilt: the change waits for the encode to finish (this, from
 * tier_done_locked in canvas_encode.c), and sessions stay where they are meanwhile. mu held. */
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
            if (!c->tiers[i].nsessions && !rc_tier_busy(&c->tiers[i])) free_slot = i;
        if (free_slot < 0) return -1;
        rc_tier_reset(&c->tiers[free_slot]);
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
    rc_tier_reset(t);
    t->codec = c->prefs[0];
    t->nsessions = n;
}

void rc_canvas_request_keyframe_locked(rcanvas_canvas *c, rc_tier *t) {
    if (t->keyframe_requested) return;
    t->keyframe_requested = 1;
    pthread_cond_broadcast(&c->cv);
    rc_canvas_notify_locked(c); /* the tick re-encodes the last frame as a keyframe if the scene is still */
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

int rc_canvas_small_lossless_locked(const rcanvas_canvas *c, const rc_tier *t, const rc_image *img) {
    if ((t->codec->flags & (RC_CODEC_STATEFUL | RC_CODEC_LOSSLESS)) || !rc_canvas_small_frame_locked(c, img)) return 0;
    if (!(t->small_bpp > 0)) return 1; /* not measured yet: try it */
    double fps = rc_canvas_fps_goal_locked(c);
    if (fps > RC_STEER_FPS_MIN) fps = RC_STEER_FPS_MIN;
    return t->small_bpp * (double)img->width * img->height * 8 * fps <= t->budget_bps;
}

/* A tier's encode settings for its viewers' link (rate.h): video gets its bitrate, frame-rate cap and scale here;
 * image codecs their quality from the previous frame (rc_tier_learn, tier.c). Returns the image to
 * encode (fb's, or fb's shrunk into the tier's buffer) and in *codec the codec to encode it with (the tier's, or PNG
 * for a small frame: rc_canvas_small_lossless_locked); sets the tier's frame-rate bookkeeping. mu held (the shrink
 * runs under it too: ~1 ms at 1080p with libyuv, and only on links too slow for the full size). */
rc_image rc_canvas_steer_tier_locked(rcanvas_canvas *c, rc_tier *t, rc_frame_buf *fb, int64_t now,
                                     rc_encode_params *params, const rc_codec_type **codec) {
    int stateful = (t->codec->flags & RC_CODEC_STATEFUL) != 0;
    double top_bps = (double)c->params.bitrate_kbps * 1000;
    if (!t->steer.scale_div) rc_steer_init(&t->steer, c->params.quality, top_bps);
    t->budget_bps = t->nsessions && c->rate_adapt ? rc_tier_budget_locked(c, (int)(t - c->tiers)) : RC_LINK_MAX_BPS;
    double goal = rc_canvas_fps_goal_locked(c);
    if (t->last_encode_us && now > t->last_encode_us) { /* the rate this tier actually encodes at */
        double f = 1e6 / (double)(now - t->last_encode_us);
        t->enc_fps = t->enc_fps > 0 ? t->enc_fps + (f - t->enc_fps) / 8 : f;
    }
    t->last_encode_us = now;
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
                     rc_canvas_unheld_fps_locked(c, now), stateful ? NULL : &t->enc_cost, &dec,
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
        double kept = rc_video_fill_fps(fps, t->enc_us);
        t->fill_fps = kept < fps ? kept : 0;
        fps = kept;
        if (fps < 1) fps = 1; /* whole frames a second: the encoder is not re-tuned for every smoothing step */
        /* text and lines as screen content (rate.h, rc_screen_mode_step), unless its encoder falls behind */
        params->screen = (t->codec->flags & RC_CODEC_SCREEN) &&
                         rc_screen_mode_step(&t->screen, looked, t->fine_detail, t->fill_fps > 0, now);
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
    if (rc_canvas_small_lossless_locked(c, t, &fb->img)) { /* exact pixels, whole size */
        *codec = &rc_codec_png;
        params->codec = RCANVAS_CODEC_PNG;
        return img;
    }
    if (t->steer.scale_div > 1 &&
        rc_image_downscale(&fb->img, t->steer.scale_div, &t->scaled, &t->scaled_cap, &img) != RCANVAS_OK)
        img = fb->img;
    return img;
}
