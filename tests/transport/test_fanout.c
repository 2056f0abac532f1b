/* SPDX-License-Identifier: MIT */
/*
 * test_fanout — many viewers of one canvas through the real server (libwebsockets on loopback): 40 raw acking
 * viewers (tests/ws_viewers.c), more than the old default cap of 16, all get frames of an animated 640×480 canvas,
 * and the frames are right: the last frame of a few of them, every tile decoded (libturbojpeg), shows the app's
 * pattern at known pixels — which also checks that the per-viewer headers written in front of the shared tile
 * bytes (src/transport/send.c) never corrupt another viewer's copy. Then the cap: with max_viewers 3 a fourth
 * viewer is refused with HTTP 503, and once a viewer leaves, a new one gets in. Nothing is timed; the waits are
 * generous bounds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imageio.h"
#include "rcanvas.h"
#include "test.h"
#include "transport/wire.h"
#include "ws_viewers.h"

#define W 640
#define H 480

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The app's picture: four quadrants red, green, blue, white, and a bar in the top-left quadrant's left half
 * that moves with the frame number (so that every frame differs: the canvas is animated). Every pixel also moves
 * by 3 levels from one frame to the next, so that each frame changes whole and goes out whole (damage would send
 * only the bar's tiles, and the test checks the whole picture of a viewer's last frame). */
static const uint8_t k_quad[4][3] = {{220, 30, 30}, {30, 200, 40}, {40, 50, 210}, {240, 240, 240}};

static void render(uint8_t *px, uint32_t w, uint32_t h, uint32_t n) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            int q = (x >= w / 2) + 2 * (y >= h / 2);
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            int bar = q == 0 && x < w / 4 && (y + n * 4) % (h / 2) < 8;
            uint8_t d = (uint8_t)(n & 1) * 3;
            p[0] = bar ? 0 : (uint8_t)(k_quad[q][0] - d);
            p[1] = bar ? 0 : (uint8_t)(k_quad[q][1] - d);
            p[2] = bar ? 0 : (uint8_t)(k_quad[q][2] - d);
            p[3] = 255;
        }
}

typedef struct app {
    rcanvas_canvas *cv;
    atomic_int stop;
    atomic_int presented;
} app;

/* The app's render loop: draws whenever a draw is due, at the size the active viewer asked for. */
static void *app_main(void *arg) {
    app *a = arg;
    uint8_t *px = NULL;
    size_t cap = 0;
    uint32_t n = 0;
    while (!atomic_load(&a->stop)) {
        int wake = rcanvas_wait(a->cv, 50);
        if (wake < 0) break;
        if (!(wake & RCANVAS_WAKE_DRAW)) continue;
        rcanvas_size sz;
        rcanvas_canvas_get_size(a->cv, &sz);
        size_t need = (size_t)sz.physical_width * sz.physical_height * 4;
        if (need > cap) {
            uint8_t *p = realloc(px, need);
            if (!p) break;
            px = p, cap = need;
        }
        render(px, sz.physical_width, sz.physical_height, n++);
        rcanvas_frame f = {px, sz.physical_width, sz.physical_height, (size_t)sz.physical_width * 4,
                           RCANVAS_FORMAT_RGBA8, 0};
        if (rcanvas_present(a->cv, &f) == RCANVAS_OK) atomic_fetch_add(&a->presented, 1);
    }
    free(px);
    return NULL;
}

static rcanvas_server *start_server(int max_viewers, app *a, pthread_t *th) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.max_viewers = max_viewers;
    sc.log_level = RCANVAS_LOG_ERROR;
    rcanvas_server *srv = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&sc, &srv), RCANVAS_OK);
    if (!srv) return NULL;
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    cc.max_fps = 30;
    cc.quality = 90;
    cc.refine_ms = 0; /* live JPEG frames only: the pixels below are checked against JPEG's tolerance */
    CHECK_EQ_INT(rcanvas_canvas_new(srv, &cc, &a->cv), RCANVAS_OK);
    if (!a->cv) {
        rcanvas_server_free(srv);
        return NULL;
    }
    /* whole frames at the canvas's size, whatever the machine: the steering would shrink them where the encoder
     * cannot keep up with the app's 30 fps (a sanitizer build, a loaded machine), and this test is about fan-out */
    CHECK_EQ_INT(rcanvas_canvas_set_option(a->cv, RCANVAS_OPT_RATE_ADAPT, 0), RCANVAS_OK);
    atomic_store(&a->stop, 0);
    pthread_create(th, NULL, app_main, a);
    return srv;
}

static void stop_server(rcanvas_server *srv, app *a, pthread_t th) {
    atomic_store(&a->stop, 1);
    pthread_join(th, NULL);
    rcanvas_server_free(srv);
}

/* Waits until pred(w, n) or ms pass; returns pred's last value. */
static int all_have_frames(wsv *w, int n, uint64_t min_frames) {
    for (int i = 0; i < n; i++) {
        wsv_viewer_stats s;
        wsv_stats(w, i, &s);
        if (s.frames < min_frames) return 0;
    }
    return 1;
}

static int wait_frames(wsv *w, int n, uint64_t min_frames, int ms) {
    for (int64_t end = now_ms() + ms; now_ms() < end; usleep(20000))
        if (all_have_frames(w, n, min_frames)) return 1;
    return all_have_frames(w, n, min_frames);
}

/* Viewer i's last frame: every tile's header valid, tiles cover the frame, each decodes; the known pixels. */
static void check_last_frame(wsv *w, int i) {
    uint8_t *buf = NULL;
    size_t len = 0;
    int ntiles = 0;
    CHECK_EQ_INT(wsv_last_frame(w, i, &buf, &len, &ntiles), 0);
    if (!buf) return;
    uint8_t *full = calloc((size_t)W * H, 4);
    size_t off = 0;
    int tiles = 0, covered = 0;
    uint32_t seq = 0;
    while (off < len && full) {
        /* the message length is not in the buffer: the header's payload_bytes gives it */
        if (len - off < RC_FRAME_HEADER_SIZE) break;
        uint32_t pb = (uint32_t)buf[off + 52] | (uint32_t)buf[off + 53] << 8 | (uint32_t)buf[off + 54] << 16 |
                      (uint32_t)buf[off + 55] << 24;
        if (pb > len - off - RC_FRAME_HEADER_SIZE) break;
        rc_frame_header h;
        CHECK_EQ_INT(rc_frame_header_read(buf + off, RC_FRAME_HEADER_SIZE + pb, &h), RCANVAS_OK);
        CHECK_EQ_INT(h.version, 1); /* a protocol 1 viewer gets version 1 headers */
        CHECK_EQ_INT(h.codec, RCANVAS_CODEC_JPEG);
        CHECK_EQ_INT(h.frame_width, W);
        CHECK_EQ_INT(h.frame_height, H);
        CHECK_EQ_INT(h.tile_index, tiles);
        if (tiles == 0) seq = h.seq;
        CHECK_EQ_INT(h.seq, seq); /* tiles of one frame, never mixed with another's */
        uint8_t *px = NULL;
        uint32_t tw = 0, th = 0;
        int r = rc_decode_jpeg(buf + off + RC_FRAME_HEADER_SIZE, pb, &px, &tw, &th);
        CHECK_MSG(r == 0 && tw == h.w && th == h.h, "viewer %d tile %d: decode %d, %ux%u for %ux%u", i, tiles, r, tw,
                  th, h.w, h.h);
        if (r == 0 && tw == h.w && th == h.h && h.x + tw <= W && h.y + th <= H) {
            for (uint32_t y = 0; y < th; y++)
                memcpy(full + ((size_t)(h.y + y) * W + h.x) * 4, px + (size_t)y * tw * 4, (size_t)tw * 4);
            covered += (int)(tw * th);
        }
        free(px);
        off += RC_FRAME_HEADER_SIZE + pb;
        tiles++;
    }
    CHECK_EQ_INT(tiles, ntiles);
    CHECK_EQ_INT(off, len);
    CHECK_EQ_INT(covered, W * H);
    /* the quadrants' centres, and a point of the top-left quadrant the bar never reaches */
    static const int pts[5][3] = {{W / 4 * 3 / 2, H / 4, 0}, {W * 3 / 4, H / 4, 1}, {W / 4, H * 3 / 4, 2},
                                  {W * 3 / 4, H * 3 / 4, 3}, {W * 3 / 8 + 20, 40, 0}};
    for (int k = 0; k < 5 && full && covered == W * H; k++) {
        const uint8_t *p = full + ((size_t)pts[k][1] * W + pts[k][0]) * 4;
        const uint8_t *want = k_quad[pts[k][2]];
        int ok = abs(p[0] - want[0]) <= 12 && abs(p[1] - want[1]) <= 12 && abs(p[2] - want[2]) <= 12;
        CHECK_MSG(ok, "viewer %d seq %u pixel (%d,%d) = %d,%d,%d, expected %d,%d,%d ± 12", i, seq, pts[k][0],
                  pts[k][1], p[0], p[1], p[2], want[0], want[1], want[2]);
    }
    free(full);
    free(buf);
}

/* 40 viewers of one canvas, more than the old cap of 16: every one gets frames, and they are right. */
static void test_forty_viewers(void) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    CHECK(sc.max_viewers >= 40); /* the default lets them all in */
    app a = {0};
    pthread_t th;
    rcanvas_server *srv = start_server(sc.max_viewers, &a, &th);
    if (!srv) return;
    enum { N = 40 };
    wsv_config vc = {.port = rcanvas_server_port(srv), .token = rcanvas_server_token(srv), .n = N, .width = W,
                     .height = H, .pixel_ratio = 1, .keep_last = 1};
    wsv *w = NULL;
    CHECK_EQ_INT(wsv_start(&vc, &w), 0);
    if (w) {
        int ok = wait_frames(w, N, 5, 30000);
        CHECK_MSG(ok, "every one of %d viewers gets 5 frames within 30 s", N);
        int open = 0, refused = 0;
        uint64_t frames = 0;
        wsv_totals(w, &frames, NULL, &open, NULL, &refused);
        CHECK_EQ_INT(open, N);
        CHECK_EQ_INT(refused, 0);
        uint32_t max_seq = 0, min_seq = UINT32_MAX;
        for (int i = 0; i < N; i++) {
            wsv_viewer_stats s;
            wsv_stats(w, i, &s);
            CHECK_MSG(s.hello, "viewer %d got its hello", i);
            if (s.last_seq > max_seq) max_seq = s.last_seq;
            if (s.last_seq < min_seq) min_seq = s.last_seq;
        }
        printf("%d viewers: %llu frames in all, last seq %u..%u, %d presented\n", N, (unsigned long long)frames,
               min_seq, max_seq, atomic_load(&a.presented));
        CHECK(max_seq >= 5); /* animated: new frames, not one frame again */
        static const int some[] = {0, 1, 17, 39};
        for (size_t k = 0; k < sizeof some / sizeof some[0]; k++) check_last_frame(w, some[k]);
        wsv_stop(w);
    }
    stop_server(srv, &a, th);
}

static int wait_state(wsv *w, int i, int state, int ms) {
    wsv_viewer_stats s;
    for (int64_t end = now_ms() + ms; now_ms() < end; usleep(20000)) {
        wsv_stats(w, i, &s);
        if (s.state == state) return 1;
    }
    wsv_stats(w, i, &s);
    return s.state == state;
}

static wsv *viewers(rcanvas_server *srv, int n) {
    wsv_config vc = {.port = rcanvas_server_port(srv), .token = rcanvas_server_token(srv), .n = n};
    wsv *w = NULL;
    CHECK_EQ_INT(wsv_start(&vc, &w), 0);
    return w;
}

/* max_viewers 3: a fourth is refused (closed with 4503); when one leaves, the next gets in. */
static void test_cap(void) {
    app a = {0};
    pthread_t th;
    rcanvas_server *srv = start_server(3, &a, &th);
    if (!srv) return;
    wsv *two = viewers(srv, 2), *one = viewers(srv, 1);
    if (two && one) {
        CHECK(wait_frames(two, 2, 1, 20000));
        CHECK(wait_frames(one, 1, 1, 20000));
        wsv *fourth = viewers(srv, 1);
        if (fourth) {
            /* it asks for rcanvas.v1, as the browser client does: accepted and closed with 4503 (a
             * browser cannot read the HTTP status); a tool that does not ask for it gets HTTP 503 */
            CHECK(wait_state(fourth, 0, 2, 10000));
            wsv_viewer_stats s;
            wsv_stats(fourth, 0, &s);
            CHECK_MSG(!strcmp(s.error, "closed by the server (4503)"), "the fourth viewer: state %d, '%s' (want 4503)",
                      s.state, s.error);
            CHECK_EQ_INT(s.frames, 0);
            wsv_stop(fourth);
        }
        wsv_stop(one); /* one leaves: its slot is free again (the server notices the close) */
        one = NULL;
        int in = 0;
        for (int attempt = 0; attempt < 50 && !in; attempt++) { /* until the server has seen the close */
            wsv *next = viewers(srv, 1);
            if (!next) break;
            in = wait_frames(next, 1, 1, 2000);
            wsv_stop(next);
        }
        CHECK_MSG(in, "a viewer gets in once another left");
    }
    wsv_stop(one);
    wsv_stop(two);
    stop_server(srv, &a, th);
}

int main(void) {
    test_forty_viewers();
    test_cap();
    TEST_MAIN_END();
}
