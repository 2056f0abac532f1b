/* SPDX-License-Identifier: MIT */
/*
 * bench-jpeg-gpu — the Vulkan compute JPEG encoder, VkImage → complete JPEG bytes in host memory: per stage
 * (Vulkan timestamp queries: input copy, DCT+quantization, Huffman, prefix sum, place (block path: bit-aligned
 * gather + stuffing scan), pack), the path (blocks/intervals) and restart interval, and the whole path (wall
 * clock, call to return), medians over N frames after 20 warm-up frames, at q75/q90 and 4:2:0/4:4:4, each with
 * the image read in the DCT pass ("image": it has SAMPLED usage) and copied first ("copy"), beside one
 * single-threaded libturbojpeg call on the same pixels. The frames: DIR's PNG files, then a generated smooth
 * 3840×2160 frame (tests/testframes.h tf_smooth_new).
 *   bench-jpeg-gpu [--frames N] [--tj N] DIR    (DIR: *-1920x1080.png and *-3840x2160.png frames)
 */
#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "codec/gpu/jpeg_gpu.h"
#include "cli.h"
#include "imageio.h"
#include "source/vk_readback.h"
#include "testframes.h"
#include "vk_util.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

#define PROG "bench-jpeg-gpu"
static const char USAGE[] =
    "usage: bench-jpeg-gpu [options] DIR\n"
    "  DIR                  directory of PNG frames (*-1920x1080.png, *-3840x2160.png)\n"
    "  --frames N           timed frames per setting, 5-1000000 (default 200)\n"
    "  --tj N               timed libturbojpeg runs per setting, 0-101 (default 21; 0: its size only)\n"
    "  --help               print this and exit\n";

int main(int argc, char **argv) {
    int frames = 200, tj_runs = 21;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "--frames")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 5, 1000000, &frames)) return CLI_USAGE;
        } else if (!strcmp(a, "--tj")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 0, 101, &tj_runs)) return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            return cli_error(PROG, "%s: unknown option", a);
        } else if (dir) {
            return cli_error(PROG, "%s: unexpected argument (DIR is %s already)", a, dir);
        } else {
            dir = a;
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
                       direct ? "image" : "copy", median(st[0], frames), median(st[1], frames), median(st[2], frames), median(st[3], frames),
                       median(st[4], frames), median(st[5], frames), median(gpu, frames), median(wall, frames), len,
                       (double)len / (double)tdl, psnr, tj_runs ? median(tjms, tj_runs) : 0.0, tl);
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
