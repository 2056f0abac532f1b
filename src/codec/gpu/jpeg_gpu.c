/* SPDX-License-Identifier: MIT */
/*
 * jpeg_gpu.c — host side of the Vulkan compute JPEG encoder (see jpeg_gpu.h): the tables (Annex K quantization
 * tables scaled by quality as libjpeg's jpeg_quality_scaling, Annex K Huffman tables, AAN divisors), the JFIF
 * header, the buffers and the four pipelines, and one command buffer per encode.
 *
 * The variable output size: the pack stage writes the finished file into a host-visible buffer, one aligned
 * word per invocation, dispatched indirectly with the size the scan stage computed — so only the used bytes
 * cross PCIe, in the same submission, with no second round trip to learn the size first. The size itself comes
 * back in a 16-byte host-visible control word.
 */
#include "codec/gpu/jpeg_gpu.h"

#include "codec/gpu/gpu_device.h"
#include "codec/gpu/jpeg_io.h"

#include <stdatomic.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t k_dct[] =
#include "jpeg_dct.comp.inc"
    ;
static const uint32_t k_dct_img[] =
#include "jpeg_dct_img.comp.inc"
    ;
static const uint32_t k_huff[] =
#include "jpeg_huff.comp.inc"
    ;
static const uint32_t k_scan[] =
#include "jpeg_scan.comp.inc"
    ;
static const uint32_t k_pack[] =
#include "jpeg_pack.comp.inc"
    ;
static const uint32_t k_blk[] =
#include "jpeg_blk.comp.inc"
    ;
static const uint32_t k_bscan[] =
#include "jpeg_bscan.comp.inc"
    ;
static const uint32_t k_bscan_sg[] =
#include "jpeg_bscan_sg.comp.inc"
    ;
static const uint32_t k_place[] =
#include "jpeg_place.comp.inc"
    ;
static const uint32_t k_bpack[] =
#include "jpeg_bpack.comp.inc"
    ;

#define RC_GPU_JPEG_SPIN_US 2000 /* fence polling before a sleeping wait (wait_fence), µs */

/* ---- tables (ITU-T T.81 Annex K) ---- */

static const uint8_t k_std_q[2][64] = {
    {16, 11, 10, 16, 24,  40,  51,  61,  12, 12, 14, 19, 26,  58,  60,  55,  14, 13, 16, 24, 40,  57,  69,  56,
     14, 17, 22, 29, 51,  87,  80,  62,  18, 22, 37, 56, 68,  109, 103, 77,  24, 35, 55, 64, 81,  104, 113, 92,
     49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99},
    {17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99,
     47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
     99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99}};

static const uint8_t k_dc_bits[2][16] = {{0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},
                                         {0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0}};
static const uint8_t k_dc_vals[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const uint8_t k_ac_bits[2][16] = {{0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d},
                                         {0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77}};
static const uint8_t k_ac_vals[2][162] = {
    {0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71,
     0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72,
     0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37,
     0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59,
     0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83,
     0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3,
     0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
     0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
     0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa},
    {0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22,
     0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1,
     0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36,
     0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58,
     0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a,
     0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a,
     0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba,
     0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
     0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa}};

/* Natural index of zigzag position i (T.81 Figure A.6). */
static const uint8_t k_natural[64] = {0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,
                                      12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,
                                      35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
                                      58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

void rc_jpeg_quant_table(int quality, int t, uint16_t out[64]) {
    if (quality < 1) quality = 1;
    if (quality > 100) quality = 100;
    long scale = quality < 50 ? 5000 / quality : 200 - 2 * quality; /* libjpeg jpeg_quality_scaling */
    for (int k = 0; k < 64; k++) {
        long v = ((long)k_std_q[t][k] * scale + 50) / 100;
        out[k] = (uint16_t)(v < 1 ? 1 : v > 255 ? 255 : v); /* force_baseline */
    }
}

void rc_jpeg_huff_codes(int t, int ac, uint16_t code[256], uint8_t length[256]) {
    const uint8_t *bits = ac ? k_ac_bits[t] : k_dc_bits[t];
    const uint8_t *vals = ac ? k_ac_vals[t] : k_dc_vals;
    memset(length, 0, 256);
    memset(code, 0, 256 * sizeof(uint16_t));
    unsigned c = 0, k = 0; /* T.81 Annex C: canonical codes in order of length */
    for (int l = 1; l <= 16; l++) {
        for (int i = 0; i < bits[l - 1]; i++, k++) {
            code[vals[k]] = (uint16_t)c++;
            length[vals[k]] = (uint8_t)l;
        }
        c <<= 1;
    }
}

/* ---- Vulkan objects ---- */

/* B_SLOT and B_SC serve the block-parallel path only: the blocks' bit slots, and one uint buffer holding its
 * prefix-summed arrays (see sc_layout); B_SCRATCH holds the unstuffed bit stream there. */
/* B_MASK: per block, the 64-bit mask of its nonzero coefficients (zigzag order), written by the DCT pass, read by
 * the block coder so that it visits only those. */
/* the buffers up to B_MASK are bound at their index (jpeg_io.h's JPEG_BIND_*); B_STAGE is the host's upload */
enum { B_PX, B_COEF, B_DIV, B_TAB, B_SCRATCH, B_LEN, B_OFF, B_CTL, B_HDR, B_OUT, B_SLOT, B_SC, B_MASK, B_STAGE, NBUF };
#define NBIND ((int)JPEG_NBIND)
#define BIND_IMAGE JPEG_BIND_IMAGE /* the app's image (sampled image), read by P_DCT_IMG only */
_Static_assert(B_PX == JPEG_BIND_PX && B_TAB == JPEG_BIND_TAB && B_CTL == JPEG_BIND_CTL && B_SC == JPEG_BIND_SC &&
                   B_MASK == JPEG_BIND_MASK && B_MASK + 1 == JPEG_NBIND,
               "the buffers' order is the bindings' (jpeg_io.h)");
/* each pass's push constants (jpeg_io.h) */
#define JPEG_FIELD(name) uint32_t name;
typedef struct { JPEG_PC_DCT(JPEG_FIELD) } pc_dct_t;
typedef struct { JPEG_PC_HUFF(JPEG_FIELD) } pc_huff_t;
typedef struct { JPEG_PC_SCAN(JPEG_FIELD) } pc_scan_t;
typedef struct { JPEG_PC_PACK(JPEG_FIELD) } pc_pack_t;
typedef struct { JPEG_PC_BLK(JPEG_FIELD) } pc_blk_t;
typedef struct { JPEG_PC_BSCAN(JPEG_FIELD) } pc_bscan_t;
typedef struct { JPEG_PC_PLACE(JPEG_FIELD) } pc_place_t;
typedef struct { JPEG_PC_BPACK(JPEG_FIELD) } pc_bpack_t;
#undef JPEG_FIELD
#define PC_RANGE 64 /* the layout's push-constant range: every pass's fits */
_Static_assert(sizeof(pc_place_t) <= PC_RANGE && sizeof(pc_dct_t) <= PC_RANGE && sizeof(pc_bscan_t) <= PC_RANGE,
               "push constants past the layout's range");
enum { P_DCT, P_HUFF, P_SCAN, P_PACK, P_BLK, P_BSCAN, P_PLACE, P_BPACK, P_DCT_IMG, NPIPE };

typedef rc_gpu_buf buf;

struct rc_gpu_jpeg {
    rc_codec base;            /* first: this encoder is the codec "jpeg-gpu" (rc_codec_jpeg_gpu) */
    atomic_int in_flight;     /* an asynchronous encode (rc_gpu_jpeg_record) not yet finished */
    const rc_gpu_jpeg *owner; /* a sibling (rc_gpu_jpeg_new_sibling): dsl, layout and pipe[] are the owner's */
    const rc_logger *log;
    VkPhysicalDevice phys;
    VkDevice dev;
    uint32_t family;
    VkQueue queue;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe[NPIPE];
    int have_blocks;          /* the block-parallel pipelines were made (else only the interval path) */
    int have_image_input;     /* P_DCT_IMG was made: images with VK_IMAGE_USAGE_SAMPLED_BIT are read directly */
    uint32_t subgroup_size;   /* P_BSCAN is the subgroup build (jpeg_bscan_sg) for this subgroup size; 0: not */
    int input_copy;           /* copy the image first even when it can be sampled (see rc_gpu_jpeg_new) */
    uint8_t sampled_ok[4];    /* optimal tiling can sample the format: RGBA8, BGRA8 UNORM, RGBA8, BGRA8 SRGB (once) */
    VkImageView view;         /* the view of the image of the encode in flight or last done (destroyed at the next) */
    int direct;               /* the last encode read its image directly (no input copy) */
    int64_t spin_us;          /* the synchronous paths poll their fence this long before sleeping on it */
    rc_gpu_jpeg_path path;    /* configured: RC_GPU_JPEG_BLOCKS (default) or RC_GPU_JPEG_INTERVALS */
    uint32_t restart_cfg;     /* configured restart interval in MCUs (0: none / automatic) */
    int blocks;               /* the last encode took the block-parallel path */
    /* the block-parallel path's arrays in B_SC (uint offsets) */
    uint32_t sc_boff, sc_ioff, sc_misc, sc_c, sc_coff, sc_aux1, sc_aux2, sc_aux3, cap_words;
    VkDescriptorPool dpool;
    VkDescriptorSet set;
    VkCommandPool cpool;
    VkCommandBuffer cmd;
    VkFence fence;
    int used;                 /* it recorded or submitted work at least once (rc_gpu_jpeg_free waits only then) */
    VkQueryPool queries;
    double ts_ns;
    int have_ts;
    buf bufs[NBUF];
    int dirty_set;
    /* the geometry and header of the last encode */
    uint32_t w, h, mcus_x, mcus_y, bpm, mpi, n_intervals, slot_words, header_bytes;
    int quality;
    rcanvas_subsampling ss;
};

static int vkfail(rc_gpu_jpeg *e, VkResult r, const char *what) {
    rc_log(e->log, RCANVAS_LOG_ERROR, "gpu jpeg: %s failed (VkResult %d)", what, (int)r);
    return r == VK_ERROR_DEVICE_LOST ? RCANVAS_EDEVICE_LOST : RCANVAS_EVULKAN;
}

/* Ensures buffer i holds `need` bytes. Host buffers (control, header, tables, divisors, output, staging) are
 * mapped; the output prefers host-cached memory (the CPU reads it), the rest device-local. */
static int buf_reserve(rc_gpu_jpeg *e, int i, VkDeviceSize need) {
    buf *b = &e->bufs[i];
    if (b->cap >= need) return RCANVAS_OK;
    /* No wait here: no encode is pending when buffers grow (the synchronous calls wait for their fence, and the
     * readback ring records a new encode only after the previous one was consumed), and vkDeviceWaitIdle would
     * need every queue of the app's device to be idle and unused by other threads. */
    int host = i == B_CTL || i == B_HDR || i == B_TAB || i == B_DIV || i == B_OUT || i == B_STAGE;
    VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                               VK_BUFFER_USAGE_TRANSFER_SRC_BIT | (i == B_CTL ? VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT : 0);
    VkResult r = rc_gpu_buf_make(e->phys, e->dev, b, need, usage, host, i == B_OUT);
    if (r == VK_ERROR_FEATURE_NOT_PRESENT) return RCANVAS_EVULKAN;
    if (r != VK_SUCCESS) return vkfail(e, r, "buffer memory");
    e->dirty_set = 1;
    return RCANVAS_OK;
}

/* The subgroup size when the prefix sums can use subgroup arithmetic (Vulkan 1.1 VkPhysicalDeviceSubgroupProperties:
 * ARITHMETIC in compute shaders, a size that divides the 256-invocation workgroup), else 0 (the shared-memory scan).
 * RCANVAS_GPU_JPEG_SUBGROUPS=0 turns it off, for benchmarks. */
static uint32_t subgroup_scan_size(VkPhysicalDevice phys) {
    const char *env = getenv("RCANVAS_GPU_JPEG_SUBGROUPS");
    if (env && !strcmp(env, "0")) return 0;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(phys, &props);
    if (props.apiVersion < VK_API_VERSION_1_1) return 0;
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    vkGetPhysicalDeviceProperties2(phys, &p2);
    if (!(sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ||
        !(sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) || sg.subgroupSize == 0 ||
        256 % sg.subgroupSize != 0)
        return 0;
    return sg.subgroupSize;
}

/* What one encode in flight needs of its own: the descriptor set, command buffer and fence of the synchronous
 * paths, timestamp queries and the small fixed buffers (divisors, Huffman tables, control, header). Frees nothing on
 * failure (rc_gpu_jpeg_free does). */
static int encode_state_new(rc_gpu_jpeg *e) {
    VkDevice dev = e->dev;
    VkDescriptorPoolSize ps[2] = {{.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = NBIND},
                                  {.type = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, .descriptorCount = 1}};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1,
                                      .poolSizeCount = 2, .pPoolSizes = ps};
    VkResult r = vkCreateDescriptorPool(dev, &dpi, NULL, &e->dpool);
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = e->dpool,
                                       .descriptorSetCount = 1, .pSetLayouts = &e->dsl};
    if (r == VK_SUCCESS) r = vkAllocateDescriptorSets(dev, &dai, &e->set);
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = e->family};
    if (r == VK_SUCCESS) r = vkCreateCommandPool(dev, &cpi, NULL, &e->cpool);
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = e->cpool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    if (r == VK_SUCCESS) r = vkAllocateCommandBuffers(dev, &cai, &e->cmd);
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (r == VK_SUCCESS) r = vkCreateFence(dev, &fci, NULL, &e->fence);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(e->phys, &props);
    e->ts_ns = props.limits.timestampPeriod;
    VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                 .queryCount = 7};
    if (r == VK_SUCCESS) e->have_ts = vkCreateQueryPool(dev, &qpi, NULL, &e->queries) == VK_SUCCESS;
    /* small fixed buffers */
    int rr = r == VK_SUCCESS ? RCANVAS_OK : vkfail(e, r, "encoder state setup");
    if (!rr) rr = buf_reserve(e, B_DIV, 128 * sizeof(float));
    if (!rr) rr = buf_reserve(e, B_TAB, (2 * 12 + 2 * 256) * sizeof(uint32_t));
    if (!rr) rr = buf_reserve(e, B_CTL, 64);
    if (!rr) rr = buf_reserve(e, B_HDR, 1024);
    if (rr) return rr;
    uint32_t *tab = e->bufs[B_TAB].map; /* code | length << 24 */
    for (int t = 0; t < 2; t++)
        for (int ac = 0; ac < 2; ac++) {
            uint16_t code[256];
            uint8_t len[256];
            rc_jpeg_huff_codes(t, ac, code, len);
            for (int s = 0; s < (ac ? 256 : 12); s++)
                tab[(ac ? 24 + t * 256 : t * 12) + s] = code[s] | ((uint32_t)len[s] << 24);
        }
    return RCANVAS_OK;
}

int rc_gpu_jpeg_new(VkPhysicalDevice phys, VkDevice dev, uint32_t family, VkQueue queue, const rc_logger *log,
                    rc_gpu_jpeg **out) {
    static const rc_logger quiet = {0};
    if (!phys || !dev || !queue || !out) return RCANVAS_EINVAL;
    rc_gpu_jpeg *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = &rc_codec_jpeg_gpu;
    e->log = log ? log : &quiet;
    e->phys = phys, e->dev = dev, e->family = family, e->queue = queue;
    VkDescriptorSetLayoutBinding b[NBIND + 1];
    for (int i = 0; i < NBIND; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    b[NBIND] = (VkDescriptorSetLayoutBinding){.binding = BIND_IMAGE, .descriptorType = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = NBIND + 1, .pBindings = b};
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = PC_RANGE};
    VkResult r = vkCreateDescriptorSetLayout(dev, &dli, NULL, &e->dsl);
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &e->dsl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    if (r == VK_SUCCESS) r = vkCreatePipelineLayout(dev, &pli, NULL, &e->layout);
    if (r == VK_SUCCESS) r = rc_gpu_make_pipeline(e->dev, e->layout, k_dct, sizeof k_dct, &e->pipe[0]);
    if (r == VK_SUCCESS) r = rc_gpu_make_pipeline(e->dev, e->layout, k_huff, sizeof k_huff, &e->pipe[1]);
    if (r == VK_SUCCESS) r = rc_gpu_make_pipeline(e->dev, e->layout, k_scan, sizeof k_scan, &e->pipe[2]);
    if (r == VK_SUCCESS) r = rc_gpu_make_pipeline(e->dev, e->layout, k_pack, sizeof k_pack, &e->pipe[3]);
    /* The block-parallel path: where its pipelines cannot be made, encodes keep to the interval path. */
    if (r == VK_SUCCESS) {
        e->subgroup_size = subgroup_scan_size(phys);
        if (e->subgroup_size && rc_gpu_make_pipeline(e->dev, e->layout, k_bscan_sg, sizeof k_bscan_sg, &e->pipe[P_BSCAN]) != VK_SUCCESS)
            e->subgroup_size = 0, e->pipe[P_BSCAN] = VK_NULL_HANDLE;
        e->have_blocks = rc_gpu_make_pipeline(e->dev, e->layout, k_blk, sizeof k_blk, &e->pipe[P_BLK]) == VK_SUCCESS &&
                         (e->pipe[P_BSCAN] || rc_gpu_make_pipeline(e->dev, e->layout, k_bscan, sizeof k_bscan, &e->pipe[P_BSCAN]) == VK_SUCCESS) &&
                         rc_gpu_make_pipeline(e->dev, e->layout, k_place, sizeof k_place, &e->pipe[P_PLACE]) == VK_SUCCESS &&
                         rc_gpu_make_pipeline(e->dev, e->layout, k_bpack, sizeof k_bpack, &e->pipe[P_BPACK]) == VK_SUCCESS;
        if (!e->have_blocks) rc_log(e->log, RCANVAS_LOG_WARN, "gpu jpeg: block-parallel pipelines unavailable; "
                                                              "coding one restart interval per invocation");
        /* reading the app's image in the DCT pass: where this cannot be made, the image is copied first */
        e->have_image_input = rc_gpu_make_pipeline(e->dev, e->layout, k_dct_img, sizeof k_dct_img, &e->pipe[P_DCT_IMG]) == VK_SUCCESS;
    }
    /* The input: read in the DCT pass where the image can be sampled, on a GPU. On a CPU device (Mesa lavapipe)
     * the copy is a memcpy and texel fetches are emulated: 1920×1080 text q75 4:2:0 took 39 ms in the DCT pass
     * reading the image against 0.6 + 25 ms copying first, so there it copies. RCANVAS_GPU_JPEG_INPUT=copy or
     * =image overrides this (benchmarks; the tests read images on lavapipe too). */
    VkPhysicalDeviceProperties dprops;
    vkGetPhysicalDeviceProperties(phys, &dprops);
    /* RCANVAS_GPU_JPEG_SPIN_US (0–100000, benchmarks): how long the synchronous paths poll their fence */
    const char *spin = getenv("RCANVAS_GPU_JPEG_SPIN_US");
    e->spin_us = spin && atoi(spin) >= 0 && atoi(spin) <= 100000 ? atoi(spin) : RC_GPU_JPEG_SPIN_US;
    const char *envi = getenv("RCANVAS_GPU_JPEG_INPUT");
    e->input_copy = envi && !strcmp(envi, "copy")    ? 1
                    : envi && !strcmp(envi, "image") ? 0
                                                     : dprops.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    static const VkFormat inputs[4] = {VK_FORMAT_R8G8B8A8_UNORM, VK_FORMAT_B8G8R8A8_UNORM, VK_FORMAT_R8G8B8A8_SRGB,
                                       VK_FORMAT_B8G8R8A8_SRGB};
    for (int i = 0; i < 4; i++) { /* asked once here, not per frame */
        VkFormatProperties fp;
        vkGetPhysicalDeviceFormatProperties(phys, inputs[i], &fp);
        e->sampled_ok[i] = (fp.optimalTilingFeatures & VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT) != 0;
    }
    e->path = RC_GPU_JPEG_BLOCKS;
    const char *envp = getenv("RCANVAS_GPU_JPEG_PATH"); /* benchmarks: "intervals" for the previous path */
    if (envp && !strcmp(envp, "intervals")) e->path = RC_GPU_JPEG_INTERVALS;
    const char *force = getenv("RCANVAS_GPU_JPEG_MCUS_PER_INTERVAL"); /* benchmarks: other interval sizes */
    if (force && atoi(force) >= 1 && atoi(force) <= 65535) e->restart_cfg = (uint32_t)atoi(force);
    int rr = r == VK_SUCCESS ? encode_state_new(e) : vkfail(e, r, "pipeline setup");
    if (rr) {
        rc_gpu_jpeg_free(e);
        return rr;
    }
    *out = e;
    return RCANVAS_OK;
}

int rc_gpu_jpeg_new_sibling(rc_gpu_jpeg *owner, rc_gpu_jpeg **out) {
    if (!owner || owner->owner || !out) return RCANVAS_EINVAL;
    rc_gpu_jpeg *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = &rc_codec_jpeg_gpu;
    e->owner = owner;
    e->log = owner->log;
    e->phys = owner->phys, e->dev = owner->dev, e->family = owner->family, e->queue = owner->queue;
    e->dsl = owner->dsl, e->layout = owner->layout;
    memcpy(e->pipe, owner->pipe, sizeof e->pipe);
    e->have_blocks = owner->have_blocks, e->have_image_input = owner->have_image_input;
    e->subgroup_size = owner->subgroup_size, e->input_copy = owner->input_copy;
    memcpy(e->sampled_ok, owner->sampled_ok, sizeof e->sampled_ok);
    e->spin_us = owner->spin_us, e->path = owner->path, e->restart_cfg = owner->restart_cfg;
    int r = encode_state_new(e);
    if (r) {
        rc_gpu_jpeg_free(e);
        return r;
    }
    *out = e;
    return RCANVAS_OK;
}

void rc_gpu_jpeg_free(rc_gpu_jpeg *e) {
    if (!e) return;
    /* its own work and the ring's it recorded into (the device may be shared: not vkDeviceWaitIdle); one that never
     * recorded anything (a ring whose setup failed) leaves the app's queue alone */
    if (e->used) vkQueueWaitIdle(e->queue);
    if (e->view) vkDestroyImageView(e->dev, e->view, NULL);
    for (int i = 0; i < NBUF; i++) rc_gpu_buf_free(e->dev, &e->bufs[i]);
    if (e->queries) vkDestroyQueryPool(e->dev, e->queries, NULL);
    if (e->fence) vkDestroyFence(e->dev, e->fence, NULL);
    if (e->cpool) vkDestroyCommandPool(e->dev, e->cpool, NULL);
    if (e->dpool) vkDestroyDescriptorPool(e->dev, e->dpool, NULL);
    if (!e->owner) { /* a sibling's are its owner's */
        for (int i = 0; i < NPIPE; i++)
            if (e->pipe[i]) vkDestroyPipeline(e->dev, e->pipe[i], NULL);
        if (e->layout) vkDestroyPipelineLayout(e->dev, e->layout, NULL);
        if (e->dsl) vkDestroyDescriptorSetLayout(e->dev, e->dsl, NULL);
    }
    free(e);
}

/* ---- header (JFIF, T.81 Annex B) ---- */

static size_t put16(uint8_t *p, size_t o, unsigned v) {
    p[o] = (uint8_t)(v >> 8);
    p[o + 1] = (uint8_t)v;
    return o + 2;
}

static size_t make_header(const rc_gpu_jpeg *e, uint8_t *p) {
    size_t o = 0;
    p[o++] = 0xFF, p[o++] = 0xD8;                                                     /* SOI */
    static const uint8_t app0[] = {0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0};
    memcpy(p + o, app0, sizeof app0), o += sizeof app0;
    for (int t = 0; t < 2; t++) {                                                     /* DQT */
        uint16_t q[64];
        rc_jpeg_quant_table(e->quality, t, q);
        p[o++] = 0xFF, p[o++] = 0xDB;
        o = put16(p, o, 67);
        p[o++] = (uint8_t)t;
        for (int i = 0; i < 64; i++) p[o++] = (uint8_t)q[k_natural[i]];
    }
    p[o++] = 0xFF, p[o++] = 0xC0;                                                     /* SOF0 */
    o = put16(p, o, 17);
    p[o++] = 8;
    o = put16(p, o, e->h);
    o = put16(p, o, e->w);
    p[o++] = 3;
    p[o++] = 1, p[o++] = e->ss == RCANVAS_SUBSAMP_420 ? 0x22 : 0x11, p[o++] = 0;
    p[o++] = 2, p[o++] = 0x11, p[o++] = 1;
    p[o++] = 3, p[o++] = 0x11, p[o++] = 1;
    for (int t = 0; t < 2; t++)                                                       /* DHT */
        for (int ac = 0; ac < 2; ac++) {
            const uint8_t *bits = ac ? k_ac_bits[t] : k_dc_bits[t];
            const uint8_t *vals = ac ? k_ac_vals[t] : k_dc_vals;
            int n = 0;
            for (int i = 0; i < 16; i++) n += bits[i];
            p[o++] = 0xFF, p[o++] = 0xC4;
            o = put16(p, o, (unsigned)(3 + 16 + n));
            p[o++] = (uint8_t)((ac << 4) | t);
            memcpy(p + o, bits, 16), o += 16;
            memcpy(p + o, vals, (size_t)n), o += (size_t)n;
        }
    if (e->mpi) {                                                                     /* DRI */
        p[o++] = 0xFF, p[o++] = 0xDD;
        o = put16(p, o, 4);
        o = put16(p, o, e->mpi);
    }
    static const uint8_t sos[] = {0xFF, 0xDA, 0, 12, 3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0}; /* SOS */
    memcpy(p + o, sos, sizeof sos), o += sizeof sos;
    return o;
}

/* ---- encode ---- */

#define RC_GPU_JPEG_MAX_MPI 32

static const float k_aan[8] = {1.0f, 1.387039845f, 1.306562965f, 1.175875602f,
                               1.0f, 0.785694958f, 0.541196100f, 0.275899379f};

/* The interval path (jpeg_huff/scan/pack.comp): one restart interval per invocation. Sets mpi, n_intervals,
 * slot_words and its buffers; RCANVAS_EFRAME_SIZE if the frame is too big for the device's storage buffers. */
static int prepare_intervals(rc_gpu_jpeg *e, uint32_t total, VkDeviceSize range) {
    /* Restart interval: the Huffman stage codes one interval per invocation, so its time grows with the MCUs of
     * an interval (H200, 4K lines q75 4:2:0: 0.14 / 0.25 / 0.49 / 0.96 ms at 1 / 2 / 4 / 8 MCUs) while every
     * interval costs ≈ 3.5 bytes (RSTn marker, padding bits, fresh DC prediction). Aim at ≈ 16384 intervals,
     * with at least 24 blocks each (4 MCUs of 4:2:0, 8 of 4:4:4: 1080p 4:2:0 then has 2040 intervals, ≈ 7 kB,
     * and surface-1080p q75 stays 1.09× the size of libjpeg-turbo's file; 12 blocks made it 1.19×) and at most
     * RC_GPU_JPEG_MAX_MPI MCUs, so one invocation stays short (llvmpipe, Mesa's CPU driver, cut off 64-MCU 4:4:4
     * intervals before their end — a loop-iteration guard — while 32 passed bit-exact). */
    uint32_t mpi = (total + 16383) / 16384, min_mpi = 24 / e->bpm;
    mpi = mpi < min_mpi ? min_mpi : mpi > RC_GPU_JPEG_MAX_MPI ? RC_GPU_JPEG_MAX_MPI : mpi;
    if (e->restart_cfg >= 1 && e->restart_cfg <= RC_GPU_JPEG_MAX_MPI) mpi = e->restart_cfg;
    e->blocks = 0;
    e->mpi = mpi;
    e->n_intervals = (total + e->mpi - 1) / e->mpi;
    /* Slot of an interval: 256 bytes a block. A block's code is at most ≈ 208 bytes before 0xFF stuffing (DC 22
     * bits, 63 AC of ≤ 26 bits); real content stays far below (≈ 10–40 bytes at q90). An interval that would
     * outgrow its slot is detected on the GPU and the encode returns RCANVAS_ECODEC (callers fall back to the
     * CPU encoder). */
    e->slot_words = e->mpi * e->bpm * 256 / 4 + 4;
    VkDeviceSize biggest = (VkDeviceSize)e->n_intervals * e->slot_words * 4 + 1024 + (VkDeviceSize)e->n_intervals * 2;
    if (biggest > range || (VkDeviceSize)total * e->bpm * 256 > range)
        return RCANVAS_EFRAME_SIZE; /* too big for this device's storage buffers: use the CPU encoder */
    int r = buf_reserve(e, B_SCRATCH, (VkDeviceSize)e->n_intervals * e->slot_words * 4);
    if (!r) r = buf_reserve(e, B_LEN, (VkDeviceSize)e->n_intervals * 4);
    if (!r) r = buf_reserve(e, B_OFF, (VkDeviceSize)e->n_intervals * 4);
    if (!r) r = buf_reserve(e, B_OUT, 1024 + (VkDeviceSize)e->n_intervals * (e->slot_words * 4 + 2) + 4);
    if (!r) r = buf_reserve(e, B_SLOT, 16); /* bound, unused */
    if (!r) r = buf_reserve(e, B_SC, 16);
    return r;
}

/* The block-parallel path (jpeg_blk/bscan/place/bpack.comp): every block coded at once, restart intervals only
 * where configured (default none). Sets mpi (0: none), n_intervals, the B_SC layout and the buffers.
 * RCANVAS_EFRAME_SIZE when the path is off, unavailable, or the frame too big for it (the caller then tries the
 * interval path). */
static int prepare_blocks(rc_gpu_jpeg *e, uint32_t total, VkDeviceSize range, uint32_t max_groups) {
    if (e->path != RC_GPU_JPEG_BLOCKS || !e->have_blocks) return RCANVAS_EFRAME_SIZE;
    uint32_t nb = total * e->bpm, mpi = e->restart_cfg <= 65535 ? e->restart_cfg : 0;
    uint32_t n_iv = mpi ? (total + mpi - 1) / mpi : 1;
    /* U, the unstuffed stream: at most 1728 bits a block (54 words) + a padding byte an interval. Its arrays
     * (U, and the per-word counts c and their scan coff in B_SC) take that much where the device's storage
     * buffer range allows, else as much as fits (lavapipe: 128 MiB, so 4K 4:4:4 gets ≈ 27 words a block, while
     * real content needs ≤ 10 at q90); a stream past it is caught on the GPU (RCANVAS_ECODEC). */
    uint64_t maxw = (uint64_t)nb * 54 + n_iv + 1, fixed = (uint64_t)nb + n_iv + 16 + 8;
    uint64_t room = range / 4 > fixed ? range / 4 - fixed : 0;
    if (maxw * 2 + maxw / 512 + 16 > room) maxw = room > 64 ? (room - 16) * 512 / 1025 : 0;
    if (maxw * 4 > range) maxw = range / 4;
    if (maxw < (uint64_t)nb * 4 + n_iv + 1) return RCANVAS_EFRAME_SIZE; /* under 16 bytes a block: too tight */
    uint64_t maxn = maxw + 1, a1 = (maxn + 1023) / 1024 + 1, a2 = (a1 + 1023) / 1024 + 1;
    uint64_t o = 0, boff = o;
    o += nb + 1;
    uint64_t ioff = o;
    o += n_iv + 1;
    uint64_t misc = o;
    o += 8;
    uint64_t c = o;
    o += maxw + 1;
    uint64_t coff = o;
    o += maxw + 1;
    uint64_t aux1 = o;
    o += a1;
    uint64_t aux2 = o;
    o += a2;
    uint64_t aux3 = o;
    o += 2;
    /* the output: 256 bytes a block (as the interval path) + markers; a file past it (0xFF-stuffing of noise at
     * q100 could, in theory) is detected and returns RCANVAS_ECODEC */
    uint64_t out = 1024 + (uint64_t)nb * 256 + (uint64_t)n_iv * 2 + 4;
    if (o * 4 > range || (uint64_t)nb * 256 > range || maxw * 4 > range || out > range || a2 > 1024 + 1 ||
        (nb + 63) / 64 > max_groups || (n_iv + 256) / 256 > max_groups || o > UINT32_MAX)
        return RCANVAS_EFRAME_SIZE;
    e->blocks = 1;
    e->mpi = mpi;
    e->n_intervals = n_iv;
    e->slot_words = 0;
    e->sc_boff = (uint32_t)boff, e->sc_ioff = (uint32_t)ioff, e->sc_misc = (uint32_t)misc, e->sc_c = (uint32_t)c;
    e->sc_coff = (uint32_t)coff, e->sc_aux1 = (uint32_t)aux1, e->cap_words = (uint32_t)(maxw - 1);
    e->sc_aux2 = (uint32_t)aux2, e->sc_aux3 = (uint32_t)aux3;
    int r = buf_reserve(e, B_SLOT, (VkDeviceSize)nb * 256);
    if (!r) r = buf_reserve(e, B_SC, o * 4);
    if (!r) r = buf_reserve(e, B_SCRATCH, maxw * 4);
    if (!r) r = buf_reserve(e, B_OUT, out);
    if (!r) r = buf_reserve(e, B_LEN, 16); /* bound, unused */
    if (!r) r = buf_reserve(e, B_OFF, 16);
    return r;
}

/* Sizes buffers and tables for w×h at quality/ss (px_bytes: the input copy's buffer, 0 when the DCT pass reads the
 * image itself); rewrites the header when they change. */
static int prepare(rc_gpu_jpeg *e, uint32_t w, uint32_t h, int quality, rcanvas_subsampling ss, VkDeviceSize px_bytes) {
    if (w == 0 || h == 0 || w > 65535 || h > 65535 || quality < 1 || quality > 100) return RCANVAS_EINVAL;
    if (ss != RCANVAS_SUBSAMP_444) ss = RCANVAS_SUBSAMP_420; /* AUTO: the choice from content is the CPU path's */
    int changed = w != e->w || h != e->h || quality != e->quality || ss != e->ss;
    e->w = w, e->h = h, e->quality = quality, e->ss = ss;
    uint32_t mcu = ss == RCANVAS_SUBSAMP_420 ? 16 : 8;
    e->mcus_x = (w + mcu - 1) / mcu;
    e->mcus_y = (h + mcu - 1) / mcu;
    e->bpm = ss == RCANVAS_SUBSAMP_420 ? 6 : 3;
    uint32_t total = e->mcus_x * e->mcus_y;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(e->phys, &props);
    VkDeviceSize range = props.limits.maxStorageBufferRange;
    uint32_t old_mpi = e->mpi;
    int r = prepare_blocks(e, total, range, props.limits.maxComputeWorkGroupCount[0]);
    if (r == RCANVAS_EFRAME_SIZE) r = prepare_intervals(e, total, range);
    if (r) return r;
    r = buf_reserve(e, B_PX, px_bytes > 16 ? px_bytes : 16); /* the input copy's buffer: bound, tiny when unused */
    if (!r) r = buf_reserve(e, B_COEF, (VkDeviceSize)total * e->bpm * 64 * 4);
    if (!r) r = buf_reserve(e, B_MASK, (VkDeviceSize)total * e->bpm * 8);
    changed |= old_mpi != e->mpi; /* the header's DRI */
    if (r) return r;
    if (changed || e->dirty_set) {
        float *div = e->bufs[B_DIV].map;
        for (int t = 0; t < 2; t++) {
            uint16_t q[64];
            rc_jpeg_quant_table(quality, t, q);
            for (int k = 0; k < 64; k++) div[t * 64 + k] = 1.0f / ((float)q[k] * k_aan[k / 8] * k_aan[k % 8] * 8.0f);
        }
        uint8_t hdr[1024];
        e->header_bytes = (uint32_t)make_header(e, hdr);
        memcpy(e->bufs[B_HDR].map, hdr, e->header_bytes);
    }
    if (e->dirty_set) {
        VkDescriptorBufferInfo bi[NBIND];
        VkWriteDescriptorSet wr[NBIND];
        for (int i = 0; i < NBIND; i++) { /* binding i is buffer i */
            bi[i] = (VkDescriptorBufferInfo){.buffer = e->bufs[i].b, .offset = 0, .range = VK_WHOLE_SIZE};
            wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = e->set,
                                           .dstBinding = (uint32_t)i, .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bi[i]};
        }
        vkUpdateDescriptorSets(e->dev, NBIND, wr, 0, NULL);
        e->dirty_set = 0;
    }
    return RCANVAS_OK;
}

static void compute_barrier(VkCommandBuffer cb, VkAccessFlags dst) {
    rc_gpu_barrier(cb,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                   dst);
}

/* ---- the block-parallel path's recording ---- */

static void push(rc_gpu_jpeg *e, VkCommandBuffer cb, int pipe, const void *pc, uint32_t bytes) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipe[pipe]);
    vkCmdPushConstants(cb, e->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, bytes, pc);
}

/* One jpeg_bscan.comp pass: mode 0 local / 1 add; groups > 0 direct, else indirect at ctl byte `at`. */
static void bscan_pass(rc_gpu_jpeg *e, VkCommandBuffer cb, uint32_t mode, uint32_t in, uint32_t out, uint32_t aux,
                       uint32_t n, uint32_t dyn, uint32_t groups, VkDeviceSize at) {
    pc_bscan_t pc = {.mode = mode, .in_base = in, .out_base = out, .aux_base = aux, .n = n, .dyn = dyn,
                     .misc = e->sc_misc, .mask = dyn == 1 ? 0xFFu : 0xFFFFFFFFu}; /* c: low byte */
    push(e, cb, P_BSCAN, &pc, sizeof pc);
    if (groups) vkCmdDispatch(cb, groups, 1, 1);
    else vkCmdDispatchIndirect(cb, e->bufs[B_CTL].b, at);
    compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

/* Exclusive prefix sum of n values (n known here) at sc[in] into sc[out]: levels of 1024, only as many as needed. */
static void scan_static(rc_gpu_jpeg *e, VkCommandBuffer cb, uint32_t in, uint32_t out, uint32_t n) {
    uint32_t g0 = (n + 1023) / 1024, g1 = (g0 + 1023) / 1024;
    bscan_pass(e, cb, 0, in, out, e->sc_aux1, n, 0, g0, 0);
    if (g0 == 1) return;
    bscan_pass(e, cb, 0, e->sc_aux1, e->sc_aux1, e->sc_aux2, g0, 0, g1, 0);
    if (g1 > 1) {
        bscan_pass(e, cb, 0, e->sc_aux2, e->sc_aux2, e->sc_aux3, g1, 0, 1, 0);
        bscan_pass(e, cb, 1, 0, e->sc_aux1, e->sc_aux2, g0, 0, g1, 0);
    }
    bscan_pass(e, cb, 1, 0, out, e->sc_aux1, n, 0, g0, 0);
}

/* The same for the stuffing counts, whose number the GPU wrote to sc[misc]: all three levels, indirect. */
static void scan_dynamic(rc_gpu_jpeg *e, VkCommandBuffer cb, uint32_t in, uint32_t out) {
    bscan_pass(e, cb, 0, in, out, e->sc_aux1, 0, 1, 0, 32);
    bscan_pass(e, cb, 0, e->sc_aux1, e->sc_aux1, e->sc_aux2, 0, 2, 0, 48);
    bscan_pass(e, cb, 0, e->sc_aux2, e->sc_aux2, e->sc_aux3, 0, 3, 1, 0);
    bscan_pass(e, cb, 1, 0, e->sc_aux1, e->sc_aux2, 0, 2, 0, 48);
    bscan_pass(e, cb, 1, 0, out, e->sc_aux1, 0, 1, 0, 32);
}

static void place_pass(rc_gpu_jpeg *e, VkCommandBuffer cb, uint32_t mode, uint32_t groups, VkDeviceSize at) {
    uint32_t nb = e->mcus_x * e->mcus_y * e->bpm;
    pc_place_t pc = {.mode = mode, .n_blocks = nb, .n_iv = e->n_intervals,
                     .blocks_per_iv = e->mpi ? e->mpi * e->bpm : nb, .boff = e->sc_boff, .ioff = e->sc_ioff,
                     .misc = e->sc_misc, .cbase = e->sc_c, .coff = e->sc_coff, .cap_words = e->cap_words,
                     .header_bytes = e->header_bytes};
    push(e, cb, P_PLACE, &pc, sizeof pc);
    if (groups) vkCmdDispatch(cb, groups, 1, 1);
    else vkCmdDispatchIndirect(cb, e->bufs[B_CTL].b, at);
    compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT);
}

/* After the DCT: code the blocks (bit counts to boff), scan them, size the intervals and scan those, gather the
 * unstuffed stream U word by word (stuffing and marker counts), scan the counts, pack. Timestamps 3..6. */
static void record_blocks(rc_gpu_jpeg *e, VkCommandBuffer cb, int ts) {
    uint32_t nb = e->mcus_x * e->mcus_y * e->bpm;
    pc_blk_t pc_blk = {.n_blocks = nb, .blocks_per_mcu = e->bpm, .mcus_per_interval = e->mpi, .boff = e->sc_boff};
    push(e, cb, P_BLK, &pc_blk, sizeof pc_blk);
    vkCmdDispatch(cb, (nb + 63) / 64, 1, 1);
    compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, 3);

    scan_static(e, cb, e->sc_boff, e->sc_boff, nb + 1); /* sc[boff + nb] is 0 before: the total after */
    if (e->n_intervals > 1) { /* interval sizes and their offsets; without intervals mode 1 sets the one */
        place_pass(e, cb, 0, (e->n_intervals + 1 + 255) / 256, 0);
        scan_static(e, cb, e->sc_ioff, e->sc_ioff, e->n_intervals + 1);
    }
    place_pass(e, cb, 1, 1, 0);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, 4);

    place_pass(e, cb, 2, 0, 16);
    scan_dynamic(e, cb, e->sc_c, e->sc_coff);
    place_pass(e, cb, 3, 1, 0);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, 5);

    pc_bpack_t pc_pack = {.n_iv = e->n_intervals, .ioff = e->sc_ioff, .misc = e->sc_misc, .coff = e->sc_coff,
                          .cbase = e->sc_c, .header_bytes = e->header_bytes,
                          .out_words = (uint32_t)(e->bufs[B_OUT].cap / 4)};
    push(e, cb, P_BPACK, &pc_pack, sizeof pc_pack);
    vkCmdDispatchIndirect(cb, e->bufs[B_CTL].b, 4);
    compute_barrier(cb, VK_ACCESS_HOST_READ_BIT);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, e->queries, 6);
}

/* ---- the input: the app's image read in the DCT pass, or copied into B_PX first ---- */

/* Where the pixels come from, for record_stages. */
typedef struct input {
    VkImage image;          /* the app's image; VK_NULL_HANDLE: B_PX was filled (CPU bitmap) */
    VkImageLayout layout;   /* its layout before and after the encode */
    int direct;             /* read through e->view in the DCT pass; else copied into B_PX */
    int srgb;               /* direct: the view is _SRGB (the shader encodes the fetched linear values back) */
    int ring;               /* recorded into the readback ring's command buffer, whose first barrier already made
                               the app's writes visible to the copies and the DCT pass (both read in parallel) */
    int bgra;               /* B_PX: bytes B,G,R,A */
    VkImageLayout read_as;  /* direct: the layout the DCT pass reads it in (GENERAL or SHADER_READ_ONLY_OPTIMAL) */
} input;

static int is_srgb(VkFormat f) { return f == VK_FORMAT_R8G8B8A8_SRGB || f == VK_FORMAT_B8G8R8A8_SRGB; }
static int is_bgra(VkFormat f) { return f == VK_FORMAT_B8G8R8A8_UNORM || f == VK_FORMAT_B8G8R8A8_SRGB; }

/* Whether an image of this format and usage can be read in the DCT pass: VK_IMAGE_USAGE_SAMPLED_BIT, a format
 * that optimal tiling can sample (all four are required to), the pipeline made, not turned off for a benchmark. */
static int can_read_direct(rc_gpu_jpeg *e, VkFormat format, VkImageUsageFlags usage) {
    if (!e->have_image_input || e->input_copy || !(usage & VK_IMAGE_USAGE_SAMPLED_BIT)) return 0;
    int i = format == VK_FORMAT_R8G8B8A8_UNORM   ? 0
            : format == VK_FORMAT_B8G8R8A8_UNORM ? 1
            : format == VK_FORMAT_R8G8B8A8_SRGB  ? 2
            : format == VK_FORMAT_B8G8R8A8_SRGB  ? 3
                                                 : -1;
    return i >= 0 && e->sampled_ok[i];
}

int rc_gpu_jpeg_reads_image(rc_gpu_jpeg *e, VkFormat format, VkImageUsageFlags usage) {
    return e && can_read_direct(e, format, usage);
}

int rc_gpu_jpeg_read_directly(const rc_gpu_jpeg *e) { return e && e->direct; }
uint32_t rc_gpu_jpeg_subgroup_size(const rc_gpu_jpeg *e) { return e ? e->subgroup_size : 0; }

/* Makes the view of `image` and points binding 13 (BIND_IMAGE) at it (read in `read_as`). The previous view is destroyed here:
 * its encode is done (one at a time). Not while the descriptor set is in use. */
static int bind_view(rc_gpu_jpeg *e, VkImage image, VkFormat format, VkImageLayout read_as) {
    if (e->view) vkDestroyImageView(e->dev, e->view, NULL);
    e->view = VK_NULL_HANDLE;
    VkImageViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .image = image,
                                .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = format,
                                .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    VkResult r = vkCreateImageView(e->dev, &vi, NULL, &e->view);
    if (r != VK_SUCCESS) {
        e->view = VK_NULL_HANDLE;
        return vkfail(e, r, "vkCreateImageView");
    }
    VkDescriptorImageInfo ii = {.imageView = e->view, .imageLayout = read_as};
    VkWriteDescriptorSet wr = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = e->set, .dstBinding = BIND_IMAGE,
                               .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, .pImageInfo = &ii};
    vkUpdateDescriptorSets(e->dev, 1, &wr, 0, NULL);
    return RCANVAS_OK;
}

/* Chooses how `image` is read and prepares it: RCANVAS_OK and *in. A layout that the DCT pass cannot read in is
 * changed to SHADER_READ_ONLY_OPTIMAL around that pass; the copy reads in TRANSFER_SRC_OPTIMAL or GENERAL. */
static int input_of(rc_gpu_jpeg *e, VkImage image, VkFormat format, VkImageUsageFlags usage, VkImageLayout layout,
                    input *in) {
    memset(in, 0, sizeof(*in));
    in->image = image;
    in->layout = layout;
    in->bgra = is_bgra(format);
    e->direct = 0;
    if (!can_read_direct(e, format, usage)) return RCANVAS_OK;
    in->read_as = layout == VK_IMAGE_LAYOUT_GENERAL ? VK_IMAGE_LAYOUT_GENERAL : VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
    int r = bind_view(e, image, format, in->read_as); /* logged; the caller sized B_PX for the direct read */
    if (r) return r;
    in->direct = 1;
    in->srgb = is_srgb(format);
    e->direct = 1;
    return RCANVAS_OK;
}

static void image_barrier(VkCommandBuffer cb, VkImage image, VkImageLayout from, VkImageLayout to, VkAccessFlags src,
                          VkAccessFlags dst, VkPipelineStageFlags src_stage, VkPipelineStageFlags dst_stage) {
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = src, .dstAccessMask = dst,
                              .oldLayout = from, .newLayout = to, .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = image,
                              .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, NULL, 0, NULL, 1, &b);
}

/* The copy into B_PX (in->direct 0), with the layout changes around it: the image must be readable by a copy. */
static void record_copy(rc_gpu_jpeg *e, VkCommandBuffer cb, const input *in) {
    int move = in->layout != VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL && in->layout != VK_IMAGE_LAYOUT_GENERAL;
    VkImageLayout at = move ? VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL : in->layout;
    if (move)
        image_barrier(cb, in->image, in->layout, at, VK_ACCESS_MEMORY_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT,
                      VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT);
    else if (!in->ring) { /* earlier submissions' writes to the image before the copy reads it */
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL,
                             0, NULL);
    }
    VkBufferImageCopy region = {.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, .imageExtent = {e->w, e->h, 1}};
    vkCmdCopyImageToBuffer(cb, in->image, at, e->bufs[B_PX].b, 1, &region);
    if (move)
        image_barrier(cb, in->image, at, in->layout, VK_ACCESS_TRANSFER_READ_BIT,
                      VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                      VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
}

/* Records the stages. The pixels: B_PX (written just before, in the same command buffer), or the image itself
 * (in->direct). With ts, timestamps 1..6 go after the input copy (none: right after 0) and after each stage. */
static void record_stages(rc_gpu_jpeg *e, VkCommandBuffer cb, const input *in, int ts) {
    int move = in->direct && in->read_as != in->layout;
    if (move) /* the app's (or the copy's) writes before, the layout the DCT pass reads in */
        image_barrier(cb, in->image, in->layout, in->read_as, VK_ACCESS_MEMORY_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT,
                      VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    else if (in->direct && !in->ring) { /* the app's writes before the DCT pass's reads */
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_SHADER_READ_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                             NULL, 0, NULL);
    } else
        compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, 1);
    uint32_t total = e->mcus_x * e->mcus_y, blocks = total * e->bpm;
    pc_dct_t pc_dct = {.width = e->w, .height = e->h, .pitch_px = e->w, .mcus_x = e->mcus_x, .mcus_y = e->mcus_y,
                       .subsamp420 = e->ss == RCANVAS_SUBSAMP_420,
                       .bgra = (uint32_t)(in->direct ? in->srgb : in->bgra), .total_blocks = blocks};
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->layout, 0, 1, &e->set, 0, NULL);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipe[in->direct ? P_DCT_IMG : P_DCT]);
    vkCmdPushConstants(cb, e->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc_dct, &pc_dct);
    uint32_t groups = (blocks + 5) / 6; /* 6 blocks a group; 2-D past 32768 groups */
    vkCmdDispatch(cb, groups < 32768 ? groups : 32768, (groups + 32767) / 32768, 1);
    if (move) /* back to the app's layout once the DCT pass has read it */
        image_barrier(cb, in->image, in->read_as, in->layout, 0, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    else if (in->direct) /* the DCT pass's reads before the transfer stage: an app that orders its next writes to the
                          * image after rcanvas's copy (a barrier from TRANSFER) orders them after this read too */
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0,
                             NULL, 0, NULL);
    compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, 2);
    if (e->blocks) {
        record_blocks(e, cb, ts);
        return;
    }

    pc_huff_t pc_huff = {.total_mcus = total, .mcus_per_interval = e->mpi, .blocks_per_mcu = e->bpm,
                         .slot_words = e->slot_words, .n_intervals = e->n_intervals};
    push(e, cb, P_HUFF, &pc_huff, sizeof pc_huff);
    vkCmdDispatch(cb, (e->n_intervals + 63) / 64, 1, 1);
    compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, 3);

    pc_scan_t pc_scan = {.n_intervals = e->n_intervals, .header_bytes = e->header_bytes};
    push(e, cb, P_SCAN, &pc_scan, sizeof pc_scan);
    vkCmdDispatch(cb, 1, 1, 1);
    compute_barrier(cb, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, 4);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, 5); /* no place stage */

    pc_pack_t pc_pack = {.n_intervals = e->n_intervals, .header_bytes = e->header_bytes, .slot_words = e->slot_words};
    push(e, cb, P_PACK, &pc_pack, sizeof pc_pack);
    vkCmdDispatchIndirect(cb, e->bufs[B_CTL].b, 4);
    compute_barrier(cb, VK_ACCESS_HOST_READ_BIT);
    if (ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, e->queries, 6);
}

void rc_gpu_jpeg_finish(rc_gpu_jpeg *e) {
    if (e) atomic_store(&e->in_flight, 0);
}

int rc_gpu_jpeg_result(rc_gpu_jpeg *e, const uint8_t **jpeg, size_t *len) {
    uint32_t size = *(volatile uint32_t *)e->bufs[B_CTL].map;
    if (size == 0) {
        rc_log(e->log, RCANVAS_LOG_WARN, "gpu jpeg: an interval outgrew its slot; use the CPU encoder for this frame");
        return RCANVAS_ECODEC;
    }
    if (size < e->header_bytes + 2 || size > e->bufs[B_OUT].cap) return RCANVAS_ECODEC;
    *jpeg = e->bufs[B_OUT].map;
    *len = size;
    return RCANVAS_OK;
}

/* Waits for the encode's fence: polled (vkGetFenceStatus) for up to spin_us, then a sleeping vkWaitForFences. The
 * GPU's part takes 0.1–1 ms on a GPU, and a sleeping wait costs the wake-up on top (see docs/benchmarks.md); on a CPU
 * device (lavapipe: 10–1000 ms) the spin is a small share. A slow wait is not a lost device: the work is still
 * running and uses our buffers and command buffer, so returning then (it once counted as lost after 10 s) let the
 * next encode reset a pending command buffer and free its buffers: lavapipe on a loaded 2-core machine took over
 * 10 s for a 4K frame and the test crashed. It waits on, with a warning every 10 s; a hung GPU is the driver's to
 * report (VK_ERROR_DEVICE_LOST, which ends the wait). */
static VkResult wait_fence(rc_gpu_jpeg *e) {
    int64_t until = rc_now_us() + e->spin_us;
    for (;;) {
        VkResult r = vkGetFenceStatus(e->dev, e->fence);
        if (r != VK_NOT_READY || rc_now_us() >= until) {
            if (r != VK_NOT_READY) return r;
            break;
        }
    }
    for (int waited_s = 10;; waited_s += 10) {
        VkResult r = vkWaitForFences(e->dev, 1, &e->fence, VK_TRUE, 10ull * 1000 * 1000 * 1000);
        if (r != VK_TIMEOUT) return r;
        rc_log(e->log, RCANVAS_LOG_WARN, "gpu jpeg: an encode still runs after %d s (a slow or busy device)", waited_s);
    }
}

/* Records the input (a copy into B_PX, unless the DCT pass reads the image), the stages, submits once, waits,
 * returns the file. */
static int run(rc_gpu_jpeg *e, const input *in, const uint8_t **jpeg, size_t *len, rc_gpu_jpeg_times *times,
               int64_t t0) {
    VkCommandBuffer cb = e->cmd;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult vr = vkResetCommandBuffer(cb, 0);
    if (vr == VK_SUCCESS) vr = vkBeginCommandBuffer(cb, &bi);
    if (vr != VK_SUCCESS) return vkfail(e, vr, "vkBeginCommandBuffer");
    if (e->have_ts) {
        vkCmdResetQueryPool(cb, e->queries, 0, 7);
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, e->queries, 0);
    }
    if (in->image && !in->direct) record_copy(e, cb, in);
    if (!in->image) { /* a CPU bitmap, in B_STAGE */
        VkBufferCopy c = {.size = (VkDeviceSize)e->w * e->h * 4};
        vkCmdCopyBuffer(cb, e->bufs[B_STAGE].b, e->bufs[B_PX].b, 1, &c);
    }
    record_stages(e, cb, in, e->have_ts);
    vr = vkEndCommandBuffer(cb);
    if (vr == VK_SUCCESS) vr = vkResetFences(e->dev, 1, &e->fence);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
    e->used = 1;
    if (vr == VK_SUCCESS) vr = vkQueueSubmit(e->queue, 1, &si, e->fence);
    if (vr == VK_SUCCESS) vr = wait_fence(e);
    if (vr != VK_SUCCESS) return vkfail(e, vr, "encode submit/wait");
    int r = rc_gpu_jpeg_result(e, jpeg, len);
    if (r) return r;
    if (times) {
        memset(times, 0, sizeof(*times));
        uint64_t ts[7];
        if (e->have_ts && vkGetQueryPoolResults(e->dev, e->queries, 0, 7, sizeof ts, ts, sizeof ts[0],
                                                VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
            for (int i = 0; i < 6; i++) times->stage_ms[i] = (double)(ts[i + 1] - ts[i]) * e->ts_ns / 1e6;
            times->gpu_ms = (double)(ts[6] - ts[0]) * e->ts_ns / 1e6;
        }
        times->blocks = e->blocks;
        times->restart_mcus = e->mpi;
        times->direct = e->direct;
        times->subgroup_size = e->subgroup_size;
        times->wall_ms = (double)(rc_now_us() - t0) / 1000.0;
    }
    return RCANVAS_OK;
}

int rc_gpu_jpeg_record(rc_gpu_jpeg *e, VkCommandBuffer cb, VkImage image, VkFormat format, VkImageUsageFlags usage,
                       VkImageLayout layout, uint32_t w, uint32_t h, int quality, rcanvas_subsampling ss) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&e->in_flight, &expected, 1)) return RCANVAS_EBUSY;
    e->used = 1;
    input in;
    int direct = can_read_direct(e, format, usage);
    int r = prepare(e, w, h, quality, ss, direct ? 0 : (VkDeviceSize)w * h * 4);
    if (!r) r = input_of(e, image, format, usage, layout, &in);
    if (r) {
        atomic_store(&e->in_flight, 0);
        return r;
    }
    in.ring = 1;
    if (!in.direct) record_copy(e, cb, &in);
    record_stages(e, cb, &in, 0);
    return RCANVAS_OK;
}

int rc_gpu_jpeg_encode_image(rc_gpu_jpeg *e, VkImage image, VkFormat format, VkImageUsageFlags usage,
                             VkImageLayout layout, uint32_t w, uint32_t h, int quality, rcanvas_subsampling ss,
                             const uint8_t **jpeg, size_t *len, rc_gpu_jpeg_times *times) {
    if (!e || !image || !jpeg || !len) return RCANVAS_EINVAL;
    if (format != VK_FORMAT_R8G8B8A8_UNORM && format != VK_FORMAT_R8G8B8A8_SRGB && !is_bgra(format))
        return RCANVAS_EINVAL;
    int64_t t0 = rc_now_us();
    input in;
    int direct = can_read_direct(e, format, usage);
    int r = prepare(e, w, h, quality, ss, direct ? 0 : (VkDeviceSize)w * h * 4);
    if (!r) r = input_of(e, image, format, usage, layout, &in);
    return r ? r : run(e, &in, jpeg, len, times, t0);
}

int rc_gpu_jpeg_encode_cpu(rc_gpu_jpeg *e, const rc_image *img, int quality, rcanvas_subsampling ss,
                           const uint8_t **jpeg, size_t *len, rc_gpu_jpeg_times *times) {
    if (!e || !img || !img->pixels || !jpeg || !len || !rc_format_bpp(img->format) || img->pitch < (size_t)img->width * 4)
        return RCANVAS_EINVAL;
    int64_t t0 = rc_now_us();
    VkDeviceSize bytes = (VkDeviceSize)img->width * img->height * 4;
    int r = prepare(e, img->width, img->height, quality, ss, bytes);
    if (!r) r = buf_reserve(e, B_STAGE, bytes);
    if (!r && e->dirty_set) r = prepare(e, img->width, img->height, quality, ss, bytes); /* rebind a new buffer */
    if (r) return r;
    uint8_t *dst = e->bufs[B_STAGE].map;
    for (uint32_t y = 0; y < img->height; y++)
        memcpy(dst + (size_t)y * img->width * 4, img->pixels + y * img->pitch, (size_t)img->width * 4);
    input in = {.bgra = img->format == RCANVAS_FORMAT_BGRA8};
    e->direct = 0;
    return run(e, &in, jpeg, len, times, t0);
}

int rc_gpu_jpeg_debug_coefs(rc_gpu_jpeg *e, int32_t **coefs, uint32_t *blocks, uint32_t *mcus_per_interval) {
    uint32_t n = e->mcus_x * e->mcus_y * e->bpm;
    VkDeviceSize bytes = (VkDeviceSize)n * 64 * 4;
    int r = buf_reserve(e, B_STAGE, bytes);
    if (r) return r;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkResetCommandBuffer(e->cmd, 0);
    vkBeginCommandBuffer(e->cmd, &bi);
    VkBufferCopy c = {.size = bytes};
    vkCmdCopyBuffer(e->cmd, e->bufs[B_COEF].b, e->bufs[B_STAGE].b, 1, &c);
    compute_barrier(e->cmd, VK_ACCESS_HOST_READ_BIT);
    vkEndCommandBuffer(e->cmd);
    vkResetFences(e->dev, 1, &e->fence);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &e->cmd};
    e->used = 1;
    if (vkQueueSubmit(e->queue, 1, &si, e->fence) != VK_SUCCESS ||
        vkWaitForFences(e->dev, 1, &e->fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS)
        return RCANVAS_EVULKAN;
    *coefs = malloc(bytes);
    if (!*coefs) return RCANVAS_ENOMEM;
    memcpy(*coefs, e->bufs[B_STAGE].map, bytes);
    *blocks = n;
    *mcus_per_interval = e->mpi;
    return RCANVAS_OK;
}

/* ---- the codec interface ---- */

static int gpu_create(const rc_codec_type *type, rc_codec **out) {
    (void)type;
    (void)out;
    return RCANVAS_EINVAL; /* needs a Vulkan device: the readback ring makes it with rc_gpu_jpeg_new() */
}

/* A CPU image through the GPU (uploaded first); used by tools and tests. The server's GPU frames take the
 * asynchronous path instead (rc_gpu_jpeg_record inside the readback ring's command buffer). */
static int gpu_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out,
                      rc_encode_info *info) {
    (void)info;
    const uint8_t *jpeg;
    size_t len;
    int r = rc_gpu_jpeg_encode_cpu((rc_gpu_jpeg *)c, img, p->quality, p->subsampling, &jpeg, &len, NULL);
    return r ? r : rc_buf_append(out, jpeg, len);
}

static void gpu_destroy(rc_codec *c) { rc_gpu_jpeg_free((rc_gpu_jpeg *)c); }

const rc_codec_type rc_codec_jpeg_gpu = {
    .name = "jpeg-gpu", .wire_id = RCANVAS_CODEC_JPEG, .flags = RC_CODEC_INTRA | RC_CODEC_GPU,
    .create = gpu_create, .encode = gpu_encode, .request_keyframe = NULL, .destroy = gpu_destroy};

int rc_gpu_jpeg_configure(rc_gpu_jpeg *e, rc_gpu_jpeg_path path, uint32_t restart_mcus) {
    if (!e || (path != RC_GPU_JPEG_BLOCKS && path != RC_GPU_JPEG_INTERVALS) ||
        restart_mcus > (path == RC_GPU_JPEG_BLOCKS ? 65535u : RC_GPU_JPEG_MAX_MPI))
        return RCANVAS_EINVAL;
    e->path = path;
    e->restart_cfg = restart_mcus;
    return RCANVAS_OK;
}
