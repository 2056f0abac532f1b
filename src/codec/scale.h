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

/* What halving a size loses: a 2x box filter replaces each 2x2 block by its mean, so a block "loses detail" when
 * some pixel's luma (BT.601 weights, 0-255) lies more than RC_DETAIL_EDGE levels from its block's mean: a stroke
 * of text or a 1-px line on a plain background does (a black pixel beside white ones: 191 levels), sensor noise and
 * smooth shading do not. Measured on 1080p frames: a terminal scroll 17-18 % of the blocks, text 7.6-20 %, dense
 * line plots 4.5-12 %, a scatter plot 0.8 %, a noisy microscopy zoom 0-3.4 %, a render, a heatmap and a surface
 * under 0.4 %. */
#define RC_DETAIL_EDGE 48
/* ... and a frame is one whose size must stay (text, lines: halved they are unreadable) when at least this many
 * blocks per thousand lose detail */
#define RC_DETAIL_PER_MILLE 20
/* ... on a plain background: at least this many blocks per thousand flat (no pixel more than RC_DETAIL_FLAT levels
 * from the mean). Text and plots are 68-89 % flat; grainy imaging, which has sharp blocks too (a heatmap with
 * per-pixel grain 4.1 %, the zoom's first frame 3.4 %), is under 6 % flat, and its grain is what a smaller size
 * may lose. */
#define RC_DETAIL_FLAT 4
#define RC_DETAIL_FLAT_PER_MILLE 500
/* ... looked at in at most about this many 2x2 blocks a frame (the fractions above hold on a sample; the cost is
 * then the same at any size) */
#define RC_DETAIL_BLOCKS 8192
/* 1 if img (any 4-byte format) has such detail (both rules): looks at half the 2x2 blocks (a checkerboard) of every
 * other block row, or of fewer rows and fewer blocks a row spread over the frame where that is more than
 * RC_DETAIL_BLOCKS blocks (a 1080p frame: one in 16 of them, about 0.12 ms on the 2-core VM; a tier looks every
 * RC_DETAIL_EVERY frames). No hysteresis: one with a lower threshold for a tier that had detail kept the demo's
 * zooming fractal whole under a saturated decoder (adapt.test), so content near the line may change size every 8
 * frames. Thread-safe (reads img). */
int rc_image_fine_detail(const rc_image *img);

#endif
