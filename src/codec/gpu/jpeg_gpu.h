/* SPDX-License-Identifier: MIT */
/*
 * jpeg_gpu.h — a baseline JPEG encoder (ITU-T T.81, JFIF) in Vulkan compute shaders. In: a VkImage on the GPU (or
 * a CPU bitmap, uploaded, for tests and tools). Out: the complete JPEG file in host memory. Stages: colour
 * conversion + AAN DCT + quantization (jpeg_dct.comp; it reads an image created with VK_IMAGE_USAGE_SAMPLED_BIT
 * itself, else a copy of it) → Huffman coding of every 8×8 block in parallel (jpeg_blk.comp) → prefix sums of the
 * bit lengths (jpeg_bscan.comp) → bit-aligned gather with 0xFF stuffing (jpeg_place.comp) → packing header,
 * stream, RSTn markers and EOI straight into host-visible memory (jpeg_bpack.comp); or the earlier path of one
 * restart interval per invocation (jpeg_huff/scan/pack.comp). Headers are made on the CPU once per quality/size.
 * Buffers, pipelines and descriptor sets live across frames and grow only when the frame does. An rc_gpu_jpeg is also the codec
 * "jpeg-gpu" of the codec table (it starts with rc_codec; rc_codec_jpeg_gpu).
 */
#ifndef RC_JPEG_GPU_H
#define RC_JPEG_GPU_H

#include <vulkan/vulkan.h>

#include "core/util.h"
#include "codec/codec.h"

typedef struct rc_gpu_jpeg rc_gpu_jpeg;

/* Creates the encoder on the app's (or rcanvas's) device. RCANVAS_OK, RCANVAS_ENOMEM, RCANVAS_EVULKAN. */
int rc_gpu_jpeg_new(VkPhysicalDevice phys, VkDevice dev, uint32_t queue_family, VkQueue queue, const rc_logger *log,
                    rc_gpu_jpeg **out);
/* A second encoder on owner's device that shares its pipelines, pipeline layout and descriptor set layout (no
 * shader compilation: about the cost of a command pool, a fence and four small buffers; its frame buffers grow at
 * its first encode), with its own buffers, descriptor set, command buffer, fence and timestamps: so that several
 * encodes can be in flight at once, one per encoder (the readback ring gives each staging slot its own).
 * It takes owner's configuration (rc_gpu_jpeg_configure) as it is now. owner must be an encoder from
 * rc_gpu_jpeg_new, and outlive it (free the siblings first). Each encoder is used by one thread at a time; different
 * ones may be used at once, except that the synchronous calls submit to the shared queue (its rule: one submitter at
 * a time). RCANVAS_OK, RCANVAS_EINVAL (owner NULL or itself a sibling),
 * RCANVAS_ENOMEM, RCANVAS_EVULKAN. */
int rc_gpu_jpeg_new_sibling(rc_gpu_jpeg *owner, rc_gpu_jpeg **out);
/* Frees an encoder (a sibling: not its owner's pipelines). Waits for its queue to be idle if it ever recorded or
 * submitted work (the queue's rule holds). NULL: nothing. */
void rc_gpu_jpeg_free(rc_gpu_jpeg *e);

typedef struct rc_gpu_jpeg_times {
    /* GPU time (timestamp queries): input copy, DCT+quant, Huffman, scan (of the bit or interval sizes), place
     * (bit-aligned gather and stuffing scan: block-parallel path only, else 0), pack */
    double stage_ms[6];
    int blocks;            /* 1: the block-parallel path coded this frame; 0: one restart interval per invocation */
    int direct;            /* 1: the DCT pass read the image itself (no input copy: stage_ms[0] ≈ 0) */
    uint32_t subgroup_size; /* the prefix sums used subgroup arithmetic with this subgroup size; 0: shared memory */
    uint32_t restart_mcus; /* the file's restart interval in MCUs, 0 for none */
    double gpu_ms;       /* first to last timestamp */
    double wall_ms;      /* call to return, CPU clock */
} rc_gpu_jpeg_times;

/* Encodes a w×h region of `image` (R8G8B8A8/B8G8R8A8 _UNORM or _SRGB, the stored bytes encoded as they are;
 * optimal tiling; in `layout`, left in `layout`), quality 1–100 with the Annex K tables scaled as libjpeg does.
 * `usage`: the flags the image was created with. With VK_IMAGE_USAGE_SAMPLED_BIT the DCT pass reads the image
 * through a view (layout GENERAL or SHADER_READ_ONLY_OPTIMAL as it is, any other changed to SHADER_READ_ONLY_OPTIMAL
 * for that pass and back): no input copy. Else it needs VK_IMAGE_USAGE_TRANSFER_SRC_BIT and is copied into a
 * buffer first (w × h × 4 bytes of device memory traffic, 0.36 ms at 3840×2160 on an H200). Earlier submissions'
 * writes to the image are waited for (a barrier from all commands). One command buffer, one submission; the fence
 * is polled for up to RCANVAS_GPU_JPEG_SPIN_US (default 2000 µs) before a sleeping wait; returns the file in *jpeg
 * (*len bytes), valid until the next call. times may be NULL. The device needs Vulkan 1.1 (the shaders are SPIR-V
 * 1.3), and so does the app's instance where the device is the app's (subgroup properties are queried).
 * RCANVAS_EINVAL (bad format or argument), RCANVAS_EFRAME_SIZE, RCANVAS_EVULKAN, RCANVAS_EDEVICE_LOST,
 * RCANVAS_ECODEC (the stream outgrew its buffer: encode this frame on the CPU). One thread at a time; the queue
 * rule of rcanvas_present_vk applies. */
int rc_gpu_jpeg_encode_image(rc_gpu_jpeg *e, VkImage image, VkFormat format, VkImageUsageFlags usage,
                             VkImageLayout layout, uint32_t w, uint32_t h, int quality, rcanvas_subsampling ss,
                             const uint8_t **jpeg, size_t *len, rc_gpu_jpeg_times *times);

/* Asynchronous use inside another command buffer (the readback ring's): records, into cb (recording), the
 * stages, reading `image` as rc_gpu_jpeg_encode_image does (usage, layout: there; the readback ring passes
 * GENERAL when the image can be sampled, so that its own copy and the DCT pass read it without a layout change
 * between them, else TRANSFER_SRC_OPTIMAL). The caller submits; once its fence has signalled, rc_gpu_jpeg_result() gives the file (valid
 * until the next record/encode), and rc_gpu_jpeg_finish() ends the encode — also when the submission failed.
 * One encode in flight per encoder: RCANVAS_EBUSY while one is (use a sibling, or the CPU encoder for this frame;
 * nothing was recorded). RCANVAS_EFRAME_SIZE if the device's storage buffers are too small for this frame (likewise). */
int rc_gpu_jpeg_record(rc_gpu_jpeg *e, VkCommandBuffer cb, VkImage image, VkFormat format, VkImageUsageFlags usage,
                       VkImageLayout layout, uint32_t w, uint32_t h, int quality, rcanvas_subsampling ss);
/* Whether an image of this format and usage would be read directly by the DCT pass (no input copy). */
int rc_gpu_jpeg_reads_image(rc_gpu_jpeg *e, VkFormat format, VkImageUsageFlags usage);
/* The subgroup size the prefix sums use subgroup arithmetic with (jpeg_bscan_sg); 0: the shared-memory scan. */
uint32_t rc_gpu_jpeg_subgroup_size(const rc_gpu_jpeg *e);
/* Whether the last recorded (or synchronous) encode reads its image in the DCT pass (1) or copied it first (0). */
int rc_gpu_jpeg_read_directly(const rc_gpu_jpeg *e);
/* Ends the asynchronous encode started by rc_gpu_jpeg_record (its result is no longer needed). Any thread. */
void rc_gpu_jpeg_finish(rc_gpu_jpeg *e);
/* The file of the last encode: RCANVAS_OK, or RCANVAS_ECODEC (an interval outgrew its slot: CPU fallback). */
int rc_gpu_jpeg_result(rc_gpu_jpeg *e, const uint8_t **jpeg, size_t *len);

/* Entropy-coding path, for the encodes that follow:
 *  RC_GPU_JPEG_BLOCKS (the default): every 8×8 block is Huffman-coded in parallel, bit lengths prefix-summed,
 *    bits packed bit-aligned with 0xFF stuffing; restart_mcus 0 (the default: no restart intervals, the smallest
 *    file) or 1–65535 MCUs per interval. Falls back to the interval path where the device lacks what it needs.
 *  RC_GPU_JPEG_INTERVALS: the earlier path, one restart interval per invocation; restart_mcus 0 (automatic,
 *    ≈ 16384 intervals) or 1–32.
 * The environment can set the same for tools: RCANVAS_GPU_JPEG_PATH=intervals, RCANVAS_GPU_JPEG_MCUS_PER_INTERVAL.
 * RCANVAS_EINVAL for other values. Not while an encode is in flight (one thread at a time). */
typedef enum rc_gpu_jpeg_path { RC_GPU_JPEG_BLOCKS = 0, RC_GPU_JPEG_INTERVALS = 1 } rc_gpu_jpeg_path;
int rc_gpu_jpeg_configure(rc_gpu_jpeg *e, rc_gpu_jpeg_path path, uint32_t restart_mcus);

/* Same for a CPU bitmap (uploaded first). */
int rc_gpu_jpeg_encode_cpu(rc_gpu_jpeg *e, const rc_image *img, int quality, rcanvas_subsampling ss,
                           const uint8_t **jpeg, size_t *len, rc_gpu_jpeg_times *times);

/* Test hooks, valid after an encode: the quantized coefficients ([block][64], zigzag, blocks in MCU order:
 * Y0..Y3 Cb Cr for 4:2:0, Y Cb Cr for 4:4:4), and the geometry (*mcus_per_interval 0: no restart intervals).
 * Copies into malloc'd memory. */
int rc_gpu_jpeg_debug_coefs(rc_gpu_jpeg *e, int32_t **coefs, uint32_t *blocks, uint32_t *mcus_per_interval);
/* The quantization table (natural order) used for component class t (0 luma, 1 chroma) at a quality. */
void rc_jpeg_quant_table(int quality, int t, uint16_t out[64]);
/* Standard Annex K Huffman tables as (code, length) per symbol; t 0 luma, 1 chroma. */
void rc_jpeg_huff_codes(int t, int ac, uint16_t code[256], uint8_t length[256]);

#endif
