/* SPDX-License-Identifier: MIT */
/*
 * test_codec_dryrun — docs/architecture.md's "adding a codec" checklist done once, in this test binary only: two
 * encoders that exist nowhere else are registered (rc_codec_register) and chosen by name through the public API,
 * with nothing added to rcanvas.h, the demo, the Python package or the client.
 *  - "jpeg-marked" codes the wire codec JPEG through libturbojpeg and puts a COM marker ("dry run") after each
 *    picture's SOI: rcanvas_encoder_name lists it, rcanvas_canvas_set_encoder takes it, and a raw WebSocket viewer
 *    (tests/ws_viewers.c) receives its frames — marked, decodable, showing the app's colours — until a codec name
 *    ("jpeg") takes the canvas back to libturbojpeg (frames unmarked, no more calls to it).
 *  - "jpeg-broken" cannot be made (its create fails): the canvas falls back to JPEG's default encoder, the viewer
 *    keeps getting frames, and rcanvas_canvas_encoder then names "jpeg".
 * Nothing is timed; the waits are generous bounds.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec/codec.h"
#include "imageio.h"
#include "rcanvas.h"
#include "test.h"
#include "transport/wire.h"
#include "ws_viewers.h"

#define W 320
#define H 240
static const uint8_t k_rgb[3] = {30, 140, 220}; /* the app's colour */
static const char k_mark[] = "dry run";

/* ---- the encoders of this binary ---- */

typedef struct marked {
    rc_codec base;
    rc_codec *jpeg; /* libturbojpeg (rc_codec_jpeg) */
} marked;
static atomic_int g_marked_encodes;

static int marked_create(const rc_codec_type *type, rc_codec **out) {
    marked *m = calloc(1, sizeof *m);
    if (!m) return RCANVAS_ENOMEM;
    m->base.type = type;
    int r = rc_codec_new(&rc_codec_jpeg, &m->jpeg);
    if (r) {
        free(m);
        return r;
    }
    *out = &m->base;
    return RCANVAS_OK;
}

/* libturbojpeg's picture, with a COM segment (FF FE, length, text) after its SOI */
static int marked_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out,
                         rc_encode_info *info) {
    marked *m = (marked *)c;
    size_t start = out->len;
    int r = rc_codec_encode(m->jpeg, img, p, out, info);
    if (r) return r;
    size_t n = sizeof k_mark - 1, seg = 4 + n;
    if (rc_buf_reserve(out, out->len + seg)) return RCANVAS_ENOMEM;
    uint8_t *d = rc_buf_data(out) + start;
    memmove(d + 2 + seg, d + 2, out->len - start - 2);
    d[2] = 0xFF, d[3] = 0xFE, d[4] = (uint8_t)((n + 2) >> 8), d[5] = (uint8_t)(n + 2);
    memcpy(d + 6, k_mark, n);
    out->len += seg;
    atomic_fetch_add(&g_marked_encodes, 1);
    return RCANVAS_OK;
}

static void marked_destroy(rc_codec *c) {
    marked *m = (marked *)c;
    rc_codec_free(m->jpeg);
    free(m);
}

static const rc_codec_type k_marked = {
    .name = "jpeg-marked", .wire_id = RCANVAS_CODEC_JPEG, .flags = RC_CODEC_INTRA | RC_CODEC_STRIPES | RC_CODEC_ALT,
    .create = marked_create, .encode = marked_encode, .destroy = marked_destroy};

static atomic_int g_broken_creates;
static int broken_create(const rc_codec_type *type, rc_codec **out) {
    (void)type, (void)out;
    atomic_fetch_add(&g_broken_creates, 1);
    return RCANVAS_ECODEC;
}
static const rc_codec_type k_broken = {
    .name = "jpeg-broken", .wire_id = RCANVAS_CODEC_JPEG, .flags = RC_CODEC_INTRA | RC_CODEC_STRIPES | RC_CODEC_ALT,
    .create = broken_create, .encode = marked_encode, .destroy = marked_destroy};

/* ---- an app and a viewer ---- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct app {
    rcanvas_canvas *cv;
    atomic_int stop;
} app;

/* Draws whenever a draw is due: a flat colour, one level different every frame (each frame goes out whole). */
static void *app_main(void *arg) {
    app *a = arg;
    uint8_t *px = NULL;
    for (uint32_t n = 0; !atomic_load(&a->stop);) {
        int wake = rcanvas_wait(a->cv, 50);
        if (wake < 0) break;
        if (!(wake & RCANVAS_WAKE_DRAW)) continue;
        rcanvas_size sz;
        rcanvas_canvas_get_size(a->cv, &sz);
        uint8_t *p = realloc(px, (size_t)sz.physical_width * sz.physical_height * 4);
        if (!p) break;
        px = p;
        for (size_t i = 0; i < (size_t)sz.physical_width * sz.physical_height; i++)
            px[4 * i] = k_rgb[0] + (n & 1), px[4 * i + 1] = k_rgb[1], px[4 * i + 2] = k_rgb[2], px[4 * i + 3] = 255;
        n++;
        rcanvas_frame f = {px, sz.physical_width, sz.physical_height, (size_t)sz.physical_width * 4,
                           RCANVAS_FORMAT_RGBA8, 0};
        rcanvas_present(a->cv, &f);
    }
    free(px);
    return NULL;
}

/* Waits (≤ ms) for a whole frame after seq `after`, then reads it: 1 if every tile is JPEG and decodes to the
 * app's colour; *marked_tiles: how many carry the marker. 0 if none came or it is wrong. */
static int next_frame(wsv *w, uint32_t after, int ms, uint32_t *seq, int *marked_tiles) {
    wsv_viewer_stats st;
    for (int64_t end = now_ms() + ms; now_ms() < end; usleep(20000)) {
        wsv_stats(w, 0, &st);
        if (st.frames && st.last_seq > after) break;
    }
    wsv_stats(w, 0, &st);
    if (!st.frames || st.last_seq <= after) return 0;
    uint8_t *buf = NULL;
    size_t len = 0;
    int ntiles = 0, ok = 1;
    if (wsv_last_frame(w, 0, &buf, &len, &ntiles)) return 0;
    *marked_tiles = 0;
    for (size_t off = 0; off + RC_FRAME_HEADER_SIZE <= len;) {
        rc_frame_header h;
        uint32_t pb = (uint32_t)buf[off + 52] | (uint32_t)buf[off + 53] << 8 | (uint32_t)buf[off + 54] << 16 |
                      (uint32_t)buf[off + 55] << 24;
        if (pb > len - off - RC_FRAME_HEADER_SIZE || rc_frame_header_read(buf + off, RC_FRAME_HEADER_SIZE + pb, &h)) {
            ok = 0;
            break;
        }
        *seq = h.seq;
        const uint8_t *d = buf + off + RC_FRAME_HEADER_SIZE;
        if (pb > 6 + sizeof k_mark && d[2] == 0xFF && d[3] == 0xFE && !memcmp(d + 6, k_mark, sizeof k_mark - 1))
            ++*marked_tiles;
        uint8_t *px = NULL;
        uint32_t tw = 0, th = 0;
        int r = h.codec == RCANVAS_CODEC_JPEG ? rc_decode_jpeg(d, pb, &px, &tw, &th) : -1;
        CHECK_MSG(r == 0 && tw == h.w && th == h.h, "tile: codec %d, decode %d, %ux%u for %ux%u", h.codec, r, tw,
                  th, h.w, h.h);
        if (r == 0 && tw && th) {
            const uint8_t *c = px + ((size_t)(th / 2) * tw + tw / 2) * 4;
            CHECK_MSG(abs(c[0] - k_rgb[0]) <= 6 && abs(c[1] - k_rgb[1]) <= 6 && abs(c[2] - k_rgb[2]) <= 6,
                      "tile centre %d,%d,%d, the app drew %d,%d,%d", c[0], c[1], c[2], k_rgb[0], k_rgb[1], k_rgb[2]);
        } else ok = 0;
        free(px);
        off += RC_FRAME_HEADER_SIZE + pb;
    }
    free(buf);
    return ok && ntiles > 0;
}

static int listed(const char *name) {
    for (int i = 0; rcanvas_encoder_name(i); i++)
        if (!strcmp(rcanvas_encoder_name(i), name)) return 1;
    return 0;
}

int main(void) {
    /* before: unknown to the library */
    CHECK(!listed("jpeg-marked"));
    CHECK_EQ_INT(rc_codec_register(&k_marked), RCANVAS_OK);
    CHECK_EQ_INT(rc_codec_register(&k_broken), RCANVAS_OK);
    CHECK_EQ_INT(rc_codec_register(&k_marked), RCANVAS_EINVAL); /* a name taken */
    CHECK_EQ_INT(rc_codec_register(NULL), RCANVAS_EINVAL);
    CHECK(listed("jpeg-marked") && listed("jpeg-broken") && listed("jpeg"));
    CHECK_EQ_INT(rcanvas_codec_from_name("jpeg-marked"), RCANVAS_EINVAL); /* an encoder, not a codec */

    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.log_level = RCANVAS_LOG_ERROR;
    rcanvas_server *srv = NULL;
    app a = {0};
    pthread_t th;
    int started = 0;
    wsv *w = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&sc, &srv), RCANVAS_OK);
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    cc.max_fps = 30;
    cc.refine_ms = 0; /* live frames only */
    if (srv) CHECK_EQ_INT(rcanvas_canvas_new(srv, &cc, &a.cv), RCANVAS_OK);
    if (a.cv) {
        CHECK_EQ_INT(rcanvas_canvas_set_option(a.cv, RCANVAS_OPT_RATE_ADAPT, 0), RCANVAS_OK);
        CHECK_EQ_INT(rcanvas_canvas_set_encoder(a.cv, "jpeg-marked"), RCANVAS_OK); /* no encode runs yet */
        CHECK_EQ_INT(rcanvas_canvas_set_encoder(a.cv, "jpeg-nonesuch"), RCANVAS_EINVAL);
        CHECK_EQ_INT(rcanvas_canvas_set_encoder(a.cv, NULL), RCANVAS_EINVAL);
        CHECK(rcanvas_canvas_encoder(a.cv) && !strcmp(rcanvas_canvas_encoder(a.cv), "jpeg-marked"));
        int codec = -1;
        CHECK_EQ_INT(rcanvas_canvas_get_option(a.cv, RCANVAS_OPT_CODEC, &codec), RCANVAS_OK);
        CHECK_EQ_INT(codec, RCANVAS_CODEC_JPEG); /* the wire codec it makes */
        started = pthread_create(&th, NULL, app_main, &a) == 0;
        wsv_config vc = {.port = rcanvas_server_port(srv), .token = rcanvas_server_token(srv), .n = 1,
                         .width = W, .height = H, .pixel_ratio = 1, .keep_last = 1};
        CHECK_EQ_INT(wsv_start(&vc, &w), 0);
    }
    if (w && started) {
        /* its frames reach the viewer, marked, and decode to the app's colour */
        uint32_t seq = 0;
        int nm = 0;
        CHECK(next_frame(w, 0, 20000, &seq, &nm));
        CHECK_MSG(nm > 0, "a frame of jpeg-marked carries its marker (%d tiles marked)", nm);
        CHECK(atomic_load(&g_marked_encodes) > 0);
        /* a codec's name goes back to its default encoder: frames unmarked, no more calls */
        CHECK_EQ_INT(rcanvas_canvas_set_encoder(a.cv, "jpeg"), RCANVAS_OK);
        int unmarked = 0;
        /* the change waits for the encode running, and frames already coded may still be on their way */
        for (int k = 0; k < 20 && !unmarked; k++)
            if (next_frame(w, seq, 10000, &seq, &nm) && nm == 0) unmarked = 1;
        CHECK(rcanvas_canvas_encoder(a.cv) && !strcmp(rcanvas_canvas_encoder(a.cv), "jpeg"));
        CHECK_MSG(unmarked, "after \"jpeg\" a frame comes from libturbojpeg (no marker)");
        int calls = atomic_load(&g_marked_encodes);
        CHECK(next_frame(w, seq, 10000, &seq, &nm) && nm == 0);
        CHECK(next_frame(w, seq, 10000, &seq, &nm) && nm == 0);
        CHECK_EQ_INT(atomic_load(&g_marked_encodes), calls);
        /* an encoder that cannot be made: the canvas falls back to JPEG's default, the viewer keeps its frames */
        CHECK_EQ_INT(rcanvas_canvas_set_encoder(a.cv, "jpeg-broken"), RCANVAS_OK);
        int fell_back = 0;
        for (int k = 0; k < 30 && !fell_back; k++)
            if (next_frame(w, seq, 10000, &seq, &nm) && nm == 0 && atomic_load(&g_broken_creates) > 0 &&
                rcanvas_canvas_encoder(a.cv) && !strcmp(rcanvas_canvas_encoder(a.cv), "jpeg"))
                fell_back = 1;
        CHECK_MSG(fell_back, "jpeg-broken tried %d times; the canvas's encoder is %s", atomic_load(&g_broken_creates),
                  rcanvas_canvas_encoder(a.cv) ? rcanvas_canvas_encoder(a.cv) : "(none)");
        CHECK(next_frame(w, seq, 10000, &seq, &nm) && nm == 0);
    }
    wsv_stop(w);
    if (started) {
        atomic_store(&a.stop, 1);
        pthread_join(th, NULL);
    }
    rcanvas_server_free(srv);
    TEST_MAIN_END();
}
