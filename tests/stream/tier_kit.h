/* SPDX-License-Identifier: MIT */
/*
 * tier_kit.h — what the tier tests (test_tiers, test_tier_rules) share: a moving test frame presented at any size,
 * the canvas's debug state, and viewers driven as the transport drives sessions (next, open with caps, tick until
 * something comes).
 */
#ifndef RC_TIER_KIT_H
#define RC_TIER_KIT_H

#include <unistd.h>

#include "stream/canvas.h"
#include "stream/session.h"
#include "test.h"

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
