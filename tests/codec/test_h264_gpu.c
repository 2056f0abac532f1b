/* SPDX-License-Identifier: MIT */
/*
 * test_h264_gpu — the Vulkan compute H.264 encoder (codec/gpu/h264_gpu.h) on whatever device is there (lavapipe
 * in CI), checked by a decoder:
 *  - every access unit of generated motion sequences (a pan-and-zoom over a dense plot, a turning 3D scatter) at
 *    sizes that are not multiples of 16 (odd ones too) decodes with openh264's decoder (and libavcodec's where
 *    the build found its headers, RCANVAS_BENCH_AVCODEC, and the machine has it), and the decoded picture is
 *    exactly the encoder's own reconstruction (no drift: what the next picture predicts from is what the viewer
 *    has), at QPs 12–51 and under the rate control;
 *  - the picture is the content: luma PSNR against the source's BT.601 luma above a bound for the QP;
 *  - IDR pictures carry SPS and PPS and only IDR slices; P pictures only non-IDR slices; an IDR on request;
 *  - a still picture repeated codes as P_Skip: a few bytes;
 *  - a scene cut is coded as an IDR picture without a request;
 *  - the rate control moves the QP towards the bitrate asked for;
 *  - a VkImage (RGBA or BGRA) codes to the same picture and size as the same pixels from the CPU.
 */
#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/gpu/gpu_device.h"
#include "codec/gpu/h264_gpu.h"
#include "codec/nal.h"
#include "source/vk_readback.h"
#include "test.h"
#include "testframes.h"
#include "video_decoders.h"
#include "vk_icd.h"
#include "vk_util.h"

static rc_gpu_h264 *g_enc;
static int g_deblock_env; /* RCANVAS_GPU_H264_DEBLOCK as g_enc was made: 0 off, else on (main) */

static void log_stderr(void *user, rcanvas_log_level level, const char *msg) {
    (void)user;
    (void)level;
    fprintf(stderr, "%s\n", msg);
}

/* NAL unit types of an Annex B access unit, in order; returns how many. */
static int nal_types(const uint8_t *p, size_t n, int *types, int cap) {
    size_t pos = 0, len;
    const uint8_t *nal;
    int k = 0;
    while (rc_nal_next(p, n, &pos, &nal, &len)) {
        if (k < cap) types[k] = nal[0] & 31;
        k++;
    }
    return k;
}

static uint8_t luma601(const uint8_t *px) { return (uint8_t)(((66 * px[0] + 129 * px[1] + 25 * px[2] + 128) >> 8) + 16); }

/* Samples of decoded picture v that differ from the reconstruction rec (I420 at lw × lh); where the first is. */
static long diff_recon(const yuv_view *v, const uint8_t *rec, uint32_t lw, uint32_t lh, int *fp, int *fx, int *fy) {
    long diff = 0;
    *fp = *fx = *fy = -1;
    for (int pl = 0; pl < 3; pl++) {
        int pw = pl ? (v->w + 1) / 2 : v->w, ph = pl ? (v->h + 1) / 2 : v->h;
        const uint8_t *d = pl == 0 ? v->y : pl == 1 ? v->u : v->v;
        int ds = pl ? v->stride_uv : v->stride_y;
        const uint8_t *rp = rec + (pl == 0 ? 0 : pl == 1 ? (size_t)lw * lh : (size_t)lw * lh * 5 / 4);
        uint32_t rs = pl ? lw / 2 : lw;
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++)
                if (d[y * ds + x] != rp[(size_t)y * rs + x]) {
                    if (*fp < 0) *fp = pl, *fx = x, *fy = y;
                    diff++;
                }
    }
    return diff;
}

/* Luma PSNR of decoded picture v against RGBA px (w × h), dB. */
static double luma_psnr(const yuv_view *v, const uint8_t *px, uint32_t w, uint32_t h) {
    double se = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            double e = (double)v->y[y * v->stride_y + x] - luma601(px + ((size_t)y * w + x) * 4);
            se += e * e;
        }
    double mse = se / ((double)w * h);
    return mse > 0 ? 10 * log10(255.0 * 255.0 / mse) : 99;
}

typedef struct run_stats {
    int frames, decoded, exact, keyframes, skipped, mb_i4x4, mb_p8x8, mb_intra, mb_i4x4_p;
    size_t bytes_after_first; /* the bytes of all pictures but the first (an IDR) */
    double min_psnr;
    size_t bytes;
    size_t max_coded_p; /* the largest P picture that was not skipped, bytes */
    uint64_t hash;      /* FNV-1a of every picture's bytes: equal streams, equal hashes */
    long adopt_looks;   /* the P pictures' adopt looks (rc_gpu_h264_info) */
} run_stats;

/* Encodes n frames of motion m at w × h with QP qp (0: rate control at kbps and fps), decoding each and comparing. */
static run_stats run_sequence(tf_motion m, uint32_t w, uint32_t h, int n, int qp, int kbps, double fps, int still) {
    run_stats st = {0};
    st.min_psnr = 1e9;
    st.hash = 14695981039346656037ull;
    uint8_t *px = malloc((size_t)w * h * 4);
    void *dec = h264_open();
#if RCANVAS_BENCH_AVCODEC /* libavcodec's decoder too, where it is installed */
    void *dec2 = lavc_h264_available() ? lavc_h264_open() : NULL;
    CHECK(!lavc_h264_available() || dec2 != NULL);
#endif
    rc_buf out = {0};
    rc_gpu_h264_request_keyframe(g_enc);
    for (int i = 0; i < n; i++) {
        if (!still || i == 0) tf_motion_draw(m, (uint32_t)i, 64, w, h, px, (size_t)w * 4);
        rc_image img = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
        rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = kbps, .fps = fps};
        rc_gpu_h264_info info;
        rc_buf_clear(&out);
        int r = rc_gpu_h264_encode_cpu(g_enc, &img, &p, qp, &out, &info);
        CHECK_EQ_INT(r, RCANVAS_OK);
        if (r) break;
        st.frames++;
        st.keyframes += info.keyframe;
        st.skipped += info.skipped;
        st.mb_i4x4 += info.mb_i4x4;
        st.mb_p8x8 += info.mb_p8x8;
        st.mb_intra += info.mb_intra;
        if (!info.keyframe) st.mb_i4x4_p += info.mb_i4x4;
        /* the filter in every picture from QP 16 (main sets RCANVAS_GPU_H264_DEBLOCK=1 unless told): the exactness
         * below covers it, whatever else the device runs */
        if (!info.skipped) CHECK_EQ_INT(info.deblocked, g_deblock_env != 0 && info.qp >= 16);
        st.bytes += out.len;
        if (i > 0) st.bytes_after_first += out.len;
        for (size_t k = 0; k < out.len; k++) st.hash = (st.hash ^ rc_buf_data(&out)[k]) * 1099511628211ull;
        st.adopt_looks += info.adopt_looks;
        if (!info.keyframe && !info.skipped && out.len > st.max_coded_p) st.max_coded_p = out.len;
        int types[1024];
        int nt = nal_types(rc_buf_data(&out), out.len, types, 1024);
        CHECK_EQ_INT(nt, info.keyframe ? 3 : 1); /* IDR: SPS, PPS, its one slice; P: one slice */
        int bad_type = 0;
        for (int k = 0; k < nt && k < 1024; k++) {
            int want = info.keyframe ? (k == 0 ? 7 : k == 1 ? 8 : 5) : 1;
            bad_type |= types[k] != want;
        }
        CHECK_MSG(!bad_type, "%ux%u frame %d: NAL unit types not as expected (keyframe %d)", w, h, i, info.keyframe);
        yuv_view v;
        if (!dec || h264_decode(dec, rc_buf_data(&out), out.len, &v)) {
            CHECK_MSG(0, "%ux%u %s frame %d (qp %d, %zu bytes): openh264 did not decode it", w, h, tf_motion_name(m), i,
                      info.qp, out.len);
            continue;
        }
        st.decoded++;
        uint8_t *rec = NULL;
        uint32_t lw = 0, lh = 0;
        CHECK_EQ_INT(rc_gpu_h264_reconstruction(g_enc, &rec, &lw, &lh), RCANVAS_OK);
        if (!rec) continue;
        uint32_t ew = (w + 1) & ~1u, eh = (h + 1) & ~1u; /* cropping is in units of 2 */
        CHECK_MSG(v.w == (int)ew && v.h == (int)eh, "decoded %dx%d, expected %ux%u", v.w, v.h, ew, eh);
        int first_x, first_y, first_p;
        long diff = diff_recon(&v, rec, lw, lh, &first_p, &first_x, &first_y);
#if RCANVAS_BENCH_AVCODEC
        yuv_view v2;
        int p2, x2, y2;
        if (dec2)
            CHECK_MSG(!lavc_decode(dec2, rc_buf_data(&out), out.len, &v2) &&
                          diff_recon(&v2, rec, lw, lh, &p2, &x2, &y2) == 0,
                      "%ux%u %s frame %d: libavcodec's picture is not the reconstruction", w, h, tf_motion_name(m), i);
#endif
        CHECK_MSG(diff == 0, "%ux%u %s frame %d (qp %d, key %d): %ld samples differ from the reconstruction, first "
                             "plane %d (%d,%d)", w, h, tf_motion_name(m), i, info.qp, info.keyframe, diff, first_p,
                  first_x, first_y);
        st.exact += diff == 0;
        double psnr = luma_psnr(&v, px, w, h);
        if (psnr < st.min_psnr) st.min_psnr = psnr;
        free(rec);
    }
    h264_close(dec);
#if RCANVAS_BENCH_AVCODEC
    if (dec2) lavc_close(dec2);
#endif
    rc_buf_free(&out);
    free(px);
    return st;
}

static void test_bit_exact(void) {
    static const struct { uint32_t w, h; } sizes[] = {{33, 17}, {161, 97}, {176, 144}, {322, 181}};
    static const int qps[] = {12, 24, 36, 51};
    int i4 = 0, i4_p = 0, p8 = 0, intra_p = 0, mbs_key = 0, mbs_p = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int m = 0; m < TF_MOTIONS; m++) {
            int qp = qps[(s + (size_t)m) % 4];
            run_stats st = run_sequence((tf_motion)m, sizes[s].w, sizes[s].h, 5, qp, 0, 30, 0);
            printf("%ux%u %s qp %d: %d frames, %d decoded, %d exact, %zu bytes, min luma PSNR %.1f dB, %d Intra4x4, "
                   "%d P_8x8 and %d intra-in-P macroblocks\n", sizes[s].w, sizes[s].h, tf_motion_name((tf_motion)m),
                   qp, st.frames, st.decoded, st.exact, st.bytes, st.min_psnr, st.mb_i4x4, st.mb_p8x8, st.mb_intra);
            int mbs = (int)(((sizes[s].w + 15) / 16) * ((sizes[s].h + 15) / 16));
            i4 += st.mb_i4x4, i4_p += st.mb_i4x4_p, p8 += st.mb_p8x8, intra_p += st.mb_intra;
            mbs_key += mbs * st.keyframes, mbs_p += mbs * (st.frames - st.keyframes);
            CHECK_EQ_INT(st.exact, 5);
            /* P pictures were coded (at 33×17 the pan moves more than the picture a frame: every picture is a
             * scene cut there, coded as IDR) */
            CHECK_MSG(st.keyframes >= 1 && (sizes[s].w < 100 || st.keyframes <= 2), "%ux%u %s: %d keyframes", sizes[s].w, sizes[s].h, tf_motion_name((tf_motion)m), st.keyframes);
            /* bounds for a dense plot in motion; QP 51 is the coarsest the standard has */
            double want = qp <= 12 ? 40 : qp <= 24 ? 30 : qp <= 36 ? 22 : 12;
            CHECK_MSG(st.min_psnr >= want, "%ux%u %s qp %d: min PSNR %.1f dB < %.0f", sizes[s].w, sizes[s].h,
                      tf_motion_name((tf_motion)m), qp, st.min_psnr, want);
        }
    /* the decoders checked every macroblock type the encoder chooses: Intra4x4 and Intra16x16, P_8x8 and 16×16, and
     * intra ones in P pictures */
    printf("Intra4x4: %d of %d intra macroblocks; P_8x8: %d, intra: %d (Intra4x4: %d) of %d P macroblocks\n", i4,
           mbs_key + intra_p, p8, intra_p, i4_p, mbs_p);
    CHECK_MSG(i4 > 0 && i4 < mbs_key + intra_p, "Intra4x4 in %d of %d intra macroblocks", i4, mbs_key + intra_p);
    CHECK_MSG(p8 > 0 && p8 < mbs_p, "P_8x8 in %d of %d P macroblocks", p8, mbs_p);
    /* both intra types in P slices too (mb_type 5 + the I type; an Intra4x4 one predicts its modes from inter
     * neighbours as 2) */
    CHECK_MSG(intra_p > 0 && intra_p < mbs_p, "intra in %d of %d P macroblocks", intra_p, mbs_p);
    CHECK_MSG(i4_p > 0 && i4_p < intra_p, "Intra4x4 in %d of %d intra macroblocks of P pictures", i4_p, intra_p);
    /* over 256 macroblock rows the intra wave's layout runs in rounds of 256 rows (h264_scan.comp's lastrow) */
    run_stats tall = run_sequence(TF_MOTION_PAN, 32, 4112, 3, 24, 0, 30, 0);
    printf("32x4112 pan qp 24: %d exact, %d intra-in-P macroblocks\n", tall.exact, tall.mb_intra);
    CHECK_EQ_INT(tall.exact, 3);
    CHECK_MSG(tall.mb_intra > 0, "%d intra macroblocks in the tall pan's P pictures", tall.mb_intra);
}

/* A size within the same macroblocks (a browser window a few pixels narrower): the encoder's recorded passes hold
 * the picture's width and the input's pitch, so they are recorded again; with the old width's pitch the picture
 * would come out sheared (decodable and exact to the reconstruction, but another picture). */
static void test_resize_within_macroblocks(void) {
    run_stats a = run_sequence(TF_MOTION_PAN, 320, 176, 3, 28, 0, 30, 0);
    run_stats b = run_sequence(TF_MOTION_PAN, 314, 170, 3, 28, 0, 30, 0); /* 20 × 11 macroblocks both */
    CHECK_EQ_INT(a.exact, 3);
    CHECK_EQ_INT(b.exact, 3);
    printf("resize within the macroblocks: min Y PSNR %.1f dB at 320x176, %.1f at 314x170\n", a.min_psnr, b.min_psnr);
    CHECK_MSG(b.min_psnr > 30 && b.min_psnr > a.min_psnr - 3, "314x170 after 320x176: min Y PSNR %.1f dB (%.1f before)",
              b.min_psnr, a.min_psnr);
}

static void test_still_is_skipped(void) {
    run_stats st = run_sequence(TF_MOTION_PAN, 320, 176, 4, 28, 0, 30, 1);
    CHECK_EQ_INT(st.exact, 4);
    /* a P picture of 220 P_Skip macroblocks: one slice of one mb_skip_run */
    rc_buf out = {0};
    uint8_t *px = malloc(320 * 176 * 4);
    tf_motion_draw(TF_MOTION_PAN, 0, 64, 320, 176, px, 320 * 4);
    rc_image img = {px, 320, 176, 320 * 4, RCANVAS_FORMAT_RGBA8, NULL};
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .fps = 30};
    rc_gpu_h264_info info;
    /* ... each time: no vector that only fits the reference's coding noise (which would blur the picture a
     * little with every repeat) */
    for (int i = 0; i < 3; i++) {
        rc_buf_clear(&out);
        CHECK_EQ_INT(rc_gpu_h264_encode_cpu(g_enc, &img, &p, 28, &out, &info), RCANVAS_OK);
        CHECK_EQ_INT(info.keyframe, 0);
        printf("still P picture %d: %zu bytes\n", i, out.len);
        CHECK_MSG(out.len <= 16, "still picture %d took %zu bytes", i, out.len);
    }
    rc_gpu_h264_request_keyframe(g_enc);
    rc_buf_clear(&out);
    CHECK_EQ_INT(rc_gpu_h264_encode_cpu(g_enc, &img, &p, 28, &out, &info), RCANVAS_OK);
    CHECK_EQ_INT(info.keyframe, 1);
    rc_buf_free(&out);
    free(px);
}

static void test_scene_cut(void) {
    /* a pan, then a different scene: the cut is coded as an IDR picture without a request (and decodes) */
    const uint32_t w = 256, h = 144;
    uint8_t *px = malloc((size_t)w * h * 4);
    rc_buf out = {0};
    void *dec = h264_open();
    rc_gpu_h264_request_keyframe(g_enc);
    int keys[6] = {0}, decoded = 0;
    for (int i = 0; i < 6; i++) {
        if (i < 4) tf_motion_draw(TF_MOTION_PAN, (uint32_t)i, 64, w, h, px, (size_t)w * 4);
        else tf_draw(TF_TEXT, w, h, px, (size_t)w * 4); /* another scene: a page of text */
        rc_image img = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
        rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .fps = 30};
        rc_gpu_h264_info info;
        rc_buf_clear(&out);
        CHECK_EQ_INT(rc_gpu_h264_encode_cpu(g_enc, &img, &p, 30, &out, &info), RCANVAS_OK);
        keys[i] = info.keyframe;
        printf("  scene-cut picture %d: %zu bytes, keyframe %d\n", i, out.len, info.keyframe);
        yuv_view v;
        decoded += dec && !h264_decode(dec, rc_buf_data(&out), out.len, &v);
    }
    printf("scene cut: keyframes %d %d %d %d | %d %d\n", keys[0], keys[1], keys[2], keys[3], keys[4], keys[5]);
    CHECK(keys[0] && !keys[1] && !keys[2] && !keys[3]);
    CHECK_MSG(keys[4] && !keys[5], "the cut (picture 4) is an IDR picture, the next a P picture");
    CHECK_EQ_INT(decoded, 6);
    h264_close(dec);
    rc_buf_free(&out);
    free(px);
}

/* A second encoder on vk's device made with the environment variables env[0] = env[1], env[2] = env[3], ... (a
 * NULL name ends the list; a NULL value unsets), each put back after: its benchmark switches, for the tests that
 * compare a tool with the encoder without it; NULL (and a failed check) where it cannot be made. */
static rc_gpu_h264 *encoder_with(rcanvas_vk *vk, const rc_logger *lg, const char *const *env) {
    char *old[8] = {NULL};
    int n = 0;
    for (; n < 8 && env[2 * n]; n++) {
        const char *o = getenv(env[2 * n]);
        old[n] = o ? strdup(o) : NULL;
        if (env[2 * n + 1]) setenv(env[2 * n], env[2 * n + 1], 1);
        else unsetenv(env[2 * n]);
    }
    rc_gpu_h264 *e = NULL;
    int r = rc_gpu_h264_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                            rcanvas_vk_queue(vk), NULL, lg, &e);
    while (n-- > 0) {
        if (old[n]) setenv(env[2 * n], old[n], 1);
        else unsetenv(env[2 * n]);
        free(old[n]);
    }
    CHECK_MSG(r == RCANVAS_OK, "rc_gpu_h264_new with %s=%s: %s", env[0], env[1] ? env[1] : "(unset)",
              rcanvas_strerror(r));
    return r ? NULL : e;
}

/* New content in part of the picture (a gradient over a page of text, where the reference has text): no vector
 * predicts it, so the motion search codes it intra. Against an encoder with intra macroblocks in P pictures off
 * (RCANVAS_GPU_H264_ME=nointra), the same P picture takes fewer bytes at no less PSNR; both decode to the
 * encoder's reconstruction. The region, 16 × 8 macroblocks, needs 16 + 2·7 steps of the intra wave: those past
 * INTRA_STEPS (16) are coded inter; with 4 steps (RCANVAS_GPU_H264_INTRA_STEPS=4) more of the same candidates are.
 * An encoder whose gate is closed (RCANVAS_GPU_H264_GATE=closed: as on a contended device, h264_gpu_gate.h) codes
 * none intra and runs no filter. */
static void test_intra_in_p(rcanvas_vk *vk, const rc_logger *lg) {
    const uint32_t w = 480, h = 272, rx = 96, ry = 64, rw = 256, rh = 128;
    uint8_t *base = malloc((size_t)w * h * 4), *grad = malloc((size_t)w * h * 4), *px = malloc((size_t)w * h * 4);
    tf_draw(TF_TEXT, w, h, base, (size_t)w * 4);
    tf_draw(TF_GRADIENT, w, h, grad, (size_t)w * 4);
    memcpy(px, base, (size_t)w * h * 4);
    for (uint32_t y = ry; y < ry + rh; y++)
        memcpy(px + ((size_t)y * w + rx) * 4, grad + ((size_t)y * w + rx) * 4, rw * 4);
    enum { FULL, NOINTRA, STEPS4, CLOSED, NENC };
    static const char *const names[NENC] = {"intra in P", "no intra in P", "4 intra steps", "gate closed"};
    rc_gpu_h264 *enc[NENC] = {
        g_enc, encoder_with(vk, lg, (const char *[]){"RCANVAS_GPU_H264_ME", "nointra", NULL}),
        encoder_with(vk, lg, (const char *[]){"RCANVAS_GPU_H264_INTRA_STEPS", "4", NULL}),
        encoder_with(vk, lg,
                     (const char *[]){"RCANVAS_GPU_H264_GATE", "closed", "RCANVAS_GPU_H264_DEBLOCK", NULL, NULL})};
    int r = enc[NOINTRA] && enc[STEPS4] && enc[CLOSED] ? RCANVAS_OK : RCANVAS_EINVAL;
    size_t bytes[NENC] = {0};
    double psnr[NENC] = {0};
    rc_gpu_h264_info last[NENC] = {0};
    for (int k = 0; k < NENC && !r; k++) {
        rc_gpu_h264 *e = enc[k];
        void *dec = h264_open();
        rc_buf out = {0};
        rc_gpu_h264_request_keyframe(e);
        for (int i = 0; i < 2; i++) {
            rc_image img = {i ? px : base, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
            rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .fps = 30};
            rc_gpu_h264_info info;
            rc_buf_clear(&out);
            CHECK_EQ_INT(rc_gpu_h264_encode_cpu(e, &img, &p, 28, &out, &info), RCANVAS_OK);
            CHECK_EQ_INT(info.keyframe, i == 0);
            yuv_view v;
            int ok = dec && !h264_decode(dec, rc_buf_data(&out), out.len, &v);
            CHECK_MSG(ok, "%s: picture %d did not decode", names[k], i);
            uint8_t *rec = NULL;
            uint32_t lw = 0, lh = 0;
            if (ok && !rc_gpu_h264_reconstruction(e, &rec, &lw, &lh) && rec) {
                int fp, fx, fy;
                long diff = diff_recon(&v, rec, lw, lh, &fp, &fx, &fy);
                CHECK_MSG(diff == 0, "%s: picture %d: %ld samples differ from the reconstruction", names[k], i, diff);
                free(rec);
            }
            if (i == 1) {
                bytes[k] = out.len;
                psnr[k] = ok ? luma_psnr(&v, px, w, h) : 0;
                last[k] = info;
            }
        }
        rc_buf_free(&out);
        h264_close(dec);
    }
    for (int k = 0; k < NENC; k++)
        printf("new content in a P picture, %s: %zu bytes, %.2f dB, %d intra macroblocks (%d more coded inter: past "
               "the wave's steps), filter %s\n", names[k], bytes[k], psnr[k], last[k].mb_intra,
               last[k].mb_intra_deferred, last[k].deblocked ? "on" : "off");
    CHECK_MSG(last[FULL].mb_intra > 0 && last[FULL].mb_intra_deferred > 0, "%d intra macroblocks, %d coded inter",
              last[FULL].mb_intra, last[FULL].mb_intra_deferred);
    CHECK_EQ_INT(last[NOINTRA].mb_intra, 0);
    CHECK_MSG(bytes[FULL] < bytes[NOINTRA] && psnr[FULL] >= psnr[NOINTRA] - 0.05,
              "intra in P: %zu bytes %.2f dB, without %zu, %.2f", bytes[FULL], psnr[FULL], bytes[NOINTRA],
              psnr[NOINTRA]);
    /* the same candidates (the motion search is the same), fewer of them within 4 steps */
    CHECK_MSG(last[STEPS4].mb_intra > 0 && last[STEPS4].mb_intra < last[FULL].mb_intra &&
                  last[STEPS4].mb_intra + last[STEPS4].mb_intra_deferred ==
                      last[FULL].mb_intra + last[FULL].mb_intra_deferred,
              "4 steps: %d intra + %d deferred; 16 steps: %d + %d", last[STEPS4].mb_intra,
              last[STEPS4].mb_intra_deferred, last[FULL].mb_intra, last[FULL].mb_intra_deferred);
    CHECK_MSG(!last[FULL].contended && last[CLOSED].contended && !last[CLOSED].deblocked &&
                  last[CLOSED].mb_intra == 0 && last[CLOSED].mb_intra_deferred == 0,
              "gate closed: contended %d, filter %d, %d intra (%d deferred)", last[CLOSED].contended,
              last[CLOSED].deblocked, last[CLOSED].mb_intra, last[CLOSED].mb_intra_deferred);
    for (int k = 1; k < NENC; k++) rc_gpu_h264_free(enc[k]);
    free(base);
    free(grad);
    free(px);
}

/* A canvas whose first picture is blank (drawn before its data came) and then dense (a page of text), at 250 kbit/s
 * and 30 pictures a second: the blank IDR picture misses the rate control's aim by far and is coded again finer
 * (h264_gpu_rate.h), which once let the P pictures after it start at QP 16; the dense picture is now a scene cut,
 * coded as an IDR picture at the rate control's floor for those and within a few pictures' budget, and the P
 * pictures after it no finer than 4 QP above it. Every picture decodes to the encoder's reconstruction. */
static void test_blank_then_dense(rcanvas_vk *vk, const rc_logger *lg) {
    const uint32_t w = 640, h = 360;
    rc_gpu_h264 *e = encoder_with(vk, lg, (const char *[]){"RCANVAS_GPU_H264_GATE", "open", NULL});
    if (!e) return;
    uint8_t *blank = malloc((size_t)w * h * 4), *text = malloc((size_t)w * h * 4);
    memset(blank, 200, (size_t)w * h * 4);
    tf_draw(TF_TEXT, w, h, text, (size_t)w * 4);
    void *dec = h264_open();
    rc_buf out = {0};
    rc_gpu_h264_info info[4] = {0};
    size_t bytes[4] = {0};
    int exact = 0;
    for (int i = 0; i < 4; i++) {
        rc_image img = {i ? text : blank, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
        rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = 250, .fps = 30};
        rc_buf_clear(&out);
        CHECK_EQ_INT(rc_gpu_h264_encode_cpu(e, &img, &p, 0, &out, &info[i]), RCANVAS_OK);
        bytes[i] = out.len;
        yuv_view v;
        uint8_t *rec = NULL;
        uint32_t lw = 0, lh = 0;
        if (dec && !h264_decode(dec, rc_buf_data(&out), out.len, &v) &&
            !rc_gpu_h264_reconstruction(e, &rec, &lw, &lh) && rec) { /* a skipped picture repeats the reference */
            int fp, fx, fy;
            exact += diff_recon(&v, rec, lw, lh, &fp, &fx, &fy) == 0;
            free(rec);
        }
    }
    printf("blank, then text at 250 kbit/s: %zu bytes (QP %d), %zu (QP %d, %s), %zu (QP %d), %zu (QP %d)\n", bytes[0],
           info[0].qp, bytes[1], info[1].qp, info[1].keyframe ? "IDR" : "P", bytes[2], info[2].qp, bytes[3],
           info[3].qp);
    double budget = 250e3 / 30 / 8;
    CHECK_EQ_INT(exact, 4);
    CHECK_MSG(info[0].keyframe && info[1].keyframe && !info[2].keyframe && bytes[1] < 4 * 8 * budget &&
                  info[2].qp >= info[1].qp + 4 && info[2].qp > 30,
              "blank then text: picture 1 %s at QP %d, %zu bytes; picture 2 at QP %d", info[1].keyframe ? "IDR" : "P",
              info[1].qp, bytes[1], info[2].qp);
    rc_buf_free(&out);
    h264_close(dec);
    free(blank);
    free(text);
    rc_gpu_h264_free(e);
}

/* A rotation's vectors vary smoothly, and the fine search, each macroblock on its own, finds them a quarter sample
 * apart here and there: at a high QP those differences were most of a picture's bits. h264_me's adopt rounds take
 * the P_Skip vector or the predictor where it costs no more: against an encoder without them
 * (RCANVAS_GPU_H264_ME=noadopt), the same P pictures take fewer bytes at about the same PSNR.
 * After the first round a macroblock is looked at again only where a neighbour changed since its last look: against
 * an encoder that looks at every macroblock in every round (RCANVAS_GPU_H264_ME=adoptall) the stream is the same,
 * byte for byte, after fewer looks (counted with adoptcount); on the rotation and on a pan. */
static void test_adopted_vectors(rcanvas_vk *vk, const rc_logger *lg) {
    rc_gpu_h264 *plain = encoder_with(vk, lg, (const char *[]){"RCANVAS_GPU_H264_ME", "noadopt", NULL}), *keep = g_enc;
    /* the two compared byte for byte with the gate open: a gate that closed on a busy CPU would drop the rounds */
    rc_gpu_h264 *skip = encoder_with(
        vk, lg, (const char *[]){"RCANVAS_GPU_H264_GATE", "open", "RCANVAS_GPU_H264_ME", "adoptcount", NULL});
    rc_gpu_h264 *all = encoder_with(
        vk, lg, (const char *[]){"RCANVAS_GPU_H264_ME", "adoptall", "RCANVAS_GPU_H264_GATE", "open", NULL});
    run_stats a = {0}, b = {0}, c = {0}, rot = {0}, pan = {0}, pan_all = {0};
    if (plain && skip && all) {
        a = run_sequence(TF_MOTION_ROTATE, 480, 272, 6, 40, 0, 30, 0);
        g_enc = plain;
        b = run_sequence(TF_MOTION_ROTATE, 480, 272, 6, 40, 0, 30, 0);
        g_enc = skip;
        rot = run_sequence(TF_MOTION_ROTATE, 480, 272, 6, 40, 0, 30, 0);
        pan = run_sequence(TF_MOTION_PAN, 480, 272, 6, 34, 0, 30, 0);
        g_enc = all;
        c = run_sequence(TF_MOTION_ROTATE, 480, 272, 6, 40, 0, 30, 0);
        pan_all = run_sequence(TF_MOTION_PAN, 480, 272, 6, 34, 0, 30, 0);
        g_enc = keep;
    }
    rc_gpu_h264_free(skip);
    rc_gpu_h264_free(all);
    if (!plain) return;
    printf("rotation at QP 40: P pictures %zu bytes, min %.2f dB; without the adopt rounds %zu bytes, min %.2f dB\n",
           a.bytes_after_first, a.min_psnr, b.bytes_after_first, b.min_psnr);
    printf("adopt looks, only where a neighbour changed / every macroblock every round: rotation %ld / %ld (streams "
           "%s), pan %ld / %ld (streams %s)\n", rot.adopt_looks, c.adopt_looks,
           rot.hash == c.hash ? "equal" : "DIFFER", pan.adopt_looks, pan_all.adopt_looks,
           pan.hash == pan_all.hash ? "equal" : "DIFFER");
    CHECK_EQ_INT(a.exact, 6);
    CHECK_EQ_INT(b.exact, 6);
    CHECK_MSG(a.bytes_after_first < b.bytes_after_first && a.min_psnr >= b.min_psnr - 0.3,
              "with adopt rounds %zu bytes %.2f dB, without %zu bytes %.2f dB", a.bytes_after_first, a.min_psnr,
              b.bytes_after_first, b.min_psnr);
    CHECK(rot.exact == 6 && c.exact == 6 && pan.exact == 6 && pan_all.exact == 6);
    CHECK(rot.hash == c.hash && rot.bytes == c.bytes && pan.hash == pan_all.hash && pan.bytes == pan_all.bytes);
    /* every round looks at each of the 30 × 17 macroblocks that is not P_8x8 or intra: at most 3 × 510 a picture;
     * the first round at all of them in both encoders, so more than a third of adoptall's looks means the later
     * rounds looked too (that they change vectors there, which the equal streams need to mean anything, is shown
     * by a mutant that misses changes three dispatches back: its streams differ) */
    CHECK_MSG(c.adopt_looks > 0 && c.adopt_looks <= 5 * 3 * 510 && rot.adopt_looks < c.adopt_looks &&
                  rot.adopt_looks > c.adopt_looks / 3 && pan.adopt_looks < pan_all.adopt_looks &&
                  pan.adopt_looks > pan_all.adopt_looks / 3 && a.adopt_looks == 0 && b.adopt_looks == 0,
              "adopt looks: rotation %ld of %ld, pan %ld of %ld, uncounted %ld and %ld", rot.adopt_looks,
              c.adopt_looks, pan.adopt_looks, pan_all.adopt_looks, a.adopt_looks, b.adopt_looks);
    rc_gpu_h264_free(plain);
}

static void test_rate_control(void) {
    /* 200 kbit/s at 30 fps is 833 bytes a picture: a 320×180 pan starts far above, the QP must rise; 5 Mbit/s
     * (20.8 kB a picture) must let it fall */
    rc_buf out = {0};
    uint8_t *px = malloc(320 * 180 * 4);
    int qps[2] = {0};
    for (int k = 0; k < 2; k++) {
        rc_gpu_h264_request_keyframe(g_enc);
        rc_gpu_h264_info info = {0};
        for (int i = 0; i < 20; i++) {
            tf_motion_draw(TF_MOTION_PAN, (uint32_t)i, 64, 320, 180, px, 320 * 4);
            rc_image img = {px, 320, 180, 320 * 4, RCANVAS_FORMAT_RGBA8, NULL};
            rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = k ? 5000 : 200, .fps = 30};
            rc_buf_clear(&out);
            CHECK_EQ_INT(rc_gpu_h264_encode_cpu(g_enc, &img, &p, 0, &out, &info), RCANVAS_OK);
        }
        qps[k] = info.qp;
        printf("rate control at %d kbit/s: QP %d after 20 pictures, last %zu bytes\n", k ? 5000 : 200, info.qp, out.len);
    }
    CHECK_MSG(qps[0] > 30 && qps[1] < 30, "QP %d at 200 kbit/s, %d at 5 Mbit/s (started at 30)", qps[0], qps[1]);
    rc_buf_free(&out);
    free(px);
}

static void test_rate_control_reaches_low_bitrates(void) {
    /* Dense motion at 1080p (the pan: 40 px a frame over 32 coloured signals) at 2000 and 1000 kbit/s and 60
     * pictures a second, 4.2 and 2.1 kB a picture, where a coded picture takes about 20 kB even at QP 51: the rate
     * control meets each within 20 % over 60 pictures (the IDR picture that starts them aside; under by less than
     * two coded pictures where that is more) with pictures of skipped macroblocks, and every picture, those
     * included, decodes to the encoder's reconstruction exactly (run_sequence checks). */
    static const int targets[] = {2000, 1000};
    for (int k = 0; k < 2; k++) {
        int target = targets[k];
        run_stats st = run_sequence(TF_MOTION_PAN, 1920, 1080, 61, 0, target, 60, 0);
        double kbps = st.frames > 1 ? st.bytes_after_first * 8.0 * 60 / (st.frames - 1) / 1000 : 0;
        double all = st.frames ? st.bytes * 8.0 * 60 / st.frames / 1000 : 0;
        printf("1080p pan at %d kbit/s, 60 fps: %.0f kbit/s over %d P pictures, %d of them skipped; %d exact; the IDR "
               "picture %zu bytes; %.0f kbit/s with it\n", target, kbps, st.frames - 1, st.skipped, st.exact,
               st.bytes - st.bytes_after_first, all);
        CHECK_EQ_INT(st.exact, 61);
        /* within 20 %; below it by less than two coded pictures (at most 30 % of the target): the rate control
         * sends whole pictures and skips the others, and at 1000 kbit/s one coded picture is a sixth of the 60
         * pictures' budget, so where the last ones fall decides a sixth or two of the rate */
        double one = st.max_coded_p * 8.0 * 60 / (st.frames - 1) / 1000;
        double under = fmax(0.2 * target, fmin(2 * one, 0.3 * target));
        CHECK_MSG(kbps >= target - under && kbps <= 1.2 * target, "%.0f kbit/s for %d (one coded picture: %.0f)",
                  kbps, target, one);
        CHECK_MSG(st.skipped > 0 && st.skipped < 60, "%d pictures skipped", st.skipped);
    }
}

/* The deblocking filter runs from QP 16 and changes the reconstruction there, in IDR and P pictures alike; below
 * it no edge can change, so the filter and its slice-header field are left off and the stream is that of an encoder
 * without it (RCANVAS_GPU_H264_DEBLOCK=0). That the filtered pictures are the decoder's is run_sequence's check.
 * Each case codes an IDR picture and then a P picture (the two parities) in both encoders: an IDR picture at QP 12
 * leaves the references equal, so a P picture's difference is its own filter's. */
static void test_deblocking_is_on(rcanvas_vk *vk) {
    const uint32_t w = 176, h = 144;
    const char *env = getenv("RCANVAS_GPU_H264_DEBLOCK");
    if (env && !strcmp(env, "0")) {
        printf("# deblocking: skipped (RCANVAS_GPU_H264_DEBLOCK=0 in the environment: no encoder here has it)\n");
        return;
    }
    /* "1": the filter in every picture from QP 16, whatever else this machine runs (unset, it would turn off on a
     * device it found contended: h264_gpu_gate.h, tested in test_h264_gpu_gate) */
    rc_gpu_h264 *on = NULL, *off = NULL;
    setenv("RCANVAS_GPU_H264_DEBLOCK", "1", 1);
    int r = rc_gpu_h264_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                            rcanvas_vk_queue(vk), NULL, NULL, &on);
    setenv("RCANVAS_GPU_H264_DEBLOCK", "0", 1);
    if (!r)
        r = rc_gpu_h264_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                            rcanvas_vk_queue(vk), NULL, NULL, &off);
    if (env) setenv("RCANVAS_GPU_H264_DEBLOCK", env, 1);
    else unsetenv("RCANVAS_GPU_H264_DEBLOCK");
    CHECK_EQ_INT(r, RCANVAS_OK);
    if (r) {
        rc_gpu_h264_free(on);
        return;
    }
    uint8_t *px = malloc((size_t)w * h * 4);
    rc_buf a = {0}, b = {0};
    static const int qps[3][2] = {{12, 12}, {12, 36}, {36, 36}}; /* IDR, then P */
    for (int c = 0; c < 3; c++) {
        rc_gpu_h264_request_keyframe(on);
        rc_gpu_h264_request_keyframe(off);
        for (int f = 0; f < 2; f++) {
            int qp = qps[c][f];
            tf_motion_draw(TF_MOTION_ROTATE, (uint32_t)f * 3, 64, w, h, px, (size_t)w * 4);
            rc_image img = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
            rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .fps = 30};
            rc_buf_clear(&a);
            rc_buf_clear(&b);
            rc_gpu_h264_info ia, ib;
            CHECK_EQ_INT(rc_gpu_h264_encode_cpu(on, &img, &p, qp, &a, &ia), RCANVAS_OK);
            CHECK_EQ_INT(rc_gpu_h264_encode_cpu(off, &img, &p, qp, &b, &ib), RCANVAS_OK);
            CHECK_EQ_INT(ia.deblocked, qp >= 16);
            CHECK_EQ_INT(ib.deblocked, 0);
            /* the filter runs after the bitstream: the encode returned without waiting for it, and the
             * reconstruction read back below (the next picture's reference) waits */
            CHECK_EQ_INT(rc_gpu_h264_filter_waited(on), qp < 16);
            CHECK(rc_gpu_h264_filter_waited(off));
            uint8_t *ra = NULL, *rb = NULL;
            uint32_t lw = 0, lh = 0;
            CHECK_EQ_INT(rc_gpu_h264_reconstruction(on, &ra, &lw, &lh), RCANVAS_OK);
            CHECK(rc_gpu_h264_filter_waited(on));
            CHECK_EQ_INT(rc_gpu_h264_reconstruction(off, &rb, &lw, &lh), RCANVAS_OK);
            size_t differ = 0;
            for (size_t i = 0; ra && rb && i < (size_t)lw * lh * 3 / 2; i++) differ += ra[i] != rb[i];
            int same_stream = a.len == b.len && !memcmp(rc_buf_data(&a), rc_buf_data(&b), a.len);
            printf("deblocking, %s picture at QP %d: %zu samples of %u changed by the filter; %zu and %zu bytes\n",
                   f ? "P" : "IDR", qp, differ, lw * lh * 3 / 2, a.len, b.len);
            /* the IDR pictures' streams differ in idr_pic_id anyway (the encoders have coded different numbers of
             * them): the P pictures' show the slice header's field */
            if (qp < 16)
                CHECK_MSG(differ == 0 && (f == 0 || same_stream), "%s picture at QP %d: the filter is off below 16 "
                          "(%zu samples differ)", f ? "P" : "IDR", qp, differ);
            else
                CHECK_MSG(differ > 0 && (f == 0 || !same_stream), "%s picture at QP %d: the filter changed no sample",
                          f ? "P" : "IDR", qp);
            free(ra);
            free(rb);
        }
    }
    rc_buf_free(&a);
    rc_buf_free(&b);
    free(px);
    rc_gpu_h264_free(on);
    rc_gpu_h264_free(off);
}

static void test_image_input(rcanvas_vk *vk) {
    const uint32_t w = 200, h = 120;
    uint8_t *px = malloc((size_t)w * h * 4), *bgra = malloc((size_t)w * h * 4);
    rc_buf a = {0}, b = {0};
    for (int f = 0; f < 3; f++) {
        tf_motion_draw(TF_MOTION_ROTATE, (uint32_t)f * 3, 64, w, h, px, (size_t)w * 4);
        for (size_t i = 0; i < (size_t)w * h; i++) /* the same pixels stored as BGRA */
            bgra[i * 4] = px[i * 4 + 2], bgra[i * 4 + 1] = px[i * 4 + 1], bgra[i * 4 + 2] = px[i * 4], bgra[i * 4 + 3] = 255;
        int as_bgra = f == 2;
        VkDeviceMemory mem = VK_NULL_HANDLE;
        VkImage img = upload_image_as(vk, as_bgra ? bgra : px, w, h, as_bgra ? VK_FORMAT_B8G8R8A8_UNORM : VK_FORMAT_R8G8B8A8_UNORM,
                                      VK_IMAGE_USAGE_TRANSFER_SRC_BIT, &mem);
        CHECK(img != VK_NULL_HANDLE);
        if (!img) break;
        rc_image ci = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
        rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .fps = 30};
        rc_buf_clear(&a);
        rc_buf_clear(&b);
        rc_gpu_h264_request_keyframe(g_enc);
        CHECK_EQ_INT(rc_gpu_h264_encode_cpu(g_enc, &ci, &p, 30, &a, NULL), RCANVAS_OK);
        uint8_t *ra = NULL, *rb = NULL;
        uint32_t lw = 0, lh = 0;
        CHECK_EQ_INT(rc_gpu_h264_reconstruction(g_enc, &ra, &lw, &lh), RCANVAS_OK);
        rc_gpu_h264_request_keyframe(g_enc);
        CHECK_EQ_INT(rc_gpu_h264_encode_image(g_enc, img, as_bgra ? VK_FORMAT_B8G8R8A8_UNORM : VK_FORMAT_R8G8B8A8_UNORM,
                                              VK_IMAGE_LAYOUT_GENERAL, w, h, &p, 30, &b, NULL), RCANVAS_OK);
        CHECK_EQ_INT(rc_gpu_h264_reconstruction(g_enc, &rb, &lw, &lh), RCANVAS_OK);
        /* the same picture; the streams differ in idr_pic_id only (its ue(v) length: a byte a slice at most) */
        CHECK_MSG(a.len + 8 >= b.len && b.len + 8 >= a.len && a.len > 100 && ra && rb && !memcmp(ra, rb, (size_t)lw * lh * 3 / 2),
                  "frame %d (%s): %zu bytes from the CPU, %zu from the image", f, as_bgra ? "BGRA" : "RGBA", a.len, b.len);
        free(ra);
        free(rb);
        vkDestroyImage(rcanvas_vk_device(vk), img, NULL);
        vkFreeMemory(rcanvas_vk_device(vk), mem, NULL);
    }
    CHECK_EQ_INT(rc_gpu_h264_encode_image(g_enc, VK_NULL_HANDLE, VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_LAYOUT_GENERAL, w, h,
                                          NULL, 0, &a, NULL), RCANVAS_EINVAL);
    rc_buf_free(&a);
    rc_buf_free(&b);
    free(px);
    free(bgra);
}


/* Frames in a device buffer (a readback ring's staging buffer on the encoder's device): the same picture as from
 * the CPU, with rows at the image's width or at a longer pitch; and the codec table's instance takes that path for
 * an rc_image whose gpu frame is on its device (its pixels black here: the decoded picture shows which was read),
 * and the pixels for a frame on another device. */
static void test_buffer_input(rcanvas_vk *vk) {
    const uint32_t w = 200, h = 120;
    const size_t pitches[3] = {(size_t)w * 4 + 64, (size_t)w * 4, (size_t)w * 4 + 64};
    uint8_t *px = malloc((size_t)w * h * 4), *bgra = malloc((size_t)w * h * 4);
    rc_buf a = {0}, b = {0};
    tf_motion_draw(TF_MOTION_ROTATE, 5, 64, w, h, px, (size_t)w * 4);
    for (size_t i = 0; i < (size_t)w * h; i++) /* the same pixels stored as BGRA */
        bgra[i * 4] = px[i * 4 + 2], bgra[i * 4 + 1] = px[i * 4 + 1], bgra[i * 4 + 2] = px[i * 4], bgra[i * 4 + 3] = 255;
    for (int k = 0; k < 3; k++) { /* RGBA at a longer pitch, RGBA at the width, BGRA at a longer pitch */
        const uint8_t *src = k == 2 ? bgra : px;
        rcanvas_pixel_format fmt = k == 2 ? RCANVAS_FORMAT_BGRA8 : RCANVAS_FORMAT_RGBA8;
        rc_gpu_buf gb = {0};
        VkResult vr = rc_gpu_buf_make(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), &gb, pitches[k] * h,
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT, 1, 0);
        CHECK_MSG(vr == VK_SUCCESS, "buffer: VkResult %d", (int)vr);
        if (vr != VK_SUCCESS) break;
        for (uint32_t y = 0; y < h; y++) memcpy((uint8_t *)gb.map + y * pitches[k], src + (size_t)y * w * 4, (size_t)w * 4);
        rc_image ci = {src, w, h, (size_t)w * 4, fmt, NULL};
        rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .fps = 30};
        rc_buf_clear(&a);
        rc_buf_clear(&b);
        uint8_t *ra = NULL, *rb = NULL;
        uint32_t lw = 0, lh = 0;
        rc_gpu_h264_request_keyframe(g_enc);
        CHECK_EQ_INT(rc_gpu_h264_encode_cpu(g_enc, &ci, &p, 30, &a, NULL), RCANVAS_OK);
        CHECK_EQ_INT(rc_gpu_h264_reconstruction(g_enc, &ra, &lw, &lh), RCANVAS_OK);
        rc_gpu_h264_request_keyframe(g_enc);
        CHECK_EQ_INT(rc_gpu_h264_encode_buffer(g_enc, gb.b, 0, pitches[k], fmt, w, h, &p, 30, &b, NULL), RCANVAS_OK);
        CHECK_EQ_INT(rc_gpu_h264_reconstruction(g_enc, &rb, &lw, &lh), RCANVAS_OK);
        /* the same picture; the streams differ in idr_pic_id only */
        CHECK_MSG(a.len + 8 >= b.len && b.len + 8 >= a.len && a.len > 100 && ra && rb && !memcmp(ra, rb, (size_t)lw * lh * 3 / 2),
                  "case %d (pitch %zu): %zu bytes from the CPU, %zu from the buffer", k, pitches[k], a.len, b.len);
        free(ra);
        free(rb);
        rc_gpu_buf_free(rcanvas_vk_device(vk), &gb);
    }
    CHECK_EQ_INT(rc_gpu_h264_encode_buffer(g_enc, VK_NULL_HANDLE, 0, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, w, h, NULL, 0,
                                           &a, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(rc_gpu_h264_encode_buffer(g_enc, (VkBuffer)(uintptr_t)1, 0, (size_t)w * 4 - 4, RCANVAS_FORMAT_RGBA8, w,
                                           h, NULL, 0, &a, NULL), RCANVAS_EINVAL);

    /* the codec table's instance, on the process-wide device (lavapipe allowed here) */
    setenv("RCANVAS_GPU_CODEC_DEVICE", "any", 1);
    rc_gpu_device *d = NULL;
    rc_codec *c = NULL;
    int r = rc_gpu_device_acquire(NULL, &d);
    CHECK_MSG(r == RCANVAS_OK, "process-wide device: %s", rcanvas_strerror(r));
    if (!r) r = rc_codec_h264_gpu.create(&rc_codec_h264_gpu, &c);
    CHECK_MSG(r == RCANVAS_OK && c, "h264-gpu create: %s", rcanvas_strerror(r));
    rc_gpu_buf gb = {0};
    if (!r && rc_gpu_buf_make(d->phys, d->dev, &gb, pitches[0] * h, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, 1, 0) != VK_SUCCESS)
        r = RCANVAS_EVULKAN;
    void *dec = r ? NULL : h264_open();
    CHECK(r || dec);
    uint8_t *px2 = malloc((size_t)w * h * 4), *pixels = calloc(pitches[0] * h, 1);
    tf_motion_draw(TF_MOTION_ROTATE, 9, 64, w, h, px2, (size_t)w * 4);
    for (int k = 0; dec && k < 2; k++) {
        /* k 0: the picture in a buffer on the codec's device, the pixels black; k 1: another picture in the pixels,
         * the buffer (now said to be on another device) black */
        const uint8_t *want = k == 0 ? px : px2;
        for (uint32_t y = 0; y < h; y++) {
            memcpy((uint8_t *)gb.map + y * pitches[0], px + (size_t)y * w * 4, (size_t)w * 4);
            if (k == 1) memset((uint8_t *)gb.map + y * pitches[0], 0, (size_t)w * 4);
            if (k == 1) memcpy(pixels + y * pitches[0], px2 + (size_t)y * w * 4, (size_t)w * 4);
        }
        rc_gpu_frame f = {.dev = k == 0 ? d->dev : (VkDevice)(uintptr_t)1, .buf = gb.b};
        rc_image img = {pixels, w, h, pitches[0], RCANVAS_FORMAT_RGBA8, &f};
        rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = 20000, .fps = 30};
        rc_encode_info info = {0};
        rc_buf_clear(&a);
        CHECK_EQ_INT(c->type->encode(c, &img, &p, &a, &info), RCANVAS_OK);
        CHECK_EQ_INT((int)rc_gpu_h264_from_buffer((rc_gpu_h264 *)c), 1); /* the first encode only */
        yuv_view v;
        int dr = h264_decode(dec, rc_buf_data(&a), a.len, &v);
        CHECK_MSG(!dr, "frame %d: openh264 did not decode it", k);
        double ps = dr ? 0 : luma_psnr(&v, want, w, h);
        printf("codec table, frame %s: %zu bytes, luma PSNR %.1f dB against the picture\n",
               k == 0 ? "in a device buffer (pixels black)" : "on another device (pixels right)", a.len, ps);
        CHECK_MSG(ps > 30, "frame %d: %.1f dB: not the picture", k, ps);
    }
    free(px2);
    free(pixels);
    free(bgra);
    if (dec) h264_close(dec);
    if (d) rc_gpu_buf_free(d->dev, &gb);
    if (c) c->type->destroy(c);
    rc_gpu_device_release(d);
    rc_buf_free(&a);
    rc_buf_free(&b);
    free(px);
}

/* The sink of test_ring_codec_device: each frame (on the readback thread) through the codec table's h264-gpu. */
typedef struct ring_sink {
    rc_codec *c;
    void *dec;
    const uint8_t *want;
    uint32_t w, h;
    VkDevice dev;
    int frames, on_device, failed;
    double psnr;
} ring_sink;

static void ring_deliver(void *user, const rc_image *img, const rc_vk_damage_info *damage, void (*release)(void *),
                         void *arg) {
    (void)damage;
    ring_sink *s = user;
    rc_buf out = {0};
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = 20000, .fps = 30};
    rc_encode_info info = {0};
    yuv_view v;
    s->on_device += img->gpu && img->gpu->dev == s->dev;
    if (s->c->type->encode(s->c, img, &p, &out, &info) != RCANVAS_OK || h264_decode(s->dec, rc_buf_data(&out), out.len, &v))
        s->failed++;
    else
        s->psnr = luma_psnr(&v, s->want, s->w, s->h);
    rc_buf_free(&out);
    release(arg);
    __atomic_add_fetch(&s->frames, 1, __ATOMIC_RELEASE);
}

/* A readback ring with codec_device: on the GPU codecs' device with a queue of its own, each frame handed on with
 * its staging buffer on that device, which the codec table's h264-gpu reads (the decoded picture is the one
 * presented). Where the device has no queue to spare (Mesa's lavapipe has one), the ring keeps a device of its own:
 * that is checked instead, and the rest skipped. */
static void test_ring_codec_device(void) {
    const uint32_t w = 200, h = 120;
    setenv("RCANVAS_GPU_CODEC_DEVICE", "any", 1);
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.codec_device = 1;
    rcanvas_vk *vk = NULL;
    rc_gpu_device *d = NULL;
    int r = rc_vk_new_internal(NULL, &vc, NULL, &vk);
    CHECK_MSG(r == RCANVAS_OK, "ring: %s", rcanvas_strerror(r));
    if (!r) r = rc_gpu_device_acquire(NULL, &d);
    CHECK_MSG(r == RCANVAS_OK, "process-wide device: %s", rcanvas_strerror(r));
    if (r) {
        rcanvas_vk_free(vk);
        return;
    }
    {   /* without codec_device (the default) a ring keeps a device of its own, spare queue or not */
        rcanvas_vk_config dc;
        rcanvas_vk_config_init(&dc);
        rcanvas_vk *own = NULL;
        CHECK_EQ_INT(rc_vk_new_internal(NULL, &dc, NULL, &own), RCANVAS_OK);
        CHECK(own && rcanvas_vk_device(own) != d->dev);
        rcanvas_vk_free(own);
    }
    if (rcanvas_vk_device(vk) != d->dev) {
        CHECK_EQ_INT((int)(d->nqueues - d->ncodec), 0); /* own device only where no queue was to spare */
        printf("# ring on the GPU codecs' device: skipped (%u queue(s), none to spare: the ring has its own device)\n",
               d->nqueues);
        rcanvas_vk_free(vk);
        rc_gpu_device_release(d);
        return;
    }
    uint8_t *px = malloc((size_t)w * h * 4);
    tf_motion_draw(TF_MOTION_ROTATE, 7, 64, w, h, px, (size_t)w * 4);
    ring_sink s = {.want = px, .w = w, .h = h, .dev = d->dev, .dec = h264_open()};
    r = rc_codec_h264_gpu.create(&rc_codec_h264_gpu, &s.c);
    CHECK_MSG(r == RCANVAS_OK && s.dec, "h264-gpu: %s", rcanvas_strerror(r));
    VkDeviceMemory mem = VK_NULL_HANDLE;
    VkImage img = r ? VK_NULL_HANDLE : upload_image_as(vk, px, w, h, VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_USAGE_TRANSFER_SRC_BIT, &mem);
    if (img && s.dec) {
        rc_vk_set_sink(vk, (rc_vk_sink){.deliver = ring_deliver, .user = &s});
        rcanvas_vk_frame f = {.image = img, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w, .height = h,
                              .layout = VK_IMAGE_LAYOUT_GENERAL};
        CHECK_EQ_INT(rcanvas_present_vk(vk, &f), RCANVAS_OK);
        for (int i = 0; i < 2000 && __atomic_load_n(&s.frames, __ATOMIC_ACQUIRE) < 1; i++) nanosleep(&(struct timespec){0, 10000000}, NULL); /* 20 s */
        CHECK_EQ_INT(__atomic_load_n(&s.frames, __ATOMIC_ACQUIRE), 1);
        CHECK_EQ_INT(s.on_device, 1);
        CHECK_EQ_INT(s.failed, 0);
        CHECK_EQ_INT((int)rc_gpu_h264_from_buffer((rc_gpu_h264 *)s.c), 1);
        uint32_t q = 0;
        while (q + 1 < d->nqueues && d->queues[q] != rcanvas_vk_queue(vk)) q++;
        CHECK_MSG(d->queues[q] == rcanvas_vk_queue(vk) && q >= d->ncodec, "the ring's queue: %u, codec queues %u",
                  q, d->ncodec);
        printf("ring on the GPU codecs' device (queue %u of %u): the frame read from its staging buffer, luma PSNR "
               "%.1f dB\n", q, d->nqueues, s.psnr);
        CHECK_MSG(s.psnr > 30, "%.1f dB: not the picture presented", s.psnr);
    }
    CHECK(img != VK_NULL_HANDLE);
    rcanvas_vk_free(vk); /* waits for the ring's queue */
    if (img) vkDestroyImage(d->dev, img, NULL);
    if (mem) vkFreeMemory(d->dev, mem, NULL);
    if (s.c) s.c->type->destroy(s.c);
    if (s.dec) h264_close(s.dec);
    rc_gpu_device_release(d);
    free(px);
}

/* argv[1] "bit-exact": only the decoder-exact sequences (test_h264_gpu_rows runs them through the deblocking
 * filter's row wave, which a GPU runs by default, on a lavapipe of one thread: CMakeLists.txt says why) */
int main(int argc, char **argv) {
    static const rc_logger lg = {.fn = log_stderr, .level = RCANVAS_LOG_WARN};
    int only_exact = argc > 1 && !strcmp(argv[1], "bit-exact");
    /* the deblocking filter in every picture from QP 16, and intra macroblocks in P pictures and the adopt rounds
     * in every P picture: unset, the encoder turns them off on a device it finds contended (h264_gpu_gate.h),
     * which another test on the same GPU could make it */
    const char *db = getenv("RCANVAS_GPU_H264_DEBLOCK");
    if (!db) setenv("RCANVAS_GPU_H264_DEBLOCK", "1", 1);
    if (!getenv("RCANVAS_GPU_H264_GATE")) setenv("RCANVAS_GPU_H264_GATE", "open", 1);
    g_deblock_env = !(db && !strcmp(db, "0"));
    test_vk_keep_drivers_loaded(); /* sanitizer builds: see tests/lsan.supp */
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.validation = 1;
    rcanvas_vk *vk = NULL;
    int r = rc_vk_new_internal(NULL, &vc, &lg, &vk);
    CHECK_MSG(r == RCANVAS_OK, "no Vulkan device: %s", rcanvas_strerror(r));
    if (r) TEST_MAIN_END();
    const char *wave = getenv("RCANVAS_GPU_H264_WAVE");
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(rcanvas_vk_physical_device(vk), &props);
    if (only_exact && wave && !strcmp(wave, "rows") && props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU &&
        props.vendorID != 0x10DE) { /* where the rows' waiting on each other is not known to hold: not forced */
        printf("# the row wave on %s: skipped (run on lavapipe with one thread, and NVIDIA's devices)\n",
               props.deviceName);
        rcanvas_vk_free(vk);
        TEST_MAIN_END();
    }
    r = rc_gpu_h264_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                        rcanvas_vk_queue(vk), NULL, &lg, &g_enc);
    CHECK_MSG(r == RCANVAS_OK, "rc_gpu_h264_new: %s", rcanvas_strerror(r));
    if (r) TEST_MAIN_END();
#if RCANVAS_BENCH_AVCODEC
    printf("# decoders: openh264%s\n", lavc_h264_available() ? " and libavcodec" : " (" LAVC_SONAME " is not on this machine)");
#else
    printf("# decoders: openh264 (built without libavcodec's headers)\n");
#endif
    test_bit_exact();
    if (only_exact) goto done;
    test_resize_within_macroblocks();
    test_still_is_skipped();
    test_scene_cut();
    test_intra_in_p(vk, &lg);
    test_blank_then_dense(vk, &lg);
    test_adopted_vectors(vk, &lg);
    test_rate_control();
    test_rate_control_reaches_low_bitrates();
    test_deblocking_is_on(vk);
    test_image_input(vk);
    test_buffer_input(vk);
    test_ring_codec_device();
done:
    rc_gpu_h264_free(g_enc);
    CHECK_EQ_INT(rcanvas_vk_validation_errors(vk), 0);
    rcanvas_vk_free(vk);
    TEST_MAIN_END();
}
