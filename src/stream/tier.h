/* SPDX-License-Identifier: MIT */
/*
 * tier.h — private to src/stream/: the tier, the encoder stream that the viewers of one codec and rate rung share
 * (RC_MAX_TIERS a canvas, in rcanvas_canvas.tiers): its encoder, its newest packet, what it is doing (one state,
 * rc_tier_state), and its steering (rc_steer, rate.h). tier.c has what a tier does on its own: reset, and learning
 * from a packet it finished; the canvas's files start it, finish it and place viewers on it, all under the
 * canvas's mutex.
 */
#ifndef RC_TIER_H
#define RC_TIER_H

#include <stdint.h>

#include "codec/codec.h"
#include "codec/frame_encode.h"
#include "codec/packet.h"
#include "stream/rate.h"

struct rc_frame_buf;

#define RC_SMALL_MAX_BPP 4.0 /* the bytes a pixel small_bpp counts at most (raw RGBA) */

/* What a tier is doing. It starts (rc_canvas_start_tier_locked) from IDLE only and is IDLE again when its packet is
 * done (tier_done_locked): one encode at a time, which is what lets the encode run outside the canvas's lock. */
typedef enum rc_tier_state {
    RC_TIER_IDLE = 0,  /* no encode running */
    RC_TIER_LIVE,      /* encoding a live frame at its steering's settings */
    RC_TIER_PAINT,     /* encoding a paint-over of a still frame (stateful codecs: a sharper P-frame of `last`) */
} rc_tier_state;

/* One stateful-codec encode (a video frame): one job on the pool, the whole frame, the tier's own encoder. */
typedef struct rc_tier rc_tier;
typedef struct rc_stream_job {
    rc_job job;               /* first: the pool's intrusive node */
    rcanvas_canvas *canvas;
    rc_tier *tier;
    rc_image img;
    rc_encode_params params;
    rc_packet *packet;
    int force_keyframe;
} rc_stream_job;

/* The viewers that decode one codec share one encoder and its packets: a tier. Tier 0 is the canvas's first
 * codec preference and is encoded even without viewers (a viewer joining gets the newest frame at once). */
struct rc_tier {
    const rc_codec_type *codec;   /* NULL: unused slot */
    int nsessions;
    rc_codec *inst;               /* stateful codec: the stream's encoder (made on its first frame), else NULL */
    rc_packet *latest;            /* newest packet */
    uint32_t next_id;             /* packet ids of this tier, from 1 */
    uint32_t ref_id;              /* id of the newest packet encoded: what the next one depends on; 0 = none */
    int keyframe_requested;       /* a session lacks a reference (coalesced) */
    int64_t last_forced_us;       /* when a requested keyframe was last encoded */
    rc_tier_state state;          /* what it is doing (rc_tier_state) */
    int failures;                 /* encodes failed in a row */
    /* `last` encoded on this tier alone (holds a ref), else NULL: a keyframe for a joiner of a still scene, or the
     * newest frame for a tier that skipped it (its viewers' windows were full, or its frame-rate cap) */
    struct rc_frame_buf *side_frame;
    int rung;                     /* the rate rung of its viewers (index into RC_RUNG_FLOORS) */
    rc_steer steer;               /* quality, frame rate and scale it encodes at, for budget_bps */
    double budget_bps;            /* the lowest target of its visible viewers; RC_LINK_MAX_BPS without viewers */
    int64_t last_encode_us;       /* when it last started a frame (frame-rate cap) */
    double enc_fps;               /* frames it encodes a second (smoothed) */
    /* what one live frame costs its encoder (wall time, start to done): per size (rc_steer_cpu) and the last ones
     * smoothed whatever their size (cpu_bound); enc_div: the divisor the encode running was started at, 0 for one
     * that does not count (a paint-over, a small frame as PNG; a partial frame is left out when done) */
    rc_cost enc_cost;
    double enc_us;
    int enc_div;
    int fine_detail, detail_age;  /* its frames have fine detail (rc_image_fine_detail; steer.keep_size); frames
                                   * until it is looked at again */
    rc_screen_mode screen;        /* stateful: its encoder's mode for text and lines (rc_screen_mode_step) */
    int64_t cap_next_us;          /* its frame-rate cap's schedule (rc_steer_rate_allows) */
    double fill_fps;              /* stateful: > 0 while frames are sized for the rate the encoder keeps, not the
                                   * app's (it cannot encode the app's rate: rc_canvas_steer_tier_locked) */
    /* paint-over (side_check_locked, canvas_refine.c): the frame painted and the paint frames made of it
     * (RC_PAINT_FRAMES at most); paint_next: the encode being started is to be one (RC_TIER_PAINT) */
    uint32_t paint_seq;
    int paint_count;
    int paint_next;
    rc_encode_params live_params; /* stateful: the settings of its last live frame (a paint frame keeps them) */
    double small_bpp;             /* image codecs: bytes a pixel of its last small frame sent lossless (PNG)
                                   * (rc_canvas_small_lossless_locked); 0 = none yet */
    uint8_t *scaled;              /* the frame shrunk by steer.scale_div, when > 1 */
    int coded_scaled;             /* its last packet was shrunk: the next one is whole */
    size_t scaled_cap;
    uint32_t busy_seq;
    int64_t metrics_start_us;     /* when its current encode started (the encode-time histogram) */
    rc_encode_task task;          /* intra, stripe-parallel codecs */
    rc_stream_job sjob;           /* stateful codecs */
};

/* An encode is running on it. */
static inline int rc_tier_busy(const rc_tier *t) { return t->state != RC_TIER_IDLE; }

/* Clears t for reuse (its packet and encoder let go), keeping its scaled-frame buffer. t not busy. */
void rc_tier_reset(rc_tier *t);

/* What t's finished packet pk (status OK) teaches its steering: the encode's cost (a whole live frame, not a
 * video keyframe), a video frame's size against what it was asked (not a paint-over, nor the first live frame
 * after one, nor one of the first frames after a keyframe or a cut of its target), an image frame's bytes a
 * pixel at `quality` for the budget and fps_goal. Reads the clock for the encode's time. */
void rc_tier_learn(rc_tier *t, const rc_packet *pk, int quality, double fps_goal);

#endif
