/* SPDX-License-Identifier: MIT */
/*
 * scale.c — see scale.h.
 */
#include "codec/scale.h"

#include <stdlib.h>

#if RCANVAS_HAVE_YUV
#include <libyuv/scale_argb.h>
#endif

int rc_image_downscale(const rc_image *src, int div, uint8_t **buf, size_t *cap, rc_image *out) {
    if ((div != 2 && div != 4) || rc_format_bpp(src->format) != 4) return RCANVAS_EINVAL;
    uint32_t w = src->width / div, h = src->height / div;
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    size_t need = (size_t)w * h * 4;
    if (*cap < need) {
        uint8_t *p = realloc(*buf, need);
        if (!p) return RCANVAS_ENOMEM;
        *buf = p;
        *cap = need;
    }
#if RCANVAS_HAVE_YUV
    /* byte order does not matter to a box filter: ARGB here means any 4-byte pixel */
    if (ARGBScale(src->pixels, (int)src->pitch, (int)src->width, (int)src->height, *buf, (int)w * 4, (int)w, (int)h,
                  kFilterBox))
        return RCANVAS_EINVAL;
#else
    uint32_t dx = src->width >= (uint32_t)div ? (uint32_t)div : 1, dy = src->height >= (uint32_t)div ? (uint32_t)div : 1;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            for (int ch = 0; ch < 4; ch++) {
                unsigned sum = 0;
                for (uint32_t j = 0; j < dy; j++)
                    for (uint32_t i = 0; i < dx; i++) sum += src->pixels[(size_t)(y * dy + j) * src->pitch + (size_t)(x * dx + i) * 4 + ch];
                (*buf)[((size_t)y * w + x) * 4 + ch] = (uint8_t)((sum + dx * dy / 2) / (dx * dy));
            }
#endif
    *out = (rc_image){.pixels = *buf, .width = w, .height = h, .pitch = (size_t)w * 4, .format = src->format};
    return RCANVAS_OK;
}

static uint32_t gcd_u32(uint32_t a, uint32_t b) {
    while (b) {
        uint32_t r = a % b;
        a = b, b = r;
    }
    return a;
}

int rc_image_fine_detail(const rc_image *img) {
    if (!img || img->width < 2 || img->height < 2) return 0;
    int ri = img->format == RCANVAS_FORMAT_BGRA8 ? 2 : 0, bi = 2 - ri;
    uint64_t looked = 0, lossy = 0, flat = 0;
    /* every other block row and every other block of it (alternating), or on a frame of more than RC_DETAIL_BLOCKS
     * such blocks fewer: rows and blocks a row thinned alike, each row's rows and blocks shifted by a multiple of
     * 4 within their strides, by steps prime to the strides so that consecutive rows take every phase, and text
     * lines or a grid at a regular pitch are not met at one phase only. The
     * fractions are the frame's all the same, at a fixed cost (read whole, a 1080p frame's look was most of a GPU
     * canvas's readback thread time on an H100 host: 0.38 ms a frame at 60 fps) */
    uint64_t all = (uint64_t)((img->height + 3) / 4) * (img->width / 4 + 1);
    uint32_t f = (uint32_t)((all + RC_DETAIL_BLOCKS - 1) / RC_DETAIL_BLOCKS), rs = 1;
    while (rs * rs < f) rs++;
    uint32_t cs = (f + rs - 1) / rs, mr = 3, mc = 5; /* phase steps prime to the strides: every phase comes */
    while (gcd_u32(mr, rs) != 1) mr++;
    while (gcd_u32(mc, cs) != 1) mc++;
    for (uint32_t k = 0;; k++) {
        uint32_t y = 4 * (k * rs + (k * mr) % rs);
        if (y + 1 >= img->height) {
            if (rs == 1 || 4 * k * rs + 1 >= img->height) break;
            y = 4 * k * rs; /* the last stride's shift past the frame: its first row instead */
        }
        const uint8_t *r0 = img->pixels + (size_t)y * img->pitch, *r1 = r0 + img->pitch;
        for (uint32_t x = ((y & 4) ? 2 : 0) + 4 * ((k * mc) % cs); x + 1 < img->width; x += 4 * cs) {
            const uint8_t *p[4] = {r0 + 4 * x, r0 + 4 * x + 4, r1 + 4 * x, r1 + 4 * x + 4};
            int l[4], sum = 0;
            for (int i = 0; i < 4; i++) {
                l[i] = 77 * p[i][ri] + 150 * p[i][1] + 29 * p[i][bi]; /* luma x256 */
                sum += l[i];
            }
            int dev = 0;
            for (int i = 0; i < 4; i++) {
                int d = abs(4 * l[i] - sum); /* x1024 */
                if (d > dev) dev = d;
            }
            looked++;
            if (dev > RC_DETAIL_EDGE * 1024) lossy++;
            else if (dev <= RC_DETAIL_FLAT * 1024) flat++;
        }
    }
    return looked && lossy * 1000 >= looked * RC_DETAIL_PER_MILLE && flat * 1000 >= looked * RC_DETAIL_FLAT_PER_MILLE;
}
