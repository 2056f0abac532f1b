/* SPDX-License-Identifier: MIT */
/*
 * gpu_device.c — see gpu_device.h.
 */
#include "codec/gpu/gpu_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rc_gpu_pick_device(VkInstance inst, const rc_logger *log, VkPhysicalDevice *phys, uint32_t *family) {
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(inst, &n, NULL);
    if (n == 0) {
        rc_log(log, RCANVAS_LOG_ERROR, "vulkan: no physical device");
        return RCANVAS_EVULKAN;
    }
    VkPhysicalDevice devs[16];
    if (n > 16) n = 16;
    vkEnumeratePhysicalDevices(inst, &n, devs);
    *phys = devs[0];
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devs[i], &p);
        if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
            *phys = devs[i];
            break;
        }
    }
    uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(*phys, &nf, NULL);
    VkQueueFamilyProperties fam[32];
    if (nf > 32) nf = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(*phys, &nf, fam);
    *family = UINT32_MAX;
    for (uint32_t i = 0; i < nf && *family == UINT32_MAX; i++)
        if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) *family = i;
    if (*family == UINT32_MAX) {
        rc_log(log, RCANVAS_LOG_ERROR, "vulkan: no compute queue family");
        return RCANVAS_EVULKAN;
    }
    return RCANVAS_OK;
}

VkResult rc_gpu_create_device_queues(VkPhysicalDevice phys, uint32_t family, uint32_t max, VkDevice *dev,
                                     VkQueue *queues, uint32_t *n) {
    uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, NULL);
    VkQueueFamilyProperties fam[32];
    if (nf > 32) nf = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, fam);
    uint32_t count = family < nf ? fam[family].queueCount : 1;
    if (count > max) count = max;
    if (count > RC_GPU_DEVICE_QUEUES) count = RC_GPU_DEVICE_QUEUES;
    if (count < 1) count = 1;
    float prio[RC_GPU_DEVICE_QUEUES];
    for (uint32_t i = 0; i < count; i++) prio[i] = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = family,
                                   .queueCount = count, .pQueuePriorities = prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci};
    VkResult r = vkCreateDevice(phys, &dci, NULL, dev);
    if (r != VK_SUCCESS) return r;
    for (uint32_t i = 0; i < count; i++) vkGetDeviceQueue(*dev, family, i, &queues[i]);
    *n = count;
    return VK_SUCCESS;
}

VkResult rc_gpu_create_device(VkPhysicalDevice phys, uint32_t family, VkDevice *dev, VkQueue *queue) {
    uint32_t n = 0;
    return rc_gpu_create_device_queues(phys, family, 1, dev, queue, &n);
}

int rc_gpu_find_memory(VkPhysicalDevice phys, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(phys, &mp);
    int best = -1;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (f & want) != want) continue;
        if (best < 0 || ((f & prefer) == prefer && (mp.memoryTypes[best].propertyFlags & prefer) != prefer)) best = (int)i;
    }
    return best;
}

void rc_gpu_buf_free(VkDevice dev, rc_gpu_buf *b) {
    if (b->map) vkUnmapMemory(dev, b->m);
    if (b->b) vkDestroyBuffer(dev, b->b, NULL);
    if (b->m) vkFreeMemory(dev, b->m, NULL);
    memset(b, 0, sizeof(*b));
}

VkResult rc_gpu_buf_make(VkPhysicalDevice phys, VkDevice dev, rc_gpu_buf *b, VkDeviceSize size, VkBufferUsageFlags usage,
                         int host, int cached) {
    rc_gpu_buf_free(dev, b);
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size, .usage = usage};
    VkResult r = vkCreateBuffer(dev, &bci, NULL, &b->b);
    if (r != VK_SUCCESS) return r;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, b->b, &req);
    int type = host ? rc_gpu_find_memory(phys, req.memoryTypeBits,
                                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                         cached ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0)
                    : rc_gpu_find_memory(phys, req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type < 0) {
        rc_gpu_buf_free(dev, b);
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = (uint32_t)type};
    r = vkAllocateMemory(dev, &mai, NULL, &b->m);
    if (r == VK_SUCCESS) r = vkBindBufferMemory(dev, b->b, b->m, 0);
    if (r == VK_SUCCESS && host) r = vkMapMemory(dev, b->m, 0, VK_WHOLE_SIZE, 0, &b->map);
    if (r != VK_SUCCESS) {
        rc_gpu_buf_free(dev, b);
        return r;
    }
    b->cap = size;
    return VK_SUCCESS;
}

VkResult rc_gpu_make_pipeline(VkDevice dev, VkPipelineLayout layout, const uint32_t *code, size_t size, VkPipeline *out) {
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = size, .pCode = code};
    VkShaderModule sm;
    VkResult r = vkCreateShaderModule(dev, &smi, NULL, &sm);
    if (r != VK_SUCCESS) return r;
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = sm, .pName = "main"},
        .layout = layout};
    r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, NULL, out);
    vkDestroyShaderModule(dev, sm, NULL);
    return r;
}

void rc_gpu_barrier(VkCommandBuffer cb, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 1, &mb,
                         0, NULL, 0, NULL);
}

void rc_gpu_dispatch(VkCommandBuffer cb, VkPipelineLayout layout, VkPipeline pipe, const void *pc, uint32_t bytes,
                     uint32_t gx, uint32_t gy) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    if (bytes) vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, bytes, pc);
    vkCmdDispatch(cb, gx, gy, 1);
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static rc_gpu_device *g_dev;
static int g_refs;
static int64_t g_failed_us; /* when making it last failed, 0: not */
static char g_why[256];     /* why, for the log; "" when made (rc_gpu_device_failure) */

static void destroy(rc_gpu_device *d) {
    if (d->dev) vkDestroyDevice(d->dev, NULL);
    if (d->instance) vkDestroyInstance(d->instance, NULL);
    for (int i = 0; i < RC_GPU_DEVICE_QUEUES; i++) pthread_mutex_destroy(&d->queue_locks[i]);
    free(d);
}

int rc_gpu_device_acquire(const rc_logger *log, rc_gpu_device **out) {
    int r = RCANVAS_OK;
    pthread_mutex_lock(&g_mu);
    if (!g_dev && g_failed_us && rc_now_us() - g_failed_us < RC_GPU_DEVICE_RETRY_S * 1000000ll) r = RCANVAS_EVULKAN;
    if (!g_dev && !r) {
        g_why[0] = '\0';
        rc_gpu_device *d = calloc(1, sizeof *d);
        if (!d) r = RCANVAS_ENOMEM;
        for (int i = 0; d && i < RC_GPU_DEVICE_QUEUES; i++) pthread_mutex_init(&d->queue_locks[i], NULL);
        VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "rcanvas",
                                 .apiVersion = VK_API_VERSION_1_1};
        VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
        if (d && vkCreateInstance(&ici, NULL, &d->instance) != VK_SUCCESS) r = RCANVAS_EVULKAN;
        if (d && !r) r = rc_gpu_pick_device(d->instance, log, &d->phys, &d->family);
        if (d && !r) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(d->phys, &p);
            if (p.apiVersion < VK_API_VERSION_1_1) r = RCANVAS_EVULKAN;
            /* a CPU rasterizer (Mesa's lavapipe, in many server images) would run the shaders on the CPU, slower than
             * the CPU codecs: refused, so that the canvas falls back to them, unless RCANVAS_GPU_CODEC_DEVICE=any
             * (the tests on lavapipe) */
            const char *any = getenv("RCANVAS_GPU_CODEC_DEVICE");
            if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && !(any && !strcmp(any, "any"))) {
                rc_log(log, RCANVAS_LOG_WARN, "vulkan: %s is a CPU device: not used for the GPU codecs", p.deviceName);
                snprintf(g_why, sizeof g_why, "the Vulkan device found, %.120s, is a CPU rasterizer: the GPU codecs refuse "
                         "it (RCANVAS_GPU_CODEC_DEVICE=any takes it)", p.deviceName);
                r = RCANVAS_EVULKAN;
            }
        }
        const char *nq = getenv("RCANVAS_GPU_QUEUES");
        int want = nq ? atoi(nq) : 1; /* one unless asked: gpu_device.h says why */
        if (want < 1) want = 1;
        if (want > RC_GPU_DEVICE_QUEUES - RC_GPU_DEVICE_RING_QUEUES) want = RC_GPU_DEVICE_QUEUES - RC_GPU_DEVICE_RING_QUEUES;
        if (d && !r && rc_gpu_create_device_queues(d->phys, d->family, (uint32_t)want + RC_GPU_DEVICE_RING_QUEUES,
                                                   &d->dev, d->queues, &d->nqueues) != VK_SUCCESS)
            r = RCANVAS_EVULKAN;
        /* the codecs' queues first; those the family has beyond them are for readback rings (and their apps) */
        if (d && !r) d->ncodec = d->nqueues > (uint32_t)want ? (uint32_t)want : d->nqueues;
        if (r) {
            if (d) destroy(d);
            if (!g_why[0])
                snprintf(g_why, sizeof g_why, "no Vulkan device for the GPU codecs (%s)", rcanvas_strerror(r));
            g_failed_us = rc_now_us();
            rc_log(log, RCANVAS_LOG_WARN, "vulkan: no device for the GPU codecs (%s)", rcanvas_strerror(r));
        } else {
            g_dev = d;
            g_failed_us = 0;
            g_why[0] = '\0';
        }
    }
    if (!r) g_refs++;
    *out = r ? NULL : g_dev;
    pthread_mutex_unlock(&g_mu);
    return r;
}

const char *rc_gpu_device_failure(void) {
    static _Thread_local char copy[sizeof g_why];
    pthread_mutex_lock(&g_mu);
    memcpy(copy, g_why, sizeof copy);
    pthread_mutex_unlock(&g_mu);
    return copy;
}

uint32_t rc_gpu_device_take_queue(rc_gpu_device *d) {
    pthread_mutex_lock(&g_mu);
    uint32_t i = d->ncodec > 1 ? d->next_queue++ % d->ncodec : 0;
    pthread_mutex_unlock(&g_mu);
    return i;
}

int rc_gpu_device_acquire_ring_queue(const rc_logger *log, rc_gpu_device **out, uint32_t *queue) {
    rc_gpu_device *d = NULL;
    int r = rc_gpu_device_acquire(log, &d);
    if (r) return r;
    pthread_mutex_lock(&g_mu);
    uint32_t q = d->ncodec;
    while (q < d->nqueues && (d->ring_queues & (1u << q))) q++;
    if (q < d->nqueues) d->ring_queues |= 1u << q;
    pthread_mutex_unlock(&g_mu);
    if (q >= d->nqueues) {
        rc_gpu_device_release(d);
        *out = NULL;
        return RCANVAS_EBUSY;
    }
    *out = d;
    *queue = q;
    return RCANVAS_OK;
}

void rc_gpu_device_release_ring_queue(rc_gpu_device *d, uint32_t queue) {
    if (!d) return;
    pthread_mutex_lock(&g_mu);
    d->ring_queues &= ~(1u << queue);
    pthread_mutex_unlock(&g_mu);
    rc_gpu_device_release(d);
}

void rc_gpu_device_release(rc_gpu_device *d) {
    if (!d) return;
    pthread_mutex_lock(&g_mu);
    if (d == g_dev && --g_refs == 0) {
        destroy(g_dev);
        g_dev = NULL;
    }
    pthread_mutex_unlock(&g_mu);
}
