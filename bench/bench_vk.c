/* SPDX-License-Identifier: MIT */
/*
 * bench-vk — headless benchmark of the GPU frame path (no browser): a corpus frame is uploaded once into a
 * device-local VkImage, then presented N times through rcanvas_present_vk(). Per ring depth, at 1080p and 4K,
 * with and without encoding (JPEG q85 4:2:0 in stripes on the worker pool, as the server does), it reports:
 *   copy ms      GPU time of the image→staging copy (Vulkan timestamp queries), mean
 *   fence ms     time the readback thread blocked on the fence, mean
 *   ready ms     vkQueueSubmit → fence seen signalled (CPU clock), mean
 *   handoff ms   handing the mapped buffer on (no copy), mean
 *   encode ms    stripe-parallel JPEG of the mapped buffer, mean (encode runs only)
 *   frames/s     whole path, wall clock over N frames (presents are retried while the ring is full)
 * With --damage, instead: damage on the GPU (vk_damage.h) against whole frames, ring depth 4, the consumer
 * holding the newest frame (as the canvas keeps its last one), no encoding, two scenes at 1080p and 4K:
 *   new frames   every frame differs in every pixel (two images alternate): the worst case for damage
 *   marker       a still plot with a 24×24 marker moving along a circle (an app command buffer restores the old
 *                spot and draws the new one before each present)
 * and per row: GPU ms of the readback command buffer (timestamps: copies + damage passes), ready ms (submit →
 * fence seen), bytes written into host memory per frame and their share of a whole frame, dirty and copied tiles
 * per frame, frames read back whole, frames/s.
 *   bench-vk [--frames N] [--threads T] [--depths 1,2,3,4] [--damage] [--json FILE] DIR
 * DIR holds 1920x1080 and 3840x2160 PNG frames (heatmap-* used when present).
 */
#include <vulkan/vulkan.h>

#include <errno.h>

#include "rcanvas_vk.h"

#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool.h"
#include "codec/frame_encode.h"
#include "cli.h"
#include "imageio.h"
#include "source/vk_readback.h"
#include "vk_util.h"

typedef struct job {
    rc_encode_task task;
    void (*release)(void *);
    void *arg;
    int64_t t0;
    struct sink *sk;
} job;

typedef struct sink {
    rcanvas_vk *vk;
    rc_pool *pool;
    rc_packet_pool *packets;
    int encode;
    atomic_int done;
    atomic_llong encode_us;
    double copy_ms, fence_ms, ready_ms, handoff_ms;
    int n;
    job jobs[16];
    atomic_int job_busy[16];
} sink;

static void encode_done(rc_encode_task *t, int status) {
    job *j = (job *)t;
    sink *sk = j->sk;
    if (status) fprintf(stderr, "encode failed: %s\n", t->error);
    atomic_fetch_add(&sk->encode_us, rc_now_us() - j->t0);
    rc_packet_unref(t->packet);
    void (*release)(void *) = j->release;
    void *arg = j->arg;
    atomic_store(&sk->job_busy[j - sk->jobs], 0);
    release(arg);
    atomic_fetch_add(&sk->done, 1);
}

static void deliver(void *user, const rc_image *img, const rc_vk_damage_info *dmg, void (*release)(void *), void *arg) {
    (void)dmg;
    sink *sk = user;
    rc_vk_stats st;
    rc_vk_get_stats(sk->vk, &st);
    sk->copy_ms += st.copy_ms;
    sk->fence_ms += st.fence_wait_ms;
    sk->ready_ms += st.submit_to_ready_ms;
    sk->handoff_ms += st.handoff_ms; /* of the previous frame */
    sk->n++;
    if (!sk->encode) {
        release(arg);
        atomic_fetch_add(&sk->done, 1);
        return;
    }
    int k = 0;
    for (;; k = (k + 1) % 16) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&sk->job_busy[k], &expect, 1)) break;
    }
    job *j = &sk->jobs[k];
    memset(&j->task, 0, sizeof j->task);
    j->task.img = *img;
    j->task.params = (rc_encode_params){.codec = RCANVAS_CODEC_JPEG, .quality = 85, .subsampling = RCANVAS_SUBSAMP_420};
    j->task.seq = 1;
    j->task.done = encode_done;
    j->task.packet = rc_packet_get(sk->packets);
    j->release = release;
    j->arg = arg;
    j->sk = sk;
    j->t0 = rc_now_us();
    rc_encode_submit(sk->pool, &j->task);
}

#define PROG "bench-vk"

/* ---- --damage ---- */

typedef struct dsink {
    rcanvas_vk *vk;
    atomic_int done;
    void (*held_release)(void *);
    void *held_arg;
    double gpu_ms, ready_ms, bytes, dirty, copied;
    int whole, n;
} dsink;

static void damage_deliver(void *user, const rc_image *img, const rc_vk_damage_info *dmg, void (*release)(void *),
                           void *arg) {
    (void)img;
    dsink *k = user;
    rc_vk_stats st;
    rc_vk_get_stats(k->vk, &st);
    k->gpu_ms += st.copy_ms;
    k->ready_ms += st.submit_to_ready_ms;
    k->bytes += (double)dmg->readback_bytes;
    k->dirty += dmg->dirty_tiles;
    k->copied += dmg->copied_tiles;
    k->whole += dmg->whole;
    k->n++;
    if (k->held_release) k->held_release(k->held_arg); /* hold the newest frame, as the canvas holds `last` */
    k->held_release = release;
    k->held_arg = arg;
    atomic_fetch_add(&k->done, 1);
}

/* A host-visible buffer with `bytes` copied in (transfer source). */
static VkBuffer host_buffer(rcanvas_vk *vk, const void *bytes, size_t n, VkDeviceMemory *mem) {
    VkDevice dev = rcanvas_vk_device(vk);
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = n,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT};
    VkBuffer b;
    vkCreateBuffer(dev, &bci, NULL, &b);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, b, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(rcanvas_vk_physical_device(vk), &mp);
    uint32_t type = 0;
    VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) {
            type = i;
            break;
        }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                .memoryTypeIndex = type};
    vkAllocateMemory(dev, &mai, NULL, mem);
    vkBindBufferMemory(dev, b, *mem, 0);
    void *p;
    vkMapMemory(dev, *mem, 0, VK_WHOLE_SIZE, 0, &p);
    memcpy(p, bytes, n);
    vkUnmapMemory(dev, *mem);
    return b;
}

#define MARKER 24
#define MARKER_STEPS 120 /* positions on the circle: one turn in 120 frames */

static void marker_pos(int k, uint32_t w, uint32_t h, uint32_t *x, uint32_t *y) {
    double a = 2.0 * 3.14159265358979 * k / MARKER_STEPS, r = h / 4.0;
    *x = (uint32_t)(w / 2.0 + r * cos(a)) - MARKER / 2;
    *y = (uint32_t)(h / 2.0 + r * sin(a)) - MARKER / 2;
}

/* Command buffer k of the marker scene: the background back over position k-1, the marker at position k. */
static void record_marker(VkCommandBuffer cb, VkImage img, VkBuffer bg, VkBuffer mk, int k, uint32_t w, uint32_t h) {
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};
    vkBeginCommandBuffer(cb, &bi);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0,
                         NULL);
    uint32_t ox, oy, nx, ny;
    marker_pos((k + MARKER_STEPS - 1) % MARKER_STEPS, w, h, &ox, &oy);
    marker_pos(k, w, h, &nx, &ny);
    VkBufferImageCopy restore = {.bufferOffset = ((VkDeviceSize)oy * w + ox) * 4, .bufferRowLength = w,
                                 .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                                 .imageOffset = {(int32_t)ox, (int32_t)oy, 0}, .imageExtent = {MARKER, MARKER, 1}};
    vkCmdCopyBufferToImage(cb, bg, img, VK_IMAGE_LAYOUT_GENERAL, 1, &restore);
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    VkBufferImageCopy draw = {.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                              .imageOffset = {(int32_t)nx, (int32_t)ny, 0}, .imageExtent = {MARKER, MARKER, 1}};
    vkCmdCopyBufferToImage(cb, mk, img, VK_IMAGE_LAYOUT_GENERAL, 1, &draw);
    vkEndCommandBuffer(cb);
}

/* One row of the --damage table. scene 0: two images alternate; 1: the marker. dmg: 0 off, 1 on, 2 on with the
 * compute copy of all tiles (never the whole-frame copy unless required). */
static int damage_row(const uint8_t *px, uint32_t w, uint32_t h, int scene, int dmg, int frames, FILE *js, int *first) {
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.ring_depth = 4;
    vc.damage = dmg ? 1 : -1;
    rcanvas_vk *vk;
    if (rc_vk_new_internal(NULL, &vc, NULL, &vk)) {
        fprintf(stderr, PROG ": no Vulkan device\n");
        return 1;
    }
    if (dmg == 2) rc_vk_damage_tuning(vk, 2.0, 0);
    static dsink k;
    memset(&k, 0, sizeof k);
    k.vk = vk;
    rc_vk_set_sink(vk, (rc_vk_sink){.deliver = damage_deliver, .user = &k});
    VkDevice dev = rcanvas_vk_device(vk);
    VkQueue q = rcanvas_vk_queue(vk);
    VkDeviceMemory mem[2] = {0}, bg_mem = 0, mk_mem = 0;
    VkImage img[2] = {0};
    VkBuffer bg = VK_NULL_HANDLE, mk = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cbs[MARKER_STEPS];
    img[0] = upload_image(vk, px, w, h, &mem[0]);
    if (scene == 0) { /* the same picture with every byte's low bit flipped: every tile differs */
        uint8_t *alt = malloc((size_t)w * h * 4);
        for (size_t i = 0; i < (size_t)w * h * 4; i++) alt[i] = px[i] ^ 1;
        img[1] = upload_image(vk, alt, w, h, &mem[1]);
        free(alt);
    } else {
        bg = host_buffer(vk, px, (size_t)w * h * 4, &bg_mem);
        uint8_t mpx[MARKER * MARKER * 4];
        for (int i = 0; i < MARKER * MARKER; i++) mpx[4 * i] = 230, mpx[4 * i + 1] = 20, mpx[4 * i + 2] = 40, mpx[4 * i + 3] = 255;
        mk = host_buffer(vk, mpx, sizeof mpx, &mk_mem);
        VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .queueFamilyIndex = rcanvas_vk_queue_family(vk)};
        vkCreateCommandPool(dev, &pci, NULL, &pool);
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                           .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = MARKER_STEPS};
        vkAllocateCommandBuffers(dev, &cai, cbs);
        for (int i = 0; i < MARKER_STEPS; i++) record_marker(cbs[i], img[0], bg, mk, i, w, h);
    }
    int warm = 20, total = warm + frames;
    int64_t t0 = 0;
    for (int i = 0; i < total; i++) {
        if (i == warm) {
            while (atomic_load(&k.done) < warm) sched_yield();
            t0 = rc_now_us();
            k.gpu_ms = k.ready_ms = k.bytes = k.dirty = k.copied = 0;
            k.whole = k.n = 0;
        }
        rcanvas_vk_frame f = {.image = img[scene == 0 ? i & 1 : 0], .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w,
                              .height = h, .layout = VK_IMAGE_LAYOUT_GENERAL,
                              .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_SAMPLED_BIT};
        int r;
        if (scene == 1) { /* the app draws, then presents (same queue: the readback's first barrier orders it) */
            VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                               .pCommandBuffers = &cbs[i % MARKER_STEPS]};
            vkQueueSubmit(q, 1, &si, VK_NULL_HANDLE);
        }
        while ((r = rcanvas_present_vk(vk, &f)) == RCANVAS_EBUSY) sched_yield();
        if (r) {
            fprintf(stderr, PROG ": present_vk: %s\n", rcanvas_strerror(r));
            return 1;
        }
    }
    while (atomic_load(&k.done) < total) sched_yield();
    double secs = (double)(rc_now_us() - t0) / 1e6;
    int n = k.n ? k.n : 1;
    double whole_bytes = (double)w * h * 4;
    const char *scene_s = scene == 0 ? "new frames" : "marker", *dmg_s = dmg == 0 ? "off" : dmg == 1 ? "on" : "on, compute copy";
    printf("| %ux%u | %s | %s | %.3f | %.3f | %.0f | %.2f %% | %.1f | %.1f | %d %% | %.0f |\n", w, h, scene_s, dmg_s,
           k.gpu_ms / n, k.ready_ms / n, k.bytes / n, 100.0 * k.bytes / n / whole_bytes, k.dirty / n, k.copied / n,
           100 * k.whole / n, frames / secs);
    fflush(stdout);
    if (js)
        fprintf(js, "%s  {\"width\":%u,\"height\":%u,\"scene\":\"%s\",\"damage\":\"%s\",\"gpu_ms\":%.4f,"
                    "\"ready_ms\":%.4f,\"bytes_per_frame\":%.0f,\"share_of_whole\":%.5f,\"dirty_tiles\":%.2f,"
                    "\"copied_tiles\":%.2f,\"whole_frames\":%.3f,\"fps\":%.1f}",
                *first ? "" : ",\n", w, h, scene_s, dmg_s, k.gpu_ms / n, k.ready_ms / n, k.bytes / n,
                k.bytes / n / whole_bytes, k.dirty / n, k.copied / n, (double)k.whole / n, frames / secs);
    *first = 0;
    vkDeviceWaitIdle(dev);
    if (k.held_release) k.held_release(k.held_arg);
    for (int i = 0; i < 2; i++)
        if (img[i]) vkDestroyImage(dev, img[i], NULL), vkFreeMemory(dev, mem[i], NULL);
    if (bg) vkDestroyBuffer(dev, bg, NULL), vkFreeMemory(dev, bg_mem, NULL);
    if (mk) vkDestroyBuffer(dev, mk, NULL), vkFreeMemory(dev, mk_mem, NULL);
    if (pool) vkDestroyCommandPool(dev, pool, NULL);
    rcanvas_vk_free(vk);
    return 0;
}


static int load(const char *dir, const char *name, uint8_t **px, uint32_t *w, uint32_t *h) {
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (rc_image_load(path, px, w, h, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        return -1;
    }
    return 0;
}

#define DEPTHS_RULE "1 to 16 ring depths from 1 to 16, separated by commas"
static const char USAGE[] =
    "usage: bench-vk [options] DIR\n"
    "  DIR                  directory of 1920x1080 and 3840x2160 PNG frames (heatmap-* used)\n"
    "  --frames N           timed frames per run, 10-1000000 (default 300)\n"
    "  --threads T          encoder threads, 0-256 (default 0: all cores)\n"
    "  --depths D,D,...     ring depths to measure, each 1-16 (default 1,2,3,4)\n"
    "  --damage             damage on the GPU against whole frames instead (ring depth 4, no encoding)\n"
    "  --json FILE          also write the figures as JSON to FILE\n"
    "  --help               print this and exit\n";

/* "1,2,4" → depths (each 1..16, at most 16 of them). 0 or -1. */
static int parse_depths(const char *s, int *depths, int *nd) {
    char buf[256];
    if (!*s || strlen(s) >= sizeof buf) return -1;
    memcpy(buf, s, strlen(s) + 1);
    *nd = 0;
    for (char *tok = buf, *comma;; tok = comma + 1) {
        comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        long d;
        if (*nd == 16 || cli_parse_long(tok, 1, 16, &d)) return -1;
        depths[(*nd)++] = (int)d;
        if (!comma) return 0;
    }
}

static int bench_damage(const char *dir, const char *const names[2], int frames, FILE *js) {
    printf("| frame | scene | damage | GPU ms | ready ms | bytes read back / frame | of a whole frame | dirty tiles "
           "| copied tiles | read back whole | frames/s |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    int first = 1;
    for (int ni = 0; ni < 2; ni++) {
        uint8_t *px;
        uint32_t w, h;
        if (load(dir, names[ni], &px, &w, &h)) return 1;
        for (int scene = 0; scene < 2; scene++)
            for (int dmg = 0; dmg < 3; dmg++) {
                if (scene == 1 && dmg == 2) continue; /* the marker never reaches the whole-frame threshold */
                if (damage_row(px, w, h, scene, dmg, frames, js, &first)) return 1;
            }
        free(px);
    }
    return 0;
}

int main(int argc, char **argv) {
    int frames = 300, threads = 0, damage = 0;
    const char *dir = NULL, *json = NULL, *depths_s = "1,2,3,4";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--frames")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 10, 1000000, &frames)) return CLI_USAGE;
        } else if (!strcmp(a, "--threads")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 0, 256, &threads)) return CLI_USAGE;
        } else if (!strcmp(a, "--depths")) {
            if (!(depths_s = cli_value(argc, argv, &i))) return cli_missing(PROG, a, DEPTHS_RULE);
        } else if (!strcmp(a, "--damage")) {
            damage = 1;
        } else if (!strcmp(a, "--json")) {
            if (!(json = cli_value(argc, argv, &i)) || !*json) return cli_missing(PROG, a, "a file to write");
        } else {
            int r = cli_rest(PROG, USAGE, a, &dir, "DIR");
            if (r >= 0) return r;
        }
    }
    int depths[16], nd = 0;
    if (parse_depths(depths_s, depths, &nd)) {
        char b[64];
        return cli_error(PROG, "--depths %s: must be %s", cli_show(depths_s, b, sizeof b), DEPTHS_RULE);
    }
    if (!dir) return cli_error(PROG, "missing DIR: the directory of 1920x1080 and 3840x2160 PNG frames");
    if (!threads) threads = rc_cpu_count();
    const char *names[2] = {"heatmap-1920x1080.png", "heatmap-3840x2160.png"};
    FILE *js = json ? fopen(json, "w") : NULL;
    if (json && !js) {
        fprintf(stderr, PROG ": --json %s: %s\n", json, strerror(errno));
        return 1;
    }
    if (js) fprintf(js, "[\n");
    if (damage) {
        int r = bench_damage(dir, names, frames, js);
        if (js) {
            fprintf(js, "\n]\n");
            fclose(js);
        }
        return r;
    }
    rc_pool *pool;
    if (rc_pool_new(threads, &pool)) return 1;
    rc_packet_pool *packets = rc_packet_pool_new();
    int first = 1;
    printf("| frame | ring depth | encode | copy ms (GPU) | fence ms | ready ms | handoff ms | encode ms | frames/s |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (int ni = 0; ni < 2; ni++) {
        uint8_t *px;
        uint32_t w, h;
        if (load(dir, names[ni], &px, &w, &h)) return 1;
        for (int di = 0; di < nd; di++)
            for (int enc = 0; enc < 2; enc++) {
                rcanvas_vk_config vc;
                rcanvas_vk_config_init(&vc);
                vc.ring_depth = depths[di];
                rcanvas_vk *vk;
                static sink sk;
                memset(&sk, 0, sizeof sk);
                if (rc_vk_new_internal(NULL, &vc, NULL, &vk)) {
                    fprintf(stderr, "no Vulkan device\n");
                    return 1;
                }
                sk.vk = vk;
                sk.pool = pool;
                sk.packets = packets;
                sk.encode = enc;
                rc_vk_set_sink(vk, (rc_vk_sink){.deliver = deliver, .user = &sk});
                VkDeviceMemory mem;
                VkImage img = upload_image(vk, px, w, h, &mem);
                rcanvas_vk_frame f = {.image = img, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w, .height = h,
                                      .layout = VK_IMAGE_LAYOUT_GENERAL,
                                      .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_SAMPLED_BIT};
                int warm = 20, total = warm + frames;
                int64_t t0 = 0;
                for (int i = 0; i < total; i++) {
                    if (i == warm) {
                        while (atomic_load(&sk.done) < warm) sched_yield();
                        t0 = rc_now_us();
                        sk.copy_ms = sk.fence_ms = sk.ready_ms = sk.handoff_ms = 0;
                        sk.n = 0;
                        atomic_store(&sk.encode_us, 0);
                    }
                    int r;
                    while ((r = rcanvas_present_vk(vk, &f)) == RCANVAS_EBUSY) sched_yield();
                    if (r) {
                        fprintf(stderr, "present_vk: %s\n", rcanvas_strerror(r));
                        return 1;
                    }
                }
                while (atomic_load(&sk.done) < total) sched_yield();
                double secs = (double)(rc_now_us() - t0) / 1e6;
                int n = sk.n ? sk.n : 1;
                double enc_ms = enc ? (double)atomic_load(&sk.encode_us) / 1000.0 / frames : 0;
                char enc_s[32] = "–";
                if (enc) snprintf(enc_s, sizeof enc_s, "%.2f", enc_ms);
                printf("| %ux%u | %d | %s | %.3f | %.3f | %.3f | %.3f | %s | %.0f |\n", w, h, depths[di],
                       enc ? "jpeg q85" : "none", sk.copy_ms / n, sk.fence_ms / n, sk.ready_ms / n, sk.handoff_ms / n,
                       enc_s, frames / secs);
                fflush(stdout);
                if (js)
                    fprintf(js, "%s  {\"width\":%u,\"height\":%u,\"depth\":%d,\"encode\":%d,\"copy_ms\":%.4f,"
                                "\"fence_ms\":%.4f,\"ready_ms\":%.4f,\"handoff_ms\":%.4f,\"encode_ms\":%.3f,\"fps\":%.1f}",
                            first ? "" : ",\n", w, h, depths[di], enc, sk.copy_ms / n, sk.fence_ms / n, sk.ready_ms / n,
                            sk.handoff_ms / n, enc_ms, frames / secs);
                first = 0;
                VkDevice dev = rcanvas_vk_device(vk);
                vkDeviceWaitIdle(dev);
                vkDestroyImage(dev, img, NULL);
                vkFreeMemory(dev, mem, NULL);
                rcanvas_vk_free(vk);
            }
        free(px);
    }
    if (js) {
        fprintf(js, "\n]\n");
        fclose(js);
    }
    rc_packet_pool_free(packets);
    rc_pool_free(pool);
    return 0;
}
