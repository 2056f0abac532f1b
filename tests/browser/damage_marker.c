/* SPDX-License-Identifier: MIT */
/*
 * rcanvas-test-marker — a still plot with a small moving marker, for the damage test in the browser
 * (tests/browser/damage.test.mjs) and for trying damage by hand. One canvas (JPEG unless --codec png), drawn in
 * continuous mode at --fps at the viewer's physical size: the plot of tests/testframes.h, and once the size has
 * been stable for --start-ms, a 12 × 12 marker that moves 5 px right and 2 px down per frame for --steps frames,
 * then stops where it is. The app keeps presenting the same picture afterwards (every frame identical: none is
 * sent, and rcanvas_wait must keep waking). It prints
 *   rcanvas-test-marker: open URL
 *   marker start seq=S WxH              the first frame with the marker
 *   marker stop seq=S                   the last frame that moved it; with --dump PATH that frame is written to
 *                                       PATH as "W H\n" and W × H × 4 bytes of RGBA
 *   still frames=N                      after 30 and 60 identical frames presented after the stop
 * Options: --port N, --token T, --host ADDR, --fps F (default 30), --steps N (default 40), --start-ms MS
 * (default 700), --codec jpeg|png, --quality Q (default 85), --dump PATH.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcanvas.h"
#include "test_app.h"
#include "testframes.h"

#define MARK 12

static void draw_marker(uint8_t *px, uint32_t w, uint32_t h, int step) {
    if (w <= MARK || h <= MARK) return;
    uint32_t x0 = (uint32_t)(40 + 5 * step) % (w - MARK), y0 = (uint32_t)(30 + 2 * step) % (h - MARK);
    for (uint32_t y = y0; y < y0 + MARK; y++)
        for (uint32_t x = x0; x < x0 + MARK; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            p[0] = 230, p[1] = 30, p[2] = 40, p[3] = 255;
        }
}

int main(int argc, char **argv) {
    rcanvas_server_config scfg;
    rcanvas_server_config_init(&scfg);
    rcanvas_canvas_config ccfg;
    rcanvas_canvas_config_init(&ccfg);
    ccfg.title = "rcanvas damage test";
    ccfg.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    ccfg.max_fps = 30;
    int steps = 40, start_ms = 700;
    const char *dump = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "rcanvas-test-marker: %s: missing value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--port")) scfg.port = atoi(v);
        else if (!strcmp(a, "--token")) scfg.token = v;
        else if (!strcmp(a, "--host")) scfg.host = v;
        else if (!strcmp(a, "--fps")) ccfg.max_fps = atof(v);
        else if (!strcmp(a, "--steps")) steps = atoi(v);
        else if (!strcmp(a, "--start-ms")) start_ms = atoi(v);
        else if (!strcmp(a, "--quality")) ccfg.quality = atoi(v);
        else if (!strcmp(a, "--codec")) ccfg.codec = !strcmp(v, "png") ? RCANVAS_CODEC_PNG : RCANVAS_CODEC_JPEG;
        else if (!strcmp(a, "--dump")) dump = v;
        else {
            fprintf(stderr, "rcanvas-test-marker: %s: unknown option\n", a);
            return 2;
        }
    }
    rcanvas_server *srv;
    rcanvas_canvas *cv;
    if (app_open("rcanvas-test-marker", &scfg, &ccfg, &srv, &cv)) return 1;

    uint8_t *plot = NULL, *px = NULL;
    uint32_t w = 0, h = 0;
    double stable_since = 0;
    int step = -1, still = 0;
    uint32_t seq = 0;
    while (!g_stop) {
        int wk = rcanvas_wait(cv, 100);
        if (wk < 0) break;
        rcanvas_event ev;
        while (rcanvas_poll_event(cv, &ev) == 1) {}
        if (!(wk & RCANVAS_WAKE_DRAW)) continue;
        rcanvas_size sz;
        rcanvas_canvas_get_size(cv, &sz);
        if (sz.physical_width != w || sz.physical_height != h) { /* a new size: the plot again, marker reset */
            w = sz.physical_width, h = sz.physical_height;
            free(plot);
            free(px);
            plot = tf_new(TF_PLOT, w, h);
            px = malloc((size_t)w * h * 4);
            if (!plot || !px) break;
            stable_since = app_now_s();
            step = -1;
            still = 0;
        }
        memcpy(px, plot, (size_t)w * h * 4);
        if (step < 0 && app_now_s() - stable_since >= start_ms / 1000.0) step = 0;
        int moved = step >= 0 && step < steps;
        if (step >= 0) draw_marker(px, w, h, step < steps ? step : steps - 1);
        rcanvas_frame f = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, 0};
        int r = rcanvas_present(cv, &f);
        if (r) {
            fprintf(stderr, "rcanvas-test-marker: present: %s\n", rcanvas_strerror(r));
            continue;
        }
        seq++;
        if (step == 0) printf("marker start seq=%u %ux%u\n", seq, w, h);
        if (moved && step == steps - 1) {
            if (dump) {
                FILE *fp = fopen(dump, "wb");
                if (!fp || fprintf(fp, "%u %u\n", w, h) < 0 || fwrite(px, 4, (size_t)w * h, fp) != (size_t)w * h) {
                    fprintf(stderr, "rcanvas-test-marker: --dump %s: cannot write\n", dump);
                }
                if (fp) fclose(fp);
            }
            printf("marker stop seq=%u\n", seq);
        }
        if (step >= steps && (++still == 30 || still == 60)) printf("still frames=%d\n", still);
        if (step >= 0 && step <= steps) step++;
        fflush(stdout);
    }
    rcanvas_server_free(srv);
    free(plot);
    free(px);
    return 0;
}
