/* SPDX-License-Identifier: MIT */
/*
 * test_cpu_steer.c — the steering by the CPUs (src/stream/rate.h, rc_steer_cpu and rc_link's cpu_bound) on
 * synthetic inputs, deterministic: which of the link, the server's encoder and the viewer's decoder limits the
 * frame rate; a saturated coder gets smaller frames (never a lower frame rate); the size comes back only after it
 * fitted for a while; an app that draws slowly by itself, unmeasured costs and a link-limited viewer keep today's
 * steering; a smaller size that buys nothing is left at once; and a delay trend that the CPUs explain is not taken
 * for a queue, while a real one still is.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stream/rate.h"
#include "test.h"

#define PX (1920ull * 1080ull)

/* costs of a coder measured at one size only: its full-size figure, as a 1080p frame's */
static rc_cost full(double us) {
    rc_cost c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < RC_CPU_SAMPLES && us > 0; i++) rc_cost_sample(&c, 1, us);
    return c;
}

/* The cost per size: measured where measured, else from the nearest size measured, by area; a size measured
 * keeps its own figure; the larger sizes' figures fade while a smaller size is used. */
static void check_cost(void) {
    rc_cost c;
    memset(&c, 0, sizeof c);
    CHECK(rc_cost_predict(&c, 1) == 0 && rc_cost_predict(NULL, 1) == 0);
    rc_cost_sample(&c, 1, 80000);
    CHECK_MSG(rc_cost_predict(&c, 1) == 0, "one frame (an encoder being made, a spike) counted");
    rc_cost_sample(&c, 1, 80000);
    rc_cost_sample(&c, 1, 80000);
    CHECK(fabs(rc_cost_predict(&c, 2) - 20000) < 1 && fabs(rc_cost_predict(&c, 4) - 5000) < 1);
    for (int i = 0; i < RC_CPU_SAMPLES; i++) rc_cost_sample(&c, 4, 9800); /* a 1/4 frame has fixed costs too */
    CHECK(fabs(rc_cost_predict(&c, 4) - 9800) < 1);
    CHECK_MSG(rc_cost_predict(&c, 2) > 19000 && rc_cost_predict(&c, 2) < 20000, "1/2: the lowest of full size's /4 and 1/4's x4: %.0f",
              rc_cost_predict(&c, 2));
    CHECK_MSG(rc_cost_predict(&c, 1) < 80000 * 0.98 && rc_cost_predict(&c, 1) > 80000 * 0.96, "full size faded: %.0f",
              rc_cost_predict(&c, 1));
    for (int i = 0; i < 200; i++) rc_cost_sample(&c, 4, 9800);
    CHECK_MSG(rc_cost_predict(&c, 1) < 80000 * 0.14, "full size after 200 frames at 1/4: %.0f", rc_cost_predict(&c, 1));
    rc_cost_sample(&c, 3, 1000); /* not a divisor: ignored */
    rc_cost_sample(&c, 2, -5);
    CHECK(c.at[1] == 0);
}

/* Which coder limits, and what size it gets. The goal is 60 fps, aimed at RC_CPU_FPS_MAX (30): 33.3 ms a frame,
 * of which RC_CPU_BUSY (80 %) is 26.7 ms. */
static void check_limits(void) {
    rc_steer s;
    rc_cost e, d;
    rc_steer_init(&s, 85, 50e6);
    rc_steer_cpu(&s, 85, 60, NULL, NULL, RC_STEER_SIZE_UP_CALLS, PX); /* nothing measured (an older client, no encode yet): as before */
    CHECK(s.cpu_div == 1 && s.limit == RC_LIMIT_NONE);
    e = full(10000), d = full(5000);
    rc_steer_cpu(&s, 85, 60, &e, &d, RC_STEER_SIZE_UP_CALLS, PX); /* both fast: the top */
    CHECK(s.cpu_div == 1 && s.limit == RC_LIMIT_NONE);

    e = full(80000);
    rc_steer_cpu(&s, 85, 60, &e, &d, RC_STEER_SIZE_UP_CALLS, PX); /* the encoder: 80 ms a full frame, 20 at half the size */
    CHECK_MSG(s.cpu_div == 2 && s.limit == RC_LIMIT_ENCODER, "encoder 80 ms: div %d limit %s", s.cpu_div,
              rc_limit_name(s.limit));

    rc_steer_init(&s, 85, 50e6);
    e = full(20000), d = full(150000);
    rc_steer_cpu(&s, 85, 60, &e, &d, RC_STEER_SIZE_UP_CALLS, PX); /* the decoder: 150 ms a full frame, 37.5 at 1/2, 9.4 at 1/4 */
    CHECK_MSG(s.cpu_div == 4 && s.limit == RC_LIMIT_DECODER, "decoder 150 ms: div %d limit %s", s.cpu_div,
              rc_limit_name(s.limit));
    rc_steer_cpu(&s, 85, 60, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX); /* that viewer left: the encoder's 20 ms fit, but not at once */
    CHECK(s.cpu_div == 4);

    rc_steer_init(&s, 85, 50e6);
    e = full(80000);
    rc_steer_cpu(&s, 85, 10, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX); /* an app drawing 10 fps by itself: 80 ms of its 100 is no limit */
    CHECK_MSG(s.cpu_div == 1 && s.limit == RC_LIMIT_NONE, "10 fps app: div %d", s.cpu_div);

    rc_steer_init(&s, 85, 50e6);
    e = full(25000);
    rc_steer_cpu(&s, 85, 60, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX); /* 25 ms: 30 fps fit (RC_CPU_FPS_MAX), no shrinking for 60 */
    CHECK_MSG(s.cpu_div == 1, "25 ms a frame at 60 fps: div %d", s.cpu_div);

    rc_steer_init(&s, 85, 50e6);
    s.fps_cap = 15; /* a link-limited tier (the link's steering capped it): reported as the link's */
    e = full(10000), d = full(10000);
    rc_steer_cpu(&s, 85, 60, &e, &d, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK(s.cpu_div == 1 && s.limit == RC_LIMIT_LINK);
    s.fps_cap = 0;
    s.quality = 60;
    rc_steer_cpu(&s, 85, 60, &e, &d, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK(s.limit == RC_LIMIT_LINK);
    rc_steer_cpu(&s, 0, 60, &e, &d, RC_STEER_SIZE_UP_CALLS, PX); /* video reports no quality */
    CHECK(s.limit == RC_LIMIT_NONE);
}

/* The size comes back only once the larger one would take at most RC_CPU_UP (50 %) of a frame's time, on
 * RC_STEER_SIZE_UP_CALLS calls in a row; a smaller one is taken at once. A size measured slow is tried again only
 * after its figure faded (RC_CPU_FORGET) and then fitted for a while. */
static void check_hysteresis(void) {
    rc_steer s;
    rc_steer_init(&s, 85, 50e6);
    rc_cost e = full(80000);
    rc_steer_cpu(&s, 85, 30, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK(s.cpu_div == 2);
    int calls = 0;
    while (s.cpu_div == 2 && calls < 1000) { /* 1/2 frames take 5 ms: the full size's 80 ms fades */
        rc_cost_sample(&e, 2, 5000);
        rc_steer_cpu(&s, 85, 30, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX);
        calls++;
    }
    /* 80 ms × 0.99^n ≤ 16.7 ms from n = 157, then 30 calls of it */
    CHECK_MSG(s.cpu_div == 1 && calls >= 150 && calls <= 200, "full size tried again after %d frames", calls);
    rc_cost_sample(&e, 1, 80000); /* still slow: back down at once */
    rc_steer_cpu(&s, 85, 30, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK_MSG(s.cpu_div == 2, "slow again at full size: div %d", s.cpu_div);

    /* 20 ms at full size (60 % of the frame's time) fits, but not with the margin: it stays at 1/2 */
    rc_steer_init(&s, 85, 50e6);
    e = full(80000);
    rc_steer_cpu(&s, 85, 30, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX);
    for (int i = 0; i < 100; i++) {
        rc_cost_sample(&e, 1, 20000);
        rc_cost_sample(&e, 2, 5000);
        e.at[0] = 20000; /* held there: no fading */
        rc_steer_cpu(&s, 85, 30, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX);
    }
    CHECK_MSG(s.cpu_div == 2, "20 ms a full frame took the size back: div %d", s.cpu_div);
    e.at[0] = 15000;
    calls = 0;
    while (s.cpu_div == 2 && calls < 100) {
        e.at[0] = 15000;
        rc_steer_cpu(&s, 85, 30, &e, NULL, RC_STEER_SIZE_UP_CALLS, PX);
        calls++;
    }
    CHECK_MSG(s.cpu_div == 1 && calls == RC_STEER_SIZE_UP_CALLS, "back to full size after %d calls", calls);
    CHECK(s.limit == RC_LIMIT_NONE);

    /* video: each size step is a keyframe, so a larger size comes back after RC_CPU_VIDEO_UP_CALLS */
    rc_steer_init(&s, 85, 50e6);
    rc_cost d = full(80000);
    rc_steer_cpu(&s, 0, 30, NULL, &d, RC_CPU_VIDEO_UP_CALLS, PX);
    CHECK(s.cpu_div == 2 && s.limit == RC_LIMIT_DECODER);
    calls = 0;
    while (s.cpu_div == 2 && calls < 1000) {
        d.at[0] = 15000;
        rc_steer_cpu(&s, 0, 30, NULL, &d, RC_CPU_VIDEO_UP_CALLS, PX);
        calls++;
    }
    CHECK_MSG(calls == RC_CPU_VIDEO_UP_CALLS, "video back to full size after %d calls", calls);
}

/* What the link's steering does with the CPUs' size: an image codec on a fast link encodes at 1/cpu_div and at
 * most RC_CPU_Q_MAX, with no frame-rate cap (the frame rate is what the shrinking is for); video likewise at
 * 1/cpu_div; on a slow link the link's own smaller size, quality and cap still hold. */
static void check_with_link(void) {
    rc_steer s;
    rc_steer_init(&s, 85, 50e6);
    s.cpu_div = 2;
    for (int i = 0; i < 5; i++) rc_steer_image(&s, 85, 100e6, 60, PX, (uint64_t)(0.05 * PX / (s.scale_div * s.scale_div)));
    CHECK_MSG(s.scale_div == 2 && s.quality <= RC_CPU_Q_MAX && !(s.fps_cap > 0), "image, CPU-limited: div %d q %d cap %.1f",
              s.scale_div, s.quality, s.fps_cap);
    s.cpu_div = 1;
    for (int i = 0; i < 5; i++) rc_steer_image(&s, 85, 100e6, 60, PX, (uint64_t)(0.05 * PX / (s.scale_div * s.scale_div)));
    CHECK_MSG(s.scale_div == 1 && s.quality == 85, "image, not limited: div %d q %d", s.scale_div, s.quality);
    /* a 2 Mbit/s link: the link's size (1/4) wins over the CPUs' 1/2 */
    s.cpu_div = 2;
    for (int i = 0; i < 5; i++) rc_steer_image(&s, 85, 2e6, 60, PX, (uint64_t)(0.05 * PX / (s.scale_div * s.scale_div)));
    CHECK_MSG(s.scale_div == 4, "image on 2 Mbit/s: div %d", s.scale_div);

    rc_steer v;
    rc_steer_init(&v, 85, 8e6);
    v.cpu_div = 2;
    rc_steer_video(&v, 8e6, 20e6, 60, PX);
    CHECK_MSG(v.scale_div == 2 && !(v.fps_cap > 0) && v.bitrate_bps == 8e6, "video, CPU-limited: div %d cap %.1f",
              v.scale_div, v.fps_cap);
    v.cpu_div = 1;
    for (int i = 0; i < RC_STEER_SIZE_UP_CALLS; i++) rc_steer_video(&v, 8e6, 20e6, 60, PX);
    CHECK_MSG(v.scale_div == 1, "video, no longer limited: div %d", v.scale_div);
}

/* The link: frames of 20 kB every 33 ms (4.8 Mbit/s) on a 20 Mbit/s link, 20 ms each way, whose arrivals (as the
 * server sees them: the ack less the client's hold) drift 2 ms later a frame for 60 frames — a machine whose
 * CPU falls behind — then stay. With cpu_bound the target is not cut; without it the trendline cuts it (the test
 * is of the signal, not of a link that never looked congested). A standing queue past RC_LINK_QUEUE_MAX_US is cut
 * either way. */
static double drift_run(int cpu_bound, int64_t drift_us, int frames) {
    rc_link l;
    rc_link_init(&l, 10e6);
    rc_link_send rec;
    int64_t send = 1000000, extra = 0;
    double lo = l.target_bps;
    for (int i = 0; i < frames; i++) {
        rc_link_on_send(&l, send, 0, &rec);
        int64_t ack = send + 8000 + 40000 + extra; /* 8 ms to serialize, 40 ms of round trip, the drift */
        if (i >= 20 && i < 20 + 60) extra += drift_us;
        l.cpu_bound = cpu_bound;
        rc_link_on_ack(&l, &rec, 20000, send, ack, 0, 1);
        if (l.target_bps < lo) lo = l.target_bps;
        send += 33333;
    }
    return lo;
}

static void check_link_delay(void) {
    double without = drift_run(0, 2000, 120), with = drift_run(1, 2000, 120);
    printf("# a CPU falling behind 2 ms a frame: the target's low %.2f Mbit/s (as congestion), %.2f (cpu_bound)\n",
           without / 1e6, with / 1e6);
    CHECK_MSG(without < 8e6, "the drift alone was not taken for congestion (%.2f Mbit/s): the test tests nothing",
              without / 1e6);
    CHECK_MSG(with >= 10e6, "a delay the CPU explains cut the target to %.2f Mbit/s", with / 1e6);
    /* 6 ms a frame for 60 frames: 360 ms of standing delay, past RC_LINK_QUEUE_MAX_US: cut whatever the CPU */
    double queue = drift_run(1, 6000, 120);
    CHECK_MSG(queue < 8e6, "a 360 ms standing delay with cpu_bound kept %.2f Mbit/s", queue / 1e6);
}

/* A small picture is not shrunk below RC_CPU_MIN_PX: its time is mostly fixed costs. */
static void check_small(void) {
    rc_steer s;
    rc_steer_init(&s, 85, 50e6);
    rc_cost d = full(80000);
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, 400 * 300);
    CHECK_MSG(s.cpu_div == 1, "a 400x300 picture shrunk to 1/%d", s.cpu_div);
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, 640 * 480);
    CHECK_MSG(s.cpu_div == 2, "a 640x480 picture at 1/%d (320x240 at most)", s.cpu_div);
}

static void check_busy(void) {
    CHECK(rc_cpu_busy(30000, 30));   /* 90 % */
    CHECK(!rc_cpu_busy(20000, 30));  /* 60 % */
    CHECK(!rc_cpu_busy(0, 30) && !rc_cpu_busy(30000, 0));
    CHECK(!strcmp(rc_limit_name(RC_LIMIT_DECODER), "decoder") && !strcmp(rc_limit_name(RC_LIMIT_NONE), "none"));
}

/* A video tier whose encoder cannot keep the app's rate sizes its frames for the rate it keeps: at 30 fps asked, an
 * openh264 taking 70 ms a frame makes ~14, and frames of bitrate / 30 filled 14/30 of the link. */
static void check_fill(void) {
    CHECK(rc_video_fill_fps(30, 70000) == 14);   /* 70 ms a frame: 14.3 at most, the rate it keeps */
    CHECK(rc_video_fill_fps(30, 30000) == 30);   /* busy (90 %) but it keeps 33: the rate asked */
    CHECK(rc_video_fill_fps(30, 20000) == 30);   /* not busy (60 %): the rate asked */
    CHECK(rc_video_fill_fps(30, 0) == 30);       /* not measured yet */
    CHECK(rc_video_fill_fps(30, 900000) == 1);   /* at least one a second */
    /* a tier that skips frames for its link (it starts 10 a second) with an encoder of 15 ms (66 a second): the
     * rate asked, whatever rate frames were started at, so a slow link never gets bigger frames for it */
    CHECK(rc_video_fill_fps(60, 15000) == 60);
    /* what a tier's encoder is told: bits a frame at 4 Mbit/s, 30 fps asked, 14 made: the link carries 4, not 1.9 */
    double kept = rc_video_fill_fps(30, 70000);
    CHECK_MSG(4e6 / kept * 14 >= 0.95 * 4e6, "%.2f Mbit/s carried of 4", 4e6 / kept * 14 / 1e6);
    CHECK_MSG(4e6 / 30 * 14 < 0.5 * 4e6, "sized for the app's rate: %.2f Mbit/s", 4e6 / 30 * 14 / 1e6);
}

/* Which finished encodes teach the encoder's cost, and the pace it is fed at: rate.c decides from what the tier
 * reports (the size divisor it started at, a whole frame or a part, a video keyframe or not). */
static void check_encoded(void) {
    rc_steer s;
    rc_steer_init(&s, 85, 50e6);
    s.enc_div = 1;
    rc_steer_encoded(&s, 20000, 1, 0);
    CHECK(s.enc_us == 20000 && s.enc_cost.n[0] == 1 && s.enc_cost.at[0] == 20000);
    rc_steer_encoded(&s, 60000, 1, 1); /* a video keyframe: several P-frames' work, rare */
    rc_steer_encoded(&s, 60000, 0, 0); /* a partial frame codes a part */
    CHECK_MSG(s.enc_us == 20000 && s.enc_cost.n[0] == 1, "enc_us %g after a keyframe and a part", s.enc_us);
    s.enc_div = 2;
    rc_steer_encoded(&s, 8000, 1, 0); /* at half the size: its own entry; the smoothed time follows by 1/4 */
    CHECK(s.enc_cost.n[1] == 1 && s.enc_cost.at[1] == 8000 && s.enc_cost.n[0] == 1 && s.enc_us == 17000);
    s.enc_div = 0; /* a paint-over, or a small frame as PNG */
    rc_steer_encoded(&s, 90000, 1, 0);
    CHECK(s.enc_us == 17000 && s.enc_cost.n[1] == 1);
    /* the pace: 25 ms between starts, smoothed by 1/8 towards each new interval */
    rc_steer_started(&s, 1000000);
    CHECK(s.enc_fps == 0);
    rc_steer_started(&s, 1025000);
    CHECK_MSG(fabs(s.enc_fps - 40) < 1e-9, "enc_fps %g", s.enc_fps);
    rc_steer_started(&s, 1075000); /* 50 ms: 20 a second */
    CHECK_MSG(fabs(s.enc_fps - 37.5) < 1e-9, "enc_fps %g", s.enc_fps);
    /* a small frame's PNG: bytes a pixel, capped; no pixels change nothing */
    rc_steer_small_done(&s, 1000, 4000);
    CHECK(s.small_bpp == 0.25);
    rc_steer_small_done(&s, 70, 1);
    CHECK(s.small_bpp == RC_SMALL_MAX_BPP);
    rc_steer_small_done(&s, 10, 0);
    CHECK(s.small_bpp == RC_SMALL_MAX_BPP);
}

/* A smaller size must pay (RC_CPU_PAYS): a decoder that costs nearly as much at 1/2 as at full size is held by
 * something other than the pixels (a browser busy with its page), so the full size comes back at once and stays
 * (the frame rate gives, the decoder named as the limit); the 1/2 size is tried again only after its figure faded
 * (RC_CPU_RETRY_FORGET). A decoder whose work is the pixels keeps its smaller size. */
static void check_shrink_must_pay(void) {
    rc_steer s;
    rc_steer_init(&s, 85, 50e6);
    rc_cost d = full(40000); /* 40 ms a full frame: busy at 30 fps */
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK_MSG(s.cpu_div == 2, "not measured at 1/2 yet: worth a try (div %d)", s.cpu_div);
    CHECK(rc_cost_shrink_pays(NULL, &d, 1, 2) == 1);
    for (int i = 0; i < RC_CPU_SAMPLES; i++) rc_cost_sample(&d, 2, 36000); /* 36 ms at 1/2: 0.9 of full size's */
    CHECK(rc_cost_shrink_pays(NULL, &d, 1, 2) == 0 && rc_cost_shrink_pays(&d, NULL, 1, 2) == 0);
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK_MSG(s.cpu_div == 1 && s.limit == RC_LIMIT_DECODER, "1/2 bought nothing: div %d limit %s", s.cpu_div,
              rc_limit_name(s.limit));
    int calls = 0;
    while (s.cpu_div == 1 && calls < 1000) { /* full size stays, 40 ms a frame, until 1/2's figure has faded */
        rc_cost_sample(&d, 1, 40000);
        rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
        CHECK(s.limit == RC_LIMIT_DECODER || s.cpu_div == 2);
        calls++;
    }
    /* 36 ms × 0.998^n < 30 ms from n = 92; one step only (1/2 was measured: its frames decide, not 1/4's guess) */
    CHECK_MSG(s.cpu_div == 2 && calls >= 85 && calls <= 100, "1/2 tried again after %d frames", calls);
    /* still no better (1/2 and 1/4 as slow as full size, within 15 %): a few frames there, and back */
    int probe = 0;
    while (s.cpu_div > 1 && probe < 50) {
        rc_cost_sample(&d, s.cpu_div, s.cpu_div == 2 ? 36000 : 34000);
        rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
        probe++;
    }
    CHECK_MSG(s.cpu_div == 1 && probe <= 2, "the retry bought nothing either: div %d after %d frames", s.cpu_div, probe);

    /* the pixels' work: 40 ms full, 11 ms at 1/2 (0.28): 1/2 is kept */
    rc_steer_init(&s, 85, 50e6);
    d = full(40000);
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
    for (int i = 0; i < 20; i++) {
        rc_cost_sample(&d, 2, 11000);
        rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
    }
    CHECK_MSG(s.cpu_div == 2 && s.limit == RC_LIMIT_DECODER, "a decoder of pixels: div %d", s.cpu_div);
    /* and 1/4 is not taken where 1/2 was measured to pay but 1/4 not: 1/2 at 30 ms, 1/4 at 28 */
    rc_steer_init(&s, 85, 50e6);
    d = full(120000);
    for (int i = 0; i < RC_CPU_SAMPLES; i++) rc_cost_sample(&d, 2, 30000);
    for (int i = 0; i < RC_CPU_SAMPLES; i++) rc_cost_sample(&d, 4, 28000);
    for (int i = 0; i < RC_CPU_SAMPLES; i++) rc_cost_sample(&d, 2, 30000);
    s.cpu_div = 2;
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK_MSG(s.cpu_div == 2 && s.limit == RC_LIMIT_DECODER, "1/4 measured no better than 1/2: div %d", s.cpu_div);

    /* fine detail (text, 1-px lines: keep_size) stays whole however slow its decoder, which is named the limit;
     * once the detail is gone the steering shrinks again */
    rc_steer_init(&s, 85, 50e6);
    s.keep_size = 1;
    d = full(150000);
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK_MSG(s.cpu_div == 1 && s.limit == RC_LIMIT_DECODER, "text: div %d limit %s", s.cpu_div, rc_limit_name(s.limit));
    s.cpu_div = 4; /* shrunk before the detail came: back to whole at once */
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK_MSG(s.cpu_div == 1, "text after a shrunk picture: div %d", s.cpu_div);
    s.keep_size = 0;
    rc_steer_cpu(&s, 85, 30, NULL, &d, RC_STEER_SIZE_UP_CALLS, PX);
    CHECK_MSG(s.cpu_div == 4, "no detail any more: div %d", s.cpu_div);
}

/* The screen-content mode of a video tier (rc_screen_mode_step): the first look decides, then RC_SCREEN_VOTES looks
 * in a row; an encoder behind gives the mode up at once and waits 30 s, 60 s after a retry that fails; content
 * without detail forgets the waits. */
static void check_screen_mode(void) {
    rc_screen_mode m = {0};
    const int64_t s = 1000000;
    CHECK_MSG(rc_screen_mode_step(&m, 0, 1, 0, 0) == 0, "no look yet: camera");
    CHECK_MSG(rc_screen_mode_step(&m, 1, 1, 0, 0) == 1, "the first look at text decides at once");
    CHECK_MSG(rc_screen_mode_step(&m, 0, 0, 0, 0) == 1, "frames between looks keep the mode");
    int on = 1;
    for (int k = 1; k < RC_SCREEN_VOTES; k++) on &= rc_screen_mode_step(&m, 1, 0, 0, k * s);
    CHECK_MSG(on == 1, "%d looks without detail do not switch yet", RC_SCREEN_VOTES - 1);
    rc_screen_mode_step(&m, 1, 1, 0, 3 * s); /* one look with detail again: the count starts over */
    for (int k = 1; k < RC_SCREEN_VOTES; k++) on &= rc_screen_mode_step(&m, 1, 0, 0, (3 + k) * s);
    CHECK_MSG(on == 1, "disagreeing looks must come in a row");
    CHECK_MSG(rc_screen_mode_step(&m, 1, 0, 0, 9 * s) == 0, "%d looks in a row without detail: camera", RC_SCREEN_VOTES);

    /* an encoder behind in the screen mode: not within RC_SCREEN_SETTLE frames of the change (its time a frame is
     * still the other mode's), then camera at once, no retry for 30 s, then 60 s after it fails again */
    m = (rc_screen_mode){0};
    rc_screen_mode_step(&m, 1, 1, 0, 0);
    for (int k = 0; k < RC_SCREEN_SETTLE; k++) on = rc_screen_mode_step(&m, 0, 1, 1, s);
    CHECK_MSG(on == 1, "behind within %d frames of the change: the mode stays", RC_SCREEN_SETTLE);
    CHECK_MSG(rc_screen_mode_step(&m, 0, 1, 1, 10 * s) == 0, "behind once settled: camera at once");
    int64_t t = 10 * s;
    for (int k = 0; k < 2 * RC_SCREEN_VOTES; k++) on = rc_screen_mode_step(&m, 1, 1, 0, t + k * s);
    CHECK_MSG(on == 0, "no screen mode within the wait");
    for (int k = 0; k < RC_SCREEN_VOTES; k++) on = rc_screen_mode_step(&m, 1, 1, 0, t + RC_SCREEN_RETRY_US + k * s);
    CHECK_MSG(on == 1, "tried again once the wait is over");
    t += RC_SCREEN_RETRY_US + 10 * s;
    for (int k = 0; k < RC_SCREEN_SETTLE; k++) rc_screen_mode_step(&m, 0, 1, 0, t);
    CHECK_MSG(rc_screen_mode_step(&m, 0, 1, 1, t) == 0 && m.off_until_us == t + 2 * (int64_t)RC_SCREEN_RETRY_US,
              "behind again: a wait of %lld s", (long long)((m.off_until_us - t) / s));
    for (int k = 0; k < 20; k++) { /* the wait stops doubling at its top */
        m.on = 1;
        m.frames = RC_SCREEN_SETTLE + 1;
        rc_screen_mode_step(&m, 0, 1, 1, t);
    }
    CHECK_MSG(m.backoff_us == RC_SCREEN_RETRY_MAX_US, "the wait's top: %lld s", (long long)(m.backoff_us / s));
    /* one look without detail (a cleared screen, content near the line) keeps the wait; RC_SCREEN_VOTES in a row
     * (other content) forget it, and text coming back is screen content again without waiting */
    rc_screen_mode_step(&m, 1, 0, 0, t);
    rc_screen_mode_step(&m, 1, 1, 0, t);
    CHECK_MSG(m.backoff_us == RC_SCREEN_RETRY_MAX_US && m.off_until_us > t, "one look without detail forgot the wait");
    for (int k = 0; k < RC_SCREEN_VOTES; k++) rc_screen_mode_step(&m, 1, 0, 0, t);
    CHECK_MSG(m.backoff_us == 0 && m.off_until_us == 0, "other content keeps a wait of %lld s",
              (long long)(m.backoff_us / s));
    for (int k = 0; k < RC_SCREEN_VOTES; k++) on = rc_screen_mode_step(&m, 1, 1, 0, t + k);
    CHECK_MSG(on == 1, "text back after other content: screen content");

    /* the camera mode is never "behind" the screen mode's way: a slow camera encoder keeps its mode */
    m = (rc_screen_mode){0};
    rc_screen_mode_step(&m, 1, 0, 0, 0);
    CHECK_MSG(rc_screen_mode_step(&m, 1, 0, 1, s) == 0 && m.off_until_us == 0, "camera behind: nothing changes");
}

int main(void) {
    check_screen_mode();
    check_fill();
    check_encoded();
    check_shrink_must_pay();
    check_cost();
    check_limits();
    check_hysteresis();
    check_with_link();
    check_link_delay();
    check_small();
    check_busy();
    TEST_MAIN_END();
}
