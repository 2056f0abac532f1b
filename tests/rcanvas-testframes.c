/* SPDX-License-Identifier: MIT */
/*
 * rcanvas-testframes — writes the deterministic test frames (tests/testframes.h) as PNG files, for the shell and
 * browser tests and the benchmarks when ../shared/frames is not there. PNG through the library's own encoder
 * (lossless: decoding gives back the generated RGB exactly).
 *   rcanvas-testframes OUTDIR [KIND-WxH ...]    e.g. text-1920x1080; default: every kind at every standard size
 *   rcanvas-testframes OUTDIR --motion MOTION-WxH N   a loop of N frames (1–64, the demo's --frames plays up to 64):
 *                                                 OUTDIR/MOTION-WxH-000.png …, e.g. --motion pan-1920x1080 64
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codec/codec.h"
#include "imageio.h"
#include "testframes.h"

static int write_png(rc_encoder *enc, const char *path, uint8_t *px, uint32_t w, uint32_t h) {
    rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    rc_encode_params p = {.codec = RCANVAS_CODEC_PNG};
    rc_buf out = {0};
    int r = rc_encoder_encode(enc, &img, &p, &out);
    if (r) fprintf(stderr, "rcanvas-testframes: %s: %s %s\n", path, rcanvas_strerror(r), rc_encoder_error(enc));
    else if (rc_write_file(path, rc_buf_data(&out), out.len)) {
        fprintf(stderr, "rcanvas-testframes: cannot write %s: %s\n", path, strerror(errno));
        r = -1;
    } else printf("%s %ux%u %zu bytes\n", path, w, h, out.len);
    rc_buf_free(&out);
    return r ? -1 : 0;
}

static int write_frame(rc_encoder *enc, const char *dir, tf_kind k, uint32_t w, uint32_t h) {
    uint8_t *px = tf_new(k, w, h);
    if (!px) return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%ux%u.png", dir, tf_kind_name(k), w, h);
    int r = write_png(enc, path, px, w, h);
    free(px);
    return r;
}

/* --motion NAME-WxH N */
static int write_motion(rc_encoder *enc, const char *dir, const char *spec, const char *count) {
    char name[32];
    unsigned w, h, n;
    char tail;
    tf_motion m;
    const char *dash = strrchr(spec, '-');
    if (!dash || (size_t)(dash - spec) >= sizeof name || sscanf(dash + 1, "%ux%u%c", &w, &h, &tail) != 2 || w < 1 ||
        h < 1 || w > 16384 || h > 16384 || sscanf(count, "%u%c", &n, &tail) != 1 || n < 1 || n > 64) {
        fprintf(stderr, "rcanvas-testframes: --motion %s %s: expected MOTION-WxH N (N 1-64), e.g. pan-1920x1080 64\n",
                spec, count);
        return 2;
    }
    memcpy(name, spec, (size_t)(dash - spec));
    name[dash - spec] = 0;
    if (tf_motion_parse(name, &m)) {
        fprintf(stderr, "rcanvas-testframes: unknown motion %s (pan, rotate, zoom, scroll)\n", name);
        return 2;
    }
    uint8_t *px = malloc((size_t)w * h * 4);
    if (!px) return 1;
    int bad = 0;
    for (unsigned i = 0; i < n && !bad; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s-%ux%u-%03u.png", dir, name, w, h, i);
        tf_motion_draw(m, i, n, w, h, px, (size_t)w * 4);
        bad = write_png(enc, path, px, w, h) ? 1 : 0;
    }
    free(px);
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: rcanvas-testframes OUTDIR [KIND-WxH ...]\n"
                        "       rcanvas-testframes OUTDIR --motion MOTION-WxH N   (MOTION: pan, rotate, zoom or scroll; N: 1-64)\n"
                        "  KIND: plot text gradient heatmap noise; default: every kind at every standard size\n");
        return 2;
    }
    const char *dir = argv[1];
    if (mkdir(dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "rcanvas-testframes: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    rc_encoder *enc;
    if (rc_encoder_new(RCANVAS_CODEC_PNG, &enc)) return 1;
    int bad = 0;
    if (argc >= 3 && !strcmp(argv[2], "--motion")) {
        bad = argc == 5 ? write_motion(enc, dir, argv[3], argv[4]) : (fprintf(stderr, "rcanvas-testframes: --motion MOTION-WxH N\n"), 2);
        rc_encoder_free(enc);
        return bad;
    }
    if (argc == 2)
        for (size_t s = 0; s < tf_nsizes; s++)
            for (int k = 0; k < TF_KINDS; k++) bad |= write_frame(enc, dir, (tf_kind)k, tf_sizes[s][0], tf_sizes[s][1]);
    for (int i = 2; i < argc; i++) {
        char kind[32];
        unsigned w, h;
        char tail;
        tf_kind k;
        const char *dash = strrchr(argv[i], '-');
        if (!dash || (size_t)(dash - argv[i]) >= sizeof kind || sscanf(dash + 1, "%ux%u%c", &w, &h, &tail) != 2 ||
            w < 1 || h < 1 || w > 16384 || h > 16384) {
            fprintf(stderr, "rcanvas-testframes: %s: expected KIND-WxH, e.g. text-1920x1080\n", argv[i]);
            rc_encoder_free(enc);
            return 2;
        }
        memcpy(kind, argv[i], (size_t)(dash - argv[i]));
        kind[dash - argv[i]] = 0;
        if (tf_kind_parse(kind, &k)) {
            fprintf(stderr, "rcanvas-testframes: unknown kind %s (plot text gradient heatmap noise)\n", kind);
            rc_encoder_free(enc);
            return 2;
        }
        bad |= write_frame(enc, dir, k, w, h);
    }
    rc_encoder_free(enc);
    return bad ? 1 : 0;
}
