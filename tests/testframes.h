/* SPDX-License-Identifier: MIT */
/*
 * testframes.h — deterministic test frames, so that a clone without ../shared/frames can run all its tests.
 * Five kinds of content drawn with integer arithmetic and an own hash (no rand(), no libm): the same bytes on
 * every run and machine. tests/frames/test_testframes.c pins each frame's checksum.
 *   plot      white background, grid, axes with ticks and labels, four anti-aliased noisy signals (like lines-*)
 *   text      dense small glyph-like strokes on white, some words in colour (like text-*)
 *   gradient  smooth colour field (like surface-*): small JPEG payloads
 *   heatmap   colour-mapped field with strong per-pixel noise (like heatmap-*): high entropy
 *   noise     independent random RGB per pixel: the worst case for every codec (largest Huffman codes)
 * Then the frame sets the tests iterate over: generated frames always, the shared corpus in addition when it is
 * there, with a printed line either way.
 */
#ifndef RC_TESTFRAMES_H
#define RC_TESTFRAMES_H

#include <stddef.h>
#include <stdint.h>

typedef enum tf_kind { TF_PLOT, TF_TEXT, TF_GRADIENT, TF_HEATMAP, TF_NOISE, TF_KINDS, TF_CORPUS = -1 } tf_kind;

/* "plot", "text", "gradient", "heatmap", "noise" ("corpus" for TF_CORPUS). */
const char *tf_kind_name(tf_kind k);
/* Kind by name; -1 if unknown. */
int tf_kind_parse(const char *name, tf_kind *k);

/* Draws kind at w × h into RGBA8 pixels with the given row pitch (≥ w × 4); alpha is 255. w, h ≥ 1. */
void tf_draw(tf_kind kind, uint32_t w, uint32_t h, uint8_t *rgba, size_t pitch);
/* The same into a new malloc'd buffer, pitch w × 4; NULL if out of memory. */
uint8_t *tf_new(tf_kind kind, uint32_t w, uint32_t h);

/* Frame sizes of the generated sets: odd ones, then the usual 1920×1080, then 3840×2160. */
extern const uint32_t tf_sizes[][2];
extern const size_t tf_nsizes;

/* One frame handed to a tf_visit callback: a generated one (kind ≥ 0) or one of the corpus (kind TF_CORPUS). */
typedef struct tf_frame {
    char name[128]; /* "plot-333x197", or the corpus file name */
    tf_kind kind;
    const uint8_t *px; /* RGBA8, pitch w × 4 */
    uint32_t w, h;
} tf_frame;
typedef void (*tf_visit)(const tf_frame *f, void *user);

/* Calls fn on every kind at every tf_sizes size of at most max_pixels pixels (0: no limit), and prints one line
 * naming the sizes left out by the limit. Returns the number of frames visited. */
int tf_each_generated(uint64_t max_pixels, tf_visit fn, void *user);

/* The shared corpus: directory from RCANVAS_FRAMES_DIR (CMake sets it; default ../shared/frames). Calls fn on
 * each of its PNG files (sorted by name) of at most max_pixels pixels (0: no limit), and prints a line saying
 * what was used: "<what>: corpus DIR: N frames" or "<what>: no corpus at DIR: generated frames only", and the
 * files left out by the limit. Returns the number of frames visited, or -1 if the directory does not exist
 * (not an error). A file that exists but does not load is reported through *load_errors. */
int tf_each_corpus(const char *what, uint64_t max_pixels, tf_visit fn, void *user, int *load_errors);

/* A smooth synthetic frame, as a rendered scene: a soft gradient with a disc, a box and a thin line with soft
 * edges (the GPU JPEG's size test and benchmark: small payloads, where any per-interval overhead shows). RGBA8,
 * pitch w × 4, malloc'd; NULL if out of memory. Drawn with libm (exp, hypot): not pinned by a checksum. */
uint8_t *tf_smooth_new(uint32_t w, uint32_t h);

/* Motion sequences, for video through shaped links and the benchmarks: frame i of a loop of n frames.
 *   pan   a dense plot of 32 coloured signals in stacked panels with a grid, the camera moving 40 px right and
 *         20 px down a frame and zooming ±20 % over the loop (frame n is frame 0 again). Drawn with libm: not
 *         pinned by a checksum.
 *   rotate  a 3D scatter plot (2400 shaded points in three clusters and a helix, in a wireframe box) turning 360°
 *         about the vertical axis over the loop, in perspective: motion that differs by depth, as when a 3D view
 *         is orbited. Drawn with libm: not pinned by a checksum.
 *   zoom  noise-like imaging data (the heatmap kind: blobs under per-pixel grain) zoomed 1× → 2× → 1× over the
 *         loop about a point off the centre, with ±6 levels of sensor noise new in each frame: nearly every pixel
 *         changes every frame, as in live microscopy. Drawn with libm: not pinned by a checksum.
 *   scroll  a terminal's text (light on near-black, some words coloured) scrolling up 3 lines (36 px) a frame:
 *         frame i + 1 is frame i moved up by 36 px, the new lines at the bottom.
 * rcanvas-testframes OUTDIR --motion pan-1920x1080 64 writes such a loop as PNG files (the demo's --frames). */
typedef enum tf_motion { TF_MOTION_PAN, TF_MOTION_ROTATE, TF_MOTION_ZOOM, TF_MOTION_SCROLL, TF_MOTIONS } tf_motion;
const char *tf_motion_name(tf_motion m);
/* Motion by name; -1 if unknown. */
int tf_motion_parse(const char *name, tf_motion *m);
/* Draws frame i (taken modulo n) of the n-frame loop m at w × h into RGBA8 pixels, pitch ≥ w × 4; alpha 255.
 * Nothing is drawn for w, h or n of 0, a NULL buffer or a short pitch. */
void tf_motion_draw(tf_motion m, uint32_t i, uint32_t n, uint32_t w, uint32_t h, uint8_t *rgba, size_t pitch);

#endif
