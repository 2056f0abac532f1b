/* SPDX-License-Identifier: MIT */
/*
 * canvas.h — private: the canvas, the hub where the app's frames meet the viewers. It owns the frame buffers, the
 * encode pipeline (one frame encoding + one pending, newest wins), the newest encoded packets, the draw
 * scheduling (update mode, max_fps, flow control), the event queue, and the viewers' sessions (session.h): their
 * flow-control windows, the active/passive roles and the round trips. All of it is guarded by one mutex per
 * canvas; its condition variable wakes rcanvas_wait().
 *
 * The canvas knows nothing of the transport: it is given an environment (the worker pool, the logger, the frame
 * size limit and a notify callback) by the runtime, and calls notify whenever something a viewer should see
 * changed (a new packet, a title, a role, closing). Sources (src/source/) present frames through the functions
 * below; the transport goes through session.h only.
 */
#ifndef RC_CANVAS_H
#define RC_CANVAS_H

#include "codec/codec.h"
#include "core/pool.h"
#include "core/util.h"
#include "stream/damage.h"
#include "stream/session.h"

typedef struct rc_canvas_env {
    rc_pool *pool;            /* encoder workers */
    const rc_logger *log;
    uint32_t max_frame_dim;   /* largest frame width/height accepted, pixels */
    uint64_t max_canvas_pixels; /* largest physical width × height a resize may ask for (0 = no cap) */
    double max_pixel_ratio;   /* largest pixel_ratio a resize may ask for (0 = no cap) */
    /* Called (any thread, with the canvas lock held: it must not call back into the canvas) when something for
     * the viewers changed. The runtime passes it on to the transports (a cheap wake-up). */
    void (*notify)(void *user);
    void *notify_user;
    void *owner;              /* the runtime that made the canvas (opaque here) */
} rc_canvas_env;

/* Creates a canvas (rcanvas_canvas_new validates the config first). RCANVAS_OK, RCANVAS_EINVAL, RCANVAS_ENAME,
 * RCANVAS_ENOMEM. */
int rc_canvas_create(const rc_canvas_env *env, const rcanvas_canvas_config *cfg, rcanvas_canvas **out);
/* No new frames, encodes or sessions from now on; rcanvas_wait() returns RCANVAS_ECLOSED; sessions see
 * `closing` and the transport closes them. Then waits for running encodes. Idempotent. */
void rc_canvas_close(rcanvas_canvas *c);
/* Blocks until every session of the canvas is closed. */
void rc_canvas_wait_sessions(rcanvas_canvas *c);
/* Frees a closed canvas whose sessions are all closed. */
void rc_canvas_destroy(rcanvas_canvas *c);

const char *rc_canvas_name(const rcanvas_canvas *c);
void *rc_canvas_owner(const rcanvas_canvas *c);
const rc_logger *rc_canvas_logger(const rcanvas_canvas *c);
uint32_t rc_canvas_max_frame_dim(const rcanvas_canvas *c);
/* The pixel_ratio a resize to logical w × h at `ratio` is rendered at: ratio lowered (logical size kept, so the
 * aspect is too) until ratio ≤ max_pixel_ratio, w·ratio × h·ratio ≤ max_canvas_pixels, each side ≤ max_frame_dim
 * and the live codec can encode the frame (rc_canvas_codec_fits_locked). mu held (reads the env and the params). */
double rc_canvas_clamp_ratio(const rcanvas_canvas *c, double w, double h, double ratio);
/* 1 if the canvas's live codec can encode a w × h frame (its library's limits). mu held (reads the params). */
int rc_canvas_codec_fits_locked(const rcanvas_canvas *c, uint32_t w, uint32_t h);
/* The codec options frames are encoded with now. */
void rc_canvas_get_params(rcanvas_canvas *c, rc_encode_params *out);

/* Starts due lossless refinements and hands the active role on from a viewer that stalled. Returns the µs until
 * the next deadline (the caller's timer), or -1 if none. Called by the transport's network thread. */
int64_t rc_canvas_tick(rcanvas_canvas *c, int64_t now_us);

/* ---- called by frame sources (src/source/) ---- */

/* Presents pixels that rcanvas does not own (no copy): img stays valid until release(arg) is called, which
 * happens exactly once — right away on error (RCANVAS_ECLOSED, RCANVAS_EBUSY), or when the encoders are done
 * with the frame. release runs with the canvas lock held and must not call back into the canvas. */
int rc_canvas_present_external(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg);

/* Like rc_canvas_present_external, with the frame's damage already known (a frame source that hashes tiles on the
 * GPU): `dirty` has one byte per RC_DAMAGE_TILE × RC_DAMAGE_TILE tile of img (damage.h), row-major,
 * tiles_x = ceil(width / RC_DAMAGE_TILE) by tiles_y = ceil(height / RC_DAMAGE_TILE); nonzero = the tile differs
 * from the previous frame this source presented on this canvas, whatever that call returned (a frame the canvas
 * refused keeps its damage: the canvas carries it into the next one). It is copied before the call returns, and
 * the canvas then skips its own CPU diff of the frame. dirty NULL, or tiles_x/tiles_y that do not match img: the
 * CPU diff runs, as with rc_canvas_present_external. The first frame, and one whose size or format differs from
 * the previous, are sent whole whatever the bitmap says. Errors, release and threading as
 * rc_canvas_present_external (one source thread per canvas). */
int rc_canvas_present_external_damage(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                                      const uint8_t *dirty, uint32_t tiles_x, uint32_t tiles_y);

/* Like rc_canvas_present_external, with the frame already encoded by `codec` (a complete file of `len` bytes,
 * copied before it returns): it becomes the newest packet at once, no CPU encode; the pixels stay as the source
 * of the lossless refinement. RCANVAS_ENOMEM also. */
int rc_canvas_present_external_encoded(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                                       const rc_codec_type *codec, const uint8_t *data, size_t len);

/* Lets go of every external frame (a frame source is going away): drops a pending one, waits for running
 * encodes, and releases `last` if it is external (refinement of it is then no longer possible). */
void rc_canvas_release_external(rcanvas_canvas *c);

/* The source's own encoder for this canvas's codec (the GPU JPEG encoder of a readback ring), or NULL: viewers
 * are told its name in "encoder" messages. */
void rc_canvas_set_source_codec(rcanvas_canvas *c, const rc_codec_type *codec);

/* ---- introspection for tests and benchmarks ---- */
typedef struct rc_canvas_debug {
    uint32_t presented_seq;   /* newest rcanvas_present */
    uint32_t latest_seq;      /* newest encoded live packet (0 none) */
    uint32_t refined_seq;     /* seq of the lossless refinement of `latest`, 0 none */
    uint32_t encoding_seq, pending_seq; /* frames in the pipeline, 0 none */
    uint32_t last_seq;        /* frame kept as the refinement source */
    int refine_running;
    uint32_t refine_seq;      /* frame being refined, 0 none */
    int free_slots, slots;    /* frame buffers free / in all */
    int sessions;
    uint32_t active_session;  /* id, 0 none */
    uint32_t active_acked;
    size_t latest_bytes;      /* encoded bytes of `latest` */
    const rc_codec_type *latest_codec;
    uint8_t first_pixel[4];   /* first 4 bytes of the pending frame (0 if none) */
    uint64_t skipped;         /* frames identical to the one before: not encoded (damage) */
} rc_canvas_debug;
void rc_canvas_get_debug(rcanvas_canvas *c, rc_canvas_debug *out);
/* A snapshot of the canvas's counters (session.h: presented, encoded, encode_count, ...). Any thread. */
void rc_canvas_get_counters(rcanvas_canvas *c, rc_canvas_counters *out);
/* A reference to the newest live packet (refined = 0) or its lossless refinement (1), or NULL. */
rc_packet *rc_canvas_latest_packet(rcanvas_canvas *c, int refined);

#endif
