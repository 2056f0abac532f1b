/* SPDX-License-Identifier: MIT */
/*
 * test_h264_gpu_gate.c — the gate of the GPU encoder's costly tools (the deblocking filter, intra macroblocks in P
 * pictures, the adopt rounds: src/codec/gpu/h264_gpu_gate.h) on synthetic measurements,
 * deterministic and with no GPU: a device whose pictures never wait keeps them on; one picture that waited
 * behind another encoder's work does not turn it off, two in a row do, for 2 s; the spell doubles while the device
 * stays contended, up to 32 s, and falls back to 2 s after 10 s of calm (not after less); waits under 2 ms or under
 * the picture's own GPU time are not contention; pictures without timestamps teach nothing. test_h264_gpu checks
 * that the encoder reports the filter per picture, and bench-h264-gpu's density run the gate on a real shared
 * device.
 */
#include "codec/gpu/h264_gpu_gate.h"
#include "test.h"

#define S 1000000 /* µs a second */

/* a picture coded at t (µs): whether it filtered; when it did, what it measured */
static int picture(rc_h264_gate *g, int64_t t, double gpu_ms, double wait_ms) {
    int on = rc_h264_gate_on(g, t);
    if (on) rc_h264_gate_learn(g, t, gpu_ms, wait_ms);
    return on;
}

/* the time (µs after start) the filter comes back after the device turns contended at `start` */
static int64_t off_spell(rc_h264_gate *g, int64_t start) {
    CHECK_EQ_INT(picture(g, start, 1.5, 30), 1);         /* first wait: still on */
    CHECK_EQ_INT(picture(g, start + 1000, 1.5, 30), 1); /* second: off from here */
    for (int64_t t = start + 2000;; t += 16667) {
        if (rc_h264_gate_on(g, t)) return t - (start + 1000);
        if (t - start > 60 * (int64_t)S) return -1;
    }
}

int main(void) {
    rc_h264_gate g = {0};
    /* calm: 10 minutes at 60 fps of pictures that waited no longer than their own GPU time */
    int off = 0;
    for (int i = 0; i < 36000; i++) off += !picture(&g, (int64_t)i * 16667, 1.5, 1.5 + (i % 7) * 0.2);
    CHECK_EQ_INT(off, 0);
    /* short waits, or waits below the picture's own GPU time (a 4K picture), are not contention */
    int64_t t0 = 700 * (int64_t)S;
    for (int i = 0; i < 100; i++) off += !picture(&g, t0 + (int64_t)i * 16667, 0.4, 2.3);
    for (int i = 0; i < 100; i++) off += !picture(&g, t0 + 2 * S + (int64_t)i * 16667, 8.0, 15.0);
    CHECK_EQ_INT(off, 0);
    /* one picture behind another encoder's, then calm: still on */
    CHECK_EQ_INT(picture(&g, t0 + 5 * S, 1.5, 20), 1);
    CHECK_EQ_INT(picture(&g, t0 + 5 * S + 16667, 1.5, 1.6), 1);
    CHECK_EQ_INT(picture(&g, t0 + 5 * S + 33333, 1.5, 20), 1);
    CHECK_EQ_INT(picture(&g, t0 + 5 * S + 50000, 1.5, 1.6), 1);
    /* contended: off for 2 s, then 4, 8, 16, 32, 32 while every probe finds it contended */
    int64_t t = t0 + 10 * S;
    const int64_t want[] = {2, 4, 8, 16, 32, 32};
    for (int k = 0; k < 6; k++) {
        int64_t spell = off_spell(&g, t);
        CHECK_MSG(spell >= want[k] * S && spell < want[k] * S + 20000, "spell %d: %lld µs, want %lld s", k,
                  (long long)spell, (long long)want[k]);
        t += 1000 + spell;
    }
    /* calm for 10 s after a probe: the next spell is 2 s again */
    for (int i = 0; i <= 601; i++) CHECK_EQ_INT(picture(&g, t + (int64_t)i * 16667, 1.5, 1.6), 1);
    int64_t spell = off_spell(&g, t + 11 * S);
    CHECK_MSG(spell >= 2 * S && spell < 2 * S + 20000, "after calm: %lld µs", (long long)spell);
    /* a calm picture or two after a probe, contended again within 10 s: the spell keeps doubling */
    t += 11 * S + 1000 + spell; /* the probe */
    CHECK_EQ_INT(picture(&g, t, 1.5, 1.6), 1);
    CHECK_EQ_INT(picture(&g, t + 16667, 1.5, 1.6), 1);
    spell = off_spell(&g, t + 5 * S);
    CHECK_MSG(spell >= 4 * S && spell < 4 * S + 20000, "contended 5 s after a probe: %lld µs, want 4 s", (long long)spell);
    /* no timestamps (gpu_ms 0): nothing learnt, however long the wait */
    rc_h264_gate n = {0};
    for (int i = 0; i < 100; i++) CHECK_EQ_INT(picture(&n, (int64_t)i * 16667, 0, 100), 1);
    TEST_MAIN_END();
}
