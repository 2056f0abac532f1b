/* SPDX-License-Identifier: MIT */
/*
 * test_small — rendercanvas' set_bitmap contract ("applications can provide N times smaller bitmaps to
 * produce a pixelated visualization"), the server's half:
 *  S1 a bitmap 1/8 of the canvas (40x30 on 320x240) on a JPEG canvas goes out as PNG, whole size, lossless: the
 *     decoded pixels equal the input exactly; no refinement follows (nothing to refine);
 *  S2 the rule's bounds: exactly 1/4 of the canvas's physical pixels is small, one column more is not; the pixel
 *     cap (RC_SMALL_MAX_PX); physical pixels count (a resize at pixel_ratio 2), not logical ones;
 *  S3 the link rule: a small frame whose PNG would not fit the tier's budget at 12 fps keeps the tier's codec;
 *     video tiers keep video;
 *  S4 a frame the rate steering shrank is marked (RC_PACKET_SCALED) and its wire header carries flag 16 (the client
 *     upscales it smoothly); a whole-size frame's does not; the same for a video tier (H.264, if built).
 */
#include <string.h>
#include <unistd.h>

#include "imageio.h"
#include "stream/canvas_internal.h"
#include "tier_kit.h"
#include "transport/wire.h"

static rc_pool *g_pool;
static const rc_logger g_log = {.fn = NULL, .level = RCANVAS_LOG_ERROR};
static uint8_t g_px[640 * 480 * 4];

static rcanvas_canvas *make(rcanvas_codec codec, uint32_t w, uint32_t h, int refine_ms) {
    return kit_canvas(g_pool, &g_log, codec, w, h, refine_ms, 0);
}

static void destroy(rcanvas_canvas *c, rc_session *s) {
    if (s) rc_session_close(s);
    rc_canvas_close(c);
    rc_canvas_destroy(c);
}

/* Pixel art: every pixel a colour of its own, each neighbour far from it (a checkerboard of light and dark). */
static void pattern(uint8_t *px, uint32_t w, uint32_t h, int t) {
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            int dark = (x + y) & 1;
            p[0] = (uint8_t)(dark ? 20 + (x * 7 + t) % 40 : 200 + (x * 5 + t) % 55);
            p[1] = (uint8_t)(dark ? 20 + (y * 11) % 40 : 190 + (y * 7) % 65);
            p[2] = (uint8_t)(dark ? 30 + ((x + y) * 3) % 40 : 180 + (x * y) % 75);
            p[3] = 255;
        }
}

static int present_art(rcanvas_canvas *c, uint32_t w, uint32_t h, int t) {
    pattern(g_px, w, h, t);
    rcanvas_frame f = {g_px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, 0};
    return rcanvas_present(c, &f);
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

/* Presents a w x h frame, waits until it is encoded, returns the packet s gets for it (a reference) after acking
 * nothing else; the caller acks. */
static rc_packet *frame_packet(rcanvas_canvas *c, rc_session *s, uint32_t w, uint32_t h, int t) {
    uint32_t seq = dbg(c).presented_seq + 1;
    CHECK_EQ_INT(present_art(c, w, h, t), RCANVAS_OK);
    wait_latest(c, seq);
    rc_packet *pk = take(c, s, 2000);
    CHECK_MSG(pk && pk->seq == seq, "%ux%u: no packet of frame %u", w, h, seq);
    return pk;
}

static const char *codec_name(const rc_packet *pk) { return pk && pk->codec ? pk->codec->name : "none"; }

/* The packet's tiles, decoded (PNG or JPEG) into a w x h RGBA image at their rectangles; 0 or -1. */
static int decode_packet(const rc_packet *pk, uint8_t *out) {
    for (int i = 0; i < pk->ntiles; i++) {
        const rc_tile *t = &pk->tiles[i];
        uint8_t *rgba = NULL;
        uint32_t w = 0, h = 0;
        int r = pk->codec == &rc_codec_png ? rc_decode_png(rc_buf_data((rc_buf *)&t->data), t->data.len, &rgba, &w, &h)
                                           : rc_decode_jpeg(rc_buf_data((rc_buf *)&t->data), t->data.len, &rgba, &w, &h);
        if (r || w != t->w || h != t->h) {
            free(rgba);
            return -1;
        }
        for (uint32_t y = 0; y < h; y++)
            memcpy(out + ((size_t)(t->y + y) * pk->width + t->x) * 4, rgba + (size_t)y * w * 4, (size_t)w * 4);
        free(rgba);
    }
    return 0;
}

static void s1_small_is_lossless(void) {
    rcanvas_canvas *c = make(RCANVAS_CODEC_JPEG, 320, 240, 50);
    rc_session *s = open_with(c, 0, 1); /* a protocol-1 viewer: JPEG and PNG */
    rc_packet *pk = frame_packet(c, s, 40, 30, 0);
    if (pk) {
        printf("S1: 40x30 on a 320x240 JPEG canvas: %s, %zu bytes, flags 0x%x\n", codec_name(pk), pk->total_bytes,
               pk->flags);
        CHECK_MSG(pk->codec == &rc_codec_png, "codec %s", codec_name(pk));
        CHECK((pk->flags & RC_PACKET_LOSSLESS) && (pk->flags & RC_PACKET_KEYFRAME) && !(pk->flags & RC_PACKET_SCALED));
        CHECK(pk->width == 40 && pk->height == 30);
        uint8_t out[40 * 30 * 4];
        memset(out, 0, sizeof out);
        CHECK_EQ_INT(decode_packet(pk, out), 0);
        pattern(g_px, 40, 30, 0);
        int diff = 0;
        for (size_t i = 0; i < sizeof out; i++) diff += out[i] != g_px[i];
        CHECK_MSG(diff == 0, "%d bytes differ from the input", diff);
        uint8_t hdr[RC_FRAME_HEADER_SIZE];
        rc_wire_tile_header(pk, pk->ntiles - 1, 0, 1, hdr);
        rc_frame_header h;
        CHECK_EQ_INT(rc_frame_header_read(hdr, RC_FRAME_HEADER_SIZE + pk->tiles[pk->ntiles - 1].data.len, &h), RCANVAS_OK);
        CHECK_EQ_INT(h.codec, RCANVAS_CODEC_PNG);
        CHECK((h.flags & RC_FLAG_LOSSLESS) && !(h.flags & RC_FLAG_SCALED) && !(h.flags & RC_FLAG_REFINE));
        CHECK_EQ_INT(rc_session_ack(s, pk->seq, 0, rc_now_us()), RCANVAS_OK);
        rc_packet_unref(pk);
    }
    /* nothing to refine: the viewer has the frame lossless (refine_ms is 50; wait 4 times that) */
    rc_packet *more = take(c, s, 200);
    CHECK_MSG(!more, "a packet after the lossless frame: seq %u flags 0x%x", more ? more->seq : 0, more ? more->flags : 0);
    rc_packet_unref(more);
    /* the same canvas, a bitmap of its own size: the configured codec */
    pk = frame_packet(c, s, 320, 240, 1);
    if (pk) {
        CHECK_MSG(pk->codec == &rc_codec_jpeg && !(pk->flags & RC_PACKET_LOSSLESS), "320x240: %s", codec_name(pk));
        rc_session_ack(s, pk->seq, 0, rc_now_us());
        rc_packet_unref(pk);
    }
    destroy(c, s);
}

/* The codec a w x h frame goes out with on canvas c (to viewer s). */
static const rc_codec_type *codec_of(rcanvas_canvas *c, rc_session *s, uint32_t w, uint32_t h, int t) {
    rc_packet *pk = frame_packet(c, s, w, h, t);
    const rc_codec_type *codec = pk ? pk->codec : NULL;
    if (pk) {
        rc_session_ack(s, pk->seq, 0, rc_now_us());
        rc_packet_unref(pk);
    }
    return codec;
}

static void resize(rc_session *s, double w, double h, double ratio) {
    rcanvas_event ev = {.type = RCANVAS_EVENT_RESIZE, .width = w, .height = h, .pixel_ratio = ratio};
    rc_session_push_event(s, &ev);
}

static void s2_bounds(void) {
    rcanvas_canvas *c = make(RCANVAS_CODEC_JPEG, 320, 240, 0);
    rc_session *s = open_with(c, 0, 1);
    /* the sizes alone: no link budget (this test's instant acks measure a link of the frames' own small rate;
     * S3 has the link rule) */
    pthread_mutex_lock(&c->mu);
    c->rate_adapt = 0;
    pthread_mutex_unlock(&c->mu);
    CHECK_MSG(codec_of(c, s, 160, 120, 0) == &rc_codec_png, "160x120 (1/4 of 320x240): lossless");
    CHECK_MSG(codec_of(c, s, 161, 120, 1) == &rc_codec_jpeg, "161x120 (over 1/4): JPEG");
    CHECK_MSG(codec_of(c, s, 1, 1, 2) == &rc_codec_png, "1x1: lossless");
    pthread_mutex_lock(&c->mu); /* its ~70 bytes of PNG headers do not make it 70 bytes a pixel for the link rule */
    CHECK_MSG(c->tiers[0].steer.small_bpp > 0 && c->tiers[0].steer.small_bpp <= RC_SMALL_MAX_BPP, "small_bpp %g",
              c->tiers[0].steer.small_bpp);
    pthread_mutex_unlock(&c->mu);
    /* physical pixels: 160x120 logical at pixel_ratio 2 is 320x240 */
    resize(s, 160, 120, 2);
    rcanvas_size sz;
    rcanvas_canvas_get_size(c, &sz);
    CHECK_EQ_INT(sz.physical_width, 320);
    CHECK_MSG(codec_of(c, s, 100, 75, 3) == &rc_codec_png, "100x75 on 160x120 @2: lossless (over 1/4 of the logical size)");
    CHECK_MSG(codec_of(c, s, 161, 120, 4) == &rc_codec_jpeg, "161x120 on 160x120 @2: JPEG");
    /* the viewer makes the canvas as small as the bitmap: it is no longer small next to it */
    resize(s, 40, 30, 1);
    CHECK_MSG(codec_of(c, s, 40, 30, 5) == &rc_codec_jpeg, "40x30 on 40x30: JPEG");
    /* the pixel cap: 256x256 is small on a 1024x1024 canvas, 257x256 is over RC_SMALL_MAX_PX */
    resize(s, 1024, 1024, 1);
    const rc_codec_type *k = codec_of(c, s, 256, 256, 6);
    CHECK_MSG(k == &rc_codec_png, "256x256 on 1024x1024: lossless, not %s", k ? k->name : "none");
    CHECK_MSG(codec_of(c, s, 257, 256, 7) == &rc_codec_jpeg, "257x256 (over the pixel cap): JPEG");
    destroy(c, s);
}

static void s3_link_rule(void) {
    rcanvas_canvas *c = make(RCANVAS_CODEC_JPEG, 320, 240, 0);
    rc_image img = {.width = 40, .height = 30};
    pthread_mutex_lock(&c->mu);
    rc_tier t = {.codec = &rc_codec_jpeg, .budget_bps = 1e6};
    CHECK_MSG(rc_tier_small_lossless_locked(c, &t, &img), "not measured yet: lossless is tried");
    /* 3 bytes a pixel (noise): 40x30 x 3 B x 8 x 12 fps = 346 kbit/s */
    t.steer.small_bpp = 3.0;
    CHECK_MSG(rc_tier_small_lossless_locked(c, &t, &img), "346 kbit/s within 1 Mbit/s: lossless");
    t.budget_bps = 300e3;
    CHECK_MSG(!rc_tier_small_lossless_locked(c, &t, &img), "346 kbit/s over 300 kbit/s: the tier's codec");
    t.steer.small_bpp = 0.5; /* pixel art compresses: 58 kbit/s */
    CHECK_MSG(rc_tier_small_lossless_locked(c, &t, &img), "58 kbit/s within 300 kbit/s: lossless");
    t.codec = &rc_codec_png; /* a PNG tier is lossless already: nothing to switch */
    CHECK(!rc_tier_small_lossless_locked(c, &t, &img));
    const rc_codec_type *h264 = rc_codec_for(RCANVAS_CODEC_H264);
    if (h264) {
        t.codec = h264; /* video keeps video (the client draws it nearest-neighbour) */
        CHECK(!rc_tier_small_lossless_locked(c, &t, &img));
    }
    pthread_mutex_unlock(&c->mu);
    destroy(c, NULL);

    if (h264) { /* a viewer of an H.264 canvas gets its small bitmap as H.264 */
        c = make(RCANVAS_CODEC_H264, 320, 240, 0);
        rc_session *s = open_with(c, 1u << RCANVAS_CODEC_H264, 2);
        rc_packet *pk = frame_packet(c, s, 40, 30, 0);
        if (pk) {
            CHECK_MSG(pk->codec == h264 && !(pk->flags & RC_PACKET_SCALED), "video tier: %s", codec_name(pk));
            rc_session_ack(s, pk->seq, 0, rc_now_us());
            rc_packet_unref(pk);
        }
        destroy(c, s);
    }
}

/* Tier 0 of c starts shrunk to 1/2 (as the steering leaves it on a slow link). */
static void start_shrunk(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    rc_steer_init(&c->tiers[0].steer, c->params.quality, (double)c->params.bitrate_kbps * 1000);
    c->tiers[0].steer.scale_div = 2;
    pthread_mutex_unlock(&c->mu);
}

static unsigned wire_flags(const rc_packet *pk) {
    uint8_t hdr[RC_FRAME_HEADER_SIZE];
    rc_wire_tile_header(pk, 0, 0, 2, hdr);
    return (unsigned)(hdr[6] | (hdr[7] << 8));
}

static void s4_scaled_flag(void) {
    rcanvas_canvas *c = make(RCANVAS_CODEC_JPEG, 640, 480, 0);
    rc_session *s = open_with(c, 0, 1);
    start_shrunk(c);
    rc_packet *pk = frame_packet(c, s, 640, 480, 0);
    if (pk) {
        printf("S4: JPEG tier at 1/2: %ux%u flags 0x%x, header flags 0x%x\n", pk->width, pk->height, pk->flags,
               wire_flags(pk));
        CHECK(pk->width == 320 && pk->height == 240 && (pk->flags & RC_PACKET_SCALED));
        CHECK(wire_flags(pk) & RC_FLAG_SCALED);
        rc_session_ack(s, pk->seq, 0, rc_now_us());
        rc_packet_unref(pk);
    }
    /* no link limit: the steering goes back to the whole size, and the flag goes */
    for (int t = 1; t < 4; t++) {
        pk = frame_packet(c, s, 640, 480, t);
        if (!pk) break;
        int whole = pk->width == 640;
        unsigned wf = wire_flags(pk);
        rc_session_ack(s, pk->seq, 0, rc_now_us());
        rc_packet_unref(pk);
        if (whole) {
            CHECK(!(wf & RC_FLAG_SCALED));
            break;
        }
        CHECK_MSG(t < 3, "still shrunk after %d frames", t);
    }
    destroy(c, s);

    const rc_codec_type *h264 = rc_codec_for(RCANVAS_CODEC_H264);
    if (!h264) {
        printf("S4: no H.264 in this build: the video half is skipped\n");
        return;
    }
    c = make(RCANVAS_CODEC_H264, 640, 480, 0);
    s = open_with(c, 1u << RCANVAS_CODEC_H264, 2);
    start_shrunk(c); /* video keeps a size for RC_STEER_SIZE_UP_CALLS frames before it grows */
    pk = frame_packet(c, s, 640, 480, 0);
    if (pk) {
        printf("S4: H.264 tier at 1/2: %ux%u flags 0x%x, header flags 0x%x\n", pk->width, pk->height, pk->flags,
               wire_flags(pk));
        CHECK(pk->codec == h264 && pk->width == 320 && (pk->flags & RC_PACKET_SCALED));
        CHECK(wire_flags(pk) & RC_FLAG_SCALED);
        rc_session_ack(s, pk->seq, 0, rc_now_us());
        rc_packet_unref(pk);
    }
    destroy(c, s);
    c = make(RCANVAS_CODEC_H264, 640, 480, 0);
    s = open_with(c, 1u << RCANVAS_CODEC_H264, 2);
    pk = frame_packet(c, s, 640, 480, 0);
    if (pk) {
        CHECK(pk->width == 640 && !(pk->flags & RC_PACKET_SCALED) && !(wire_flags(pk) & RC_FLAG_SCALED));
        rc_session_ack(s, pk->seq, 0, rc_now_us());
        rc_packet_unref(pk);
    }
    destroy(c, s);
}

int main(void) {
    if (rc_pool_new(2, &g_pool)) TEST_MAIN_END();
    s1_small_is_lossless();
    s2_bounds();
    s3_link_rule();
    s4_scaled_flag();
    rc_pool_free(g_pool);
    TEST_MAIN_END();
}
