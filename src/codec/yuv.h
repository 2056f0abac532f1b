/* SPDX-License-Identifier: MIT */
/*
 * yuv.h — RGBA/BGRA/RGBX frames to I420 for the video encoders, through libyuv (SIMD; not hand-written).
 * The conversion is BT.601 with limited ("studio", 16–235) range, libyuv's ARGBToI420 family; encoders must
 * signal exactly that to the decoder (H.264 VUI / VP9 colour space: BT.601 = SMPTE 170M, limited range) so the
 * browser converts back with the same matrix and no colour shift against the lossless refinement.
 */
#ifndef RC_YUV_H
#define RC_YUV_H

#include "codec/codec.h"

typedef struct rc_i420 {
    uint8_t *y, *u, *v;      /* planes */
    int stride_y, stride_uv; /* bytes per row */
    uint32_t width, height;  /* pixels; chroma is (width+1)/2 × (height+1)/2 */
    uint8_t *mem;            /* one allocation for all planes */
    size_t cap;
} rc_i420;

/* Converts img into out, (re)allocating its planes when the size grows. RCANVAS_OK, RCANVAS_EINVAL (format),
 * RCANVAS_ENOMEM. One thread at a time per rc_i420. */
int rc_i420_from_image(rc_i420 *out, const rc_image *img);
void rc_i420_free(rc_i420 *p);

#endif
