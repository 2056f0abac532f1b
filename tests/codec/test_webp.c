/* SPDX-License-Identifier: MIT */
/*
 * test_webp — WebP (src/codec/webp.c) on the generated test frames (tests/testframes.h: plot, text, gradient,
 * heatmap, noise at 1×1, 7×5, 333×197 and 1001×777; no corpus needed), decoded by libwebp's WebPDecodeRGBA:
 *  - the table: "webp" and "webp-lossless" by name, rc_codec_for(WEBP) is the lossy one, flags;
 *  - every frame: lossless decodes to the exact pixels; lossy q85 decodes at its size, above a PSNR floor per kind
 *    (measured values next to them), with fewer bytes at q30;
 *  - input formats: RGBA with alpha 0…254 and RGBX with X = 0 decode opaque with the same RGB (frames are shown
 *    opaque: alpha is ignored), BGRA is read in its own byte order (lossy: the very same file as from RGBA), padded
 *    row pitch;
 *  - bad quality is refused by the lossy codec (the lossless one has no quality);
 *  - 1920×1080 in stripes on the worker pool (frame_encode.c), lossy and lossless: every tile decodes, rows covered
 *    once, lossless tiles flagged so and exact.
 */
#include <string.h>
#include <webp/decode.h>

#include "codec/frame_encode.h"
#include "core/pool.h"
#include "core/util.h"
#include "imageio.h"
#include "test.h"
#include "test_wire.h"
#include "testframes.h"

/* RGB PSNR floors at q85, per kind, 2 dB under the lower of what libwebp 1.2.4 (Debian 12) gives at 333×197 and at
 * 1001×777 (4:2:0 and q85 cost thin coloured lines and per-pixel noise most): plot 29.6/30.2, text 32.3/33.5,
 * gradient 44.3/47.2, heatmap 22.3/22.2, noise 12.7/12.7 dB. Frames under 64×64 pixels are only checked to decode
 * at their size. */
static const double k_psnr_min[TF_KINDS] = {27.5, 30.0, 42.0, 20.0, 10.5};

/* Encodes img with a fresh instance of type into out (cleared first); RCANVAS_OK or the error (checked). */
static int encode(const rc_codec_type *type, const rc_image *img, int quality, rc_buf *out) {
    rc_codec *c = NULL;
    CHECK_EQ_INT(rc_codec_new(type, &c), RCANVAS_OK);
    if (!c) return RCANVAS_ENOMEM;
    rc_encode_params p = {.codec = RCANVAS_CODEC_WEBP, .quality = quality};
    rc_encode_info info = {0};
    rc_buf_clear(out);
    int st = rc_codec_encode(c, img, &p, out, &info);
    CHECK_MSG(st == RCANVAS_OK, "%s %ux%u: %s %s", type->name, img->width, img->height, rcanvas_strerror(st),
              rc_codec_error(c));
    CHECK_EQ_INT(info.keyframe, 1);
    rc_codec_free(c);
    return st;
}

/* WebPDecodeRGBA of data, if it decodes at w × h (caller WebPFree's); else NULL (checked). */
static uint8_t *decode(const rc_buf *data, uint32_t w, uint32_t h, const char *what) {
    int dw = 0, dh = 0;
    uint8_t *dec = WebPDecodeRGBA(rc_buf_data(data), data->len, &dw, &dh);
    CHECK_MSG(dec && dw == (int)w && dh == (int)h, "%s: decodes to %dx%d, expected %ux%u", what, dw, dh, w, h);
    if (dec && (dw != (int)w || dh != (int)h)) {
        WebPFree(dec);
        dec = NULL;
    }
    return dec;
}

/* 1 if dec (RGBA, tight) has the RGB of src (channels in RGBA order, at pitch) and alpha 255 everywhere. */
static int same_rgb_opaque(const uint8_t *src, size_t pitch, const uint8_t *dec, uint32_t w, uint32_t h) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            const uint8_t *a = src + y * pitch + (size_t)x * 4, *b = dec + ((size_t)y * w + x) * 4;
            if (a[0] != b[0] || a[1] != b[1] || a[2] != b[2] || b[3] != 255) return 0;
        }
    return 1;
}

static void test_table(void) {
    CHECK(rc_codec_by_name("webp") == &rc_codec_webp);
    CHECK(rc_codec_by_name("webp-lossless") == &rc_codec_webp_lossless);
    CHECK(rc_codec_for(RCANVAS_CODEC_WEBP) == &rc_codec_webp);
    CHECK_EQ_INT(rc_codec_webp.wire_id, RCANVAS_CODEC_WEBP);
    CHECK_EQ_INT(rc_codec_webp_lossless.wire_id, RCANVAS_CODEC_WEBP);
    CHECK_EQ_INT(rc_codec_webp.flags, RC_CODEC_INTRA | RC_CODEC_STRIPES);
    CHECK_EQ_INT(rc_codec_webp_lossless.flags, RC_CODEC_INTRA | RC_CODEC_STRIPES | RC_CODEC_LOSSLESS);
    CHECK(rc_codec_webp.webcodecs == NULL && rc_codec_webp_lossless.webcodecs == NULL);
}

static void visit_generated(const tf_frame *f, void *user) {
    (void)user;
    rc_image img = {f->px, f->w, f->h, (size_t)f->w * 4, RCANVAS_FORMAT_RGBA8, NULL};
    rc_buf out = {0};
    if (encode(&rc_codec_webp_lossless, &img, 85, &out) == RCANVAS_OK) {
        uint8_t *dec = decode(&out, f->w, f->h, f->name);
        CHECK_MSG(!dec || same_rgb_opaque(f->px, (size_t)f->w * 4, dec, f->w, f->h), "webp-lossless %s: not exact",
                  f->name);
        if (dec) WebPFree(dec);
        if (f->w == 1001) printf("%-16s webp-lossless %7zu bytes", f->name, out.len);
    }
    size_t b85 = 0;
    if (encode(&rc_codec_webp, &img, 85, &out) == RCANVAS_OK) {
        b85 = out.len;
        uint8_t *dec = decode(&out, f->w, f->h, f->name);
        if (dec && (uint64_t)f->w * f->h >= 64 * 64) {
            double psnr = rc_psnr_rgb(f->px, (size_t)f->w * 4, dec, (size_t)f->w * 4, f->w, f->h);
            double min = k_psnr_min[f->kind];
            CHECK_MSG(psnr >= min, "webp q85 %s: PSNR %.2f dB < %.1f", f->name, psnr, min);
            if (f->w == 1001) printf(" | webp q85 %7zu bytes, PSNR %.2f dB", b85, psnr);
        }
        if (dec) WebPFree(dec);
    }
    if ((uint64_t)f->w * f->h >= 64 * 64 && encode(&rc_codec_webp, &img, 30, &out) == RCANVAS_OK)
        CHECK_MSG(out.len < b85, "webp %s: q30 %zu bytes, q85 %zu", f->name, out.len, b85);
    if (f->w == 1001) printf("\n");
    rc_buf_free(&out);
}

/* In place: RGBA ↔ BGRA. */
static void swap_rb(uint8_t *px, uint32_t w, uint32_t h, size_t pitch) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + y * pitch + (size_t)x * 4, t = p[0];
            p[0] = p[2];
            p[2] = t;
        }
}

static void test_formats(void) {
    const uint32_t w = 333, h = 197;
    const size_t pitch = (size_t)w * 4 + 36; /* padded rows */
    uint8_t *px = malloc(pitch * h);
    if (!px) return;
    tf_draw(TF_PLOT, w, h, px, pitch);
    rc_buf out = {0}, ref = {0};
    /* RGBA with alpha 0…254, RGBX with X = 0: decoded opaque, RGB unchanged */
    for (int x = 0; x < 2; x++) {
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t i = 0; i < w; i++) px[y * pitch + (size_t)i * 4 + 3] = x ? 0 : (uint8_t)((i * 7 + y) % 255);
        rc_image img = {px, w, h, pitch, x ? RCANVAS_FORMAT_RGBX8 : RCANVAS_FORMAT_RGBA8, NULL};
        if (encode(&rc_codec_webp_lossless, &img, 85, &out) == RCANVAS_OK) {
            uint8_t *dec = decode(&out, w, h, x ? "RGBX" : "RGBA");
            CHECK_MSG(!dec || same_rgb_opaque(px, pitch, dec, w, h), "webp-lossless %s: not exact, or not opaque",
                      x ? "RGBX" : "RGBA");
            if (dec) WebPFree(dec);
        }
        if (encode(&rc_codec_webp, &img, 85, x ? &out : &ref) == RCANVAS_OK) {
            rc_buf *b = x ? &out : &ref;
            uint8_t *dec = decode(b, w, h, "lossy");
            int opaque = dec != NULL;
            for (size_t i = 0; dec && i < (size_t)w * h; i++) opaque &= dec[i * 4 + 3] == 255;
            CHECK_MSG(opaque, "webp %s: not opaque", x ? "RGBX" : "RGBA");
            if (dec) WebPFree(dec);
        }
        if (x) CHECK_MSG(out.len == ref.len && !memcmp(rc_buf_data(&out), rc_buf_data(&ref), out.len),
                         "webp: RGBX and RGBA input (alpha ignored) give different files");
    }
    /* BGRA: the same pixels in B, G, R, A byte order */
    swap_rb(px, w, h, pitch);
    rc_image img = {px, w, h, pitch, RCANVAS_FORMAT_BGRA8, NULL};
    int st_ll = encode(&rc_codec_webp_lossless, &img, 85, &out);
    swap_rb(px, w, h, pitch);
    if (st_ll == RCANVAS_OK) {
        uint8_t *dec = decode(&out, w, h, "BGRA");
        CHECK_MSG(!dec || same_rgb_opaque(px, pitch, dec, w, h), "webp-lossless BGRA: not exact");
        if (dec) WebPFree(dec);
    }
    swap_rb(px, w, h, pitch);
    if (encode(&rc_codec_webp, &img, 85, &out) == RCANVAS_OK)
        CHECK_MSG(out.len == ref.len && !memcmp(rc_buf_data(&out), rc_buf_data(&ref), out.len),
                  "webp: BGRA and RGBA input of the same picture give different files");
    /* bad quality: refused by the lossy codec, before anything is written */
    rc_codec *c = NULL;
    CHECK_EQ_INT(rc_codec_new(&rc_codec_webp, &c), RCANVAS_OK);
    rc_encode_params p = {.codec = RCANVAS_CODEC_WEBP, .quality = 0};
    rc_buf_clear(&out);
    CHECK_EQ_INT(rc_codec_encode(c, &img, &p, &out, NULL), RCANVAS_EINVAL);
    p.quality = 101;
    CHECK_EQ_INT(rc_codec_encode(c, &img, &p, &out, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(out.len, 0);
    rc_codec_free(c);
    rc_buf_free(&out);
    rc_buf_free(&ref);
    free(px);
}

/* Through the server's path: stripes on the pool, one tile each, with the transport's header. */
static void stripes(rc_pool *pool, rc_packet_pool *pp, const rc_codec_type *type) {
    const uint32_t w = 1920, h = 1080;
    uint8_t *px = tf_new(TF_TEXT, w, h);
    rc_packet *pk = rc_packet_get(pp);
    rc_encode_task t = {.img = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8},
                        .params = {.codec = RCANVAS_CODEC_WEBP, .quality = 85},
                        .codec = type,
                        .seq = 3,
                        .packet = pk};
    int st = px ? rc_encode_sync(pool, &t) : RCANVAS_ENOMEM;
    CHECK_MSG(st == RCANVAS_OK, "%s stripes: %s %s", type->name, rcanvas_strerror(st), t.error);
    uint8_t *full = calloc((size_t)w * h, 4);
    uint8_t *covered = calloc(h, 1);
    int lossless = (type->flags & RC_CODEC_LOSSLESS) != 0;
    CHECK(pk->ntiles >= 2 && pk->codec == type);
    for (int i = 0; !st && full && covered && i < pk->ntiles; i++) {
        rc_frame_header hd;
        CHECK_EQ_INT(test_tile_header(pk, i, &hd), RCANVAS_OK);
        CHECK_EQ_INT(hd.codec, RCANVAS_CODEC_WEBP);
        CHECK_EQ_INT(!!(hd.flags & RC_FLAG_LOSSLESS), lossless);
        uint8_t *dec = decode(&pk->tiles[i].data, hd.w, hd.h, type->name);
        if (!dec) continue;
        for (uint32_t y = 0; y < hd.h && hd.y + y < h; y++) {
            covered[hd.y + y]++;
            memcpy(full + ((size_t)(hd.y + y) * w + hd.x) * 4, dec + (size_t)y * hd.w * 4, (size_t)hd.w * 4);
        }
        WebPFree(dec);
    }
    int once = 1;
    for (uint32_t y = 0; covered && y < h; y++) once &= covered[y] == 1;
    CHECK_MSG(once, "%s tiles do not cover every row once", type->name);
    if (!st && full && once) {
        double psnr = rc_psnr_rgb(px, (size_t)w * 4, full, (size_t)w * 4, w, h);
        printf("%s text-1920x1080 in %d stripes: %zu bytes, PSNR %.2f dB\n", type->name, pk->ntiles, pk->total_bytes,
               psnr);
        if (lossless) CHECK_MSG(same_rgb_opaque(px, (size_t)w * 4, full, w, h), "webp-lossless stripes: not exact");
        else CHECK_MSG(psnr >= k_psnr_min[TF_TEXT], "webp stripes: PSNR %.2f dB", psnr);
    }
    free(covered);
    free(full);
    free(px);
    rc_packet_unref(pk);
}

int main(void) {
    test_table();
    tf_each_generated(1001 * 777, visit_generated, NULL);
    test_formats();
    rc_pool *pool = NULL;
    rc_packet_pool *pp = rc_packet_pool_new();
    if (rc_pool_new(rc_cpu_count() < 2 ? 2 : rc_cpu_count(), &pool) || !pp) return 1;
    stripes(pool, pp, &rc_codec_webp);
    stripes(pool, pp, &rc_codec_webp_lossless);
    rc_packet_pool_free(pp);
    rc_pool_free(pool);
    TEST_MAIN_END();
}
