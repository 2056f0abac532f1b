/* SPDX-License-Identifier: MIT */
/*
 * rcanvas-test-pan — a pan that stops, for the paint-over test (tests/browser/paint.test.mjs). One
 * H.264 canvas (--codec h264|vp8|vp9), continuous at --fps (default 30), at a fixed --size WxH (default 1920x1080)
 * whatever the viewer's size: the pan of tests/testframes.h (tf_motion_draw, 40,20 px a frame over a dense plot),
 * --steps frames of it (default 60) once a viewer has been connected for --start-ms (default 1500), then the same
 * picture presented again for ever (identical frames: none is sent). It prints
 *   rcanvas-test-pan: open URL
 *   pan stop seq=S                      the last frame that moved; with --dump PATH that frame is written to PATH
 *                                       as "W H\n" and W × H × 4 bytes of RGBA
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcanvas.h"
#include "test_app.h"
#include "testframes.h"

int main(int argc, char **argv) {
    rcanvas_server_config scfg;
    rcanvas_server_config_init(&scfg);
    rcanvas_canvas_config ccfg;
    rcanvas_canvas_config_init(&ccfg);
    ccfg.title = "rcanvas paint-over test";
    ccfg.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    ccfg.max_fps = 30;
    ccfg.codec = RCANVAS_CODEC_H264;
    int steps = 60, start_ms = 1500;
    unsigned w = 1920, h = 1080;
    const char *dump = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "rcanvas-test-pan: %s: missing value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--port")) scfg.port = atoi(v);
        else if (!strcmp(a, "--token")) scfg.token = v;
        else if (!strcmp(a, "--fps")) ccfg.max_fps = atof(v);
        else if (!strcmp(a, "--steps")) steps = atoi(v);
        else if (!strcmp(a, "--start-ms")) start_ms = atoi(v);
        else if (!strcmp(a, "--refine-ms")) ccfg.refine_ms = atoi(v);
        else if (!strcmp(a, "--size")) {
            if (sscanf(v, "%ux%u", &w, &h) != 2 || w < 16 || h < 16 || w > 4096 || h > 4096) {
                fprintf(stderr, "rcanvas-test-pan: --size %s: expected WxH, 16-4096\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--codec")) {
            ccfg.codec = !strcmp(v, "vp8") ? RCANVAS_CODEC_VP8 : !strcmp(v, "vp9") ? RCANVAS_CODEC_VP9 : RCANVAS_CODEC_H264;
        } else if (!strcmp(a, "--dump")) dump = v;
        else {
            fprintf(stderr, "rcanvas-test-pan: %s: unknown option\n", a);
            return 2;
        }
    }
    if (steps < 1) steps = 1;
    rcanvas_server *srv;
    rcanvas_canvas *cv;
    if (app_open("rcanvas-test-pan", &scfg, &ccfg, &srv, &cv)) return 1;

    uint8_t *px = malloc((size_t)w * h * 4);
    if (!px) return 1;
    double first = 0;
    int step = 0;
    uint32_t seq = 0;
    while (!g_stop) {
        int wk = rcanvas_wait(cv, 100);
        if (wk < 0) break;
        rcanvas_event ev;
        while (rcanvas_poll_event(cv, &ev) == 1) {}
        if (!(wk & RCANVAS_WAKE_DRAW)) continue;
        if (!first) first = app_now_s();
        int moving = app_now_s() - first >= start_ms / 1000.0 && step < steps;
        if (moving || !seq) tf_motion_draw(TF_MOTION_PAN, (uint32_t)step % 64, 64, w, h, px, (size_t)w * 4);
        rcanvas_frame f = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, 0};
        int r = rcanvas_present(cv, &f);
        if (r) {
            fprintf(stderr, "rcanvas-test-pan: present: %s\n", rcanvas_strerror(r));
            continue;
        }
        seq++;
        if (moving && ++step == steps) {
            if (dump) {
                FILE *fp = fopen(dump, "wb");
                if (!fp || fprintf(fp, "%u %u\n", w, h) < 0 || fwrite(px, 4, (size_t)w * h, fp) != (size_t)w * h)
                    fprintf(stderr, "rcanvas-test-pan: --dump %s: cannot write\n", dump);
                if (fp) fclose(fp);
            }
            printf("pan stop seq=%u\n", seq);
            fflush(stdout);
        }
    }
    rcanvas_server_free(srv);
    free(px);
    return 0;
}
