/*
 * rcanvas-encode — encodes one image file (PNG or PPM in) with an rcanvas encoder and prints the time and size,
 * so users can compare codecs and settings on their own frames:
 *   rcanvas-encode [--codec jpeg|jpeg-gpu|png] [--quality Q] [--subsampling 420|444] [--repeat N] IN OUT
 * The output is one complete JPEG or PNG file (single stripe). Time is the median of N encodes (ms); for
 * jpeg-gpu (the Vulkan compute encoder, on the first Vulkan device) it is upload + encode + the file in host
 * memory, and the GPU time of the stages is printed too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "codec/codec.h"
#if RCANVAS_HAVE_VULKAN
#include "rcanvas_vk.h"
#include "codec/gpu/jpeg_gpu.h"
#include "source/vk_readback.h"
#endif
#include "imageio.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#if RCANVAS_HAVE_VULKAN
static int encode_gpu(const char *in, const char *out, const uint8_t *rgba, uint32_t w, uint32_t h,
                      const rc_encode_params *p, int repeat) {
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    rcanvas_vk *vk = NULL;
    rc_gpu_jpeg *e = NULL;
    int r = rc_vk_new_internal(NULL, &vc, NULL, &vk);
    if (!r)
        r = rc_gpu_jpeg_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                            rcanvas_vk_queue(vk), NULL, &e);
    rc_image img = {.pixels = rgba, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    double *ms = malloc(sizeof(double) * (size_t)repeat), *gms = malloc(sizeof(double) * (size_t)repeat);
    const uint8_t *jpeg = NULL;
    size_t len = 0;
    if (!ms || !gms) r = RCANVAS_ENOMEM;
    for (int i = 0; i < repeat && !r; i++) {
        rc_gpu_jpeg_times t;
        r = rc_gpu_jpeg_encode_cpu(e, &img, p->quality, p->subsampling, &jpeg, &len, &t);
        ms[i] = t.wall_ms;
        gms[i] = t.gpu_ms;
    }
    int rc = 0;
    if (r) {
        fprintf(stderr, "rcanvas-encode: jpeg-gpu: %s\n", rcanvas_strerror(r));
        rc = 1;
    } else if (rc_write_file(out, jpeg, len)) {
        fprintf(stderr, "rcanvas-encode: cannot write %s\n", out);
        rc = 1;
    } else {
        qsort(ms, (size_t)repeat, sizeof(double), cmp_double);
        qsort(gms, (size_t)repeat, sizeof(double), cmp_double);
        printf("%s %ux%u jpeg-gpu q%d %s: %.2f ms (GPU %.3f ms), %zu bytes (%.3f bits/pixel)\n", in, w, h, p->quality,
               p->subsampling == RCANVAS_SUBSAMP_444 ? "4:4:4" : "4:2:0", ms[repeat / 2], gms[repeat / 2], len,
               8.0 * (double)len / ((double)w * h));
    }
    free(ms);
    free(gms);
    rc_gpu_jpeg_free(e);
    rcanvas_vk_free(vk);
    return rc;
}
#else
static int encode_gpu(const char *in, const char *out, const uint8_t *rgba, uint32_t w, uint32_t h,
                      const rc_encode_params *p, int repeat) {
    fprintf(stderr, "rcanvas-encode: jpeg-gpu: this build has no Vulkan (RCANVAS_VULKAN=OFF)\n");
    return 2;
}
#endif

static void usage(void) {
    fprintf(stderr, "usage: rcanvas-encode [--codec jpeg|jpeg-gpu|png] [--quality 1-100] [--subsampling 420|444] "
                    "[--repeat N] IN.png|IN.ppm OUT\n");
}

int main(int argc, char **argv) {
    rc_encode_params p = {.codec = RCANVAS_CODEC_JPEG, .quality = 85, .subsampling = RCANVAS_SUBSAMP_420};
    int repeat = 1, gpu = 0;
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--codec") && v) {
            if (!strcmp(v, "jpeg")) p.codec = RCANVAS_CODEC_JPEG;
            else if (!strcmp(v, "jpeg-gpu")) p.codec = RCANVAS_CODEC_JPEG, gpu = 1;
            else if (!strcmp(v, "png")) p.codec = RCANVAS_CODEC_PNG;
            else return usage(), 2;
            i++;
        } else if (!strcmp(a, "--quality") && v) {
            p.quality = atoi(v);
            if (p.quality < 1 || p.quality > 100) return usage(), 2;
            i++;
        } else if (!strcmp(a, "--subsampling") && v) {
            if (!strcmp(v, "420")) p.subsampling = RCANVAS_SUBSAMP_420;
            else if (!strcmp(v, "444")) p.subsampling = RCANVAS_SUBSAMP_444;
            else return usage(), 2;
            i++;
        } else if (!strcmp(a, "--repeat") && v) {
            repeat = atoi(v);
            if (repeat < 1 || repeat > 10000) return usage(), 2;
            i++;
        } else if (a[0] == '-' && a[1]) {
            return usage(), 2;
        } else if (!in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            return usage(), 2;
        }
    }
    if (!in || !out) return usage(), 2;

    char err[256];
    uint8_t *rgba = NULL;
    uint32_t w, h;
    if (rc_image_load(in, &rgba, &w, &h, err, sizeof err)) {
        fprintf(stderr, "rcanvas-encode: %s\n", err);
        return 1;
    }
    if (gpu) {
        int rc = encode_gpu(in, out, rgba, w, h, &p, repeat);
        free(rgba);
        return rc;
    }
    rc_encoder *enc = NULL;
    int r = rc_encoder_new(p.codec, &enc);
    if (r) {
        fprintf(stderr, "rcanvas-encode: %s\n", rcanvas_strerror(r));
        free(rgba);
        return 1;
    }
    rc_image img = {.pixels = rgba, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    rc_buf buf = {0};
    double *ms = malloc(sizeof(double) * (size_t)repeat);
    if (!ms) r = RCANVAS_ENOMEM;
    for (int i = 0; i < repeat && !r; i++) {
        rc_buf_clear(&buf);
        int64_t t0 = rc_now_us();
        r = rc_encoder_encode(enc, &img, &p, &buf);
        ms[i] = (double)(rc_now_us() - t0) / 1000.0;
    }
    int rc = 0;
    if (r) {
        fprintf(stderr, "rcanvas-encode: %s: %s\n", rcanvas_strerror(r), rc_encoder_error(enc));
        rc = 1;
    } else if (rc_write_file(out, rc_buf_data(&buf), buf.len)) {
        fprintf(stderr, "rcanvas-encode: cannot write %s\n", out);
        rc = 1;
    } else {
        qsort(ms, (size_t)repeat, sizeof(double), cmp_double);
        printf("%s %ux%u %s q%d %s: %.2f ms, %zu bytes (%.3f bits/pixel)\n", in, w, h,
               p.codec == RCANVAS_CODEC_JPEG ? "jpeg" : "png", p.quality,
               p.codec == RCANVAS_CODEC_PNG ? "lossless" : p.subsampling == RCANVAS_SUBSAMP_444 ? "4:4:4" : "4:2:0",
               ms[repeat / 2], buf.len, 8.0 * (double)buf.len / ((double)w * h));
    }
    free(ms);
    rc_buf_free(&buf);
    rc_encoder_free(enc);
    free(rgba);
    return rc;
}
