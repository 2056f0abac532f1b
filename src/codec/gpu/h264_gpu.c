/* SPDX-License-Identifier: MIT */
/*
 * h264_gpu.c — host side of the Vulkan compute H.264 encoder (see h264_gpu.h): buffers, the ten pipelines, the
 * passes' command buffers, the parameter sets, NAL framing (the rate control: h264_gpu_rate.c; the memory shared
 * with the shaders: h264_io.h).
 *
 * The choices, and why:
 *  - IDR pictures: one slice, coded in a wavefront (the "2D-wave" of Meenderinck et al., "Parallel
 *    Scalability of Video Decoders", J. Signal Process. Syst. 2009):
 *    a macroblock predicts from its neighbours on the left, above on the left, above and above on the right
 *    (8.3.1.2, 8.3.3), so step s codes the macroblocks with x + 2y = s at once, one dispatch a step (254 at
 *    1080p), each after the last. Each macroblock is Intra4x4 (8.3.1: nine directions per 4×4 block) or
 *    Intra16x16 (vertical, horizontal, DC or plane; chroma the same four), whichever costs less in SATD + lambda
 *    × mode bits, as x264 chooses: a plot's lines and a render's edges are what Intra4x4 is for, a render's
 *    gradients what the plane is for. (Slices per macroblock row, before, let the rows be coded in parallel
 *    without steps, but nothing could be predicted from above and each row cost a slice header.)
 *  - P pictures: one slice, too. Their inter macroblocks do not depend on a neighbour's reconstruction: they are
 *    coded at once, and the syntax that depends on neighbours (the vector predictors' medians of A, B, C; the
 *    P_Skip vector; nC from the left and above) is computed from their vectors and counts after the fact. A
 *    uniform pan is thus P_Skip where its residual vanishes. A macroblock is P_L0_16x16 or P_8x8 (four vectors: a
 *    zoom or a rotation moves its corners differently), and P pictures' scattered ±1 levels are decimated (JM's
 *    coefficient cost thresholds, as x264 applies them). Where no vector predicts well (an uncovered area, new
 *    content) the motion search makes a macroblock intra; those are coded after the inter ones, which they may
 *    predict from, in up to INTRA_STEPS steps of a wavefront over the intra ones only (h264_scan.comp's
 *    intra_wave): an empty step is an indirect dispatch of no workgroups.
 *  - Quarter-sample motion vectors with the standard's interpolation (8.4.2.2), searched on the GPU.
 *  - The deblocking filter (8.7) on from QP 16 (below it no edge can change): without it each picture's blocking
 *    is predicted into the next, and at low bitrates a pan lost quality picture after picture while x264's gained
 *    it. It runs in macroblock order, each edge reading the edges before, so it is mirrored exactly in the same
 *    wavefront as the IDR pictures (h264_deblock.comp), after the macroblocks: the intra prediction of the IDR
 *    pictures reads the samples before the filter. Only the next picture needs its result (the reference), and
 *    it is the longest stage of a P picture (a chain of 254 macroblock steps at 1080p), so it is a submission of
 *    its own after the bitstream's: the encode returns its picture when the bitstream is read back, while the
 *    filter still runs, and the next pass waits for it (settle) before anything reuses what it touches.
 *  - Planes one sample per uint: simple indexing in every stage; 4K costs 50 MB per plane set on the device.
 */
#include "codec/gpu/h264_gpu.h"

#include "codec/gpu/gpu_device.h"
#include "codec/gpu/h264_gpu_gate.h"
#include "codec/gpu/h264_gpu_rate.h"
#include "codec/gpu/h264_io.h"
#include "codec/nal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t k_yuv[] =
#include "h264_yuv.comp.inc"
    ;
static const uint32_t k_me[] = /* the fine motion search */
#include "h264_me.comp.inc"
    ;
static const uint32_t k_me_coarse[] = /* h264_me.comp's coarse search (RC_ME_COARSE) */
#include "h264_me_coarse.comp.inc"
    ;
static const uint32_t k_me_post[] = /* h264_me.comp's intra choice and adopt rounds (RC_ME_POST) */
#include "h264_me_post.comp.inc"
    ;
static const uint32_t k_mb[] =
#include "h264_mb.comp.inc"
    ;
static const uint32_t k_mb_intra[] = /* h264_mb.comp for IDR pictures (RC_INTRA): apart, each compiles smaller */
#include "h264_mb_intra.comp.inc"
    ;
static const uint32_t k_cavlc[] =
#include "h264_cavlc.comp.inc"
    ;
static const uint32_t k_scan[] =
#include "h264_scan.comp.inc"
    ;
static const uint32_t k_copy[] =
#include "h264_copy.comp.inc"
    ;
static const uint32_t k_deblock[] =
#include "h264_deblock.comp.inc"
    ;

enum { B_IN, B_SRC, B_RECA, B_RECB, B_QA, B_QB, B_MBI, B_LEV, B_BITS, B_OUT, B_CTL, B_HOST, B_PIC, B_DBG, B_STAGE, NBUF };
#define NBIND ((int)RC_H264_NBIND)
enum { P_YUV, P_ME, P_MB, P_CAVLC, P_SCAN, P_COPY, P_MB_INTRA, P_ME_COARSE, P_DEBLOCK, P_ME_POST, NPIPE };
#define NTS 8    /* the stage boundaries */
/* more queries within the stages (written at the stage's boundary where a picture skips the step: every query of
 * the pool is written): after the coarse motion search, the fine one, the intra choice and the intra wave's layout
 * (the adopt rounds follow), and the inter macroblocks (the intra steps follow) */
#define TS_COARSE NTS
#define TS_FINE (NTS + 1)
#define TS_CHOICE (NTS + 2)
#define TS_WAVE (NTS + 3)
#define TS_INTER (NTS + 4)
#define NTS_BODY (NTS + 5) /* the queries the head and body write */
#define TS_DEBLOCK NTS_BODY /* and the deblocking filter's submission: before it, */
#define TS_DEBLOCK_END (NTS_BODY + 1) /* and after it */
#define NQUERY (NTS_BODY + 2)
#define MAX_BYTES_PER_MB 2048u /* worst case of one macroblock's CAVLC: 384 levels of ≤ 28 bits and their tokens */

#define RC_H264_FIELD(name) uint32_t name;
typedef struct pc_t { RC_H264_PC(RC_H264_FIELD) } pc_t;     /* the push constants (h264_io.h) */
typedef struct pic_t { RC_H264_PIC(RC_H264_FIELD) } pic_t;  /* the picture's parameters, in B_PIC (h264_io.h) */
_Static_assert(sizeof(pc_t) <= 128, "push constants past the 128 bytes every Vulkan device has");
_Static_assert(sizeof(pic_t) % 4 == 0 && sizeof(pic_t) <= 65536, "vkCmdUpdateBuffer's limit");

/* The variants of a pass's recorded commands (body[parity][variant]): what the picture's kind and the tools it
 * runs change in the commands themselves; everything else a picture changes is in B_PIC. */
#define V_KEY 1u      /* an IDR picture */
#define V_NO_INTRA ME_NO_INTRA /* P pictures: no intra choice nor intra steps (4) */
#define V_NO_ADOPT ME_NO_ADOPT /* P pictures: no adopt rounds (8) */
#define NVARIANT 16

typedef rc_gpu_buf buf;

struct rc_gpu_h264 {
    rc_codec base; /* first: the codec "h264-gpu" (rc_codec_h264_gpu) */
    const rc_logger *log;
    VkPhysicalDevice phys;
    VkDevice dev;
    uint32_t family;
    VkQueue queue;
    pthread_mutex_t *qlock;
    rc_gpu_device *shared; /* made by the codec table's create(): the process-wide device, released at free */
    uint64_t from_buffer;  /* pictures the codec table's encode took from an image's device buffer (tests) */
    int pending;           /* a submission went in and its fence has not been seen signalled */
    int filter_pending;    /* ... the deblocking filter's (filter_fence) */
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe[NPIPE];
    VkDescriptorPool dpool;
    VkDescriptorSet set[2]; /* by the parity of the picture: which RECx/Qx is this picture's and which the reference */
    VkCommandPool cpool;
    VkCommandBuffer cmd; /* a pass's head, recorded each pass: the input's copy, the picture's parameters */
    /* and its body, recorded once per parity and variant (V_*) at a size and kept until the size or the
     * descriptor sets change: about 60 commands for a P picture and 520 for an IDR one (the wavefronts' steps),
     * whose recording took 0.2 and 0.6 ms of CPU a picture on the H100's driver */
    VkCommandBuffer body[2][NVARIANT];
    uint32_t body_ok[2]; /* bit v: body[p][v] holds this size's commands */
    VkCommandBuffer filter[2]; /* the deblocking filter of a picture of parity p, submitted after its body */
    uint32_t filter_ok;  /* bit p: filter[p] holds this size's commands */
    VkFence fence;       /* the head and body: the bitstream */
    VkFence filter_fence; /* the filter: the reference */
    VkQueryPool queries;
    int have_ts;
    double ts_ns;
    buf bufs[NBUF];
    int dirty;
    /* the stream */
    uint32_t w, h, mbw, mbh;
    int parity;       /* this picture writes REC/Q of this parity */
    int have_ref;     /* a picture was coded at this size: P pictures can follow */
    int want_key;
    uint32_t frame_num, idr_pic_id, since_key;
    rc_h264_rate rate; /* the rate control (h264_gpu_rate.h) */
    VkDeviceSize out_dirty; /* bytes of B_OUT that may be nonzero: the last pass's slices (all of it when new) */
    uint32_t me_flags; /* RCANVAS_GPU_H264_ME (benchmarks): "int" whole-pixel vectors only, "16x16" no P_8x8,
                        * "nointra" no intra macroblocks in P pictures, "noadopt" the fine search's vectors as they are
                        * (no h264_me adopt rounds), "adoptall" every adopt round looks at every macroblock and
                        * "adoptcount" the looks are counted (tests: rc_gpu_h264_info.adopt_looks);
                        * bits 8–15: the intra wave's steps (intra_steps) */
    uint32_t intra_steps; /* the most steps of a P picture's intra wave, 1..INTRA_STEPS (RCANVAS_GPU_H264_INTRA_STEPS,
                           * benchmarks) */
    int deblock_env;   /* RCANVAS_GPU_H264_DEBLOCK: 0 the deblocking filter off in every picture, 1 on in every
                        * one (from QP 16), −1 (unset) on unless the device is contended (h264_gpu_gate.h) */
    int gate_env;      /* RCANVAS_GPU_H264_GATE: −1 (unset) the gate decides, 0 "closed" (every picture as on a
                        * contended device), 1 "open" (never; RCANVAS_GPU_H264_DEBLOCK=1 still keeps the filter on) */
    rc_h264_gate gate;
    int deblocked;     /* the last pass ran the filter */
    int contended;     /* the last pass ran without the costly tools (the gate was closed) */
    uint64_t t[NTS_BODY]; /* the last pass's timestamps up to the bitstream (have_t: read) */
    double filter_ms;  /* the last pass's filter's GPU time once settled (0: it ran none, or no timestamps) */
    int have_t;
    int wave_rows;     /* the deblocking wave as one dispatch of rows (h264_deblock.comp), not a dispatch a step */
    double p_avg;      /* recent P pictures' RBSP bytes scaled to QP 26 (moving average): the scene-cut test */
    int p_avg_idr;     /* p_avg is the first IDR picture's, until the first P picture replaces it */
};

static int vkfail(rc_gpu_h264 *e, VkResult r, const char *what) {
    rc_log(e->log, RCANVAS_LOG_ERROR, "gpu h264: %s failed (VkResult %d)", what, (int)r);
    return r == VK_ERROR_DEVICE_LOST ? RCANVAS_EDEVICE_LOST : RCANVAS_EVULKAN;
}

static int is_host(int i) { return i == B_STAGE || i == B_CTL || i == B_HOST || i == B_DBG; }

/* Buffer i holds at least `need` bytes (grown, contents lost). Host buffers (B_STAGE: a CPU bitmap on its way in;
 * B_CTL, B_HOST, B_DBG: results) are mapped; B_HOST and B_DBG prefer host-cached memory (the CPU reads them), the
 * rest are device-local. */
static int buf_reserve(rc_gpu_h264 *e, int i, VkDeviceSize need) {
    buf *b = &e->bufs[i];
    if (b->cap >= need) return RCANVAS_OK;
    VkResult r = rc_gpu_buf_make(e->phys, e->dev, b, need,
                                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT | (i == B_CTL ? VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT : 0),
                                 is_host(i), i == B_HOST || i == B_DBG);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) return RCANVAS_EFRAME_SIZE;
    if (r != VK_SUCCESS) return vkfail(e, r, "buffer");
    if (i == B_OUT) e->out_dirty = need; /* new memory: anything in it */
    e->dirty = 1;
    return RCANVAS_OK;
}

int rc_gpu_h264_new(VkPhysicalDevice phys, VkDevice dev, uint32_t family, VkQueue queue, pthread_mutex_t *queue_lock,
                    const rc_logger *log, rc_gpu_h264 **out) {
    static const rc_logger quiet = {0};
    if (!out) return RCANVAS_EINVAL;
    *out = NULL;
    if (!phys || !dev || !queue) return RCANVAS_EINVAL;
    rc_gpu_h264 *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = &rc_codec_h264_gpu;
    e->log = log ? log : &quiet;
    e->phys = phys, e->dev = dev, e->family = family, e->queue = queue, e->qlock = queue_lock;
    rc_h264_rate_reset(&e->rate);
    const char *me = getenv("RCANVAS_GPU_H264_ME");
    if (me && !strcmp(me, "int")) e->me_flags |= ME_INT_ONLY;
    if (me && !strcmp(me, "16x16")) e->me_flags |= ME_NO_P8X8;
    if (me && !strcmp(me, "nointra")) e->me_flags |= ME_NO_INTRA;
    if (me && !strcmp(me, "noadopt")) e->me_flags |= ME_NO_ADOPT;
    if (me && !strcmp(me, "adoptall")) e->me_flags |= ME_ADOPT_ALL | ME_ADOPT_COUNT;
    if (me && !strcmp(me, "adoptcount")) e->me_flags |= ME_ADOPT_COUNT;
    const char *db = getenv("RCANVAS_GPU_H264_DEBLOCK");
    e->deblock_env = db && !strcmp(db, "0") ? 0 : db && !strcmp(db, "1") ? 1 : -1;
    const char *steps = getenv("RCANVAS_GPU_H264_INTRA_STEPS");
    long ns = steps ? strtol(steps, NULL, 10) : 0;
    e->intra_steps = ns >= 1 && ns <= (long)INTRA_STEPS ? (uint32_t)ns : INTRA_STEPS;
    e->me_flags |= e->intra_steps << ME_STEPS_SHIFT;
    const char *gate = getenv("RCANVAS_GPU_H264_GATE");
    e->gate_env = gate && !strcmp(gate, "closed") ? 0 : gate && !strcmp(gate, "open") ? 1 : -1;
    /* the deblocking wave as rows that wait on each other needs the rows above started first, which Vulkan does
     * not promise (h264_deblock.comp): on NVIDIA's own driver, whose workgroups start in order (the rows' wave is
     * decoder-exact there: test_h264_gpu on an H100, and 1.45 ms a 1080p picture against 2.1 ms for the steps;
     * Mesa's driver for the same GPUs is untried), else a dispatch a step; RCANVAS_GPU_H264_WAVE=rows or steps
     * chooses */
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(phys, &props);
    int nvidia = props.vendorID == 0x10DE;
    if (nvidia && props.apiVersion >= VK_API_VERSION_1_2) { /* the driver's id (Vulkan 1.2): the proprietary one */
        VkPhysicalDeviceDriverProperties dp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &dp};
        vkGetPhysicalDeviceProperties2(phys, &p2);
        nvidia = dp.driverID == VK_DRIVER_ID_NVIDIA_PROPRIETARY;
    }
    const char *wave = getenv("RCANVAS_GPU_H264_WAVE");
    e->wave_rows = wave && !strcmp(wave, "rows") ? 1 : wave && !strcmp(wave, "steps") ? 0 : nvidia;
    VkDescriptorSetLayoutBinding b[NBIND];
    for (int i = 0; i < NBIND; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = NBIND, .pBindings = b};
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(pc_t)};
    VkResult r = vkCreateDescriptorSetLayout(dev, &dli, NULL, &e->dsl);
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                      .pSetLayouts = &e->dsl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    if (r == VK_SUCCESS) r = vkCreatePipelineLayout(dev, &pli, NULL, &e->layout);
    static const struct { const uint32_t *code; size_t size; } k[NPIPE] = {
        {k_yuv, sizeof k_yuv}, {k_me, sizeof k_me}, {k_mb, sizeof k_mb},
        {k_cavlc, sizeof k_cavlc}, {k_scan, sizeof k_scan}, {k_copy, sizeof k_copy}, {k_mb_intra, sizeof k_mb_intra},
        {k_me_coarse, sizeof k_me_coarse}, {k_deblock, sizeof k_deblock}, {k_me_post, sizeof k_me_post}};
    _Static_assert(sizeof k / sizeof k[0] == NPIPE, "a shader for every pipeline");
    for (int i = 0; i < NPIPE && r == VK_SUCCESS; i++) r = rc_gpu_make_pipeline(dev, e->layout, k[i].code, k[i].size, &e->pipe[i]);
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 2 * NBIND};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 2,
                                      .poolSizeCount = 1, .pPoolSizes = &ps};
    if (r == VK_SUCCESS) r = vkCreateDescriptorPool(dev, &dpi, NULL, &e->dpool);
    VkDescriptorSetLayout two[2] = {e->dsl, e->dsl};
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = e->dpool, .descriptorSetCount = 2, .pSetLayouts = two};
    if (r == VK_SUCCESS) r = vkAllocateDescriptorSets(dev, &dai, e->set);
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = family};
    if (r == VK_SUCCESS) r = vkCreateCommandPool(dev, &cpi, NULL, &e->cpool);
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = e->cpool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    if (r == VK_SUCCESS) r = vkAllocateCommandBuffers(dev, &cai, &e->cmd);
    VkCommandBufferAllocateInfo bai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = e->cpool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 2 * NVARIANT};
    if (r == VK_SUCCESS) r = vkAllocateCommandBuffers(dev, &bai, &e->body[0][0]);
    bai.commandBufferCount = 2;
    if (r == VK_SUCCESS) r = vkAllocateCommandBuffers(dev, &bai, e->filter);
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (r == VK_SUCCESS) r = vkCreateFence(dev, &fci, NULL, &e->fence);
    if (r == VK_SUCCESS) r = vkCreateFence(dev, &fci, NULL, &e->filter_fence);
    e->ts_ns = props.limits.timestampPeriod;
    VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                 .queryCount = NQUERY};
    if (r == VK_SUCCESS) e->have_ts = vkCreateQueryPool(dev, &qpi, NULL, &e->queries) == VK_SUCCESS;
    if (r != VK_SUCCESS) {
        int rr = vkfail(e, r, "encoder setup");
        rc_gpu_h264_free(e);
        return rr;
    }
    *out = e;
    return RCANVAS_OK;
}

static VkResult wait_fence(rc_gpu_h264 *e);
static VkResult settle(rc_gpu_h264 *e);

void rc_gpu_h264_free(rc_gpu_h264 *e) {
    if (!e) return;
    if (e->filter_fence) settle(e);
    if (e->fence && e->pending) wait_fence(e); /* only a submission that went in signals the fence */
    for (int i = 0; i < NBUF; i++) rc_gpu_buf_free(e->dev, &e->bufs[i]);
    for (int i = 0; i < NPIPE; i++)
        if (e->pipe[i]) vkDestroyPipeline(e->dev, e->pipe[i], NULL);
    if (e->queries) vkDestroyQueryPool(e->dev, e->queries, NULL);
    if (e->fence) vkDestroyFence(e->dev, e->fence, NULL);
    if (e->filter_fence) vkDestroyFence(e->dev, e->filter_fence, NULL);
    if (e->cpool) vkDestroyCommandPool(e->dev, e->cpool, NULL);
    if (e->dpool) vkDestroyDescriptorPool(e->dev, e->dpool, NULL);
    if (e->layout) vkDestroyPipelineLayout(e->dev, e->layout, NULL);
    if (e->dsl) vkDestroyDescriptorSetLayout(e->dev, e->dsl, NULL);
    rc_gpu_device_release(e->shared);
    free(e);
}

void rc_gpu_h264_request_keyframe(rc_gpu_h264 *e) {
    if (e) e->want_key = 1;
}

/* ---- buffers for a picture size ---- */

static int vkfail(rc_gpu_h264 *e, VkResult r, const char *what);

static int prepare(rc_gpu_h264 *e, uint32_t w, uint32_t h) {
    if ((uint64_t)((w + 15) / 16) * ((h + 15) / 16) > RC_GPU_H264_MAX_MBS) return RCANVAS_EFRAME_SIZE;
    /* the last picture's filter may still run: it reads and writes the buffers this may replace */
    VkResult sr = settle(e);
    if (sr != VK_SUCCESS) {
        e->have_ref = 0;
        return vkfail(e, sr, "the deblocking filter's wait");
    }
    if (w != e->w || h != e->h) /* a new size starts with an IDR, and the rate control anew */
        e->have_ref = 0, e->p_avg = 0, e->p_avg_idr = 0, rc_h264_rate_reset(&e->rate);
    /* the recorded passes hold the size in their push constants (the dispatches, and w, h and the input's pitch): a
     * width of 1915 after 1920 is the same macroblocks but another pitch */
    if (w != e->w || h != e->h) e->body_ok[0] = e->body_ok[1] = 0, e->filter_ok = 0;
    e->w = w, e->h = h;
    e->mbw = (w + 15) / 16, e->mbh = (h + 15) / 16;
    VkDeviceSize n = (VkDeviceSize)e->mbw * e->mbh, lw = e->mbw * 16ull, lh = e->mbh * 16ull;
    VkDeviceSize planes = (lw * lh + lw * lh / 2) * 4, q = (lw / 4) * (lh / 4) * 4;
    VkDeviceSize outb = (n * MAX_BYTES_PER_MB + e->mbh * 64ull + 3) & ~3ull;
    int r = buf_reserve(e, B_IN, (VkDeviceSize)w * h * 4);
    if (!r) r = buf_reserve(e, B_SRC, planes);
    if (!r) r = buf_reserve(e, B_RECA, planes);
    if (!r) r = buf_reserve(e, B_RECB, planes);
    if (!r) r = buf_reserve(e, B_QA, q);
    if (!r) r = buf_reserve(e, B_QB, q);
    if (!r) r = buf_reserve(e, B_MBI, n * MBI_STRIDE * 4);
    if (!r) r = buf_reserve(e, B_LEV, n * LEV_STRIDE * 4);
    if (!r) r = buf_reserve(e, B_BITS, BITS_WORDS(n, e->mbh) * 4ull);
    if (!r) r = buf_reserve(e, B_OUT, outb);
    if (!r) r = buf_reserve(e, B_CTL, CTL_WORDS(e->mbh) * 4ull);
    if (!r) r = buf_reserve(e, B_HOST, outb);
    if (!r) r = buf_reserve(e, B_PIC, sizeof(pic_t));
    if (r) {
        e->w = e->h = 0;
        e->have_ref = 0;
        return r;
    }
    if (e->dirty) {
        for (int p = 0; p < 2; p++) {
            /* by binding (h264_io.h's RC_H264_BIND_*) */
            static const int map_even[NBIND] = {B_IN,  B_SRC, B_RECB, B_RECA, B_QA,   B_QB, B_MBI,
                                                B_LEV, B_BITS, B_OUT, B_CTL, B_HOST, B_PIC};
            static const int map_odd[NBIND] = {B_IN,  B_SRC, B_RECA, B_RECB, B_QB,   B_QA, B_MBI,
                                               B_LEV, B_BITS, B_OUT, B_CTL, B_HOST, B_PIC};
            const int *map = p ? map_odd : map_even;
            VkDescriptorBufferInfo bi[NBIND];
            VkWriteDescriptorSet wr[NBIND];
            for (int i = 0; i < NBIND; i++) {
                bi[i] = (VkDescriptorBufferInfo){.buffer = e->bufs[map[i]].b, .range = VK_WHOLE_SIZE};
                wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = e->set[p],
                                               .dstBinding = (uint32_t)i, .descriptorCount = 1,
                                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bi[i]};
            }
            vkUpdateDescriptorSets(e->dev, NBIND, wr, 0, NULL);
        }
        e->dirty = 0;
        e->body_ok[0] = e->body_ok[1] = 0; /* an update invalidates the command buffers that bound the sets */
        e->filter_ok = 0;
    }
    return RCANVAS_OK;
}

/* ---- parameter sets and NAL framing ---- */

typedef struct bw {
    uint8_t b[128];
    size_t bits;
} bw;
static void bw_put(bw *w, uint32_t v, int n) {
    for (int i = n - 1; i >= 0; i--, w->bits++)
        if ((v >> i) & 1) w->b[w->bits >> 3] |= (uint8_t)(0x80 >> (w->bits & 7));
}
static void bw_ue(bw *w, uint32_t k) {
    int m = 0;
    while ((k + 1) >> (m + 1)) m++;
    bw_put(w, 0, m);
    bw_put(w, k + 1, m + 1);
}
static void bw_se(bw *w, int v) { bw_ue(w, v > 0 ? 2u * (uint32_t)v - 1 : 2u * (uint32_t)-v); }
static void bw_trailing(bw *w) {
    bw_put(w, 1, 1);
    while (w->bits & 7) w->bits++;
}

/* Appends a NAL unit: start code, header, the RBSP with emulation prevention bytes (codec/nal.h). */
static int put_nal(rc_buf *out, uint8_t header, const uint8_t *rbsp, size_t n) {
    if (rc_buf_reserve(out, out->len + 5 + RC_NAL_ESCAPED_MAX(n))) return RCANVAS_ENOMEM;
    uint8_t *o = rc_buf_data(out) + out->len;
    o[0] = 0, o[1] = 0, o[2] = 0, o[3] = 1, o[4] = header;
    out->len += 5 + rc_nal_escape(o + 5, rbsp, n);
    return RCANVAS_OK;
}

/* A P picture of P_Skip macroblocks only: one slice whose data is a single mb_skip_run over the picture (7.3.4).
 * A P_Skip macroblock's vector is the predicted one, which is zero where the left or upper neighbour is missing or
 * is itself a zero vector to reference 0 (8.4.1.1); so, from the first macroblock on, every vector is zero and the
 * decoder repeats the reference picture exactly (no residual, and no edge to filter: deblocking off). The encoder's
 * reference stays as it is too: no GPU pass, the parity not flipped. About 10 bytes with the start code (11 at
 * 320×176, where the skip run is short). */
static int put_skip_picture(const rc_gpu_h264 *e, rc_buf *out, int qp) {
    bw s = {{0}, 0};
    bw_ue(&s, 0);                     /* first_mb_in_slice */
    bw_ue(&s, 5);                     /* slice_type P, as the GPU's P slices */
    bw_ue(&s, 0);                     /* pic_parameter_set_id */
    bw_put(&s, e->frame_num & 15, 4); /* frame_num (log2_max_frame_num 4) */
    bw_put(&s, 0, 1);                 /* num_ref_idx_active_override_flag */
    bw_put(&s, 0, 1);                 /* ref_pic_list_modification_flag_l0 */
    bw_put(&s, 0, 1);                 /* adaptive_ref_pic_marking_mode_flag */
    bw_se(&s, qp - 26);               /* slice_qp_delta (nothing is quantized) */
    bw_ue(&s, 1);                     /* disable_deblocking_filter_idc */
    bw_ue(&s, e->mbw * e->mbh);       /* mb_skip_run: every macroblock */
    bw_trailing(&s);
    return put_nal(out, 0x41, s.b, s.bits / 8);
}

/* The smallest level (Table A-1) whose MaxFS and MaxMBPS (at 60 pictures a second) hold this size, and whose
 * frame-size rule of A.3.1 (each side at most √(8·MaxFS) macroblocks) too; 3.1 at least, whose vertical vector
 * range (±512 pixels) the motion search keeps to. */
static int level_idc(uint32_t mbw, uint32_t mbh) {
    uint32_t mbs = mbw * mbh;
    static const struct { int idc; uint32_t fs, mbps; } t[] = {
        {31, 3600, 108000}, {32, 5120, 216000}, {40, 8192, 245760}, {42, 8704, 522240},
        {50, 22080, 589824}, {51, 36864, 983040}, {52, 36864, 2073600}, {60, 139264, 4177920}, {62, 139264, 16711680}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (mbs <= t[i].fs && mbs * 60 <= t[i].mbps && mbw * mbw <= 8 * t[i].fs && mbh * mbh <= 8 * t[i].fs)
            return t[i].idc;
    return 62;
}

static int put_parameter_sets(rc_gpu_h264 *e, rc_buf *out) {
    bw s = {{0}, 0};
    bw_put(&s, 66, 8);         /* profile_idc: Baseline */
    bw_put(&s, 0xC0, 8);       /* constraint_set0_flag, constraint_set1_flag: Constrained Baseline */
    bw_put(&s, (uint32_t)level_idc(e->mbw, e->mbh), 8);
    bw_ue(&s, 0);              /* seq_parameter_set_id */
    bw_ue(&s, 0);              /* log2_max_frame_num_minus4 */
    bw_ue(&s, 2);              /* pic_order_cnt_type 2: output order is decoding order */
    bw_ue(&s, 1);              /* max_num_ref_frames */
    bw_put(&s, 0, 1);          /* gaps_in_frame_num_value_allowed_flag */
    bw_ue(&s, e->mbw - 1);
    bw_ue(&s, e->mbh - 1);
    bw_put(&s, 1, 1);          /* frame_mbs_only_flag */
    bw_put(&s, 1, 1);          /* direct_8x8_inference_flag */
    uint32_t cr = (e->mbw * 16 - e->w) / 2, cb = (e->mbh * 16 - e->h) / 2; /* CropUnitX = CropUnitY = 2 */
    bw_put(&s, cr || cb, 1);   /* frame_cropping_flag */
    if (cr || cb) {
        bw_ue(&s, 0);
        bw_ue(&s, cr);
        bw_ue(&s, 0);
        bw_ue(&s, cb);
    }
    bw_put(&s, 1, 1);          /* vui_parameters_present_flag */
    bw_put(&s, 0, 1);          /* aspect_ratio_info_present_flag */
    bw_put(&s, 0, 1);          /* overscan_info_present_flag */
    bw_put(&s, 1, 1);          /* video_signal_type_present_flag: what h264_yuv.comp made — */
    bw_put(&s, 5, 3);          /*   video_format unspecified */
    bw_put(&s, 0, 1);          /*   limited range */
    bw_put(&s, 1, 1);          /*   colour_description_present_flag */
    bw_put(&s, 6, 8);          /*   BT.601 (SMPTE 170M) primaries, */
    bw_put(&s, 6, 8);          /*   transfer, */
    bw_put(&s, 6, 8);          /*   and matrix, as rc_codec_h264 signals */
    bw_put(&s, 0, 1);          /* chroma_loc_info_present_flag */
    bw_put(&s, 0, 1);          /* timing_info_present_flag */
    bw_put(&s, 0, 1);          /* nal_hrd_parameters_present_flag */
    bw_put(&s, 0, 1);          /* vcl_hrd_parameters_present_flag */
    bw_put(&s, 0, 1);          /* pic_struct_present_flag */
    bw_put(&s, 1, 1);          /* bitstream_restriction_flag: */
    bw_put(&s, 1, 1);          /*   motion_vectors_over_pic_boundaries_flag */
    bw_ue(&s, 0);              /*   max_bytes_per_pic_denom */
    bw_ue(&s, 0);              /*   max_bits_per_mb_denom */
    bw_ue(&s, 15);             /*   log2_max_mv_length_horizontal */
    bw_ue(&s, 15);             /*   log2_max_mv_length_vertical */
    bw_ue(&s, 0);              /*   max_num_reorder_frames: each picture is shown when decoded */
    bw_ue(&s, 1);              /*   max_dec_frame_buffering */
    bw_trailing(&s);
    bw p = {{0}, 0};
    bw_ue(&p, 0);              /* pic_parameter_set_id */
    bw_ue(&p, 0);              /* seq_parameter_set_id */
    bw_put(&p, 0, 1);          /* entropy_coding_mode_flag: CAVLC */
    bw_put(&p, 0, 1);          /* bottom_field_pic_order_in_frame_present_flag */
    bw_ue(&p, 0);              /* num_slice_groups_minus1 */
    bw_ue(&p, 0);              /* num_ref_idx_l0_default_active_minus1 */
    bw_ue(&p, 0);              /* num_ref_idx_l1_default_active_minus1 */
    bw_put(&p, 0, 1);          /* weighted_pred_flag */
    bw_put(&p, 0, 2);          /* weighted_bipred_idc */
    bw_ue(&p, 0);              /* pic_init_qp_minus26 (se 0) */
    bw_ue(&p, 0);              /* pic_init_qs_minus26 */
    bw_ue(&p, 0);              /* chroma_qp_index_offset */
    bw_put(&p, 1, 1);          /* deblocking_filter_control_present_flag */
    bw_put(&p, 0, 1);          /* constrained_intra_pred_flag */
    bw_put(&p, 0, 1);          /* redundant_pic_cnt_present_flag */
    bw_trailing(&p);
    int r = put_nal(out, 0x67, s.b, s.bits / 8);
    return r ? r : put_nal(out, 0x68, p.b, p.bits / 8);
}

/* Table 8-15: QPc of qPI (chroma_qp_index_offset 0). */
static uint32_t chroma_qp(int qp) {
    static const uint8_t t[22] = {29, 30, 31, 32, 32, 33, 34, 34, 35, 35, 36, 36, 37, 37, 37, 38, 38, 38, 39, 39, 39, 39};
    return (uint32_t)(qp < 30 ? qp : t[qp - 30]);
}

/* ---- one picture ---- */

static void cbarrier(VkCommandBuffer cb) {
    rc_gpu_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

static void stage(rc_gpu_h264 *e, VkCommandBuffer cb, int pipe, const pc_t *pc, uint32_t gx, uint32_t gy) {
    rc_gpu_dispatch(cb, e->layout, e->pipe[pipe], pc, sizeof *pc, gx, gy);
}
static void ts(rc_gpu_h264 *e, VkCommandBuffer cb, uint32_t i) {
    if (e->have_ts) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, e->queries, i);
}

/* The picture's input: a CPU bitmap in B_STAGE, or an image. */
typedef struct input {
    VkImage image; /* VK_NULL_HANDLE: buf, or B_STAGE */
    VkImageLayout layout;
    VkBuffer buf;  /* a buffer on the encoder's device: rows of w × 4 bytes at offset + y × pitch */
    VkDeviceSize offset, pitch;
} input;

/* The wavefront of IDR pictures and of the deblocking filter: step s holds the macroblocks with x + 2y = s
 * (h264_common.glsl's wave_mb), wave_steps(e) steps, wave_width(e, s) workgroups in step s. */
static uint32_t wave_steps(const rc_gpu_h264 *e) { return e->mbw + 2 * (e->mbh - 1); }
static uint32_t wave_width(const rc_gpu_h264 *e, uint32_t s) {
    uint32_t ylo = s + 1 > e->mbw ? (s + 2 - e->mbw) / 2 : 0, yhi = s / 2 < e->mbh - 1 ? s / 2 : e->mbh - 1;
    return yhi - ylo + 1;
}

/* Records the wavefront with `pipe` bound: a dispatch a step, each after the last, the step in pc->pass. */
static void record_wavefront(rc_gpu_h264 *e, VkCommandBuffer cb, int pipe, pc_t *pc) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipe[pipe]);
    for (uint32_t s = 0; s < wave_steps(e); s++) {
        pc->pass = s;
        vkCmdPushConstants(cb, e->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *pc, pc);
        vkCmdDispatch(cb, wave_width(e, s), 1, 1);
        if (s + 1 < wave_steps(e)) cbarrier(cb);
    }
}

/* The head of a pass, recorded each pass into e->cmd: the timestamps' reset, the input into B_IN, the clear of
 * B_OUT and the picture's parameters into B_PIC. The body (record_body) follows it in the same submission. */
static void record_head(rc_gpu_h264 *e, VkCommandBuffer cb, const pic_t *pic, const input *in) {
    if (e->have_ts) vkCmdResetQueryPool(cb, e->queries, 0, NQUERY); /* the last filter's were read (settle) */
    ts(e, cb, 0);
    if (in->image) { /* after every earlier command's writes to it (the app rendered it) */
        VkImageMemoryBarrier ib = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                                   .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT, .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
                                   .oldLayout = in->layout, .newLayout = in->layout,
                                   .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                   .image = in->image,
                                   .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL,
                             1, &ib);
        VkBufferImageCopy r = {.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                               .imageExtent = {e->w, e->h, 1}};
        vkCmdCopyImageToBuffer(cb, in->image, in->layout, e->bufs[B_IN].b, 1, &r);
    } else if (in->buf) { /* written by another submission, whose fence the caller saw signalled */
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT};
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL,
                             0, NULL);
        VkDeviceSize row = (VkDeviceSize)e->w * 4;
        if (in->pitch == row) {
            VkBufferCopy c = {.srcOffset = in->offset, .size = row * e->h};
            vkCmdCopyBuffer(cb, in->buf, e->bufs[B_IN].b, 1, &c);
        } else { /* a region a row, in batches */
            VkBufferCopy c[64];
            for (uint32_t y0 = 0; y0 < e->h; y0 += 64) {
                uint32_t rows = e->h - y0 < 64 ? e->h - y0 : 64;
                for (uint32_t k = 0; k < rows; k++)
                    c[k] = (VkBufferCopy){.srcOffset = in->offset + (y0 + k) * in->pitch, .dstOffset = (y0 + k) * row,
                                          .size = row};
                vkCmdCopyBuffer(cb, in->buf, e->bufs[B_IN].b, rows, c);
            }
        }
    } else {
        VkBufferCopy c = {.size = (VkDeviceSize)e->w * e->h * 4};
        vkCmdCopyBuffer(cb, e->bufs[B_STAGE].b, e->bufs[B_IN].b, 1, &c);
    }
    /* the CAVLC pass ORs its bits into zeros: clear what the last pass wrote (not the whole worst-case buffer:
     * 66 MB at 4K) */
    VkDeviceSize clear = (e->out_dirty + 3) & ~(VkDeviceSize)3;
    if (clear > e->bufs[B_OUT].cap) clear = e->bufs[B_OUT].cap;
    if (clear) vkCmdFillBuffer(cb, e->bufs[B_OUT].b, 0, clear, 0);
    /* after the last pass's reads of B_PIC (a transfer waits for nothing by itself) */
    VkMemoryBarrier war = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &war, 0, NULL, 0,
                         NULL);
    vkCmdUpdateBuffer(cb, e->bufs[B_PIC].b, 0, sizeof *pic, pic);
}

/* The body of a pass (the stages, each after the last), for pictures of parity p and variant v (V_*) at the
 * current size, recorded into e->body[p][v]: everything in it is fixed by the size, the parity and the variant
 * (per-dispatch values in push constants, the picture's in B_PIC), so one recording serves every such picture. */
static VkResult record_body(rc_gpu_h264 *e, int p, uint32_t v) {
    VkCommandBuffer cb = e->body[p][v];
    e->body_ok[p] &= ~(1u << v); /* none valid until the recording ends well */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult vr = vkResetCommandBuffer(cb, 0);
    if (vr == VK_SUCCESS) vr = vkBeginCommandBuffer(cb, &bi);
    if (vr != VK_SUCCESS) return vr;
    uint32_t n = e->mbw * e->mbh;
    int key = (v & V_KEY) != 0;
    pc_t pc_ = {.mbw = e->mbw, .mbh = e->mbh, .w = e->w, .h = e->h, .in_pitch = e->w}, *pc = &pc_;
    rc_gpu_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->layout, 0, 1, &e->set[p], 0, NULL);
    ts(e, cb, 1);
    stage(e, cb, P_YUV, pc, (e->mbw * 4 + 7) / 8, (e->mbh * 4 + 7) / 8);
    cbarrier(cb);
    ts(e, cb, 2);
    if (key) { /* no motion search */
        ts(e, cb, TS_COARSE);
        ts(e, cb, TS_FINE);
        ts(e, cb, TS_CHOICE);
        ts(e, cb, TS_WAVE);
    } else {
        /* the coarse search, then the fine one (which reads the neighbours' coarse vectors) */
        stage(e, cb, P_ME_COARSE, pc, e->mbw, e->mbh);
        cbarrier(cb);
        ts(e, cb, TS_COARSE);
        pc->pass = 0;
        stage(e, cb, P_ME, pc, e->mbw, e->mbh);
        cbarrier(cb);
        ts(e, cb, TS_FINE);
        if (!(v & V_NO_INTRA)) { /* which macroblocks are better intra (h264_me's intra_choice) */
            pc->pass = ME_INTRA_CHOICE;
            stage(e, cb, P_ME_POST, pc, e->mbw, e->mbh);
            cbarrier(cb);
        }
        ts(e, cb, TS_CHOICE);
        /* the intra macroblocks' steps, and their indirect dispatches (h264_scan.comp's intra_wave): before the
         * adopt rounds, which then see the candidates it coded inter as inter */
        pc->pass = SCAN_INTRA_WAVE;
        stage(e, cb, P_SCAN, pc, 1, 1);
        rc_gpu_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT);
        ts(e, cb, TS_WAVE);
        /* the vectors the predictors make, where they cost no more (h264_me's adopt): each round settles the field
         * further (a 640×360 rotation against x264 superfast at 60 frames: 1.57× its bits without, 1.39, 1.33 and
         * 1.29× after one, two and three rounds) */
        uint32_t rounds = (v & V_NO_ADOPT) ? 0 : ME_ADOPT_ROUNDS;
        for (uint32_t c = 0; c < 4 * rounds; c++) {
            pc->pass = ME_ADOPT + c;
            stage(e, cb, P_ME_POST, pc, (e->mbw + 3) / 4, e->mbh);
            cbarrier(cb);
        }
    }
    ts(e, cb, 3);
    if (key) { /* the wavefront: step s codes the macroblocks with x + 2y = s */
        record_wavefront(e, cb, P_MB_INTRA, pc);
        ts(e, cb, TS_INTER);
    } else {
        stage(e, cb, P_MB, pc, e->mbw, e->mbh);
        cbarrier(cb);
        ts(e, cb, TS_INTER);
        /* then the intra macroblocks, step by step (an empty step is a dispatch of no workgroups) */
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipe[P_MB_INTRA]);
        uint32_t steps = (v & V_NO_INTRA) ? 0 : e->intra_steps;
        for (uint32_t k = 0; k < steps; k++) {
            pc->pass = k;
            vkCmdPushConstants(cb, e->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *pc, pc);
            vkCmdDispatchIndirect(cb, e->bufs[B_CTL].b, CTL_STEP(e->mbh, (VkDeviceSize)k) * 4);
            if (k + 1 < steps) cbarrier(cb);
        }
    }
    cbarrier(cb);
    if (!key) { /* the mb_skip_run of each macroblock */
        pc->pass = SCAN_SKIP_RUNS;
        stage(e, cb, P_SCAN, pc, 1, 1);
        cbarrier(cb);
    }
    ts(e, cb, 4);
    pc->pass = 0;
    stage(e, cb, P_CAVLC, pc, (n + 63) / 64, 1);
    cbarrier(cb);
    ts(e, cb, 5);
    stage(e, cb, P_SCAN, pc, 1, 1);
    cbarrier(cb);
    pc->pass = 1;
    stage(e, cb, P_CAVLC, pc, (n + 63) / 64, 1);
    rc_gpu_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT);
    ts(e, cb, 6);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipe[P_COPY]);
    vkCmdPushConstants(cb, e->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *pc, pc);
    vkCmdDispatchIndirect(cb, e->bufs[B_CTL].b, CTL_COPY_DISPATCH * 4);
    rc_gpu_barrier(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    ts(e, cb, 7);
    vr = vkEndCommandBuffer(cb);
    if (vr == VK_SUCCESS) e->body_ok[p] |= 1u << v;
    return vr;
}

/* The deblocking filter of a picture of parity p (after its body, in a submission of its own), recorded into
 * e->filter[p]: the rows' progress counters cleared (the row wave), every edge's boundary strength, then the wave. */
static VkResult record_filter(rc_gpu_h264 *e, int p) {
    VkCommandBuffer cb = e->filter[p];
    e->filter_ok &= ~(1u << p);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult vr = vkResetCommandBuffer(cb, 0);
    if (vr == VK_SUCCESS) vr = vkBeginCommandBuffer(cb, &bi);
    if (vr != VK_SUCCESS) return vr;
    pc_t pc_ = {.mbw = e->mbw, .mbh = e->mbh, .w = e->w, .h = e->h, .in_pitch = e->w}, *pc = &pc_;
    /* after the body's stages (the macroblocks' reconstruction, their types, levels and vectors) */
    rc_gpu_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->layout, 0, 1, &e->set[p], 0, NULL);
    ts(e, cb, TS_DEBLOCK);
    if (e->wave_rows) { /* the rows' progress counters */
        vkCmdFillBuffer(cb, e->bufs[B_BITS].b, BITS_ROWS((VkDeviceSize)e->mbw * e->mbh) * 4, (VkDeviceSize)e->mbh * 4, 0);
        cbarrier(cb);
    }
    /* every edge's boundary strength at once, off the wave's critical path (h264_deblock.comp) */
    pc->pass = DEBLOCK_STRENGTHS;
    stage(e, cb, P_DEBLOCK, pc, e->mbw, e->mbh);
    cbarrier(cb);
    if (e->wave_rows) { /* one dispatch, a workgroup a row (h264_deblock.comp) */
        pc->pass = DEBLOCK_ROWS;
        stage(e, cb, P_DEBLOCK, pc, e->mbh, 1);
    } else { /* the same wavefront as the IDR pictures' (h264_deblock.comp says why) */
        record_wavefront(e, cb, P_DEBLOCK, pc);
    }
    ts(e, cb, TS_DEBLOCK_END);
    vr = vkEndCommandBuffer(cb);
    if (vr == VK_SUCCESS) e->filter_ok |= 1u << p;
    return vr;
}

/* Waits for `fence` (its submission went in: *pending), in 10 s steps with a warning each (a slow or busy device is
 * not a lost one; a hung device ends the wait with VK_ERROR_DEVICE_LOST). */
static VkResult wait_on(rc_gpu_h264 *e, VkFence fence, int *pending, const char *what) {
    for (int waited_s = 10;; waited_s += 10) {
        VkResult r = vkWaitForFences(e->dev, 1, &fence, VK_TRUE, 10ull * 1000 * 1000 * 1000);
        if (r != VK_TIMEOUT) {
            if (r == VK_SUCCESS || r == VK_ERROR_DEVICE_LOST) *pending = 0;
            return r;
        }
        rc_log(e->log, RCANVAS_LOG_WARN, "gpu h264: %s still runs after %d s (a slow or busy device)", what, waited_s);
    }
}

static VkResult wait_fence(rc_gpu_h264 *e) { return wait_on(e, e->fence, &e->pending, "a picture"); }

/* Waits for the last picture's deblocking filter, if one is in flight, and reads its time. Before anything that
 * touches what it reads or writes: the next pass (its head resets the filter's queries; a body or filter recorded
 * again, a fence reused), new buffers, the reconstruction read back. */
static VkResult settle(rc_gpu_h264 *e) {
    if (!e->filter_pending) return VK_SUCCESS;
    VkResult r = wait_on(e, e->filter_fence, &e->filter_pending, "a picture's deblocking filter");
    uint64_t t[2];
    if (r == VK_SUCCESS && e->have_ts &&
        vkGetQueryPoolResults(e->dev, e->queries, TS_DEBLOCK, 2, sizeof t, t, sizeof t[0], VK_QUERY_RESULT_64_BIT) ==
            VK_SUCCESS)
        e->filter_ms = (double)(t[1] - t[0]) * e->ts_ns / 1e6;
    return r;
}

/* Submits `n` command buffers (e->cmd, being recorded, first) with `fence`, under the queue's lock. */
static VkResult submit(rc_gpu_h264 *e, const VkCommandBuffer *cbs, uint32_t n, VkFence fence) {
    VkResult vr = vkResetFences(e->dev, 1, &fence);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = n, .pCommandBuffers = cbs};
    if (vr == VK_SUCCESS) {
        if (e->qlock) pthread_mutex_lock(e->qlock);
        vr = vkQueueSubmit(e->queue, 1, &si, fence);
        if (e->qlock) pthread_mutex_unlock(e->qlock);
    }
    return vr;
}

/* Submits e->cmd (being recorded) and then `body` where there is one, and waits. */
static VkResult submit_wait(rc_gpu_h264 *e, VkCommandBuffer body) {
    VkResult vr = vkEndCommandBuffer(e->cmd);
    VkCommandBuffer two[2] = {e->cmd, body};
    if (vr == VK_SUCCESS) vr = submit(e, two, body ? 2 : 1, e->fence);
    if (vr == VK_SUCCESS) {
        e->pending = 1;
        vr = wait_fence(e);
    }
    return vr;
}

/* One GPU pass over the picture in `in` as an IDR (key) or P picture at qp: records, submits, waits. The slices'
 * RBSPs are then in B_HOST (their offsets in B_CTL). */
static int gpu_pass(rc_gpu_h264 *e, const input *in, int bgra, int key, int qp) {
    /* the costly tools (the filter, intra macroblocks in P pictures, the adopt rounds) unless the device is
     * contended (h264_gpu_gate.h) */
    int full = e->gate_env == -1 ? rc_h264_gate_on(&e->gate, rc_now_us()) : e->gate_env;
    pic_t pic = {.qp = (uint32_t)qp, .qpc = chroma_qp(qp), .intra = (uint32_t)key,
                 .frame_num = key ? 0 : e->frame_num, .idr_pic_id = e->idr_pic_id, .bgra = (uint32_t)bgra,
                 .lambda = (uint32_t)lround(fmax(1.0, 0.85 * pow(2.0, (qp - 12) / 6.0))),
                 .me_flags = e->me_flags | (full ? 0u : ME_NO_INTRA | ME_NO_ADOPT),
                 /* below QP 16 alpha (Table 8-16) is 0 for luma and chroma: no edge would be filtered */
                 .deblock = e->deblock_env != 0 && qp >= 16 && (e->deblock_env == 1 || full)};
    uint32_t v = key ? V_KEY : pic.me_flags & (V_NO_INTRA | V_NO_ADOPT);
    VkResult vr = settle(e); /* a pass before this one (a retried or re-coded picture) */
    if (vr != VK_SUCCESS) {
        e->have_ref = 0;
        return vkfail(e, vr, "the deblocking filter's wait");
    }
    if (!(e->body_ok[e->parity] & (1u << v)) && (vr = record_body(e, e->parity, v)) != VK_SUCCESS)
        return vkfail(e, vr, "recording a pass");
    if (pic.deblock && !(e->filter_ok & (1u << e->parity)) && (vr = record_filter(e, e->parity)) != VK_SUCCESS)
        return vkfail(e, vr, "recording the deblocking filter");
    e->filter_ms = 0; /* until this pass's filter, if it runs one, is settled (the last one's was read above) */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vr = vkResetCommandBuffer(e->cmd, 0);
    if (vr == VK_SUCCESS) vr = vkBeginCommandBuffer(e->cmd, &bi);
    if (vr != VK_SUCCESS) return vkfail(e, vr, "vkBeginCommandBuffer");
    record_head(e, e->cmd, &pic, in);
    e->out_dirty = e->bufs[B_OUT].cap; /* until the pass is known to have finished */
    int64_t submitted = rc_now_us();
    VkCommandBuffer two[2] = {e->cmd, e->body[e->parity][v]};
    vr = vkEndCommandBuffer(e->cmd);
    if (vr == VK_SUCCESS) vr = submit(e, two, 2, e->fence);
    int body_in = vr == VK_SUCCESS; /* only a submission that went in signals its fence */
    if (body_in) e->pending = 1;
    /* the filter behind it, without waiting for it: the bitstream is ready first */
    VkResult fr = VK_SUCCESS;
    if (body_in && pic.deblock && (fr = submit(e, &e->filter[e->parity], 1, e->filter_fence)) == VK_SUCCESS)
        e->filter_pending = 1;
    if (body_in) { /* waited for even when the filter's submit failed: its fence is reused next */
        VkResult wr = wait_fence(e);
        if (vr == VK_SUCCESS) vr = wr;
    }
    if (vr == VK_SUCCESS) vr = fr; /* no filter: the reference is not the decoder's, so no picture */
    if (vr != VK_SUCCESS) {
        e->have_ref = 0;
        return vkfail(e, vr, "encode submit/wait");
    }
    int64_t done = rc_now_us();
    /* the pass's timestamps up to the bitstream, read once: the gate's evidence and encode()'s figures */
    e->have_t = e->have_ts && vkGetQueryPoolResults(e->dev, e->queries, 0, NTS_BODY, sizeof e->t, e->t, sizeof e->t[0],
                                                    VK_QUERY_RESULT_64_BIT) == VK_SUCCESS;
    if (full && e->gate_env == -1 && e->have_t) /* how long it waited behind other work */
        rc_h264_gate_learn(&e->gate, done, (double)(e->t[NTS - 1] - e->t[0]) * e->ts_ns / 1e6,
                           (double)(done - submitted) / 1e3);
    e->deblocked = (int)pic.deblock;
    e->contended = !full;
    e->out_dirty = ((const uint32_t *)e->bufs[B_CTL].map)[CTL_BYTES];
    return RCANVAS_OK;
}

/* One picture from `in` (B_STAGE filled, or an image), after prepare(): the GPU pass(es), then the framing. */
static int key_due(const rc_gpu_h264 *e, const rc_encode_params *p) {
    return !e->have_ref || e->want_key || (p && p->keyframe_interval > 0 && e->since_key >= (uint32_t)p->keyframe_interval);
}

/* After prepare(), before any pixel moves: starts the rate control at this size, and when it says so
 * (rc_h264_rate_skip) appends a picture of skipped macroblocks (*skipped = 1; the caller neither copies nor codes
 * the frame). */
static int encode_skip(rc_gpu_h264 *e, const rc_encode_params *p, int qp_override, rc_buf *out,
                       rc_gpu_h264_info *info, int64_t t0, int *skipped) {
    *skipped = 0;
    rc_h264_rate_begin(&e->rate, e->w, e->h, p, qp_override);
    int key = key_due(e, p);
    if (!rc_h264_rate_skip(&e->rate, p, qp_override, key)) return RCANVAS_OK;
    int qp = rc_h264_rate_qp(&e->rate, p, qp_override, key);
    size_t start = out->len;
    int r = put_skip_picture(e, out, qp);
    if (r) return r;
    e->since_key++;
    e->frame_num = (e->frame_num + 1) & 15;
    rc_h264_rate_done(&e->rate, p, qp_override, qp, 0, 1, out->len - start);
    if (info) {
        memset(info, 0, sizeof *info);
        info->qp = qp;
        info->skipped = 1;
        info->wall_ms = (double)(rc_now_us() - t0) / 1000.0;
    }
    *skipped = 1;
    return RCANVAS_OK;
}

static int encode(rc_gpu_h264 *e, const input *in, int bgra, const rc_encode_params *p, int qp_override, rc_buf *out,
                  rc_gpu_h264_info *info, int64_t t0) {
    /* the last coded picture's filter, settled by prepare() (a retried or re-coded pass below settles its own) */
    double prev_filter_ms = e->filter_ms;
    int key = key_due(e, p);
    int qp = rc_h264_rate_qp(&e->rate, p, qp_override, key);
    int r = gpu_pass(e, in, bgra, key, qp);
    if (r) return r;
    const uint32_t *ctl = e->bufs[B_CTL].map;
    const uint8_t *bytes = e->bufs[B_HOST].map;
    if (key) { /* the stream's first IDR picture, far off the rate control's aim: coded again (h264_gpu_rate.h) */
        int rqp = rc_h264_rate_retry_idr(&e->rate, p, qp_override, qp, ctl[CTL_BYTES]);
        if (rqp) {
            r = gpu_pass(e, in, bgra, 1, rqp);
            if (r) return r;
            qp = rqp;
        }
    }
    /* A scene cut: a picture unlike its reference can cost more as a P picture (its intra macroblocks limited
     * to the intra wave's steps, none while the gate is closed, its intra choice estimated) than as an IDR one. A
     * P picture over 3× the recent P pictures' mean (bytes scaled to one QP by the 2^(QP/6) step; and over 2 bytes
     * a macroblock, so that the first change after a still spell of P_Skip pictures is not one; paint-overs never)
     * is coded again as an IDR picture, which is kept when it takes less than 1.5× the P picture's bytes (it is
     * sharper: its QP is 4 lower); else the P picture is coded again (the IDR pass overwrote its reconstruction).
     * On suspected cuts only: one or two more GPU passes. The P pictures after a cut start no finer than its IDR picture's QP
     * allows (rc_h264_rate_cut). */
    double pnorm = ctl[CTL_BYTES] * pow(2.0, (qp - 26) / 6.0); /* bytes at QP 26 by the QP step model */
    int paint = p && p->paint;
    /* the first IDR picture seeds the mean until the first P picture replaces it: a dense picture after a blank or
     * light first one is then a cut, coded as an IDR picture at the rate control's floor for those, not as a P
     * picture at the fine QP the light one allowed */
    if (key && !paint && e->p_avg <= 0) e->p_avg = pnorm, e->p_avg_idr = 1;
    int cut = !key && !paint && e->p_avg > 0 && pnorm > 3 * e->p_avg && ctl[CTL_BYTES] > 2u * e->mbw * e->mbh;
    if (!key && !paint) { /* also at a cut: it adapts; the first P picture replaces the IDR picture's seed */
        e->p_avg = e->p_avg > 0 && !e->p_avg_idr ? 0.8 * e->p_avg + 0.2 * pnorm : pnorm;
        e->p_avg_idr = 0;
    }
    if (cut) {
        size_t pbytes = ctl[CTL_BYTES];
        int kqp = rc_h264_rate_qp(&e->rate, p, qp_override, 1);
        r = gpu_pass(e, in, bgra, 1, kqp);
        if (!r && ctl[CTL_BYTES] < pbytes * 3 / 2) key = 1, qp = kqp, rc_h264_rate_cut(&e->rate, p, qp_override, kqp);
        else if (!r) r = gpu_pass(e, in, bgra, 0, qp);
        if (r) return r;
    }
    if (key) e->frame_num = 0;
    size_t start = out->len;
    r = key ? put_parameter_sets(e, out) : RCANVAS_OK;
    uint8_t nal = key ? 0x65 : 0x41; /* nal_ref_idc 3; IDR slice or non-IDR slice */
    /* the picture's one slice */
    if (!r) r = put_nal(out, nal, bytes + ctl[CTL_SLICE], ctl[CTL_SLICE + 1] - ctl[CTL_SLICE]);
    if (r) {
        out->len = start;
        e->have_ref = 0;
        return r;
    }
    e->have_ref = 1;
    e->want_key = 0;
    e->since_key = key ? 1 : e->since_key + 1;
    if (key) e->idr_pic_id = (e->idr_pic_id + 1) & 0xFFFF;
    e->frame_num = (e->frame_num + 1) & 15;
    e->parity ^= 1;
    rc_h264_rate_done(&e->rate, p, qp_override, qp, key, 0, out->len - start);
    if (info) {
        memset(info, 0, sizeof *info);
        info->keyframe = key;
        info->qp = qp;
        info->mb_i4x4 = (int)ctl[CTL_I4X4(e->mbh)];
        info->mb_p8x8 = (int)ctl[CTL_P8X8(e->mbh)];
        info->mb_intra = key ? 0 : (int)ctl[CTL_INTRA_P(e->mbh)];
        info->mb_intra_deferred = key ? 0 : (int)ctl[CTL_DEFERRED(e->mbh)];
        info->adopt_looks = key ? 0 : (int)ctl[CTL_ADOPT_LOOKS(e->mbh)];
        const uint64_t *t = e->t;
        if (e->have_t) {
            for (int i = 0; i < NTS - 1; i++) info->stage_ms[i] = (double)(t[i + 1] - t[i]) * e->ts_ns / 1e6;
            info->gpu_ms = (double)(t[NTS - 1] - t[0]) * e->ts_ns / 1e6;
            if (!key) {
                double ms = e->ts_ns / 1e6;
                info->me_coarse_ms = (double)(t[TS_COARSE] - t[2]) * ms;
                info->me_fine_ms = (double)(t[TS_FINE] - t[TS_COARSE]) * ms;
                info->me_choice_ms = (double)(t[TS_CHOICE] - t[TS_FINE]) * ms;
                info->me_wave_ms = (double)(t[TS_WAVE] - t[TS_CHOICE]) * ms;
                info->me_adopt_ms = (double)(t[3] - t[TS_WAVE]) * ms;
                info->mb_intra_steps_ms = (double)(t[4] - t[TS_INTER]) * ms;
            }
        }
        info->deblock_ms = prev_filter_ms;
        info->deblocked = e->deblocked;
        info->contended = e->contended;
        info->wall_ms = (double)(rc_now_us() - t0) / 1000.0;
    }
    return RCANVAS_OK;
}

int rc_gpu_h264_encode_cpu(rc_gpu_h264 *e, const rc_image *img, const rc_encode_params *p, int qp_override,
                           rc_buf *out, rc_gpu_h264_info *info) {
    int64_t t0 = rc_now_us();
    if (!e || !img || !img->pixels || !out || !rc_format_bpp(img->format) || img->width == 0 || img->height == 0 ||
        img->width > 16384 || img->height > 16384 || img->pitch < (size_t)img->width * 4 || qp_override < 0 ||
        qp_override > 51)
        return RCANVAS_EINVAL;
    int skipped;
    int r = prepare(e, img->width, img->height);
    if (!r) r = encode_skip(e, p, qp_override, out, info, t0, &skipped);
    if (r || skipped) return r; /* a skipped picture: the frame is not even copied */
    r = buf_reserve(e, B_STAGE, (VkDeviceSize)img->width * img->height * 4);
    if (r) return r;
    uint8_t *st = e->bufs[B_STAGE].map;
    if (img->pitch == (size_t)img->width * 4) memcpy(st, img->pixels, (size_t)img->width * 4 * img->height);
    else
        for (uint32_t y = 0; y < img->height; y++)
            memcpy(st + (size_t)y * img->width * 4, img->pixels + (size_t)y * img->pitch, (size_t)img->width * 4);
    input in = {0};
    return encode(e, &in, img->format == RCANVAS_FORMAT_BGRA8, p, qp_override, out, info, t0);
}

int rc_gpu_h264_encode_image(rc_gpu_h264 *e, VkImage image, VkFormat format, VkImageLayout layout, uint32_t w,
                             uint32_t h, const rc_encode_params *p, int qp_override, rc_buf *out,
                             rc_gpu_h264_info *info) {
    int64_t t0 = rc_now_us();
    int bgra = format == VK_FORMAT_B8G8R8A8_UNORM || format == VK_FORMAT_B8G8R8A8_SRGB;
    if (!e || !image || !out || w == 0 || h == 0 || w > 16384 || h > 16384 || qp_override < 0 || qp_override > 51 ||
        (!bgra && format != VK_FORMAT_R8G8B8A8_UNORM && format != VK_FORMAT_R8G8B8A8_SRGB) ||
        (layout != VK_IMAGE_LAYOUT_GENERAL && layout != VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL))
        return RCANVAS_EINVAL;
    int skipped;
    int r = prepare(e, w, h);
    if (!r) r = encode_skip(e, p, qp_override, out, info, t0, &skipped);
    if (r || skipped) return r;
    input in = {.image = image, .layout = layout};
    return encode(e, &in, bgra, p, qp_override, out, info, t0);
}

int rc_gpu_h264_encode_buffer(rc_gpu_h264 *e, VkBuffer src, VkDeviceSize offset, VkDeviceSize pitch,
                              rcanvas_pixel_format format, uint32_t w, uint32_t h, const rc_encode_params *p,
                              int qp_override, rc_buf *out, rc_gpu_h264_info *info) {
    int64_t t0 = rc_now_us();
    if (!e || !src || !out || !rc_format_bpp(format) || w == 0 || h == 0 || w > 16384 || h > 16384 ||
        pitch < (VkDeviceSize)w * 4 || qp_override < 0 || qp_override > 51)
        return RCANVAS_EINVAL;
    int skipped;
    int r = prepare(e, w, h);
    if (!r) r = encode_skip(e, p, qp_override, out, info, t0, &skipped);
    if (r || skipped) return r;
    input in = {.buf = src, .offset = offset, .pitch = pitch};
    return encode(e, &in, format == RCANVAS_FORMAT_BGRA8, p, qp_override, out, info, t0);
}

int rc_gpu_h264_reconstruction(rc_gpu_h264 *e, uint8_t **i420, uint32_t *width, uint32_t *height) {
    if (!e || !i420 || !e->have_ref) return RCANVAS_EINVAL;
    VkResult sr = settle(e); /* the filter writes what is read here */
    if (sr != VK_SUCCESS) return vkfail(e, sr, "the deblocking filter's wait");
    uint32_t lw = e->mbw * 16, lh = e->mbh * 16;
    size_t n = (size_t)lw * lh * 3 / 2;
    int r = buf_reserve(e, B_DBG, n * 4);
    if (r) return r;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult vr = vkResetCommandBuffer(e->cmd, 0);
    if (vr == VK_SUCCESS) vr = vkBeginCommandBuffer(e->cmd, &bi);
    if (vr != VK_SUCCESS) return vkfail(e, vr, "vkBeginCommandBuffer");
    /* the last picture wrote the REC of the parity before the flip (its filter too: settled, and ordered here) */
    rc_gpu_barrier(e->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy c = {.size = n * 4};
    vkCmdCopyBuffer(e->cmd, e->bufs[e->parity ? B_RECA : B_RECB].b, e->bufs[B_DBG].b, 1, &c);
    rc_gpu_barrier(e->cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    vr = submit_wait(e, VK_NULL_HANDLE);
    if (vr != VK_SUCCESS) return vkfail(e, vr, "reconstruction copy");
    uint8_t *o = malloc(n);
    if (!o) return RCANVAS_ENOMEM;
    const uint32_t *s = e->bufs[B_DBG].map;
    for (size_t i = 0; i < n; i++) o[i] = (uint8_t)s[i];
    *i420 = o;
    if (width) *width = lw;
    if (height) *height = lh;
    return RCANVAS_OK;
}

/* ---- the codec interface ---- */

/* The codec table's instance (a canvas's H.264 tier with the encoder "h264-gpu"): on the process-wide device.
 * RCANVAS_EVULKAN where there is none; the canvas then falls back to openh264. */
static int gpu_create(const rc_codec_type *type, rc_codec **out) {
    (void)type;
    rc_gpu_device *d = NULL;
    int r = rc_gpu_device_acquire(NULL, &d);
    if (r) return r;
    rc_gpu_h264 *e = NULL;
    uint32_t q = rc_gpu_device_take_queue(d); /* the canvases' encoders spread over the device's queues */
    r = rc_gpu_h264_new(d->phys, d->dev, d->family, d->queues[q], &d->queue_locks[q], NULL, &e);
    if (r) {
        rc_gpu_device_release(d);
        return r;
    }
    e->shared = d;
    *out = &e->base;
    return RCANVAS_OK;
}

/* Why gpu_create failed, for the canvas's log: the device's reason (a CPU rasterizer refused, none found). */
static const char *gpu_create_error(void) {
    const char *why = rc_gpu_device_failure();
    return why[0] ? why : NULL;
}

/* From the image's buffer where it is on this encoder's device (a GPU canvas's frame in a readback ring on the same
 * device: the GPU copies it from the staging buffer, the host copies nothing), else from its pixels. */
static int gpu_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out, rc_encode_info *info) {
    rc_gpu_h264 *e = (rc_gpu_h264 *)c;
    rc_gpu_h264_info gi;
    int r = img && img->gpu && img->gpu->dev == e->dev
                ? rc_gpu_h264_encode_buffer(e, img->gpu->buf, img->gpu->offset, img->pitch, img->format, img->width,
                                            img->height, p, 0, out, &gi)
                : rc_gpu_h264_encode_cpu(e, img, p, 0, out, &gi);
    if (!r && !gi.skipped) e->from_buffer += img && img->gpu && img->gpu->dev == e->dev;
    if (!r && info) info->keyframe = gi.keyframe;
    if (r) snprintf(c->err, sizeof c->err, "gpu h264: %s", rcanvas_strerror(r));
    return r;
}

uint64_t rc_gpu_h264_from_buffer(const rc_gpu_h264 *e) { return e ? e->from_buffer : 0; }
int rc_gpu_h264_filter_waited(const rc_gpu_h264 *e) { return e && !e->filter_pending; }

static void gpu_request_keyframe(rc_codec *c) { rc_gpu_h264_request_keyframe((rc_gpu_h264 *)c); }
static void gpu_destroy(rc_codec *c) { rc_gpu_h264_free((rc_gpu_h264 *)c); }

const rc_codec_type rc_codec_h264_gpu = {
    .name = "h264-gpu", .wire_id = RCANVAS_CODEC_H264, .webcodecs = "avc1.42E028",
    .flags = RC_CODEC_STATEFUL | RC_CODEC_GPU | RC_CODEC_PAINT | RC_CODEC_ALT,
    .create = gpu_create, .create_error = gpu_create_error, .encode = gpu_encode,
    .request_keyframe = gpu_request_keyframe, .destroy = gpu_destroy};
