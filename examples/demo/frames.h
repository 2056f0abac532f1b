/* SPDX-License-Identifier: MIT */
/*
 * frames.h — a set of PNG frames loaded into memory (every *.png of a directory, sorted by name, decoded to
 * RGBA8 with libspng), for the demo's "play back recorded frames" source.
 */
#ifndef DEMO_FRAMES_H
#define DEMO_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_SET_MAX_FILES 64   /* the first 64 names (sorted) are loaded, the rest ignored */
#define FRAME_SET_MAX_DIM 8192   /* larger images are an error */

typedef struct frame_set frame_set;

/* Loads the PNGs of dir. Returns 0 and *out, or -1 with a message written to err (cap bytes) that does not repeat
   dir (the caller names it): "x.png: not a PNG file", "no .png files". A directory without any .png file is an
   error. */
int frame_set_load(const char *dir, frame_set **out, char *err, size_t errcap);
size_t frame_set_count(const frame_set *fs);
/* Frame i: RGBA8, tightly packed (pitch = width*4). NULL (and 0×0) if i is out of range. */
const uint8_t *frame_set_pixels(const frame_set *fs, size_t i, uint32_t *width, uint32_t *height);
/* File name of frame i (without the directory), or NULL if i is out of range. */
const char *frame_set_name(const frame_set *fs, size_t i);
void frame_set_free(frame_set *fs);

/* The click marker of the frame players (rcanvas-demo --frames, bench/x11_player.c): a solid magenta square that
 * a left click toggles on every frame shown after it, so that a benchmark sees in the page when the click has come
 * back as pixels (input-to-pixels latency; tests/browser/bench_vnc.mjs looks for exactly this square). */
#define FRAME_MARKER_X 64      /* left edge, pixels */
#define FRAME_MARKER_Y 64      /* top edge, pixels */
#define FRAME_MARKER_SIZE 256  /* side, pixels (clipped to the frame) */
#define FRAME_MARKER_RGB 0xFF00FFu

/* Draws the marker into an RGBA8 picture of width x height pixels, pitch bytes per row. */
void frame_marker_draw(uint8_t *rgba, uint32_t width, uint32_t height, size_t pitch);

#endif
