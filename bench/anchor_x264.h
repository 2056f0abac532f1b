/* SPDX-License-Identifier: MIT */
/*
 * anchor_x264.h — x264 for bench-anchor only (x264 is GPL: this file and anchor_x264.c are built into that benchmark
 * when pkg-config finds libx264, never into the library). One encoder: RGBA in (converted by rc_i420_from_image, as
 * our encoders do), one Annex B access unit out per frame.
 */
#ifndef RC_BENCH_ANCHOR_X264_H
#define RC_BENCH_ANCHOR_X264_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

typedef struct anchor_x264 anchor_x264;

/* preset: x264's ("superfast", "veryfast", …), tuned zerolatency; profile "baseline" or "high". NULL on error. */
anchor_x264 *anchor_x264_open(const char *preset, const char *profile, int w, int h, int fps, int kbps, int threads);
/* Appends frame's packet to out. 0 or -1. */
int anchor_x264_encode(anchor_x264 *s, const uint8_t *rgba, int w, int h, size_t pitch, rc_buf *out);
void anchor_x264_close(anchor_x264 *s);
/* "libx264 build N". */
const char *anchor_x264_version(void);

#endif
