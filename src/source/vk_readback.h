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

typedef struct rc_vk_stats {
    uint64_t submitted, delivered, failed, busy; /* frames; busy = presents refused with RCANVAS_EBUSY */
    uint64_t gpu_encoded;      /* frames whose JPEG was made by the GPU encoder */
    double copy_ms;            /* last frame: GPU time of the copy (timestamp queries), ms */
    double fence_wait_ms;      /* last frame: time the readback thread waited on its fence, ms */
    double submit_to_ready_ms; /* last frame: vkQueueSubmit → fence signalled (as the CPU saw it), ms */
    double handoff_ms;         /* last frame: time to hand the mapped buffer to the canvas/sink, ms */
} rc_vk_stats;

typedef struct rc_vk_sink {
    /* Called on the readback thread with the mapped staging buffer; release(arg) must be called exactly once
     * when done with the pixels (any thread). */
    void (*deliver)(void *user, const rc_image *img, void (*release)(void *), void *arg);
    void *user;
} rc_vk_sink;

/* rcanvas_vk_new without a canvas (canvas may be NULL when a sink is set before the first present). */
int rc_vk_new_internal(rcanvas_canvas *canvas, const rcanvas_vk_config *cfg, const rc_logger *log, rcanvas_vk **out);
void rc_vk_set_sink(rcanvas_vk *vk, rc_vk_sink sink);
void rc_vk_get_stats(rcanvas_vk *vk, rc_vk_stats *out);
void rc_vk_release_slot(void *arg);

#endif
