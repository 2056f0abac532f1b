/* SPDX-License-Identifier: MIT */
/*
 * canvas_internal.h — private to src/stream/: the canvas and session structs, shared by the canvas's files
 * (canvas.c: lifecycle and core; canvas_tiers.c: codec preferences; canvas_encode.c: the encode pipeline;
 * canvas_refine.c: refinement and catch-up; canvas_present.c: frames in; canvas_schedule.c: when the app draws;
 * canvas_events.c: the event queue; canvas_options.c: options; canvas_damage.c: damage), session.c (viewers:
 * flow control, roles, keyframes), tier.c (the encoder streams) and registry.c; the tier's struct and functions
 * are tier.h's. Everything in them is guarded by the canvas's mutex `mu`.
 */
#ifndef RC_CANVAS_INTERNAL_H
#define RC_CANVAS_INTERNAL_H

/* The largest video bitrate the encoder is given, kbit/s (RCANVAS_OPT_BITRATE_KBPS's range). */
#define RC_MAX_BITRATE_KBPS 200000

#include <pthread.h>

#include "codec/frame_encode.h"
#include "stream/canvas.h"
#include "stream/canvas_damage.h"
#include "stream/rate.h"
#include "stream/tier.h"

#define RC_EVENT_QUEUE 1024
#define RC_MAX_TIERS 8         /* encoders one canvas runs at once: a codec × a rate rung each (RC_RUNGS) */
/* Viewers are grouped by the rate their link takes into rungs (bit/s lower bounds, fastest first): viewers of one
 * codec and rung share one encoder, steered to the slowest of them; a viewer far slower than the others gets its
 * own (one slow viewer must not lower everybody's quality). Spaced ×3, so two tiers differ visibly. */
#define RC_RUNGS 4
#define RC_RUNG_FLOORS {16e6, 5e6, 1.6e6, 0.0}
#define RC_RUNG_HYSTERESIS 1.3   /* a viewer leaves its rung only this far past its bounds */
#define RC_RUNG_MOVE_US 2000000  /* and at most this often */
#define RC_MAX_PREFS 8
/* A stateful encoder asked for a keyframe again within this time waits for it: one slow or stalling viewer
 * cannot turn every frame of the others into a keyframe. A joining viewer waits at most this long. */
#define RC_KEYFRAME_MIN_US 250000
/* A tier whose encoder fails this many frames in a row is given up until the frame size changes: its viewers
 * move to their next codec (JPEG at worst). */
#define RC_TIER_FAILURES 3
/* A viewer's own keyframe requests ({"type":"keyframe"}) count at most once per this time. */
#define RC_SESSION_KEYFRAME_US 1000000
/* A frame slot of more than this that is twice what the frame size now needs gives its block back (canvas_present.c,
 * rc_frame_release_locked). */
#define RC_SHRINK_MIN_BYTES (4u << 20)
#define RC_FRAME_BUFS 5        /* presenter, pending, encoding, last, an older last still being refined */
#define RC_MAX_INFLIGHT 16     /* max_in_flight is at most this */
#define RC_DETAIL_EVERY 8      /* a tier looks at its frames' fine detail (rc_image_fine_detail) every this many */
/* An active viewer whose window stays full this long while others watch loses the active role, so one stalled
 * or hostile client cannot freeze the canvas for everybody (it keeps its connection and gets frames as a
 * passive viewer when it acks again). */
#define RC_STALL_US 2000000

/* One copy of an app frame. refs counts the slots holding it (pending, encoding, last, refine). */
typedef struct rc_frame_buf {
    uint8_t *pixels;
    size_t cap;
    struct rcanvas_canvas *owner; /* the canvas whose slot it is (its frame size: keep_px) */
    rc_image img;
    uint32_t seq;
    int64_t present_us;
    int refs;
    /* External pixels (a mapped Vulkan staging buffer): img.pixels points there, not at `pixels`, and
     * ext_release(ext_arg) runs (canvas lock held) when the last slot lets go of the frame. */
    void (*ext_release)(void *arg);
    void *ext_arg;
    /* damage (damage.h): the tiles that differ from frame dmg_base (the frame presented before it; from
     * rc_damage_resolve_locked on, `last`) */
    rc_damage_map dmg;
    uint32_t dmg_base;
    int dmg_from_source;      /* dmg came from the frame source (GPU hash), not from the CPU diff */
} rc_frame_buf;

struct rc_session {
    rcanvas_canvas *canvas;
    rc_session *next;
    uint32_t id;
    int active;
    int closing;
    int visible;
    rc_session_caps caps;
    int tier;                 /* index into canvas->tiers */
    uint32_t last_id;         /* id (in its tier) of the last video packet given: what it can decode after */
    /* what it was given */
    uint32_t given_seq;       /* newest live frame given */
    uint32_t floor_seq;       /* after a move to another tier: the frame it shows, nothing older is sent */
    uint32_t lossless_seq;    /* its picture is lossless but for the tiles dirty after this frame (damage.h); 0 none */
    int need_keyframe;        /* new, or missed a packet: only a keyframe will do */
    /* flow control: packets given and not acked, oldest first */
    /* div: the size divisor it was coded at, 0 for one whose decode does not count (a refinement, a paint-over) */
    struct { uint32_t seq; int64_t present_us, sent_us; uint32_t bytes; int div; rc_link_send rec; } inflight[RC_MAX_INFLIGHT];
    int if_head, n_inflight;
    int window;               /* packets it may hold unacked: max_in_flight, more on a long round trip */
    uint64_t inflight_bytes;  /* their bytes */
    uint32_t acked_seq;
    uint32_t rtt_us;          /* last present → ack, µs */
    rc_link link;             /* its link, from its acks (rate.h) */
    /* its decoder (the acks' decode_ms): what one live frame took it per size (rc_steer_cpu; none measured: an
     * older client), the last ones smoothed whatever their size, and the time between its acks (smoothed): busy
     * most of that time, its decoder is what holds its frame rate (cpu_bound) */
    rc_cost dec_cost;
    double dec_us, ack_iv_us;
    int64_t last_ack_us;
    int rung;                 /* rate rung it belongs to */
    int64_t rung_at_us;       /* when it last changed rung */
    /* its last resize, applied if it becomes active (pixel_ratio as clamped; req_ratio as the viewer asked, which
     * a codec change clamps again: rc_canvas_resize_again_locked) */
    int have_resize;
    rcanvas_event last_resize;
    double req_ratio;
    int64_t last_kf_request_us; /* its last {"type":"keyframe"} honoured */
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
    char cursor[32];          /* CSS cursor keyword (rcanvas_canvas_set_cursor); "" = never set */
    int cursor_version;       /* bumped on change; sessions report it (0 = never set) */
    rcanvas_update_mode mode;
    double max_fps;
    int max_in_flight;
    rc_encode_params params;
    int refine_ms;
    int rate_adapt;           /* RCANVAS_OPT_RATE_ADAPT */
    const rc_codec_type *source_codec; /* the frame source's own encoder (GPU JPEG), or NULL */
    const rc_codec_type *prefs[RC_MAX_PREFS]; /* codecs in the canvas's order of preference (JPEG last) */
    int nprefs;
    const rc_codec_type *encoder; /* the encoder chosen by name for params.codec (RC_CODEC_ALT), or NULL: its default */
    unsigned codecs_disabled;  /* bit (1 << rc_codec_index): encoders that failed at this frame size (RC_TIER_FAILURES) */
    int codec_change_pending;  /* preferences changed while a tier was busy: applied when none is */
    uint32_t present_w, present_h; /* size of the newest frame presented */

    /* size */
    rcanvas_size size;

    /* frames */
    rc_frame_buf frames[RC_FRAME_BUFS];
    rc_frame_buf *pending;    /* presented, waiting for the encoder */
    rc_frame_buf *encoding;   /* being encoded, by every tier in use (lock-step: the next starts when all are done) */
    int encoding_tiers;       /* tiers still encoding it */
    int encoding_ok;          /* tiers that encoded it */
    rc_frame_buf *last;       /* newest frame encoded (source of refinement) */
    uint32_t presented_seq;   /* P: seq of the newest present() */
    double present_fps;       /* the app's frame rate (smoothed over present intervals), for the steering */
    uint32_t failed_seq;      /* newest seq whose encode failed (counts as delivered) */
    int64_t last_present_us;
    rc_tier tiers[RC_MAX_TIERS];
    uint32_t latest_seq;      /* newest frame encoded (every tier in use has it) */
    rc_encode_task refine_task;
    const rc_codec_type *refine_codec; /* lossless: PNG (NULL, the default) or WebP lossless */
    int refine_running;
    rc_frame_buf *refine_src; /* frame the refinement reads (holds a ref) */

    rc_damage_state damage;   /* damage.h: history of encoded frames, skipped identical frames */

    /* encoded output */
    rc_packet_pool *packets;
    uint64_t keep_px;         /* the frame size (pixels) the packet pool's keep limit was set for */
    rc_packet *refined;       /* lossless version of frame latest_seq once made (same seq), else NULL */
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
    int draw_held;            /* a draw is due but held back by the viewers' windows: frames keep coming, so no
                               * refinement is due (nor for refine_ms after draw_held_us, the last time it was) */
    int64_t draw_held_us;
    int64_t prev_present_us;  /* the present before the newest (app frame rate) */
    uint32_t pixels_wanted_seq; /* the newest frame came encoded without pixels and they are needed (refinement, a
                                 * tier's encode): rcanvas_wait returns RCANVAS_WAKE_PIXELS once for it */
    uint32_t pixels_woken_seq;  /* ... the frame it was returned for */

    /* events */
    rcanvas_event events[RC_EVENT_QUEUE];
    int ev_head, ev_count;
    uint64_t events_dropped;

    rc_canvas_counters counters; /* for /metrics (session.h) */
};

/* canvas.c and canvas_events.c, for session.c and the other canvas files (mu held) */
void rc_canvas_notify_locked(rcanvas_canvas *c);
void rc_canvas_queue_event_locked(rcanvas_canvas *c, const rcanvas_event *ev);
void rc_canvas_set_size_locked(rcanvas_canvas *c, double w, double h, double ratio);
/* The active viewer's last resize clamped again (after a codec change: another codec, other limits); where the
 * canvas's size changes, the app gets the RESIZE event and a draw request. mu held. */
void rc_canvas_resize_again_locked(rcanvas_canvas *c);

/* ---- between the canvas's own files (mu held unless said) ---- */
/* canvas_present.c: 1 if fb has its pixels; else 0, and the app is asked for them (RCANVAS_WAKE_PIXELS). */
int rc_canvas_want_pixels_locked(rcanvas_canvas *c, rc_frame_buf *fb);
/* canvas.c: one slot lets go of frame fb (NULL or free: nothing); the last one runs its ext_release. */
void rc_frame_release_locked(rc_frame_buf *fb);
/* canvas.c: RCANVAS_OK if a live codec, quality and subsampling are valid (no lock needed). */
int rc_canvas_check_params(rcanvas_codec codec, int quality, rcanvas_subsampling ss);
/* canvas_tiers.c: the codec preferences from params.codec; a change of them (now, or when no tier is busy); 1
 * while some tier encodes; the app's frame rate a tier's budget is spread over. */
void rc_canvas_set_prefs_locked(rcanvas_canvas *c);
void rc_canvas_apply_codec_change_locked(rcanvas_canvas *c);
void rc_canvas_codec_changed_locked(rcanvas_canvas *c);
int rc_canvas_tiers_busy_locked(const rcanvas_canvas *c);
double rc_canvas_fps_goal_locked(const rcanvas_canvas *c);
/* canvas_tiers.c: the app's frame rate (rc_canvas_fps_goal_locked), unless its draws were held back by the viewers'
 * windows within the last RC_VIDEO_HELD_US: then the measured rate is the viewers', and the cap (max_fps, else 60)
 * is what frames would come at. What video frames are sized for, and what a window covers the round trip at. */
#define RC_VIDEO_HELD_US 1000000
double rc_canvas_unheld_fps_locked(const rcanvas_canvas *c, int64_t now);
/* A frame small enough to go out lossless (rc_tier_small_lossless_locked, tier.h): at most RC_SMALL_MAX_PX
 * pixels and at most 1/RC_SMALL_AREA_DIV of the canvas's physical pixels. */
#define RC_SMALL_MAX_PX 65536
#define RC_SMALL_AREA_DIV 4
int rc_canvas_small_frame_locked(const rcanvas_canvas *c, const rc_image *img);
/* canvas_encode.c: a frame's stripes onto the pool; `pending` into the encoders; tier t finished its encode of
 * frame seq (ok: it has a packet of it): the frame moves on (tier.c calls it after rc_tier's own bookkeeping). */
void rc_canvas_submit_stripes(rcanvas_canvas *c, rc_encode_task *task, rc_frame_buf *fb, const rc_image *img,
                              const rc_codec_type *codec, const rc_encode_params *params, rc_encode_done_fn done,
                              rc_packet *pk);
void rc_canvas_start_encode_locked(rcanvas_canvas *c);
void rc_canvas_advance_locked(rcanvas_canvas *c, rc_tier *t, uint32_t seq, int ok);

/* session.c, for canvas_refine.c (mu held): hands the active role on from a stalled viewer; µs to the next check. */
int64_t rc_session_check_stall_locked(rcanvas_canvas *c, int64_t now_us);
/* 1 if some session is visible */
int rc_sessions_visible_locked(rcanvas_canvas *c);
/* 1 if s decodes codec (JPEG and PNG: every client). */
int rc_session_decodes(const rc_session *s, const rc_codec_type *codec);
/* Puts s on the tier of the first codec of the canvas's preference that it decodes (JPEG else). */
void rc_session_place_locked(rcanvas_canvas *c, rc_session *s);

#endif
