/* SPDX-License-Identifier: MIT */
/*
 * scale.h — shrinking a frame by an integer factor before it is encoded (rate adaptation encodes at a lower
 * resolution on a slow link; the client stretches it back to the canvas).
 */
#ifndef RC_SCALE_H
#define RC_SCALE_H

#include "codec/codec.h"

/* Writes src shrunk by div (2 or 4; each output pixel the box average of div × div inputs, every channel alike)
 * into *buf (grown as needed; *cap its size in bytes) and describes it in *out: width = max(1, src->width / div),
 * likewise height, tightly packed, src's format. libyuv's ARGBScale (box filter) when built with libyuv, a plain
 * box filter otherwise. RCANVAS_OK, RCANVAS_EINVAL (div not 2 or 4, or not a 4-byte format), RCANVAS_ENOMEM.
 * One thread per buffer. */
int rc_image_downscale(const rc_image *src, int div, uint8_t **buf, size_t *cap, rc_image *out);

#endif
