/* SPDX-License-Identifier: MIT */
/*
 * test_encoded — frames the app encodes itself (rcanvas_present_encoded: JPEG made on the app's own GPU by
 * rcanvas.jpeg_wgpu), and the pixels it hands over only when rcanvas asks (RCANVAS_WAKE_PIXELS,
 * rcanvas_present_pixels):
 *  E1 a JPEG canvas takes the app's JPEG as it is: the viewer gets exactly those bytes as frame seq 1, its encoder
 *     named "jpeg-wgpu" in the session's state; no CPU encode ran; a CPU frame after it names rcanvas' "jpeg" again
 *     and is diffed against a frame without pixels (all of it sent);
 *  E2 a still picture's lossless refinement: the canvas asks for the pixels once (RCANVAS_WAKE_PIXELS from
 *     rcanvas_wait, not twice), takes them, and sends a PNG whose decoded pixels equal them; a second hand-over
 *     is RCANVAS_ESTALE, and so is one after a newer frame;
 *  E3 when the bytes cannot serve (a frame small enough to go lossless, a PNG canvas, a quality above the
 *     canvas's, the steering asking for a lower quality than the frame's or a smaller frame): RCANVAS_ENOTUSED and
 *     nothing changed (no frame counted, no packet);
 *     RCANVAS_OPT_LIVE_QUALITY says the steered quality and cannot be set;
 *  E4 bad input names itself: not a JPEG, a JPEG of another size, progressive, cut short, an unknown encoder name,
 *     quality or codec out of range, a size of 0: each its error code, and the canvas still takes a good frame.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/codec.h"
#include "imageio.h"
#include "stream/canvas_internal.h"
#include "tier_kit.h"

static rc_pool *g_pool;
static const rc_logger g_log = {.fn = NULL, .level = RCANVAS_LOG_ERROR};

#define W 320
#define H 240
static uint8_t g_px[W * H * 4];

static rcanvas_canvas *make(rcanvas_codec codec, int refine_ms) {
    return kit_canvas(g_pool, &g_log, codec, W, H, refine_ms, 0);
}

static void destroy(rcanvas_canvas *c, rc_session *s) {
    if (s) rc_session_close(s);
    rc_canvas_close(c);
    rc_canvas_destroy(c);
}

/* A plot-like picture: a gradient and thin coloured lines (t moves them). */
static void picture(uint8_t *px, uint32_t w, uint32_t h, int t) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            p[0] = (uint8_t)(40 + x / 3);
            p[1] = (uint8_t)(60 + y / 2);
            p[2] = (uint8_t)(((x + 2 * t) % 29) == 0 ? 250 : 90);
            if ((y + t) % 17 == 0) p[0] = 240, p[1] = 20, p[2] = 30;
            p[3] = 255;
        }
}

/* The picture JPEG-encoded by libturbojpeg at quality q (what the app's GPU encoder would hand over). */
static rc_buf g_jpeg;
static void encode_jpeg(const uint8_t *px, uint32_t w, uint32_t h, int q) {
    static rc_codec *enc;
    if (!enc) CHECK_EQ_INT(rc_codec_new(&rc_codec_jpeg, &enc), RCANVAS_OK);
    rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
    rc_encode_params p = {.codec = RCANVAS_CODEC_JPEG, .quality = q, .subsampling = RCANVAS_SUBSAMP_420};
    rc_encode_info info;
    g_jpeg.len = 0;
    CHECK_EQ_INT(rc_codec_encode(enc, &img, &p, &g_jpeg, &info), RCANVAS_OK);
}

static int present_encoded(rcanvas_canvas *c, const void *data, size_t len, uint32_t w, uint32_t h, int q,
                           const char *encoder) {
    rcanvas_encoded_frame f = {.data = data, .size = len, .width = w, .height = h, .codec = RCANVAS_CODEC_JPEG,
                               .quality = q, .encoder = encoder};
    return rcanvas_present_encoded(c, &f);
}

/* The packet s gets now (a reference), ticking the canvas up to ms; NULL if none. */
static rc_packet *take(rcanvas_canvas *c, rc_session *s, int ms) {
    for (int i = 0; i < ms; i++) {
        rc_packet *pk = NULL;
        if (rc_session_next(s, rc_now_us(), &pk, NULL)) return pk;
        rc_canvas_tick(c, rc_now_us());
        usleep(1000);
    }
    return NULL;
}

static const char *encoder_of(rc_session *s) {
    rc_session_state st;
    rc_session_get_state(s, &st);
    return st.encoder ? st.encoder->name : "none";
}

static void e1_taken_as_is(void) {
    rcanvas_canvas *c = make(RCANVAS_CODEC_JPEG, 0);
    rc_session *s = open_with(c, 0, 1);
    pthread_mutex_lock(&c->mu); /* the frames' own size, whatever this test's instant acks make of the link */
    c->rate_adapt = 0;
    pthread_mutex_unlock(&c->mu);
    picture(g_px, W, H, 0);
    encode_jpeg(g_px, W, H, 80);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 80, "jpeg-wgpu"), RCANVAS_OK);
    rc_packet *pk = take(c, s, 1000);
    CHECK_MSG(pk != NULL, "no packet for the encoded frame");
    if (pk) {
        printf("E1: %zu bytes of the app's JPEG went out as frame %u (%s, %d tile)\n", pk->total_bytes, pk->seq,
               pk->codec->name, pk->ntiles);
        CHECK_EQ_INT(pk->seq, 1);
        CHECK(pk->codec == &rc_codec_jpeg_wgpu && pk->ntiles == 1 && pk->width == W && pk->height == H);
        CHECK(pk->tiles[0].data.len == g_jpeg.len &&
              !memcmp(rc_buf_data(&pk->tiles[0].data), rc_buf_data(&g_jpeg), g_jpeg.len));
        CHECK(pk->flags & RC_PACKET_KEYFRAME);
        CHECK_EQ_INT(rc_session_ack(s, pk->seq, 0, rc_now_us()), RCANVAS_OK);
        rc_packet_unref(pk);
    }
    CHECK_MSG(!strcmp(encoder_of(s), "jpeg-wgpu"), "the viewer is told %s", encoder_of(s));
    rc_canvas_debug d = dbg(c);
    CHECK_EQ_INT(d.presented_seq, 1);
    CHECK_EQ_INT(d.latest_seq, 1);
    /* a CPU frame after it: rcanvas' encoder again, the whole frame (nothing to diff against) */
    picture(g_px, W, H, 1);
    rcanvas_frame f = {g_px, W, H, (size_t)W * 4, RCANVAS_FORMAT_RGBA8, 0};
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK);
    wait_latest(c, 2);
    pk = take(c, s, 1000);
    CHECK_MSG(pk && pk->seq == 2, "no packet of the CPU frame");
    if (pk) {
        uint64_t px = 0;
        for (int i = 0; i < pk->ntiles; i++) px += (uint64_t)pk->tiles[i].w * pk->tiles[i].h;
        CHECK_MSG(pk->codec == &rc_codec_jpeg && px == (uint64_t)W * H, "%s, %llu pixels", pk->codec->name,
                  (unsigned long long)px);
        rc_session_ack(s, pk->seq, 0, rc_now_us());
        rc_packet_unref(pk);
    }
    CHECK_MSG(!strcmp(encoder_of(s), "jpeg"), "after a CPU frame the viewer is told %s", encoder_of(s));
    destroy(c, s);
}

static void e2_pixels_on_request(void) {
    rcanvas_canvas *c = make(RCANVAS_CODEC_JPEG, 40);
    rc_session *s = open_with(c, 0, 1);
    pthread_mutex_lock(&c->mu); /* as in E1 */
    c->rate_adapt = 0;
    pthread_mutex_unlock(&c->mu);
    picture(g_px, W, H, 3);
    encode_jpeg(g_px, W, H, 80);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 80, "jpeg-wgpu"), RCANVAS_OK);
    rc_packet *pk = take(c, s, 1000);
    CHECK(pk && pk->seq == 1);
    if (pk) rc_session_ack(s, pk->seq, 0, rc_now_us());
    rc_packet_unref(pk);
    /* still for refine_ms: the refinement is due, and it needs the pixels */
    int woke = 0, wakes = 0;
    for (int i = 0; i < 500 && !woke; i++) {
        rc_canvas_tick(c, rc_now_us());
        int m = rcanvas_wait(c, 0);
        woke = m > 0 && (m & RCANVAS_WAKE_PIXELS);
        wakes += woke;
        if (!woke) usleep(1000);
    }
    CHECK_MSG(woke, "rcanvas_wait never asked for the pixels");
    for (int i = 0; i < 100; i++) { /* once per frame */
        rc_canvas_tick(c, rc_now_us());
        int m = rcanvas_wait(c, 0);
        wakes += m > 0 && (m & RCANVAS_WAKE_PIXELS);
    }
    CHECK_MSG(wakes == 1, "asked %d times", wakes);
    CHECK_MSG(take(c, s, 100) == NULL, "a packet before the pixels came");
    rcanvas_frame f = {g_px, W, H, (size_t)W * 4, RCANVAS_FORMAT_RGBA8, 0};
    rcanvas_frame wrong = {g_px, W - 1, H, (size_t)W * 4, RCANVAS_FORMAT_RGBA8, 0};
    CHECK_EQ_INT(rcanvas_present_pixels(c, &wrong), RCANVAS_EFRAME_SIZE);
    CHECK_EQ_INT(rcanvas_present_pixels(c, &f), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_present_pixels(c, &f), RCANVAS_ESTALE); /* it has them */
    pk = take(c, s, 2000);
    CHECK_MSG(pk && (pk->flags & RC_PACKET_REFINE) && pk->seq == 1, "no refinement of frame 1");
    if (pk) {
        uint8_t *out = calloc((size_t)W * H, 4);
        for (int i = 0; i < pk->ntiles; i++) {
            const rc_tile *t = &pk->tiles[i];
            uint8_t *rgba = NULL;
            uint32_t w = 0, h = 0;
            CHECK_EQ_INT(rc_decode_png(rc_buf_data((rc_buf *)&t->data), t->data.len, &rgba, &w, &h), 0);
            for (uint32_t y = 0; rgba && y < h && w == t->w; y++)
                memcpy(out + ((size_t)(t->y + y) * W + t->x) * 4, rgba + (size_t)y * w * 4, (size_t)w * 4);
            free(rgba);
        }
        int diff = 0;
        for (size_t i = 0; i < (size_t)W * H * 4; i++) diff += out[i] != g_px[i];
        printf("E2: the refinement (%s, %d tiles, %zu bytes): %d bytes differ from the pixels handed over\n",
               pk->codec->name, pk->ntiles, pk->total_bytes, diff);
        CHECK_MSG(pk->codec == &rc_codec_png && diff == 0, "%s, %d bytes differ", pk->codec->name, diff);
        free(out);
        rc_packet_unref(pk);
    }
    /* a newer frame came: pixels for the old one are stale */
    picture(g_px, W, H, 4);
    encode_jpeg(g_px, W, H, 80);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 80, NULL), RCANVAS_OK);
    picture(g_px, W, H, 5);
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK);
    wait_latest(c, 3);
    CHECK_EQ_INT(rcanvas_present_pixels(c, &f), RCANVAS_ESTALE);
    destroy(c, s);
}

static void e3_not_used(void) {
    rcanvas_canvas *c = make(RCANVAS_CODEC_JPEG, 0);
    rc_session *s = open_with(c, 0, 1);
    int q = -1;
    CHECK_EQ_INT(rcanvas_canvas_get_option(c, RCANVAS_OPT_LIVE_QUALITY, &q), RCANVAS_OK);
    CHECK_EQ_INT(q, 85);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c, RCANVAS_OPT_LIVE_QUALITY, 50), RCANVAS_EINVAL);
    /* a frame small enough to go lossless (rc_canvas_small_frame_locked) */
    picture(g_px, 40, 30, 0);
    encode_jpeg(g_px, 40, 30, 80);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, 40, 30, 80, "jpeg-wgpu"), RCANVAS_ENOTUSED);
    /* more than the canvas's configured quality (85): not what its viewers' links were asked about */
    picture(g_px, W, H, 0);
    encode_jpeg(g_px, W, H, 90);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 90, "jpeg-wgpu"), RCANVAS_ENOTUSED);
    encode_jpeg(g_px, W, H, 85);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 85, "jpeg-wgpu"), RCANVAS_OK);
    /* the steering asks for less than the frame's quality */
    encode_jpeg(g_px, W, H, 80);
    rc_packet *pk = take(c, s, 1000);
    if (pk) rc_session_ack(s, pk->seq, 0, rc_now_us());
    rc_packet_unref(pk);
    pthread_mutex_lock(&c->mu);
    c->tiers[0].steer.scale_div = 1;
    c->tiers[0].steer.quality = 60;
    c->tiers[0].steer.fps_cap = 0;
    pthread_mutex_unlock(&c->mu);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c, RCANVAS_OPT_LIVE_QUALITY, &q), RCANVAS_OK);
    CHECK_EQ_INT(q, 60);
    uint32_t before = dbg(c).presented_seq;
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 80, "jpeg-wgpu"), RCANVAS_ENOTUSED);
    CHECK_EQ_INT(dbg(c).presented_seq, before);
    encode_jpeg(g_px, W, H, 60);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 60, "jpeg-wgpu"), RCANVAS_OK);
    pthread_mutex_lock(&c->mu);
    c->tiers[0].steer.scale_div = 2; /* a smaller frame: the app's full-size bytes cannot serve */
    pthread_mutex_unlock(&c->mu);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c, RCANVAS_OPT_LIVE_QUALITY, &q), RCANVAS_OK);
    CHECK_EQ_INT(q, 0);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 60, "jpeg-wgpu"), RCANVAS_ENOTUSED);
    destroy(c, s);
    /* a PNG canvas: its viewers get PNG, not JPEG */
    c = make(RCANVAS_CODEC_PNG, 0);
    s = open_with(c, 0, 1);
    CHECK_EQ_INT(rcanvas_canvas_get_option(c, RCANVAS_OPT_LIVE_QUALITY, &q), RCANVAS_OK);
    CHECK_EQ_INT(q, 0);
    CHECK_EQ_INT(present_encoded(c, rc_buf_data(&g_jpeg), g_jpeg.len, W, H, 60, "jpeg-wgpu"), RCANVAS_ENOTUSED);
    CHECK_EQ_INT(dbg(c).presented_seq, 0);
    destroy(c, s);
}

static void e4_bad_input(void) {
    rcanvas_canvas *c = make(RCANVAS_CODEC_JPEG, 0);
    rc_session *s = open_with(c, 0, 1);
    picture(g_px, W, H, 0);
    encode_jpeg(g_px, W, H, 80);
    size_t n = g_jpeg.len;
    uint8_t *j = malloc(n);
    memcpy(j, rc_buf_data(&g_jpeg), n);
    static const uint8_t junk[64] = {1, 2, 3};
    CHECK_EQ_INT(present_encoded(c, junk, sizeof junk, W, H, 80, NULL), RCANVAS_EDATA);
    CHECK_EQ_INT(present_encoded(c, j, n, W + 1, H, 80, NULL), RCANVAS_EDATA);   /* another size */
    CHECK_EQ_INT(present_encoded(c, j, n - 2, W, H, 80, NULL), RCANVAS_EDATA);   /* no EOI */
    CHECK_EQ_INT(present_encoded(c, j, n / 2, W, H, 80, NULL), RCANVAS_EDATA);   /* cut short */
    size_t sof = 0;
    for (size_t i = 2; i + 1 < n && !sof; i++)
        if (j[i] == 0xFF && j[i + 1] == 0xC0) sof = i;
    CHECK(sof > 0);
    j[sof + 1] = 0xC2; /* progressive */
    CHECK_EQ_INT(present_encoded(c, j, n, W, H, 80, NULL), RCANVAS_EDATA);
    j[sof + 1] = 0xC0;
    CHECK_EQ_INT(present_encoded(c, j, n, W, H, 80, "x264"), RCANVAS_EINVAL);
    CHECK_EQ_INT(present_encoded(c, j, n, W, H, 0, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(present_encoded(c, j, n, W, H, 101, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(present_encoded(c, NULL, n, W, H, 80, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(present_encoded(c, j, n, 0, H, 80, NULL), RCANVAS_EFRAME_SIZE);
    rcanvas_encoded_frame f = {.data = j, .size = n, .width = W, .height = H, .codec = RCANVAS_CODEC_PNG, .quality = 80};
    CHECK_EQ_INT(rcanvas_present_encoded(c, &f), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_present_encoded(NULL, &f), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_present_pixels(c, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(dbg(c).presented_seq, 0);
    CHECK_EQ_INT(present_encoded(c, j, n, W, H, 80, NULL), RCANVAS_OK); /* and a good one still goes */
    rc_packet *pk = take(c, s, 1000);
    CHECK_MSG(pk && pk->codec == &rc_codec_jpeg_app && pk->seq == 1, "the good frame after the bad ones");
    CHECK_MSG(!strcmp(encoder_of(s), "jpeg-app"), "told %s", encoder_of(s));
    rc_packet_unref(pk);
    printf("E4: junk, another size, no EOI, cut short, progressive, names and ranges refused; a good frame after\n");
    free(j);
    destroy(c, s);
}

int main(void) {
    if (rc_pool_new(2, &g_pool)) TEST_MAIN_END();
    e1_taken_as_is();
    e2_pixels_on_request();
    e3_not_used();
    e4_bad_input();
    rc_pool_free(g_pool);
    rc_buf_free(&g_jpeg);
    TEST_MAIN_END();
}
