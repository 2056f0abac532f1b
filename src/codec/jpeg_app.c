/* SPDX-License-Identifier: MIT */
/*
 * jpeg_app.c — JPEG made outside rcanvas (rcanvas_present_encoded): the encoder names an app may give ("jpeg-wgpu",
 * "jpeg-app"; codec types that rcanvas never runs) and the check that the bytes are a baseline JPEG of the frame's
 * size before they are sent as they are. No library: the fuzz target (tests/fuzz/fuzz_jpeg.c) builds it alone.
 */
#include "codec/codec.h"

/* The encoders an app may name, each a JPEG made outside rcanvas (no create: rcanvas never runs them). */
const rc_codec_type rc_codec_jpeg_wgpu = {.name = "jpeg-wgpu", .wire_id = RCANVAS_CODEC_JPEG,
                                          .flags = RC_CODEC_INTRA | RC_CODEC_GPU};
const rc_codec_type rc_codec_jpeg_app = {.name = "jpeg-app", .wire_id = RCANVAS_CODEC_JPEG, .flags = RC_CODEC_INTRA};

/* 1 if d[0..n) is a baseline JFIF-style JPEG of w × h: SOI first, EOI last, and a SOF0 (baseline DCT, 8-bit,
 * 1 or 3 components) of that size before the first SOS, walking the marker segments (T.81 B.1.1.4, B.2.2). The
 * entropy-coded data is not checked: a browser that cannot decode it shows the frame before. */
int rc_jpeg_check_baseline(const uint8_t *d, size_t n, uint32_t w, uint32_t h) {
    if (n < 4 || d[0] != 0xFF || d[1] != 0xD8 || d[n - 2] != 0xFF || d[n - 1] != 0xD9) return 0;
    size_t i = 2;
    int sof = 0;
    while (i + 4 <= n) {
        if (d[i] != 0xFF) return 0;
        uint8_t m = d[i + 1];
        if (m == 0xFF) { /* fill byte (B.1.1.2) */
            i++;
            continue;
        }
        size_t len = ((size_t)d[i + 2] << 8) | d[i + 3];
        if (len < 2 || i + 2 + len > n) return 0;
        const uint8_t *p = d + i + 4;
        if (m == 0xC0) {
            if (len < 8 || p[0] != 8) return 0;
            uint32_t fh = ((uint32_t)p[1] << 8) | p[2], fw = ((uint32_t)p[3] << 8) | p[4];
            if (fw != w || fh != h || (p[5] != 1 && p[5] != 3) || len != 8 + 3u * p[5]) return 0;
            sof = 1;
        } else if ((m >= 0xC1 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) || m == 0xD8 || m == 0xD9) {
            return 0; /* another frame type (progressive, lossless, arithmetic), or a misplaced SOI/EOI */
        } else if (m == 0xDA) {
            return sof;
        }
        i += 2 + len;
    }
    return 0;
}
