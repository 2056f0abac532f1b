/*
 * canvas.h — private: the canvas, where the app's frames meet the viewers. It owns the frame buffers, the
 * encode pipeline of the canvas (one frame encoding + one pending, newest wins), the newest encoded packets,
 * the draw scheduling (update mode, max_fps, flow control) and the event queue. All of it is guarded by one
 * mutex per canvas (`mu`); `cv` wakes rcanvas_wait(). The transport (network thread) reads packets and feeds
 * events and acks through the rc_canvas_* functions below; it owns the viewers themselves.
 */
#ifndef RC_CANVAS_H
#define RC_CANVAS_H

#include <pthread.h>

#include "core/util.h"
#include "encode/frame_encode.h"

#define RC_EVENT_QUEUE 1024
#define RC_FRAME_BUFS 5 /* presenter, pending, encoding, last, an older last still being refined */
#define RC_NAME_MAX 64

/* One copy of an app frame. refs counts the slots holding it (pending, encoding, last, refine). */
typedef struct rc_frame_buf {
    uint8_t *pixels;
    size_t cap;
    rc_image img;
    uint32_t seq;
    int64_t present_us;
    int refs;
    /* External pixels (a mapped Vulkan staging buffer): img.pixels points there, not at `pixels`, and
     * ext_release(ext_arg) runs (canvas lock held) when the last slot lets go of the frame. */
    void (*ext_release)(void *arg);
    void *ext_arg;
} rc_frame_buf;

struct rcanvas_canvas {
    rcanvas_server *server;
    char name[RC_NAME_MAX + 1];

    pthread_mutex_t mu;
    pthread_cond_t cv;        /* rcanvas_wait(), and canvas_free waiting for encodes/viewers */
    int closing;              /* no new encodes; waiters get RCANVAS_ECLOSED */

    /* configuration (mu) */
    char title[256];
    int title_version;        /* bumped on change; the network thread compares */
    rcanvas_update_mode mode;
    double max_fps;
    int max_in_flight;
    rc_encode_params params;
    int refine_ms;
    int gpu_jpeg;             /* a frame source encodes this canvas's JPEG frames on the GPU (src/source/vk_readback.c
                                 sets it); viewers are told, so the client can name the encoder it sees */

    /* size (mu) */
    rcanvas_size size;

    /* frames (mu) */
    rc_frame_buf frames[RC_FRAME_BUFS];
    rc_frame_buf *pending;    /* presented, waiting for the encoder */
    rc_frame_buf *encoding;   /* being encoded */
    rc_frame_buf *last;       /* newest frame encoded (source of refinement) */
    uint32_t presented_seq;   /* P: seq of the newest present() */
    uint32_t failed_seq;      /* newest seq whose encode failed (counts as delivered) */
    int64_t last_present_us;
    rc_encode_task live_task;
    rc_encode_task refine_task;
    int refine_running;
    rc_frame_buf *refine_src; /* frame the refinement reads (holds a ref) */

    /* encoded output (mu) */
    rc_packet_pool *packets;
    rc_packet *latest;        /* newest encoded live frame */
    rc_packet *refined;       /* lossless version of `latest` once made (same seq), else NULL */
    uint32_t refine_done_seq; /* seq for which a refinement was made or is running */

    /* viewers (mu; the viewer objects themselves are the network thread's) */
    int viewers;
    uint32_t active_viewer;   /* id, 0 = none */
    uint32_t active_acked;    /* A: newest seq acked by the active viewer */

    /* scheduling (mu) */
    int draw_requested;
    int64_t last_draw_us;

    /* events (mu) */
    rcanvas_event events[RC_EVENT_QUEUE];
    int ev_head, ev_count;
    uint64_t events_dropped;
};

/* ---- called by frame sources (src/source/) ---- */

/* Presents pixels that rcanvas does not own (no copy): img stays valid until release(arg) is called, which
 * happens exactly once — right away on error (RCANVAS_ECLOSED, RCANVAS_EBUSY), or when the encoders are done
 * with the frame. release runs with the canvas lock held and must not call back into the canvas. */
int rc_canvas_present_external(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg);

/* Like rc_canvas_present_external, with the frame already encoded (a complete JPEG file, jpeg/len bytes, copied
 * before it returns): it becomes the newest packet at once, no CPU encode; the pixels stay as the source of the
 * lossless refinement. */
int rc_canvas_present_external_encoded(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                                       const uint8_t *jpeg, size_t len);

/* Lets go of every external frame (a frame source is going away): drops a pending one, waits for running
 * encodes, and releases `last` if it is external (refinement of it is then no longer possible). */
void rc_canvas_release_external(rcanvas_canvas *c);

/* ---- called by the transport (network thread) ---- */

/* A viewer joined: counts it, makes it active if none is (then asks for a draw). Returns 1 if it is now active. */
int rc_canvas_viewer_join(rcanvas_canvas *c, uint32_t viewer_id);
/* A viewer left. If it was active, new_active (0 = none) takes over with its own acked seq. */
void rc_canvas_viewer_leave(rcanvas_canvas *c, uint32_t viewer_id, uint32_t new_active, uint32_t new_active_acked);
/* viewer_id becomes the active viewer (the previous one stalled), with its own acked seq. */
void rc_canvas_set_active(rcanvas_canvas *c, uint32_t viewer_id, uint32_t acked);
/* The viewer acked seq (after drawing it). */
void rc_canvas_ack(rcanvas_canvas *c, uint32_t viewer_id, uint32_t seq);
/* Queues an event from a viewer (merging as documented); a resize from the active viewer sets the size. */
void rc_canvas_push_event(rcanvas_canvas *c, const rcanvas_event *ev);
/* Starts a lossless refinement if one is due (no new frame for refine_ms, latest lossy). Returns the µs until
 * it would be due (to re-arm the timer), or -1 if none is pending. */
int64_t rc_canvas_refine_check(rcanvas_canvas *c, int64_t now_us);

#endif
