/* SPDX-License-Identifier: MIT */
/*
 * rcanvas-test-two — a tiny server for the browser tests (tests/browser/client.test.mjs): two named canvases of one
 * server, "left" and "right", each drawn with its own solid test pattern (PNG: exact pixels), each printing the
 * events it receives to stdout with its name in front ("left event pointer_down viewer=1 …"). It prints
 *   rcanvas-test-two: open http://127.0.0.1:PORT/client/multi.html?token=T&canvases=left,right
 * the static page that shows both. Options: --port N (0 = any free port), --token T, --host ADDR.
 * left:  top half red (255,0,0), bottom half yellow (255,255,0)
 * right: top half blue (0,0,255), bottom half cyan (0,255,255)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcanvas.h"
#include "test_app.h"

static pthread_mutex_t g_out = PTHREAD_MUTEX_INITIALIZER;

typedef struct side {
    const char *name;
    uint8_t top[3], bottom[3];
    rcanvas_canvas *cv;
} side;

static void print_event(const char *name, const rcanvas_event *e) {
    pthread_mutex_lock(&g_out);
    printf("%s event %s viewer=%u", name, rcanvas_event_type_name(e->type), e->viewer_id);
    switch (e->type) {
    case RCANVAS_EVENT_RESIZE: printf(" width=%g height=%g pixel_ratio=%g", e->width, e->height, e->pixel_ratio); break;
    case RCANVAS_EVENT_WHEEL: printf(" x=%g y=%g dx=%g dy=%g", e->x, e->y, e->dx, e->dy); break;
    case RCANVAS_EVENT_KEY_DOWN:
    case RCANVAS_EVENT_KEY_UP: printf(" key=%s modifiers=%u", e->key, e->modifiers); break;
    case RCANVAS_EVENT_CHAR: printf(" data=%s", e->data); break;
    case RCANVAS_EVENT_CLOSE: break;
    default: printf(" x=%g y=%g button=%d buttons=%u", e->x, e->y, e->button, e->buttons);
    }
    printf("\n");
    fflush(stdout);
    pthread_mutex_unlock(&g_out);
}

/* One app loop per canvas: drain events, draw the pattern at the viewer's physical size when a draw is due. */
static void *run(void *arg) {
    side *s = arg;
    uint8_t *px = NULL;
    size_t cap = 0;
    while (!g_stop) {
        int w = rcanvas_wait(s->cv, 100);
        if (w < 0) break;
        rcanvas_event ev;
        while (rcanvas_poll_event(s->cv, &ev) == 1) print_event(s->name, &ev);
        if (!(w & RCANVAS_WAKE_DRAW)) continue;
        rcanvas_size sz;
        rcanvas_canvas_get_size(s->cv, &sz);
        uint32_t W = sz.physical_width, H = sz.physical_height;
        size_t need = (size_t)W * H * 4;
        if (need > cap) {
            uint8_t *p = realloc(px, need);
            if (!p) break;
            px = p;
            cap = need;
        }
        for (uint32_t y = 0; y < H; y++)
            for (uint32_t x = 0; x < W; x++) {
                const uint8_t *c = y < H / 2 ? s->top : s->bottom;
                uint8_t *d = px + ((size_t)y * W + x) * 4;
                d[0] = c[0], d[1] = c[1], d[2] = c[2], d[3] = 255;
            }
        rcanvas_frame f = {px, W, H, (size_t)W * 4, RCANVAS_FORMAT_RGBA8, 0};
        rcanvas_present(s->cv, &f);
    }
    free(px);
    return NULL;
}

int main(int argc, char **argv) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.log_level = RCANVAS_LOG_ERROR;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port")) sc.port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--token")) sc.token = argv[i + 1];
        else if (!strcmp(argv[i], "--host")) sc.host = argv[i + 1];
        else {
            fprintf(stderr, "usage: rcanvas-test-two [--port N] [--token T] [--host ADDR]\n");
            return 2;
        }
    }
    rcanvas_server *srv = NULL;
    int r = rcanvas_server_new(&sc, &srv);
    if (r) {
        fprintf(stderr, "rcanvas-test-two: %s\n", rcanvas_strerror(r));
        return 1;
    }
    side sides[2] = {{"left", {255, 0, 0}, {255, 255, 0}, NULL}, {"right", {0, 0, 255}, {0, 255, 255}, NULL}};
    for (int i = 0; i < 2; i++) {
        rcanvas_canvas_config cc;
        rcanvas_canvas_config_init(&cc);
        cc.name = sides[i].name;
        cc.title = sides[i].name;
        cc.codec = RCANVAS_CODEC_PNG;
        if ((r = rcanvas_canvas_new(srv, &cc, &sides[i].cv))) {
            fprintf(stderr, "rcanvas-test-two: canvas %s: %s\n", sides[i].name, rcanvas_strerror(r));
            rcanvas_server_free(srv);
            return 1;
        }
    }
    app_catch_signals();
    signal(SIGPIPE, SIG_IGN);

    const char *host = strcmp(sc.host, "0.0.0.0") ? sc.host : "127.0.0.1";
    printf("rcanvas-test-two: open http://%s:%d/client/multi.html?token=%s&canvases=left,right\n", host,
           rcanvas_server_port(srv), rcanvas_server_token(srv));
    fflush(stdout);

    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, run, &sides[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    rcanvas_server_free(srv);
    return 0;
}
