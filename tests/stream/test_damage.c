/* SPDX-License-Identifier: MIT */
/*
 * test_damage — damage tracking (src/stream/damage.c), driven without a network: canvases with the real
 * encoders, viewers as sessions, and each viewer's picture rebuilt here the way the browser builds it (every tile
 * decoded and drawn at its rectangle over what it shows), so that "the picture is right" is checked pixel by
 * pixel, not inferred:
 *  - the diff: one changed pixel marks exactly its tile (also in the narrower last column and row); identical
 *    images mark none; a size change marks all; rectangles merge runs of dirty tiles;
 *  - a still plot with a small moving marker (JPEG q85, 1920×1080): each packet holds only the marker's tiles
 *    (where it was and where it is), and all of them together weigh ≤ 5 % of the whole frames;
 *  - the lossless refinement covers only the tiles that are not lossless yet, makes the picture exact, and is
 *    not made again for nothing;
 *  - newest wins with two viewers (one slow): every packet a viewer gets fits the picture it has (base check) or
 *    is whole, and its picture equals the frame exactly (PNG, lossless); a viewer back after more frames than
 *    the history holds gets a whole frame;
 *  - an identical frame: no packet for any codec (JPEG, and H.264 where built), and rcanvas_wait does not stall;
 *  - a GPU source's bitmap (rc_canvas_present_external_damage) is used instead of the CPU diff.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageio.h"
#include "stream/canvas.h"
#include "stream/damage.h"
#include "stream/session.h"
#include "test.h"
#include "testframes.h"

static rc_pool *g_pool;
static const rc_logger g_log = {0};
static void no_notify(void *u) { (void)u; }

#ifdef RCANVAS_SANITIZE
#define W 960 /* the same logic on a quarter of the pixels: ASan makes the encoders slow */
#define H 540
#else
#define W 1920
#define H 1080
#endif
#define MARK 10 /* the marker: a MARK × MARK square */

static uint8_t *g_plot; /* the still plot */

/* Frame t: the plot with the marker at step t (it moves right 7 px and down 3 px per step); t = 0: no marker. */
static void draw_frame(uint8_t *px, int t) {
    memcpy(px, g_plot, (size_t)W * H * 4);
    if (t <= 0) return;
    uint32_t x0 = (uint32_t)(100 + 7 * t) % (W - MARK), y0 = (uint32_t)(90 + 3 * t) % (H - MARK);
    for (uint32_t y = y0; y < y0 + MARK; y++)
        for (uint32_t x = x0; x < x0 + MARK; x++) {
            uint8_t *p = px + ((size_t)y * W + x) * 4;
            p[0] = 220, p[1] = 20, p[2] = 60, p[3] = 255;
        }
}
/* The tiles the marker covers at step t, set in m (W × H grid). */
static void mark_tiles(rc_damage_map *m, int t) {
    if (t <= 0) return;
    uint32_t x0 = (uint32_t)(100 + 7 * t) % (W - MARK), y0 = (uint32_t)(90 + 3 * t) % (H - MARK);
    for (uint32_t ty = y0 / RC_DAMAGE_TILE; ty <= (y0 + MARK - 1) / RC_DAMAGE_TILE; ty++)
        for (uint32_t tx = x0 / RC_DAMAGE_TILE; tx <= (x0 + MARK - 1) / RC_DAMAGE_TILE; tx++)
            m->bits[ty * m->tiles_x + tx] = 1;
}

static rcanvas_canvas *new_canvas(rcanvas_codec codec) {
    rc_canvas_env env = {.pool = g_pool, .log = &g_log, .max_frame_dim = 8192, .notify = no_notify};
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.codec = codec;
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    cc.refine_ms = 3600 * 1000; /* refinements only from the test's ticks, two hours ahead */
    cc.max_in_flight = 2;
    rcanvas_canvas *c = NULL;
    CHECK_EQ_INT(rc_canvas_create(&env, &cc, &c), RCANVAS_OK);
    /* damage, not the link: the test's acks are no link, and a 1080p JPEG at the first guess of one (10 Mbit/s)
     * would be shrunk (whole frames only) */
    CHECK_EQ_INT(rcanvas_canvas_set_option(c, RCANVAS_OPT_RATE_ADAPT, 0), RCANVAS_OK);
    return c;
}
static void free_canvas(rcanvas_canvas *c) {
    rc_canvas_close(c);
    rc_canvas_wait_sessions(c);
    rc_canvas_destroy(c);
}
static rc_canvas_debug dbg(rcanvas_canvas *c) {
    rc_canvas_debug d;
    rc_canvas_get_debug(c, &d);
    return d;
}
static void wait_latest(rcanvas_canvas *c, uint32_t seq) {
    for (int i = 0; i < 5000 && dbg(c).latest_seq < seq; i++) usleep(1000);
}
static void wait_idle(rcanvas_canvas *c) { /* nothing pending or encoding, no refinement running */
    for (int i = 0; i < 5000; i++) {
        rc_canvas_debug d = dbg(c);
        if (!d.pending_seq && !d.encoding_seq && !d.refine_running) return;
        usleep(1000);
    }
}
static int present_px(rcanvas_canvas *c, const uint8_t *px, uint32_t w, uint32_t h) {
    rcanvas_frame f = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, 0};
    return rcanvas_present(c, &f);
}

/* ---- a viewer, as the browser: its picture, rebuilt from the tiles it is given ---- */

typedef struct viewer {
    rc_session *s;
    uint8_t *pic;  /* W × H RGBA */
    uint32_t seq;  /* the frame its picture shows, 0 none */
} viewer;

typedef struct pkt {
    uint32_t seq, base;
    unsigned flags;
    int ntiles;
    size_t bytes;
    rc_damage_map cover; /* the tiles its rectangles cover (W × H grid) */
    int decoded;         /* every tile decoded at its size */
} pkt;

static void viewer_open(viewer *v, rcanvas_canvas *c, unsigned codecs) {
    memset(v, 0, sizeof *v);
    rc_session_caps caps = {.codecs = codecs, .protocol = codecs ? 2 : 1};
    CHECK_EQ_INT(rc_session_open(c, codecs ? &caps : NULL, &v->s), RCANVAS_OK);
    v->pic = calloc((size_t)W * H, 4);
}
static void viewer_close(viewer *v) {
    rc_session_close(v->s);
    free(v->pic);
}

/* Takes the packet the transport would send v now (0: none): checks that it fits v's picture, decodes every tile
 * and draws it at its rectangle. */
static int take(viewer *v, pkt *out) {
    rc_packet *pk = NULL;
    if (!rc_session_next(v->s, rc_now_us(), &pk, NULL)) return 0;
    pkt p = {.seq = pk->seq, .base = pk->base_seq, .flags = pk->flags, .ntiles = pk->ntiles,
             .bytes = pk->total_bytes, .decoded = 1};
    rc_damage_map_reset(&p.cover, W, H);
    if (pk->base_seq) /* partial: only over a picture of a frame in [base, seq] */
        CHECK_MSG(v->seq && v->seq >= pk->base_seq && v->seq <= pk->seq,
                  "packet %u (base %u) given to a viewer showing frame %u", pk->seq, pk->base_seq, v->seq);
    else if (!(pk->flags & RC_PACKET_REFINE))
        CHECK(pk->flags & RC_PACKET_KEYFRAME); /* a whole frame */
    for (int i = 0; i < pk->ntiles; i++) {
        const rc_tile *t = &pk->tiles[i];
        uint8_t *px = NULL;
        uint32_t tw = 0, th = 0;
        int r = pk->codec->wire_id == RCANVAS_CODEC_JPEG
                    ? rc_decode_jpeg(rc_buf_data(&t->data), t->data.len, &px, &tw, &th)
                    : rc_decode_png(rc_buf_data(&t->data), t->data.len, &px, &tw, &th);
        if (r || tw != t->w || th != t->h || t->x + t->w > W || t->y + t->h > H) {
            p.decoded = 0;
            free(px);
            continue;
        }
        for (uint32_t y = 0; y < th; y++)
            memcpy(v->pic + ((size_t)(t->y + y) * W + t->x) * 4, px + (size_t)y * tw * 4, (size_t)tw * 4);
        free(px);
        for (uint32_t ty = t->y / RC_DAMAGE_TILE; ty < rc_damage_tiles(t->y + t->h); ty++)
            for (uint32_t tx = t->x / RC_DAMAGE_TILE; tx < rc_damage_tiles(t->x + t->w); tx++)
                p.cover.bits[ty * p.cover.tiles_x + tx] = 1;
    }
    CHECK_MSG(p.decoded, "packet %u: a tile did not decode at its size", pk->seq);
    v->seq = pk->seq;
    rc_packet_unref(pk);
    if (out) {
        rc_damage_map_free(&out->cover);
        *out = p;
    } else {
        rc_damage_map_free(&p.cover);
    }
    return 1;
}
static void ack(viewer *v, uint32_t seq) { CHECK_EQ_INT(rc_session_ack(v->s, seq, 0, rc_now_us()), RCANVAS_OK); }

/* Ticks the canvas, `ahead` µs in the future, until v gets a packet; 1 if it did. */
static int take_ticking_at(rcanvas_canvas *c, viewer *v, pkt *out, int64_t ahead) {
    for (int i = 0; i < 3000; i++) {
        if (take(v, out)) return 1;
        rc_canvas_tick(c, rc_now_us() + ahead);
        usleep(1000);
    }
    return 0;
}
/* The same two hours ahead: a refinement is due. */
static int take_ticking(rcanvas_canvas *c, viewer *v, pkt *out) { return take_ticking_at(c, v, out, 7200LL * 1000000); }

static int same_tiles(const rc_damage_map *a, const rc_damage_map *b) {
    return !a->all && !b->all && a->tiles_x == b->tiles_x && a->tiles_y == b->tiles_y &&
           !memcmp(a->bits, b->bits, (size_t)a->tiles_x * a->tiles_y);
}

/* ---- the diff and the rectangles ---- */

static void test_diff(void) {
    const uint32_t w = 1000, h = 300; /* 16 × 5 tiles, the last column 40 px wide, the last row 44 px high */
    uint8_t *a = tf_new(TF_PLOT, w, h), *b = tf_new(TF_PLOT, w, h);
    uint8_t bits[16 * 5];
    rc_image ia = {a, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL}, ib = {b, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
    CHECK_EQ_INT(rc_damage_tiles(w), 16);
    CHECK_EQ_INT(rc_damage_tiles(h), 5);
    CHECK_EQ_INT(rc_damage_diff(&ia, &ib, bits), 0); /* identical: no tile */
    int nz = 0;
    for (int i = 0; i < 16 * 5; i++) nz += bits[i] != 0;
    CHECK_EQ_INT(nz, 0);
    static const uint32_t at[][2] = {{130, 70}, {0, 0}, {999, 299}, {64, 64}, {63, 63}, {960, 100}};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        memcpy(b, a, (size_t)w * h * 4);
        b[((size_t)at[k][1] * w + at[k][0]) * 4 + 1] ^= 1; /* one pixel, one bit of green */
        CHECK_EQ_INT(rc_damage_diff(&ib, &ia, bits), 1);
        uint32_t want = at[k][1] / 64 * 16 + at[k][0] / 64;
        for (uint32_t i = 0; i < 16 * 5; i++)
            CHECK_MSG(!!bits[i] == (i == want), "pixel %u,%u: tile %u is %d", at[k][0], at[k][1], i, bits[i]);
    }
    memcpy(b, a, (size_t)w * h * 4);
    ib.width = w - 1; /* another size (or format): not comparable */
    CHECK_EQ_INT(rc_damage_diff(&ib, &ia, bits), -1);
    ib.width = w;
    ib.format = RCANVAS_FORMAT_BGRA8;
    CHECK_EQ_INT(rc_damage_diff(&ib, &ia, bits), -1);
    ib.format = RCANVAS_FORMAT_RGBA8;
    ib.pitch = (size_t)w * 4; /* a pitch of its own is fine: rows are compared */
    free(a);
    free(b);

    /* rectangles: runs of a tile row, grown down over rows with the same columns */
    rc_damage_map m = {0};
    rc_rect r[8];
    CHECK_EQ_INT(rc_damage_map_reset(&m, w, h), RCANVAS_OK);
    CHECK_EQ_INT(rc_damage_rects(&m, w, h, r, 8), 0);
    m.bits[1 * 16 + 2] = m.bits[1 * 16 + 3] = m.bits[2 * 16 + 2] = m.bits[2 * 16 + 3] = 1; /* a 2 × 2 block */
    CHECK_EQ_INT(rc_damage_rects(&m, w, h, r, 8), 1);
    CHECK(r[0].x == 128 && r[0].y == 64 && r[0].w == 128 && r[0].h == 128);
    m.bits[4 * 16 + 15] = 1; /* the corner tile: clipped to the frame */
    m.bits[2 * 16 + 5] = 1;  /* beside the block's second row: a rectangle of its own */
    CHECK_EQ_INT(rc_damage_rects(&m, w, h, r, 8), 3);
    int corner = 0, single = 0, block = 0;
    for (int i = 0; i < 3; i++) {
        corner += r[i].x == 960 && r[i].y == 256 && r[i].w == 40 && r[i].h == 44;
        single += r[i].x == 320 && r[i].y == 128 && r[i].w == 64 && r[i].h == 64;
        block += r[i].x == 128 && r[i].y == 64 && r[i].w == 128 && r[i].h == 128;
    }
    CHECK(corner == 1 && single == 1 && block == 1);
    CHECK_EQ_INT(rc_damage_rects(&m, w, h, r, 2), -1); /* more than max */
    memset(m.bits, 1, 41);                              /* 41 + of 80 tiles: over half, whole frame */
    CHECK_EQ_INT(rc_damage_rects(&m, w, h, r, 8), -1);
    m.all = 1;
    CHECK_EQ_INT(rc_damage_rects(&m, w, h, r, 8), -1);
    rc_damage_map_free(&m);
}

/* ---- a still plot with a moving marker ---- */

static void test_marker(void) {
    rcanvas_canvas *c = new_canvas(RCANVAS_CODEC_JPEG);
    viewer v;
    viewer_open(&v, c, 0);
    uint8_t *px = malloc((size_t)W * H * 4);
    pkt p = {0};
    draw_frame(px, 0);
    CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK); /* seq 1: the plot, whole */
    wait_latest(c, 1);
    CHECK(take(&v, &p) && p.seq == 1 && p.base == 0 && (p.flags & RC_PACKET_KEYFRAME));
    size_t whole = p.bytes;
    ack(&v, 1);
    const int steps = 20;
    size_t marker_bytes = 0;
    for (int t = 1; t <= steps; t++) {
        draw_frame(px, t);
        CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK); /* seq t + 1 */
        wait_latest(c, (uint32_t)t + 1);
        if (!take(&v, &p)) {
            CHECK_MSG(0, "step %d: no packet", t);
            break;
        }
        ack(&v, p.seq);
        /* only the marker's tiles: where it was and where it is */
        rc_damage_map want = {0};
        rc_damage_map_reset(&want, W, H);
        mark_tiles(&want, t - 1);
        mark_tiles(&want, t);
        CHECK_MSG(p.seq == (uint32_t)t + 1 && p.base == (uint32_t)t && !(p.flags & RC_PACKET_KEYFRAME),
                  "step %d: seq %u base %u flags %x", t, p.seq, p.base, p.flags);
        CHECK_MSG(same_tiles(&p.cover, &want), "step %d: %zu tiles covered, %zu expected", t,
                  rc_damage_map_count(&p.cover), rc_damage_map_count(&want));
        CHECK(p.ntiles >= 1 && p.ntiles <= 4);
        rc_damage_map_free(&want);
        marker_bytes += p.bytes;
    }
    double share = (double)marker_bytes / ((double)whole * steps);
    printf("marker at %dx%d, JPEG q85: whole frame %zu bytes, marker frames %.0f bytes on average (%.2f %%)\n", W,
           H, whole, (double)marker_bytes / steps, 100 * share);
    CHECK_MSG(share <= 0.05, "marker frames weigh %.2f %% of whole frames", 100 * share);
    CHECK(marker_bytes > 0);
    /* lossy so far: close to the frame, not equal */
    draw_frame(px, steps);
    double psnr = rc_psnr_rgb(v.pic, (size_t)W * 4, px, (size_t)W * 4, W, H);
    CHECK_MSG(psnr > 25 && psnr < 99, "PSNR %.1f dB", psnr);

    /* still: the first refinement covers everything (nothing was lossless), and makes the picture exact */
    uint32_t L = (uint32_t)steps + 1;
    CHECK(take_ticking(c, &v, &p));
    CHECK_MSG(p.seq == L && (p.flags & RC_PACKET_REFINE) && (p.flags & RC_PACKET_LOSSLESS) && p.base == 0,
              "refinement: seq %u flags %x base %u", p.seq, p.flags, p.base);
    size_t whole_png = p.bytes;
    ack(&v, L);
    CHECK(!memcmp(v.pic, px, (size_t)W * H * 4));

    /* the marker moves on for a few frames, then stops: the refinement covers only the tiles it touched since */
    rc_damage_map touched = {0};
    rc_damage_map_reset(&touched, W, H);
    mark_tiles(&touched, steps);
    /* (more frames than the history holds: the refinement's base comes from the anchor made when the viewer
     * got its lossless frame) */
    const int more = RC_DAMAGE_HISTORY + 8;
    for (int t = steps + 1; t <= steps + more; t++) {
        draw_frame(px, t);
        mark_tiles(&touched, t);
        CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK);
        wait_latest(c, (uint32_t)t + 1);
        CHECK(take(&v, &p) && p.seq == (uint32_t)t + 1 && p.base == (uint32_t)t);
        ack(&v, p.seq);
    }
    L = (uint32_t)(steps + more + 1);
    CHECK(memcmp(v.pic, px, (size_t)W * H * 4) != 0); /* lossy tiles */
    CHECK(take_ticking(c, &v, &p));
    CHECK_MSG(p.seq == L && (p.flags & RC_PACKET_REFINE) && p.base == (uint32_t)steps + 1,
              "second refinement: seq %u flags %x base %u (its picture was lossless at %d)", p.seq, p.flags,
              p.base, steps + 1);
    CHECK_MSG(same_tiles(&p.cover, &touched), "second refinement: %zu tiles, the marker touched %zu",
              rc_damage_map_count(&p.cover), rc_damage_map_count(&touched));
    printf("refinement: whole %zu bytes, of the marker's tiles only %zu bytes\n", whole_png, p.bytes);
    CHECK(p.bytes * 5 < whole_png); /* the tiles it covers are checked above; their bytes follow */
    ack(&v, L);
    CHECK_MSG(!memcmp(v.pic, px, (size_t)W * H * 4), "the picture is not the frame after the refinement");
    rc_damage_map_free(&touched);

    /* nothing changes now: no refinement again, no packet; an identical present sends nothing either */
    for (int i = 0; i < 50; i++) {
        rc_canvas_tick(c, rc_now_us() + 7200LL * 1000000);
        usleep(1000);
    }
    CHECK(!take(&v, NULL));
    CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK);
    wait_idle(c);
    for (int i = 0; i < 50; i++) {
        rc_canvas_tick(c, rc_now_us() + 7200LL * 1000000);
        usleep(1000);
    }
    CHECK(!take(&v, NULL));
    CHECK_EQ_INT(dbg(c).latest_seq, L);
    CHECK_EQ_INT(dbg(c).skipped, 1);

    /* a viewer that joins now gets a whole frame, then a whole refinement: exact too */
    viewer late;
    viewer_open(&late, c, 0);
    CHECK(take_ticking(c, &late, &p) && p.base == 0 && p.seq == L);
    if (!(p.flags & RC_PACKET_LOSSLESS)) {
        ack(&late, L);
        CHECK(take_ticking(c, &late, &p) && (p.flags & RC_PACKET_LOSSLESS));
    }
    CHECK(!memcmp(late.pic, px, (size_t)W * H * 4));
    viewer_close(&late);

    /* a new size: the whole frame */
    uint8_t *small = tf_new(TF_PLOT, W / 2, H / 2);
    CHECK_EQ_INT(present_px(c, small, W / 2, H / 2), RCANVAS_OK);
    wait_latest(c, L + 2);
    CHECK(take(&v, &p) && p.seq == L + 2 && p.base == 0 && (p.flags & RC_PACKET_KEYFRAME));
    free(small);
    rc_damage_map_free(&p.cover);
    viewer_close(&v);
    free(px);
    free_canvas(c);
}

/* ---- newest wins: two viewers, one slow ---- */

static void check_exact(const viewer *v, uint8_t *px, const char *who) {
    draw_frame(px, (int)v->seq - 1); /* seq n shows the marker at step n - 1 */
    CHECK_MSG(!memcmp(v->pic, px, (size_t)W * H * 4), "%s: the picture is not frame %u", who, v->seq);
}

static void test_two_viewers(void) {
    rcanvas_canvas *c = new_canvas(RCANVAS_CODEC_PNG); /* lossless: every picture must equal its frame */
    viewer fast, slow;
    viewer_open(&fast, c, 0);
    viewer_open(&slow, c, 0);
    uint8_t *px = malloc((size_t)W * H * 4), *ref = malloc((size_t)W * H * 4);
    pkt p = {0};
    int slow_partial = 0;
    for (int t = 0; t < 16; t++) { /* seq t + 1 */
        draw_frame(px, t);
        CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK);
        wait_latest(c, (uint32_t)t + 1);
        if (take(&fast, &p)) {
            ack(&fast, p.seq);
            check_exact(&fast, ref, "fast");
        }
        /* the slow one takes a frame every fourth step and acks it three steps later */
        if (t % 4 == 0 && take(&slow, &p)) {
            check_exact(&slow, ref, "slow");
            slow_partial += p.base != 0;
            CHECK_MSG(p.base == 0 || p.base < p.seq - 1 || t == 0, "step %d: the slow viewer's base %u, seq %u", t,
                      p.base, p.seq);
        }
        if (t % 4 == 3) ack(&slow, slow.seq);
    }
    CHECK_MSG(slow_partial >= 2, "the slow viewer got %d partial packets", slow_partial);

    /* hidden for more frames than the history holds: back, it needs a whole frame, and gets one */
    rc_session_set_visible(slow.s, 0);
    int t = 16;
    for (; t < 16 + RC_DAMAGE_HISTORY + 4; t++) {
        draw_frame(px, t);
        CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK);
        wait_latest(c, (uint32_t)t + 1);
        if (take(&fast, &p)) ack(&fast, p.seq);
        CHECK(!take(&slow, NULL));
    }
    CHECK(p.base != 0); /* the fast viewer's packets stay partial meanwhile */
    rc_session_set_visible(slow.s, 1);
    CHECK(!take(&slow, NULL)); /* the newest packet does not fit its picture: it waits for a whole one */
    /* the scene is still: `last` again, whole (keyframe_check_locked); no refinement is due yet (which, with
     * PNG, would be a partial lossless one from the frame it holds: the anchor of its lossless_seq) */
    CHECK(take_ticking_at(c, &slow, &p, 0));
    CHECK_MSG(p.base == 0 && p.seq == (uint32_t)t && (p.flags & RC_PACKET_KEYFRAME), "seq %u base %u flags %x",
              p.seq, p.base, p.flags);
    check_exact(&slow, ref, "slow, back");
    ack(&slow, p.seq);
    CHECK(!take(&fast, NULL)); /* the fast one has that frame already */
    /* in a moving scene the next frame after such a request is whole for everybody (one encode) */
    rc_session_set_visible(slow.s, 0);
    for (int k = 0; k < RC_DAMAGE_HISTORY + 2; k++, t++) {
        draw_frame(px, t);
        present_px(c, px, W, H);
        wait_latest(c, (uint32_t)t + 1);
        if (take(&fast, &p)) ack(&fast, p.seq);
    }
    rc_session_set_visible(slow.s, 1);
    CHECK(!take(&slow, NULL));
    usleep(300 * 1000); /* RC_KEYFRAME_MIN_US since the last forced one */
    draw_frame(px, t);
    present_px(c, px, W, H);
    t++;
    wait_latest(c, (uint32_t)t);
    CHECK(take(&slow, &p) && p.base == 0 && p.seq == (uint32_t)t);
    check_exact(&slow, ref, "slow, moving");
    CHECK(take(&fast, &p) && p.base == 0 && p.seq == (uint32_t)t);
    check_exact(&fast, ref, "fast, moving");
    rc_damage_map_free(&p.cover);
    viewer_close(&fast);
    viewer_close(&slow);
    free(px);
    free(ref);
    free_canvas(c);
}

/* ---- identical frames ---- */

static void test_identical(void) {
    rcanvas_canvas *c = new_canvas(RCANVAS_CODEC_JPEG);
    CHECK_EQ_INT(rcanvas_canvas_set_option(c, RCANVAS_OPT_UPDATE_MODE, RCANVAS_UPDATE_FASTEST), RCANVAS_OK);
    viewer v;
    viewer_open(&v, c, 0);
    uint8_t *px = malloc((size_t)W * H * 4);
    draw_frame(px, 3);
    CHECK_EQ_INT(rcanvas_wait(c, 1000), RCANVAS_WAKE_DRAW);
    CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK); /* seq 1 */
    wait_latest(c, 1);
    CHECK(take(&v, NULL));
    /* frame 1 is not acked yet: an identical frame counts as in flight until it is */
    CHECK_EQ_INT(rcanvas_wait(c, 1000), RCANVAS_WAKE_DRAW);
    CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK); /* seq 2, identical */
    wait_idle(c);
    CHECK_EQ_INT(rcanvas_wait(c, 50), 0);
    ack(&v, 1);
    /* then the app keeps drawing the same picture: never a packet, never a stall */
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(rcanvas_wait(c, 1000), RCANVAS_WAKE_DRAW);
        CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK);
        wait_idle(c);
        CHECK(!take(&v, NULL));
    }
    rc_canvas_debug d = dbg(c);
    CHECK_EQ_INT(d.latest_seq, 1);
    CHECK_EQ_INT(d.presented_seq, 12);
    CHECK_EQ_INT(d.skipped, 11);
    CHECK_EQ_INT(d.free_slots, d.slots - 1); /* only `last` holds a frame */
    /* a change after identical frames: against `last`, only what changed */
    draw_frame(px, 4);
    CHECK_EQ_INT(rcanvas_wait(c, 1000), RCANVAS_WAKE_DRAW);
    CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK);
    wait_latest(c, 13);
    pkt p = {0};
    CHECK(take(&v, &p) && p.seq == 13 && p.base == 1 && p.ntiles <= 4);
    rc_damage_map_free(&p.cover);
    ack(&v, 13);
    /* the viewer resizes the canvas and the app draws the same bitmap (rendercanvas' fixed-size bitmap, stretched
     * by the viewers): the frame goes out whole, so that every viewer draws it at the new aspect (before: skipped
     * as identical, and the page kept its old letterbox, examples.test "two canvases"); the next repeat is skipped */
    rcanvas_event rs = {.type = RCANVAS_EVENT_RESIZE, .width = W / 2.0, .height = H, .pixel_ratio = 2};
    rc_session_push_event(v.s, &rs);
    rcanvas_event drained;
    while (rcanvas_poll_event(c, &drained) == 1) {}
    CHECK_EQ_INT(rcanvas_wait(c, 1000), RCANVAS_WAKE_DRAW);
    CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK);
    wait_latest(c, 14);
    memset(&p, 0, sizeof p);
    CHECK_MSG(take(&v, &p) && p.seq == 14 && p.base == 0, "after a resize: seq %u base %u", p.seq, p.base);
    rc_damage_map_free(&p.cover);
    ack(&v, 14);
    CHECK_EQ_INT(rcanvas_wait(c, 1000), RCANVAS_WAKE_DRAW);
    CHECK_EQ_INT(present_px(c, px, W, H), RCANVAS_OK);
    wait_idle(c);
    CHECK(!take(&v, NULL));
    CHECK_EQ_INT(dbg(c).skipped, 12);
    viewer_close(&v);

#if RCANVAS_HAVE_H264
    /* video: whole frames (its encoder skips static areas itself), and nothing for an identical frame */
    rcanvas_canvas *cv = new_canvas(RCANVAS_CODEC_H264);
    rc_session_caps caps = {.codecs = (1u << RCANVAS_CODEC_H264) | (1u << RCANVAS_CODEC_JPEG), .protocol = 2};
    rc_session *s = NULL;
    CHECK_EQ_INT(rc_session_open(cv, &caps, &s), RCANVAS_OK);
    for (int t = 1; t <= 4; t++) {
        draw_frame(px, t < 3 ? t : 2); /* frames 3 and 4 repeat frame 2 */
        CHECK_EQ_INT(present_px(cv, px, W, H), RCANVAS_OK);
        wait_idle(cv);
        rc_packet *pk = NULL;
        int got = rc_session_next(s, rc_now_us(), &pk, NULL);
        CHECK_MSG(got == (t < 3), "video frame %d: packet %d", t, got);
        if (got) {
            CHECK(pk->codec == &rc_codec_h264 && pk->ntiles == 1 && pk->base_seq == 0 && pk->tiles[0].w == W &&
                  pk->tiles[0].h == H);
            CHECK_EQ_INT(rc_session_ack(s, pk->seq, 0, rc_now_us()), RCANVAS_OK);
            rc_packet_unref(pk);
        }
    }
    CHECK_EQ_INT(dbg(cv).skipped, 2);
    rc_session_close(s);
    free_canvas(cv);
#endif
    free(px);
    free_canvas(c);
}

/* ---- a GPU source's bitmap ---- */

static int g_released;
static void count_release(void *arg) {
    (void)arg;
    g_released++;
}

static void test_source_bitmap(void) {
    rcanvas_canvas *c = new_canvas(RCANVAS_CODEC_JPEG);
    viewer v;
    viewer_open(&v, c, 0);
    uint8_t *a = malloc((size_t)W * H * 4), *b = malloc((size_t)W * H * 4);
    draw_frame(a, 1);
    draw_frame(b, 2);
    uint32_t tx = rc_damage_tiles(W), ty = rc_damage_tiles(H);
    uint8_t *bits = calloc((size_t)tx * ty, 1);
    rc_image ia = {a, W, H, (size_t)W * 4, RCANVAS_FORMAT_RGBA8, NULL}, ib = {b, W, H, (size_t)W * 4, RCANVAS_FORMAT_RGBA8, NULL};
    pkt p = {0};
    g_released = 0;
    CHECK_EQ_INT(rc_canvas_present_external_damage(c, &ia, count_release, NULL, bits, tx, ty), RCANVAS_OK);
    wait_latest(c, 1);
    CHECK(take(&v, &p) && p.base == 0); /* the first frame: whole, whatever the bitmap says */
    ack(&v, 1);
    /* the same pixels, but the source says tile (5, 3) changed: that tile is sent (no CPU diff) */
    bits[3 * tx + 5] = 1;
    CHECK_EQ_INT(rc_canvas_present_external_damage(c, &ia, count_release, NULL, bits, tx, ty), RCANVAS_OK);
    wait_latest(c, 2);
    CHECK(take(&v, &p) && p.seq == 2 && p.base == 1 && p.ntiles == 1 && p.cover.bits[3 * tx + 5] &&
          rc_damage_map_count(&p.cover) == 1);
    ack(&v, 2);
    /* other pixels, and the source says nothing changed: nothing is sent */
    memset(bits, 0, (size_t)tx * ty);
    CHECK_EQ_INT(rc_canvas_present_external_damage(c, &ib, count_release, NULL, bits, tx, ty), RCANVAS_OK);
    wait_idle(c);
    CHECK(!take(&v, NULL));
    CHECK_EQ_INT(dbg(c).skipped, 1);
    /* the same pixels b with a bitmap of another grid: ignored, the CPU diff runs, against `last` (frame 2,
     * pixels a: the source called frame 3 unchanged, so the canvas still shows a) and marks the marker's tiles */
    CHECK_EQ_INT(rc_canvas_present_external_damage(c, &ib, count_release, NULL, bits, tx + 1, ty), RCANVAS_OK);
    wait_latest(c, 4);
    rc_damage_map want = {0};
    rc_damage_map_reset(&want, W, H);
    mark_tiles(&want, 1);
    mark_tiles(&want, 2);
    CHECK(take(&v, &p) && p.seq == 4 && p.base == 2);
    CHECK_MSG(same_tiles(&p.cover, &want), "%zu tiles, %zu expected", rc_damage_map_count(&p.cover),
              rc_damage_map_count(&want));
    ack(&v, 4);
    rc_damage_map_free(&want);
    rc_damage_map_free(&p.cover);
    viewer_close(&v);
    rc_canvas_release_external(c);
    CHECK_EQ_INT(g_released, 4);
    free_canvas(c);
    free(a);
    free(b);
    free(bits);
}

int main(void) {
    if (rc_pool_new(2, &g_pool)) TEST_MAIN_END();
    g_plot = tf_new(TF_PLOT, W, H);
    if (!g_plot) TEST_MAIN_END();
    test_diff();
    test_marker();
    test_two_viewers();
    test_identical();
    test_source_bitmap();
    free(g_plot);
    rc_pool_free(g_pool);
    TEST_MAIN_END();
}
