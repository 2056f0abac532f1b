/* SPDX-License-Identifier: MIT */
/*
 * png.c — PNG through libspng: 8-bit RGB (alpha dropped: frames are shown opaque), filter none, zlib level 1
 * (fast; the lossless refinement must not hold the encoder threads long). Rows are converted from RGBA/BGRA/RGBX
 * at any pitch into one scratch row and written progressively into the caller's rc_buf through a write callback,
 * so no whole-frame copy and no per-frame output allocation happens.
 */
#include "codec/codec.h"

#include <spng.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

typedef struct png_codec {
    rc_codec base;
    uint8_t *row; /* one RGB8 row of scratch */
    size_t row_cap;
} png_codec;

static void png_destroy(rc_codec *c) {
    png_codec *e = (png_codec *)c;
    free(e->row);
    free(e);
}

static int png_create(const rc_codec_type *type, rc_codec **out) {
    png_codec *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = type;
    *out = &e->base;
    return RCANVAS_OK;
}

static int write_cb(spng_ctx *ctx, void *user, void *data, size_t len) {
    (void)ctx;
    return rc_buf_append(user, data, len) ? SPNG_IO_ERROR : 0;
}

static void to_rgb(uint8_t *dst, const uint8_t *src, uint32_t w, rcanvas_pixel_format f) {
    if (f == RCANVAS_FORMAT_BGRA8) {
        for (uint32_t x = 0; x < w; x++, src += 4, dst += 3) {
            dst[0] = src[2];
            dst[1] = src[1];
            dst[2] = src[0];
        }
    } else {
        for (uint32_t x = 0; x < w; x++, src += 4, dst += 3) {
            dst[0] = src[0];
            dst[1] = src[1];
            dst[2] = src[2];
        }
    }
}

#define SPNG_TRY(call)                                                                                         \
    do {                                                                                                       \
        int rc_ = (call);                                                                                      \
        if (rc_) {                                                                                             \
            snprintf(e->base.err, sizeof e->base.err, "%s: %s", #call, spng_strerror(rc_));                              \
            ret = rc_ == SPNG_IO_ERROR ? RCANVAS_ENOMEM : RCANVAS_ECODEC;                                      \
            goto done;                                                                                         \
        }                                                                                                      \
    } while (0)

static int png_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out,
                      rc_encode_info *info) {
    (void)p;
    (void)info;
    png_codec *e = (png_codec *)c;
    size_t row_bytes = (size_t)img->width * 3;
    if (row_bytes > e->row_cap) {
        uint8_t *row = realloc(e->row, row_bytes);
        if (!row) return RCANVAS_ENOMEM;
        e->row = row;
        e->row_cap = row_bytes;
    }
    /* Most of the output is the deflate stream of ~3 bytes/pixel; reserving half of it up front saves the
     * first few reallocations on the first frame; later frames reuse the capacity. */
    int ret = rc_buf_reserve(out, out->len + row_bytes * img->height / 2 + 1024);
    if (ret) return ret;
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    if (!ctx) return RCANVAS_ENOMEM;
    struct spng_ihdr ihdr = {.width = img->width, .height = img->height, .bit_depth = 8,
                             .color_type = SPNG_COLOR_TYPE_TRUECOLOR};
    SPNG_TRY(spng_set_png_stream(ctx, write_cb, out));
    SPNG_TRY(spng_set_ihdr(ctx, &ihdr));
    SPNG_TRY(spng_set_option(ctx, SPNG_FILTER_CHOICE, SPNG_DISABLE_FILTERING));
    SPNG_TRY(spng_set_option(ctx, SPNG_IMG_COMPRESSION_LEVEL, 1));
    SPNG_TRY(spng_set_option(ctx, SPNG_IMG_COMPRESSION_STRATEGY, Z_DEFAULT_STRATEGY));
    SPNG_TRY(spng_encode_image(ctx, NULL, 0, SPNG_FMT_PNG, SPNG_ENCODE_PROGRESSIVE | SPNG_ENCODE_FINALIZE));
    for (uint32_t y = 0; y < img->height; y++) {
        to_rgb(e->row, img->pixels + (size_t)y * img->pitch, img->width, img->format);
        int rc = spng_encode_row(ctx, e->row, row_bytes);
        if (rc == SPNG_EOI) break;
        SPNG_TRY(rc);
    }
    ret = RCANVAS_OK;
done:
    spng_ctx_free(ctx);
    return ret;
}

const rc_codec_type rc_codec_png = {
    .name = "png", .wire_id = RCANVAS_CODEC_PNG, .flags = RC_CODEC_INTRA | RC_CODEC_STRIPES | RC_CODEC_LOSSLESS,
    .create = png_create, .encode = png_encode, .request_keyframe = NULL, .destroy = png_destroy};
