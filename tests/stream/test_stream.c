/* SPDX-License-Identifier: MIT */
/*
 * test_stream — the stream stage driven without a network: canvases are made with an environment of the test's
 * own (a worker pool, a notify counter), and viewers are sessions opened, fed and acked the way the transport
 * does it (stream/session.h).
 *  - frame descriptors: every bad one returns its error code and presents nothing;
 *  - flow control: no draw is due without a viewer, or while the active viewer holds max_in_flight unacked
 *    frames (frames still encoding count); an ack makes one due again; a passive viewer's acks do not count;
 *  - per-viewer windows: a session gets at most max_in_flight packets before it acks, the newest one (newest
 *    wins), its lossless refinement once made, and nothing while invisible;
 *  - newest wins in the pipeline: frames presented while the encoder is busy replace each other, the skipped
 *    one is never encoded, and `latest` ends at the newest;
 *  - refinement: one lossless refinement at a time, so frame slots always come back (else the stream froze);
 *  - update modes: ondemand needs a request, manual never draws, max_fps spaces draws;
 *  - events: pointer_move/wheel/resize merging as in rendercanvas, resize only from the active viewer,
 *    active viewer hand-over on leave and on stall;
 *  - server: token, URL, port 0, a second server on a used port fails with RCANVAS_EADDRINUSE (logged as
 *    "address already in use"), a refused token is logged with the rule and without the token; canvas names,
 *    options, error names.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "stream/canvas.h"
#include "stream/session.h"
#include "test.h"

static rc_pool *g_pool;
static atomic_int g_notified;
static const rc_logger g_log = {0};
static void count_notify(void *user) {
    (void)user;
    atomic_fetch_add(&g_notified, 1);
}

static rcanvas_canvas *new_canvas_cfg(const rcanvas_canvas_config *cc) {
    rc_canvas_env env = {.pool = g_pool, .log = &g_log, .max_frame_dim = 8192, .notify = count_notify};
    rcanvas_canvas *c = NULL;
    int r = rc_canvas_create(&env, cc, &c);
    CHECK_MSG(r == RCANVAS_OK, "canvas_create: %s", rcanvas_strerror(r));
    return c;
}

static rcanvas_canvas *new_canvas(const char *name, rcanvas_update_mode mode, double fps) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = name;
    cc.update_mode = mode;
    cc.max_fps = fps;
    cc.refine_ms = 0;
    return new_canvas_cfg(&cc);
}

static void free_canvas(rcanvas_canvas *c) {
    rc_canvas_close(c);
    rc_canvas_wait_sessions(c);
    rc_canvas_destroy(c);
}

static rc_session *open_session(rcanvas_canvas *c) {
    rc_session *s = NULL;
    CHECK_EQ_INT(rc_session_open(c, NULL, &s), RCANVAS_OK);
    return s;
}

static rcanvas_server *new_server(int port) {
    rcanvas_server_config cfg;
    rcanvas_server_config_init(&cfg);
    cfg.port = port;
    cfg.encode_threads = 2;
    rcanvas_server *s = NULL;
    int r = rcanvas_server_new(&cfg, &s);
    CHECK_MSG(r == RCANVAS_OK, "server_new: %s", rcanvas_strerror(r));
    return s;
}

static uint8_t g_px[64 * 48 * 4];
static rcanvas_frame frame64(void) {
    return (rcanvas_frame){.pixels = g_px, .width = 64, .height = 48, .pitch = 64 * 4, .format = RCANVAS_FORMAT_RGBA8};
}

/* Presents f after changing its last pixel: every frame differs from the one before (an identical frame is not
 * encoded at all: damage, test_damage). */
static int present_changed(rcanvas_canvas *c, const rcanvas_frame *f) {
    static uint8_t n;
    g_px[sizeof g_px - 4] = ++n;
    return rcanvas_present(c, f);
}

static rc_canvas_debug dbg(rcanvas_canvas *c) {
    rc_canvas_debug d;
    rc_canvas_get_debug(c, &d);
    return d;
}

static void wait_latest(rcanvas_canvas *c, uint32_t seq) {
    for (int i = 0; i < 2000 && dbg(c).latest_seq < seq; i++) usleep(1000);
}

/* The packet the transport would send s now: its seq (0 = none), dropped at once. */
static uint32_t next_seq(rc_session *s, unsigned *flags) {
    rc_packet *pk = NULL;
    if (!rc_session_next(s, rc_now_us(), &pk, NULL)) return 0;
    uint32_t seq = pk->seq;
    if (flags) *flags = pk->flags;
    rc_packet_unref(pk);
    return seq;
}

/* Routes a test event to the session named by its viewer_id (1 or 2). */
static void push(rc_session *s1, rc_session *s2, const rcanvas_event *e) {
    rc_session_push_event(e->viewer_id == 1 ? s1 : s2, e);
}

/* A frame the canvas's codec cannot encode is refused by present at once (RCANVAS_EFRAME_SIZE), not taken and
 * dropped later: JPEG above 65500 a side (with max_frame_dim 65535), H.264 above 36864 macroblocks, WebP above
 * 16383 a side; one pixel less is taken. Also: a resize is clamped to max_canvas_pixels and max_pixel_ratio. */
static void test_codec_frame_limits(void) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.refine_ms = 0;
    rc_canvas_env env = {.pool = g_pool, .log = &g_log, .max_frame_dim = 65535, .notify = count_notify,
                         .max_canvas_pixels = 1000000, .max_pixel_ratio = 4};
    struct { rcanvas_codec codec; uint32_t w_bad, h_bad, w_ok, h_ok; } cases[] = {
        {RCANVAS_CODEC_JPEG, 65501, 1, 65500, 1},
        {RCANVAS_CODEC_H264, 4096, 2305, 4096, 2304},
        {RCANVAS_CODEC_WEBP, 16384, 1, 16383, 1},
    };
    uint8_t *px = calloc((size_t)65501 * 4, 2400); /* the largest frame's rows, zeros */
    CHECK(px != NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!rc_codec_for(cases[i].codec)) continue; /* not built in */
        cc.codec = cases[i].codec;
        rcanvas_canvas *c = NULL;
        CHECK_EQ_INT(rc_canvas_create(&env, &cc, &c), RCANVAS_OK);
        rcanvas_frame f = {.pixels = px, .format = RCANVAS_FORMAT_RGBA8, .width = cases[i].w_bad,
                           .height = cases[i].h_bad, .pitch = (size_t)cases[i].w_bad * 4};
        CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EFRAME_SIZE);
        CHECK_EQ_INT(dbg(c).presented_seq, 0);
        f.width = cases[i].w_ok, f.height = cases[i].h_ok, f.pitch = (size_t)f.width * 4;
        CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK);
        CHECK_EQ_INT(dbg(c).presented_seq, 1);
        if (i == 0) { /* the resize clamp: 32768² at ratio 16 → ratio lowered so that w·h ≤ 1 Mpx */
            rc_session *s = open_session(c);
            rcanvas_event ev = {.type = RCANVAS_EVENT_RESIZE, .width = 32768, .height = 32768, .pixel_ratio = 16};
            rc_session_push_event(s, &ev);
            rcanvas_size sz;
            rcanvas_canvas_get_size(c, &sz);
            CHECK(sz.physical_width == sz.physical_height);
            CHECK((uint64_t)sz.physical_width * sz.physical_height <= 1000000);
            CHECK(sz.physical_width >= 990);
            CHECK_EQ_INT(sz.width, 32768);
            rcanvas_event got;
            int n = 0;
            while (rcanvas_poll_event(c, &got) == 1)
                if (got.type == RCANVAS_EVENT_RESIZE) {
                    n++;
                    CHECK(fabs(got.pixel_ratio - sz.pixel_ratio) < 1e-12);
                }
            CHECK_EQ_INT(n, 1); /* the app is told the ratio it renders at */
            ev.width = 100, ev.height = 50, ev.pixel_ratio = 16; /* a small window: only max_pixel_ratio applies */
            rc_session_push_event(s, &ev);
            rcanvas_canvas_get_size(c, &sz);
            CHECK_EQ_INT(sz.physical_width, 400);
            CHECK_EQ_INT(sz.physical_height, 200);
            rc_session_close(s);
        }
        free_canvas(c);
    }
    free(px);
}

/* A resize is clamped to what the live codec can encode too: a 5K window at pixel ratio 1 (57600 macroblocks) on an
 * H.264 canvas renders at the largest ratio within openh264's 36864 macroblocks, and the frame of that size is
 * taken; a JPEG canvas keeps the 5K. (Before, the resize was taken and every frame refused: the viewer froze.) */
static void test_resize_within_codec(void) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.refine_ms = 0;
    rc_canvas_env env = {.pool = g_pool, .log = &g_log, .max_frame_dim = 16384, .notify = count_notify,
                         .max_canvas_pixels = 7680u * 4320u, .max_pixel_ratio = 16};
    const rcanvas_codec codecs[] = {RCANVAS_CODEC_H264, RCANVAS_CODEC_JPEG};
    for (size_t i = 0; i < 2; i++) {
        if (!rc_codec_for(codecs[i])) continue; /* not built in */
        cc.codec = codecs[i];
        rcanvas_canvas *c = NULL;
        CHECK_EQ_INT(rc_canvas_create(&env, &cc, &c), RCANVAS_OK);
        if (!c) continue;
        rc_session *s = open_session(c);
        rcanvas_event ev = {.type = RCANVAS_EVENT_RESIZE, .width = 5120, .height = 2880, .pixel_ratio = 1};
        rc_session_push_event(s, &ev);
        rcanvas_size sz;
        rcanvas_canvas_get_size(c, &sz);
        uint64_t mbs = (uint64_t)((sz.physical_width + 15) / 16) * ((sz.physical_height + 15) / 16);
        if (codecs[i] == RCANVAS_CODEC_H264) {
            CHECK_MSG(mbs <= 36864 && mbs >= 36000, "5K on H.264: %ux%u, %llu macroblocks", sz.physical_width,
                      sz.physical_height, (unsigned long long)mbs);
            CHECK(fabs((double)sz.physical_width / sz.physical_height - 16.0 / 9) < 0.01); /* the aspect kept */
            uint8_t *px = calloc((size_t)sz.physical_width * sz.physical_height, 4);
            rcanvas_frame f = {.pixels = px, .format = RCANVAS_FORMAT_RGBA8, .width = sz.physical_width,
                               .height = sz.physical_height, .pitch = (size_t)sz.physical_width * 4};
            CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK);
            free(px);
        } else {
            CHECK_EQ_INT(sz.physical_width, 5120);
            CHECK_EQ_INT(sz.physical_height, 2880);
            /* the codec changed to H.264 at that size: clamped again, and the app told the ratio it renders at;
             * and back to JPEG: the 5K the viewer asked for again */
            if (rc_codec_for(RCANVAS_CODEC_H264)) {
                rcanvas_event got;
                while (rcanvas_poll_event(c, &got) == 1) {}
                CHECK_EQ_INT(rcanvas_canvas_set_codec(c, RCANVAS_CODEC_H264, cc.quality, cc.subsampling), RCANVAS_OK);
                rcanvas_canvas_get_size(c, &sz);
                mbs = (uint64_t)((sz.physical_width + 15) / 16) * ((sz.physical_height + 15) / 16);
                CHECK_MSG(mbs <= 36864 && mbs >= 36000, "5K, codec now H.264: %ux%u", sz.physical_width,
                          sz.physical_height);
                int n = 0;
                while (rcanvas_poll_event(c, &got) == 1)
                    if (got.type == RCANVAS_EVENT_RESIZE) {
                        n++;
                        CHECK(fabs(got.pixel_ratio - sz.pixel_ratio) < 1e-12 && got.pixel_ratio < 1);
                    }
                CHECK_EQ_INT(n, 1);
                CHECK_EQ_INT(rcanvas_canvas_set_codec(c, RCANVAS_CODEC_JPEG, cc.quality, cc.subsampling), RCANVAS_OK);
                rcanvas_canvas_get_size(c, &sz);
                CHECK_EQ_INT(sz.physical_width, 5120);
                CHECK_EQ_INT(sz.physical_height, 2880);
            }
        }
        rc_session_close(s);
        free_canvas(c);
    }
    /* a side under a pixel does not exempt the other: VP8's 16383 a side holds for a 16384 × 0.5 window */
    if (rc_codec_for(RCANVAS_CODEC_VP8)) {
        cc.codec = RCANVAS_CODEC_VP8;
        rcanvas_canvas *c = NULL;
        CHECK_EQ_INT(rc_canvas_create(&env, &cc, &c), RCANVAS_OK);
        if (c) {
            rc_session *s = open_session(c);
            rcanvas_event ev = {.type = RCANVAS_EVENT_RESIZE, .width = 16384, .height = 0.5, .pixel_ratio = 1};
            rc_session_push_event(s, &ev);
            rcanvas_size sz;
            rcanvas_canvas_get_size(c, &sz);
            CHECK_MSG(sz.physical_width <= 16383 && sz.physical_width >= 16300 && sz.physical_height == 1,
                      "16384 x 0.5 on VP8: %ux%u", sz.physical_width, sz.physical_height);
            rc_session_close(s);
            free_canvas(c);
        }
    }
}

static void test_bad_frames(void) {
    rcanvas_canvas *c = new_canvas("bad", RCANVAS_UPDATE_ONDEMAND, 60);
    rcanvas_frame f = frame64();
    CHECK_EQ_INT(rcanvas_present(NULL, &f), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_present(c, NULL), RCANVAS_EINVAL);
    f.pixels = NULL;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_ENULL);
    f = frame64();
    f.width = 0;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EFRAME_SIZE);
    f = frame64();
    f.height = 8193;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EFRAME_SIZE);
    f = frame64();
    f.pitch = 64 * 4 - 1;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EPITCH);
    f = frame64();
    f.format = (rcanvas_pixel_format)7;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EFORMAT);
    CHECK_EQ_INT(dbg(c).presented_seq, 0); /* nothing changed */
    f = frame64();
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK);
    CHECK_EQ_INT(dbg(c).presented_seq, 1);
    free_canvas(c);
}

static void test_flow_control(void) {
    rcanvas_canvas *c = new_canvas("flow", RCANVAS_UPDATE_FASTEST, 0);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0); /* no viewer: nothing due */
    rc_session *s1 = open_session(c);
    CHECK_EQ_INT(dbg(c).active_session, rc_session_id(s1)); /* the first one is active */
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    rcanvas_frame f = frame64();
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK); /* seq 1 */
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW); /* 1 in flight < 2 */
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK); /* seq 2 */
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);                /* 2 in flight: not due */
    CHECK_EQ_INT(rcanvas_wait(c, 30), 0);               /* still not, after waiting */
    wait_latest(c, 2);
    CHECK_EQ_INT(dbg(c).latest_seq, 2);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);                /* encoded but not acked still counts */
    CHECK_EQ_INT(next_seq(s1, NULL), 2);                /* newest wins: frame 1 was never given */
    CHECK_EQ_INT(next_seq(s1, NULL), 0);                /* nothing newer */
    CHECK_EQ_INT(rc_session_ack(s1, 2, 0, rc_now_us()), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW); /* acked → due */
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK);    /* seq 3 */
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK);    /* seq 4 */
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);
    wait_latest(c, 4);
    /* a second viewer joins: frames up to 4 are not its to ack, so it has room, and the app draws at the pace of
     * the fastest viewer, passive or not */
    rc_session *s2 = open_session(c);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    CHECK_EQ_INT(next_seq(s2, NULL), 4);
    CHECK_EQ_INT(rc_session_ack(s2, 4, 0, rc_now_us()), RCANVAS_OK);
    CHECK_EQ_INT(next_seq(s1, NULL), 4);
    /* s1 stops acking (a slow link): s2 keeps the app drawing, every frame, while s1's window stays full */
    for (uint32_t seq = 5; seq <= 12; seq++) {
        CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK);
        wait_latest(c, seq);
        CHECK_EQ_INT(next_seq(s2, NULL), seq);
        CHECK_EQ_INT(rc_session_ack(s2, seq, 0, rc_now_us()), RCANVAS_OK);
        CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    }
    CHECK_EQ_INT(next_seq(s1, NULL), 12); /* newest wins: 5..11 were never given to it */
    CHECK_EQ_INT(next_seq(s1, NULL), 0);  /* its window is full */
    CHECK_EQ_INT(rc_session_ack(s1, 99, 0, rc_now_us()), RCANVAS_EINVAL); /* never sent: refused, nothing changes */
    CHECK_EQ_INT(rc_session_ack(s1, 3, 0, rc_now_us()), RCANVAS_EINVAL);  /* skipped (newest wins): not in flight */
    CHECK_EQ_INT(dbg(c).active_acked, 2);
    CHECK_EQ_INT(rc_session_ack(s1, 4, 0, rc_now_us()), RCANVAS_OK);
    CHECK_EQ_INT(dbg(c).active_acked, 4);
    /* the active viewer leaves; s2 takes over */
    rc_session_close(s1);
    CHECK_EQ_INT(dbg(c).active_session, rc_session_id(s2));
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK); /* seq 13 */
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK); /* seq 14: s2 acked 12, 2 beyond it */
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);
    rc_session_close(s2);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0); /* no viewers */
    free_canvas(c);
}

/* The app was held (its viewer's window full) and then stopped calling rcanvas_wait (it presents on change, or it is
 * done): the still picture is refined all the same once the hold is stale (canvas_refine.c). Before, only wait
 * released the hold, and such an app never got its lossless frame (test_soak's last pause, under load). */
static void test_refine_after_hold(void) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = "held";
    cc.width = 64; /* the frame's size: a smaller bitmap would go out lossless, with no refinement to wait for */
    cc.height = 48;
    cc.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    cc.max_fps = 0;
    cc.refine_ms = 20;
    rcanvas_canvas *c = new_canvas_cfg(&cc);
    rc_session *s = open_session(c);
    rcanvas_frame f = frame64();
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK);
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK);
    wait_latest(c, 2);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0); /* 2 in flight, a window of 2: held (and the app waits no more) */
    uint32_t seq = next_seq(s, NULL);
    CHECK_EQ_INT(seq, 2);
    CHECK_EQ_INT(rc_session_ack(s, seq, 0, rc_now_us()), RCANVAS_OK);
    int refined = 0;
    int64_t t0 = rc_now_us();
    while (!refined && rc_now_us() - t0 < 5000000) { /* the tick, as the network thread runs it */
        rc_canvas_tick(c, rc_now_us());
        unsigned flags = 0;
        uint32_t q = next_seq(s, &flags);
        if (q && (flags & RC_PACKET_REFINE)) refined = 1;
        if (q) rc_session_ack(s, q, 0, rc_now_us());
        usleep(5000);
    }
    CHECK_MSG(refined, "no refinement of the still picture after the app stopped waiting while held");
    rc_session_close(s);
    free_canvas(c);
}

/* A viewer's window: max_in_flight packets before it acks; the lossless refinement of what it has; nothing while
 * it is invisible, and no draw while no viewer is visible. */
static void test_window(void) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = "window";
    cc.width = 64; /* the frames' own size: a frame of 1/4 of the canvas or less would go out lossless */
    cc.height = 48;
    cc.update_mode = RCANVAS_UPDATE_FASTEST;
    cc.refine_ms = 3600 * 1000; /* the test starts refinements itself, with rc_canvas_tick in the future */
    rcanvas_canvas *c = new_canvas_cfg(&cc);
    rc_session *s = open_session(c);
    rcanvas_frame f = frame64();
    unsigned flags = 0;
    for (uint32_t seq = 1; seq <= 3; seq++) {
        CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK);
        wait_latest(c, seq);
        CHECK_EQ_INT(next_seq(s, &flags), seq <= 2 ? seq : 0); /* window of 2 */
        CHECK(seq > 2 || (flags & RC_PACKET_KEYFRAME));
    }
    CHECK_EQ_INT(rc_session_ack(s, 1, 0, rc_now_us()), RCANVAS_OK);
    CHECK_EQ_INT(next_seq(s, NULL), 3);
    CHECK_EQ_INT(rc_session_ack(s, 2, 0, rc_now_us()), RCANVAS_OK);
    CHECK_EQ_INT(rc_session_ack(s, 3, 0, rc_now_us()), RCANVAS_OK);
    rc_session_state st;
    rc_session_get_state(s, &st);
    CHECK(st.active && !st.closing && !st.ready);
    CHECK_MSG(st.rtt_us > 0 && st.rtt_us < 10 * 1000 * 1000, "rtt %u us", st.rtt_us);
    CHECK(st.encoder == &rc_codec_jpeg);
    /* still: the refinement of frame 3 goes to the viewer that has it lossy, once */
    CHECK_EQ_INT(rc_canvas_tick(c, rc_now_us() + 7200LL * 1000000), -1);
    for (int i = 0; i < 2000 && !dbg(c).refined_seq; i++) usleep(1000);
    CHECK_EQ_INT(dbg(c).refined_seq, 3);
    CHECK_EQ_INT(next_seq(s, &flags), 3);
    CHECK((flags & RC_PACKET_REFINE) && (flags & RC_PACKET_LOSSLESS));
    CHECK_EQ_INT(next_seq(s, NULL), 0);
    CHECK_EQ_INT(rc_session_ack(s, 3, 0, rc_now_us()), RCANVAS_OK);
    /* a viewer that joins now gets the lossless frame straight away */
    rc_session *late = open_session(c);
    CHECK_EQ_INT(next_seq(late, &flags), 3);
    CHECK(flags & RC_PACKET_LOSSLESS);
    rc_session_close(late);
    /* invisible: no packet, and no draw due while nobody sees the canvas */
    rc_session_set_visible(s, 0);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK); /* seq 4 (the app may still present) */
    usleep(20 * 1000);
    CHECK_EQ_INT(dbg(c).latest_seq, 3); /* nobody sees it: not encoded */
    CHECK_EQ_INT(dbg(c).last_seq, 4);
    CHECK_EQ_INT(next_seq(s, NULL), 0);
    rc_session_set_visible(s, 1); /* back: the newest frame, encoded for it at the next tick */
    CHECK_EQ_INT(rc_canvas_tick(c, rc_now_us() + 1000000), -1);
    wait_latest(c, 4);
    CHECK_EQ_INT(next_seq(s, NULL), 4);
    rc_session_close(s);
    free_canvas(c);
}

/* An active viewer that holds a full window for RC_STALL_US while another watches loses the active role. */
static void test_stall(void) {
    rcanvas_canvas *c = new_canvas("stall", RCANVAS_UPDATE_FASTEST, 0);
    rc_session *s1 = open_session(c), *s2 = open_session(c);
    rcanvas_frame f = frame64();
    for (uint32_t seq = 1; seq <= 2; seq++) {
        CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK);
        wait_latest(c, seq);
        CHECK_EQ_INT(next_seq(s1, NULL), seq);
    }
    int64_t now = rc_now_us();
    int64_t d = rc_canvas_tick(c, now);
    CHECK_MSG(d > 0 && d <= 2000000, "next check in %lld us", (long long)d); /* full window: watched */
    CHECK_EQ_INT(dbg(c).active_session, rc_session_id(s1));
    rc_canvas_tick(c, now + 2100000); /* 2.1 s later, still nothing acked */
    CHECK_EQ_INT(dbg(c).active_session, rc_session_id(s2));
    rc_session_state st;
    rc_session_get_state(s1, &st);
    CHECK(!st.active);
    rc_session_get_state(s2, &st);
    CHECK(st.active);
    rc_session_close(s1);
    rc_session_close(s2);
    free_canvas(c);
}

/* A job that holds one encoder thread until released: makes "encoder busy" deterministic. */
typedef struct blocker {
    rc_job job;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, release, done;
} blocker;
static void block_run(rc_job *j, rc_worker *w) {
    (void)w;
    blocker *b = (blocker *)j;
    pthread_mutex_lock(&b->mu);
    b->running = 1;
    pthread_cond_broadcast(&b->cv);
    while (!b->release) pthread_cond_wait(&b->cv, &b->mu);
    b->done = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}
static void hold_pool(blocker b[2]) {
    for (int i = 0; i < 2; i++) {
        memset(&b[i], 0, sizeof b[i]);
        b[i].job.run = block_run;
        pthread_mutex_init(&b[i].mu, NULL);
        pthread_cond_init(&b[i].cv, NULL);
        rc_pool_submit(g_pool, &b[i].job);
    }
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&b[i].mu);
        while (!b[i].running) pthread_cond_wait(&b[i].cv, &b[i].mu);
        pthread_mutex_unlock(&b[i].mu);
    }
}
static void release_pool(blocker b[2]) {
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&b[i].mu);
        b[i].release = 1;
        pthread_cond_broadcast(&b[i].cv);
        while (!b[i].done) pthread_cond_wait(&b[i].cv, &b[i].mu);
        pthread_mutex_unlock(&b[i].mu);
        pthread_mutex_destroy(&b[i].mu);
        pthread_cond_destroy(&b[i].cv);
    }
}

static void test_newest_wins(void) {
    rcanvas_canvas *c = new_canvas("newest", RCANVAS_UPDATE_MANUAL, 0);
    rc_session *s = open_session(c);
    blocker b[2];
    hold_pool(b); /* occupy both encoder threads */
    rcanvas_frame f = frame64();
    memset(g_px, 10, sizeof g_px);
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK); /* seq 1: encoding (queued behind the blockers) */
    memset(g_px, 20, sizeof g_px);
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK); /* seq 2: pending */
    memset(g_px, 30, sizeof g_px);
    CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK); /* seq 3: replaces 2 */
    rc_canvas_debug d = dbg(c);
    CHECK_EQ_INT(d.encoding_seq, 1);
    CHECK_EQ_INT(d.pending_seq, 3);
    CHECK_EQ_INT(d.first_pixel[0], 30);         /* the app's buffer was copied at present time */
    CHECK_EQ_INT(d.free_slots, d.slots - 2);    /* frame 2's buffer went back to the pool */
    release_pool(b);
    wait_latest(c, 3);
    d = dbg(c);
    CHECK_EQ_INT(d.latest_seq, 3);
    CHECK_EQ_INT(d.last_seq, 3);
    CHECK(d.encoding_seq == 0 && d.pending_seq == 0);
    CHECK_EQ_INT(next_seq(s, NULL), 3);
    rc_session_close(s);
    free_canvas(c);
}

static int refine_running(rcanvas_canvas *c) { return dbg(c).refine_running; }

static int g_released;
static void count_release(void *arg) {
    (void)arg;
    g_released++;
}

/* A lossless refinement still running while a newer frame becomes `last` and is due for refinement
 * itself. A second refinement must not start over the first (it overwrote refine_src, so the older frame's
 * buffer was never released; after a few rounds every present found all slots taken and the stream stopped).
 * Each round: frame N (CPU encoded) → its refinement started and held behind the blocked encoder threads →
 * frame N+1 arrives already encoded (as from the GPU encoder) and becomes `last` → the refine check, due for
 * N+1 → the threads go. Afterwards only `last` holds a slot. */
static void test_refine_overlap(void) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = "refine";
    cc.width = 64; /* the frames' own size: a frame of 1/4 of the canvas or less would go out lossless */
    cc.height = 48;
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    cc.refine_ms = 3600 * 1000; /* only the test's own ticks (two hours ahead) start refinements */
    rcanvas_canvas *c = new_canvas_cfg(&cc);
    rc_session *s = open_session(c);
    rcanvas_frame f = frame64();
    static const uint8_t jpeg[] = {0xFF, 0xD8, 0xFF, 0xD9}; /* never decoded here */
    rc_image ext = {.pixels = g_px, .width = 64, .height = 48, .pitch = 64 * 4, .format = RCANVAS_FORMAT_RGBA8};
    g_released = 0;
    for (int round = 0; round < 2 * 5; round++) {
        uint32_t seq = 2 * (uint32_t)round + 1;
        memset(g_px, 40 + round, sizeof g_px);
        int r = present_changed(c, &f);
        CHECK_MSG(r == RCANVAS_OK, "round %d: present: %s", round, rcanvas_strerror(r));
        if (r != RCANVAS_OK) break;
        wait_latest(c, seq);
        blocker b[2];
        hold_pool(b);
        CHECK_EQ_INT(rc_canvas_tick(c, rc_now_us() + 7200LL * 1000000), -1); /* refinement of seq, queued */
        CHECK(refine_running(c));
        r = rc_canvas_present_external_encoded(c, &ext, count_release, NULL, &rc_codec_jpeg, jpeg, sizeof jpeg);
        CHECK_MSG(r == RCANVAS_OK, "round %d: present encoded: %s", round, rcanvas_strerror(r));
        CHECK_EQ_INT(dbg(c).latest_seq, seq + 1);
        /* due for seq + 1 now, but one refinement runs: none may start */
        rc_canvas_tick(c, rc_now_us() + 7200LL * 1000000);
        release_pool(b);
        for (int i = 0; i < 2000 && refine_running(c); i++) usleep(1000);
        CHECK_EQ_INT(refine_running(c), 0);
        rc_canvas_debug d = dbg(c);
        CHECK_EQ_INT(d.free_slots, d.slots - 1); /* only `last` */
        CHECK_EQ_INT(d.refined_seq, 0);           /* the one made was for an older frame: dropped */
    }
    CHECK_EQ_INT(g_released, 2 * 5 - 1); /* every external frame but the last was let go */
    /* the last frame, refined to the end: the refinement is kept */
    CHECK_EQ_INT(rc_canvas_tick(c, rc_now_us() + 7200LL * 1000000), -1);
    for (int i = 0; i < 2000 && refine_running(c); i++) usleep(1000);
    CHECK_EQ_INT(dbg(c).refined_seq, dbg(c).presented_seq);
    rc_session_close(s);
    free_canvas(c);
    CHECK_EQ_INT(g_released, 2 * 5); /* and the last one at destroy */
}

/* Visibility: no draw while every viewer is hidden; a hidden active viewer does not starve a visible one. */
static void test_visibility(void) {
    rcanvas_canvas *c = new_canvas("visibility", RCANVAS_UPDATE_ONDEMAND, 0);
    rc_session *s1 = open_session(c);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    rc_session_set_visible(s1, 0); /* the only viewer is hidden: a requested draw waits */
    rcanvas_request_draw(c);
    CHECK_EQ_INT(rcanvas_wait(c, 20), 0);
    rc_session *s2 = open_session(c); /* a visible one joins: the draw is due */
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    rc_session_set_visible(s2, 0); /* both hidden */
    rcanvas_request_draw(c);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);
    rc_session_set_visible(s2, 1);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    /* the active s1 is hidden and acks nothing; s2 gets and acks frames, and draws follow its acks */
    CHECK_EQ_INT(rcanvas_canvas_set_option(c, RCANVAS_OPT_UPDATE_MODE, RCANVAS_UPDATE_FASTEST), RCANVAS_OK);
    rcanvas_frame f = frame64();
    int drawn = 0;
    for (uint32_t seq = 1; seq <= 6; seq++) {
        if (rcanvas_wait(c, 1000) & RCANVAS_WAKE_DRAW) drawn++;
        CHECK_EQ_INT(present_changed(c, &f), RCANVAS_OK);
        wait_latest(c, seq);
        CHECK_EQ_INT(next_seq(s1, NULL), 0); /* hidden: nothing */
        CHECK_EQ_INT(next_seq(s2, NULL), seq);
        CHECK_EQ_INT(rc_session_ack(s2, seq, 0, rc_now_us()), RCANVAS_OK);
    }
    CHECK_EQ_INT(drawn, 6);
    CHECK_EQ_INT(dbg(c).active_session, rc_session_id(s1)); /* it keeps the role */
    rc_session_close(s2);
    rc_session_close(s1);
    free_canvas(c);
}

static void test_modes(void) {
    rcanvas_canvas *c = new_canvas("ondemand", RCANVAS_UPDATE_ONDEMAND, 20);
    rc_session *s = open_session(c);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW); /* a new viewer asks for a draw */
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);                 /* consumed; no request */
    rcanvas_request_draw(c);
    /* max_fps 20: the next draw is due 50 ms after the previous one, not before */
    int64_t t0 = rc_now_us();
    CHECK_EQ_INT(rcanvas_wait(c, 1000), RCANVAS_WAKE_DRAW);
    CHECK_MSG(rc_now_us() - t0 >= 40000, "draw came after %lld us, max_fps 20 allows one per 50 ms",
              (long long)(rc_now_us() - t0));
    rc_session_close(s);
    free_canvas(c);

    c = new_canvas("manual", RCANVAS_UPDATE_MANUAL, 60);
    s = open_session(c);
    rcanvas_request_draw(c);
    CHECK_EQ_INT(rcanvas_wait(c, 20), 0);
    /* the mode is an option: switched to ondemand, the pending request makes a draw due */
    CHECK_EQ_INT(rcanvas_canvas_set_option(c, RCANVAS_OPT_UPDATE_MODE, RCANVAS_UPDATE_ONDEMAND), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    rc_session_close(s);
    free_canvas(c);
}

static void test_events(void) {
    rcanvas_canvas *c = new_canvas("events", RCANVAS_UPDATE_MANUAL, 60);
    rc_session *s1 = open_session(c), *s2 = open_session(c);
    rcanvas_event e = {.type = RCANVAS_EVENT_POINTER_MOVE, .viewer_id = 1, .buttons = 2};
    for (int i = 0; i < 5; i++) {
        e.x = i;
        e.y = 10 * i;
        push(s1, s2, &e);
    }
    e.buttons = 0; /* other buttons: not merged with the previous moves */
    e.x = 100;
    push(s1, s2, &e);
    rcanvas_event w = {.type = RCANVAS_EVENT_WHEEL, .viewer_id = 1, .dx = 1, .dy = -3};
    push(s1, s2, &w);
    push(s1, s2, &w);
    w.modifiers = RCANVAS_MOD_SHIFT;
    push(s1, s2, &w);
    rcanvas_event k = {.type = RCANVAS_EVENT_KEY_DOWN, .viewer_id = 2};
    strcpy(k.key, "p");
    push(s1, s2, &k);
    rcanvas_event r = {.type = RCANVAS_EVENT_RESIZE, .viewer_id = 2, .width = 100, .height = 100, .pixel_ratio = 1};
    push(s1, s2, &r); /* passive viewer: ignored */
    r.viewer_id = 1;
    r.width = 300;
    push(s1, s2, &r);
    r.width = 401;
    r.height = 301;
    r.pixel_ratio = 1.5;
    push(s1, s2, &r); /* merged with the previous resize */

    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_EVENTS);
    rcanvas_event out;
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_POINTER_MOVE);
    CHECK_NEAR(out.x, 4, 0); /* newest position of the merged run */
    CHECK_NEAR(out.y, 40, 0);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_POINTER_MOVE);
    CHECK_NEAR(out.x, 100, 0);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_WHEEL);
    CHECK_NEAR(out.dx, 2, 0); /* summed */
    CHECK_NEAR(out.dy, -6, 0);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_WHEEL);
    CHECK_EQ_INT(out.modifiers, RCANVAS_MOD_SHIFT);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_KEY_DOWN);
    CHECK(!strcmp(out.key, "p"));
    CHECK_EQ_INT(out.viewer_id, 2);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_RESIZE);
    CHECK_NEAR(out.width, 401, 0);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 0);
    rcanvas_size sz;
    rcanvas_canvas_get_size(c, &sz);
    CHECK_NEAR(sz.width, 401, 0);
    CHECK_NEAR(sz.height, 301, 0);
    CHECK_EQ_INT(sz.physical_width, 602);  /* round(401 × 1.5) */
    CHECK_EQ_INT(sz.physical_height, 452); /* round(451.5) */

    /* a full queue drops the oldest */
    rcanvas_event kk = {.type = RCANVAS_EVENT_KEY_DOWN, .viewer_id = 1};
    for (int i = 0; i < 1024 + 5; i++) { /* the queue holds 1024 */
        snprintf(kk.key, sizeof kk.key, "%d", i);
        push(s1, s2, &kk);
    }
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK(!strcmp(out.key, "5"));
    rc_session_close(s2);
    rc_session_close(s1);
    free_canvas(c);
}

/* The newest library log line, for checks on what a refusal says. */
static char g_last_log[512];
static void capture_log(void *user, rcanvas_log_level level, const char *msg) {
    (void)user, (void)level;
    snprintf(g_last_log, sizeof g_last_log, "%s", msg);
}

static void test_server(rcanvas_server *s) {
    const char *tok = rcanvas_server_token(s);
    CHECK_EQ_INT(strlen(tok), 32);
    int port = rcanvas_server_port(s);
    CHECK(port > 0 && port < 65536);
    char url[256];
    CHECK(rcanvas_server_url(s, NULL, url, sizeof url) > 0);
    char expect[256];
    snprintf(expect, sizeof expect, "http://127.0.0.1:%d/?token=%s", port, tok);
    CHECK_MSG(!strcmp(url, expect), "url %s", url);
    CHECK(rcanvas_server_url(s, "plot", url, sizeof url) > 0);
    CHECK(strstr(url, "/c/plot?token=") != NULL);
    CHECK_EQ_INT(rcanvas_server_url(s, NULL, url, 10), RCANVAS_EINVAL);

    rcanvas_server_config cfg;
    rcanvas_server_config_init(&cfg);
    cfg.port = port; /* in use */
    cfg.log = capture_log;
    rcanvas_server *s2 = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &s2), RCANVAS_EADDRINUSE);
    CHECK(s2 == NULL);
    CHECK_MSG(strstr(g_last_log, "address already in use") != NULL, "log: %s", g_last_log);
    CHECK(!strcmp(rcanvas_strerror(RCANVAS_EADDRINUSE), "address already in use"));
    cfg.port = 0;
    cfg.token = "tiny42";
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &s2), RCANVAS_EINVAL);
    CHECK_MSG(strstr(g_last_log, "token refused") && strstr(g_last_log, "22 to 128 characters of [A-Za-z0-9_-]") &&
                  !strstr(g_last_log, "tiny42"),
              "log: %s", g_last_log);
    cfg.token = "bad token with spaces";
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &s2), RCANVAS_EINVAL);
    cfg.token = NULL;
    cfg.log = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &s2), RCANVAS_OK);
    CHECK(strcmp(rcanvas_server_token(s2), tok) != 0); /* random per server */
    rcanvas_server_free(s2);

    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    rcanvas_canvas *c1 = NULL, *c2 = NULL;
    cc.name = "dup";
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c1), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c2), RCANVAS_EEXIST);
    cc.name = "bad/name";
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c2), RCANVAS_ENAME);
    cc.name = "ok";
    cc.quality = 0;
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c2), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_set_codec(c1, RCANVAS_CODEC_PNG, 50, RCANVAS_SUBSAMP_444), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_set_codec(c1, RCANVAS_CODEC_JPEG, 101, RCANVAS_SUBSAMP_444), RCANVAS_EINVAL);
    rcanvas_canvas_free(c1);
    CHECK(!strcmp(rcanvas_strerror(RCANVAS_EPITCH), "row pitch is smaller than width times bytes per pixel"));
    CHECK(!strcmp(rcanvas_strerror(12345), "unknown error"));
    CHECK(!strcmp(rcanvas_err_name(RCANVAS_EBUSY), "RCANVAS_EBUSY"));
    CHECK(!strcmp(rcanvas_err_name(RCANVAS_OK), "RCANVAS_OK"));
    CHECK(!strcmp(rcanvas_err_name(-999), "RCANVAS_UNKNOWN"));
    /* options: set, read back, refuse out of range without changing anything */
    rcanvas_canvas *c3 = NULL;
    cc.name = "opts";
    cc.quality = 85;
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c3), RCANVAS_OK);
    int v = 0;
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_QUALITY, 70), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c3, RCANVAS_OPT_QUALITY, &v), RCANVAS_OK);
    CHECK_EQ_INT(v, 70);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_QUALITY, 101), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c3, RCANVAS_OPT_QUALITY, &v), RCANVAS_OK);
    CHECK_EQ_INT(v, 70);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_CODEC, RCANVAS_CODEC_PNG), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c3, RCANVAS_OPT_CODEC, &v), RCANVAS_OK);
    CHECK_EQ_INT(v, RCANVAS_CODEC_PNG);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_CODEC, 77), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_SUBSAMPLING, 3), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_SUBSAMPLING, RCANVAS_SUBSAMP_AUTO), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_MAX_IN_FLIGHT, 17), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_MAX_FPS, 30), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c3, RCANVAS_OPT_MAX_FPS, &v), RCANVAS_OK);
    CHECK_EQ_INT(v, 30);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, (rcanvas_option)99, 1), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_REFINE_CODEC, RCANVAS_CODEC_JPEG), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_REFINE_CODEC, RCANVAS_CODEC_WEBP),
                 rc_codec_by_name("webp-lossless") ? RCANVAS_OK : RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c3, RCANVAS_OPT_REFINE_CODEC, &v), RCANVAS_OK);
    CHECK_EQ_INT(v, rc_codec_by_name("webp-lossless") ? RCANVAS_CODEC_WEBP : RCANVAS_CODEC_PNG);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_BITRATE_KBPS, 99), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c3, RCANVAS_OPT_BITRATE_KBPS, 2500), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c3, RCANVAS_OPT_BITRATE_KBPS, &v), RCANVAS_OK);
    CHECK_EQ_INT(v, 2500);
    CHECK_EQ_INT(rcanvas_canvas_set_option(NULL, RCANVAS_OPT_QUALITY, 50), RCANVAS_EINVAL);
    rcanvas_canvas_free(c3);
}

/* rcanvas_server_free with a canvas still attached and a thread blocked in rcanvas_wait: it returns ECLOSED. */
static void *waiter(void *arg) {
    int *r = arg;
    extern rcanvas_canvas *g_wait_canvas;
    *r = rcanvas_wait(g_wait_canvas, -1);
    return NULL;
}
rcanvas_canvas *g_wait_canvas;

static void test_shutdown(void) {
    rcanvas_server *s = new_server(0);
    if (!s) return;
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &g_wait_canvas), RCANVAS_OK);
    if (!g_wait_canvas) return;
    rcanvas_frame f = frame64();
    rcanvas_present(g_wait_canvas, &f); /* a frame in flight at shutdown */
    int r = 1;
    pthread_t th;
    pthread_create(&th, NULL, waiter, &r);
    usleep(20000);
    rc_canvas_close(g_wait_canvas); /* what rcanvas_server_free does first */
    pthread_join(th, NULL);
    CHECK_EQ_INT(r, RCANVAS_ECLOSED);
    CHECK_EQ_INT(rcanvas_present(g_wait_canvas, &f), RCANVAS_ECLOSED);
    rcanvas_server_free(s); /* frees the canvas; ASan checks nothing leaks */
}

int main(void) {
    if (rc_pool_new(2, &g_pool)) {
        CHECK(!"pool");
        TEST_MAIN_END();
    }
    rcanvas_server *s = new_server(0);
    if (s) {
        test_server(s);
        rcanvas_server_free(s);
    }
    test_bad_frames();
    test_codec_frame_limits();
    test_resize_within_codec();
    test_flow_control();
    test_refine_after_hold();
    test_window();
    test_stall();
    test_newest_wins();
    test_refine_overlap();
    test_modes();
    test_visibility();
    test_events();
    test_shutdown();
    rc_pool_free(g_pool);
    CHECK_MSG(atomic_load(&g_notified) > 0, "the canvases never notified");
    TEST_MAIN_END();
}
