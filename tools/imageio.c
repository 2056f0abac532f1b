/* SPDX-License-Identifier: MIT */
/*
 * imageio.c — file loading, decoding and PSNR for tools, tests and benchmarks (see imageio.h).
 */
#include "imageio.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <spng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

int rc_read_file(const char *path, uint8_t **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    if (fseek(f, 0, SEEK_END) || ftell(f) < 0) {
        fclose(f);
        return -1;
    }
    long n = ftell(f);
    rewind(f);
    uint8_t *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        fclose(f);
        return -1;
    }
    fclose(f);
    *data = b;
    *len = (size_t)n;
    return 0;
}

int rc_write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    if (fclose(f)) ok = 0;
    return ok ? 0 : -1;
}

int rc_decode_png(const uint8_t *data, size_t len, uint8_t **rgba, uint32_t *width, uint32_t *height) {
    spng_ctx *ctx = spng_ctx_new(0);
    if (!ctx) return -1;
    struct spng_ihdr ihdr;
    size_t out_len = 0;
    uint8_t *out = NULL;
    int r = spng_set_png_buffer(ctx, data, len);
    if (!r) r = spng_set_image_limits(ctx, 65535, 65535);
    if (!r) r = spng_get_ihdr(ctx, &ihdr);
    if (!r) r = spng_decoded_image_size(ctx, SPNG_FMT_RGBA8, &out_len);
    if (!r && !(out = malloc(out_len))) r = -1;
    if (!r) r = spng_decode_image(ctx, out, out_len, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS);
    spng_ctx_free(ctx);
    if (r) {
        free(out);
        return -1;
    }
    *rgba = out;
    *width = ihdr.width;
    *height = ihdr.height;
    return 0;
}

int rc_decode_jpeg(const uint8_t *data, size_t len, uint8_t **rgba, uint32_t *width, uint32_t *height) {
    tjhandle tj = tjInitDecompress();
    if (!tj) return -1;
    int w, h, ss, cs;
    uint8_t *out = NULL;
    int r = tjDecompressHeader3(tj, data, (unsigned long)len, &w, &h, &ss, &cs);
    if (!r && !(out = malloc((size_t)w * (size_t)h * 4))) r = -1;
    if (!r) r = tjDecompress2(tj, data, (unsigned long)len, out, w, w * 4, h, TJPF_RGBA, 0);
    /* tjDecompress2 returns -1 for warnings too unless TJFLAG_STOPONWARNING semantics: check the error code */
    if (r && tjGetErrorCode(tj) == TJERR_WARNING) r = -1;
    tjDestroy(tj);
    if (r) {
        free(out);
        return -1;
    }
    *rgba = out;
    *width = (uint32_t)w;
    *height = (uint32_t)h;
    return 0;
}

static int load_ppm(const uint8_t *d, size_t n, uint8_t **rgba, uint32_t *w, uint32_t *h, char *err, size_t cap) {
    size_t i = 2;
    long v[3];
    for (int k = 0; k < 3; k++) {
        while (i < n && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t' || d[i] == '#')) {
            if (d[i] == '#')
                while (i < n && d[i] != '\n') i++;
            else
                i++;
        }
        long x = 0;
        int digits = 0;
        while (i < n && d[i] >= '0' && d[i] <= '9' && digits < 7) x = x * 10 + (d[i++] - '0'), digits++;
        if (!digits) {
            snprintf(err, cap, "malformed PPM header");
            return -1;
        }
        v[k] = x;
    }
    i++; /* one whitespace byte */
    if (v[0] < 1 || v[1] < 1 || v[0] > 65535 || v[1] > 65535 || v[2] != 255) {
        snprintf(err, cap, "PPM must be 8-bit (maxval 255) with sizes 1..65535");
        return -1;
    }
    size_t px = (size_t)v[0] * (size_t)v[1];
    if (i > n || n - i < px * 3) {
        snprintf(err, cap, "PPM data is truncated");
        return -1;
    }
    uint8_t *out = malloc(px * 4);
    if (!out) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (size_t p = 0; p < px; p++) {
        out[4 * p] = d[i + 3 * p];
        out[4 * p + 1] = d[i + 3 * p + 1];
        out[4 * p + 2] = d[i + 3 * p + 2];
        out[4 * p + 3] = 255;
    }
    *rgba = out;
    *w = (uint32_t)v[0];
    *h = (uint32_t)v[1];
    return 0;
}

int rc_image_load(const char *path, uint8_t **rgba, uint32_t *width, uint32_t *height, char *err, size_t errcap) {
    uint8_t *d = NULL;
    size_t n = 0;
    if (rc_read_file(path, &d, &n)) {
        snprintf(err, errcap, "%s: cannot read it (%s)", path, strerror(errno));
        return -1;
    }
    int r;
    if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8)) {
        r = rc_decode_png(d, n, rgba, width, height);
        if (r) snprintf(err, errcap, "%s: not a valid PNG", path);
    } else if (n >= 2 && d[0] == 'P' && d[1] == '6') {
        char why[160];
        r = load_ppm(d, n, rgba, width, height, why, sizeof why);
        if (r) snprintf(err, errcap, "%s: %s", path, why);
    } else if (n >= 2 && d[0] == 'P' && d[1] == '3') {
        snprintf(err, errcap, "%s: text PPM (P3) is not supported: save it as binary PPM (P6) or PNG", path);
        r = -1;
    } else {
        snprintf(err, errcap, "%s: not a PNG or PPM file%s", path, n ? "" : " (it is empty)");
        r = -1;
    }
    free(d);
    return r;
}

double rc_psnr_rgb(const uint8_t *a, size_t pa, const uint8_t *b, size_t pb, uint32_t w, uint32_t h) {
    double se = 0;
    for (uint32_t y = 0; y < h; y++) {
        const uint8_t *ra = a + y * pa, *rb = b + y * pb;
        for (uint32_t x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                double d = (double)ra[4 * x + c] - rb[4 * x + c];
                se += d * d;
            }
    }
    if (se == 0) return 99.0;
    double mse = se / ((double)w * h * 3);
    return 10.0 * log10(255.0 * 255.0 / mse);
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int rc_list_png(const char *dir, char **names, int max) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while (n < max && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".png") && (names[n] = strdup(de->d_name))) n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_name);
    return n;
}
