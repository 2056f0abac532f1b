/* SPDX-License-Identifier: MIT */
/*
 * test_jpeg_gpu — the Vulkan compute JPEG encoder on whatever device is there (lavapipe in CI):
 *  - its DQT tables equal libjpeg-turbo's at the same quality (Annex K tables scaled as libjpeg does);
 *  - DCT + quantization: every coefficient within ±1 of a double-precision reference (direct DCT-II formula,
 *    same colour conversion and 2×2 chroma averaging) for 4:2:0 and 4:4:4;
 *  - Huffman coding: each restart interval of the output equals, bit for bit, a CPU Huffman coder run on the
 *    GPU's own coefficients (with the same byte stuffing, padding and RSTn markers); on patterns, generated
 *    frames (tests/testframes.h; noise up to q100 for the longest codes, a smooth gradient for long zero runs)
 *    and the corpus's 4K line plot when ../shared/frames is there;
 *  - whole files decode with libjpeg-turbo with no warning, on every generated frame, every corpus frame and odd
 *    sizes, with PSNR no more than 0.5 dB below libturbojpeg at the same quality and subsampling and size within
 *    ±15 % of libturbojpeg's with the same restart interval.
 * Under ASan (RCANVAS_SANITIZE) frames go up to 1920×1080; the plain run adds the 3840×2160 ones.
 */
#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

#include <math.h>
#include <string.h>
#include <turbojpeg.h>

#include "codec/gpu/jpeg_gpu.h"
#include "imageio.h"
#include "source/vk_readback.h"
#include "test.h"
#include "testframes.h"
#include "vk_icd.h"
#include "vk_util.h"

static rc_gpu_jpeg *g_enc;

static void fill(uint8_t *p, uint32_t w, uint32_t h, unsigned seed) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *q = p + ((size_t)y * w + x) * 4;
            double fx = (double)x / (w > 1 ? w - 1 : 1), fy = (double)y / (h > 1 ? h - 1 : 1);
            q[0] = (uint8_t)(127.5 + 127.5 * sin(fx * 9 + seed));
            q[1] = (uint8_t)(255 * fy);
            q[2] = (uint8_t)(((x / 5) ^ (y / 3)) * 37 + seed);
            q[3] = 255;
        }
}

/* Segment payloads of marker m (e.g. 0xDB) in a JPEG file, concatenated. */
static size_t segments(const uint8_t *j, size_t n, uint8_t m, uint8_t *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 2; i + 4 <= n;) {
        if (j[i] != 0xFF) break;
        uint8_t mk = j[i + 1];
        size_t l = (size_t)j[i + 2] << 8 | j[i + 3];
        if (mk == m && o + l - 2 <= cap) memcpy(out + o, j + i + 4, l - 2), o += l - 2;
        if (mk == 0xDA) break;
        i += 2 + l;
    }
    return o;
}

static void test_dqt_matches_libjpeg(void) {
    uint8_t px[16 * 16 * 4];
    fill(px, 16, 16, 1);
    rc_image img = {.pixels = px, .width = 16, .height = 16, .pitch = 64, .format = RCANVAS_FORMAT_RGBA8};
    tjhandle tj = tjInitCompress();
    int qs[] = {10, 50, 75, 90, 100};
    for (int i = 0; i < 5; i++) {
        const uint8_t *ours;
        size_t ol;
        CHECK_EQ_INT(rc_gpu_jpeg_encode_cpu(g_enc, &img, qs[i], RCANVAS_SUBSAMP_420, &ours, &ol, NULL), RCANVAS_OK);
        uint8_t a[512], b[512];
        size_t na = segments(ours, ol, 0xDB, a, sizeof a);
        unsigned char *tjo = NULL;
        unsigned long tl = 0;
        tjCompress2(tj, px, 16, 64, 16, TJPF_RGBA, &tjo, &tl, TJSAMP_420, qs[i], 0);
        size_t nb = segments(tjo, tl, 0xDB, b, sizeof b);
        CHECK_MSG(na == nb && na == 130 && !memcmp(a, b, na), "q%d: DQT differs from libjpeg-turbo's", qs[i]);
        tjFree(tjo);
    }
    tjDestroy(tj);
}

/* Double-precision reference of one block: samples → DCT-II → quantization (natural-order q). */
static void ref_block(const uint8_t *px, uint32_t w, uint32_t h, int comp, int sub, int x0, int y0, const uint16_t *q,
                      double out[64]) {
    double s[8][8];
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++) {
            double r = 0, g = 0, b = 0;
            int n = sub ? 2 : 1;
            for (int dy = 0; dy < n; dy++)
                for (int dx = 0; dx < n; dx++) {
                    int xx = sub ? 2 * (x0 + x) + dx : x0 + x, yy = sub ? 2 * (y0 + y) + dy : y0 + y;
                    xx = xx < 0 ? 0 : xx >= (int)w ? (int)w - 1 : xx;
                    yy = yy < 0 ? 0 : yy >= (int)h ? (int)h - 1 : yy;
                    const uint8_t *p = px + ((size_t)yy * w + xx) * 4;
                    r += p[0], g += p[1], b += p[2];
                }
            r /= n * n, g /= n * n, b /= n * n;
            s[y][x] = comp == 0 ? 0.299 * r + 0.587 * g + 0.114 * b - 128
                      : comp == 1 ? -0.168735892 * r - 0.331264108 * g + 0.5 * b
                                  : 0.5 * r - 0.418687589 * g - 0.081312411 * b;
        }
    static double c[8][8]; /* c[u][x] = cos((2x + 1)uπ/16): the same doubles as calling cos() in the loop */
    static int c_ready;
    if (!c_ready) {
        for (int u = 0; u < 8; u++)
            for (int x = 0; x < 8; x++) c[u][x] = cos((2 * x + 1) * u * M_PI / 16);
        c_ready = 1;
    }
    for (int v = 0; v < 8; v++)
        for (int u = 0; u < 8; u++) {
            double sum = 0;
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++) sum += s[y][x] * c[u][x] * c[v][y];
            double cu = u ? 1 : M_SQRT1_2, cv = v ? 1 : M_SQRT1_2;
            out[v * 8 + u] = 0.25 * cu * cv * sum / q[v * 8 + u];
        }
}

static const uint8_t k_zz_natural[64] = {0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,
                                         12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,
                                         35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
                                         58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

/* CPU Huffman coder of one interval, as T.81 F.1.2 (reference for the bit-exact check). */
typedef struct bw {
    uint8_t *p;
    size_t n;
    uint32_t acc;
    int bits;
} bw;
static void bw_put(bw *w, uint32_t code, int n) {
    for (int i = n - 1; i >= 0; i--) {
        w->acc = (w->acc << 1) | ((code >> i) & 1u);
        if (++w->bits == 8) {
            w->p[w->n++] = (uint8_t)w->acc;
            if ((w->acc & 255u) == 255u) w->p[w->n++] = 0;
            w->acc = 0, w->bits = 0;
        }
    }
}
static int nbits(int v) {
    int a = v < 0 ? -v : v, n = 0;
    while (a) n++, a >>= 1;
    return n;
}

static size_t cpu_huffman(const int32_t *coef, uint32_t m0, uint32_t m1, int bpm, uint8_t *out) {
    uint16_t dcc[2][256], acc_[2][256];
    uint8_t dcl[2][256], acl[2][256];
    for (int t = 0; t < 2; t++) rc_jpeg_huff_codes(t, 0, dcc[t], dcl[t]), rc_jpeg_huff_codes(t, 1, acc_[t], acl[t]);
    bw w = {out, 0, 0, 0};
    int pred[3] = {0, 0, 0};
    for (uint32_t m = m0; m < m1; m++)
        for (int b = 0; b < bpm; b++) {
            int comp = bpm == 6 ? (b < 4 ? 0 : b - 3) : b, t = comp ? 1 : 0;
            const int32_t *c = coef + ((size_t)m * bpm + b) * 64;
            int diff = c[0] - pred[comp];
            pred[comp] = c[0];
            int s = nbits(diff);
            bw_put(&w, dcc[t][s], dcl[t][s]);
            if (s) bw_put(&w, (uint32_t)(diff < 0 ? diff - 1 : diff) & ((1u << s) - 1), s);
            int run = 0;
            for (int k = 1; k < 64; k++) {
                if (!c[k]) {
                    run++;
                    continue;
                }
                while (run > 15) bw_put(&w, acc_[t][0xF0], acl[t][0xF0]), run -= 16;
                int sz = nbits(c[k]);
                bw_put(&w, acc_[t][(run << 4) | sz], acl[t][(run << 4) | sz]);
                bw_put(&w, (uint32_t)(c[k] < 0 ? c[k] - 1 : c[k]) & ((1u << sz) - 1), sz);
                run = 0;
            }
            if (run) bw_put(&w, acc_[t][0], acl[t][0]);
        }
    if (w.bits) bw_put(&w, 0x7F, 8 - w.bits);
    return w.n;
}

static void test_stages_px(const char *name, const uint8_t *px, uint32_t w, uint32_t h, rcanvas_subsampling ss,
                           int quality);

static void test_stages(uint32_t w, uint32_t h, rcanvas_subsampling ss) {
    uint8_t *px = malloc((size_t)w * h * 4);
    fill(px, w, h, 3);
    char name[48];
    snprintf(name, sizeof name, "pattern %ux%u", w, h);
    test_stages_px(name, px, w, h, ss, 80);
    free(px);
}

/* The stages on a generated frame (tests/testframes.h). */
static void test_stages_gen(tf_kind k, uint32_t w, uint32_t h, rcanvas_subsampling ss, int quality) {
    uint8_t *px = tf_new(k, w, h);
    char name[48];
    snprintf(name, sizeof name, "%s-%ux%u", tf_kind_name(k), w, h);
    if (px) test_stages_px(name, px, w, h, ss, quality);
    free(px);
}

static void test_stages_px(const char *name, const uint8_t *px, uint32_t w, uint32_t h, rcanvas_subsampling ss,
                           int quality) {
    rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    const uint8_t *j;
    size_t jl;
    int r = rc_gpu_jpeg_encode_cpu(g_enc, &img, quality, ss, &j, &jl, NULL);
    CHECK_MSG(r == RCANVAS_OK, "%s q%d: %s", name, quality, rcanvas_strerror(r));
    if (r) return;
    uint8_t *file = malloc(jl);
    memcpy(file, j, jl);
    int32_t *coef;
    uint32_t blocks, mpi;
    CHECK_EQ_INT(rc_gpu_jpeg_debug_coefs(g_enc, &coef, &blocks, &mpi), RCANVAS_OK);
    int s420 = ss == RCANVAS_SUBSAMP_420, bpm = s420 ? 6 : 3, mcu = s420 ? 16 : 8;
    uint32_t mx = (w + mcu - 1) / mcu, my = (h + mcu - 1) / mcu;
    CHECK_EQ_INT(blocks, mx * my * bpm);
    uint16_t q[2][64];
    rc_jpeg_quant_table(quality, 0, q[0]);
    rc_jpeg_quant_table(quality, 1, q[1]);
    long off1 = 0, worst = 0;
    for (uint32_t m = 0; m < mx * my; m++)
        for (int b = 0; b < bpm; b++) {
            int comp = s420 ? (b < 4 ? 0 : b - 3) : b;
            int sub = s420 && comp;
            int x0 = (int)(m % mx) * (sub ? 8 : mcu) + (s420 && !comp ? (b & 1) * 8 : 0);
            int y0 = (int)(m / mx) * (sub ? 8 : mcu) + (s420 && !comp ? (b >> 1) * 8 : 0);
            double ref[64];
            ref_block(px, w, h, comp, sub, x0, y0, q[comp ? 1 : 0], ref);
            for (int k = 0; k < 64; k++) {
                double d = fabs(coef[((size_t)m * bpm + b) * 64 + k] - ref[k_zz_natural[k]]);
                if (d > 1.0 + 1e-9) off1++;
                if (d > worst) worst = (long)d;
            }
        }
    CHECK_MSG(off1 == 0, "%s %s: %ld coefficients differ from the float reference by more than 1 (worst %ld)",
              name, s420 ? "4:2:0" : "4:4:4", off1, worst);
    /* entropy-coded segment: after SOS, intervals separated by RSTn */
    size_t i = 2;
    while (i + 4 < jl && !(file[i] == 0xFF && file[i + 1] == 0xDA)) i += 2 + ((size_t)file[i + 2] << 8 | file[i + 3]);
    i += 2 + ((size_t)file[i + 2] << 8 | file[i + 3]);
    uint32_t total = mx * my, mismatched = 0;
    if (mpi == 0) mpi = total; /* no restart intervals: one */
    uint32_t n_iv = (total + mpi - 1) / mpi;
    uint8_t *refb = malloc((size_t)mpi * bpm * 512 + 16);
    for (uint32_t iv = 0; iv < n_iv; iv++) {
        uint32_t m0 = iv * mpi, m1 = m0 + mpi > total ? total : m0 + mpi;
        size_t n = cpu_huffman(coef, m0, m1, bpm, refb);
        if (i + n > jl || memcmp(file + i, refb, n)) {
            if (!mismatched) {
                size_t k = 0;
                while (k < n && i + k < jl && file[i + k] == refb[k]) k++;
                fprintf(stderr, "first mismatching interval %u: %zu reference bytes, first difference at byte %zu: gpu %02x %02x %02x %02x cpu %02x %02x %02x\n", iv, n, k, file[i+k-1], file[i+k], file[i+k+1], file[i+k+2], refb[k-1], refb[k], k + 1 < n ? refb[k+1] : 0);
            }
            mismatched++;
        }
        i += n;
        if (iv + 1 < n_iv) {
            if (i + 2 > jl || file[i] != 0xFF || file[i + 1] != 0xD0 + (iv & 7)) mismatched++;
            i += 2;
        }
    }
    CHECK_MSG(mismatched == 0 && i + 2 == jl && file[i] == 0xFF && file[i + 1] == 0xD9,
              "%s: %u of %u intervals differ from the CPU Huffman coder", name, mismatched, n_iv);
    printf("stages   %-24s q%d %s: %u blocks, %ld coefficients off by more than 1, %u of %u intervals differ "
           "from the CPU Huffman coder, %zu bytes\n", name, quality, s420 ? "4:2:0" : "4:4:4", blocks, off1,
           mismatched, n_iv, jl);
    free(refb);
    free(coef);
    free(file);
}

/* Whole file vs libturbojpeg at the same settings: strict decode, PSNR ≥ tj − 0.5 dB, size within ±15 %. */
static void compare_with_tj(const char *name, const uint8_t *px, uint32_t w, uint32_t h, int quality,
                            rcanvas_subsampling ss) {
    rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    const uint8_t *j;
    size_t jl;
    rc_gpu_jpeg_times tm;
    int r = rc_gpu_jpeg_encode_cpu(g_enc, &img, quality, ss, &j, &jl, &tm);
    CHECK_MSG(r == RCANVAS_OK, "%s: %s", name, rcanvas_strerror(r));
    if (r) return;
    uint8_t *dec;
    uint32_t dw, dh;
    int d = rc_decode_jpeg(j, jl, &dec, &dw, &dh);
    CHECK_MSG(d == 0 && dw == w && dh == h, "%s q%d: libjpeg-turbo does not decode it cleanly", name, quality);
    if (d) return;
    double psnr = rc_psnr_rgb(dec, (size_t)w * 4, px, (size_t)w * 4, w, h);
    free(dec);
    /* libjpeg-turbo at the same settings: once plain (the reference for quality), once with the restart interval
     * of our file (TJ_RESTART=<MCUs>B, read by TurboJPEG 2.x) so that sizes compare the coding itself */
    uint8_t dri[4];
    unsigned ri = segments(j, jl, 0xDD, dri, sizeof dri) == 2 ? (unsigned)dri[0] << 8 | dri[1] : 0;
    tjhandle tj = tjInitCompress();
    unsigned char *tjo = NULL, *tjr = NULL;
    unsigned long tl = 0, trl = 0;
    int tss = ss == RCANVAS_SUBSAMP_420 ? TJSAMP_420 : TJSAMP_444;
    tjCompress2(tj, px, (int)w, (int)w * 4, (int)h, TJPF_RGBA, &tjo, &tl, tss, quality, 0);
    char rst[16];
    snprintf(rst, sizeof rst, "%uB", ri);
    setenv("TJ_RESTART", rst, 1);
    tjCompress2(tj, px, (int)w, (int)w * 4, (int)h, TJPF_RGBA, &tjr, &trl, tss, quality, 0);
    unsetenv("TJ_RESTART");
    uint8_t tdri[4];
    size_t tn = segments(tjr, trl, 0xDD, tdri, sizeof tdri);
    CHECK_MSG(ri ? tn == 2 && ((unsigned)tdri[0] << 8 | tdri[1]) == ri : tn == 0 || (tdri[0] == 0 && tdri[1] == 0),
              "%s: libturbojpeg did not take TJ_RESTART=%s", name, rst);
    uint8_t *tdec;
    rc_decode_jpeg(tjo, tl, &tdec, &dw, &dh);
    double tpsnr = rc_psnr_rgb(tdec, (size_t)w * 4, px, (size_t)w * 4, w, h);
    free(tdec);
    tjFree(tjo);
    tjFree(tjr);
    tjDestroy(tj);
    double size_ratio = (double)jl / (double)tl, rst_ratio = (double)jl / (double)trl;
    int small = (uint64_t)w * h < 4096; /* tiny images: headers dominate, sizes are not comparable */
    /* Both near-exact (≥ 50 dB, RMS error under one level): a rounding difference, not a loss of quality
     * (libjpeg-turbo happens to give a 1×1 frame back exactly where we are one level off in one channel). */
    CHECK_MSG(psnr >= (tpsnr < 50.0 ? tpsnr : 50.0) - 0.5, "%s q%d %s: PSNR %.2f dB vs libturbojpeg %.2f dB", name,
              quality, ss ? "4:4:4" : "4:2:0", psnr, tpsnr);
    /* Size against libjpeg-turbo with the same restart intervals: the restart markers, padding and fresh DC
     * predictions (≈ 3.5 bytes an interval, by design: jpeg_gpu.c) are then on both sides, and smooth frames
     * with small payloads compare as fairly as busy ones. The interval length itself is held by the check
     * after (≥ 24 blocks, which bounds that overhead). */
    CHECK_MSG(small || (rst_ratio > 0.85 && rst_ratio < 1.15),
              "%s q%d: %zu bytes vs libturbojpeg with the same restart interval %lu (%.2f×)", name, quality, jl, trl,
              rst_ratio);
    if (tm.blocks) {
        /* The block-parallel path (the default) writes no restart intervals, so the file is as small as
         * libjpeg-turbo's plain one: within 3 % at the same quality and subsampling (real byte counts). */
        CHECK_MSG(ri == 0, "%s: restart interval of %u MCUs on the block-parallel path", name, ri);
        CHECK_MSG(small || size_ratio <= 1.03, "%s q%d %s: %zu bytes, %.3f× libturbojpeg's %lu", name, quality,
                  ss ? "4:4:4" : "4:2:0", jl, size_ratio, tl);
    } else {
        CHECK_MSG(ri * (ss == RCANVAS_SUBSAMP_420 ? 6u : 3u) >= 24, "%s: restart interval of %u MCUs", name, ri);
    }
    printf("gpu-jpeg %-24s q%d %s: %8zu bytes (%.3f× tj with the same restart interval of %u MCUs, %.3f× plain "
           "tj), PSNR %.2f dB (tj %.2f), GPU %.2f ms\n",
           name, quality, ss ? "4:4:4" : "4:2:0", jl, rst_ratio, ri, size_ratio, psnr, tpsnr, tm.gpu_ms);
}

static void compare_frame(const tf_frame *f, void *user) {
    (void)user;
    compare_with_tj(f->name, f->px, f->w, f->h, 75, RCANVAS_SUBSAMP_420);
    compare_with_tj(f->name, f->px, f->w, f->h, 90, RCANVAS_SUBSAMP_444);
}

/* A smooth synthetic frame (a rendered scene's soft gradient with a few flat-shaded shapes with soft edges), where
 * the payload is small and any per-interval overhead shows: the size test at q75/q90, 4:2:0/4:4:4. */
static void test_smooth_frame(uint32_t w, uint32_t h) {
    uint8_t *px = tf_smooth_new(w, h);
    CHECK(px != NULL);
    if (!px) return;
    char name[48];
    snprintf(name, sizeof name, "smooth-%ux%u", w, h);
    for (int q = 75; q <= 90; q += 15) {
        compare_with_tj(name, px, w, h, q, RCANVAS_SUBSAMP_420);
        compare_with_tj(name, px, w, h, q, RCANVAS_SUBSAMP_444);
    }
    free(px);
}

/* The input read in the DCT pass: an image created with SAMPLED usage is read through a view
 * (times.direct 1: no input copy), in each of the four formats (the _SRGB ones are decoded by the fetch and encoded
 * back by the shader) and from three layouts (one changed around the DCT pass and back: the validation layer
 * checks the layouts at each submission). Each file must equal, byte for byte, the file made from the same bytes
 * uploaded as a CPU bitmap; likewise when the image is copied first (usage without SAMPLED). Every channel takes
 * all 256 values, so an sRGB round trip that missed one value would show. */
static void test_image_input(rcanvas_vk *vk) {
    const uint32_t w = 203, h = 117; /* partial MCUs at both edges */
    uint8_t *px = malloc((size_t)w * h * 4);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *q = px + ((size_t)y * w + x) * 4;
            q[0] = (uint8_t)(x + 3 * y), q[1] = (uint8_t)(7 * x + y), q[2] = (uint8_t)((x ^ y) * 5), q[3] = 255;
        }
    static const VkFormat formats[4] = {VK_FORMAT_R8G8B8A8_UNORM, VK_FORMAT_B8G8R8A8_UNORM, VK_FORMAT_R8G8B8A8_SRGB,
                                        VK_FORMAT_B8G8R8A8_SRGB};
    static const VkImageLayout layouts[3] = {VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                                             VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    static const struct { int q; rcanvas_subsampling ss; } settings[2] = {{75, RCANVAS_SUBSAMP_420},
                                                                          {90, RCANVAS_SUBSAMP_444}};
    VkDevice dev = rcanvas_vk_device(vk);
    int direct_seen = 0;
    for (int f = 0; f < 4; f++) {
        int bgra = formats[f] == VK_FORMAT_B8G8R8A8_UNORM || formats[f] == VK_FORMAT_B8G8R8A8_SRGB;
        VkDeviceMemory mem;
        VkImage img = upload_image_as(vk, px, w, h, formats[f],
                                      VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_SAMPLED_BIT, &mem);
        CHECK_MSG(img != VK_NULL_HANDLE, "format %d: no image", (int)formats[f]);
        if (!img) continue;
        int can = rc_gpu_jpeg_reads_image(g_enc, formats[f], VK_IMAGE_USAGE_SAMPLED_BIT);
        direct_seen += can;
        VkImageLayout now = VK_IMAGE_LAYOUT_GENERAL;
        for (int s = 0; s < 2; s++) {
            rc_image cpu = {px, w, h, (size_t)w * 4, bgra ? RCANVAS_FORMAT_BGRA8 : RCANVAS_FORMAT_RGBA8, NULL};
            const uint8_t *j;
            size_t jl = 0;
            CHECK_EQ_INT(rc_gpu_jpeg_encode_cpu(g_enc, &cpu, settings[s].q, settings[s].ss, &j, &jl, NULL), RCANVAS_OK);
            uint8_t *ref = malloc(jl);
            memcpy(ref, j, jl);
            size_t rl = jl;
            for (int l = 0; l < 3; l++)
                for (int sampled = 1; sampled >= 0; sampled--) {
                    if (now != layouts[l]) {
                        CHECK_EQ_INT(set_image_layout(vk, img, now, layouts[l]), 0);
                        now = layouts[l];
                    }
                    VkImageUsageFlags usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | (sampled ? VK_IMAGE_USAGE_SAMPLED_BIT : 0);
                    rc_gpu_jpeg_times t;
                    int r = rc_gpu_jpeg_encode_image(g_enc, img, formats[f], usage, layouts[l], w, h, settings[s].q,
                                                     settings[s].ss, &j, &jl, &t);
                    CHECK_MSG(r == RCANVAS_OK, "format %d layout %d sampled %d: %s", (int)formats[f], (int)layouts[l],
                              sampled, rcanvas_strerror(r));
                    if (r) continue;
                    CHECK_EQ_INT(t.direct, sampled); /* RCANVAS_GPU_JPEG_INPUT=image: every format, if sampled */
                    CHECK_MSG(jl == rl && !memcmp(j, ref, rl),
                              "format %d layout %d %s, q%d %s: %zu bytes, the CPU bitmap's file %zu (first difference "
                              "at %zu)", (int)formats[f], (int)layouts[l], sampled && can ? "read directly" : "copied",
                              settings[s].q, settings[s].ss == RCANVAS_SUBSAMP_420 ? "4:2:0" : "4:4:4", jl, rl,
                              (size_t)({ size_t k = 0; while (k < jl && k < rl && j[k] == ref[k]) k++; k; }));
                }
            free(ref);
        }
        vkDestroyImage(dev, img, NULL);
        vkFreeMemory(dev, mem, NULL);
    }
    printf("image input: %d of 4 formats read in the DCT pass, each equal to its copied and CPU-uploaded file\n",
           direct_seen);
    CHECK_MSG(direct_seen == 4, "the DCT pass reads only %d of the 4 formats on this device", direct_seen);
    free(px);
}

static void log_stderr(void *u, rcanvas_log_level l, const char *m) {
    (void)u;
    if (l <= RCANVAS_LOG_WARN) fprintf(stderr, "%s\n", m);
}

int main(void) {
    static const rc_logger lg = {.fn = log_stderr, .level = RCANVAS_LOG_WARN};
    test_vk_keep_drivers_loaded(); /* sanitizer builds: see tests/lsan.supp */
    setenv("RCANVAS_GPU_JPEG_INPUT", "image", 1); /* read sampled images in the DCT pass on lavapipe too */
#ifndef RCANVAS_SANITIZE /* the plain run only: the synchronization checks leak inside the layer (LeakSanitizer) */
    /* the validation layer's synchronization checks too (hazards within a command buffer: barriers around the
     * DCT pass's image read, the copies, the stages) */
    setenv("VK_LAYER_ENABLES", "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT", 0);
#endif
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.validation = 1;
    rcanvas_vk *vk = NULL;
    int r = rc_vk_new_internal(NULL, &vc, &lg, &vk);
    CHECK_MSG(r == RCANVAS_OK, "no Vulkan device: %s", rcanvas_strerror(r));
    if (r) TEST_MAIN_END();
    r = rc_gpu_jpeg_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                        rcanvas_vk_queue(vk), NULL, &g_enc);
    CHECK_MSG(r == RCANVAS_OK, "rc_gpu_jpeg_new: %s", rcanvas_strerror(r));
    if (r) TEST_MAIN_END();

    test_dqt_matches_libjpeg();
    test_image_input(vk);
    {   /* point 4: the prefix sums with subgroup arithmetic where the device has it (the rest of this test), and
         * the shared-memory scan every device has: bit-exact both ways */
        printf("prefix sums: subgroup size %u (0: shared memory)\n", rc_gpu_jpeg_subgroup_size(g_enc));
        setenv("RCANVAS_GPU_JPEG_SUBGROUPS", "0", 1);
        rc_gpu_jpeg *sg = g_enc, *plain = NULL;
        CHECK_EQ_INT(rc_gpu_jpeg_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk),
                                     rcanvas_vk_queue_family(vk), rcanvas_vk_queue(vk), NULL, &plain), RCANVAS_OK);
        unsetenv("RCANVAS_GPU_JPEG_SUBGROUPS");
        if (plain) {
            CHECK_EQ_INT((int)rc_gpu_jpeg_subgroup_size(plain), 0);
            g_enc = plain;
            test_stages_gen(TF_NOISE, 1001, 777, RCANVAS_SUBSAMP_420, 90);
            test_stages_gen(TF_GRADIENT, 333, 197, RCANVAS_SUBSAMP_444, 75);
            g_enc = sg;
            rc_gpu_jpeg_free(plain);
        }
    }
    /* Restart intervals on the block-parallel path (a size choice there): RSTn numbering, fresh DC predictions
     * and byte padding at every boundary, bit-exact against the CPU coder per interval; an interval count that
     * is no multiple of 8, and 1-MCU intervals (the most markers). Then the interval path, the fallback. */
    CHECK_EQ_INT(rc_gpu_jpeg_configure(g_enc, RC_GPU_JPEG_BLOCKS, 3), RCANVAS_OK);
    test_stages(1001, 777, RCANVAS_SUBSAMP_420);
    test_stages_gen(TF_NOISE, 333, 197, RCANVAS_SUBSAMP_444, 100);
    CHECK_EQ_INT(rc_gpu_jpeg_configure(g_enc, RC_GPU_JPEG_BLOCKS, 1), RCANVAS_OK);
    test_stages_gen(TF_GRADIENT, 333, 197, RCANVAS_SUBSAMP_420, 75);
    test_stages_gen(TF_TEXT, 1001, 777, RCANVAS_SUBSAMP_444, 90);
    CHECK_EQ_INT(rc_gpu_jpeg_configure(g_enc, RC_GPU_JPEG_INTERVALS, 0), RCANVAS_OK);
    test_stages(1001, 777, RCANVAS_SUBSAMP_420);
    test_stages_gen(TF_NOISE, 333, 197, RCANVAS_SUBSAMP_444, 100);
    test_stages_gen(TF_GRADIENT, 1001, 777, RCANVAS_SUBSAMP_420, 75);
    CHECK_EQ_INT(rc_gpu_jpeg_configure(g_enc, RC_GPU_JPEG_INTERVALS, 33), RCANVAS_EINVAL);
    CHECK_EQ_INT(rc_gpu_jpeg_configure(g_enc, RC_GPU_JPEG_BLOCKS, 65536), RCANVAS_EINVAL);
    CHECK_EQ_INT(rc_gpu_jpeg_configure(g_enc, RC_GPU_JPEG_BLOCKS, 0), RCANVAS_OK); /* the default from here on */
    /* DCT and Huffman stages against the references. The 4K frames cost the ASan run minutes (references in
     * -O0 code) and test nothing a smaller frame does not; the plain run keeps them. */
    test_stages(64, 48, RCANVAS_SUBSAMP_420);
    test_stages(1001, 777, RCANVAS_SUBSAMP_420);
    test_stages(37, 29, RCANVAS_SUBSAMP_444);
    test_stages_gen(TF_HEATMAP, 1, 1, RCANVAS_SUBSAMP_420, 75); /* odd sizes: edge replication, 1 MCU */
    test_stages_gen(TF_NOISE, 7, 5, RCANVAS_SUBSAMP_444, 90);
    test_stages_gen(TF_GRADIENT, 333, 197, RCANVAS_SUBSAMP_420, 75); /* long zero runs (ZRL), small payloads */
    test_stages_gen(TF_TEXT, 1001, 777, RCANVAS_SUBSAMP_420, 90);
    /* noise: the largest coefficients and longest codes (q100: every size category up to 11 bits), the most
     * 0xFF bytes to stuff, the fullest interval slots */
    test_stages_gen(TF_NOISE, 333, 197, RCANVAS_SUBSAMP_444, 100);
    test_stages_gen(TF_NOISE, 1001, 777, RCANVAS_SUBSAMP_420, 75);
    test_stages_gen(TF_NOISE, 1001, 777, RCANVAS_SUBSAMP_444, 90);
#ifndef RCANVAS_SANITIZE
    test_stages(3840, 2160, RCANVAS_SUBSAMP_444);
    test_stages(3840, 2160, RCANVAS_SUBSAMP_420);
    test_stages_gen(TF_PLOT, 3840, 2160, RCANVAS_SUBSAMP_444, 90); /* a 4K frame at q90 4:4:4: the largest files */
    {   /* the same on the corpus's 4K line plot, when there */
        char path[4096], err[256];
        uint8_t *px;
        uint32_t w, h;
        snprintf(path, sizeof path, "%s/lines-3840x2160.png", test_frames_dir());
        if (!rc_image_load(path, &px, &w, &h, err, sizeof err)) {
            test_stages_px("lines-3840x2160.png", px, w, h, RCANVAS_SUBSAMP_444, 90);
            free(px);
        } else printf("stages: no corpus frame %s: generated frames only\n", path);
    }
    const uint64_t max_px = 0;
#else
    test_stages_gen(TF_PLOT, 1920, 1080, RCANVAS_SUBSAMP_444, 90);
    printf("stages: 3840x2160 frames left to the plain (non-sanitizer) run\n");
    const uint64_t max_px = 1920 * 1080;
#endif

    /* whole files against libturbojpeg: patterns, every generated frame, every corpus frame when there */
    const uint32_t odd[][2] = {{1, 1}, {7, 5}, {1001, 777}};
    for (int i = 0; i < 3; i++) {
        uint32_t w = odd[i][0], h = odd[i][1];
        uint8_t *px = malloc((size_t)w * h * 4);
        fill(px, w, h, (unsigned)i);
        char name[32];
        snprintf(name, sizeof name, "pattern %ux%u", w, h);
        compare_with_tj(name, px, w, h, 75, RCANVAS_SUBSAMP_420);
        compare_with_tj(name, px, w, h, 90, RCANVAS_SUBSAMP_444);
        free(px);
    }
#ifndef RCANVAS_SANITIZE
    test_smooth_frame(3840, 2160);
#else
    test_smooth_frame(1920, 1080);
#endif
    int n = tf_each_generated(max_px, compare_frame, NULL);
    CHECK_EQ_INT(n, TF_KINDS * (max_px ? tf_nsizes - 1 : tf_nsizes));
    int load_errors = 0;
    tf_each_corpus("test_jpeg_gpu", max_px, compare_frame, NULL, &load_errors);
    CHECK_MSG(load_errors == 0, "%d corpus frames do not load", load_errors);
    int verr = rcanvas_vk_validation_errors(vk);
    CHECK_MSG(verr == 0, "%d validation errors", verr);
    rc_gpu_jpeg_free(g_enc);
    rcanvas_vk_free(vk);
    TEST_MAIN_END();
}
