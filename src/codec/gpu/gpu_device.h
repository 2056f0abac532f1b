/* SPDX-License-Identifier: MIT */
/*
 * gpu_device.h — Vulkan devices for the GPU codecs: picking a device and its compute queue (shared with the
 * readback ring's own device, source/vk_readback.c), and one process-wide device for GPU codecs that are made
 * without the app's device (the codec table's "h264-gpu" for CPU frames).
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

/* The process-wide device: made at the first acquire (a Vulkan 1.1 instance without layers, rc_gpu_pick_device),
 * kept while anyone holds it, destroyed at the last release. Submissions to its queue from different threads hold
 * `queue_lock`. A failure to make it is remembered for RC_GPU_DEVICE_RETRY_S seconds (each try costs an instance).
 * RCANVAS_OK, RCANVAS_EVULKAN, RCANVAS_ENOMEM. Any thread. */
typedef struct rc_gpu_device {
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice dev;
    uint32_t family;
    VkQueue queue;
    pthread_mutex_t queue_lock;
} rc_gpu_device;
#define RC_GPU_DEVICE_RETRY_S 10
int rc_gpu_device_acquire(const rc_logger *log, rc_gpu_device **out);
void rc_gpu_device_release(rc_gpu_device *d);

#endif
