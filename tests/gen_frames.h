/* SPDX-License-Identifier: MIT */
/*
 * gen_frames.h — a deterministic moving scene for the video tests and benchmarks, so they need no corpus: a plot-like
 * picture (grid, four noisy curves, lines of text-like glyphs, a colour bar) that pans by (3, 1) pixels per frame
 * and may be zoomed, over a background gradient that moves on its own, plus a fixed flat patch of RGB (200, 40, 90)
 * at (GEN_PATCH_X, GEN_PATCH_Y), GEN_PATCH_SIZE pixels square, to check colour round trips.
 */
#ifndef RC_GEN_FRAMES_H
#define RC_GEN_FRAMES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define GEN_PATCH_X 32
#define GEN_PATCH_Y 32
#define GEN_PATCH_SIZE 64
static const uint8_t gen_patch_rgb[3] = {200, 40, 90};

static inline uint32_t gen_hash(uint32_t a, uint32_t b) {
    uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    return h ^ (h >> 15);
}

/* Per-column and per-row values of one frame, computed once (the sines) so a pixel costs hashes and compares. */
typedef struct gen_col {
    int32_t u;
    float curve_y[4]; /* curve k's height at u, modulo 720 */
    uint8_t bg0;      /* background red */
} gen_col;

/* The picture at content coordinates (u, v), into px[0..2]; returns 0 where it is background. */
static inline int gen_content(const gen_col *c, int32_t v, const uint8_t *bar_rgb, uint8_t *px) {
    static const uint8_t curve_rgb[4][3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}};
    uint32_t uu = (uint32_t)c->u, vv = (uint32_t)v;
    /* Text-like lines: bands of 14-pixel glyph rows, 8-pixel cells, 5×7 random glyphs, some cells blank. */
    uint32_t band = (vv / 14u) % 9u;
    if (band == 1 || band == 2) {
        uint32_t cell = uu / 8u, row = vv / 14u, gx = uu % 8u, gy = vv % 14u;
        if ((gen_hash(cell, row) & 7u) && gx >= 1 && gx <= 5 && gy >= 3 && gy <= 11) {
            uint32_t glyph = gen_hash(cell * 7u + 3u, row) % 96u;
            if (gen_hash(glyph, (gy - 3u) / 2u * 5u + (gx - 1u)) & 1u) {
                px[0] = px[1] = px[2] = 20;
                return 1;
            }
        }
        return 0;
    }
    /* Four noisy curves, 3 pixels thick, repeating every 720 rows. */
    float vm = (float)(vv % 720u);
    for (int k = 0; k < 4; k++)
        if (fabsf(vm - c->curve_y[k]) < 1.5f) {
            px[0] = curve_rgb[k][0], px[1] = curve_rgb[k][1], px[2] = curve_rgb[k][2];
            return 1;
        }
    /* A colour bar every 512 pixels (a smooth ramp, like a heat map's legend). */
    if (uu % 512u < 24u) {
        px[0] = bar_rgb[0], px[1] = bar_rgb[1], px[2] = bar_rgb[2];
        return 1;
    }
    /* The grid. */
    if (uu % 64u == 0 || vv % 64u == 0) {
        px[0] = px[1] = px[2] = 190;
        return 1;
    }
    return 0;
}

/* Frame t of the scene at w × h into RGBA rows of `pitch` bytes; zoom > 0 scales the content (1 = none). Returns 0,
 * or -1 if out of memory. */
static inline int gen_frame(uint8_t *rgba, uint32_t w, uint32_t h, size_t pitch, int t, double zoom) {
    gen_col *cols = malloc(sizeof(gen_col) * w);
    if (!cols) return -1;
    int32_t pan_x = 3 * t, pan_y = t;
    for (uint32_t x = 0; x < w; x++) {
        gen_col *c = &cols[x];
        c->u = (int32_t)floor((double)x / zoom) + pan_x;
        for (int k = 0; k < 4; k++)
            c->curve_y[k] = (float)(180.0 * k + 140.0 + 60.0 * sin(c->u * (0.011 + 0.004 * k) + k) +
                                    (double)(gen_hash((uint32_t)c->u, (uint32_t)k) % 9u) - 4.0);
        /* The background gradient drifts independently of the pan. */
        c->bg0 = (uint8_t)(215 + 30 * sin(6.2831853 * ((double)x / w + t / 60.0)));
    }
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *row = rgba + (size_t)y * pitch;
        int32_t v = (int32_t)floor((double)y / zoom) + pan_y;
        double hue = ((uint32_t)v % 256u) / 256.0 * 6.2831853;
        uint8_t bar[3] = {(uint8_t)(128 + 100 * sin(hue)), (uint8_t)(128 + 100 * sin(hue + 2.09)),
                          (uint8_t)(128 + 100 * sin(hue + 4.19))};
        uint8_t bg1 = (uint8_t)(220 + 25 * cos(6.2831853 * ((double)y / h + t / 90.0)));
        int in_patch_rows = y >= GEN_PATCH_Y && y < GEN_PATCH_Y + GEN_PATCH_SIZE;
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = row + (size_t)x * 4;
            p[3] = 255;
            if (in_patch_rows && x >= GEN_PATCH_X && x < GEN_PATCH_X + GEN_PATCH_SIZE) {
                p[0] = gen_patch_rgb[0], p[1] = gen_patch_rgb[1], p[2] = gen_patch_rgb[2];
            } else if (!gen_content(&cols[x], v, bar, p)) {
                p[0] = cols[x].bg0, p[1] = bg1, p[2] = 240;
            }
        }
    }
    free(cols);
    return 0;
}

/* ---- checks of a decoded picture, shared by the video codecs' tests and bench-video ---- */

/* PSNR (dB) of a w × h plane a (stride sa bytes) against b (stride sb); 99 when they are equal. */
static inline double gen_psnr_plane(const uint8_t *a, ptrdiff_t sa, const uint8_t *b, ptrdiff_t sb, int w, int h) {
    double se = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int e = (int)a[(size_t)y * (size_t)sa + x] - (int)b[(size_t)y * (size_t)sb + x];
            se += e * e;
        }
    double mse = se / ((double)w * h);
    return mse == 0 ? 99.0 : 10.0 * log10(255.0 * 255.0 / mse);
}

/* BT.601 limited range (what rc_i420_from_image produces, and what the encoders signal) back to RGB, as a browser
 * does: R = 1.164 (Y−16) + 1.596 (V−128), G = 1.164 (Y−16) − 0.392 (U−128) − 0.813 (V−128),
 * B = 1.164 (Y−16) + 2.017 (U−128), rounded and clamped to 0–255. */
static inline void gen_yuv601_to_rgb(int y, int u, int v, int rgb[3]) {
    double c = 1.164 * (y - 16), d = u - 128, e = v - 128;
    double t[3] = {c + 1.596 * e, c - 0.392 * d - 0.813 * e, c + 2.017 * d};
    for (int i = 0; i < 3; i++) rgb[i] = t[i] < 0 ? 0 : t[i] > 255 ? 255 : (int)lround(t[i]);
}

/* The flat patch's colour in a decoded I420 picture (planes Y, U, V with strides sy, suv), 8 pixels in from its
 * edges (the loop filters, transforms across the edge and the edge's 4:2:0 chroma stay out): *mean_err = the
 * largest per-channel distance of the mean colour from gen_patch_rgb (a colour shift: wrong matrix or range moves
 * it by 10–18 levels), *pixel_err = that of any single pixel (adds the codec's quantization of the flat block). */
static inline void gen_patch_error(const uint8_t *Y, const uint8_t *U, const uint8_t *V, ptrdiff_t sy, ptrdiff_t suv,
                                   double *mean_err, int *pixel_err) {
    double sum[3] = {0};
    int n = 0, worst = 0;
    for (int y = GEN_PATCH_Y + 8; y < GEN_PATCH_Y + GEN_PATCH_SIZE - 8; y++)
        for (int x = GEN_PATCH_X + 8; x < GEN_PATCH_X + GEN_PATCH_SIZE - 8; x++, n++) {
            int rgb[3];
            gen_yuv601_to_rgb(Y[y * sy + x], U[(y / 2) * suv + x / 2], V[(y / 2) * suv + x / 2], rgb);
            for (int i = 0; i < 3; i++) {
                sum[i] += rgb[i];
                int e = abs(rgb[i] - gen_patch_rgb[i]);
                if (e > worst) worst = e;
            }
        }
    *mean_err = 0;
    for (int i = 0; i < 3; i++) *mean_err = fmax(*mean_err, fabs(sum[i] / n - gen_patch_rgb[i]));
    *pixel_err = worst;
}

#endif
