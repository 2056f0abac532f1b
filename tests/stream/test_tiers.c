/* SPDX-License-Identifier: MIT */
/*
 * test_tiers — viewers of one canvas on different codecs, and the keyframe rules of a stateful codec, driven
 * without a network (sessions, as the transport uses them) with the real H.264 encoder (openh264):
 *  - negotiation: a viewer that lists h264 goes to the H.264 tier of an AUTO canvas, a protocol-1 viewer to JPEG;
 *    both tiers encode every frame, lock-step;
 *  - a video packet depends on the previous one of its tier; the first one, and the first one any viewer gets,
 *    is a keyframe; a packet whose reference a viewer lacks is never given to it;
 *  - a viewer joining a still scene gets the last frame encoded again as a keyframe (no new present), which the
 *    viewers already watching take too, so they stay on one reference chain;
 *  - a viewer that skipped packets (its window was full) gets a keyframe next, and the other viewer is not held;
 *  - {"type":"keyframe"} from a client (rc_session_request_keyframe) makes the next packet a keyframe;
 *  - changing the canvas's codec moves the viewers, each starting with a keyframe.
 */
#include <string.h>
#include <unistd.h>

#include "tier_kit.h"

static rc_pool *g_pool;
static const rc_logger g_log = {0};
static void no_notify(void *u) { (void)u; }

#define W 320
#define H 240
static uint8_t g_px[W * H * 4];

static int present(rcanvas_canvas *c, int t) { return kit_present(c, g_px, t, W, H); }

static void ack(rc_session *s, uint32_t seq) { CHECK_EQ_INT(rc_session_ack(s, seq, 0, rc_now_us()), RCANVAS_OK); }

int main(void) {
    if (rc_pool_new(2, &g_pool)) TEST_MAIN_END();
    rc_canvas_env env = {.pool = g_pool, .log = &g_log, .max_frame_dim = 8192, .notify = no_notify};
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.codec = RCANVAS_CODEC_AUTO;
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    cc.refine_ms = 0;
    cc.max_in_flight = 2;
    rcanvas_canvas *c = NULL;
    CHECK_EQ_INT(rc_canvas_create(&env, &cc, &c), RCANVAS_OK);
    if (!c) TEST_MAIN_END();
    const unsigned H264 = (1u << RCANVAS_CODEC_H264) | (1u << RCANVAS_CODEC_JPEG);

    /* negotiation */
    rc_session *v = open_with(c, H264, 2);  /* a WebCodecs viewer: active */
    rc_session *j = open_with(c, 0, 0);     /* a protocol-1 viewer: JPEG */
    rc_session_state st;
    rc_session_get_state(v, &st);
    CHECK(st.encoder == &rc_codec_h264 && st.protocol == 2);
    rc_session_get_state(j, &st);
    CHECK(st.encoder == &rc_codec_jpeg && st.protocol == 1);

    /* a chain: keyframe first, then each packet depends on the one before */
    got g, gj, prev = {0};
    for (int t = 1; t <= 6; t++) {
        CHECK_EQ_INT(present(c, t), RCANVAS_OK);
        wait_latest(c, (uint32_t)t);
        CHECK_MSG(next(v, &g), "frame %d: no H.264 packet", t);
        CHECK(g.codec == &rc_codec_h264 && g.seq == (uint32_t)t);
        if (t == 1) CHECK_MSG((g.flags & RC_PACKET_KEYFRAME) && g.depends_on == 0, "the first is a keyframe");
        else CHECK_MSG(!(g.flags & RC_PACKET_KEYFRAME) && g.depends_on == prev.id, "frame %d: depends on %u, not %u",
                       t, g.depends_on, prev.id);
        prev = g;
        ack(v, g.seq);
        CHECK_MSG(next(j, &gj), "frame %d: no JPEG packet", t); /* both tiers encode every frame */
        CHECK(gj.codec == &rc_codec_jpeg && gj.seq == (uint32_t)t && (gj.flags & RC_PACKET_KEYFRAME));
        ack(j, gj.seq);
    }

    /* a viewer joins the still scene: the last frame is encoded again as a keyframe, for everyone on the tier */
    rc_session *late = open_with(c, H264, 2);
    CHECK_EQ_INT(next(late, &g), 0); /* the newest packet depends on one it lacks: not given */
    CHECK_MSG(next_ticking(c, late, &g, 2000), "the joiner never got a keyframe");
    CHECK_MSG((g.flags & RC_PACKET_KEYFRAME) && g.seq == 6, "joiner: seq %u flags %u", g.seq, g.flags);
    CHECK_EQ_INT(dbg(c).presented_seq, 6); /* no new present was needed */
    ack(late, g.seq);
    got gv;
    CHECK_MSG(next(v, &gv) && gv.id == g.id && (gv.flags & RC_PACKET_KEYFRAME), "the watching viewer takes it too");
    ack(v, gv.seq);
    CHECK_EQ_INT(present(c, 7), RCANVAS_OK);
    wait_latest(c, 7);
    CHECK(next(v, &gv) && gv.depends_on == g.id && !(gv.flags & RC_PACKET_KEYFRAME)); /* one chain for both */
    ack(v, gv.seq);
    CHECK(next(late, &g) && g.id == gv.id);
    ack(late, g.seq);
    CHECK(next(j, &gj) && gj.seq == 7);
    ack(j, gj.seq);

    /* `late` stalls: its window fills, it skips packets; `v` goes on; then `late` gets a keyframe first */
    uint32_t seq = 7;
    int late_given = 0;
    for (int t = 8; t <= 12; t++) {
        CHECK_EQ_INT(present(c, t), RCANVAS_OK);
        wait_latest(c, ++seq);
        CHECK_MSG(next(v, &gv) && gv.seq == seq, "v got frame %u while the other stalled", seq);
        ack(v, gv.seq);
        if (next(late, &g)) late_given++; /* not acked: at most max_in_flight */
        CHECK(next(j, &gj));
        ack(j, gj.seq);
    }
    CHECK_EQ_INT(late_given, 2);
    ack(late, 8); /* its two: 8 and 9 */
    ack(late, 9);
    usleep(300 * 1000); /* past the keyframe rate limit */
    CHECK_EQ_INT(present(c, 13), RCANVAS_OK);
    wait_latest(c, ++seq);
    CHECK(next(v, &gv) && gv.seq == seq); /* the keyframe it asked for came with this frame or the next */
    ack(v, gv.seq);
    int ok = 0;
    for (int t = 14; t <= 16 && !ok; t++) {
        if (next(late, &g)) {
            CHECK_MSG(g.flags & RC_PACKET_KEYFRAME, "after the stall: seq %u is not a keyframe", g.seq);
            ok = 1;
            ack(late, g.seq);
            break;
        }
        CHECK_EQ_INT(present(c, t), RCANVAS_OK);
        wait_latest(c, ++seq);
        if (next(v, &gv)) ack(v, gv.seq);
    }
    CHECK_MSG(ok, "the stalled viewer never got a keyframe");
    while (next(late, &g)) ack(late, g.seq);

    /* a client's decoder failed: the next packet it gets is a keyframe */
    while (next(v, &gv)) ack(v, gv.seq);
    rc_session_request_keyframe(v);
    usleep(300 * 1000);
    CHECK_EQ_INT(present(c, 20), RCANVAS_OK);
    wait_latest(c, ++seq);
    CHECK_MSG(next(v, &gv) && (gv.flags & RC_PACKET_KEYFRAME), "after a keyframe request: flags %u", gv.flags);
    ack(v, gv.seq);

    /* the canvas's codec changes to JPEG: every viewer moves, and gets JPEG */
    CHECK_EQ_INT(rcanvas_canvas_set_option(c, RCANVAS_OPT_CODEC, RCANVAS_CODEC_JPEG), RCANVAS_OK);
    rc_session_get_state(v, &st);
    CHECK(st.encoder == &rc_codec_jpeg);
    CHECK_EQ_INT(present(c, 21), RCANVAS_OK);
    wait_latest(c, ++seq);
    CHECK(next(v, &gv) && gv.codec == &rc_codec_jpeg && gv.seq == seq);

    rc_session_close(late);
    rc_session_close(j);
    rc_session_close(v);
    rc_canvas_close(c);
    rc_canvas_wait_sessions(c);
    rc_canvas_destroy(c);
    rc_pool_free(g_pool);
    TEST_MAIN_END();
}
