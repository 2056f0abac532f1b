/* SPDX-License-Identifier: MIT */
/*
 * rcanvas_vk.h — GPU frames: present Vulkan images to an rcanvas canvas. Include it instead of, or after,
 * <rcanvas.h>; it includes <vulkan/vulkan.h> itself. Link with -lvulkan (pkg-config: rcanvas, which lists Vulkan
 * as a private dependency when rcanvas was built with it).
 */
#ifndef RCANVAS_VK_H
#define RCANVAS_VK_H

#include <vulkan/vulkan.h>

#include "rcanvas.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A rcanvas_vk reads Vulkan images back into a ring of host-visible staging buffers (host-cached memory where the device has it) and hands the mapped memory
 * straight to the canvas's encoders: no copy of the frame on the CPU. Link with -lvulkan.
 *
 * Queue access: rcanvas_present_vk() records and submits on the given queue from the calling thread and touches
 * the queue nowhere else (its readback thread only waits on fences). Vulkan requires queue submissions to be
 * externally synchronized, so the app must not submit on that queue from another thread during the call. */
typedef struct rcanvas_vk rcanvas_vk;

typedef struct rcanvas_vk_config {
    /* The app's objects; all NULL (default) = rcanvas creates its own instance and device (first discrete GPU,
     * else the first device; a queue family with compute), reachable through rcanvas_vk_device() & co; see also
     * codec_device below. */
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family;
    VkQueue queue;
    /* Staging buffers in the ring (1..16). Each one in flight is a frame the viewer sees later when the network
     * is the bottleneck; flow control keeps at most max_in_flight + 1 of them busy with a well-behaved app, so
     * the default 4 never stalls the renderer and adds no latency beyond that. Depth 1 serializes GPU copy and
     * encode (no pipelining). */
    int ring_depth;
    /* Row pitch alignment of the staging buffers (bytes, power of two); 0 (default) = the device's
     * optimalBufferCopyRowPitchAlignment. */
    uint32_t row_pitch_alignment;
    int validation; /* own device only: enable VK_LAYER_KHRONOS_validation if installed and count its errors */
    int gpu_jpeg;   /* 1 (default): while the canvas's codec is JPEG, encode on the GPU (Vulkan compute, codec
                       "jpeg-gpu": plain baseline JPEG for the browser), up to ring_depth frames at a time (an
                       encoder per staging buffer); a frame it cannot take is encoded on the CPU, and so are the
                       changed tiles of a frame where damage (below) found at most 1/8 of the tiles changed (they go
                       alone, far smaller than the whole frame). The staged pixels still serve the lossless refinement.
                       0 = CPU encoders only. */
    int damage;     /* Changed tiles found on the GPU (64×64 px, a hash per tile in a compute pass beside the copy):
                       only the tiles a staging buffer lacks are read back to host memory, and the canvas is told
                       which tiles changed. 0 (default) = auto: on for a GPU, off for a CPU Vulkan device (Mesa
                       lavapipe: there the readback is a memcpy already, and hashing would cost the CPU the encoders
                       need); 1 = on; -1 = off (every frame read back whole). Needs the image's size within the
                       device's maxStorageBufferRange (w × h × 4 bytes); a bigger frame is read back whole. */
    int codec_device; /* Without the app's objects: 1 = the device rcanvas's GPU codecs run on, with a queue for this
                         ring and the app alone, where it has one to spare (and validation is off; else a device of
                         the ring's own, as with 0, the default). An h264-gpu canvas then copies each frame from the
                         staging buffer into its encoder on the GPU: no copy of the frame on the host (a 1080p
                         frame: about 1 ms of CPU less). The device is shared: wait with vkQueueWaitIdle on
                         rcanvas_vk_queue(), never vkDeviceWaitIdle (other threads submit to its other queues). */
} rcanvas_vk_config;

RCANVAS_API void rcanvas_vk_config_init(rcanvas_vk_config *cfg);

/* Creates the readback ring for one canvas. Returns RCANVAS_OK and *out, RCANVAS_EINVAL, RCANVAS_ENOMEM,
 * RCANVAS_ETHREAD or RCANVAS_EVULKAN (no usable device, or a Vulkan call failed; logged). Staging buffers are
 * allocated on first use and grow on resize only. Any thread. */
RCANVAS_API int rcanvas_vk_new(rcanvas_canvas *canvas, const rcanvas_vk_config *cfg, rcanvas_vk **out);

/* Waits for copies in flight (fences), returns the staging buffers once the encoders are done with them, stops
 * the readback thread, and frees everything rcanvas created (its own device too). Free it before its canvas.
 * It waits for the ring's queue to be idle (vkQueueWaitIdle on rcanvas_vk_queue(); rcanvas submits nowhere else):
 * no other thread may use that queue during the call. */
RCANVAS_API void rcanvas_vk_free(rcanvas_vk *vk);

/* The objects in use (the app's, or rcanvas's own). */
RCANVAS_API VkInstance rcanvas_vk_instance(const rcanvas_vk *vk);
RCANVAS_API VkPhysicalDevice rcanvas_vk_physical_device(const rcanvas_vk *vk);
RCANVAS_API VkDevice rcanvas_vk_device(const rcanvas_vk *vk);
RCANVAS_API VkQueue rcanvas_vk_queue(const rcanvas_vk *vk);
RCANVAS_API uint32_t rcanvas_vk_queue_family(const rcanvas_vk *vk);

typedef struct rcanvas_vk_frame {
    VkImage image;               /* created with VK_IMAGE_USAGE_TRANSFER_SRC_BIT, one mip level, one layer */
    VkFormat format;             /* R8G8B8A8 or B8G8R8A8, _UNORM or _SRGB (bytes are sent as they are) */
    uint32_t width, height;      /* pixels, 1..max_frame_dim */
    VkImageLayout layout;        /* the image's layout when the copy runs (after wait_semaphore) */
    VkImageLayout final_layout;  /* its layout after the copy; VK_IMAGE_LAYOUT_UNDEFINED (0) = same as layout */
    VkSemaphore wait_semaphore;  /* optional (VK_NULL_HANDLE): the copy waits for it */
    VkPipelineStageFlags wait_stage; /* stage that waits; 0 = VK_PIPELINE_STAGE_TRANSFER_BIT */
    VkSemaphore signal_semaphore;/* optional: signalled when the copy (and the layout change) is done */
    int64_t timestamp_us;        /* the app's time, optional */
    VkImageUsageFlags usage;     /* the flags the image was created with; 0 = only TRANSFER_SRC known. With
                                    VK_IMAGE_USAGE_SAMPLED_BIT (and optimal tiling), while the canvas streams JPEG and
                                    the GPU encoder can sample the format, the encoder reads the image in its DCT
                                    pass (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT) instead of copying it first (w × h × 4
                                    bytes less device memory traffic: 0.36 ms at 3840×2160 on an H200); the image is
                                    then in VK_IMAGE_LAYOUT_GENERAL while rcanvas reads it, and that read is ordered
                                    before the transfer stage, so an app that orders its next writes after rcanvas's
                                    copy (a barrier from TRANSFER, or signal_semaphore) needs nothing more. */
} rcanvas_vk_frame;

/* Records the copy of f->image into a free staging buffer (with the layout transitions around it), submits it on
 * the queue and returns at once; the readback thread hands the buffer to the encoders when its fence signals.
 * Errors: RCANVAS_EINVAL (NULL, bad format or layout), RCANVAS_EFRAME_SIZE, RCANVAS_EBUSY (no free staging
 * buffer: nothing was submitted, the semaphores and the image are untouched — only when the app presents past
 * flow control or the ring is too shallow), RCANVAS_EDEVICE_LOST, RCANVAS_EVULKAN (out of memory growing a
 * staging buffer; the ring keeps working at the old size), RCANVAS_ECLOSED. One thread at a time per rcanvas_vk,
 * with the queue rule above. */
RCANVAS_API int rcanvas_present_vk(rcanvas_vk *vk, const rcanvas_vk_frame *f);

/* Validation-layer errors counted so far (own device with cfg.validation; else 0). */
RCANVAS_API int rcanvas_vk_validation_errors(const rcanvas_vk *vk);

#ifdef __cplusplus
}
#endif
#endif /* RCANVAS_VK_H */
