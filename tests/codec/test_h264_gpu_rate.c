/* SPDX-License-Identifier: MIT */
/*
 * test_h264_gpu_rate.c — the GPU H.264 encoder's rate control (src/codec/gpu/h264_gpu_rate.h) against synthetic
 * encoders whose pictures cost B·2^((26−QP)/6) bits (the model's own law, so each figure below is the rate
 * control's doing, not the content's), deterministic and with no GPU: the model and its inverse; the start QP from
 * the budget, and the first IDR picture coded again where it misses the start's aim; convergence to a bitrate from above and below without skipping; dense content that QP 51 cannot fit
 * is skipped down to its bitrate, from 8 Mbit/s down to 1 Mbit/s at 1080p; a slideshow of IDR cuts between still
 * pictures stays within its bitrate with no slide over a second of the link, while light motion still gets a fine
 * QP; paint-overs and fixed QPs teach nothing. test_h264_gpu checks the rate on real pictures through the encoder.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codec/gpu/h264_gpu_rate.h"
#include "test.h"

/* bits of a picture of content b26 (bits at QP 26) at qp, as the model says (whole bytes) */
static size_t bytes_at(double b26, int qp) { return (size_t)ceil(rc_h264_rate_bits_at(b26, 26, qp) / 8); }

typedef struct run {
    double kbps;   /* what was sent, over the pictures after the first `settle` */
    int skipped;   /* pictures skipped among them */
    double max_bits; /* the largest picture after the first */
    int last_qp;
} run;

/* n pictures at fps under the rate control at kbps; picture i costs content(i) bits at QP 26, an IDR picture when
 * key(i); skipped pictures cost 12 bytes (a slice header and one mb_skip_run). */
static run play(int n, int settle, double fps, int kbps, uint32_t w, uint32_t h, double (*content)(int),
                int (*key)(int)) {
    rc_h264_rate r;
    rc_h264_rate_reset(&r);
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = kbps, .fps = fps};
    run out = {0};
    double bits = 0;
    for (int i = 0; i < n; i++) {
        rc_h264_rate_begin(&r, w, h, &p, 0);
        int k = i == 0 || (key && key(i));
        size_t bytes;
        int skip = rc_h264_rate_skip(&r, &p, 0, k), qp = rc_h264_rate_qp(&r, &p, 0, k);
        bytes = skip ? 12 : bytes_at(content(i), qp);
        int rq = k && !skip ? rc_h264_rate_retry_idr(&r, &p, 0, qp, bytes) : 0;
        if (rq) bytes = bytes_at(content(i), qp = rq); /* the encoder codes it again */
        rc_h264_rate_done(&r, &p, 0, qp, k, skip, bytes);
        if (i > 0 && bytes * 8.0 > out.max_bits) out.max_bits = bytes * 8.0;
        if (i >= settle) {
            bits += (double)bytes * 8;
            out.skipped += skip;
        }
        out.last_qp = qp;
    }
    out.kbps = bits * fps / (n - settle) / 1000;
    return out;
}

static double moderate(int i) { (void)i; return 400e3; }      /* a 1080p pan's P picture at QP 26: 50 kB */
static double dense(int i) { (void)i; return 3.0e6; }         /* dense motion: 375 kB at QP 26, 21 kB at QP 51 */
static double light_motion(int i) { (void)i; return 40e3; }  /* a cursor, a small marker: 5 kB at QP 26 */
static int every_second(int i) { return i % 30 == 0; }        /* a cut a second at 30 fps */
static double slides(int i) { return i % 30 == 0 ? 4.0e6 : 800; } /* an IDR picture per slide, still between */

static void check_model(void) {
    CHECK_NEAR(rc_h264_rate_bits_at(1000, 26, 32), 500, 1e-9);   /* 6 QP: half the bits */
    CHECK_NEAR(rc_h264_rate_bits_at(1000, 26, 20), 2000, 1e-9);
    CHECK_NEAR(rc_h264_rate_qp_for(1000, 26, 250), 38, 1e-9);    /* a quarter of the bits: 12 QP up */
    CHECK_NEAR(rc_h264_rate_qp_for(rc_h264_rate_bits_at(777, 30, 41.5), 41.5, 777), 30, 1e-9); /* inverse */
}

static void check_start(void) {
    rc_h264_rate r;
    rc_h264_rate_reset(&r);
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = 50000, .fps = 30};
    rc_h264_rate_begin(&r, 1920, 1080, &p, 0); /* a generous budget: the usual start */
    CHECK_EQ_INT(rc_h264_rate_qp(&r, &p, 0, 0), RC_H264_RATE_QP_START);
    CHECK_EQ_INT(rc_h264_rate_qp(&r, &p, 0, 1), RC_H264_RATE_QP_START - RC_H264_RATE_IDR_OFFSET);
    rc_h264_rate_reset(&r);
    p.bitrate_kbps = 8000;
    rc_h264_rate_begin(&r, 1920, 1080, &p, 0); /* 2 bits a pixel at QP 26 in 8 pictures of 267 kbit: QP 35.8 */
    CHECK_MSG(rc_h264_rate_qp(&r, &p, 0, 0) == 36, "8 Mbit/s at 1080p30 starts at P QP %d", rc_h264_rate_qp(&r, &p, 0, 0));
    double before = r.qp_p;
    p.bitrate_kbps = 1000; /* started: a later budget does not restart it */
    rc_h264_rate_begin(&r, 1920, 1080, &p, 0);
    CHECK(r.qp_p == before);
    rc_h264_rate_reset(&r);
    rc_h264_rate_begin(&r, 1920, 1080, &p, 0);
    CHECK_EQ_INT(rc_h264_rate_qp(&r, &p, 0, 0), RC_H264_RATE_QP_MAX);
    rc_h264_rate_reset(&r); /* a fixed QP or a paint-over starts nothing */
    rc_h264_rate_begin(&r, 1920, 1080, &p, 28);
    CHECK(!r.started);
    CHECK_EQ_INT(rc_h264_rate_qp(&r, &p, 28, 0), 28);
    rc_encode_params paint = p;
    paint.paint = 1;
    CHECK_EQ_INT(rc_h264_rate_qp(&r, &paint, 0, 0), RC_H264_RATE_PAINT_QP);
    rc_h264_rate_done(&r, &paint, 0, RC_H264_RATE_PAINT_QP, 0, 0, 500000);
    rc_h264_rate_done(&r, &p, 28, 28, 0, 0, 500000); /* a fixed QP's picture, 16 times its budget */
    rc_h264_rate_done(&r, &p, 0, 28, 0, 0, 0);       /* an empty one */
    CHECK_MSG(r.qp_p == RC_H264_RATE_QP_START && r.debt == 0, "taught: QP %.1f debt %.0f", r.qp_p, r.debt);
    rc_h264_rate_done(&r, &p, 0, 28, 0, 0, 500000); /* the same picture under the rate control does teach */
    CHECK(r.qp_p > RC_H264_RATE_QP_START && r.debt > 0);
}

static void check_bitrates(void) {
    /* moderate content at 4, 8, 16 Mbit/s: the bitrate within 10 % once settled, nothing skipped */
    static const int rates[] = {4000, 8000, 16000};
    for (int k = 0; k < 3; k++) {
        run o = play(240, 60, 30, rates[k], 1920, 1080, moderate, NULL);
        printf("# moderate content at %d kbit/s: %.0f kbit/s, QP %d, %d skipped\n", rates[k], o.kbps, o.last_qp, o.skipped);
        CHECK_MSG(fabs(o.kbps - rates[k]) <= 0.1 * rates[k] && o.skipped == 0, "%.0f kbit/s for %d", o.kbps, rates[k]);
    }
    /* dense content, 60 fps: QP 51 costs 21 kB a picture; 1 Mbit/s is 2.1 kB. Skipped pictures carry it */
    static const int low[] = {8000, 4000, 2000, 1000};
    for (int k = 0; k < 4; k++) {
        run o = play(600, 120, 60, low[k], 1920, 1080, dense, NULL);
        printf("# dense content at %d kbit/s, 60 fps: %.0f kbit/s, QP %d, %d of 480 skipped\n", low[k], o.kbps,
               o.last_qp, o.skipped);
        CHECK_MSG(fabs(o.kbps - low[k]) <= 0.2 * low[k], "%.0f kbit/s for %d", o.kbps, low[k]);
        CHECK_MSG(o.skipped > 0 && o.skipped < 480, "%d skipped at %d kbit/s", o.skipped, low[k]);
    }
    /* a slideshow: one IDR picture a second (500 kB at QP 26), still P pictures between, at 2 Mbit/s: within the
     * bitrate, and no slide over a second of the link (the still pictures between do not take the QP down to 12) */
    run o = play(900, 300, 30, 2000, 1920, 1080, slides, every_second);
    printf("# slideshow at 2000 kbit/s: %.0f kbit/s, QP %d, the largest picture %.0f kbit\n", o.kbps, o.last_qp,
           o.max_bits / 1000);
    CHECK_MSG(o.kbps <= 1.2 * 2000 && o.kbps >= 0.1 * 2000, "slideshow: %.0f kbit/s for 2000", o.kbps);
    CHECK_MSG(o.max_bits <= 2000e3, "a slide of %.0f kbit: over a second of the link", o.max_bits / 1000);
    /* easy content that really codes (120 kbit at QP 26: 14 % of its budget at qp_dense) still gets a finer QP */
    rc_h264_rate r;
    rc_h264_rate_reset(&r);
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = 8000, .fps = 30};
    for (int i = 0; i < 60; i++) {
        rc_h264_rate_begin(&r, 1920, 1080, &p, 0);
        int qp = rc_h264_rate_qp(&r, &p, 0, i == 0);
        rc_h264_rate_done(&r, &p, 0, qp, i == 0, 0, bytes_at(i == 0 ? 2e6 : 120e3, qp));
    }
    CHECK_MSG(r.qp_p < r.qp_dense - 3, "easy content at QP %.1f (dense %.1f)", r.qp_p, r.qp_dense);
    /* light motion (a small thing moving over a still picture: 40 kbit at QP 26, 5 % of the budget at qp_dense)
     * fills its budget at a fine QP: what holds IDR pictures back must not hold P pictures */
    run light = play(240, 60, 30, 8000, 1920, 1080, light_motion, NULL);
    printf("# light motion at 8000 kbit/s: %.0f kbit/s, QP %d\n", light.kbps, light.last_qp);
    CHECK_MSG(light.last_qp <= 20, "light motion held at QP %d", light.last_qp);
}

/* After an IDR picture of 8 pictures' budget, P pictures that each take exactly their budget: the debt is a level
 * above qp_p that falls as it is paid, so their QP never rises (a step added every picture in debt drove it up
 * picture after picture); without a bitrate the debt lifts nothing (and nothing divides by it). */
static void check_debt_is_a_level(void) {
    rc_h264_rate r;
    rc_h264_rate_reset(&r);
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = 4000, .fps = 30};
    double budget = 4000e3 / 30;
    rc_h264_rate_begin(&r, 640, 360, &p, 0);
    int qi = rc_h264_rate_qp(&r, &p, 0, 1);
    rc_h264_rate_done(&r, &p, 0, qi, 1, 0, (size_t)(8 * budget / 8));
    int q0 = rc_h264_rate_qp(&r, &p, 0, 0), q = q0, rises = 0;
    CHECK_MSG(r.debt > 6 * budget && q0 > (int)lround(r.qp_p), "after the IDR picture: debt %.1f budgets, QP %d on qp_p %.1f",
              r.debt / budget, q0, r.qp_p);
    for (int i = 0; i < 30; i++) {
        rc_h264_rate_done(&r, &p, 0, q, 0, 0, (size_t)(budget / 8));
        int next = rc_h264_rate_qp(&r, &p, 0, 0);
        rises += next > q;
        q = next;
    }
    CHECK_MSG(rises == 0 && q < q0, "P pictures on budget: QP %d -> %d, %d rises", q0, q, rises);
    rc_encode_params none = {.codec = RCANVAS_CODEC_H264, .fps = 30};
    CHECK_EQ_INT(rc_h264_rate_qp(&r, &none, 0, 0), (int)lround(r.qp_p));
    CHECK_EQ_INT(rc_h264_rate_qp(&r, NULL, 0, 0), (int)lround(r.qp_p));
}

/* The stream's first IDR picture is weighed once: content ten times lighter than the start's guess (0.2 bits a
 * pixel at QP 26, not 2) is coded again at the QP that puts it on the aim (8 pictures' budget), and the P pictures
 * start 4 QP above that, while a later IDR picture keeps the start's floor, and after a cut's IDR picture the P
 * pictures start 4 above that; content on the guess is not coded again, nor is any later IDR picture, nor
 * the first after a fixed QP's picture. */
static void check_first_idr(void) {
    rc_h264_rate r;
    rc_h264_rate_reset(&r);
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = 250, .fps = 30};
    double aim = 8 * 250e3 / 30, light = 0.2 * 640 * 360;
    rc_h264_rate_begin(&r, 640, 360, &p, 0);
    int qp = rc_h264_rate_qp(&r, &p, 0, 1);
    size_t first = bytes_at(light, qp);
    int rq = rc_h264_rate_retry_idr(&r, &p, 0, qp, first);
    double again = rq ? bytes_at(light, rq) * 8.0 : 0;
    printf("# a light first picture at 250 kbit/s, 640x360: %.2f of the aim at QP %d, %.2f at QP %d\n",
           first * 8.0 / aim, qp, again / aim, rq);
    CHECK_MSG(first * 8.0 < aim / 4 && rq > 0 && rq < qp - 6 && again > aim / 2 && again < 2 * aim,
              "first picture %.2f of the aim at QP %d; again at QP %d: %.2f", first * 8.0 / aim, qp, rq, again / aim);
    CHECK_EQ_INT(rc_h264_rate_qp(&r, &p, 0, 0), rq + RC_H264_RATE_IDR_OFFSET);
    rc_h264_rate_done(&r, &p, 0, rq, 1, 0, (size_t)(again / 8));
    rc_h264_rate_begin(&r, 640, 360, &p, 0); /* the next picture, and a cut after it: the floor holds */
    CHECK_MSG(rc_h264_rate_qp(&r, &p, 0, 1) >= qp, "a cut after the retry at QP %d (the first IDR picture %d)",
              rc_h264_rate_qp(&r, &p, 0, 1), qp);
    CHECK_EQ_INT(rc_h264_rate_retry_idr(&r, &p, 0, rq, first), 0); /* weighed once */
    /* a blank first picture (1 byte a macroblock) is coded again finer too (the encoder's scene-cut rule then
     * takes a dense picture after it as a cut); a cut's IDR picture lifts the P pictures to 4 above it */
    rc_h264_rate_reset(&r);
    rc_encode_params fast = p;
    fast.bitrate_kbps = 1200;
    rc_h264_rate_begin(&r, 640, 360, &fast, 0);
    qp = rc_h264_rate_qp(&r, &fast, 0, 1);
    rq = rc_h264_rate_retry_idr(&r, &fast, 0, qp, 40 * 23);
    CHECK_MSG(rq > 0 && rq < qp - 6, "a blank first picture at QP %d: again at %d", qp, rq);
    rc_h264_rate_done(&r, &fast, 0, rq, 1, 0, 40 * 23);
    rc_h264_rate_begin(&r, 640, 360, &fast, 0);
    int kqp = rc_h264_rate_qp(&r, &fast, 0, 1);
    rc_h264_rate_cut(&r, &fast, 0, kqp);
    CHECK_MSG(kqp >= qp && rc_h264_rate_qp(&r, &fast, 0, 0) >= kqp + RC_H264_RATE_IDR_OFFSET,
              "a cut after it at QP %d (the first at %d), then P pictures at %d", kqp, qp, rc_h264_rate_qp(&r, &fast, 0, 0));
    rc_h264_rate_reset(&r);
    rc_h264_rate_begin(&r, 640, 360, &p, 0);
    qp = rc_h264_rate_qp(&r, &p, 0, 1);
    CHECK_EQ_INT(rc_h264_rate_retry_idr(&r, &p, 0, qp, bytes_at(2.0 * 640 * 360, qp)), 0); /* on the guess */
    rc_h264_rate_reset(&r);
    CHECK_EQ_INT(rc_h264_rate_retry_idr(&r, &p, 30, 30, first), 0); /* a fixed QP */
    rc_h264_rate_done(&r, &p, 30, 30, 1, 0, first);                   /* its picture */
    rc_h264_rate_begin(&r, 640, 360, &p, 0);
    CHECK_EQ_INT(rc_h264_rate_retry_idr(&r, &p, 0, rc_h264_rate_qp(&r, &p, 0, 1), first), 0); /* not the first */
}

int main(void) {
    check_model();
    check_start();
    check_first_idr();
    check_bitrates();
    check_debt_is_a_level();
    TEST_MAIN_END();
}
