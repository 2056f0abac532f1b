/* SPDX-License-Identifier: MIT */
/*
 * tier_kit.h — what the tier tests (test_tiers, test_tier_rules, test_encoded, test_small) share: a canvas made
 * for them, a moving test frame presented at any size, the canvas's debug state, and viewers driven as the
 * transport drives sessions (next, open with caps, tick until something comes).
 */
#ifndef RC_TIER_KIT_H
#define RC_TIER_KIT_H

#include <unistd.h>

#include "stream/canvas.h"
#include "stream/session.h"
#include "test.h"

static inline void kit_no_notify(void *u) { (void)u; }

/* A canvas on pool, logging to log: codec, updates on the app's request, refine_ms, and w × h and max_in_flight
 * where nonzero (else the defaults); made, or the test fails. */
static inline rcanvas_canvas *kit_canvas(rc_pool *pool, const rc_logger *log, rcanvas_codec codec, uint32_t w,
                                         uint32_t h, int refine_ms, int max_in_flight) {
    rc_canvas_env env = {.pool = pool, .log = log, .max_frame_dim = 8192, .notify = kit_no_notify};
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.codec = codec;
    if (w) cc.width = w;
    if (h) cc.height = h;
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    cc.refine_ms = refine_ms;
    if (max_in_flight) cc.max_in_flight = max_in_flight;
    rcanvas_canvas *c = NULL;
    CHECK_EQ_INT(rc_canvas_create(&env, &cc, &c), RCANVAS_OK);
    return c;
}

/* Frame t of a moving gradient with a moving bar (every frame differs) into px (w × h RGBA), presented. */
static inline int kit_present(rcanvas_canvas *c, uint8_t *px, int t, uint32_t w, uint32_t h) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            p[0] = (uint8_t)(x + 3 * t);
            p[1] = (uint8_t)(y * 2);
            p[2] = ((x + 5 * t) % 64) < 16 ? 230 : 40;
            p[3] = 255;
        }
    rcanvas_frame f = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, 0};
    return rcanvas_present(c, &f);
}

static inline rc_canvas_debug dbg(rcanvas_canvas *c) {
    rc_canvas_debug d;
    rc_canvas_get_debug(c, &d);
    return d;
}

static inline void wait_latest(rcanvas_canvas *c, uint32_t seq) {
    for (int i = 0; i < 5000 && dbg(c).latest_seq < seq; i++) usleep(1000);
}

typedef struct got {
    uint32_t seq, id, depends_on;
    unsigned flags;
    const rc_codec_type *codec;
    size_t bytes;
} got;

/* What the transport would send s now; 0 if nothing. */
static inline int next(rc_session *s, got *g) {
    rc_packet *pk = NULL;
    if (!rc_session_next(s, rc_now_us(), &pk, NULL)) return 0;
    *g = (got){pk->seq, pk->id, pk->depends_on, pk->flags, pk->codec, pk->total_bytes};
    rc_packet_unref(pk);
    return 1;
}

/* A viewer that decodes `codecs` (bits 1 << codec id; 0 = a protocol-1 viewer). */
static inline rc_session *open_with(rcanvas_canvas *c, unsigned codecs, int protocol) {
    rc_session_caps caps = {.codecs = codecs, .protocol = protocol};
    rc_session *s = NULL;
    CHECK_EQ_INT(rc_session_open(c, codecs ? &caps : NULL, &s), RCANVAS_OK);
    return s;
}

/* Ticks the canvas (as the network thread does) until s gets a packet, at most ms. */
static inline int next_ticking(rcanvas_canvas *c, rc_session *s, got *g, int ms) {
    for (int i = 0; i < ms; i++) {
        if (next(s, g)) return 1;
        rc_canvas_tick(c, rc_now_us());
        usleep(1000);
    }
    return 0;
}

#endif
