/* SPDX-License-Identifier: MIT */
/*
 * yuv.c — RGBA/BGRA/RGBX → I420 through libyuv (see yuv.h). libyuv names formats by the order of a 32-bit little-
 * endian word: bytes R,G,B,A are its "ABGR", bytes B,G,R,A its "ARGB".
 */
#include "codec/yuv.h"

#include <libyuv.h>
#include <stdlib.h>

int rc_i420_from_image(rc_i420 *out, const rc_image *img) {
    uint32_t cw = (img->width + 1) / 2, ch = (img->height + 1) / 2;
    size_t need = (size_t)img->width * img->height + 2 * (size_t)cw * ch;
    if (need > out->cap) {
        uint8_t *m = realloc(out->mem, need);
        if (!m) return RCANVAS_ENOMEM;
        out->mem = m;
        out->cap = need;
    }
    out->width = img->width;
    out->height = img->height;
    out->stride_y = (int)img->width;
    out->stride_uv = (int)cw;
    out->y = out->mem;
    out->u = out->y + (size_t)img->width * img->height;
    out->v = out->u + (size_t)cw * ch;
    int r;
    switch (img->format) {
    case RCANVAS_FORMAT_RGBA8:
    case RCANVAS_FORMAT_RGBX8:
        r = ABGRToI420(img->pixels, (int)img->pitch, out->y, out->stride_y, out->u, out->stride_uv, out->v,
                       out->stride_uv, (int)img->width, (int)img->height);
        break;
    case RCANVAS_FORMAT_BGRA8:
        r = ARGBToI420(img->pixels, (int)img->pitch, out->y, out->stride_y, out->u, out->stride_uv, out->v,
                       out->stride_uv, (int)img->width, (int)img->height);
        break;
    default: return RCANVAS_EINVAL;
    }
    return r == 0 ? RCANVAS_OK : RCANVAS_EINVAL;
}

void rc_i420_free(rc_i420 *p) {
    free(p->mem);
    p->mem = NULL;
    p->cap = 0;
}
