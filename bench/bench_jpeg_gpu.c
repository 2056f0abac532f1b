/* SPDX-License-Identifier: MIT */
/*
 * bench-jpeg-gpu — the Vulkan compute JPEG encoder, VkImage → complete JPEG bytes in host memory: per stage
 * (Vulkan timestamp queries: input copy, DCT+quantization, Huffman, prefix sum, place (block path: bit-aligned
 * gather + stuffing scan), pack), the path (blocks/intervals) and restart interval, and the whole path (wall
 * clock, call to return), medians over N frames after 20 warm-up frames, at q75/q90 and 4:2:0/4:4:4, each with
 * the image read in the DCT pass ("image": it has SAMPLED usage) and copied first ("copy"), beside one
 * single-threaded libturbojpeg call on the same pixels. The frames: DIR's PNG files, then a generated smooth
 * 3840×2160 frame (tests/testframes.h tf_smooth_new).
 * With --pipeline N, instead, per 3840×2160 frame at q75/q90, 4:2:0/4:4:4, image read in the DCT pass:
 *   raw      1 and then N encoders (rc_gpu_jpeg_new_sibling) recorded round-robin into their own command buffers,
 *            each submitted with its own fence, up to N encodes in flight; a fence waited for (vkWaitForFences)
 *            only when its encoder comes round again, its file then in host memory (rc_gpu_jpeg_result): frames/s
 *            (wall clock over the timed frames), CPU ms per frame (the process's CPU time: recording, submitting,
 *            waiting) and bytes;
 *   ring     through the readback ring into a JPEG canvas (rcanvas_present_vk, ring depth N, presented as fast as
 *            the ring takes them for --seconds S), with 1 shared encoder (RCANVAS_GPU_JPEG_ENCODERS=1: the old
 *            setup) and with one per slot: frames delivered/s, the share encoded on the GPU, CPU ms per frame.
 *   bench-jpeg-gpu [--frames N] [--tj N] [--pipeline N [--seconds S]] DIR
 *   (DIR: *-1920x1080.png and *-3840x2160.png frames)
 */
#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "codec/gpu/jpeg_gpu.h"
#include "cli.h"
#include "rcanvas.h"
#include "imageio.h"
#include "source/vk_readback.h"
#include "testframes.h"
#include "vk_util.h"
#include "bench_util.h"

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static double cpu_ms(void) { return (double)bench_cpu_us() / 1e3; }

/* --pipeline, raw: `n` encoders (enc and n-1 siblings) round-robin, each with its own command buffer and fence.
 * Prints a table row; 0, or -1 if an encode failed. */
static int raw_row(rcanvas_vk *vk, rc_gpu_jpeg *enc, VkImage img, uint32_t w, uint32_t h, const char *name, int q,
                   rcanvas_subsampling ss, int n, int frames) {
    VkDevice dev = rcanvas_vk_device(vk);
    VkQueue queue = rcanvas_vk_queue(vk);
    rc_gpu_jpeg *e[16] = {enc};
    VkCommandBuffer cb[16];
    VkFence fence[16];
    VkCommandPool pool;
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = rcanvas_vk_queue_family(vk)};
    if (vkCreateCommandPool(dev, &pci, NULL, &pool) != VK_SUCCESS) return -1;
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = (uint32_t)n};
    int bad = vkAllocateCommandBuffers(dev, &cai, cb) != VK_SUCCESS;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    for (int k = 0; k < n; k++) {
        fence[k] = VK_NULL_HANDLE;
        if (k && !bad) bad = rc_gpu_jpeg_new_sibling(enc, &e[k]) != RCANVAS_OK;
        if (!bad) bad = vkCreateFence(dev, &fci, NULL, &fence[k]) != VK_SUCCESS;
    }
    const int warm = 20;
    int pending[16] = {0};
    double bytes = 0, t0 = 0, c0 = 0;
    VkImageUsageFlags usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_SAMPLED_BIT;
    for (int i = 0; i < warm + frames + n && !bad; i++) {
        int k = i % n;
        if (i == warm) t0 = (double)rc_now_us() / 1000.0, c0 = cpu_ms();
        if (pending[k]) { /* its previous encode: wait, take the file, end it */
            const uint8_t *jpeg;
            size_t len = 0;
            bad = vkWaitForFences(dev, 1, &fence[k], VK_TRUE, UINT64_MAX) != VK_SUCCESS ||
                  rc_gpu_jpeg_result(e[k], &jpeg, &len) != RCANVAS_OK;
            rc_gpu_jpeg_finish(e[k]);
            vkResetFences(dev, 1, &fence[k]);
            pending[k] = 0;
            if (i >= warm + n) bytes += (double)len;
        }
        if (i >= warm + frames) continue; /* draining */
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        bad = bad || vkResetCommandBuffer(cb[k], 0) != VK_SUCCESS || vkBeginCommandBuffer(cb[k], &bi) != VK_SUCCESS ||
              rc_gpu_jpeg_record(e[k], cb[k], img, VK_FORMAT_R8G8B8A8_UNORM, usage, VK_IMAGE_LAYOUT_GENERAL, w, h, q,
                                 ss) != RCANVAS_OK ||
              vkEndCommandBuffer(cb[k]) != VK_SUCCESS;
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb[k]};
        if (!bad) bad = vkQueueSubmit(queue, 1, &si, fence[k]) != VK_SUCCESS;
        pending[k] = !bad;
    }
    double wall = (double)rc_now_us() / 1000.0 - t0, cpu = cpu_ms() - c0;
    vkDeviceWaitIdle(dev);
    for (int k = 0; k < n; k++) {
        if (pending[k]) rc_gpu_jpeg_finish(e[k]);
        if (fence[k]) vkDestroyFence(dev, fence[k], NULL);
        if (k && e[k]) rc_gpu_jpeg_free(e[k]);
    }
    vkDestroyCommandPool(dev, pool, NULL);
    if (bad) {
        printf("| %s | %d | %s | raw | %d | encode failed |\n", name, q, ss ? "4:4:4" : "4:2:0", n);
        return -1;
    }
    printf("| %s | %d | %s | raw | %d | %.0f | %.3f | %.3f | | %.0f |\n", name, q, ss ? "4:4:4" : "4:2:0", n,
           frames / (wall / 1000.0), wall / frames, cpu / frames, bytes / frames);
    fflush(stdout);
    return 0;
}

/* --pipeline, ring: the readback ring (depth n) into a JPEG canvas q, ss; `encoders` 1 or n. */
static int ring_row(rcanvas_vk *own, VkImage img, uint32_t w, uint32_t h, const char *name, int q,
                    rcanvas_subsampling ss, int n, int encoders, int seconds) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    rcanvas_server *srv = NULL;
    rcanvas_canvas *c = NULL;
    rcanvas_vk *vk = NULL;
    int r = rcanvas_server_new(&sc, &srv);
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = "bench";
    cc.width = w, cc.height = h;
    cc.codec = RCANVAS_CODEC_JPEG;
    cc.quality = q;
    cc.subsampling = ss;
    if (!r) r = rcanvas_canvas_new(srv, &cc, &c);
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    vc.instance = rcanvas_vk_instance(own);
    vc.physical_device = rcanvas_vk_physical_device(own);
    vc.device = rcanvas_vk_device(own);
    vc.queue_family = rcanvas_vk_queue_family(own);
    vc.queue = rcanvas_vk_queue(own);
    vc.ring_depth = n;
    vc.damage = -1; /* every frame whole: the encoder's work, not damage's */
    char env[8];
    snprintf(env, sizeof env, "%d", encoders);
    setenv("RCANVAS_GPU_JPEG_ENCODERS", env, 1);
    if (!r) r = rcanvas_vk_new(c, &vc, &vk);
    unsetenv("RCANVAS_GPU_JPEG_ENCODERS");
    if (r) {
        printf("| %s | %d | %s | ring | %d | setup failed: %s |\n", name, q, ss ? "4:4:4" : "4:2:0", encoders,
               rcanvas_strerror(r));
        rcanvas_canvas_free(c);
        rcanvas_server_free(srv);
        return -1;
    }
    rcanvas_vk_frame f = {.image = img, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w, .height = h,
                          .layout = VK_IMAGE_LAYOUT_GENERAL,
                          .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_SAMPLED_BIT};
    for (int i = 0; i < 20; i++) /* warm-up */
        while (rcanvas_present_vk(vk, &f) == RCANVAS_EBUSY) usleep(50);
    usleep(200000);
    rc_vk_stats s0, s1;
    rc_vk_get_stats(vk, &s0);
    double t0 = (double)rc_now_us() / 1000.0, c0 = cpu_ms();
    while ((double)rc_now_us() / 1000.0 - t0 < seconds * 1000.0)
        if (rcanvas_present_vk(vk, &f) == RCANVAS_EBUSY) usleep(50);
    rc_vk_get_stats(vk, &s1);
    double wall = (double)rc_now_us() / 1000.0 - t0, cpu = cpu_ms() - c0;
    double delivered = (double)(s1.delivered - s0.delivered);
    printf("| %s | %d | %s | ring | %d | %.0f | %.3f | %.3f | %.0f %% | |\n", name, q, ss ? "4:4:4" : "4:2:0",
           encoders, delivered / (wall / 1000.0), delivered ? wall / delivered : 0, delivered ? cpu / delivered : 0,
           delivered ? 100.0 * (double)(s1.gpu_encoded - s0.gpu_encoded) / delivered : 0);
    fflush(stdout);
    rcanvas_vk_free(vk);
    rcanvas_canvas_free(c);
    rcanvas_server_free(srv);
    return 0;
}

static int run_pipelined(rcanvas_vk *vk, rc_gpu_jpeg *enc, DIR *d, const char *dir, int frames, int n, int seconds) {
    printf("# %d encodes in flight at most; raw: %d frames after 20 warm-up; ring: %d s each\n", n, frames, seconds);
    printf("| frame | q | subsampling | run | encoders | frames/s | wall ms/frame | CPU ms/frame | GPU-encoded | bytes |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    struct dirent *de;
    int bad = 0;
    while ((de = readdir(d))) {
        if (!strstr(de->d_name, "-3840x2160.png")) continue;
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        uint8_t *px;
        uint32_t w, h;
        if (rc_image_load(path, &px, &w, &h, err, sizeof err)) continue;
        VkDeviceMemory mem;
        VkImage img = upload_image(vk, px, w, h, &mem);
        static const int qs[2] = {75, 90};
        for (int qi = 0; qi < 2; qi++)
            for (int ss = 0; ss < 2; ss++) {
                bad |= raw_row(vk, enc, img, w, h, de->d_name, qs[qi], (rcanvas_subsampling)ss, 1, frames);
                bad |= raw_row(vk, enc, img, w, h, de->d_name, qs[qi], (rcanvas_subsampling)ss, n, frames);
                bad |= ring_row(vk, img, w, h, de->d_name, qs[qi], (rcanvas_subsampling)ss, n, 1, seconds);
                bad |= ring_row(vk, img, w, h, de->d_name, qs[qi], (rcanvas_subsampling)ss, n, n, seconds);
            }
        VkDevice dev = rcanvas_vk_device(vk);
        vkDeviceWaitIdle(dev);
        vkDestroyImage(dev, img, NULL);
        vkFreeMemory(dev, mem, NULL);
        free(px);
    }
    return bad ? 1 : 0;
}

#define PROG "bench-jpeg-gpu"
static const char USAGE[] =
    "usage: bench-jpeg-gpu [options] DIR\n"
    "  DIR                  directory of PNG frames (*-1920x1080.png, *-3840x2160.png)\n"
    "  --frames N           timed frames per setting, 5-1000000 (default 200)\n"
    "  --tj N               timed libturbojpeg runs per setting, 0-101 (default 21; 0: its size only)\n"
    "  --pipeline N         instead: N encodes in flight (2-16), raw and through the readback ring (4K frames)\n"
    "  --seconds S          the ring runs of --pipeline: seconds each, 1-600 (default 5)\n"
    "  --help               print this and exit\n";

int main(int argc, char **argv) {
    int frames = 200, tj_runs = 21, pipeline = 0, seconds = 5;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--frames")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 5, 1000000, &frames)) return CLI_USAGE;
        } else if (!strcmp(a, "--tj")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 0, 101, &tj_runs)) return CLI_USAGE;
        } else if (!strcmp(a, "--pipeline")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 2, 16, &pipeline)) return CLI_USAGE;
        } else if (!strcmp(a, "--seconds")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 600, &seconds)) return CLI_USAGE;
        } else {
            int r = cli_rest(PROG, USAGE, a, &dir, "DIR");
            if (r >= 0) return r;
        }
    }
    if (!dir) return cli_error(PROG, "missing DIR: the directory of *-1920x1080.png and *-3840x2160.png frames");
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
        return 1;
    }
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    rcanvas_vk *vk;
    rc_gpu_jpeg *enc;
    if (rc_vk_new_internal(NULL, &vc, NULL, &vk) ||
        rc_gpu_jpeg_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                        rcanvas_vk_queue(vk), NULL, &enc)) {
        fprintf(stderr, "bench-jpeg-gpu: no Vulkan device\n");
        return 1;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(rcanvas_vk_physical_device(vk), &props);
    printf("# device: %s\n", props.deviceName);
    printf("# prefix sums: %s\n", rc_gpu_jpeg_subgroup_size(enc) ? "subgroup arithmetic" : "shared memory "
                                                                   "(no subgroup arithmetic, or RCANVAS_GPU_JPEG_SUBGROUPS=0)");
    if (rc_gpu_jpeg_subgroup_size(enc)) printf("# subgroup size: %u\n", rc_gpu_jpeg_subgroup_size(enc));
    printf("# path: RCANVAS_GPU_JPEG_PATH=%s, RCANVAS_GPU_JPEG_MCUS_PER_INTERVAL=%s\n",
           getenv("RCANVAS_GPU_JPEG_PATH") ? getenv("RCANVAS_GPU_JPEG_PATH") : "(blocks)",
           getenv("RCANVAS_GPU_JPEG_MCUS_PER_INTERVAL") ? getenv("RCANVAS_GPU_JPEG_MCUS_PER_INTERVAL") : "(none)");
    if (pipeline) {
        int r = run_pipelined(vk, enc, d, dir, frames, pipeline, seconds);
        closedir(d);
        rc_gpu_jpeg_free(enc);
        rcanvas_vk_free(vk);
        return r;
    }
    printf("| frame | q | subsampling | path, RST MCUs | input | copy | DCT+quant | Huffman | scan | place | pack | GPU total ms | whole path ms (wall) | bytes | size vs tj | PSNR dB | libturbojpeg 1 thread ms | tj bytes |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    struct dirent *de;
    double *wall = malloc(sizeof(double) * (size_t)frames), *gpu = malloc(sizeof(double) * (size_t)frames),
           *st[6];
    for (int i = 0; i < 6; i++) st[i] = malloc(sizeof(double) * (size_t)frames);
    tjhandle tj = tjInitCompress();
    char *names[64];
    int nn = 0;
    while ((de = readdir(d)) && nn < 63) /* and the generated one */
        if (strstr(de->d_name, ".png")) names[nn++] = strdup(de->d_name);
    qsort(names, (size_t)nn, sizeof names[0], cmp_name);
    names[nn++] = strdup("smooth-3840x2160 (generated)"); /* a rendered scene's soft gradient: small payloads */
    for (int f = 0; f < nn; f++) {
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, names[f]);
        uint8_t *px;
        uint32_t w = 3840, h = 2160;
        if (f == nn - 1) {
            if (!(px = tf_smooth_new(w, h))) continue;
        } else if (rc_image_load(path, &px, &w, &h, err, sizeof err)) continue;
        VkDeviceMemory mem;
        VkImage img = upload_image(vk, px, w, h, &mem); /* SAMPLED: read in the DCT pass (no input copy) */
        static const int qs[2] = {75, 90};
        for (int qi = 0; qi < 2; qi++)
            for (int ss = 0; ss < 2; ss++)
            for (int via_copy = 0; via_copy < 2; via_copy++) {
                /* the image can be sampled: the DCT pass reads it; told it cannot, the encoder copies it first */
                VkImageUsageFlags usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | (via_copy ? 0 : VK_IMAGE_USAGE_SAMPLED_BIT);
                const uint8_t *jpeg = NULL;
                size_t len = 0;
                int bad = 0, path_blocks = 0, direct = 0;
                unsigned rst = 0;
                for (int i = 0; i < 20 + frames && !bad; i++) {
                    rc_gpu_jpeg_times t;
                    if (rc_gpu_jpeg_encode_image(enc, img, VK_FORMAT_R8G8B8A8_UNORM, usage, VK_IMAGE_LAYOUT_GENERAL, w,
                                                 h, qs[qi], (rcanvas_subsampling)ss, &jpeg, &len, &t)) {
                        bad = 1;
                        break;
                    }
                    if (i < 20) continue;
                    wall[i - 20] = t.wall_ms;
                    gpu[i - 20] = t.gpu_ms;
                    for (int k = 0; k < 6; k++) st[k][i - 20] = t.stage_ms[k];
                    path_blocks = t.blocks, rst = t.restart_mcus, direct = t.direct;
                }
                if (bad) {
                    printf("| %s | %d | %s | encode failed |\n", names[f], qs[qi], ss ? "4:4:4" : "4:2:0");
                    continue;
                }
                uint8_t *dec;
                uint32_t dw, dh;
                double psnr = -1;
                if (!rc_decode_jpeg(jpeg, len, &dec, &dw, &dh)) {
                    psnr = rc_psnr_rgb(dec, (size_t)w * 4, px, (size_t)w * 4, w, h);
                    free(dec);
                }
                double tjms[101] = {0};
                unsigned long tl = 0;
                unsigned char *tjo = NULL;
                for (int i = 0; i < tj_runs; i++) {
                    int64_t t0 = rc_now_us();
                    tjCompress2(tj, px, (int)w, (int)w * 4, (int)h, TJPF_RGBA, &tjo, &tl, ss ? TJSAMP_444 : TJSAMP_420,
                                qs[qi], TJFLAG_FASTDCT);
                    tjms[i] = (double)(rc_now_us() - t0) / 1000.0;
                }
                tjFree(tjo);
                /* the size reference: libjpeg-turbo's default (accurate integer DCT), as the tests' 1.03× bound */
                unsigned char *tjd = NULL;
                unsigned long tdl = 0;
                tjCompress2(tj, px, (int)w, (int)w * 4, (int)h, TJPF_RGBA, &tjd, &tdl, ss ? TJSAMP_444 : TJSAMP_420,
                            qs[qi], 0);
                tjFree(tjd);
                printf("| %s | %d | %s | %s %u | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %zu | %.3f× | "
                       "%.2f | %.2f | %lu |\n",
                       names[f], qs[qi], ss ? "4:4:4" : "4:2:0", path_blocks ? "blocks" : "intervals", rst,
                       direct ? "image" : "copy", bench_median(st[0], frames), bench_median(st[1], frames),
                       bench_median(st[2], frames), bench_median(st[3], frames), bench_median(st[4], frames),
                       bench_median(st[5], frames), bench_median(gpu, frames), bench_median(wall, frames), len,
                       (double)len / (double)tdl, psnr, tj_runs ? bench_median(tjms, tj_runs) : 0.0, tl);
                fflush(stdout);
            }
        VkDevice dev = rcanvas_vk_device(vk);
        vkDeviceWaitIdle(dev);
        vkDestroyImage(dev, img, NULL);
        vkFreeMemory(dev, mem, NULL);
        free(px);
    }
    closedir(d);
    tjDestroy(tj);
    rc_gpu_jpeg_free(enc);
    rcanvas_vk_free(vk);
    return 0;
}
