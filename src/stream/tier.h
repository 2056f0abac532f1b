/* SPDX-License-Identifier: MIT */
/*
 * tier.h — private to src/stream/: the tier, the encoder stream that the viewers of one codec and rate rung share
 * (RC_MAX_TIERS a canvas, in rcanvas_canvas.tiers): its encoder, its newest packet, what it is doing (one state,
 * rc_tier_state), and its steering (rc_steer, rate.h). tier.c has its functions: what a tier does on its own (reset,
 * learning from a packet it finished), and what it does as a handle of its canvas (acquisition, keyframe requests,
 * settings, an encode's start and finish, its viewers' queries), all under the canvas's mutex.
 */
#ifndef RC_TIER_H
#define RC_TIER_H

#include <stdint.h>

#include "codec/codec.h"
#include "codec/frame_encode.h"
#include "codec/packet.h"
#include "stream/rate.h"

struct rc_frame_buf;

/* What a tier is doing. It starts (rc_tier_start_locked) from IDLE only and is IDLE again when its packet is
 * done (its finish, tier.c): one encode at a time, which is what lets the encode run outside the canvas's lock. */
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
    rc_steer steer;               /* quality, frame rate and scale it encodes at, for budget_bps, and what its
                                   * encoder's pace and time taught (rate.h) */
    double budget_bps;            /* the lowest target of its visible viewers; RC_LINK_MAX_BPS without viewers */
    int fine_detail, detail_age;  /* its frames have fine detail (rc_image_fine_detail; steer.keep_size); frames
                                   * until it is looked at again */
    rc_screen_mode screen;        /* stateful: its encoder's mode for text and lines (rc_screen_mode_step) */
    /* paint-over (side_check_locked, canvas_refine.c): the frame painted and the paint frames made of it
     * (RC_PAINT_FRAMES at most) */
    uint32_t paint_seq;
    int paint_count;
    rc_encode_params live_params; /* stateful: the settings of its last live frame (a paint frame keeps them) */
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

/* Nobody watches t now (a tier other than 0, not busy or just done): its newest packet and its reference go, so
 * that its next viewer gets no stale packet and its next encode is a keyframe. */
void rc_tier_unwatched(rc_tier *t);

/* What t's finished packet pk (status OK) teaches its steering: the encode's cost (a whole live frame, not a
 * video keyframe), a video frame's size against what it was asked (not a paint-over, nor the first live frame
 * after one, nor one of the first frames after a keyframe or a cut of its target), an image frame's bytes a
 * pixel at `quality` for the budget and fps_goal. Reads the clock for the encode's time. */
void rc_tier_learn(rc_tier *t, const rc_packet *pk, int quality, double fps_goal);

/* ---- the tier as a handle of its canvas (tier.c): every function with the canvas's mutex held ---- */

/* The tier (an index into c->tiers) for a viewer of codec at rate rung: the one of that codec and rung that is
 * watched, else one of that codec nobody watches (it takes the rung), else a free slot (not 0) or one nobody
 * watches and not busy, reset; -1 if every tier is taken. */
int rc_tier_acquire_locked(rcanvas_canvas *c, const rc_codec_type *codec, int rung);
/* A viewer lacks a reference: t's next encode is a keyframe (coalesced; at most one each RC_KEYFRAME_MIN_US), made
 * of `last` by the canvas's tick if the scene is still. */
void rc_tier_request_keyframe_locked(rcanvas_canvas *c, rc_tier *t);
/* Small bitmaps (rendercanvas' set_bitmap: "applications can provide N times smaller bitmaps to produce
 * a pixelated visualization", which the client upscales nearest-neighbour): a frame of at most RC_SMALL_MAX_PX
 * pixels and at most 1/RC_SMALL_AREA_DIV of the canvas's physical pixels goes out lossless (PNG) on an image-codec
 * tier, at its full size (never shrunk by the steering), where a PNG frame of it at the bytes a pixel the tier last
 * measured (t->steer.small_bpp; none yet: try) fits the tier's budget at RC_STEER_FPS_MIN (or the app's rate if lower);
 * otherwise the tier's own codec. Video tiers keep video (the client still draws it nearest-neighbour; the
 * refinement of a still frame is exact). rc_canvas_small_frame_locked (canvas_internal.h) is the size part alone. */
int rc_tier_small_lossless_locked(const rcanvas_canvas *c, const rc_tier *t, const rc_image *img);
/* t's steering at its first frame: the top settings (rc_steer_init, from the canvas's quality and bitrate), the
 * frame-rate cap's schedule kept (rc_steer_rate_allows ran before it). Nothing once it has them. */
void rc_tier_steer_init_locked(const rcanvas_canvas *c, rc_tier *t);
/* t's encode settings for its viewers' link (rc_steer, rate.h), before a live frame fb at now: video gets its
 * bitrate, frame-rate cap and scale here, image codecs their quality from the previous frame (rc_tier_learn).
 * Returns the image to encode (fb's, or fb's shrunk into the tier's buffer) and in *codec the codec to encode it
 * with (the tier's, or PNG for a small frame: rc_tier_small_lossless_locked); fills *params. The shrink runs under
 * the lock too (~1 ms at 1080p with libyuv, and only on links too slow for the full size). */
rc_image rc_tier_steer_locked(rcanvas_canvas *c, rc_tier *t, struct rc_frame_buf *fb, int64_t now,
                              rc_encode_params *params, const rc_codec_type **codec);
/* Starts t (idle) on frame fb as `kind`: RC_TIER_LIVE, a live frame at its steering's settings, or RC_TIER_PAINT,
 * a paint-over at its last live frame's settings (a live frame where its codec cannot paint or it has no
 * reference yet); a keyframe where one is due; a stateful codec as one job on the pool, an intra one as stripes. The
 * encode runs without the lock; when it is done, t's finish (learn, or fail: after RC_TIER_FAILURES in a row its
 * codec is given up at this size) runs under it, then rc_canvas_advance_locked. Returns 1 if it was started (0:
 * fb has no pixels yet, the app was asked for them; or no packet could be had). */
int rc_tier_start_locked(rcanvas_canvas *c, rc_tier *t, struct rc_frame_buf *fb, rc_tier_state kind);
/* 1 if some visible session of tier t has room in its window for a packet, or has been given the tier's newest
 * packet (a tier encodes at most one frame ahead of a viewer whose window is full). */
int rc_tier_wants_frame_locked(rcanvas_canvas *c, int t);
/* The lowest link target (bit/s) of the visible sessions of tier t; RC_LINK_MAX_BPS if none. */
double rc_tier_budget_locked(rcanvas_canvas *c, int t);

#endif
