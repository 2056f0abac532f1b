/* SPDX-License-Identifier: MIT */
/*
 * bench-anchor — the quality anchor: our H.264 encoder (openh264, exactly as src/codec/h264.c configures
 * it) and our VP9 (libvpx real-time, src/codec/vpx.c) against x264, the usual reference for real-time H.264, at
 * equal target bitrate on the same 1920×1080 sequences; then what chroma subsampling costs on plots, text and renders.
 *
 * Part A (--part a), per sequence, encoder and target bitrate: the actual bitrate, Y / Cb / Cr PSNR of the decoded
 * I420 against the source's I420 (rc_i420_from_image, BT.601 limited; mean of per-frame PSNR) and the encoder's CPU
 * ms per frame (process CPU time around the encode call, RGBA → I420 included for every encoder, mean over frames,
 * the first (key) frame included), on --threads threads (default 1: quality per CPU ms, one core each). Encoders:
 *   openh264      rc_codec_h264: constrained baseline, camera real-time usage, RC_BITRATE_MODE, no frame skip
 *   x264-base-P   libx264, preset P (--x264-presets, default superfast,veryfast), tune zerolatency, profile baseline
 *                 (constrained baseline: no CABAC, no B-frames, no 8×8 transform), ABR with VBV max rate = target
 *                 and a 1 s VBV buffer, infinite GOP (scene cuts: x264's own), decoded by openh264's decoder
 *   x264-high-P   the same with profile high (CABAC, 8×8 transform, still no B-frames: zerolatency), decoded by
 *                 libavcodec (only when built with it)
 *   vp9           rc_codec_vp9: real-time, speed 8, CBR, AQ 3, row-mt, decoded by libvpx
 *   h264-gpu      rc_codec_h264_gpu: H.264 in Vulkan compute shaders on the first Vulkan GPU (a CPU device
 *                 such as lavapipe with RCANVAS_GPU_CODEC_DEVICE=any), its own rate control; CPU ms is the host's
 *                 part (upload, submit, framing) on a GPU; decoded by openh264
 * x264 (GPL) is used only when this program was built with it (CMake finds x264 through pkg-config: make
 * bench-anchor-deps installs it); the library never links it. Without it the x264 rows are skipped, saying so.
 * Sequences (60 frames by default, --frames; 30 fps):
 *   pan-lines     a 1920×1080 window panning (16, 6) px per frame over the 4K line plot (no resampling)
 *   pan40-lines   the same window panning (40, 12) px per frame, turning back at the plot's edges (a fast pan:
 *                 motion past a small search range, and 40 px of new picture at an edge every frame)
 *   zoom-lines    the 4K line plot zooming in from the whole (scaled to 1080p) to 1:1 at its centre (bilinear)
 *   rotate-render the 1080p render turning ±8° around its centre at 1.35× (bilinear): motion no block search follows
 *   slideshow     every corpus frame scaled to 1080p, 8 frames each (hard cuts)
 * Without a corpus (DIR missing) the line plot is tests/testframes.h's generated plot, the render its smooth frame,
 * the slideshow its five kinds.
 *
 * Part B (--part b): chroma. On the 1080p stills (lines, scatter, surface, heatmap, text, render; or the generated
 * kinds) and a generated frame of 1-px coloured lines on white and on black ("thinlines"):
 *   JPEG (rc_codec_jpeg, libturbojpeg) 4:2:0 against 4:4:4 at q75, q85, q95, one frame each;
 *   video: a 1280×720 window panning (8, 4) px per frame over each still, 30 frames, at --chroma-kbps (default
 *   500,1000,2000,4000): openh264 4:2:0 (rc_codec_h264), VP9 profile 0 4:2:0 (rc_codec_vp9) and VP9 profile 1
 *   4:4:4 (libvpx with the same settings as vpx.c, fed I444 from libyuv's ARGBToI444; --vp9-check shows that this
 *   encoder in 4:2:0 writes rc_codec_vp9's bytes).
 * Equal-rate summaries compare each encoder's own rate curve, piecewise linear in log rate (a Bjøntegaard delta
 * without the cubic fit): bits at equal quality and dB at equal bits, over the range both curves cover.
 * Everything in part B is measured on the decoded RGB as a viewer sees it (video: libyuv BT.601 with bilinear chroma
 * upsampling; JPEG: libjpeg-turbo's): RGB PSNR, and Y / Cb / Cr PSNR at full resolution (BT.601 limited of that RGB
 * against the same of the source), and the thin-line error: mean |ΔR|+|ΔG|+|ΔB| / 3 over the source's thin
 * coloured pixels — saturated (max − min channel ≥ 64) and differing (some channel by > 48) from both neighbours left
 * and right, or both above and below: the pixels of 1-px coloured lines and dots.
 * Prints markdown tables; asserts nothing. BENCH_ANCHOR_VERBOSE=1: bytes and PSNR per frame on stderr.
 *   bench-anchor [--part a|b|ab] [--size WxH] [--frames N] [--kbps K,...] [--chroma-kbps K,...] [--threads T]
 *                [--x264-presets P,...] [--seq NAME,...] [--encoders E,...] [DIR]   (--help)
 */
#include <libyuv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <vpx/vp8cx.h>
#include <vpx/vpx_encoder.h>

#include "cli.h"
#include "codec/codec.h"
#include "codec/yuv.h"
#include "core/util.h"
#include "imageio.h"
#include "testframes.h"
#include "video_decoders.h"

#if RCANVAS_BENCH_X264
#include "anchor_x264.h"
#include "bench_util.h"
#endif

/* The picture size: 1920 × 1080, and part A's (--size: AW × AH) while part A runs. */
static int W = 1920, H = 1080, AW = 1920, AH = 1080;
#define FPS 30
#define MAXK 8

/* ---- small helpers ---------------------------------------------------------------------------------------- */


static double sse_plane(const uint8_t *a, int sa, const uint8_t *b, int sb, int w, int h) {
    double se = 0;
    for (int y = 0; y < h; y++) {
        const uint8_t *p = a + (size_t)y * sa, *q = b + (size_t)y * sb;
        int64_t s = 0;
        for (int x = 0; x < w; x++) {
            int e = (int)p[x] - (int)q[x];
            s += e * e;
        }
        se += (double)s;
    }
    return se;
}
static double psnr_of(double sse, double n) {
    double mse = sse / n;
    return mse <= 0 ? 99.0 : 10.0 * log10(255.0 * 255.0 / mse);
}
static double psnr_plane(const uint8_t *a, int sa, const uint8_t *b, int sb, int w, int h) {
    return psnr_of(sse_plane(a, sa, b, sb, w, h), (double)w * h);
}

static int parse_list(const char *prog, const char *opt, const char *v, long lo, long hi, int *out, int *n) {
    char list[256], *save = NULL;
    if (!v) return cli_missing(prog, opt, "a comma-separated list of integers");
    snprintf(list, sizeof list, "%s", v);
    *n = 0;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == MAXK) return cli_error(prog, "%s %s: at most %d values", opt, v, MAXK);
        if (cli_int(prog, opt, t, lo, hi, &out[(*n)++])) return CLI_USAGE;
    }
    if (!*n) return cli_error(prog, "%s %s: empty list", opt, v);
    return 0;
}

/* Does a comma-separated list (NULL: everything) name `name`? */
static int in_list(const char *list, const char *name) {
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, name, n)) return 1;
        p += l + (e ? 1 : 0);
    }
    return 0;
}


/* ---- equal-rate comparisons: piecewise linear in log(rate) (a Bjøntegaard delta without the cubic fit) ------ */

typedef struct rd_point {
    double rate, q; /* bytes or kbit/s; PSNR (or any quality) */
} rd_point;

static int cmp_rate(const void *a, const void *b) {
    double x = ((const rd_point *)a)->rate, y = ((const rd_point *)b)->rate;
    return x < y ? -1 : x > y;
}
static int cmp_q(const void *a, const void *b) {
    double x = ((const rd_point *)a)->q, y = ((const rd_point *)b)->q;
    return x < y ? -1 : x > y;
}
/* The curve's quality at rate r (log-rate interpolation), NAN outside its measured range. pts sorted by rate. */
static double q_at_rate(const rd_point *pts, int n, double r) {
    for (int i = 0; i + 1 < n; i++)
        if (r >= pts[i].rate && r <= pts[i + 1].rate) {
            double f = pts[i + 1].rate > pts[i].rate ? log(r / pts[i].rate) / log(pts[i + 1].rate / pts[i].rate) : 0;
            return pts[i].q + f * (pts[i + 1].q - pts[i].q);
        }
    return n == 1 && r == pts[0].rate ? pts[0].q : NAN;
}
/* log(rate) at quality q; pts sorted by quality. NAN outside. */
static double lr_at_q(const rd_point *pts, int n, double q) {
    for (int i = 0; i + 1 < n; i++)
        if (q >= pts[i].q && q <= pts[i + 1].q) {
            double f = pts[i + 1].q > pts[i].q ? (q - pts[i].q) / (pts[i + 1].q - pts[i].q) : 0;
            return log(pts[i].rate) + f * (log(pts[i + 1].rate) - log(pts[i].rate));
        }
    return NAN;
}
/* Rate of `test` against `ref` at equal quality, mean over their common quality range: 0.8 = 20 % fewer bits. NAN
 * without overlap. Also *dq: mean quality difference (test − ref) at equal rate over the common rate range. */
static double rd_delta(const rd_point *ref_in, const rd_point *test_in, int n, double *dq) {
    rd_point a[MAXK * 2], b[MAXK * 2];
    memcpy(a, ref_in, sizeof(rd_point) * (size_t)n), memcpy(b, test_in, sizeof(rd_point) * (size_t)n);
    qsort(a, (size_t)n, sizeof *a, cmp_rate), qsort(b, (size_t)n, sizeof *b, cmp_rate);
    double lo = fmax(a[0].rate, b[0].rate), hi = fmin(a[n - 1].rate, b[n - 1].rate), sum = 0;
    int m = 0;
    *dq = NAN;
    for (int i = 0; i <= 32 && hi > lo; i++) {
        double r = lo * pow(hi / lo, i / 32.0), d = q_at_rate(b, n, r) - q_at_rate(a, n, r);
        if (!isnan(d)) sum += d, m++;
    }
    if (m) *dq = sum / m;
    qsort(a, (size_t)n, sizeof *a, cmp_q), qsort(b, (size_t)n, sizeof *b, cmp_q);
    lo = fmax(a[0].q, b[0].q), hi = fmin(a[n - 1].q, b[n - 1].q), sum = 0, m = 0;
    for (int i = 0; i <= 32 && hi > lo; i++) {
        double q = lo + (hi - lo) * i / 32.0, d = lr_at_q(b, n, q) - lr_at_q(a, n, q);
        if (!isnan(d)) sum += d, m++;
    }
    return m ? exp(sum / m) : NAN;
}
static const char *fmt_ratio(char *buf, size_t cap, double r, double dq) {
    char a[16] = "–", b[16] = "–";
    if (!isnan(r)) snprintf(a, sizeof a, "%.2f", r);
    if (!isnan(dq)) snprintf(b, sizeof b, "%+.2f", dq);
    snprintf(buf, cap, "%s / %s", a, b);
    return buf;
}

/* ---- sources and sequences ------------------------------------------------------------------------------------ */

typedef struct still {
    char name[64];
    uint8_t *rgba;
    uint32_t w, h;
} still;

static int load_still(const char *dir, const char *file, still *s) {
    char path[4096], err[256];
    if (!dir) return -1;
    snprintf(path, sizeof path, "%s/%s.png", dir, file);
    if (rc_image_load(path, &s->rgba, &s->w, &s->h, err, sizeof err)) return -1;
    snprintf(s->name, sizeof s->name, "%s", file);
    return 0;
}
static void gen_still(tf_kind k, uint32_t w, uint32_t h, const char *name, still *s) {
    s->rgba = tf_new(k, w, h);
    s->w = w, s->h = h;
    snprintf(s->name, sizeof s->name, "%s", name);
}

/* A still scaled (box filter) to W × H, new buffer. */
static uint8_t *to_1080p(const still *s) {
    uint8_t *d = malloc((size_t)W * H * 4);
    if (d) ARGBScale(s->rgba, (int)s->w * 4, (int)s->w, (int)s->h, d, W * 4, W, H, kFilterBox);
    return d;
}

/* Rotation by a about the centre, scaled by z, bilinear, into W × H (src is W × H too). */
static void rotate_frame(const uint8_t *src, double a, double z, uint8_t *dst) {
    double c = cos(a) / z, s = sin(a) / z, cx = W / 2.0, cy = H / 2.0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
            double sx = c * dx - s * dy + cx - 0.5, sy = s * dx + c * dy + cy - 0.5;
            int x0 = (int)floor(sx), y0 = (int)floor(sy);
            double fx = sx - x0, fy = sy - y0;
            if (x0 < 0) x0 = 0, fx = 0;
            if (y0 < 0) y0 = 0, fy = 0;
            if (x0 > W - 2) x0 = W - 2, fx = 1;
            if (y0 > H - 2) y0 = H - 2, fy = 1;
            const uint8_t *p = src + ((size_t)y0 * W + (size_t)x0) * 4;
            uint8_t *o = dst + ((size_t)y * W + (size_t)x) * 4;
            for (int ch = 0; ch < 4; ch++) {
                double v = (1 - fy) * ((1 - fx) * p[ch] + fx * p[4 + ch]) +
                           fy * ((1 - fx) * p[W * 4 + ch] + fx * p[W * 4 + 4 + ch]);
                o[ch] = (uint8_t)(v + 0.5);
            }
        }
}

/* A sequence: n frames of W × H RGBA and their I420, rendered once. */
typedef struct sequence {
    char name[64];
    int n;
    uint8_t **rgba;
    rc_i420 *ref;
} sequence;

static void seq_free(sequence *q) {
    for (int i = 0; i < q->n; i++) {
        free(q->rgba[i]);
        rc_i420_free(&q->ref[i]);
    }
    free(q->rgba);
    free(q->ref);
    memset(q, 0, sizeof *q);
}

static int seq_alloc(sequence *q, const char *name, int n) {
    snprintf(q->name, sizeof q->name, "%s", name);
    q->n = n;
    q->rgba = calloc((size_t)n, sizeof *q->rgba);
    q->ref = calloc((size_t)n, sizeof *q->ref);
    if (!q->rgba || !q->ref) return -1;
    for (int i = 0; i < n; i++)
        if (!(q->rgba[i] = malloc((size_t)W * H * 4))) return -1;
    return 0;
}
static int seq_refs(sequence *q) {
    for (int i = 0; i < q->n; i++) {
        rc_image img = {q->rgba[i], W, H, (size_t)W * 4, RCANVAS_FORMAT_RGBA8, NULL};
        if (rc_i420_from_image(&q->ref[i], &img)) return -1;
    }
    return 0;
}

/* pan-lines: a W × H window moving (16, 6) px per frame from the top left of the big plot (wrapping if short). */
static int seq_pan(sequence *q, const still *big, int n) {
    if (seq_alloc(q, "pan-lines", n)) return -1;
    int rx = (int)big->w - W, ry = (int)big->h - H;
    for (int i = 0; i < n; i++) {
        int x0 = rx > 0 ? (16 * i) % (rx + 1) : 0, y0 = ry > 0 ? (6 * i) % (ry + 1) : 0;
        ARGBCopy(big->rgba + ((size_t)y0 * big->w + (size_t)x0) * 4, (int)big->w * 4, q->rgba[i], W * 4, W, H);
    }
    return seq_refs(q);
}
/* pan40-lines: (40, 12) px per frame, back and forth between the plot's edges (a triangle wave, no wrap: a wrap
 * would be a cut, which the slideshow measures). */
static int tri(int v, int r) { /* v folded into 0..r */
    if (r <= 0) return 0;
    v %= 2 * r;
    return v <= r ? v : 2 * r - v;
}
static int seq_pan40(sequence *q, const still *big, int n) {
    if (seq_alloc(q, "pan40-lines", n)) return -1;
    int rx = (int)big->w - W, ry = (int)big->h - H;
    for (int i = 0; i < n; i++) {
        int x0 = tri(40 * i, rx), y0 = tri(12 * i, ry);
        ARGBCopy(big->rgba + ((size_t)y0 * big->w + (size_t)x0) * 4, (int)big->w * 4, q->rgba[i], W * 4, W, H);
    }
    return seq_refs(q);
}
/* zoom-lines: the viewport shrinks geometrically from the whole picture to W × H source pixels at its centre. */
static int seq_zoom(sequence *q, const still *big, int n) {
    if (seq_alloc(q, "zoom-lines", n)) return -1;
    double zmax = (double)big->w / W;
    for (int i = 0; i < n; i++) {
        double z = pow(zmax < 1 ? 1 : zmax, (double)i / (n - 1)); /* 1 … big/W */
        int vw = (int)(big->w / z) & ~1, vh = (int)(big->h / z) & ~1;
        int x0 = ((int)big->w - vw) / 2, y0 = ((int)big->h - vh) / 2;
        ARGBScale(big->rgba + ((size_t)y0 * big->w + (size_t)x0) * 4, (int)big->w * 4, vw, vh, q->rgba[i], W * 4, W,
                  H, kFilterBilinear);
    }
    return seq_refs(q);
}
/* rotate-render: ±8° (one period over the sequence), 1.35× so no corner leaves the picture. */
static int seq_rotate(sequence *q, const still *render, int n) {
    if (seq_alloc(q, "rotate-render", n)) return -1;
    uint8_t *base = to_1080p(render);
    if (!base) return -1;
    for (int i = 0; i < n; i++)
        rotate_frame(base, 8.0 * M_PI / 180.0 * sin(2 * M_PI * i / n), 1.35, q->rgba[i]);
    free(base);
    return seq_refs(q);
}
/* slideshow: each still at 1080p, `hold` frames each. */
static int seq_slides(sequence *q, const still *s, int ns, int hold) {
    if (seq_alloc(q, "slideshow", ns * hold)) return -1;
    for (int k = 0; k < ns; k++) {
        uint8_t *f = to_1080p(&s[k]);
        if (!f) return -1;
        for (int j = 0; j < hold; j++) memcpy(q->rgba[k * hold + j], f, (size_t)W * H * 4);
        free(f);
    }
    return seq_refs(q);
}

/* ---- encoders ------------------------------------------------------------------------------------------------- */

/* An encoder under test: RGBA frame in, one packet out. */
typedef struct anchor_enc {
    char name[32];
    const video_decoder *dec;
    void *(*open)(const struct anchor_enc *e, int w, int h, int kbps, int threads);
    int (*encode)(void *s, const uint8_t *rgba, int w, int h, size_t pitch, rc_buf *out);
    void (*close)(void *s);
    const rc_codec_type *type; /* rc_codec encoders */
    const char *preset, *profile; /* x264 */
    int i444;                  /* vp9 direct: profile 1 */
} anchor_enc;

/* rc_codec (openh264, VP9 as the library runs them). */
typedef struct rcc_state {
    rc_codec *c;
    rc_encode_params p;
} rcc_state;
static void *rcc_open(const anchor_enc *e, int w, int h, int kbps, int threads) {
    (void)w, (void)h;
    rcc_state *s = calloc(1, sizeof *s);
    if (!s || rc_codec_new(e->type, &s->c)) {
        free(s);
        return NULL;
    }
    s->p = (rc_encode_params){.codec = (rcanvas_codec)e->type->wire_id, .bitrate_kbps = kbps,
                              .keyframe_interval = 0, .threads = threads, .fps = FPS};
    return s;
}
static int rcc_encode(void *sp, const uint8_t *rgba, int w, int h, size_t pitch, rc_buf *out) {
    rcc_state *s = sp;
    rc_image img = {rgba, (uint32_t)w, (uint32_t)h, pitch, RCANVAS_FORMAT_RGBA8, NULL};
    rc_encode_info info;
    if (rc_codec_encode(s->c, &img, &s->p, out, &info)) {
        fprintf(stderr, "bench-anchor: %s: %s\n", s->c->type->name, rc_codec_error(s->c));
        return -1;
    }
    return 0;
}
static void rcc_close(void *sp) {
    rcc_state *s = sp;
    rc_codec_free(s->c);
    free(s);
}

/* VP9 profile 1 (4:4:4) straight through libvpx, configured as src/codec/vpx.c configures profile 0 (lag 0, CBR,
 * 1 s rate buffer, q 2–56, speed 8, row-mt, AQ 3, default content tuning, BT.601 studio range, no keyframes but the
 * first). With i444 0 the same code codes I420 as profile 0: a check that it matches rc_codec_vp9 (--vp9-check). */
typedef struct vp9d_state {
    vpx_codec_ctx_t ctx;
    vpx_image_t img;
    uint8_t *argb, *planes;
    int i444;
    vpx_codec_pts_t pts;
    rc_i420 yuv;
} vp9d_state;
static void vp9d_close(void *sp) {
    vp9d_state *s = sp;
    vpx_codec_destroy(&s->ctx);
    free(s->argb);
    free(s->planes);
    rc_i420_free(&s->yuv);
    free(s);
}
static void *vp9d_open(const anchor_enc *e, int w, int h, int kbps, int threads) {
    vp9d_state *s = calloc(1, sizeof *s);
    vpx_codec_enc_cfg_t cfg;
    if (!s || vpx_codec_enc_config_default(vpx_codec_vp9_cx(), &cfg, 0)) {
        free(s);
        return NULL;
    }
    s->i444 = e->i444;
    cfg.g_w = (unsigned)w, cfg.g_h = (unsigned)h;
    cfg.g_profile = e->i444 ? 1 : 0;
    cfg.g_timebase.num = 1000, cfg.g_timebase.den = FPS * 1000;
    cfg.g_pass = VPX_RC_ONE_PASS;
    cfg.g_lag_in_frames = 0;
    cfg.g_error_resilient = 0;
    cfg.rc_end_usage = VPX_CBR;
    cfg.rc_dropframe_thresh = 0;
    cfg.rc_resize_allowed = 0;
    cfg.rc_buf_initial_sz = 500, cfg.rc_buf_optimal_sz = 600, cfg.rc_buf_sz = 1000;
    cfg.rc_min_quantizer = 2, cfg.rc_max_quantizer = 56;
    cfg.rc_target_bitrate = (unsigned)kbps;
    cfg.g_threads = (unsigned)threads;
    cfg.kf_mode = VPX_KF_DISABLED;
    int tiles = 0;
    while (tiles < 6 && (2 << tiles) <= threads) tiles++;
    if (vpx_codec_enc_init(&s->ctx, vpx_codec_vp9_cx(), &cfg, 0) != VPX_CODEC_OK) {
        fprintf(stderr, "bench-anchor: vp9 profile %u: vpx_codec_enc_init failed\n", cfg.g_profile);
        free(s);
        return NULL;
    }
    vpx_codec_control(&s->ctx, VP8E_SET_CPUUSED, 8);
    vpx_codec_control(&s->ctx, VP9E_SET_ROW_MT, 1);
    vpx_codec_control(&s->ctx, VP9E_SET_TILE_COLUMNS, tiles);
    vpx_codec_control(&s->ctx, VP9E_SET_AQ_MODE, 3);
    vpx_codec_control(&s->ctx, VP9E_SET_TUNE_CONTENT, VP9E_CONTENT_DEFAULT);
    vpx_codec_control(&s->ctx, VP9E_SET_COLOR_SPACE, VPX_CS_BT_601);
    vpx_codec_control(&s->ctx, VP9E_SET_COLOR_RANGE, VPX_CR_STUDIO_RANGE);
    if (e->i444) {
        s->argb = malloc((size_t)w * h * 4);
        s->planes = malloc((size_t)w * h * 3);
        if (!s->argb || !s->planes) {
            vp9d_close(s);
            return NULL;
        }
        vpx_img_wrap(&s->img, VPX_IMG_FMT_I444, (unsigned)w, (unsigned)h, 1, s->planes);
    }
    return s;
}
static int vp9d_encode(void *sp, const uint8_t *rgba, int w, int h, size_t pitch, rc_buf *out) {
    vp9d_state *s = sp;
    if (s->i444) {
        ABGRToARGB(rgba, (int)pitch, s->argb, w * 4, w, h);
        ARGBToI444(s->argb, w * 4, s->img.planes[0], s->img.stride[0], s->img.planes[1], s->img.stride[1],
                   s->img.planes[2], s->img.stride[2], w, h);
    } else {
        rc_image img = {rgba, (uint32_t)w, (uint32_t)h, pitch, RCANVAS_FORMAT_RGBA8, NULL};
        if (rc_i420_from_image(&s->yuv, &img)) return -1;
        vpx_img_wrap(&s->img, VPX_IMG_FMT_I420, (unsigned)w, (unsigned)h, 1, s->yuv.mem);
        s->img.planes[0] = s->yuv.y, s->img.planes[1] = s->yuv.u, s->img.planes[2] = s->yuv.v;
        s->img.stride[0] = s->yuv.stride_y, s->img.stride[1] = s->img.stride[2] = s->yuv.stride_uv;
    }
    s->img.cs = VPX_CS_BT_601;
    s->img.range = VPX_CR_STUDIO_RANGE;
    if (vpx_codec_encode(&s->ctx, &s->img, s->pts++, 1, 0, VPX_DL_REALTIME) != VPX_CODEC_OK) {
        fprintf(stderr, "bench-anchor: vp9: %s\n", vpx_codec_error(&s->ctx));
        return -1;
    }
    const vpx_codec_cx_pkt_t *pkt;
    vpx_codec_iter_t it = NULL;
    int frames = 0;
    while ((pkt = vpx_codec_get_cx_data(&s->ctx, &it)))
        if (pkt->kind == VPX_CODEC_CX_FRAME_PKT) {
            frames++;
            if (rc_buf_append(out, pkt->data.frame.buf, pkt->data.frame.sz)) return -1;
        }
    return frames == 1 ? 0 : -1;
}

#if RCANVAS_BENCH_X264
/* x264 lives in its own file (its NAL enums clash with openh264's header; and the GPL code stays apart). */
static void *x264s_open(const anchor_enc *e, int w, int h, int kbps, int threads) {
    return anchor_x264_open(e->preset, e->profile, w, h, FPS, kbps, threads);
}
static int x264s_encode(void *s, const uint8_t *rgba, int w, int h, size_t pitch, rc_buf *out) {
    return anchor_x264_encode(s, rgba, w, h, pitch, out);
}
static void x264s_close(void *s) { anchor_x264_close(s); }
#endif

/* ---- part A ---------------------------------------------------------------------------------------------------- */

typedef struct result {
    double kbps, py, pu, pv, cpu_ms;
    int ok;
} result;

static result run_seq(const anchor_enc *e, const sequence *q, int kbps, int threads) {
    result r = {0};
    void *s = e->open(e, W, H, kbps, threads);
    void *d = e->dec->open();
    rc_buf pkt = {0};
    double bytes = 0, cpu = 0;
    if (!s || !d) goto out;
    for (int i = 0; i < q->n; i++) {
        rc_buf_clear(&pkt);
        int64_t c0 = bench_cpu_us();
        int rc = e->encode(s, q->rgba[i], W, H, (size_t)W * 4, &pkt);
        cpu += (double)(bench_cpu_us() - c0) / 1000.0;
        yuv_view v;
        if (rc || e->dec->decode(d, rc_buf_data(&pkt), pkt.len, &v) || v.w != W || v.h != H || v.chroma444) {
            fprintf(stderr, "bench-anchor: %s on %s at %d kbit/s: frame %d does not encode or decode\n", e->name,
                    q->name, kbps, i);
            goto out;
        }
        const rc_i420 *ref = &q->ref[i];
        bytes += (double)pkt.len;
        double py = psnr_plane(v.y, v.stride_y, ref->y, ref->stride_y, W, H);
        if (getenv("BENCH_ANCHOR_VERBOSE")) fprintf(stderr, "%s %s %d: frame %d %zu bytes Y %.2f dB\n", q->name, e->name, kbps, i, pkt.len, py);
        r.py += py / q->n;
        r.pu += psnr_plane(v.u, v.stride_uv, ref->u, ref->stride_uv, W / 2, H / 2) / q->n;
        r.pv += psnr_plane(v.v, v.stride_uv, ref->v, ref->stride_uv, W / 2, H / 2) / q->n;
    }
    r.kbps = bytes * 8.0 * FPS / q->n / 1000.0;
    r.cpu_ms = cpu / q->n;
    r.ok = 1;
out:
    if (s) e->close(s);
    if (d) e->dec->close(d);
    rc_buf_free(&pkt);
    return r;
}

/* The equal-quality summary: each encoder's measured curve against encoder `r`'s (bits at equal Y PSNR, dB at
 * equal bits), per sequence and their geometric mean, with each encoder's CPU ms per frame at each target. */
#define NSEQ 5
static const char *const seq_names[NSEQ] = {"pan-lines", "pan40-lines", "zoom-lines", "rotate-render", "slideshow"};
static void summary(result (*res)[16][MAXK], const char *const *seqname, int nseq, const anchor_enc *enc, int ne,
                    const int *kbps, int nk, int r) {
    printf("\n### A, at equal quality and equal bitrate: each encoder against %s (Y PSNR; piecewise linear "
           "in log rate over the common range)\n\n| encoder |",
           enc[r].name);
    for (int q = 0; q < nseq; q++) printf(" %s: bits / dB |", seqname[q]);
    printf(" mean: bits / dB | CPU ms/frame (mean, per target) |\n|---|");
    for (int q = 0; q <= nseq + 1; q++) printf("---|");
    printf("\n");
    for (int c = 0; c < ne; c++) {
        printf("| %s |", enc[c].name);
        double lsum = 0, dsum = 0;
        int nl = 0, nd = 0;
        for (int q = 0; q < nseq; q++) {
            rd_point ref[MAXK], test[MAXK];
            int ok = 1;
            for (int k = 0; k < nk; k++) {
                ok &= res[q][r][k].ok && res[q][c][k].ok;
                ref[k] = (rd_point){res[q][r][k].kbps, res[q][r][k].py};
                test[k] = (rd_point){res[q][c][k].kbps, res[q][c][k].py};
            }
            double dq = NAN, rr = ok ? rd_delta(ref, test, nk, &dq) : NAN;
            char b[48];
            printf(" %s |", fmt_ratio(b, sizeof b, rr, ok ? dq : NAN));
            if (ok && !isnan(rr)) lsum += log(rr), nl++;
            if (ok && !isnan(dq)) dsum += dq, nd++;
        }
        char b[48];
        printf(" %s |", fmt_ratio(b, sizeof b, nl ? exp(lsum / nl) : NAN, nd ? dsum / nd : NAN));
        for (int k = 0; k < nk; k++) {
            double cpu = 0;
            int n = 0;
            for (int q = 0; q < nseq; q++)
                if (res[q][c][k].ok) cpu += res[q][c][k].cpu_ms, n++;
            printf("%s%.1f", k ? " / " : " ", n ? cpu / n : NAN);
        }
        printf(" |\n");
    }
    printf("\nbits: the encoder's bitrate / %s's at equal Y PSNR (0.70 = 30 %% fewer bits); dB: its Y PSNR "
           "− %s's at equal bitrate; CPU ms at targets",
           enc[r].name, enc[r].name);
    for (int k = 0; k < nk; k++) printf(" %d", kbps[k]);
    printf(" kbit/s.\n");
    fflush(stdout);
}

/* ---- part B ---------------------------------------------------------------------------------------------------- */

/* A still at full resolution as BT.601 limited I444 (libyuv), for the Y / Cb / Cr figures, and its thin-line mask. */
typedef struct yuv444 {
    uint8_t *y, *u, *v;
    int w, h; /* stride = w */
} yuv444;

static int to_i444(const uint8_t *rgba, size_t pitch, int w, int h, uint8_t *argb_tmp, yuv444 *o) {
    if (!o->y) {
        o->w = w, o->h = h;
        o->y = malloc((size_t)w * h * 3);
        if (!o->y) return -1;
        o->u = o->y + (size_t)w * h;
        o->v = o->u + (size_t)w * h;
    }
    ABGRToARGB(rgba, (int)pitch, argb_tmp, w * 4, w, h);
    ARGBToI444(argb_tmp, w * 4, o->y, w, o->u, w, o->v, w, w, h);
    return 0;
}

static int chan_diff(const uint8_t *a, const uint8_t *b) {
    int m = 0;
    for (int c = 0; c < 3; c++) {
        int d = abs((int)a[c] - (int)b[c]);
        if (d > m) m = d;
    }
    return m;
}
/* The thin coloured pixels of an RGBA still (see the top comment): 1 per pixel, count in *n. */
static uint8_t *thin_mask(const still *s, long *n) {
    int w = (int)s->w, h = (int)s->h;
    uint8_t *m = calloc((size_t)w * h, 1);
    *n = 0;
    if (!m) return NULL;
    for (int y = 1; y < h - 1; y++)
        for (int x = 1; x < w - 1; x++) {
            const uint8_t *p = s->rgba + ((size_t)y * w + x) * 4;
            int mx = p[0] > p[1] ? p[0] : p[1], mn = p[0] < p[1] ? p[0] : p[1];
            mx = p[2] > mx ? p[2] : mx, mn = p[2] < mn ? p[2] : mn;
            if (mx - mn < 64) continue;
            int hz = chan_diff(p, p - 4) > 48 && chan_diff(p, p + 4) > 48;
            int vt = chan_diff(p, p - (size_t)w * 4) > 48 && chan_diff(p, p + (size_t)w * 4) > 48;
            if (hz || vt) m[(size_t)y * w + x] = 1, (*n)++;
        }
    return m;
}

/* The generated thin-lines frame: white top half, near-black bottom half; in each, 1-px horizontal lines every 12
 * rows, vertical lines every 20 columns, and 1-px sine curves, in matplotlib's tab10 colours and pure RGB/CMY. */
static void gen_thinlines(still *s) {
    static const uint8_t pal[][3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                                     {148, 103, 189}, {227, 119, 194}, {188, 189, 34}, {23, 190, 207},
                                     {255, 0, 0},     {0, 200, 0},    {0, 0, 255},    {255, 0, 255}};
    const int np = (int)(sizeof pal / sizeof pal[0]);
    s->w = W, s->h = H;
    s->rgba = malloc((size_t)W * H * 4);
    snprintf(s->name, sizeof s->name, "thinlines (generated)");
    if (!s->rgba) return;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = s->rgba + ((size_t)y * W + x) * 4, bg = y < H / 2 ? 255 : 24;
            p[0] = p[1] = p[2] = bg, p[3] = 255;
        }
#define PUT(X, Y, K)                                                                                               \
    do {                                                                                                           \
        int px_ = (X), py_ = (Y);                                                                                  \
        if (px_ >= 0 && px_ < W && py_ >= 0 && py_ < H) {                                                          \
            uint8_t *p_ = s->rgba + ((size_t)py_ * W + px_) * 4;                                                   \
            p_[0] = pal[(K) % np][0], p_[1] = pal[(K) % np][1], p_[2] = pal[(K) % np][2];                          \
        }                                                                                                          \
    } while (0)
    for (int half = 0; half < 2; half++) {
        int y0 = half * H / 2, y1 = y0 + H / 2;
        for (int y = y0 + 6, k = 0; y < y1 - 6; y += 12, k++)
            for (int x = 0; x < W / 3; x++) PUT(x, y, k + half);
        for (int x = W / 3 + 10, k = 0; x < 2 * W / 3; x += 20, k++)
            for (int y = y0 + 4; y < y1 - 4; y++) PUT(x, y, k + 3 + half);
        for (int c = 0; c < 6; c++) { /* sine curves, connected column to column (1-px steps) */
            int prev = -1;
            for (int x = 2 * W / 3; x < W; x++) {
                double ph = (x - 2 * W / 3) / (40.0 + 13.0 * c);
                int y = y0 + 40 + c * 80 + (int)lround(30.0 * sin(ph + c));
                if (prev >= 0)
                    for (int yy = prev < y ? prev + 1 : y; yy < (prev < y ? y : prev); yy++) PUT(x, yy, c + 5 * half);
                PUT(x, y, c + 5 * half);
                prev = y;
            }
        }
    }
#undef PUT
}

/* What a decoded RGB picture lost against the source window: RGB, Y, Cb, Cr PSNR, and the thin-line error. */
typedef struct chroma_err {
    double rgb, y, u, v, line_mae;
} chroma_err;

static chroma_err compare_rgb(const uint8_t *dec, int w, int h, const still *s, int x0, int y0, const yuv444 *sref,
                              const uint8_t *mask, uint8_t *argb_tmp, yuv444 *dyuv) {
    chroma_err e = {0};
    double se_rgb = 0, line_err = 0;
    long nline = 0;
    for (int y = 0; y < h; y++) {
        const uint8_t *a = dec + (size_t)y * w * 4, *b = s->rgba + ((size_t)(y0 + y) * s->w + x0) * 4;
        const uint8_t *m = mask + (size_t)(y0 + y) * s->w + x0;
        int64_t row = 0;
        for (int x = 0; x < w; x++) {
            int d0 = a[4 * x] - b[4 * x], d1 = a[4 * x + 1] - b[4 * x + 1], d2 = a[4 * x + 2] - b[4 * x + 2];
            row += d0 * d0 + d1 * d1 + d2 * d2;
            if (m[x]) line_err += (abs(d0) + abs(d1) + abs(d2)) / 3.0, nline++;
        }
        se_rgb += (double)row;
    }
    e.rgb = psnr_of(se_rgb, 3.0 * w * h);
    e.line_mae = nline ? line_err / nline : -1;
    to_i444(dec, (size_t)w * 4, w, h, argb_tmp, dyuv);
    size_t off = (size_t)y0 * s->w + x0;
    e.y = psnr_plane(dyuv->y, w, sref->y + off, (int)s->w, w, h);
    e.u = psnr_plane(dyuv->u, w, sref->u + off, (int)s->w, w, h);
    e.v = psnr_plane(dyuv->v, w, sref->v + off, (int)s->w, w, h);
    return e;
}

/* A decoded picture (I420 or I444) to RGBA, BT.601 limited, bilinear chroma (libyuv's "ABGR" = bytes R,G,B,A:
 * its ARGB functions with U and V swapped and the YVU constants). */
static void view_to_rgba(const yuv_view *v, uint8_t *dst) {
    if (v->chroma444)
        I444ToARGBMatrix(v->y, v->stride_y, v->v, v->stride_uv, v->u, v->stride_uv, dst, v->w * 4, &kYvuI601Constants,
                         v->w, v->h);
    else
        I420ToARGBMatrixFilter(v->y, v->stride_y, v->v, v->stride_uv, v->u, v->stride_uv, dst, v->w * 4,
                               &kYvuI601Constants, v->w, v->h, kFilterBilinear);
}

#define BW 1280
#define BH 720
#define BFRAMES 30

static void part_b(still *st, int nst, const int *kbps, int nk, int threads) {
    rc_codec *jpeg;
    if (rc_codec_new(&rc_codec_jpeg, &jpeg)) return;
    uint8_t *argb = malloc((size_t)W * H * 4), *dec_rgba = malloc((size_t)W * H * 4);
    yuv444 dyuv = {0};
    rc_buf pkt = {0};
    yuv444 *sref = calloc((size_t)nst, sizeof *sref);
    uint8_t **mask = calloc((size_t)nst, sizeof *mask);
    long *nmask = calloc((size_t)nst, sizeof *nmask);
    if (!argb || !dec_rgba || !sref || !mask || !nmask) return;
    for (int i = 0; i < nst; i++) {
        uint8_t *tmp = malloc((size_t)st[i].w * st[i].h * 4);
        if (!tmp || to_i444(st[i].rgba, (size_t)st[i].w * 4, (int)st[i].w, (int)st[i].h, tmp, &sref[i])) return;
        free(tmp);
        mask[i] = thin_mask(&st[i], &nmask[i]);
        if (!mask[i]) return;
    }

    printf("\n### B1. JPEG 4:2:0 against 4:4:4 (libturbojpeg, one frame each, full size)\n\n");
    printf("| still (thin-line px) | q | bytes 4:2:0 / 4:4:4 (ratio) | RGB PSNR dB | Y PSNR | Cb PSNR | Cr PSNR | "
           "thin-line error |\n|---|---|---|---|---|---|---|---|\n");
    /* A grid of qualities for the equal-bytes comparison; the table prints 75, 85, 95. */
    static const int qs[] = {50, 60, 70, 75, 80, 85, 90, 95, 98};
    enum { NQS = sizeof qs / sizeof qs[0] };
    rd_point (*jp)[2][3][NQS] = calloc((size_t)nst, sizeof *jp); /* [still][ss][rgb, y, -line][q] */
    if (!jp) return;
    for (int i = 0; i < nst; i++)
        for (int qi = 0; qi < NQS; qi++) {
            size_t bytes[2];
            chroma_err ce[2];
            for (int ss = 0; ss < 2; ss++) {
                rc_encode_params p = {.codec = RCANVAS_CODEC_JPEG, .quality = qs[qi],
                                      .subsampling = ss ? RCANVAS_SUBSAMP_444 : RCANVAS_SUBSAMP_420};
                rc_image img = {st[i].rgba, st[i].w, st[i].h, (size_t)st[i].w * 4, RCANVAS_FORMAT_RGBA8, NULL};
                rc_buf_clear(&pkt);
                uint8_t *px;
                uint32_t w, h;
                if (rc_codec_encode(jpeg, &img, &p, &pkt, NULL) ||
                    rc_decode_jpeg(rc_buf_data(&pkt), pkt.len, &px, &w, &h))
                    return;
                bytes[ss] = pkt.len;
                ce[ss] = compare_rgb(px, (int)w, (int)h, &st[i], 0, 0, &sref[i], mask[i], argb, &dyuv);
                free(px);
                jp[i][ss][0][qi] = (rd_point){(double)pkt.len, ce[ss].rgb};
                jp[i][ss][1][qi] = (rd_point){(double)pkt.len, ce[ss].y};
                jp[i][ss][2][qi] = (rd_point){(double)pkt.len, -ce[ss].line_mae};
            }
            if (qs[qi] != 75 && qs[qi] != 85 && qs[qi] != 95) continue;
            char l0[16] = "–", l1[16] = "–";
            if (ce[0].line_mae >= 0) snprintf(l0, sizeof l0, "%.1f", ce[0].line_mae);
            if (ce[1].line_mae >= 0) snprintf(l1, sizeof l1, "%.1f", ce[1].line_mae);
            printf("| %s (%ld) | %d | %zu / %zu (%.2f) | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | "
                   "%s / %s |\n",
                   st[i].name, nmask[i], qs[qi], bytes[0], bytes[1], (double)bytes[1] / bytes[0], ce[0].rgb, ce[1].rgb,
                   ce[0].y, ce[1].y, ce[0].u, ce[1].u, ce[0].v, ce[1].v, l0, l1);
            fflush(stdout);
        }
    printf("\nJPEG 4:4:4 against 4:2:0 at equal bytes (q %d–%d, each subsampling's own curve):\n\n| still | bytes "
           "at equal RGB PSNR / RGB dB at equal bytes | bytes at equal Y PSNR / Y dB at equal bytes | thin-line "
           "error at equal bytes, 4:2:0 → 4:4:4 change |\n|---|---|---|---|\n",
           qs[0], qs[NQS - 1]);
    for (int i = 0; i < nst; i++) {
        double d0, d1, d2;
        double r0 = rd_delta(jp[i][0][0], jp[i][1][0], NQS, &d0), r1 = rd_delta(jp[i][0][1], jp[i][1][1], NQS, &d1);
        char b0[48], b1[48], b2[32] = "–";
        if (nmask[i]) {
            rd_delta(jp[i][0][2], jp[i][1][2], NQS, &d2);
            if (!isnan(d2)) snprintf(b2, sizeof b2, "%+.1f", -d2);
        }
        printf("| %s | %s | %s | %s |\n", st[i].name, fmt_ratio(b0, sizeof b0, r0, d0),
               fmt_ratio(b1, sizeof b1, r1, d1), b2);
    }
    free(jp);

    anchor_enc venc[] = {
        {.name = "h264 4:2:0", .dec = &h264_decoder, .open = rcc_open, .encode = rcc_encode, .close = rcc_close,
         .type = &rc_codec_h264},
        {.name = "vp9 p0 4:2:0", .dec = &vp9_decoder, .open = rcc_open, .encode = rcc_encode, .close = rcc_close,
         .type = &rc_codec_vp9},
        {.name = "vp9 p1 4:4:4", .dec = &vp9_decoder, .open = vp9d_open, .encode = vp9d_encode, .close = vp9d_close,
         .i444 = 1},
    };
    printf("\n### B2. Video: H.264 4:2:0, VP9 profile 0 (4:2:0), VP9 profile 1 (4:4:4) at equal bitrate (%dx%d window "
           "panning (8, 4) px/frame, %d frames, %d fps, %d thread(s))\n\n",
           BW, BH, BFRAMES, FPS, threads);
    printf("| still | kbit/s target | encoder | kbit/s actual | RGB PSNR dB | Y PSNR | Cb PSNR | Cr PSNR | thin-line "
           "error | CPU ms/frame |\n|---|---|---|---|---|---|---|---|---|---|\n");
    enum { NV = sizeof venc / sizeof venc[0] };
    rd_point (*vp)[NV][3][MAXK] = calloc((size_t)nst, sizeof *vp); /* [still][enc][rgb, y, -line][k] */
    int *vok = calloc((size_t)nst * NV, sizeof *vok);
    if (!vp || !vok) return;
    for (int i = 0; i < nst; i++)
        for (int k = 0; k < nk; k++)
            for (size_t c = 0; c < NV; c++) {
                const anchor_enc *e = &venc[c];
                void *s = e->open(e, BW, BH, kbps[k], threads), *d = e->dec->open();
                if (!s || !d) return;
                double bytes = 0, cpu = 0;
                chroma_err sum = {0};
                int nl = 0, fail = 0;
                for (int f = 0; f < BFRAMES && !fail; f++) {
                    int x0 = 8 * f, y0 = 4 * f;
                    if (x0 > (int)st[i].w - BW) x0 = (int)st[i].w - BW;
                    if (y0 > (int)st[i].h - BH) y0 = (int)st[i].h - BH;
                    rc_buf_clear(&pkt);
                    int64_t c0 = bench_cpu_us();
                    int r = e->encode(s, st[i].rgba + ((size_t)y0 * st[i].w + x0) * 4, BW, BH, (size_t)st[i].w * 4,
                                      &pkt);
                    cpu += (double)(bench_cpu_us() - c0) / 1000.0;
                    yuv_view v;
                    if (r || e->dec->decode(d, rc_buf_data(&pkt), pkt.len, &v) || v.w != BW || v.h != BH ||
                        v.chroma444 != e->i444) {
                        fprintf(stderr, "bench-anchor: %s on %s: frame %d does not encode or decode\n", e->name,
                                st[i].name, f);
                        fail = 1;
                        break;
                    }
                    bytes += (double)pkt.len;
                    view_to_rgba(&v, dec_rgba);
                    chroma_err ce = compare_rgb(dec_rgba, BW, BH, &st[i], x0, y0, &sref[i], mask[i], argb, &dyuv);
                    if (getenv("BENCH_ANCHOR_VERBOSE"))
                        fprintf(stderr, "%s %s %d f%d bytes %zu Y %.2f RGB %.2f\n", st[i].name, e->name, kbps[k], f,
                                pkt.len, ce.y, ce.rgb);
                    sum.rgb += ce.rgb / BFRAMES, sum.y += ce.y / BFRAMES, sum.u += ce.u / BFRAMES;
                    sum.v += ce.v / BFRAMES;
                    if (ce.line_mae >= 0) sum.line_mae += ce.line_mae, nl++;
                }
                e->close(s);
                e->dec->close(d);
                if (fail) continue;
                char line[32] = "–";
                if (nl) snprintf(line, sizeof line, "%.1f", sum.line_mae / nl);
                double kb = bytes * 8.0 * FPS / BFRAMES / 1000.0;
                vp[i][c][0][k] = (rd_point){kb, sum.rgb};
                vp[i][c][1][k] = (rd_point){kb, sum.y};
                vp[i][c][2][k] = (rd_point){kb, nl ? -sum.line_mae / nl : 0};
                vok[i * NV + c]++;
                printf("| %s | %d | %s | %.0f | %.2f | %.2f | %.2f | %.2f | %s | %.1f |\n", st[i].name, kbps[k],
                       e->name, kb, sum.rgb, sum.y, sum.u, sum.v, line, cpu / BFRAMES);
                fflush(stdout);
            }
    printf("\nVP9 profile 1 (4:4:4) against VP9 profile 0 (4:2:0) and against H.264 (4:2:0), each on its own "
           "rate curve:\n\n| still | vs VP9 p0: bits at equal RGB PSNR / RGB dB at equal bits | vs VP9 p0: Y dB at "
           "equal bits | vs VP9 p0: thin-line error change | vs H.264: bits / RGB dB | vs H.264: Y dB |\n"
           "|---|---|---|---|---|---|\n");
    for (int i = 0; i < nst; i++) {
        if (vok[i * NV] != nk || vok[i * NV + 1] != nk || vok[i * NV + 2] != nk) continue;
        double d0, d1, d2 = NAN, e0, e1;
        double r0 = rd_delta(vp[i][1][0], vp[i][2][0], nk, &d0), r1 = rd_delta(vp[i][0][0], vp[i][2][0], nk, &e0);
        rd_delta(vp[i][1][1], vp[i][2][1], nk, &d1);
        rd_delta(vp[i][0][1], vp[i][2][1], nk, &e1);
        if (nmask[i]) rd_delta(vp[i][1][2], vp[i][2][2], nk, &d2);
        char b0[48], b1[48], y0[16] = "–", y1[16] = "–", l[16] = "–";
        if (!isnan(d1)) snprintf(y0, sizeof y0, "%+.2f", d1);
        if (!isnan(e1)) snprintf(y1, sizeof y1, "%+.2f", e1);
        if (!isnan(d2)) snprintf(l, sizeof l, "%+.1f", -d2);
        printf("| %s | %s | %s | %s | %s | %s |\n", st[i].name, fmt_ratio(b0, sizeof b0, r0, d0), y0, l,
               fmt_ratio(b1, sizeof b1, r1, e0), y1);
    }
    free(vp), free(vok);
    for (int i = 0; i < nst; i++) free(sref[i].y), free(mask[i]);
    free(sref), free(mask), free(nmask), free(argb), free(dec_rgba), free(dyuv.y);
    rc_buf_free(&pkt);
    rc_codec_free(jpeg);
}

/* ---- main ------------------------------------------------------------------------------------------------------ */

#define PROG "bench-anchor"
static const char USAGE[] =
    "usage: bench-anchor [options] [DIR]\n"
    "  DIR                   the frame corpus (default ../shared/frames if there; else generated frames)\n"
    "  --part a|b|ab         a: openh264 / x264 / VP9 at equal bitrate; b: chroma (JPEG and video); default ab\n"
    "  --size WxH            part A's picture size, even, up to 1920x1080 (default 1920x1080)\n"
    "  --frames N            frames of the pan, zoom and rotate sequences, 4-10000 (default 60)\n"
    "  --kbps K[,K...]       part A target bitrates, kbit/s, 100-200000, at most 8 (default 2000,4000,8000,16000)\n"
    "  --chroma-kbps K[,..]  part B video bitrates (default 500,1000,2000,4000)\n"
    "  --threads T           encoder threads, 1-64 (default 1)\n"
    "  --x264-presets P[,..] x264 presets for part A (default superfast,veryfast)\n"
    "  --seq S[,S...]        part A sequences: pan-lines,pan40-lines,zoom-lines,rotate-render,slideshow (default all)\n"
    "  --encoders E[,E...]   part A encoders besides openh264: x264-base-P, x264-high-P, vp9, h264-gpu (default all)\n"
    "  --vp9-check           check that part B's direct libvpx encoder, in 4:2:0, gives rc_codec_vp9's bytes\n"
    "  --help                print this and exit\n";

int main(int argc, char **argv) {
    int nframes = 60, threads = 1, kbps[MAXK] = {2000, 4000, 8000, 16000}, nk = 4,
        ckbps[MAXK] = {500, 1000, 2000, 4000}, nck = 4, part_a = 1, part_bb = 1, vp9_check = 0;
    const char *dir = NULL, *presets = "superfast,veryfast", *seqs = NULL, *encoders = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--part")) {
            static const char *const parts[] = {"a", "b", "ab", NULL};
            int c = cli_choice(PROG, a, cli_value(argc, argv, &i), parts);
            if (c < 0) return CLI_USAGE;
            part_a = c != 1, part_bb = c != 0;
        } else if (!strcmp(a, "--frames")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 4, 10000, &nframes)) return CLI_USAGE;
        } else if (!strcmp(a, "--size")) {
            const char *v = cli_value(argc, argv, &i);
            unsigned x, y;
            char end;
            if (!v) return cli_missing(PROG, a, "WxH");
            if (sscanf(v, "%ux%u%c", &x, &y, &end) != 2 || x < 64 || y < 64 || x > 1920 || y > 1080 || (x | y) & 1)
                return cli_error(PROG, "%s %s: WxH, even, 64x64 to 1920x1080", a, v);
            AW = (int)x, AH = (int)y;
        } else if (!strcmp(a, "--threads")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 64, &threads)) return CLI_USAGE;
        } else if (!strcmp(a, "--kbps")) {
            if (parse_list(PROG, a, cli_value(argc, argv, &i), 100, 200000, kbps, &nk)) return CLI_USAGE;
        } else if (!strcmp(a, "--chroma-kbps")) {
            if (parse_list(PROG, a, cli_value(argc, argv, &i), 100, 200000, ckbps, &nck)) return CLI_USAGE;
        } else if (!strcmp(a, "--x264-presets")) {
            if (!(presets = cli_value(argc, argv, &i))) return cli_missing(PROG, a, "a list of x264 presets");
        } else if (!strcmp(a, "--seq")) {
            if (!(seqs = cli_value(argc, argv, &i))) return cli_missing(PROG, a, "a list of sequence names");
        } else if (!strcmp(a, "--encoders")) {
            if (!(encoders = cli_value(argc, argv, &i))) return cli_missing(PROG, a, "a list of encoder names");
        } else if (!strcmp(a, "--vp9-check")) {
            vp9_check = 1;
        } else {
            int r = cli_rest(PROG, USAGE, a, &dir, "DIR");
            if (r >= 0) return r;
        }
    }
    struct stat st;
    if (!dir && stat("../shared/frames", &st) == 0) dir = "../shared/frames";

    /* The corpus stills, or generated ones of the same roles. */
    static const char *const corpus_1080[] = {"lines-1920x1080", "scatter-1920x1080", "surface-1920x1080",
                                              "heatmap-1920x1080", "text-1920x1080", "render-1920x1080"};
    still big, render, slides[16], chroma[8];
    memset(&big, 0, sizeof big), memset(&render, 0, sizeof render);
    memset(slides, 0, sizeof slides), memset(chroma, 0, sizeof chroma);
    int nslides = 0, nchroma = 0, corpus = load_still(dir, "lines-3840x2160", &big) == 0;
    if (corpus) {
        if (load_still(dir, "render-1920x1080", &render)) return 1;
        static const char *const all[] = {"heatmap-1920x1080", "heatmap-3840x2160", "lines-1920x1080",
                                          "lines-3840x2160", "render-1920x1080", "scatter-1920x1080",
                                          "surface-1920x1080", "text-1920x1080"};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            if (load_still(dir, all[i], &slides[nslides]) == 0) nslides++;
        for (size_t i = 0; i < sizeof corpus_1080 / sizeof corpus_1080[0]; i++)
            if (load_still(dir, corpus_1080[i], &chroma[nchroma]) == 0) nchroma++;
    } else {
        gen_still(TF_PLOT, 3840, 2160, "plot-3840x2160 (generated)", &big);
        render.rgba = tf_smooth_new(W, H), render.w = W, render.h = H;
        snprintf(render.name, sizeof render.name, "smooth (generated)");
        for (int k = 0; k < TF_NOISE; k++) {
            char name[64];
            snprintf(name, sizeof name, "%s (generated)", tf_kind_name((tf_kind)k));
            gen_still((tf_kind)k, W, H, name, &slides[nslides++]);
            gen_still((tf_kind)k, W, H, name, &chroma[nchroma++]);
        }
    }
    gen_thinlines(&chroma[nchroma++]);
    if (AW != 1920 || AH != 1080) { /* a smaller part A: the big plot scaled alike, so a window shows as much */
        still sm = big;
        sm.w = big.w * (unsigned)AW / 1920, sm.h = big.h * (unsigned)AH / 1080;
        if (!(sm.rgba = malloc((size_t)sm.w * sm.h * 4))) return 1;
        ARGBScale(big.rgba, (int)big.w * 4, (int)big.w, (int)big.h, sm.rgba, (int)sm.w * 4, (int)sm.w, (int)sm.h,
                  kFilterBox);
        free(big.rgba);
        big = sm;
    }

    printf("bench-anchor: %s; %d thread(s) per encoder; %d fps; machine: %d cores\n",
           corpus ? dir : "no corpus: generated frames (tests/testframes.h)", threads, FPS, rc_cpu_count());
#if RCANVAS_BENCH_X264
    printf("x264: %s (optional: linked into this benchmark only)\n", anchor_x264_version());
#else
    printf("x264: SKIPPED (built without libx264: `make bench-anchor-deps`, then rebuild)\n");
#endif
#if !RCANVAS_BENCH_AVCODEC
    printf("libavcodec: not built in: x264 high profile rows SKIPPED (apt: libavcodec-dev)\n");
#else
    if (!lavc_h264_available()) printf("libavcodec: %s not on this machine: x264 high profile rows SKIPPED\n", LAVC_SONAME);
#endif

    if (vp9_check) { /* the direct libvpx encoder in 4:2:0 against rc_codec_vp9: identical packets expected */
        anchor_enc a = {.name = "vp9", .open = rcc_open, .encode = rcc_encode, .close = rcc_close,
                        .type = &rc_codec_vp9};
        anchor_enc b = {.name = "vp9 direct", .open = vp9d_open, .encode = vp9d_encode, .close = vp9d_close};
        void *sa = a.open(&a, BW, BH, 2000, threads), *sb = b.open(&b, BW, BH, 2000, threads);
        rc_buf pa = {0}, pb = {0};
        int same = sa && sb;
        for (int f = 0; f < 10 && same; f++) {
            const uint8_t *px = chroma[0].rgba + ((size_t)(4 * f) * chroma[0].w + 8 * f) * 4;
            rc_buf_clear(&pa), rc_buf_clear(&pb);
            same = !a.encode(sa, px, BW, BH, (size_t)chroma[0].w * 4, &pa) &&
                   !b.encode(sb, px, BW, BH, (size_t)chroma[0].w * 4, &pb) && pa.len == pb.len &&
                   !memcmp(rc_buf_data(&pa), rc_buf_data(&pb), pa.len);
        }
        printf("vp9-check: direct libvpx 4:2:0 %s rc_codec_vp9 over 10 frames\n", same ? "==" : "!=");
        if (sa) a.close(sa);
        if (sb) b.close(sb);
        rc_buf_free(&pa), rc_buf_free(&pb);
    }

    if (part_a) {
        W = AW, H = AH;
        anchor_enc enc[16];
        int ne = 0;
        enc[ne++] = (anchor_enc){.name = "openh264", .dec = &h264_decoder, .open = rcc_open, .encode = rcc_encode,
                                 .close = rcc_close, .type = &rc_codec_h264};
#if RCANVAS_BENCH_X264
        char plist[128], *save = NULL;
        static char pnames[8][24];
        int np = 0;
        snprintf(plist, sizeof plist, "%s", presets);
        for (char *t = strtok_r(plist, ",", &save); t && np < 8; t = strtok_r(NULL, ",", &save), np++) {
            snprintf(pnames[np], sizeof pnames[np], "%s", t);
            enc[ne] = (anchor_enc){.dec = &h264_decoder, .open = x264s_open, .encode = x264s_encode,
                                   .close = x264s_close, .preset = pnames[np], .profile = "baseline"};
            snprintf(enc[ne++].name, sizeof enc[0].name, "x264-base-%s", t);
#if RCANVAS_BENCH_AVCODEC
            if (lavc_h264_available()) {
                enc[ne] = (anchor_enc){.dec = &lavc_h264_decoder, .open = x264s_open, .encode = x264s_encode,
                                       .close = x264s_close, .preset = pnames[np], .profile = "high"};
                snprintf(enc[ne++].name, sizeof enc[0].name, "x264-high-%s", t);
            }
#endif
        }
#else
        (void)presets;
#endif
        enc[ne++] = (anchor_enc){.name = "vp9", .dec = &vp9_decoder, .open = rcc_open, .encode = rcc_encode,
                                 .close = rcc_close, .type = &rc_codec_vp9};
#if RCANVAS_HAVE_VULKAN
        /* H.264 in Vulkan compute shaders, on the first GPU */
        enc[ne++] = (anchor_enc){.name = "h264-gpu", .dec = &h264_decoder, .open = rcc_open, .encode = rcc_encode,
                                 .close = rcc_close, .type = &rc_codec_h264_gpu};
#endif
        int kept = 1; /* --encoders: openh264 (the reference) and those named */
        for (int c = 1; c < ne; c++)
            if (in_list(encoders, enc[c].name)) enc[kept++] = enc[c];
        ne = kept;

        printf("\n### A. Encoders at equal target bitrate (%dx%d, %d fps, %d thread(s); PSNR of the decoded I420 "
               "against the source's)\n\n",
               W, H, FPS, threads);
        printf("| sequence (frames) | kbit/s target | encoder | kbit/s actual | Y PSNR dB | Cb PSNR | Cr PSNR | CPU "
               "ms/frame |\n|---|---|---|---|---|---|---|---|\n");
        static result res[NSEQ][16][MAXK];
        const char *seqname[NSEQ] = {0};
        int nseq = 0;
        for (int si = 0; si < NSEQ; si++) {
            if (!in_list(seqs, seq_names[si])) continue;
            sequence q = {0};
            int r = si == 0   ? seq_pan(&q, &big, nframes)
                    : si == 1 ? seq_pan40(&q, &big, nframes)
                    : si == 2 ? seq_zoom(&q, &big, nframes)
                    : si == 3 ? seq_rotate(&q, &render, nframes)
                              : seq_slides(&q, slides, nslides, 8);
            if (r) {
                fprintf(stderr, "bench-anchor: out of memory rendering %s\n", seq_names[si]);
                return 1;
            }
            seqname[nseq] = seq_names[si];
            for (int k = 0; k < nk; k++)
                for (int c = 0; c < ne; c++) {
                    result x = run_seq(&enc[c], &q, kbps[k], threads);
                    res[nseq][c][k] = x;
                    if (!x.ok) continue;
                    printf("| %s (%d) | %d | %s | %.0f | %.2f | %.2f | %.2f | %.1f |\n", q.name, q.n, kbps[k],
                           enc[c].name, x.kbps, x.py, x.pu, x.pv, x.cpu_ms);
                    fflush(stdout);
                }
            nseq++;
            seq_free(&q);
        }
        /* Against openh264 (encoder 0), and against x264 superfast in baseline profile where it ran. */
        summary(res, seqname, nseq, enc, ne, kbps, nk, 0);
        for (int c = 1; c < ne; c++)
            if (!strcmp(enc[c].name, "x264-base-superfast")) summary(res, seqname, nseq, enc, ne, kbps, nk, c);
    }
    W = 1920, H = 1080; /* part B's size, whatever part A's */
    if (part_bb) part_b(chroma, nchroma, ckbps, nck, threads);

    free(big.rgba), free(render.rgba);
    for (int i = 0; i < nslides; i++) free(slides[i].rgba);
    for (int i = 0; i < nchroma; i++) free(chroma[i].rgba);
    return 0;
}
