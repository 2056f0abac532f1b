/* SPDX-License-Identifier: MIT */
/*
 * gpu_scene.h — the demo's Vulkan compute-shader scene (see gpu_scene.c).
 * One thread (the render thread); positions in physical pixels of the last render size.
 * In a build without Vulkan (RCANVAS_VULKAN=OFF) there is no GPU scene: gpu_scene.c is left out, main.c never
 * creates one, and the inline stubs below only keep its calls on a NULL gpu_scene compiling.
 */
#ifndef DEMO_GPU_SCENE_H
#define DEMO_GPU_SCENE_H

#include "rcanvas.h"
#if RCANVAS_HAVE_VULKAN
#include "rcanvas_vk.h"
#endif

typedef struct gpu_scene gpu_scene;

#if RCANVAS_HAVE_VULKAN

/* Builds the pipeline on the rcanvas_vk's device. NULL on failure (logged to stderr). */
gpu_scene *gpu_scene_new(rcanvas_vk *vk);
void gpu_scene_free(gpu_scene *g);
/* Renders w×h pixels at time t (s) and presents the image through rcanvas_present_vk(); returns its result. */
int gpu_scene_render_present(gpu_scene *g, uint32_t w, uint32_t h, double t);
void gpu_scene_drag(gpu_scene *g, double dx_px, double dy_px);
void gpu_scene_zoom(gpu_scene *g, double x_px, double y_px, double factor);
void gpu_scene_key(gpu_scene *g, const char *key); /* p palette, a animation, j Julia, r reset, +/- iterations */
int gpu_scene_changed(const gpu_scene *g);
void gpu_scene_describe(const gpu_scene *g, char *buf, size_t cap);
#else
static inline void gpu_scene_free(gpu_scene *g) { (void)g; }
static inline int gpu_scene_render_present(gpu_scene *g, uint32_t w, uint32_t h, double t) { return RCANVAS_EINVAL; }
static inline void gpu_scene_drag(gpu_scene *g, double dx_px, double dy_px) {}
static inline void gpu_scene_zoom(gpu_scene *g, double x_px, double y_px, double factor) {}
static inline void gpu_scene_key(gpu_scene *g, const char *key) {}
static inline int gpu_scene_changed(const gpu_scene *g) { return 0; }
static inline void gpu_scene_describe(const gpu_scene *g, char *buf, size_t cap) {
    if (cap) buf[0] = '\0';
}
#endif

#endif
