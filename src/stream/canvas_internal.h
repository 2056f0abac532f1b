/*
 * canvas_internal.h — private to src/stream/: the canvas and session structs, shared by canvas.c (frames,
 * encode pipeline, scheduling, events), session.c (viewers: flow control, roles, keyframes) and registry.c.
 * Everything in them is guarded by the canvas's mutex `mu`.
 */
#ifndef RC_CANVAS_INTERNAL_H
#define RC_CANVAS_INTERNAL_H

#include <pthread.h>

#include "codec/frame_encode.h"
#include "stream/canvas.h"

#define RC_EVENT_QUEUE 1024
#define RC_FRAME_BUFS 5        /* presenter, pending, encoding, last, an older last still being refined */
#define RC_MAX_INFLIGHT 16     /* max_in_flight is at most this */
/* An active viewer whose window stays full this long while others watch loses the active role, so one stalled
 * or hostile client cannot freeze the canvas for everybody (it keeps its connection and gets frames as a
 * passive viewer when it acks again). */
#define RC_STALL_US 2000000

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

struct rc_session {
    rcanvas_canvas *canvas;
    rc_session *next;
    uint32_t id;
    int active;
    int closing;
    int visible;
    rc_session_caps caps;
    /* what it was given */
    uint32_t given_seq;       /* newest live frame given */
    uint32_t lossless_seq;    /* newest seq given in lossless form */
    uint32_t sent_seq;        /* seq of the last packet given (for depends_on) */
    int need_keyframe;        /* new, or missed a packet: only a keyframe will do */
    /* flow control: packets given and not acked, oldest first */
    struct { uint32_t seq; int64_t present_us, sent_us; } inflight[RC_MAX_INFLIGHT];
    int if_head, n_inflight;
    uint32_t acked_seq;
    uint32_t rtt_us;
    /* its last resize, applied if it becomes active */
    int have_resize;
    rcanvas_event last_resize;
};

struct rcanvas_canvas {
    rc_canvas_env env;
    char name[RC_NAME_MAX + 1];

    pthread_mutex_t mu;
    pthread_cond_t cv;        /* rcanvas_wait(), and close/destroy waiting for encodes and sessions */
    int closing;              /* no new encodes or sessions; waiters get RCANVAS_ECLOSED */

    /* configuration */
    char title[256];
    int title_version;        /* bumped on change; sessions report it */
    rcanvas_update_mode mode;
    double max_fps;
    int max_in_flight;
    rc_encode_params params;
    int refine_ms;
    const rc_codec_type *source_codec; /* the frame source's own encoder (GPU JPEG), or NULL */

    /* size */
    rcanvas_size size;

    /* frames */
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
    int keyframe_requested;   /* a session needs a keyframe (stateful codecs; coalesced) */

    /* encoded output */
    rc_packet_pool *packets;
    rc_packet *latest;        /* newest encoded live frame */
    rc_packet *refined;       /* lossless version of `latest` once made (same seq), else NULL */
    uint32_t refine_done_seq; /* seq for which a refinement was made or is running */

    /* sessions */
    rc_session *sessions;     /* newest first */
    int nsessions;
    uint32_t next_session_id;
    rc_session *active;       /* NULL = none */
    uint32_t active_acked;    /* A: newest seq acked by the active viewer (flow control of draws) */

    /* scheduling */
    int draw_requested;
    int64_t last_draw_us;

    /* events */
    rcanvas_event events[RC_EVENT_QUEUE];
    int ev_head, ev_count;
    uint64_t events_dropped;
};

/* canvas.c, for session.c (mu held) */
void rc_canvas_notify_locked(rcanvas_canvas *c);
void rc_canvas_queue_event_locked(rcanvas_canvas *c, const rcanvas_event *ev);
void rc_canvas_set_size_locked(rcanvas_canvas *c, double w, double h, double ratio);
/* session.c, for canvas.c (mu held): hands the active role on from a stalled viewer; µs to the next check. */
int64_t rc_session_check_stall_locked(rcanvas_canvas *c, int64_t now_us);
/* 1 if some session is visible */
int rc_sessions_visible_locked(rcanvas_canvas *c);

#endif
