/* SPDX-License-Identifier: MIT */
/*
 * session.h — the transport's only door into the stream: one session per viewer of a canvas.
 *
 * The transport opens a session when a viewer connects, asks it for the next packet whenever it can send, passes
 * acks, events and visibility in, reads its state (role, title, encoder, closing) to tell the viewer about
 * changes, and closes it when the connection ends. Flow control (at most max_in_flight unacked packets per
 * viewer, newest wins), the active/passive roles, keyframe needs and the round-trip measurement all live behind
 * it, in the canvas. Every call takes the canvas lock; none blocks. All calls for one session come from one
 * thread (the transport's network thread).
 */
#ifndef RC_SESSION_H
#define RC_SESSION_H

#include "codec/codec.h"
#include "codec/packet.h"
#include "rcanvas.h"

#define RC_NAME_MAX 64 /* canvas name, bytes */

typedef struct rc_session rc_session;

/* What the viewer can decode. */
typedef struct rc_session_caps {
    unsigned codecs; /* bit (1 << wire id) per codec the client decodes; 0 = JPEG and PNG (protocol 1 clients) */
    int protocol;    /* the client's protocol version (1, or 2 when it listed codecs) */
    int view_only;   /* a view-only viewer: gets frames, never becomes active; the transport drops its
                        input, and rc_session_push_event ignores any that reaches it */
    /* RTP output (src/transport/rtp.c): a consumer that acks each packet as soon as it sent it (UDP has
     * no acks), so its acks say nothing about its link. fixed_bps > 0: its link target is this rate (bit/s), set
     * once, never moved by its acks, its window stays max_in_flight, and its rung is that rate's; it is also left
     * out of the first guess of later viewers' links (it is not this server's measured uplink). 0 = from acks. */
    double fixed_bps;
    /* 1: it decodes exactly the codecs of `codecs` (no JPEG/PNG fallback, so no lossless refinement in PNG); if
     * none of the canvas's preferences is among them, it gets a tier of the first of them anyway. */
    int exact_codecs;
} rc_session_caps;

/* Opens a session on canvas c. The first session of a canvas that is not view-only becomes the active one (its size and acks drive
 * the app) and asks the app for a draw. RCANVAS_OK and *out, RCANVAS_ECLOSED (canvas closing), RCANVAS_ENOMEM. */
int rc_session_open(rcanvas_canvas *c, const rc_session_caps *caps, rc_session **out);
/* Closes it. If it was active, the oldest other session (preferring those not closing) takes over, with its
 * own acks and its last resize. NULL ignored. */
void rc_session_close(rc_session *s);
/* The transport is closing this viewer (bad input, stall): it is passed over when the active role moves. */
void rc_session_set_closing(rc_session *s);

uint32_t rc_session_id(const rc_session *s);
rcanvas_canvas *rc_session_canvas(const rc_session *s);

/* The next packet to send to this viewer, if one is due now: the viewer is visible, holds fewer than
 * max_in_flight unacked packets, and a newer packet (or the lossless refinement of the one it has) exists that
 * it can decode. Returns 1 and *out (a reference the caller drops with rc_packet_unref once sent), recording it
 * as in flight at now_us; or 0. A session that needs a keyframe (new, or it missed a packet another one depends
 * on) never gets a packet that depends on one it did not receive: the canvas's encoder is asked for a keyframe
 * instead (requests are coalesced), and *keyframe_wait (if not NULL) is set to 1. */
int rc_session_next(rc_session *s, int64_t now_us, rc_packet **out, int *keyframe_wait);

/* The viewer acked seq (it drew that frame), hold_us after the frame arrived there (its decode and draw; 0 if it
 * did not say). Frees its window (and the packets before seq, which it skipped), measures the round trip
 * (present → ack) and feeds the link estimate (send → ack, less hold_us), and may let the app draw (the pace of
 * the fastest viewer). RCANVAS_OK, or RCANVAS_EINVAL if seq was not in flight (the caller counts it as a
 * malformed message; nothing changes). */
int rc_session_ack(rc_session *s, uint32_t seq, uint32_t hold_us, int64_t now_us);
/* The same, with the time the viewer spent decoding and drawing that frame (the ack's decode_ms, µs; 0 = not
 * said): its decoder's cost, which the steering weighs against the frame rate (rate.h, rc_steer_cpu). */
int rc_session_ack_decoded(rc_session *s, uint32_t seq, uint32_t hold_us, uint32_t decode_us, int64_t now_us);

/* An event from this viewer (validated by the transport): stamped with the session id and queued for the app,
 * merged as rendercanvas does. A resize counts only from the active viewer (it sets the canvas size); from a
 * passive one it is kept and applied if it becomes active. */
void rc_session_push_event(rc_session *s, const rcanvas_event *ev);

/* The viewer's decoder failed or lost its reference: it needs a keyframe (requests are coalesced). */
void rc_session_request_keyframe(rc_session *s);

/* The viewer's view is on screen (1) or scrolled away / in a hidden tab (0). An invisible viewer gets no
 * packets; no draw is due while no viewer of the canvas is visible. Sessions start visible. */
void rc_session_set_visible(rc_session *s, int visible);

typedef struct rc_session_state {
    int active;                  /* this viewer is the active one */
    int closing;                 /* the canvas is going away: close with 1001 */
    int title_version;           /* bumped when the title changes */
    int cursor_version;          /* bumped when the cursor changes (0 = never set) */
    uint32_t rtt_us;             /* last round trip (present → ack), µs; 0 = none yet */
    /* the link as measured from its acks, and what its encoder does about it */
    uint32_t srtt_us, min_rtt_us;/* smoothed and minimum round trip (send → ack), µs */
    double rate_kbps;            /* delivery-rate estimate, kbit/s (0 = none yet) */
    double target_kbps;          /* the rate its frames aim at, kbit/s */
    int window;                  /* packets it may hold unacked */
    int rung;                    /* rate rung (0 = fastest) */
    int quality;                 /* JPEG/WebP quality its encoder uses now; 0 = not a quality codec */
    int scale_div;               /* frames encoded at 1/scale_div of the size (the client upscales) */
    double fps_cap;              /* frame-rate cap of its encoder, frames/s; 0 = none */
    double bitrate_kbps;         /* video: its encoder's bitrate, kbit/s; 0 = not video */
    int limit;                   /* RC_LIMIT_* (rate.h): what holds its encoder's frame rate now */
    double fill_fps;             /* video: > 0 while its frames are sized for the rate its encoder keeps (frames/s),
                                  * below the app's (rc_video_fill_fps) */
    int screen;                  /* video: 1 while its encoder codes the frames as screen content (text, lines) */
    const rc_codec_type *encoder;/* the encoder of this viewer's live frames */
    int protocol;                /* the viewer's protocol version (caps) */
    int ready;                   /* rc_session_next would give a packet now */
    int in_flight;               /* packets given and not acked yet (for /metrics) */
    rcanvas_size size;           /* the canvas's size now (the active viewer's; for {"type":"size"}) */
} rc_session_state;
void rc_session_get_state(rc_session *s, rc_session_state *out);

/* What the transport puts in its hello message. */
typedef struct rc_session_hello {
    char canvas[RC_NAME_MAX + 1];
    char title[256];
    int title_version;
    char cursor[32];             /* CSS cursor keyword; "" = never set */
    int cursor_version;
    rcanvas_size size;
    rcanvas_codec codec;
    int max_in_flight;
} rc_session_hello;
void rc_session_get_hello(rc_session *s, rc_session_hello *out);

/* ---- the canvases of a runtime, as the transport finds them ---- */

/* The runtime's list of canvases by name. Thread-safe (its own lock, taken before any canvas lock). */
typedef struct rc_registry rc_registry;
rc_registry *rc_registry_new(void);
void rc_registry_free(rc_registry *r);
/* RCANVAS_OK, RCANVAS_EEXIST (that name is taken), RCANVAS_ENOMEM. */
int rc_registry_add(rc_registry *r, rcanvas_canvas *c);
/* After this no new session opens on c. */
void rc_registry_remove(rc_registry *r, rcanvas_canvas *c);
/* 1 and its title (HTML page) if a canvas of that name (len bytes, "" = the default canvas) is open, else 0. */
int rc_registry_lookup(rc_registry *r, const char *name, size_t len, char *title, size_t title_cap);
/* rc_session_open on the canvas of that name. RCANVAS_ECLOSED also when there is none. */
int rc_registry_open(rc_registry *r, const char *name, size_t len, const rc_session_caps *caps, rc_session **out);
/* rc_canvas_tick on every canvas; returns the µs until the earliest deadline, or -1. Network thread. */
int64_t rc_registry_tick(rc_registry *r, int64_t now_us);

/* ---- counters of a canvas, for the transport's GET /metrics ---- */

/* Upper bounds (ms) of the encode-time histogram's buckets; a last, unbounded bucket (+Inf) follows. */
#define RC_ENCODE_MS_BUCKETS 10
#define RC_ENCODE_MS_BOUNDS {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
/* Kept under the canvas lock as frames go by (no allocation); never reset. */
typedef struct rc_canvas_counters {
    uint64_t presented;          /* frames the app presented (accepted) */
    uint64_t encoded;            /* frames encoded for its viewers (by at least one encoder) */
    uint64_t dropped;            /* frames never encoded: replaced by a newer one while waiting, or failed */
    uint64_t unchanged;          /* frames identical to the one before: not encoded, nothing sent */
    uint64_t encode_count;       /* encodes (one per encoder per frame; lossless refinements not counted) */
    double encode_ms_sum;        /* their total time, ms (start → packet done, pool wait included) */
    uint64_t encode_ms_bucket[RC_ENCODE_MS_BUCKETS + 1]; /* encodes per bucket (not cumulative); last: > 1000 ms */
} rc_canvas_counters;

typedef struct rc_canvas_metrics {
    char name[RC_NAME_MAX + 1];  /* "" = the default canvas */
    int viewers;                 /* sessions open */
    rc_canvas_counters counters;
} rc_canvas_metrics;

/* Snapshots of the counters of up to max canvases into out; returns how many canvases there are (may be > max).
 * Takes the registry lock, then each canvas's. Any thread. */
int rc_registry_metrics(rc_registry *r, rc_canvas_metrics *out, int max);

#endif
