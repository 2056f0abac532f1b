/*
 * rcanvas-testframes — writes the deterministic test frames (tests/testframes.h) as PNG files, for the shell and
 * browser tests and the benchmarks when ../shared/frames is not there. PNG through the library's own encoder
 * (lossless: decoding gives back the generated RGB exactly).
 *   rcanvas-testframes OUTDIR [KIND-WxH ...]    e.g. text-1920x1080; default: every kind at every standard size
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codec/codec.h"
#include "imageio.h"
#include "testframes.h"

static int write_frame(rc_encoder *enc, const char *dir, tf_kind k, uint32_t w, uint32_t h) {
    uint8_t *px = tf_new(k, w, h);
    if (!px) return -1;
    rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    rc_encode_params p = {.codec = RCANVAS_CODEC_PNG};
    rc_buf out = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%ux%u.png", dir, tf_kind_name(k), w, h);
    int r = rc_encoder_encode(enc, &img, &p, &out);
    if (r) fprintf(stderr, "rcanvas-testframes: %s: %s %s\n", path, rcanvas_strerror(r), rc_encoder_error(enc));
    else if (rc_write_file(path, rc_buf_data(&out), out.len)) {
        fprintf(stderr, "rcanvas-testframes: cannot write %s: %s\n", path, strerror(errno));
        r = -1;
    } else printf("%s %ux%u %zu bytes\n", path, w, h, out.len);
    rc_buf_free(&out);
    free(px);
    return r ? -1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: rcanvas-testframes OUTDIR [KIND-WxH ...]\n"
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
