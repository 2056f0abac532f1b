/* SPDX-License-Identifier: MIT */
/*
 * test_vk_readback — GPU frames through the readback ring, on whatever Vulkan device is there (lavapipe in CI),
 * with the validation layer on when installed:
 *  - pixels read back equal what was uploaded into the image, exactly (PNG codec), for RGBA8 and BGRA8, at
 *    1×1, 7×5, 64×48, 1001×777, with a 256-byte row pitch alignment that forces padded rows;
 *  - a frame presented with a wait semaphore shows what the job that signals it wrote, and its submission consumed
 *    the semaphore;
 *  - resize mid-stream; the image ends in the final layout the app asked for;
 *  - a full ring refuses with RCANVAS_EBUSY and changes nothing; bad descriptors are refused;
 *  - teardown with frames in flight frees everything; zero validation errors, synchronization hazards included
 *    (within a command buffer and between submissions), each printed with its text;
 *  - on a JPEG canvas the frame is encoded on the GPU (codec jpeg-gpu): the packet is one plain JPEG that
 *    libjpeg-turbo decodes strictly, close to the source, and the still frame is then refined to exact PNG;
 *  - damage on the GPU (vk_damage.h; on for the main ring, so every test above runs through it): one changed
 *    pixel marks exactly its tile and only that tile (≈ 16 kB) is read back; identical frames mark none and read
 *    back nothing but the flags; a size or format change marks all; after a sequence of random partial updates
 *    (with the consumer holding 0-2 frames, so the ring's buffers are patched from different older frames) every
 *    pixel of every delivered frame equals the image and every dirty map equals the CPU's tile comparison; the
 *    whole-frame copy, the all-tiles compute copy and the plain fallback (frame beyond the storage buffer limit);
 *    frames in flight together (none of their fences waited yet) overwrite the one mirror buffer in turn;
 *    and through a PNG canvas, partial updates decode to the image exactly.
 */
#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "imageio.h"
#include "source/vk_readback.h"
#include "stream/canvas.h"
#include "stream/session.h"
#include "test.h"
#include "vk_util.h"
#include "test_wire.h"
#include "vk_icd.h"

static rcanvas_vk *g_vk;
static VkDevice g_dev;
static VkQueue g_q;
static VkCommandPool g_pool;

/* The validation layer's errors: the ring's messenger (vk_readback.c) logs each with its message ID and text through
 * the canvas's logger, which is this. Printed as they come and kept for the summary at the end. */
#define MAX_VMSG 16
static pthread_mutex_t g_vmu = PTHREAD_MUTEX_INITIALIZER;
static int g_vcount;
static char g_vmsg[MAX_VMSG][4096];

static void on_log(void *user, rcanvas_log_level level, const char *line) {
    (void)user;
    (void)level;
    if (strncmp(line, "vulkan validation", 17)) return;
    fprintf(stderr, "%s\n", line);
    pthread_mutex_lock(&g_vmu);
    if (g_vcount < MAX_VMSG) snprintf(g_vmsg[g_vcount], sizeof g_vmsg[0], "%s", line);
    g_vcount++;
    pthread_mutex_unlock(&g_vmu);
}

typedef struct gpu_image {
    VkImage image;
    VkDeviceMemory mem;
    VkBuffer up;
    VkDeviceMemory up_mem;
    uint8_t *up_ptr;
    uint32_t w, h;
    VkFormat format;
} gpu_image;

static uint32_t mem_type(uint32_t bits, VkMemoryPropertyFlags want) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(rcanvas_vk_physical_device(g_vk), &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    return 0;
}

static int image_new(gpu_image *g, uint32_t w, uint32_t h, VkFormat f) {
    memset(g, 0, sizeof(*g));
    g->w = w, g->h = h, g->format = f;
    VkImageCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, .imageType = VK_IMAGE_TYPE_2D, .format = f,
                             .extent = {w, h, 1}, .mipLevels = 1, .arrayLayers = 1, .samples = VK_SAMPLE_COUNT_1_BIT,
                             .tiling = VK_IMAGE_TILING_OPTIMAL,
                             .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                                      VK_IMAGE_USAGE_SAMPLED_BIT,
                             .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
    if (vkCreateImage(g_dev, &ici, NULL, &g->image) != VK_SUCCESS) return -1;
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(g_dev, g->image, &req);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = mem_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)};
    if (vkAllocateMemory(g_dev, &mai, NULL, &g->mem) || vkBindImageMemory(g_dev, g->image, g->mem, 0)) return -1;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = (VkDeviceSize)w * h * 4,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT};
    if (vkCreateBuffer(g_dev, &bci, NULL, &g->up)) return -1;
    vkGetBufferMemoryRequirements(g_dev, g->up, &req);
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = mem_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                           VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    void *p;
    if (vkAllocateMemory(g_dev, &mai, NULL, &g->up_mem) || vkBindBufferMemory(g_dev, g->up, g->up_mem, 0) ||
        vkMapMemory(g_dev, g->up_mem, 0, VK_WHOLE_SIZE, 0, &p))
        return -1;
    g->up_ptr = p;
    return 0;
}

static void image_free(gpu_image *g) {
    vkDeviceWaitIdle(g_dev);
    vkDestroyImage(g_dev, g->image, NULL);
    vkFreeMemory(g_dev, g->mem, NULL);
    vkDestroyBuffer(g_dev, g->up, NULL);
    vkFreeMemory(g_dev, g->up_mem, NULL);
}

static void fill(uint8_t *p, uint32_t w, uint32_t h, unsigned seed) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *q = p + ((size_t)y * w + x) * 4;
            q[0] = (uint8_t)(x * 7 + seed);
            q[1] = (uint8_t)(y * 13 + seed * 3);
            q[2] = (uint8_t)((x ^ y) + seed * 5);
            q[3] = 255;
        }
}

/* Uploads p_upload into the image (UNDEFINED → TRANSFER_DST → GENERAL). Waits for it, unless it signals a semaphore:
 * then whoever waits on that semaphore comes after it. */
static VkCommandBuffer upload(gpu_image *g, VkSemaphore signal) {
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = g_pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VkCommandBuffer cb;
    vkAllocateCommandBuffers(g_dev, &cai, &cb);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(cb, &bi);
    VkImageSubresourceRange range = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_MEMORY_READ_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
                              .newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                              .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .image = g->image, .subresourceRange = range};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL, 1, &b);
    VkBufferImageCopy region = {.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1}, .imageExtent = {g->w, g->h, 1}};
    vkCmdCopyBufferToImage(cb, g->up, g->image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
    b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT;
    b.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
    b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 0, NULL, 0, NULL, 1, &b);
    vkEndCommandBuffer(cb);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb,
                       .signalSemaphoreCount = signal ? 1u : 0u, .pSignalSemaphores = &signal};
    vkQueueSubmit(g_q, 1, &si, VK_NULL_HANDLE);
    if (!signal) vkQueueWaitIdle(g_q);
    return cb;
}

static uint32_t presented_seq(rcanvas_canvas *c) {
    rc_canvas_debug d;
    rc_canvas_get_debug(c, &d);
    return d.presented_seq;
}

static uint32_t latest_seq(rcanvas_canvas *c) {
    rc_canvas_debug d;
    rc_canvas_get_debug(c, &d);
    return d.latest_seq;
}

/* Pixels of the PNG tiles of pk that differ from `expect` (w wide; RGBA8 bytes, or BGRA8 when bgra). */
static long png_mismatches(const rc_packet *pk, const uint8_t *expect, uint32_t w, int bgra) {
    long bad = 0;
    for (int t = 0; t < pk->ntiles; t++) {
        rc_frame_header hd;
        test_tile_header(pk, t, &hd);
        uint8_t *px;
        uint32_t tw, th;
        if (rc_decode_png(rc_buf_data(&pk->tiles[t].data), pk->tiles[t].data.len, &px, &tw, &th)) {
            bad++;
            continue;
        }
        for (uint32_t y = 0; y < th; y++)
            for (uint32_t x = 0; x < tw; x++) {
                const uint8_t *e = expect + ((size_t)(hd.y + y) * w + x) * 4, *d = px + ((size_t)y * tw + x) * 4;
                uint8_t r = bgra ? e[2] : e[0], b = bgra ? e[0] : e[2];
                bad += d[0] != r || d[1] != e[1] || d[2] != b;
            }
        free(px);
    }
    return bad;
}

/* Waits for packet `seq`, decodes it and compares RGB with `expect` (RGBA8 bytes, or BGRA8 when bgra). */
static void check_frame(rcanvas_canvas *c, uint32_t seq, const uint8_t *expect, uint32_t w, uint32_t h, int bgra,
                        const char *what) {
    for (int i = 0; i < 5000 && latest_seq(c) < seq; i++) usleep(1000);
    rc_packet *pk = rc_canvas_latest_packet(c, 0);
    if (pk && pk->seq != seq) {
        rc_packet_unref(pk);
        pk = NULL;
    }
    CHECK_MSG(pk != NULL, "%s: frame %u never arrived", what, seq);
    if (!pk) return;
    CHECK_EQ_INT(pk->width, w);
    CHECK_EQ_INT(pk->height, h);
    long bad = png_mismatches(pk, expect, w, bgra);
    CHECK_MSG(bad == 0, "%s: %ld pixels differ", what, bad);
    rc_packet_unref(pk);
}

/* A later submission that waits on a semaphore present_vk signalled and uses the image from `layout`: the
 * validation layer reports an error if the image is in another layout, or if the semaphore was never signalled. */
static void expect_layout(rcanvas_canvas *c, gpu_image *g, VkImageLayout layout) {
    uint32_t seq = presented_seq(c) + 1;
    VkSemaphore sem;
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    vkCreateSemaphore(g_dev, &sci, NULL, &sem);
    rcanvas_vk_frame f = {.image = g->image, .format = g->format, .width = g->w, .height = g->h, .layout = layout,
                          .signal_semaphore = sem};
    CHECK_EQ_INT(rcanvas_present_vk(g_vk, &f), RCANVAS_OK);
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = g_pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VkCommandBuffer cb;
    vkAllocateCommandBuffers(g_dev, &cai, &cb);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(cb, &bi);
    VkImageMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_MEMORY_READ_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT, .oldLayout = layout,
                              .newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                              .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                              .image = g->image, .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL, 1, &b);
    vkEndCommandBuffer(cb);
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .waitSemaphoreCount = 1, .pWaitSemaphores = &sem,
                       .pWaitDstStageMask = &st, .commandBufferCount = 1, .pCommandBuffers = &cb};
    CHECK_EQ_INT(vkQueueSubmit(g_q, 1, &si, VK_NULL_HANDLE), VK_SUCCESS);
    vkQueueWaitIdle(g_q);
    vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
    vkDestroySemaphore(g_dev, sem, NULL);
    /* this frame too must reach the canvas before the caller counts on presented_seq (else the next frame's
     * expected seq is off by one, and the ring may still be full: the flaky failures of test_exact). It repeats
     * the previous picture, so the canvas takes it (presented_seq) but encodes nothing (damage: no tile changed). */
    for (int i = 0; i < 5000 && presented_seq(c) < seq; i++) usleep(1000);
    CHECK_MSG(presented_seq(c) >= seq, "the frame of expect_layout never arrived");
}

/* The refined (PNG) packet of the latest frame equals the BGRA8 source exactly. */
static void check_frame_refined(rcanvas_canvas *c, const uint8_t *bgra, uint32_t w) {
    rc_packet *pk = rc_canvas_latest_packet(c, 1);
    if (!pk) return;
    long bad = png_mismatches(pk, bgra, w, 1);
    CHECK_MSG(bad == 0 && (pk->flags & RC_PACKET_LOSSLESS), "refinement of the GPU-encoded frame: %ld pixels differ", bad);
    rc_packet_unref(pk);
}

static void test_exact(rcanvas_canvas *c) {
    const uint32_t sizes[][2] = {{1, 1}, {7, 5}, {64, 48}, {1001, 777}, {64, 48}}; /* the last: resize back */
    const VkFormat formats[] = {VK_FORMAT_R8G8B8A8_UNORM, VK_FORMAT_B8G8R8A8_SRGB};
    for (int fi = 0; fi < 2; fi++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            gpu_image g;
            uint32_t w = sizes[si][0], h = sizes[si][1];
            CHECK(image_new(&g, w, h, formats[fi]) == 0);
            fill(g.up_ptr, w, h, (unsigned)(si * 3 + fi));
            VkCommandBuffer cb = upload(&g, VK_NULL_HANDLE);
            rcanvas_vk_frame f = {.image = g.image, .format = formats[fi], .width = w, .height = h,
                                  .layout = VK_IMAGE_LAYOUT_GENERAL,
                                  .final_layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
            uint32_t seq = presented_seq(c) + 1;
            int r = rcanvas_present_vk(g_vk, &f);
            CHECK_MSG(r == RCANVAS_OK, "present_vk %ux%u: %s", w, h, rcanvas_strerror(r));
            char what[64];
            snprintf(what, sizeof what, "%ux%u %s", w, h, fi ? "BGRA8" : "RGBA8");
            check_frame(c, seq, g.up_ptr, w, h, fi, what);
            expect_layout(c, &g, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
            vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
            image_free(&g);
        }
}

/* A frame presented with a wait semaphore: the job that signals it rewrites the image and is not waited for; the
 * readback shows the rewrite, and the copy's submission consumed the semaphore (a binary semaphore may be signalled
 * again only once a wait has unsignalled it: else VUID-vkQueueSubmit-pSignalSemaphores-00067). The job is not held
 * back by the host: a binary semaphore's wait may depend only on signals already submitted
 * (VUID-vkQueueSubmit-pWaitSemaphores-03238), and an event that a pending command buffer waits on may not be set
 * from the host (VUID-vkSetEvent-event-09543); a timeline semaphore could hold it, but the ring's device (made by
 * rcanvas) has no timeline semaphores, and rcanvas_vk_frame takes binary ones only. */
static void test_wait_semaphore(rcanvas_canvas *c) {
    gpu_image g;
    uint32_t w = 96, h = 64;
    CHECK(image_new(&g, w, h, VK_FORMAT_R8G8B8A8_UNORM) == 0);
    fill(g.up_ptr, w, h, 1);
    VkCommandBuffer cb1 = upload(&g, VK_NULL_HANDLE); /* the "old" content */
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    VkSemaphore sem;
    vkCreateSemaphore(g_dev, &sci, NULL, &sem);
    uint8_t *fresh = malloc((size_t)w * h * 4);
    fill(fresh, w, h, 77);
    memcpy(g.up_ptr, fresh, (size_t)w * h * 4);
    rc_vk_stats before, after;
    rc_vk_get_stats(g_vk, &before);
    VkCommandBuffer cb2 = upload(&g, sem); /* rewrites the image, then signals sem; not waited for */
    uint32_t seq = presented_seq(c) + 1;
    rcanvas_vk_frame f = {.image = g.image, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w, .height = h,
                          .layout = VK_IMAGE_LAYOUT_GENERAL, .wait_semaphore = sem,
                          .wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT};
    CHECK_EQ_INT(rcanvas_present_vk(g_vk, &f), RCANVAS_OK);
    check_frame(c, seq, fresh, w, h, 0, "after the wait semaphore");
    rc_vk_get_stats(g_vk, &after);
    CHECK_EQ_INT(after.delivered, before.delivered + 1);
    /* sem is unsignalled again (the copy's submission waited on it): a signal and a wait of it are legal */
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkSubmitInfo sig = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .signalSemaphoreCount = 1, .pSignalSemaphores = &sem};
    VkSubmitInfo wt = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .waitSemaphoreCount = 1, .pWaitSemaphores = &sem,
                       .pWaitDstStageMask = &st};
    CHECK_EQ_INT(vkQueueSubmit(g_q, 1, &sig, VK_NULL_HANDLE), VK_SUCCESS);
    CHECK_EQ_INT(vkQueueSubmit(g_q, 1, &wt, VK_NULL_HANDLE), VK_SUCCESS);
    vkQueueWaitIdle(g_q);
    vkFreeCommandBuffers(g_dev, g_pool, 1, &cb1);
    vkFreeCommandBuffers(g_dev, g_pool, 1, &cb2);
    vkDestroySemaphore(g_dev, sem, NULL);
    free(fresh);
    image_free(&g);
}

static void test_refusals(rcanvas_canvas *c) {
    gpu_image g;
    CHECK(image_new(&g, 32, 32, VK_FORMAT_R8G8B8A8_UNORM) == 0);
    fill(g.up_ptr, 32, 32, 5);
    VkCommandBuffer cb = upload(&g, VK_NULL_HANDLE);
    rcanvas_vk_frame f = {.image = g.image, .format = VK_FORMAT_R16G16B16A16_SFLOAT, .width = 32, .height = 32,
                          .layout = VK_IMAGE_LAYOUT_GENERAL};
    CHECK_EQ_INT(rcanvas_present_vk(g_vk, &f), RCANVAS_EINVAL);
    f.format = VK_FORMAT_R8G8B8A8_UNORM;
    f.width = 0;
    CHECK_EQ_INT(rcanvas_present_vk(g_vk, &f), RCANVAS_EFRAME_SIZE);
    f.width = 9000; /* above the server's max_frame_dim (8192) */
    CHECK_EQ_INT(rcanvas_present_vk(g_vk, &f), RCANVAS_EFRAME_SIZE);
    f.width = 32;
    f.layout = VK_IMAGE_LAYOUT_UNDEFINED;
    CHECK_EQ_INT(rcanvas_present_vk(g_vk, &f), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_present_vk(NULL, &f), RCANVAS_EINVAL);
    vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
    image_free(&g);
    (void)c;
}

/* A ring of depth 1: the canvas keeps the last frame (refinement source), so the next present is refused. */
static void test_busy(rcanvas_server *srv) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = "busy";
    cc.codec = RCANVAS_CODEC_PNG;
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    rcanvas_canvas *c;
    CHECK_EQ_INT(rcanvas_canvas_new(srv, &cc, &c), RCANVAS_OK);
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.instance = rcanvas_vk_instance(g_vk);
    vc.physical_device = rcanvas_vk_physical_device(g_vk);
    vc.device = g_dev;
    vc.queue_family = rcanvas_vk_queue_family(g_vk);
    vc.queue = g_q; /* the app's objects: here those of the first ring */
    vc.ring_depth = 1;
    rcanvas_vk *vk1 = NULL;
    CHECK_EQ_INT(rcanvas_vk_new(c, &vc, &vk1), RCANVAS_OK);
    gpu_image g;
    CHECK(image_new(&g, 40, 30, VK_FORMAT_R8G8B8A8_UNORM) == 0);
    fill(g.up_ptr, 40, 30, 9);
    VkCommandBuffer cb = upload(&g, VK_NULL_HANDLE);
    rcanvas_vk_frame f = {.image = g.image, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = 40, .height = 30,
                          .layout = VK_IMAGE_LAYOUT_GENERAL};
    CHECK_EQ_INT(rcanvas_present_vk(vk1, &f), RCANVAS_OK);
    check_frame(c, 1, g.up_ptr, 40, 30, 0, "ring of 1");
    CHECK_EQ_INT(rcanvas_present_vk(vk1, &f), RCANVAS_EBUSY);
    CHECK_EQ_INT(presented_seq(c), 1);
    rcanvas_vk_free(vk1); /* takes its frame back from the canvas */
    vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
    image_free(&g);
    rcanvas_canvas_free(c);
}

/* The readback thread counts a GPU-encoded frame just after the canvas has published it: waits (≤ 5 s) until the
 * count reaches n, then *st holds the statistics. */
static void wait_gpu_encoded(rcanvas_vk *vk, uint64_t n, rc_vk_stats *st) {
    for (int i = 0; i < 5000; i++) {
        rc_vk_get_stats(vk, st);
        if (st->gpu_encoded >= n) return;
        usleep(1000);
    }
}

/* A JPEG canvas (q90 4:4:4, manual updates) and a readback ring of its own on the test's device, damage as given
 * (rcanvas_vk_config.damage). */
static void jpeg_canvas_ring(rcanvas_server *srv, const char *name, int refine_ms, int damage, rcanvas_canvas **c,
                             rcanvas_vk **vk) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = name;
    cc.width = 200; /* no frame of these tests is 1/4 of it or less: none goes out lossless as small */
    cc.height = 120;
    cc.codec = RCANVAS_CODEC_JPEG;
    cc.quality = 90;
    cc.subsampling = RCANVAS_SUBSAMP_444;
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    cc.refine_ms = refine_ms;
    CHECK_EQ_INT(rcanvas_canvas_new(srv, &cc, c), RCANVAS_OK);
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.instance = rcanvas_vk_instance(g_vk);
    vc.physical_device = rcanvas_vk_physical_device(g_vk);
    vc.device = g_dev;
    vc.queue_family = rcanvas_vk_queue_family(g_vk);
    vc.queue = g_q;
    vc.damage = damage;
    CHECK_EQ_INT(rcanvas_vk_new(*c, &vc, vk), RCANVAS_OK);
}

static void test_gpu_jpeg(rcanvas_server *srv) {
    rcanvas_canvas *c;
    rcanvas_vk *vk2 = NULL;
    /* damage off: every frame through the GPU encoder, also the repeated one below (damage would skip it) */
    jpeg_canvas_ring(srv, "gpujpeg", 50, -1, &c, &vk2);
    rc_session *sess = NULL; /* refinement happens only while someone watches */
    CHECK_EQ_INT(rc_session_open(c, NULL, &sess), RCANVAS_OK);
    gpu_image g;
    uint32_t w = 200, h = 120;
    CHECK(image_new(&g, w, h, VK_FORMAT_B8G8R8A8_UNORM) == 0);
    fill(g.up_ptr, w, h, 11);
    VkCommandBuffer cb = upload(&g, VK_NULL_HANDLE);
    rcanvas_vk_frame f = {.image = g.image, .format = VK_FORMAT_B8G8R8A8_UNORM, .width = w, .height = h,
                          .layout = VK_IMAGE_LAYOUT_GENERAL};
    CHECK_EQ_INT(rcanvas_present_vk(vk2, &f), RCANVAS_OK);
    for (int i = 0; i < 5000 && latest_seq(c) < 1; i++) usleep(1000);
    rc_vk_stats st;
    wait_gpu_encoded(vk2, 1, &st);
    CHECK_EQ_INT(st.gpu_encoded, 1);
    rc_packet *pk = rc_canvas_latest_packet(c, 0);
    CHECK(pk && pk->ntiles == 1 && pk->codec == &rc_codec_jpeg_gpu && !(pk->flags & RC_PACKET_LOSSLESS));
    if (pk) {
        rc_frame_header hd;
        CHECK_EQ_INT(test_tile_header(pk, 0, &hd), RCANVAS_OK);
        CHECK(hd.flags & RC_FLAG_LAST_TILE);
        uint8_t *px;
        uint32_t dw, dh;
        int d = rc_decode_jpeg(rc_buf_data(&pk->tiles[0].data), pk->tiles[0].data.len, &px, &dw, &dh);
        CHECK_MSG(d == 0 && dw == w && dh == h, "GPU-encoded packet does not decode cleanly");
        if (!d) {
            uint8_t *rgb = malloc((size_t)w * h * 4); /* the source as RGBA (it was uploaded as BGRA bytes) */
            for (size_t i = 0; i < (size_t)w * h; i++)
                rgb[4 * i] = g.up_ptr[4 * i + 2], rgb[4 * i + 1] = g.up_ptr[4 * i + 1], rgb[4 * i + 2] = g.up_ptr[4 * i],
                rgb[4 * i + 3] = 255;
            double psnr = rc_psnr_rgb(px, (size_t)w * 4, rgb, (size_t)w * 4, w, h);
            CHECK_MSG(psnr > 30.0, "GPU JPEG q90 4:4:4 PSNR %.2f dB", psnr);
            free(rgb);
            free(px);
        }
        rc_packet_unref(pk);
    }
    /* still: after refine_ms the network thread's timer makes the lossless version from the staged pixels */
    rc_packet *ref = NULL;
    for (int i = 0; i < 5000 && !ref; i++) {
        ref = rc_canvas_latest_packet(c, 1);
        if (!ref) usleep(1000);
    }
    CHECK_MSG(ref != NULL, "no lossless refinement of the GPU-encoded frame");
    rc_packet_unref(ref);
    check_frame_refined(c, g.up_ptr, w);
    /* The same pixels again, the image now said to be sampled (read in the DCT pass, no input copy; the
     * ring keeps it in GENERAL, here from SHADER_READ_ONLY_OPTIMAL and back): the very same JPEG bytes. */
    rc_packet *copied = rc_canvas_latest_packet(c, 0);
    CHECK(copied != NULL);
    rc_vk_get_stats(vk2, &st);
    CHECK_EQ_INT((int)st.gpu_read_image, 0);
    vkQueueWaitIdle(g_q); /* this thread is the queue's only submitter */
    CHECK_EQ_INT(set_image_layout(g_vk, g.image, VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL), 0);
    rcanvas_vk_frame f2 = {.image = g.image, .format = VK_FORMAT_B8G8R8A8_UNORM, .width = w, .height = h,
                           .layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                           .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_SAMPLED_BIT};
    uint64_t seq0 = latest_seq(c);
    CHECK_EQ_INT(rcanvas_present_vk(vk2, &f2), RCANVAS_OK);
    for (int i = 0; i < 5000 && latest_seq(c) <= seq0; i++) usleep(1000);
    wait_gpu_encoded(vk2, 2, &st);
    CHECK_EQ_INT((int)st.gpu_encoded, 2);
    CHECK_EQ_INT((int)st.gpu_read_image, 1);
    rc_packet *direct = rc_canvas_latest_packet(c, 0);
    CHECK(direct && direct != copied && direct->codec == &rc_codec_jpeg_gpu);
    if (direct && copied)
        CHECK_MSG(direct->tiles[0].data.len == copied->tiles[0].data.len &&
                      !memcmp(rc_buf_data(&direct->tiles[0].data), rc_buf_data(&copied->tiles[0].data),
                              copied->tiles[0].data.len),
                  "read in the DCT pass: %zu bytes; copied first: %zu bytes, or different bytes",
                  direct->tiles[0].data.len, copied->tiles[0].data.len);
    if (direct) rc_packet_unref(direct);
    if (copied) rc_packet_unref(copied);
    rc_session_close(sess);
    rcanvas_vk_free(vk2);
    vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
    image_free(&g);
    rcanvas_canvas_free(c);
}

/* Frames presented back to back are all encoded on the GPU, each by its slot's own encoder (the ring's
 * depth of them, sharing the first one's pipelines). With one encoder for the ring, every frame presented while
 * another was still encoding went to the CPU encoder (RCANVAS_EBUSY from rc_gpu_jpeg_record): here frames 2–4. The
 * last frame's packet is the GPU's JPEG of the last image. */
static void test_gpu_jpeg_pipelined(rcanvas_server *srv) {
    rcanvas_canvas *c;
    rcanvas_vk *vk4 = NULL;
    jpeg_canvas_ring(srv, "gpujpegpipe", 0, -1, &c, &vk4);
    enum { N = 4 }; /* the default ring depth */
    const uint32_t w = 200, h = 120;
    gpu_image g[N];
    VkCommandBuffer cb[N];
    for (int i = 0; i < N; i++) {
        CHECK(image_new(&g[i], w, h, VK_FORMAT_R8G8B8A8_UNORM) == 0);
        fill(g[i].up_ptr, w, h, 40u * (unsigned)i + 1);
        cb[i] = upload(&g[i], VK_NULL_HANDLE);
    }
    rc_vk_stats st0, st;
    rc_vk_get_stats(vk4, &st0);
    int ok = 0;
    for (int i = 0; i < N; i++) { /* no wait between them: each is recorded while the earlier ones still run */
        rcanvas_vk_frame f = {.image = g[i].image, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w, .height = h,
                              .layout = VK_IMAGE_LAYOUT_GENERAL};
        ok += rcanvas_present_vk(vk4, &f) == RCANVAS_OK;
    }
    CHECK_EQ_INT(ok, N);
    for (int i = 0; i < 5000; i++) {
        rc_vk_get_stats(vk4, &st);
        if (st.delivered - st0.delivered >= (uint64_t)ok) break;
        usleep(1000);
    }
    CHECK_EQ_INT((int)(st.delivered - st0.delivered), ok);
    CHECK_MSG(st.gpu_encoded - st0.gpu_encoded == st.delivered - st0.delivered,
              "%d of %d frames presented back to back were encoded on the GPU", (int)(st.gpu_encoded - st0.gpu_encoded),
              (int)(st.delivered - st0.delivered));
    for (int i = 0; i < 5000 && latest_seq(c) < (uint32_t)ok; i++) usleep(1000);
    rc_packet *pk = rc_canvas_latest_packet(c, 0);
    CHECK(pk && pk->ntiles == 1 && pk->codec == &rc_codec_jpeg_gpu);
    if (pk) {
        uint8_t *px;
        uint32_t dw, dh;
        int d = rc_decode_jpeg(rc_buf_data(&pk->tiles[0].data), pk->tiles[0].data.len, &px, &dw, &dh);
        CHECK_MSG(d == 0 && dw == w && dh == h, "the last GPU-encoded packet does not decode");
        if (!d) {
            double best = 0;
            int which = -1;
            for (int i = 0; i < N; i++) { /* the source is RGBA: compare as it is */
                double p = rc_psnr_rgb(px, (size_t)w * 4, g[i].up_ptr, (size_t)w * 4, w, h);
                if (p > best) best = p, which = i;
            }
            CHECK_MSG(which == N - 1 && best > 30.0, "the last packet shows image %d (%.2f dB), not image %d", which,
                      best, N - 1);
            free(px);
        }
        rc_packet_unref(pk);
    }
    rcanvas_vk_free(vk4);
    for (int i = 0; i < N; i++) {
        vkFreeCommandBuffers(g_dev, g_pool, 1, &cb[i]);
        image_free(&g[i]);
    }
    rcanvas_canvas_free(c);
}

/* A JPEG canvas with damage on the GPU: a frame where few tiles changed goes as those tiles (the CPU encodes
 * them) and not as the GPU's whole-frame JPEG; one where most changed goes whole from the GPU. Each picture is
 * checked by decoding its tiles over the previous one (PSNR against the source). */
static void test_gpu_jpeg_damage(rcanvas_server *srv) {
    rcanvas_canvas *c;
    rcanvas_vk *vk3 = NULL;
    jpeg_canvas_ring(srv, "gpujpegdamage", 0, 1, &c, &vk3);
    rc_session_caps caps = {.codecs = 1u << RCANVAS_CODEC_JPEG, .protocol = 2};
    rc_session *sess = NULL; /* a viewer: damage is relative to the frame it acked */
    CHECK_EQ_INT(rc_session_open(c, &caps, &sess), RCANVAS_OK);
    const uint32_t w = 640, h = 480; /* 10 × 8 tiles of 64 px */
    gpu_image g;
    CHECK(image_new(&g, w, h, VK_FORMAT_R8G8B8A8_UNORM) == 0);
    uint8_t *shown = calloc((size_t)w * h * 4, 1); /* what a viewer that applied every packet shows */
    struct { int what; uint32_t x0, y0; } steps[4] = {{0, 0, 0}, {1, 200, 130}, {1, 10, 400}, {2, 0, 0}};
    for (int i = 0; i < 4; i++) {
        if (steps[i].what == 1) /* a 20×20 square: at most 4 of the 80 tiles */
            for (uint32_t y = steps[i].y0; y < steps[i].y0 + 20; y++)
                for (uint32_t x = steps[i].x0; x < steps[i].x0 + 20; x++) {
                    uint8_t *p = g.up_ptr + ((size_t)y * w + x) * 4;
                    p[0] = 250, p[1] = (uint8_t)(40 * i), p[2] = 30;
                }
        else
            fill(g.up_ptr, w, h, 31 + (unsigned)i); /* every pixel */
        VkCommandBuffer cb = upload(&g, VK_NULL_HANDLE);
        rcanvas_vk_frame f = {.image = g.image, .format = g.format, .width = w, .height = h,
                              .layout = VK_IMAGE_LAYOUT_GENERAL,
                              .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_SAMPLED_BIT};
        rc_vk_stats st0, st;
        rc_vk_get_stats(vk3, &st0);
        uint32_t seq = presented_seq(c) + 1;
        CHECK_EQ_INT(rcanvas_present_vk(vk3, &f), RCANVAS_OK);
        /* the viewer takes what it is sent (the packets carry only what changed since the frame it acked) */
        rc_packet *pk = NULL;
        for (int k = 0; k < 5000 && !pk; k++) {
            rc_packet *got = NULL;
            if (rc_session_next(sess, rc_now_us(), &got, NULL)) {
                CHECK_EQ_INT(rc_session_ack(sess, got->seq, 0, rc_now_us()), RCANVAS_OK);
                if (got->seq == seq) pk = got;
                else rc_packet_unref(got);
            } else
                usleep(1000);
        }
        /* the readback thread counts the frame after the canvas has published it: wait for that */
        for (int k = 0; k < 5000; k++) {
            rc_vk_get_stats(vk3, &st);
            if (st.gpu_encoded + st.gpu_jpeg_unused_damage > st0.gpu_encoded + st0.gpu_jpeg_unused_damage) break;
            usleep(1000);
        }
        CHECK_MSG(pk != NULL, "step %d: frame %u never reached the viewer", i, seq);
        if (pk) {
            uint64_t area = 0;
            for (int t = 0; t < pk->ntiles; t++) {
                const rc_tile *tl = &pk->tiles[t];
                area += (uint64_t)tl->w * tl->h;
                uint8_t *px;
                uint32_t dw, dh;
                int d = rc_decode_jpeg(rc_buf_data(&tl->data), tl->data.len, &px, &dw, &dh);
                CHECK_MSG(d == 0 && dw == tl->w && dh == tl->h, "step %d tile %d does not decode", i, t);
                if (d) continue;
                for (uint32_t y = 0; y < dh; y++)
                    memcpy(shown + ((size_t)(tl->y + y) * w + tl->x) * 4, px + (size_t)y * dw * 4, (size_t)dw * 4);
                free(px);
            }
            double psnr = rc_psnr_rgb(shown, (size_t)w * 4, g.up_ptr, (size_t)w * 4, w, h);
            CHECK_MSG(psnr > 30.0, "step %d: the picture after its packet: PSNR %.2f dB", i, psnr);
            printf("gpu jpeg + damage, step %d (%s): %d tile(s), %llu px, %zu bytes, %s, PSNR %.2f dB\n", i,
                   steps[i].what == 1 ? "a 20x20 square" : "every pixel", pk->ntiles, (unsigned long long)area,
                   pk->total_bytes, pk->codec ? pk->codec->name : "?", psnr);
            if (steps[i].what == 1) {
                CHECK_MSG(pk->codec != &rc_codec_jpeg_gpu && area <= (uint64_t)4 * 64 * 64,
                          "step %d: a 20x20 change went as %d tiles, %llu px, codec %s", i, pk->ntiles,
                          (unsigned long long)area, pk->codec ? pk->codec->name : "?");
                CHECK_EQ_INT((int)(st.gpu_jpeg_unused_damage - st0.gpu_jpeg_unused_damage), 1);
                CHECK_EQ_INT((int)(st.gpu_encoded - st0.gpu_encoded), 0);
            } else {
                CHECK_MSG(pk->codec == &rc_codec_jpeg_gpu && pk->ntiles == 1 && area == (uint64_t)w * h,
                          "step %d: a whole change went as %d tiles, codec %s", i, pk->ntiles,
                          pk->codec ? pk->codec->name : "?");
                CHECK_EQ_INT((int)(st.gpu_encoded - st0.gpu_encoded), 1);
            }
            rc_packet_unref(pk);
        }
        vkQueueWaitIdle(g_q);
        vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
    }
    free(shown);
    rc_session_close(sess);
    rcanvas_vk_free(vk3);
    image_free(&g);
    rcanvas_canvas_free(c);
}

/* ---- damage on the GPU ---- */

/* A sink that keeps a copy of each delivered frame and its dirty map, and holds up to `hold` frames (as the
 * canvas holds its last frame and the ones it encodes) so that the ring's buffers take turns. */
typedef struct dsink {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int delivered, hold, nheld;
    void (*rel[4])(void *);
    void *arg[4];
    uint8_t *px;           /* the last frame, tight rows */
    uint32_t w, h;
    uint8_t dirty[4096];
    int have_dirty;
    rc_vk_damage_info info;
} dsink;

static void dsink_deliver(void *user, const rc_image *img, const rc_vk_damage_info *dmg, void (*release)(void *),
                          void *arg) {
    dsink *k = user;
    pthread_mutex_lock(&k->mu);
    k->px = realloc(k->px, (size_t)img->width * img->height * 4);
    for (uint32_t y = 0; y < img->height; y++)
        memcpy(k->px + (size_t)y * img->width * 4, img->pixels + y * img->pitch, (size_t)img->width * 4);
    k->w = img->width, k->h = img->height;
    k->info = *dmg;
    k->have_dirty = dmg->dirty != NULL && (size_t)dmg->tiles_x * dmg->tiles_y <= sizeof k->dirty;
    if (k->have_dirty) memcpy(k->dirty, dmg->dirty, (size_t)dmg->tiles_x * dmg->tiles_y);
    k->info.dirty = NULL;
    k->rel[k->nheld] = release, k->arg[k->nheld] = arg, k->nheld++;
    while (k->nheld > k->hold) { /* let go of the oldest */
        k->rel[0](k->arg[0]);
        memmove(k->rel, k->rel + 1, sizeof k->rel[0] * 3);
        memmove(k->arg, k->arg + 1, sizeof k->arg[0] * 3);
        k->nheld--;
    }
    k->delivered++;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static void dsink_release_all(dsink *k) {
    pthread_mutex_lock(&k->mu);
    for (; k->nheld > 0; k->nheld--) k->rel[k->nheld - 1](k->arg[k->nheld - 1]);
    pthread_mutex_unlock(&k->mu);
}

/* Uploads g->up_ptr into the image, presents it and waits for the sink to get it. */
static int dpresent(rcanvas_vk *vk, dsink *k, gpu_image *g) {
    VkCommandBuffer cb = upload(g, VK_NULL_HANDLE);
    vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
    pthread_mutex_lock(&k->mu);
    int want = k->delivered + 1;
    pthread_mutex_unlock(&k->mu);
    rcanvas_vk_frame f = {.image = g->image, .format = g->format, .width = g->w, .height = g->h,
                          .layout = VK_IMAGE_LAYOUT_GENERAL};
    int r = rcanvas_present_vk(vk, &f);
    CHECK_MSG(r == RCANVAS_OK, "present_vk: %s", rcanvas_strerror(r));
    if (r) return -1;
    pthread_mutex_lock(&k->mu);
    while (k->delivered < want) pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    return 0;
}

/* The dirty map of `cur` against `prev` (both w×h, tight), computed on the CPU. Returns the dirty tiles. */
static uint32_t cpu_dirty(const uint8_t *prev, const uint8_t *cur, uint32_t w, uint32_t h, uint8_t *map) {
    uint32_t tx = (w + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE, ty = (h + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE, n = 0;
    memset(map, 0, (size_t)tx * ty);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            if (memcmp(prev + ((size_t)y * w + x) * 4, cur + ((size_t)y * w + x) * 4, 4))
                map[(y / RC_DAMAGE_TILE) * tx + x / RC_DAMAGE_TILE] = 1;
    for (uint32_t i = 0; i < tx * ty; i++) n += map[i];
    return n;
}

/* Every pixel of the delivered frame equals the image's bytes; the dirty map equals `expect` (NULL: all dirty). */
static void dcheck(dsink *k, const gpu_image *g, const uint8_t *expect, const char *what) {
    CHECK_MSG(k->w == g->w && k->h == g->h, "%s: delivered %ux%u", what, k->w, k->h);
    long bad = 0;
    for (size_t i = 0; k->w == g->w && k->h == g->h && i < (size_t)g->w * g->h * 4; i++) bad += k->px[i] != g->up_ptr[i];
    CHECK_MSG(bad == 0, "%s: %ld bytes of the delivered frame differ from the image", what, bad);
    uint32_t tx = (g->w + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE, ty = (g->h + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE;
    CHECK_MSG(k->have_dirty && k->info.tiles_x == tx && k->info.tiles_y == ty, "%s: no dirty map (%ux%u tiles)", what,
              k->info.tiles_x, k->info.tiles_y);
    if (!k->have_dirty) return;
    int wrong = 0;
    for (uint32_t i = 0; i < tx * ty; i++) wrong += !!k->dirty[i] != (expect ? expect[i] : 1);
    CHECK_MSG(wrong == 0, "%s: %d tiles of the dirty map are wrong (%u dirty)", what, wrong, k->info.dirty_tiles);
}

static uint32_t rnd(uint32_t *st) {
    *st ^= *st << 13, *st ^= *st >> 17, *st ^= *st << 5;
    return *st;
}

static void test_damage_sink(void) {
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.instance = rcanvas_vk_instance(g_vk);
    vc.physical_device = rcanvas_vk_physical_device(g_vk);
    vc.device = g_dev;
    vc.queue_family = rcanvas_vk_queue_family(g_vk);
    vc.queue = g_q;
    vc.ring_depth = 3;
    vc.damage = 1;
    rcanvas_vk *vk = NULL;
    CHECK_EQ_INT(rc_vk_new_internal(NULL, &vc, NULL, &vk), RCANVAS_OK);
    if (!vk) return;
    CHECK(rc_vk_damage_enabled(vk));
    dsink k = {.hold = 1};
    pthread_mutex_init(&k.mu, NULL);
    pthread_cond_init(&k.cv, NULL);
    rc_vk_set_sink(vk, (rc_vk_sink){.deliver = dsink_deliver, .user = &k});

    const uint32_t w = 200, h = 130, tiles = 4 * 3; /* edge tiles 8 px wide, 2 px high */
    gpu_image g;
    CHECK(image_new(&g, w, h, VK_FORMAT_R8G8B8A8_UNORM) == 0);
    uint8_t *prev = malloc((size_t)w * h * 4), map[64];
    fill(g.up_ptr, w, h, 1);
    dpresent(vk, &k, &g);
    dcheck(&k, &g, NULL, "first frame");
    CHECK(k.info.whole && k.info.dirty_tiles == tiles);

    /* identical frames: no tile marked; once every buffer in use holds the frame, only the flags come back */
    for (int i = 0; i < 4; i++) {
        dpresent(vk, &k, &g);
        dcheck(&k, &g, (uint8_t[12]){0}, "identical frame");
    }
    CHECK_EQ_INT(k.info.dirty_tiles, 0);
    CHECK_EQ_INT(k.info.copied_tiles, 0);
    CHECK_EQ_INT(k.info.readback_bytes, tiles * 4);

    /* one changed pixel: exactly its tile, and one tile's bytes read back */
    memcpy(prev, g.up_ptr, (size_t)w * h * 4);
    g.up_ptr[((size_t)70 * w + 130) * 4 + 1] ^= 1; /* tile (2, 1) */
    dpresent(vk, &k, &g);
    cpu_dirty(prev, g.up_ptr, w, h, map);
    CHECK_EQ_INT(map[1 * 4 + 2], 1);
    dcheck(&k, &g, map, "one changed pixel");
    CHECK_EQ_INT(k.info.dirty_tiles, 1);
    CHECK_EQ_INT(k.info.copied_tiles, 1);
    CHECK(!k.info.whole);
    CHECK_EQ_INT(k.info.readback_bytes, 64 * 64 * 4 + tiles * 4);
    rc_vk_stats st;
    rc_vk_get_stats(vk, &st);
    CHECK_EQ_INT(st.readback_bytes, 64 * 64 * 4 + tiles * 4);
    CHECK_EQ_INT(st.dirty_tiles, 1);
    CHECK_EQ_INT(st.tiles, tiles);
    for (int i = 0; i < 3; i++) dpresent(vk, &k, &g); /* every buffer catches up */
    memcpy(prev, g.up_ptr, (size_t)w * h * 4);
    g.up_ptr[((size_t)(h - 1) * w + (w - 1)) * 4] ^= 0x80; /* the last pixel: the 8×2 corner tile */
    dpresent(vk, &k, &g);
    cpu_dirty(prev, g.up_ptr, w, h, map);
    dcheck(&k, &g, map, "corner pixel");
    CHECK_EQ_INT(k.info.dirty_tiles, 1);
    CHECK_EQ_INT(k.info.readback_bytes, 8 * 2 * 4 + tiles * 4);

    /* one changed pixel at every column and every row of tile (1, 1) in turn: always that tile, nothing else */
    int walk_bad = 0;
    for (uint32_t i = 0; i < 64; i++) {
        g.up_ptr[((size_t)(64 + (i * 37) % 64) * w + 64 + i) * 4 + i % 4] ^= (uint8_t)(1u << (i % 8));
        dpresent(vk, &k, &g);
        walk_bad += !k.have_dirty || k.info.dirty_tiles != 1 || !k.dirty[1 * 4 + 1] ||
                    memcmp(k.px, g.up_ptr, (size_t)w * h * 4) != 0;
    }
    CHECK_MSG(walk_bad == 0, "%d of 64 one-pixel changes in tile (1,1) not found exactly", walk_bad);

    /* random partial updates, the sink holding 0, 1 or 2 frames */
    uint32_t seed = 12345;
    int patched = 0;
    for (int i = 0; i < 40; i++) {
        memcpy(prev, g.up_ptr, (size_t)w * h * 4);
        k.hold = (int)(rnd(&seed) % 3);
        int rects = (int)(rnd(&seed) % 4); /* 0: an identical frame */
        for (int r = 0; r < rects; r++) {
            uint32_t rw = 1 + rnd(&seed) % 80, rh = 1 + rnd(&seed) % 80;
            uint32_t x0 = rnd(&seed) % w, y0 = rnd(&seed) % h;
            for (uint32_t y = y0; y < y0 + rh && y < h; y++)
                for (uint32_t x = x0; x < x0 + rw && x < w; x++) g.up_ptr[((size_t)y * w + x) * 4 + rnd(&seed) % 4] = (uint8_t)rnd(&seed);
        }
        dpresent(vk, &k, &g);
        cpu_dirty(prev, g.up_ptr, w, h, map);
        char what[64];
        snprintf(what, sizeof what, "partial update %d (%d rectangles, hold %d)", i, rects, k.hold);
        dcheck(&k, &g, map, what);
        patched += !k.info.whole;
    }
    CHECK_MSG(patched >= 20, "only %d of 40 partial updates read back by tiles", patched);

    /* every tile new, read back by the compute copy (whole copies only when required) */
    rc_vk_damage_tuning(vk, 2.0, 0);
    for (int i = 0; i < 2; i++) {
        fill(g.up_ptr, w, h, 40u + (unsigned)i);
        dpresent(vk, &k, &g);
        dcheck(&k, &g, NULL, "all tiles new, compute copy");
    }
    CHECK(!k.info.whole);
    CHECK_EQ_INT(k.info.copied_tiles, tiles);
    rc_vk_damage_tuning(vk, 0.5, 0);

    /* a frame beyond the storage buffer limit: the plain copy, no map; the next one starts over, all dirty */
    rc_vk_damage_tuning(vk, 0.5, 1000);
    g.up_ptr[0] ^= 1;
    dpresent(vk, &k, &g);
    CHECK(!k.have_dirty && k.info.whole);
    CHECK(memcmp(k.px, g.up_ptr, (size_t)w * h * 4) == 0);
    rc_vk_damage_tuning(vk, 0.5, 0);
    dpresent(vk, &k, &g);
    dcheck(&k, &g, NULL, "after the plain copy");

    /* format change, same bytes: all dirty */
    gpu_image g2;
    CHECK(image_new(&g2, w, h, VK_FORMAT_B8G8R8A8_UNORM) == 0);
    memcpy(g2.up_ptr, g.up_ptr, (size_t)w * h * 4);
    dpresent(vk, &k, &g2);
    dcheck(&k, &g2, NULL, "format change");
    dpresent(vk, &k, &g2);
    dcheck(&k, &g2, (uint8_t[12]){0}, "after the format change");
    image_free(&g2);

    /* size change: all dirty; then a change in the new geometry */
    gpu_image g3;
    CHECK(image_new(&g3, h, w, VK_FORMAT_R8G8B8A8_UNORM) == 0); /* 130×200: 3×4 tiles */
    fill(g3.up_ptr, h, w, 1);
    dpresent(vk, &k, &g3);
    dcheck(&k, &g3, NULL, "size change");
    memcpy(prev, g3.up_ptr, (size_t)w * h * 4);
    g3.up_ptr[((size_t)150 * h + 100) * 4 + 2] ^= 0xff;
    dpresent(vk, &k, &g3);
    cpu_dirty(prev, g3.up_ptr, h, w, map);
    dcheck(&k, &g3, map, "one pixel after the size change");
    CHECK_EQ_INT(k.info.dirty_tiles, 1);
    image_free(&g3);

    rc_vk_get_stats(vk, &st);
    CHECK(st.damage_frames >= 50 && st.whole_frames < st.delivered / 2);
    dsink_release_all(&k);
    rcanvas_vk_free(vk);
    image_free(&g);
    free(prev);
    free(k.px);
    pthread_mutex_destroy(&k.mu);
    pthread_cond_destroy(&k.cv);
}

/* A sink that keeps the readback thread inside deliver while `closed`: frames presented meanwhile stay in flight,
 * their fences not waited yet. Keeps a copy of each frame (tight rows). */
typedef struct bsink {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int closed, inside, delivered;
    uint8_t *px[3];
    uint32_t w[3], h[3];
} bsink;

static void bsink_deliver(void *user, const rc_image *img, const rc_vk_damage_info *dmg, void (*release)(void *),
                          void *arg) {
    (void)dmg;
    bsink *k = user;
    pthread_mutex_lock(&k->mu);
    k->inside = 1;
    pthread_cond_broadcast(&k->cv);
    while (k->closed) pthread_cond_wait(&k->cv, &k->mu);
    int n = k->delivered++;
    if (n < 3) {
        k->px[n] = malloc((size_t)img->width * img->height * 4);
        for (uint32_t y = 0; k->px[n] && y < img->height; y++)
            memcpy(k->px[n] + (size_t)y * img->width * 4, img->pixels + y * img->pitch, (size_t)img->width * 4);
        k->w[n] = img->width, k->h[n] = img->height;
    }
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    release(arg);
}

/* Frames in flight together: every frame's command buffer copies the image into the one mirror buffer of the damage
 * passes, so a frame's copy must wait for the previous frame's (write after write) even when no fence was waited in
 * between. The first frame keeps the readback thread in the sink, so the next two are submitted while neither's
 * fence has been waited: the validation layer's submit-time synchronization checks see their copies overlap. */
static void test_damage_in_flight(void) {
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.instance = rcanvas_vk_instance(g_vk);
    vc.physical_device = rcanvas_vk_physical_device(g_vk);
    vc.device = g_dev;
    vc.queue_family = rcanvas_vk_queue_family(g_vk);
    vc.queue = g_q;
    vc.ring_depth = 3;
    vc.damage = 1;
    rcanvas_vk *vk = NULL;
    CHECK_EQ_INT(rc_vk_new_internal(NULL, &vc, NULL, &vk), RCANVAS_OK);
    if (!vk) return;
    CHECK(rc_vk_damage_enabled(vk));
    bsink k = {.closed = 1};
    pthread_mutex_init(&k.mu, NULL);
    pthread_cond_init(&k.cv, NULL);
    rc_vk_set_sink(vk, (rc_vk_sink){.deliver = bsink_deliver, .user = &k});
    const uint32_t w = 160, h = 96;
    gpu_image g[3];
    VkCommandBuffer cb[3];
    for (int i = 0; i < 3; i++) { /* uploaded (and waited for) before the first present */
        CHECK(image_new(&g[i], w, h, VK_FORMAT_R8G8B8A8_UNORM) == 0);
        fill(g[i].up_ptr, w, h, (unsigned)(40 + i));
        cb[i] = upload(&g[i], VK_NULL_HANDLE);
    }
    for (int i = 0; i < 3; i++) {
        rcanvas_vk_frame f = {.image = g[i].image, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w, .height = h,
                              .layout = VK_IMAGE_LAYOUT_GENERAL};
        CHECK_EQ_INT(rcanvas_present_vk(vk, &f), RCANVAS_OK);
        if (i == 0) { /* the readback thread holds frame 0 in the sink: it waits on no fence until opened */
            pthread_mutex_lock(&k.mu);
            while (!k.inside) pthread_cond_wait(&k.cv, &k.mu);
            pthread_mutex_unlock(&k.mu);
        }
    }
    pthread_mutex_lock(&k.mu);
    CHECK_EQ_INT(k.delivered, 0);
    k.closed = 0;
    pthread_cond_broadcast(&k.cv);
    while (k.delivered < 3) pthread_cond_wait(&k.cv, &k.mu);
    pthread_mutex_unlock(&k.mu);
    for (int i = 0; i < 3; i++) {
        long bad = 0;
        CHECK(k.px[i] && k.w[i] == w && k.h[i] == h);
        for (size_t b = 0; k.px[i] && b < (size_t)w * h * 4; b++) bad += k.px[i][b] != g[i].up_ptr[b];
        CHECK_MSG(bad == 0, "frame %d in flight: %ld bytes differ from its image", i, bad);
    }
    rcanvas_vk_free(vk);
    for (int i = 0; i < 3; i++) {
        free(k.px[i]);
        vkFreeCommandBuffers(g_dev, g_pool, 1, &cb[i]);
        image_free(&g[i]);
    }
    pthread_cond_destroy(&k.cv);
    pthread_mutex_destroy(&k.mu);
}

/* Through the canvas (PNG: exact): partial updates of one image decode to the image exactly. */
static void test_damage_canvas(rcanvas_canvas *c) {
    CHECK(rc_vk_damage_enabled(g_vk));
    const uint32_t w = 300, h = 200;
    gpu_image g;
    CHECK(image_new(&g, w, h, VK_FORMAT_R8G8B8A8_UNORM) == 0);
    fill(g.up_ptr, w, h, 21);
    uint32_t seed = 777;
    rc_vk_stats st0, st;
    rc_vk_get_stats(g_vk, &st0);
    for (int i = 0; i < 12; i++) {
        if (i) { /* a small square somewhere, one pixel elsewhere */
            uint32_t x0 = rnd(&seed) % (w - 20), y0 = rnd(&seed) % (h - 20);
            for (uint32_t y = y0; y < y0 + 20; y++)
                for (uint32_t x = x0; x < x0 + 20; x++) g.up_ptr[((size_t)y * w + x) * 4] = (uint8_t)(i * 20);
            g.up_ptr[((size_t)(rnd(&seed) % h) * w + rnd(&seed) % w) * 4 + 1] ^= 0x55;
        }
        VkCommandBuffer cb = upload(&g, VK_NULL_HANDLE);
        rcanvas_vk_frame f = {.image = g.image, .format = g.format, .width = w, .height = h,
                              .layout = VK_IMAGE_LAYOUT_GENERAL};
        uint32_t seq = presented_seq(c) + 1;
        CHECK_EQ_INT(rcanvas_present_vk(g_vk, &f), RCANVAS_OK);
        char what[64];
        snprintf(what, sizeof what, "canvas, partial update %d", i);
        check_frame(c, seq, g.up_ptr, w, h, 0, what);
        vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
    }
    rc_vk_get_stats(g_vk, &st);
    CHECK_EQ_INT(st.damage_frames - st0.damage_frames, 12);
    CHECK_MSG(st.whole_frames - st0.whole_frames < 6, "%llu of 12 frames read back whole",
              (unsigned long long)(st.whole_frames - st0.whole_frames));
    image_free(&g);
}

int main(void) {
    test_vk_keep_drivers_loaded(); /* sanitizer builds: see tests/lsan.supp */
    setenv("RCANVAS_GPU_JPEG_INPUT", "image", 1); /* the GPU JPEG reads sampled images on lavapipe too */
#ifndef RCANVAS_SANITIZE /* the plain run only: the synchronization checks leak inside the layer (LeakSanitizer) */
    /* the validation layer's synchronization checks too: hazards within a command buffer (barriers around the DCT
     * pass's image read, the copies, the stages) and between submissions (a buffer that frames in flight together
     * write in turn). Layers before 1.3.250 check submissions only with the second flag; later ones always do (and
     * say, as a warning, that the flags are deprecated). */
    setenv("VK_LAYER_ENABLES",
           "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT:"
           "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT",
           0);
#endif
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.log = on_log; /* the validation errors' text */
    sc.log_level = RCANVAS_LOG_ERROR;
    rcanvas_server *srv = NULL;
    if (rcanvas_server_new(&sc, &srv)) TEST_MAIN_END();
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.codec = RCANVAS_CODEC_PNG; /* exact comparison */
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    cc.refine_ms = 0;
    rcanvas_canvas *c = NULL;
    CHECK_EQ_INT(rcanvas_canvas_new(srv, &cc, &c), RCANVAS_OK);
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.ring_depth = 3;
    vc.row_pitch_alignment = 256;
    vc.validation = 1;
    vc.damage = 1; /* the damage passes under every test of the main ring (auto is off on lavapipe) */
    int r = rcanvas_vk_new(c, &vc, &g_vk);
    CHECK_MSG(r == RCANVAS_OK, "rcanvas_vk_new: %s", rcanvas_strerror(r));
    if (r) TEST_MAIN_END();
    g_dev = rcanvas_vk_device(g_vk);
    g_q = rcanvas_vk_queue(g_vk);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = rcanvas_vk_queue_family(g_vk)};
    vkCreateCommandPool(g_dev, &pci, NULL, &g_pool);

    test_exact(c);
    test_wait_semaphore(c);
    test_refusals(c);
    test_busy(srv);
    test_gpu_jpeg(srv);
    test_gpu_jpeg_pipelined(srv);
    test_gpu_jpeg_damage(srv);
    test_damage_sink();
    test_damage_in_flight();
    test_damage_canvas(c);

    /* teardown with frames in flight: three presents, then free at once */
    gpu_image g;
    CHECK(image_new(&g, 640, 480, VK_FORMAT_R8G8B8A8_UNORM) == 0);
    fill(g.up_ptr, 640, 480, 3);
    VkCommandBuffer cb = upload(&g, VK_NULL_HANDLE);
    rcanvas_vk_frame f = {.image = g.image, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = 640, .height = 480,
                          .layout = VK_IMAGE_LAYOUT_GENERAL};
    int ok = 0;
    for (int i = 0; i < 3; i++) ok += rcanvas_present_vk(g_vk, &f) == RCANVAS_OK;
    CHECK(ok >= 2);
    vkFreeCommandBuffers(g_dev, g_pool, 1, &cb);
    image_free(&g);
    vkDestroyCommandPool(g_dev, g_pool, NULL);
    int verr = rcanvas_vk_validation_errors(g_vk); /* the messenger's count, whether logged or not */
    rcanvas_vk_free(g_vk);
    pthread_mutex_lock(&g_vmu);
    for (int i = 0; i < g_vcount && i < MAX_VMSG; i++) fprintf(stderr, "validation error %d: %s\n", i + 1, g_vmsg[i]);
    CHECK_MSG(verr == 0 && g_vcount == 0, "%d validation errors, %d logged (their text above)", verr, g_vcount);
    pthread_mutex_unlock(&g_vmu);
    rcanvas_server_free(srv);
    TEST_MAIN_END();
}
