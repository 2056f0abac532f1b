/* SPDX-License-Identifier: MIT */
/*
 * tier.c — what a tier (tier.h) does on its own: reset for reuse, and what a finished packet teaches its steering
 * (rate.c owns the models: rc_cost, rc_steer_video_frame, rc_steer_image). Under the canvas's mutex, as every tier
 * field.
 */
#include "stream/tier.h"

#include <string.h>

#include "core/util.h"

void rc_tier_reset(rc_tier *t) {
    uint8_t *scaled = t->scaled;
    size_t cap = t->scaled_cap;
    rc_packet_unref(t->latest);
    rc_codec_free(t->inst);
    memset(t, 0, sizeof(*t));
    t->scaled = scaled;
    t->scaled_cap = cap;
}

void rc_tier_learn(rc_tier *t, const rc_packet *pk, int quality, double fps_goal) {
    int stateful = (t->codec->flags & RC_CODEC_STATEFUL) != 0;
    if (t->enc_div > 0 && t->metrics_start_us && !((pk->flags & RC_PACKET_KEYFRAME) && stateful)) {
        /* what a live frame costs the encoder (rc_steer_cpu): only a whole frame (a partial one codes a part), and
         * of video only P-frames (a keyframe, rare, costs several: the first one makes the encoder too) */
        uint64_t coded = 0;
        for (int i = 0; i < pk->ntiles; i++) coded += (uint64_t)pk->tiles[i].w * pk->tiles[i].h;
        if (coded * 10 >= (uint64_t)pk->width * pk->height * 9) {
            double us = (double)(rc_now_us() - t->metrics_start_us);
            t->enc_us = t->enc_us > 0 ? t->enc_us + (us - t->enc_us) / 4 : us;
            rc_cost_sample(&t->enc_cost, t->enc_div, us);
        }
    }
    if (stateful) { /* what frames cost the encoder: rate.c decides which teach it */
        rc_steer_video_done(&t->steer, (pk->flags & RC_PACKET_KEYFRAME) != 0, (pk->flags & RC_PACKET_PAINT) != 0,
                            pk->total_bytes);
    } else { /* the next frame's quality, rate, size */
        uint64_t px = 0; /* the pixels coded: the changed tiles of a partial packet (damage), else all */
        for (int i = 0; i < pk->ntiles; i++) px += (uint64_t)pk->tiles[i].w * pk->tiles[i].h;
        /* a small frame sent lossless instead of the tier's codec: what its PNG costs a pixel, at most
         * RC_SMALL_MAX_BPP (a PNG's ~70 bytes of headers would make a 1x1 frame cost 69 a pixel) */
        if (px && pk->codec != t->codec) {
            double bpp = (double)pk->total_bytes / (double)px;
            t->small_bpp = bpp < RC_SMALL_MAX_BPP ? bpp : RC_SMALL_MAX_BPP;
        }
        if (px)
            rc_steer_image(&t->steer, (pk->codec->flags & RC_CODEC_LOSSLESS) ? 0 : quality, t->budget_bps, fps_goal,
                           px, pk->total_bytes);
    }
}
