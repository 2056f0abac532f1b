/* SPDX-License-Identifier: MIT */
/*
 * h264_gpu.h — an H.264 encoder in Vulkan compute shaders, for GPUs without a video engine (A100, H100, H200 have
 * no NVENC). Constrained Baseline (profile 66, constraint_set0/1): IDR pictures of Intra4x4 and Intra16x16
 * macroblocks (coded in a wavefront) and P pictures of P_L0_16x16, P_8x8 and P_Skip macroblocks with quarter-sample
 * motion vectors, and intra macroblocks where no vector predicts well; CAVLC; one slice per picture; the deblocking
 * filter from QP 16; the rate control in h264_gpu_rate.h. In: an RGBA/BGRA bitmap (uploaded)
 * or a VkImage on the encoder's device. Out: an Annex B access unit (SPS and PPS before each IDR picture) in host memory.
 * Stages, one submission per picture: colour conversion (h264_yuv.comp) → motion search (h264_me.comp) →
 * transform, quantization and the reconstruction a decoder makes (h264_mb.comp) → CAVLC bit counts
 * (h264_cavlc.comp) → bit offsets (h264_scan.comp) → CAVLC bits → the used bytes into host memory
 * (h264_copy.comp); the CPU adds start codes, NAL headers and emulation prevention bytes (codec/nal.h). Then the
 * deblocking filter (h264_deblock.comp) over the reconstruction, in a submission of its own: an encode returns
 * once its bitstream is back, while the filter still makes the next picture's reference; the next call (an
 * encode, rc_gpu_h264_reconstruction, rc_gpu_h264_free) waits for it first. The stages' commands are recorded once
 * per size and kind of picture; what the host and the shaders share is h264_io.h.
 * h264_gpu.c says what each choice costs and why.
 *
 * Threading: an encoder is used by one thread at a time; it submits to the queue it was given (the caller keeps
 * the queue's external synchronization rule: rc_gpu_h264_new's `queue_lock`, when not NULL, is held around each
 * vkQueueSubmit).
 */
#ifndef RC_H264_GPU_H
#define RC_H264_GPU_H

#include <pthread.h>
#include <vulkan/vulkan.h>

#include "codec/codec.h"
#include "codec/gpu/h264_gpu_rate.h"
#include "core/util.h"

typedef struct rc_gpu_h264 rc_gpu_h264;

/* Creates the encoder on a device (Vulkan 1.1; the shaders are SPIR-V 1.3). queue_lock: held around each submit, or
 * NULL. RCANVAS_OK, RCANVAS_ENOMEM, RCANVAS_EVULKAN. */
int rc_gpu_h264_new(VkPhysicalDevice phys, VkDevice dev, uint32_t queue_family, VkQueue queue,
                    pthread_mutex_t *queue_lock, const rc_logger *log, rc_gpu_h264 **out);
/* Frees an encoder (waits for its work). NULL: nothing. */
void rc_gpu_h264_free(rc_gpu_h264 *e);

/* What one encode did. */
typedef struct rc_gpu_h264_info {
    int keyframe;       /* 1: an IDR picture (with SPS and PPS) */
    int qp;             /* the picture's QP (12–51) */
    int skipped;        /* 1: a P picture of skipped macroblocks only, repeating the last picture exactly (the rate
                         * control was over its budget at QP 51); no GPU pass, the times 0 but wall_ms */
    double stage_ms[7]; /* GPU time: upload copy, colour, motion search, macroblocks, CAVLC count, scan + CAVLC
                         * write, copy out (timestamp queries; 0 where the device has none) */
    double gpu_ms;      /* first to last timestamp: until the bitstream is ready (the deblocking filter runs after it) */
    double me_coarse_ms; /* of stage_ms[2] (P pictures): the coarse motion search, */
    double me_fine_ms;   /* the fine one, */
    double me_choice_ms; /* the intra choice, */
    double me_wave_ms;   /* the intra wave's layout (the intra macroblocks' steps), */
    double me_adopt_ms;  /* and the adopt rounds (the vectors settled on their predictors) */
    double mb_intra_steps_ms; /* of stage_ms[3] (P pictures): the intra macroblocks' steps after the inter ones,
                               * and the skip runs' scan */
    double deblock_ms;  /* the deblocking filter's GPU time of the last coded picture before this one (a picture's
                         * filter, which makes the next one's reference, runs after its bitstream is read back, and
                         * is timed when the next encode waits for it); 0 where it ran none */
    int deblocked;      /* 1: the picture ran the deblocking filter (from QP 16, unless the device is contended:
                         * h264_gpu_gate.h; RCANVAS_GPU_H264_DEBLOCK=0 or 1 sets it off or on in every picture) */
    int contended;      /* 1: coded without the costly tools (the filter, intra macroblocks in P pictures, h264_me's
                         * adopt rounds): the device was contended (h264_gpu_gate.h; RCANVAS_GPU_H264_GATE=closed
                         * as if always, =open never) */
    int mb_i4x4;        /* macroblocks coded Intra4x4 (the other intra ones are Intra16x16) */
    int mb_p8x8;        /* macroblocks coded P_8x8 (P pictures; the others P_L0_16x16 or P_Skip) */
    int mb_intra;       /* intra macroblocks in a P picture (an area no vector predicts well); 0 in IDR pictures */
    int mb_intra_deferred; /* intra candidates of a P picture coded inter: past the intra wave's 16 steps
                            * (RCANVAS_GPU_H264_INTRA_STEPS: fewer) */
    int adopt_looks;    /* P pictures, counted only with RCANVAS_GPU_H264_ME=adoptcount or adoptall (tests; else
                         * 0): the adopt rounds' turns not skipped (after the first round a macroblock is looked at
                         * only where a neighbour's vector changed) */
    double wall_ms;     /* the call, CPU clock */
} rc_gpu_h264_info;

/* Encodes one picture of a CPU bitmap (RGBA8, BGRA8 or RGBX8, 1–16384 pixels a side and at most
 * RC_GPU_H264_MAX_MBS macroblocks, else RCANVAS_EFRAME_SIZE; a width or
 * height not a multiple of 16 is coded padded and cropped in the SPS, an odd one shows one repeated column or
 * row) and appends the access unit to out. The QP: p->paint → RC_GPU_H264_PAINT_QP; else qp_override 12–51 when
 * not 0 (tests); else the rate control from p->bitrate_kbps and p->fps (h264_gpu_rate.h: its model, the bucket,
 * the start, and P pictures of skipped macroblocks only while QP 51 is over budget). An IDR picture at the first
 * encode, after a size change, on
 * rc_gpu_h264_request_keyframe, and every p->keyframe_interval pictures when > 0. info may be NULL.
 * RCANVAS_EINVAL (bad image), RCANVAS_EFRAME_SIZE (too large for the device's buffers), RCANVAS_ENOMEM,
 * RCANVAS_EVULKAN, RCANVAS_EDEVICE_LOST. */
int rc_gpu_h264_encode_cpu(rc_gpu_h264 *e, const rc_image *img, const rc_encode_params *p, int qp_override,
                           rc_buf *out, rc_gpu_h264_info *info);
/* Same for a w × h region at (0, 0) of a VkImage on the encoder's device (R8G8B8A8 or B8G8R8A8, _UNORM or _SRGB,
 * the stored bytes coded as they are; created with VK_IMAGE_USAGE_TRANSFER_SRC_BIT; in `layout`, GENERAL or
 * TRANSFER_SRC_OPTIMAL, and left so): copied into the encoder's input on the GPU in the same submission (w × h × 4
 * bytes of device memory traffic), after every earlier command's writes to it; no pixel crosses to the host. Errors
 * as rc_gpu_h264_encode_cpu. */
int rc_gpu_h264_encode_image(rc_gpu_h264 *e, VkImage image, VkFormat format, VkImageLayout layout, uint32_t w,
                             uint32_t h, const rc_encode_params *p, int qp_override, rc_buf *out,
                             rc_gpu_h264_info *info);
/* Same for a w × h picture in a buffer on the encoder's device (format RGBA8, BGRA8 or RGBX8; rows of w × 4 bytes at
 * offset + y × pitch; made with VK_BUFFER_USAGE_TRANSFER_SRC_BIT; the commands that wrote it completed, their
 * fence waited for): copied into the encoder's input on the GPU in the same submission. The codec table's instance
 * takes this path for an rc_image whose gpu frame is on its device. Errors as rc_gpu_h264_encode_cpu. */
int rc_gpu_h264_encode_buffer(rc_gpu_h264 *e, VkBuffer src, VkDeviceSize offset, VkDeviceSize pitch,
                              rcanvas_pixel_format format, uint32_t w, uint32_t h, const rc_encode_params *p,
                              int qp_override, rc_buf *out, rc_gpu_h264_info *info);
/* The next picture is an IDR picture. */
void rc_gpu_h264_request_keyframe(rc_gpu_h264 *e);

#define RC_GPU_H264_PAINT_QP RC_H264_RATE_PAINT_QP
/* Test hook: how many pictures the codec table's encode took from an image's device buffer (rc_image.gpu). */
uint64_t rc_gpu_h264_from_buffer(const rc_gpu_h264 *e);
/* Test hook: 0 while the last picture's deblocking filter was submitted and not yet waited for (an encode returns
 * without waiting for it); 1 otherwise. */
int rc_gpu_h264_filter_waited(const rc_gpu_h264 *e);
#define RC_GPU_H264_MAX_MBS 139264 /* the largest MaxFS of Table A-1 (level 6.2): 8192 × 4352 pixels */

/* Test hook: the last picture's reconstruction (what a decoder shows before cropping), I420 at the padded size
 * (16·⌈w/16⌉ × 16·⌈h/16⌉; chroma half that), copied into malloc'd memory. RCANVAS_OK, RCANVAS_EINVAL (no picture
 * yet), RCANVAS_ENOMEM, RCANVAS_EVULKAN. */
int rc_gpu_h264_reconstruction(rc_gpu_h264 *e, uint8_t **i420, uint32_t *width, uint32_t *height);

#endif
