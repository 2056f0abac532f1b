/* SPDX-License-Identifier: MIT */
/*
 * vk_readback.h — private: the parts of the Vulkan readback ring that benchmarks and tests use beyond the public
 * API: per-stage statistics, and a sink that replaces the canvas (to time the readback with or without encoding).
 */
#ifndef RC_VK_READBACK_H
#define RC_VK_READBACK_H

#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

#include "core/util.h"
#include "codec/codec.h"
#include "source/vk_damage.h"

typedef struct rc_vk_stats {
    uint64_t submitted, delivered, failed, busy; /* frames; busy = presents refused with RCANVAS_EBUSY */
    uint64_t gpu_encoded;      /* frames whose JPEG was made by the GPU encoder */
    uint64_t gpu_read_image;   /* of those, frames whose image the encoder's DCT pass read (no input copy) */
    uint64_t gpu_jpeg_unused_damage; /* GPU JPEGs left unused: few tiles changed, the canvas sent those instead */
    double copy_ms;            /* last frame: GPU time of the copy (timestamp queries), ms */
    double fence_wait_ms;      /* last frame: time the readback thread waited on its fence, ms */
    double submit_to_ready_ms; /* last frame: vkQueueSubmit → fence signalled (as the CPU saw it), ms */
    double handoff_ms;         /* last frame: time to hand the mapped buffer to the canvas/sink, ms */
    /* damage on the GPU (vk_damage.h); without it every frame counts whole */
    uint64_t readback_bytes;   /* last frame: bytes the GPU wrote into host memory (pixels + tile flags) */
    uint64_t readback_bytes_total; /* all delivered frames */
    uint32_t tiles, dirty_tiles, copied_tiles; /* last frame: tiles in all, changed vs the previous, read back */
    uint64_t damage_frames;    /* frames delivered with a dirty map */
    uint64_t whole_frames;     /* frames read back whole (damage off, first frame, most of it changed, ...) */
} rc_vk_stats;

typedef struct rc_vk_sink {
    /* Called on the readback thread with the mapped staging buffer; release(arg) must be called exactly once
     * when done with the pixels (any thread). damage: what the GPU found (damage->dirty NULL when unknown); valid
     * until release. */
    void (*deliver)(void *user, const rc_image *img, const rc_vk_damage_info *damage, void (*release)(void *),
                    void *arg);
    void *user;
} rc_vk_sink;

/* rcanvas_vk_new without a canvas (canvas may be NULL when a sink is set before the first present). */
int rc_vk_new_internal(rcanvas_canvas *canvas, const rcanvas_vk_config *cfg, const rc_logger *log, rcanvas_vk **out);
void rc_vk_set_sink(rcanvas_vk *vk, rc_vk_sink sink);
void rc_vk_get_stats(rcanvas_vk *vk, rc_vk_stats *out);
void rc_vk_release_slot(void *arg);
/* rc_vk_damage_tune for this ring's damage (no-op when damage is off). Before the first present. */
void rc_vk_damage_tuning(rcanvas_vk *vk, double full_ratio, uint64_t max_buffer_bytes);
/* 1 when damage on the GPU is on for this ring. */
int rc_vk_damage_enabled(const rcanvas_vk *vk);

#endif
