/* SPDX-License-Identifier: MIT */
/*
 * jpeg.c — JPEG through libturbojpeg (baseline, Huffman tables of ITU-T T.81 Annex K, quantization tables of
 * Annex K scaled by quality as libjpeg does). Reads RGBA/BGRA/RGBX rows at any pitch directly (no conversion
 * copy) and compresses into the caller's rc_buf, grown once to tjBufSize() so libturbojpeg never reallocates.
 * RCANVAS_SUBSAMP_AUTO picks 4:2:0 or 4:4:4 for each image it is given (a stripe, a damage tile) from its pixels:
 * chroma_needs_444.
 */
#include "codec/codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

typedef struct jpeg_codec {
    rc_codec base;
    tjhandle tj; /* libturbojpeg compressor */
} jpeg_codec;

static void jpeg_destroy(rc_codec *c) {
    jpeg_codec *e = (jpeg_codec *)c;
    if (e->tj) tjDestroy(e->tj);
    free(e);
}

static int jpeg_create(const rc_codec_type *type, rc_codec **out) {
    jpeg_codec *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = type;
    e->tj = tjInitCompress();
    if (!e->tj) {
        jpeg_destroy(&e->base);
        return RCANVAS_ECODEC;
    }
    *out = &e->base;
    return RCANVAS_OK;
}

static int tj_pixel_format(rcanvas_pixel_format f) {
    switch (f) {
    case RCANVAS_FORMAT_RGBA8: return TJPF_RGBA;
    case RCANVAS_FORMAT_BGRA8: return TJPF_BGRA;
    case RCANVAS_FORMAT_RGBX8: return TJPF_RGBX;
    }
    return -1;
}

/* 4:2:0 keeps one chroma sample per 2x2 block: what it loses is each pixel's chroma deviation from its block's
 * mean. A block "loses colour" when some pixel's Cb or Cr (JFIF/BT.601 full range, on the 0-255 scale) lies
 * more than RC_CHROMA_LOSS from the block's mean: a 1-px red or blue line on white puts two red pixels in each
 * block it crosses, 64 from the mean (Cr or Cb 127.5 above white's), green 53, a lone coloured pixel 96, while a
 * smooth gradient moves by less than 1 a pixel, and grey text and lines have no chroma at all. 4:4:4 is chosen
 * when at least 1 in 1000 blocks (and at least one) loses colour: a plot with a few thin coloured lines crosses
 * that, a heatmap's cell borders and coloured text too; the cost is about 1.4x the bytes on such content, for
 * 6 dB on the lines (a 1080p line plot, q85 27.0 -> 33.3 dB; 4:2:0 at q95 gave only 27.9). Cost of the
 * scan (half the blocks, a cheap bound first, stops at the count): 1080p corpus frames 0.3-2 ms on one core of the
 * 2-core VM, against 8-15 ms for their JPEG (docs/benchmarks.md, "JPEG subsampling chosen from content"). */
#define RC_CHROMA_LOSS 24
static int chroma_needs_444(const rc_image *img) {
    int ri = img->format == RCANVAS_FORMAT_BGRA8 ? 2 : 0, bi = 2 - ri;
    /* the blocks of a checkerboard, half of them: a horizontal or vertical line crosses every block of its block
     * row or column, so half of its blocks are looked at, as of any other line */
    uint64_t blocks = (uint64_t)(img->width / 2) * (img->height / 2) / 2;
    uint64_t need = blocks / 1000 ? blocks / 1000 : 1, lossy = 0;
    for (uint32_t y = 0; y + 1 < img->height; y += 2) {
        const uint8_t *r0 = img->pixels + (size_t)y * img->pitch, *r1 = r0 + img->pitch;
        for (uint32_t x = (y & 2); x + 1 < img->width; x += 4) {
            const uint8_t *p[4] = {r0 + 4 * x, r0 + 4 * x + 4, r1 + 4 * x, r1 + 4 * x + 4};
            /* Cb and Cr are 0.5 (B-G) - 0.1687 (R-G) and 0.5 (R-G) - 0.0813 (B-G): when R-G and B-G each vary by
             * at most 32 over the block (backgrounds, grey, smooth shading), no deviation exceeds 0.67 x 32 < 24 */
            int rg[4], bg[4], lo_rg = 255, hi_rg = -255, lo_bg = 255, hi_bg = -255;
            for (int i = 0; i < 4; i++) {
                rg[i] = p[i][ri] - p[i][1], bg[i] = p[i][bi] - p[i][1];
                lo_rg = rg[i] < lo_rg ? rg[i] : lo_rg, hi_rg = rg[i] > hi_rg ? rg[i] : hi_rg;
                lo_bg = bg[i] < lo_bg ? bg[i] : lo_bg, hi_bg = bg[i] > hi_bg ? bg[i] : hi_bg;
            }
            if (hi_rg - lo_rg <= 32 && hi_bg - lo_bg <= 32) continue;
            int cb[4], cr[4], mb = 0, mr = 0, dev = 0;
            for (int i = 0; i < 4; i++) {
                cb[i] = 128 * bg[i] - 43 * rg[i]; /* x256 */
                cr[i] = 128 * rg[i] - 21 * bg[i];
                mb += cb[i], mr += cr[i];
            }
            mb /= 4, mr /= 4;
            for (int i = 0; i < 4; i++) {
                int db = abs(cb[i] - mb), dr = abs(cr[i] - mr);
                if (db > dev) dev = db;
                if (dr > dev) dev = dr;
            }
            if (dev > RC_CHROMA_LOSS * 256 && ++lossy >= need) return 1;
        }
    }
    return 0;
}

int rc_jpeg_auto_subsampling(const rc_image *img) {
    return chroma_needs_444(img) ? RCANVAS_SUBSAMP_444 : RCANVAS_SUBSAMP_420;
}

static int jpeg_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out,
                       rc_encode_info *info) {
    (void)info; /* intra-only: always a keyframe */
    jpeg_codec *e = (jpeg_codec *)c;
    if (p->quality < 1 || p->quality > 100) return RCANVAS_EINVAL;
    if (img->pitch > (size_t)INT32_MAX || img->width > INT32_MAX / 4 || img->height > INT32_MAX)
        return RCANVAS_EINVAL;
    rcanvas_subsampling chosen = p->subsampling == RCANVAS_SUBSAMP_AUTO ? (rcanvas_subsampling)rc_jpeg_auto_subsampling(img)
                                                                      : p->subsampling;
    int ss = chosen == RCANVAS_SUBSAMP_444 ? TJSAMP_444 : TJSAMP_420;
    unsigned long worst = tjBufSize((int)img->width, (int)img->height, ss);
    if (worst == (unsigned long)-1) return RCANVAS_EINVAL;
    int r = rc_buf_reserve(out, out->len + worst);
    if (r) return r;
    unsigned char *dst = rc_buf_data(out) + out->len;
    unsigned long size = worst;
    /* TJFLAG_NOREALLOC: dst holds tjBufSize() bytes, the documented worst case. FASTDCT: the AAN integer DCT,
     * within 0.1 dB of the accurate one at q ≥ 75 and ~15 % faster. */
    if (tjCompress2(e->tj, img->pixels, (int)img->width, (int)img->pitch, (int)img->height,
                    tj_pixel_format(img->format), &dst, &size, ss, p->quality,
                    TJFLAG_NOREALLOC | TJFLAG_FASTDCT) != 0) {
        snprintf(c->err, sizeof c->err, "tjCompress2: %s", tjGetErrorStr2(e->tj));
        return RCANVAS_ECODEC;
    }
    out->len += size;
    return RCANVAS_OK;
}

const rc_codec_type rc_codec_jpeg = {
    .name = "jpeg", .wire_id = RCANVAS_CODEC_JPEG, .flags = RC_CODEC_INTRA | RC_CODEC_STRIPES,
    .create = jpeg_create, .encode = jpeg_encode, .request_keyframe = NULL, .destroy = jpeg_destroy};
