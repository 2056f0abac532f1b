/* SPDX-License-Identifier: MIT */
/*
 * test_encode — encoders through the same stripe-parallel path the server uses:
 *  - JPEG round trip on every generated test frame (tests/testframes.h: plot, text, gradient, heatmap, noise at
 *    1×1 … 3840×2160; under ASan up to 1920×1080) and, when ../shared/frames is there, every corpus frame too
 *    (q85 4:2:0 and q90 4:4:4): each decoded frame's PSNR is at least that of one plain libturbojpeg call minus
 *    0.3 dB, and above an absolute floor per content kind;
 *  - PNG round trip pixel-exact on the same frames and for BGRA/RGBX input with a padded row pitch;
 *  - odd sizes 1×1, 7×5, 1001×777 for both codecs, tile rectangles covering the frame exactly once;
 *  - bad input (quality 0, NULL pixels, short pitch) returns RCANVAS_EINVAL;
 *  - chroma: 1-px red, green and blue lines on white keep their colour (decoded pixel values) at 4:4:4
 *    and with RCANVAS_SUBSAMP_AUTO, and lose it at 4:2:0 at any quality; AUTO picks 4:2:0 (the same bytes as
 *    forced 4:2:0) for grey text-like strokes and a smooth colour gradient, 4:4:4 (read back from the JPEG
 *    header) for the lines, and decides per stripe.
 */
#include <string.h>
#include <turbojpeg.h>

#include "core/pool.h"
#include "core/util.h"
#include "codec/frame_encode.h"
#include "codec/scale.h"
#include "imageio.h"
#include "test.h"
#include "test_wire.h"
#include "testframes.h"

static rc_pool *g_pool;
static rc_packet_pool *g_pp;

/* Encodes img with p on the pool, decodes all tiles into an RGBA image (caller frees), checks the headers. */
static uint8_t *encode_decode(const rc_image *img, rc_encode_params p, size_t *bytes, int *ntiles) {
    rc_packet *pk = rc_packet_get(g_pp);
    rc_encode_task t = {.img = *img, .params = p, .seq = 7, .present_us = 1234, .packet = pk};
    int st = rc_encode_sync(g_pool, &t);
    CHECK_MSG(st == RCANVAS_OK, "encode %ux%u: %s %s", img->width, img->height, rcanvas_strerror(st), t.error);
    uint8_t *full = calloc((size_t)img->width * img->height, 4);
    uint8_t *covered = calloc((size_t)img->height, 1);
    if (st || !full || !covered) {
        rc_packet_unref(pk);
        free(covered);
        free(full);
        return NULL;
    }
    *bytes = pk->total_bytes;
    *ntiles = pk->ntiles;
    for (int i = 0; i < pk->ntiles; i++) {
        rc_frame_header h;
        CHECK_EQ_INT(test_tile_header(pk, i, &h), RCANVAS_OK);
        CHECK_EQ_INT(h.seq, 7);
        CHECK_EQ_INT(h.tile_index, i);
        CHECK_EQ_INT(h.tile_count, pk->ntiles);
        CHECK_EQ_INT(!!(h.flags & RC_FLAG_LAST_TILE), i == pk->ntiles - 1);
        CHECK_EQ_INT(!!(h.flags & RC_FLAG_LOSSLESS), p.codec == RCANVAS_CODEC_PNG);
        CHECK_EQ_INT(h.frame_width, img->width);
        CHECK_EQ_INT(h.frame_height, img->height);
        CHECK_EQ_INT(h.timestamp_us, 1234);
        uint8_t *px = NULL;
        uint32_t w = 0, hh = 0;
        int r = p.codec == RCANVAS_CODEC_JPEG
                    ? rc_decode_jpeg(rc_buf_data(&pk->tiles[i].data), pk->tiles[i].data.len, &px, &w, &hh)
                    : rc_decode_png(rc_buf_data(&pk->tiles[i].data), pk->tiles[i].data.len, &px, &w, &hh);
        CHECK_MSG(r == 0, "tile %d of %ux%u does not decode cleanly", i, img->width, img->height);
        if (r) continue;
        CHECK_EQ_INT(w, h.w);
        CHECK_EQ_INT(hh, h.h);
        for (uint32_t y = 0; y < hh && h.y + y < img->height; y++) {
            covered[h.y + y]++;
            memcpy(full + ((size_t)(h.y + y) * img->width + h.x) * 4, px + (size_t)y * w * 4, (size_t)w * 4);
        }
        free(px);
    }
    int once = 1;
    for (uint32_t y = 0; y < img->height; y++) once &= covered[y] == 1;
    CHECK_MSG(once, "tiles of %ux%u do not cover every row exactly once", img->width, img->height);
    free(covered);
    rc_packet_unref(pk);
    return full;
}

/* PSNR of one plain single-threaded libturbojpeg call at the same settings: the reference. */
static double reference_psnr(const uint8_t *px, uint32_t w, uint32_t h, int quality, int ss) {
    tjhandle tj = tjInitCompress();
    unsigned char *out = NULL;
    unsigned long sz = 0;
    double psnr = -1;
    if (tj && !tjCompress2(tj, px, (int)w, (int)w * 4, (int)h, TJPF_RGBA, &out, &sz, ss, quality, TJFLAG_FASTDCT)) {
        uint8_t *dec;
        uint32_t dw, dh;
        if (!rc_decode_jpeg(out, sz, &dec, &dw, &dh)) {
            psnr = rc_psnr_rgb(dec, (size_t)dw * 4, px, (size_t)w * 4, w, h);
            free(dec);
        }
    }
    tjFree(out);
    if (tj) tjDestroy(tj);
    return psnr;
}

/* Lowest PSNR a JPEG round trip may have, beside "no worse than one plain libturbojpeg call", per content kind
 * (about 2 dB under what libjpeg-turbo reaches on the generated frames). Pure noise and the noisy heatmap lose
 * most of their detail to quantization, and to 4:2:0 their chroma; frames of a few pixels (7×5) are mostly
 * edge padding: there the floor only catches garbage. */
static double psnr_floor(const tf_frame *f, int q) {
    if ((uint64_t)f->w * f->h < 64 * 64) return 12.0;
    switch (f->kind) {
    case TF_NOISE: return q >= 90 ? 28.0 : 11.0;
    case TF_HEATMAP: return q >= 90 ? 28.0 : 20.0;
    case TF_GRADIENT: return 45.0;
    default: return 27.0; /* plot, text and the corpus */
    }
}

/* JPEG (q85 4:2:0, q90 4:4:4) and PNG round trips of one frame through the stripe-parallel path. */
static void round_trip(const tf_frame *f, void *user) {
    (void)user;
    const uint8_t *px = f->px;
    uint32_t w = f->w, h = f->h;
    rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    struct { int q; rcanvas_subsampling ss; int tjss; } cases[] = {{85, RCANVAS_SUBSAMP_420, TJSAMP_420},
                                                                   {90, RCANVAS_SUBSAMP_444, TJSAMP_444}};
    for (int k = 0; k < 2; k++) {
        size_t bytes = 0;
        int nt = 0;
        rc_encode_params p = {.codec = RCANVAS_CODEC_JPEG, .quality = cases[k].q, .subsampling = cases[k].ss};
        uint8_t *dec = encode_decode(&img, p, &bytes, &nt);
        if (!dec) continue;
        double psnr = rc_psnr_rgb(dec, (size_t)w * 4, px, (size_t)w * 4, w, h);
        double ref = reference_psnr(px, w, h, cases[k].q, cases[k].tjss);
        /* Stripes restart the DC prediction and pad the MCU rows at each cut: a few hundredths of a dB. */
        CHECK_MSG(psnr >= ref - 0.3 && psnr > psnr_floor(f, cases[k].q),
                  "%s q%d: PSNR %.2f dB vs single call %.2f dB", f->name, cases[k].q, psnr, ref);
        printf("jpeg %-24s q%d %s: %d tiles, %8zu bytes, PSNR %.2f dB (single call %.2f dB)\n", f->name,
               cases[k].q, k ? "4:4:4" : "4:2:0", nt, bytes, psnr, ref);
        free(dec);
    }
    size_t bytes = 0;
    int nt = 0;
    uint8_t *dec = encode_decode(&img, (rc_encode_params){.codec = RCANVAS_CODEC_PNG}, &bytes, &nt);
    if (dec) {
        /* PNG carries RGB; alpha of the frames is opaque, compare RGB exactly */
        CHECK_MSG(rc_psnr_rgb(dec, (size_t)w * 4, px, (size_t)w * 4, w, h) >= 99.0, "%s: PNG not exact", f->name);
        printf("png  %-24s: %d tiles, %8zu bytes, exact\n", f->name, nt, bytes);
        free(dec);
    }
}

/* Every generated frame (under ASan up to 1920×1080; the plain run adds 3840×2160), then the shared corpus when
 * it is there. */
static void test_frames(void) {
#ifdef RCANVAS_SANITIZE
    const uint64_t max_px = 1920 * 1080;
#else
    const uint64_t max_px = 0;
#endif
    int n = tf_each_generated(max_px, round_trip, NULL);
    CHECK_EQ_INT(n, TF_KINDS * (max_px ? tf_nsizes - 1 : tf_nsizes));
    int load_errors = 0;
    int corpus = tf_each_corpus("test_encode", 0, round_trip, NULL, &load_errors);
    CHECK_MSG(load_errors == 0, "%d corpus frames do not load", load_errors);
    CHECK_MSG(corpus < 0 || corpus >= 8, "corpus has %d frames, expected 8", corpus);
}

static void fill_pattern(uint8_t *px, uint32_t w, uint32_t h, size_t pitch, unsigned seed) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + y * pitch + x * 4;
            p[0] = (uint8_t)(x * 255 / (w > 1 ? w - 1 : 1));
            p[1] = (uint8_t)(y * 255 / (h > 1 ? h - 1 : 1));
            p[2] = (uint8_t)((x * 7 + y * 13 + seed) & 0xff);
            p[3] = 255;
        }
}

static void test_odd_sizes(void) {
    const uint32_t sizes[][2] = {{1, 1}, {7, 5}, {1001, 777}, {16, 2000}, {3000, 3}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t w = sizes[i][0], h = sizes[i][1];
        size_t pitch = (size_t)w * 4 + 12; /* padded rows */
        uint8_t *px = calloc(pitch, h);
        uint8_t *tight = malloc((size_t)w * h * 4);
        if (!px || !tight) return;
        fill_pattern(px, w, h, pitch, (unsigned)i);
        for (uint32_t y = 0; y < h; y++) memcpy(tight + (size_t)y * w * 4, px + y * pitch, (size_t)w * 4);
        rc_image img = {.pixels = px, .width = w, .height = h, .pitch = pitch, .format = RCANVAS_FORMAT_RGBA8};
        size_t bytes;
        int nt;
        uint8_t *dec = encode_decode(&img, (rc_encode_params){.codec = RCANVAS_CODEC_PNG}, &bytes, &nt);
        if (dec) {
            CHECK_MSG(memcmp(dec, tight, (size_t)w * h * 4) == 0, "PNG %ux%u not pixel-exact", w, h);
            free(dec);
        }
        dec = encode_decode(&img, (rc_encode_params){.codec = RCANVAS_CODEC_JPEG, .quality = 95,
                                                     .subsampling = RCANVAS_SUBSAMP_444}, &bytes, &nt);
        if (dec) {
            double psnr = rc_psnr_rgb(dec, (size_t)w * 4, tight, (size_t)w * 4, w, h);
            CHECK_MSG(psnr > 30.0, "JPEG %ux%u q95 4:4:4 PSNR %.2f dB", w, h, psnr);
            free(dec);
        }
        free(px);
        free(tight);
    }
}

/* BGRA and RGBX input give the same decoded RGB as RGBA. */
static void test_formats(void) {
    uint32_t w = 333, h = 217;
    size_t pitch = (size_t)w * 4 + 64;
    uint8_t *rgba = calloc(pitch, h), *bgra = calloc(pitch, h);
    if (!rgba || !bgra) return;
    fill_pattern(rgba, w, h, pitch, 3);
    for (size_t i = 0; i < pitch * h; i += 4) {
        bgra[i] = rgba[i + 2];
        bgra[i + 1] = rgba[i + 1];
        bgra[i + 2] = rgba[i];
        bgra[i + 3] = 0; /* alpha ignored */
    }
    rc_image a = {.pixels = rgba, .width = w, .height = h, .pitch = pitch, .format = RCANVAS_FORMAT_RGBA8};
    rc_image b = {.pixels = bgra, .width = w, .height = h, .pitch = pitch, .format = RCANVAS_FORMAT_BGRA8};
    rc_image x = {.pixels = rgba, .width = w, .height = h, .pitch = pitch, .format = RCANVAS_FORMAT_RGBX8};
    size_t bytes;
    int nt;
    rc_encode_params png = {.codec = RCANVAS_CODEC_PNG};
    uint8_t *da = encode_decode(&a, png, &bytes, &nt), *db = encode_decode(&b, png, &bytes, &nt),
            *dx = encode_decode(&x, png, &bytes, &nt);
    if (da && db && dx) {
        CHECK(memcmp(da, db, (size_t)w * h * 4) == 0);
        CHECK(memcmp(da, dx, (size_t)w * h * 4) == 0);
    }
    free(da), free(db), free(dx);
    rc_encode_params jpg = {.codec = RCANVAS_CODEC_JPEG, .quality = 90, .subsampling = RCANVAS_SUBSAMP_420};
    da = encode_decode(&a, jpg, &bytes, &nt);
    db = encode_decode(&b, jpg, &bytes, &nt);
    if (da && db) CHECK(memcmp(da, db, (size_t)w * h * 4) == 0);
    free(da), free(db);
    free(rgba), free(bgra);
}

static void test_bad_input(void) {
    rc_encoder *e = NULL;
    CHECK_EQ_INT(rc_encoder_new(RCANVAS_CODEC_JPEG, &e), RCANVAS_OK);
    rc_encoder_free(e);
    CHECK_EQ_INT(rc_encoder_new((rcanvas_codec)99, &e), RCANVAS_EINVAL);
    CHECK(e == NULL);
    rc_encoder *j = NULL;
    rc_encoder_new(RCANVAS_CODEC_JPEG, &j);
    uint8_t px[64] = {0};
    rc_buf out = {0};
    rc_image img = {.pixels = px, .width = 4, .height = 4, .pitch = 16, .format = RCANVAS_FORMAT_RGBA8};
    rc_encode_params p = {.codec = RCANVAS_CODEC_JPEG, .quality = 0};
    CHECK_EQ_INT(rc_encoder_encode(j, &img, &p, &out), RCANVAS_EINVAL);
    p.quality = 101;
    CHECK_EQ_INT(rc_encoder_encode(j, &img, &p, &out), RCANVAS_EINVAL);
    p.quality = 50;
    img.pitch = 15;
    CHECK_EQ_INT(rc_encoder_encode(j, &img, &p, &out), RCANVAS_EINVAL);
    img.pitch = 16;
    img.pixels = NULL;
    CHECK_EQ_INT(rc_encoder_encode(j, &img, &p, &out), RCANVAS_EINVAL);
    img.pixels = px;
    p.codec = RCANVAS_CODEC_PNG; /* codec of the params must match the encoder */
    CHECK_EQ_INT(rc_encoder_encode(j, &img, &p, &out), RCANVAS_EINVAL);
    p.codec = RCANVAS_CODEC_JPEG;
    CHECK_EQ_INT(rc_encoder_encode(j, &img, &p, &out), RCANVAS_OK);
    CHECK(out.len > 100 && rc_buf_data(&out)[0] == 0xFF && rc_buf_data(&out)[1] == 0xD8);
    rc_buf_free(&out);
    rc_encoder_free(j);
}

static void test_stripe_plan(void) {
    CHECK_EQ_INT(rc_encode_plan_stripes(1920, 1080, 1), 1);
    CHECK_EQ_INT(rc_encode_plan_stripes(100, 100, 8), 1);
    int n = rc_encode_plan_stripes(1920, 1080, 2);
    CHECK_EQ_INT(n, 2);
    n = rc_encode_plan_stripes(3840, 2160, 16);
    CHECK(n >= 14 && n <= 16);
    CHECK(rc_encode_plan_stripes(3840, 2160, 1000) <= RC_MAX_TILES);
}

/* White with 1-px lines: red rows at y = 40 + 64k, green columns at x = 33 + 64k, blue rows at y = 72 + 64k
 * (odd and even positions, so 4:2:0 blocks pair them with white either way); in rows [y0, y1) only. */
static void draw_lines(uint8_t *px, uint32_t w, uint32_t h, uint32_t y0, uint32_t y1) {
    memset(px, 255, (size_t)w * h * 4);
    for (uint32_t y = y0; y < y1; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            if (y % 64 == 40) p[0] = 230, p[1] = 20, p[2] = 30;
            else if (y % 64 == 9) p[0] = 20, p[1] = 40, p[2] = 220;
            else if (x % 64 == 33) p[0] = 10, p[1] = 200, p[2] = 20;
        }
}

/* The mean over the line pixels of the distance (max over R,G,B) between the decoded and the drawn colour. */
static double line_colour_error(const uint8_t *src, const uint8_t *dec, uint32_t w, uint32_t h) {
    double sum = 0;
    long n = 0;
    for (size_t i = 0; i < (size_t)w * h; i++) {
        const uint8_t *a = src + 4 * i, *b = dec + 4 * i;
        if (a[0] == 255 && a[1] == 255 && a[2] == 255) continue;
        int e = 0;
        for (int c = 0; c < 3; c++) e = abs(a[c] - b[c]) > e ? abs(a[c] - b[c]) : e;
        sum += e;
        n++;
    }
    return n ? sum / (double)n : 0;
}

/* The subsampling in a JPEG's header (TJSAMP_*), -1 if unreadable. */
static int jpeg_samp(const rc_packet *pk, int i) {
    tjhandle tj = tjInitDecompress();
    int w = 0, h = 0, ss = -1, cs = 0;
    if (tjDecompressHeader3(tj, (unsigned char *)rc_buf_data(&pk->tiles[i].data), pk->tiles[i].data.len, &w, &h,
                            &ss, &cs))
        ss = -1;
    tjDestroy(tj);
    return ss;
}

static void test_chroma(void) {
    const uint32_t w = 640, h = 384;
    uint8_t *px = malloc((size_t)w * h * 4);
    draw_lines(px, w, h, 0, h);
    rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    struct { rcanvas_subsampling ss; int q; double max_err, min_err; } cases[] = {
        {RCANVAS_SUBSAMP_444, 85, 40, 0}, {RCANVAS_SUBSAMP_AUTO, 85, 40, 0},
        {RCANVAS_SUBSAMP_420, 85, 1e9, 60}, {RCANVAS_SUBSAMP_420, 100, 1e9, 60}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t bytes = 0;
        int nt = 0;
        rc_encode_params p = {.codec = RCANVAS_CODEC_JPEG, .quality = cases[k].q, .subsampling = cases[k].ss};
        uint8_t *dec = encode_decode(&img, p, &bytes, &nt);
        if (!dec) continue;
        double err = line_colour_error(px, dec, w, h);
        printf("chroma: 1-px lines, subsampling %d q%d: mean colour error on the lines %.1f, %zu bytes\n",
               (int)cases[k].ss, cases[k].q, err, bytes);
        CHECK_MSG(err <= cases[k].max_err && err >= cases[k].min_err, "ss %d q%d: line colour error %.1f",
                  (int)cases[k].ss, cases[k].q, err);
        free(dec);
    }
    /* AUTO's choice, read from the header */
    rc_encode_params pa = {.codec = RCANVAS_CODEC_JPEG, .quality = 85, .subsampling = RCANVAS_SUBSAMP_AUTO};
    rc_packet *pk = rc_packet_get(g_pp);
    rc_encode_task t = {.img = img, .params = pa, .packet = pk, .stripes = 1};
    CHECK_EQ_INT(rc_encode_sync(g_pool, &t), RCANVAS_OK);
    CHECK_EQ_INT(jpeg_samp(pk, 0), TJSAMP_444);
    rc_packet_unref(pk);
    /* grey strokes (text-like) and a smooth colour gradient: 4:2:0, byte for byte the forced 4:2:0 file */
    for (int kind = 0; kind < 2; kind++) {
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++) {
                uint8_t *q = px + ((size_t)y * w + x) * 4;
                if (kind == 0) {
                    uint8_t v = ((x / 3 + y / 5) % 7 == 0 || (x * 7 + y * 3) % 23 == 0) ? 20 : 250;
                    q[0] = q[1] = q[2] = v;
                } else {
                    q[0] = (uint8_t)(x * 255 / w), q[1] = (uint8_t)(y * 255 / h), q[2] = (uint8_t)(255 - x * 200 / w);
                }
            }
        CHECK_EQ_INT(rc_jpeg_auto_subsampling(&img), RCANVAS_SUBSAMP_420);
        size_t b_auto = 0, b_420 = 0;
        int nt = 0;
        rc_encode_params p = pa;
        free(encode_decode(&img, p, &b_auto, &nt));
        p.subsampling = RCANVAS_SUBSAMP_420;
        free(encode_decode(&img, p, &b_420, &nt));
        CHECK_MSG(b_auto == b_420 && b_auto > 0, "kind %d: AUTO %zu bytes, 4:2:0 %zu", kind, b_auto, b_420);
    }
    /* per stripe: lines only in the top half, grey below; two stripes get 4:4:4 then 4:2:0 */
    draw_lines(px, w, h, 0, h / 2);
    pk = rc_packet_get(g_pp);
    rc_encode_task t2 = {.img = img, .params = pa, .packet = pk, .stripes = 2};
    CHECK_EQ_INT(rc_encode_sync(g_pool, &t2), RCANVAS_OK);
    CHECK_EQ_INT(pk->ntiles, 2);
    if (pk->ntiles == 2) {
        CHECK_EQ_INT(jpeg_samp(pk, 0), TJSAMP_444);
        CHECK_EQ_INT(jpeg_samp(pk, 1), TJSAMP_420);
    }
    rc_packet_unref(pk);
    /* BGRA reads its red from byte 2: the same lines as BGRA are found too */
    draw_lines(px, w, h, 0, h);
    img.format = RCANVAS_FORMAT_BGRA8;
    CHECK_EQ_INT(rc_jpeg_auto_subsampling(&img), RCANVAS_SUBSAMP_444);
    free(px);
}

/* Lines of "text" at a 12-pixel pitch from row `offset`: 5 rows of 1-px dark strokes and dots on white, then 7
 * blank rows (text whose line pitch meets a thinned look's row stride, 12 px at 720p and 1440p, at one phase). */
static void draw_lines12(uint8_t *px, uint32_t w, uint32_t h, uint32_t offset) {
    for (uint32_t y = 0; y < h; y++) {
        uint32_t r = (y + 12 - offset % 12) % 12;
        for (uint32_t x = 0; x < w; x++) {
            int dark = r < 5 && (x % 6 == 0 || (x * 7 + r * 3) % 11 == 0);
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            p[0] = p[1] = p[2] = dark ? 20 : 250;
            p[3] = 255;
        }
    }
}

/* rc_image_fine_detail: the frames whose size must stay (text, 1-px lines) against those a smaller size only
 * softens (noise-like imaging, smooth shading, a gradient), on the generated sequences and kinds at 1080p. */
static void test_fine_detail(void) {
    /* text at a 12-pixel pitch, each of its 12 phases, at sizes whose thinned look's strides are 12 px (720p, 1440p)
     * and others: every phase found */
    const uint32_t sizes[][2] = {{1280, 720}, {1366, 768}, {2560, 1440}, {2560, 1600}, {1920, 1080}, {3840, 2160}};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        uint32_t sw = sizes[z][0], sh = sizes[z][1];
        uint8_t *lp = malloc((size_t)sw * sh * 4);
        if (!lp) return;
        rc_image li = {.pixels = lp, .width = sw, .height = sh, .pitch = (size_t)sw * 4, .format = RCANVAS_FORMAT_RGBA8};
        int found = 0;
        for (uint32_t o = 0; o < 12; o++) {
            draw_lines12(lp, sw, sh, o);
            found += rc_image_fine_detail(&li);
        }
        CHECK_MSG(found == 12, "%ux%u: text at a 12-px pitch found at %d of its 12 phases", sw, sh, found);
        free(lp);
    }
    const uint32_t w = 1920, h = 1080;
    uint8_t *px = malloc((size_t)w * h * 4);
    if (!px) return;
    rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    const struct { tf_motion m; int want; } seq[] = {
        {TF_MOTION_SCROLL, 1}, {TF_MOTION_PAN, 1}, {TF_MOTION_ZOOM, 0}};
    for (size_t k = 0; k < sizeof seq / sizeof seq[0]; k++)
        for (uint32_t i = 0; i < 64; i += 21) {
            tf_motion_draw(seq[k].m, i, 64, w, h, px, img.pitch);
            int got = rc_image_fine_detail(&img);
            CHECK_MSG(got == seq[k].want, "%s frame %u: fine detail %d", tf_motion_name(seq[k].m), i, got);
        }
    const struct { tf_kind k; int want; } kinds[] = {{TF_TEXT, 1}, {TF_PLOT, 1}, {TF_GRADIENT, 0}, {TF_HEATMAP, 0},
                                                     {TF_NOISE, 0}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        tf_draw(kinds[k].k, w, h, px, img.pitch);
        CHECK_MSG(rc_image_fine_detail(&img) == kinds[k].want, "%s: fine detail not %d", tf_kind_name(kinds[k].k),
                  kinds[k].want);
    }
    /* at 4K the look reads one in 64 of the 2x2 blocks of its full pattern (RC_DETAIL_BLOCKS), at 1080p one in 16:
     * the same verdicts */
    free(px);
    const uint32_t w4 = 3840, h4 = 2160;
    px = malloc((size_t)w4 * h4 * 4);
    if (!px) return;
    rc_image big = {.pixels = px, .width = w4, .height = h4, .pitch = (size_t)w4 * 4, .format = RCANVAS_FORMAT_RGBA8};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        tf_draw(kinds[k].k, w4, h4, px, big.pitch);
        CHECK_MSG(rc_image_fine_detail(&big) == kinds[k].want, "4K %s: fine detail not %d", tf_kind_name(kinds[k].k),
                  kinds[k].want);
    }
    for (size_t k = 0; k < sizeof seq / sizeof seq[0]; k++) {
        tf_motion_draw(seq[k].m, 30, 64, w4, h4, px, big.pitch);
        CHECK_MSG(rc_image_fine_detail(&big) == seq[k].want, "4K %s: fine detail not %d", tf_motion_name(seq[k].m),
                  seq[k].want);
    }
    img.pixels = px; /* (the 4K buffer, drawn at 1080p) */
    /* the same text as BGRA is found too; tiny and empty images are not */
    tf_draw(TF_TEXT, w, h, px, img.pitch);
    img.format = RCANVAS_FORMAT_BGRA8;
    CHECK(rc_image_fine_detail(&img) == 1);
    img.width = img.height = 1;
    CHECK(rc_image_fine_detail(&img) == 0 && rc_image_fine_detail(NULL) == 0);
    free(px);
}

int main(void) {
    test_fine_detail();
    if (rc_pool_new(rc_cpu_count() < 2 ? 2 : rc_cpu_count(), &g_pool) || !(g_pp = rc_packet_pool_new())) return 1;
    test_stripe_plan();
    test_bad_input();
    test_formats();
    test_odd_sizes();
    test_frames();
    test_chroma();
    rc_packet_pool_free(g_pp);
    rc_pool_free(g_pool);
    TEST_MAIN_END();
}
