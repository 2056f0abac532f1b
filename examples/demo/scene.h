/* SPDX-License-Identifier: MIT */
/*
 * scene.h — the demo's scene: an interactive Mandelbrot/Julia explorer rendered on the CPU.
 *
 * The fractal is iterated only when the view changes (split over an internal pool of worker threads, refined
 * progressively when a recompute is expensive, and only the exposed strips after a pan); a frame whose view is
 * still costs one palette lookup per pixel, so palette cycling runs at full frame rate at 1920×1080.
 *
 * Not thread-safe: every call must come from one thread (the app's render thread). The worker pool is internal.
 */
#ifndef DEMO_SCENE_H
#define DEMO_SCENE_H

#include <stddef.h>
#include <stdint.h>

typedef struct scene scene;

/* Creates a scene; threads = worker threads for the fractal iteration (0 = number of cores). NULL on ENOMEM. */
scene *scene_new(int threads);
void scene_free(scene *s);

/* Renders the current view into an RGBA8 buffer of width×height pixels, row pitch `pitch` bytes (≥ width*4),
   alpha = 255. t_seconds is the animation time (palette cycling when animate is on). width/height may change
   between calls (resize): handle it. Returns 0, or -1 on ENOMEM (or a pitch smaller than width*4).
   An expensive recompute (deep zoom) is refined over several calls so each call stays near a frame's time;
   scene_changed() stays 1 until the image is exact. */
int scene_render(scene *s, uint8_t *rgba, uint32_t width, uint32_t height, size_t pitch, double t_seconds);

/* Input, all positions in *physical* pixels of the last render size (ignored before the first render): */
void scene_drag(scene *s, double dx_px, double dy_px);              /* pan by a pointer drag delta */
void scene_zoom(scene *s, double x_px, double y_px, double factor); /* zoom about a point; factor>1 zooms in */

/* Keys (KeyboardEvent.key names; letters case-insensitive):
     "p"  next palette                      "a"  toggle palette animation (on at start)
     "j"  toggle Julia/Mandelbrot; entering Julia uses c = the Mandelbrot view centre, leaving it restores the
          Mandelbrot view
     "c"  set the Julia c to the current view centre and show that Julia set (from either mode)
     "r"  reset the view (and the iteration factor) of the current mode
     "+"/"=" and "-"  iterations ×/÷ 1.5
     "ArrowLeft"/"ArrowRight"/"ArrowUp"/"ArrowDown" (or "Left"…)  pan by 10 % of the frame
   Unknown keys are ignored. */
void scene_key(scene *s, const char *key);

/* 1 if the next render would differ from the last (view/palette change, refinement pending, or animation on). */
int scene_changed(const scene *s);

/* One line for the page title, e.g. "Mandelbrot x=-0.600 y=0.000 zoom=1.00× iter=256" or
   "Julia c=(-0.75,0.1) x=… y=… zoom=…× iter=…" (UTF-8, truncated to cap on a character boundary). */
void scene_describe(const scene *s, char *buf, size_t cap);

#endif
