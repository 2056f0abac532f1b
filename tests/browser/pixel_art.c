/* SPDX-License-Identifier: MIT */
/*
 * rcanvas-test-pixels — a tiny server for tests/browser/pixelated.test.mjs: one canvas that draws pixel
 * art N times smaller than the viewer's canvas, as rendercanvas apps do with set_bitmap (its examples/snake.py draws
 * at 1/8). At every draw the bitmap is ceil(physical / N) each way (at least 1x1) of the pattern of artRGBA() in the
 * test and of test_small.c: a checkerboard of light and dark pixels, each with its own colour. It prints
 *   rcanvas-test-pixels: open http://127.0.0.1:PORT/?token=T
 * and each bitmap size it presents ("present 40x30 on 320x240"). Options: --port N (0 = any free port), --token T,
 * --div N (1..64; default 8), --codec jpeg|png|webp|h264|vp8|vp9|av1 (default jpeg), --refine-ms MS (default 300;
 * 0 = no refinement).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcanvas.h"
#include "test_app.h"

static void pattern(uint8_t *px, uint32_t w, uint32_t h) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            int dark = (x + y) & 1;
            p[0] = (uint8_t)(dark ? 20 + (x * 7) % 40 : 200 + (x * 5) % 55);
            p[1] = (uint8_t)(dark ? 20 + (y * 11) % 40 : 190 + (y * 7) % 65);
            p[2] = (uint8_t)(dark ? 30 + ((x + y) * 3) % 40 : 180 + (x * y) % 75);
            p[3] = 255;
        }
}

static int usage(void) {
    fprintf(stderr, "usage: rcanvas-test-pixels [--port N] [--token T] [--div N] [--codec NAME] [--refine-ms MS]\n");
    return 2;
}

int main(int argc, char **argv) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.log_level = RCANVAS_LOG_ERROR;
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.title = "pixel art";
    int div = 8;
    static const struct { const char *name; rcanvas_codec codec; } codecs[] = {
        {"jpeg", RCANVAS_CODEC_JPEG}, {"png", RCANVAS_CODEC_PNG}, {"webp", RCANVAS_CODEC_WEBP},
        {"h264", RCANVAS_CODEC_H264}, {"vp8", RCANVAS_CODEC_VP8}, {"vp9", RCANVAS_CODEC_VP9},
        {"av1", RCANVAS_CODEC_AV1}};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--port")) sc.port = atoi(v);
        else if (!strcmp(a, "--token")) sc.token = v;
        else if (!strcmp(a, "--div")) div = atoi(v);
        else if (!strcmp(a, "--refine-ms")) cc.refine_ms = atoi(v);
        else if (!strcmp(a, "--codec")) {
            size_t k = 0;
            while (k < sizeof codecs / sizeof codecs[0] && strcmp(codecs[k].name, v)) k++;
            if (k == sizeof codecs / sizeof codecs[0]) {
                fprintf(stderr, "rcanvas-test-pixels: unknown codec '%s'\n", v);
                return usage();
            }
            cc.codec = codecs[k].codec;
        } else return usage();
    }
    if (argc % 2 == 0 || div < 1 || div > 64) return usage();
    rcanvas_server *srv = NULL;
    int r = rcanvas_server_new(&sc, &srv);
    rcanvas_canvas *cv = NULL;
    if (!r) r = rcanvas_canvas_new(srv, &cc, &cv);
    if (r) {
        fprintf(stderr, "rcanvas-test-pixels: %s\n", rcanvas_strerror(r));
        rcanvas_server_free(srv);
        return 1;
    }
    app_catch_signals();
    signal(SIGPIPE, SIG_IGN);
    printf("rcanvas-test-pixels: open http://127.0.0.1:%d/?token=%s\n", rcanvas_server_port(srv),
           rcanvas_server_token(srv));
    fflush(stdout);

    uint8_t *px = NULL;
    size_t cap = 0;
    uint32_t last_w = 0, last_h = 0;
    while (!g_stop) {
        int w = rcanvas_wait(cv, 100);
        if (w < 0) break;
        rcanvas_event ev;
        while (rcanvas_poll_event(cv, &ev) == 1) {
        }
        if (!(w & RCANVAS_WAKE_DRAW)) continue;
        rcanvas_size sz;
        rcanvas_canvas_get_size(cv, &sz);
        uint32_t bw = (sz.physical_width + (uint32_t)div - 1) / (uint32_t)div;
        uint32_t bh = (sz.physical_height + (uint32_t)div - 1) / (uint32_t)div;
        if (bw < 1) bw = 1;
        if (bh < 1) bh = 1;
        size_t need = (size_t)bw * bh * 4;
        if (need > cap) {
            uint8_t *p = realloc(px, need);
            if (!p) break;
            px = p;
            cap = need;
        }
        pattern(px, bw, bh);
        rcanvas_frame f = {px, bw, bh, (size_t)bw * 4, RCANVAS_FORMAT_RGBA8, 0};
        r = rcanvas_present(cv, &f);
        if (r) fprintf(stderr, "rcanvas-test-pixels: present %ux%u: %s\n", bw, bh, rcanvas_strerror(r));
        if (bw != last_w || bh != last_h) {
            printf("present %ux%u on %ux%u\n", bw, bh, sz.physical_width, sz.physical_height);
            fflush(stdout);
            last_w = bw;
            last_h = bh;
        }
    }
    free(px);
    rcanvas_server_free(srv);
    return 0;
}
