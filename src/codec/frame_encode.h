/* SPDX-License-Identifier: MIT */
/*
 * frame_encode.h — encodes one frame on the worker pool, cut into horizontal stripes (one tile each) so every
 * core works on the same frame: the latency of one 1080p JPEG drops to ~1/cores of one single-threaded call.
 * For intra-only, stripe-parallel codecs (RC_CODEC_STRIPES). In: an rc_image and codec parameters. Out: an
 * rc_packet, one tile per stripe with its rectangle.
 * Or, for a partial update (damage, src/stream/damage.c), one tile per rectangle the caller lists (rects): each is
 * encoded on its own, as a complete image, and the packet is not marked a keyframe (it is drawn over a picture).
 */
#ifndef RC_FRAME_ENCODE_H
#define RC_FRAME_ENCODE_H

#include <stdatomic.h>

#include "codec/codec.h"
#include "codec/packet.h"
#include "core/pool.h"

typedef struct rc_encode_task rc_encode_task;

typedef struct rc_stripe_job {
    rc_job job;              /* first: the pool's intrusive node */
    rc_encode_task *task;
    int index;
    uint32_t x0, y0, cols, rows; /* the tile's rectangle, pixels */
} rc_stripe_job;

/* A rectangle of a frame, pixels. */
typedef struct rc_rect {
    uint32_t x, y, w, h;
} rc_rect;

/* Called on the worker that finished the last stripe; status RCANVAS_OK or the first stripe's error. The
 * packet (task->packet) then belongs to the callback. */
typedef void (*rc_encode_done_fn)(rc_encode_task *task, int status);

struct rc_encode_task {
    /* in */
    rc_image img;
    rc_encode_params params; /* codec options */
    const rc_codec_type *codec; /* the codec (intra, stripe-parallel); NULL = rc_codec_for(params.codec) */
    uint32_t seq;
    int64_t present_us;
    int stripes;             /* 0 = rc_encode_plan_stripes() */
    int nrects;              /* > 0: encode only these rectangles (inside img), one tile each, instead of stripes;
                              * the caller sets it (and rects) before every submit: a task is reused */
    rc_rect rects[RC_MAX_TILES];
    rc_encode_done_fn done;
    void *user;
    /* out */
    rc_packet *packet;       /* set by the caller before submit (from rc_packet_get) */
    char error[160];         /* first failing stripe's encoder message */
    /* private */
    atomic_int remaining;
    atomic_int status;
    rc_stripe_job jobs[RC_MAX_TILES];
};

/* Number of stripes for a width × height frame on `threads` workers: 1 for small frames (< 256 K pixels, where
 * per-stripe headers cost more than they save), else `threads`, each at least 64 rows, heights a multiple of 16
 * (the 4:2:0 MCU height) except the last. At most RC_MAX_TILES. */
int rc_encode_plan_stripes(uint32_t width, uint32_t height, int threads);

/* Queues the stripes of task on the pool; returns at once. task and its image stay valid until done() runs. */
void rc_encode_submit(rc_pool *pool, rc_encode_task *task);

/* Encodes task on the pool and waits (tools, benchmarks, tests). Returns the status; done/user are replaced. */
int rc_encode_sync(rc_pool *pool, rc_encode_task *task);

#endif
