/* SPDX-License-Identifier: MIT */
/*
 * gpu_device.h — Vulkan plumbing of the GPU codecs: picking a device and its compute queue (shared with the
 * readback ring's own device, source/vk_readback.c); buffers with their memory and compute pipelines (jpeg_gpu.c,
 * h264_gpu.c); and one process-wide device for GPU codecs that are made without the app's device (the codec
 * table's "h264-gpu" for CPU frames).
 */
#ifndef RC_GPU_DEVICE_H
#define RC_GPU_DEVICE_H

#include <pthread.h>
#include <vulkan/vulkan.h>

#include "core/util.h"

/* The first discrete GPU of the instance, else its first device; and a queue family with compute.
 * RCANVAS_OK or RCANVAS_EVULKAN (no device, no compute queue; logged). */
int rc_gpu_pick_device(VkInstance inst, const rc_logger *log, VkPhysicalDevice *phys, uint32_t *family);
/* A device with one queue of that family. VkResult of vkCreateDevice. */
VkResult rc_gpu_create_device(VkPhysicalDevice phys, uint32_t family, VkDevice *dev, VkQueue *queue);
/* A device with as many queues of that family as it has, up to max and RC_GPU_DEVICE_QUEUES (at least 1): *n of
 * them in queues[] (room for that many). VkResult. */
VkResult rc_gpu_create_device_queues(VkPhysicalDevice phys, uint32_t family, uint32_t max, VkDevice *dev,
                                     VkQueue *queues, uint32_t *n);

/* An rc_image's pixels also in a buffer on a device (codec.h): rows at offset + y × the image's pitch, in its
 * format. The buffer was made with VK_BUFFER_USAGE_TRANSFER_SRC_BIT, and the commands that wrote it completed (their
 * fence waited for) before the image was handed on. Valid as long as the image's pixels. */
typedef struct rc_gpu_frame {
    VkDevice dev;
    VkBuffer buf;
    VkDeviceSize offset;
} rc_gpu_frame;

/* A buffer with its own memory: `map` is its mapping when host-visible, NULL otherwise; cap its size in bytes. */
typedef struct rc_gpu_buf {
    VkBuffer b;
    VkDeviceMemory m;
    VkDeviceSize cap;
    void *map;
} rc_gpu_buf;
/* A memory type of `bits` with all of `want`, one with `prefer` too where there is one; -1 if none. */
int rc_gpu_find_memory(VkPhysicalDevice phys, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer);
/* Makes *b (freed first) a buffer of `size` bytes and `usage`: host 1 → host-visible, coherent and mapped (host-cached
 * preferred when `cached`: the CPU reads it), host 0 → device-local preferred. VkResult (VK_ERROR_FEATURE_NOT_PRESENT:
 * no memory type fits); on failure *b is empty. */
VkResult rc_gpu_buf_make(VkPhysicalDevice phys, VkDevice dev, rc_gpu_buf *b, VkDeviceSize size, VkBufferUsageFlags usage,
                         int host, int cached);
/* Frees *b (unmaps first) and empties it. An empty one: nothing. */
void rc_gpu_buf_free(VkDevice dev, rc_gpu_buf *b);
/* A compute pipeline of SPIR-V `code` (size bytes), entry point main, with `layout`. VkResult. */
VkResult rc_gpu_make_pipeline(VkDevice dev, VkPipelineLayout layout, const uint32_t *code, size_t size, VkPipeline *out);

/* The encoders' one barrier between passes: every earlier compute and transfer write made available to the later
 * commands of dst_stage, for dst_access (a global memory barrier: the passes share whole buffers). */
void rc_gpu_barrier(VkCommandBuffer cb, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);
/* One pass: binds `pipe`, pushes `bytes` of push constants at offset 0 (layout's compute range), dispatches
 * gx × gy × 1 workgroups. */
void rc_gpu_dispatch(VkCommandBuffer cb, VkPipelineLayout layout, VkPipeline pipe, const void *pc, uint32_t bytes,
                     uint32_t gx, uint32_t gy);

/* The process-wide device: made at the first acquire (a Vulkan 1.1 instance without layers, rc_gpu_pick_device;
 * not a CPU device such as lavapipe unless RCANVAS_GPU_CODEC_DEVICE=any), with one queue of its compute family for
 * the codecs, or RCANVAS_GPU_QUEUES=N (up to RC_GPU_DEVICE_QUEUES − RC_GPU_DEVICE_RING_QUEUES and what the family
 * has), and up to RC_GPU_DEVICE_RING_QUEUES more for readback rings; kept while anyone holds it, destroyed at the
 * last release. Each user takes a queue (rc_gpu_device_take_queue, round robin); submissions to one queue
 * from different threads hold its lock. One queue by default, measured: spreading 8 or 16 canvases' h264-gpu
 * encoders over 8 queues of an H100 gave 48.8 and 25.5 pictures/s each against 58.6 and 30.0 on one queue
 * (bench-h264-gpu --density; the GPU, not the queue's barriers, is what they share). A failure to make it is remembered for
 * RC_GPU_DEVICE_RETRY_S seconds (each try costs an instance). RCANVAS_OK, RCANVAS_EVULKAN, RCANVAS_ENOMEM. Any
 * thread. */
#define RC_GPU_DEVICE_QUEUES 8
/* Queues made beyond the codecs' where the family has them: each is given whole to one readback ring (and the app
 * that renders on it), so that a GPU canvas's frames stay on the device its encoders run on. */
#define RC_GPU_DEVICE_RING_QUEUES 4
typedef struct rc_gpu_device {
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice dev;
    uint32_t family;
    uint32_t nqueues;          /* queues made (1..RC_GPU_DEVICE_QUEUES) */
    uint32_t ncodec;           /* of them the codecs' (queues [0, ncodec)); the rest are for rings */
    VkQueue queues[RC_GPU_DEVICE_QUEUES];
    pthread_mutex_t queue_locks[RC_GPU_DEVICE_QUEUES];
    uint32_t next_queue;       /* the queue the next user takes (round robin; under the module's lock) */
    uint32_t ring_queues;      /* bit q: queue q is a ring's (under the module's lock) */
} rc_gpu_device;
#define RC_GPU_DEVICE_RETRY_S 10
int rc_gpu_device_acquire(const rc_logger *log, rc_gpu_device **out);
/* Why the last making of the device failed ("" if it did not), in a buffer of the calling thread's, for the log of a
 * caller that had no logger to give (the codec table's GPU encoders). Any thread. */
const char *rc_gpu_device_failure(void);
/* rc_gpu_device_acquire, and one of the device's ring queues (index into queues[]) for the caller alone: no codec
 * submits to it, so its user keeps Vulkan's external synchronization itself (no lock), as an app does with its
 * own queue. RCANVAS_EBUSY (the device released again) where none is free: the family has no queue beyond the
 * codecs' (Mesa's lavapipe has one), or every one is taken. Errors as rc_gpu_device_acquire. Any thread. */
int rc_gpu_device_acquire_ring_queue(const rc_logger *log, rc_gpu_device **out, uint32_t *queue);
/* Gives the queue back and releases the device. d NULL: nothing. */
void rc_gpu_device_release_ring_queue(rc_gpu_device *d, uint32_t queue);
/* The index of the queue a new user of d should submit to (with queue_locks[i]): one of the codecs'. Any thread. */
uint32_t rc_gpu_device_take_queue(rc_gpu_device *d);
void rc_gpu_device_release(rc_gpu_device *d);

#endif
