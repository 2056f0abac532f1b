/* SPDX-License-Identifier: MIT */
/*
 * rcanvas-encode — encodes one image file (PNG or PPM in) with an rcanvas encoder and prints the time and size,
 * so users can compare codecs and settings on their own frames:
 *   rcanvas-encode [--codec jpeg|jpeg-gpu|png] [--quality Q] [--subsampling 420|444] [--repeat N] IN OUT
 * The output is one complete JPEG or PNG file (single stripe); OUT's extension picks the codec when --codec is
 * not given, and must fit it when it is (out.webp, or out.png with --codec jpeg, are refused). Time is the median of N encodes (ms); for
 * jpeg-gpu (the Vulkan compute encoder, on the first Vulkan device) it is upload + encode + the file in host
 * memory, and the GPU time of the stages is printed too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"
#include "codec/codec.h"
#if RCANVAS_HAVE_VULKAN
#include "rcanvas_vk.h"
#include "codec/gpu/jpeg_gpu.h"
#include "source/vk_readback.h"
#endif
#include "cli.h"
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

#define PROG "rcanvas-encode"

static const char USAGE[] =
    "usage: rcanvas-encode [options] IN OUT\n"
    "  IN                   a PNG or binary PPM (P6) file\n"
    "  OUT                  the encoded file; its extension, if any, must fit the codec: .jpg or .jpeg for jpeg\n"
    "                       and jpeg-gpu, .png for png\n"
    "  --codec jpeg|jpeg-gpu|png  the encoder (default: from OUT's extension, else jpeg)\n"
    "  --quality Q          JPEG quality 1-100 (default 85)\n"
    "  --subsampling 420|444|auto  JPEG chroma subsampling (default 420; auto: as the library's AUTO chooses from\n"
    "                      the pixels, said in the output line; the CPU encoder only)\n"
    "  --repeat N           encode N times (1-10000) and print the median time (default 1)\n"
    "  --help               print this and exit\n";

/* The codec OUT's extension names: RCANVAS_CODEC_JPEG or _PNG, 0 when it has none, -1 when it is not one we write.
 * Only the last path component counts ("out.d/file" has none). */
static int codec_of_name(const char *path) {
    const char *base = strrchr(path, '/');
    const char *dot = strrchr(base ? base + 1 : path, '.');
    if (!dot) return 0;
    if (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg")) return RCANVAS_CODEC_JPEG;
    if (!strcasecmp(dot, ".png")) return RCANVAS_CODEC_PNG;
    return -1;
}

/* The first component's sampling factors byte of a JPEG's SOF0 (0x22 for 4:2:0, 0x11 for 4:4:4), or -1. */
static int jpeg_luma_sampling(const uint8_t *d, size_t n) {
    for (size_t i = 2; i + 11 < n; i++)
        if (d[i] == 0xFF && d[i + 1] == 0xC0) return d[i + 11];
    return -1;
}

int main(int argc, char **argv) {
    static const char *const codecs[] = {"jpeg", "jpeg-gpu", "png", NULL}, *const subs[] = {"420", "444", "auto", NULL};
    rc_encode_params p = {.codec = RCANVAS_CODEC_JPEG, .quality = 85, .subsampling = RCANVAS_SUBSAMP_420};
    int repeat = 1, gpu = 0, codec_given = 0, k;
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "--codec")) {
            if ((k = cli_choice(PROG, a, cli_value(argc, argv, &i), codecs)) < 0) return CLI_USAGE;
            p.codec = k == 2 ? RCANVAS_CODEC_PNG : RCANVAS_CODEC_JPEG;
            gpu = k == 1;
            codec_given = 1;
        } else if (!strcmp(a, "--quality")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 100, &p.quality)) return CLI_USAGE;
        } else if (!strcmp(a, "--subsampling")) {
            if ((k = cli_choice(PROG, a, cli_value(argc, argv, &i), subs)) < 0) return CLI_USAGE;
            p.subsampling = k == 2 ? RCANVAS_SUBSAMP_AUTO : k ? RCANVAS_SUBSAMP_444 : RCANVAS_SUBSAMP_420;
        } else if (!strcmp(a, "--repeat")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 10000, &repeat)) return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            return cli_error(PROG, "%s: unknown option", a);
        } else if (!in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            return cli_error(PROG, "%s: unexpected argument (takes one IN and one OUT)", a);
        }
    }
    if (!in) return cli_error(PROG, "missing IN and OUT: the image to encode and the file to write");
    if (!out) return cli_error(PROG, "missing OUT: the file to write (.jpg, .jpeg or .png)");
    int named = codec_of_name(out);
    if (named < 0)
        return cli_error(PROG, "%s: unknown extension: must be .jpg or .jpeg (jpeg, jpeg-gpu), .png (png), or none", out);
    if (named && codec_given && named != (int)p.codec)
        return cli_error(PROG, "%s: extension does not match --codec %s: must be %s", out,
                         gpu ? "jpeg-gpu" : p.codec == RCANVAS_CODEC_PNG ? "png" : "jpeg",
                         p.codec == RCANVAS_CODEC_PNG ? ".png" : ".jpg or .jpeg");
    if (named && !codec_given) p.codec = (rcanvas_codec)named;

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
        char what[32]; /* quality and subsampling are JPEG's; PNG has neither */
        if (p.codec == RCANVAS_CODEC_PNG) snprintf(what, sizeof what, "png lossless");
        else if (p.subsampling == RCANVAS_SUBSAMP_AUTO) /* what AUTO chose: the luma's sampling factors (SOF0) */
            snprintf(what, sizeof what, "jpeg q%d auto %s", p.quality,
                     jpeg_luma_sampling(rc_buf_data(&buf), buf.len) == 0x11 ? "4:4:4" : "4:2:0");
        else snprintf(what, sizeof what, "jpeg q%d %s", p.quality, p.subsampling == RCANVAS_SUBSAMP_444 ? "4:4:4" : "4:2:0");
        printf("%s %ux%u %s: %.2f ms, %zu bytes (%.3f bits/pixel)\n", in, w, h, what, ms[repeat / 2], buf.len,
               8.0 * (double)buf.len / ((double)w * h));
    }
    free(ms);
    rc_buf_free(&buf);
    rc_encoder_free(enc);
    free(rgba);
    return rc;
}
