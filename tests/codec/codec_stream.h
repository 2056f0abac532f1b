/* SPDX-License-Identifier: MIT */
/*
 * codec_stream.h — the stream under test of the video codecs' tests (test_h264.c, test_av1.c): an encoder of the
 * codec table, generated frames (gen_frames.h) drawn into an RGBA bitmap, the I420 picture the encoder saw (the
 * reference a decoded picture's PSNR is measured against) and the packet of the last encode. A test embeds it with
 * the syntax of its own bitstream beside it:
 *     typedef struct stream { union { codec_stream cs; struct { CODEC_STREAM_FIELDS }; }; nal_seen nals; } stream;
 * so that s->pkt, s->w, … read as before and &s->cs goes to the functions below (one member list, so both views
 * are the same memory).
 */
#ifndef RC_TEST_CODEC_STREAM_H
#define RC_TEST_CODEC_STREAM_H

#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/yuv.h"
#include "gen_frames.h"
#include "test.h"

#define CODEC_STREAM_FIELDS                                                                                    \
    rc_codec *c;                                                                                               \
    rc_encode_params p;                                                                                        \
    uint8_t *rgba;                                                                                             \
    uint32_t w, h;                                                                                             \
    rc_i420 ref; /* the source frame in I420, as the encoder saw it */                                         \
    rc_buf pkt;                                                                                                \
    rc_encode_info info;

typedef struct codec_stream {
    CODEC_STREAM_FIELDS
} codec_stream;

/* An encoder of `type` for `codec` at w × h, kbps, threads, 30 fps, no periodic keyframes. 0, or -1 (checked). */
static inline int codec_stream_init(codec_stream *s, const rc_codec_type *type, rcanvas_codec codec, uint32_t w,
                                    uint32_t h, int kbps, int threads) {
    memset(s, 0, sizeof *s);
    s->p = (rc_encode_params){.codec = codec, .bitrate_kbps = kbps, .keyframe_interval = 0, .threads = threads,
                              .fps = 30};
    s->w = w, s->h = h;
    s->rgba = malloc((size_t)w * h * 4);
    int r = rc_codec_new(type, &s->c);
    CHECK_EQ_INT(r, RCANVAS_OK);
    return s->rgba && !r ? 0 : -1;
}

/* The frames from now on are w × h. */
static inline void codec_stream_resize(codec_stream *s, uint32_t w, uint32_t h) {
    free(s->rgba);
    s->w = w, s->h = h;
    s->rgba = malloc((size_t)w * h * 4);
}

/* Draws frame t and encodes it into s->pkt (cleared first); the encode's result (checked). */
static inline int codec_stream_encode(codec_stream *s, int t) {
    gen_frame(s->rgba, s->w, s->h, (size_t)s->w * 4, t, 1.0);
    rc_image img = {s->rgba, s->w, s->h, (size_t)s->w * 4, RCANVAS_FORMAT_RGBA8, NULL};
    rc_i420_from_image(&s->ref, &img);
    rc_buf_clear(&s->pkt);
    int r = rc_codec_encode(s->c, &img, &s->p, &s->pkt, &s->info);
    CHECK_MSG(r == RCANVAS_OK, "encode %ux%u frame %d: %s (%s)", s->w, s->h, t, rcanvas_strerror(r),
              rc_codec_error(s->c));
    return r;
}

static inline void codec_stream_free(codec_stream *s) {
    rc_codec_free(s->c);
    free(s->rgba);
    rc_i420_free(&s->ref);
    rc_buf_free(&s->pkt);
}

/* The video codecs' contract on bad parameters: a 64 × 64 frame with no bitrate, no threads, no frame rate or a
 * negative keyframe interval is RCANVAS_EINVAL and writes nothing; then `big` (settings past the library's own
 * ranges that must be accepted) codes a keyframe. The codec's table entries: its name, rc_codec_for its wire id,
 * STATEFUL only. Returns the encoder, for the caller's own checks after those (it frees it), or NULL. */
static inline rc_codec *codec_stream_check_params(const rc_codec_type *type, rcanvas_codec codec,
                                                  rc_encode_params big) {
    rc_codec *c = NULL;
    CHECK_EQ_INT(rc_codec_new(type, &c), RCANVAS_OK);
    if (!c) return NULL;
    uint8_t px[64 * 64 * 4] = {0};
    rc_image img = {px, 64, 64, 256, RCANVAS_FORMAT_RGBA8, NULL};
    rc_buf out = {0};
    rc_encode_params ok = {.codec = codec, .bitrate_kbps = 500, .threads = 1, .fps = 30};
    rc_encode_params p = ok;
    p.bitrate_kbps = 0;
    CHECK_EQ_INT(rc_codec_encode(c, &img, &p, &out, NULL), RCANVAS_EINVAL);
    p = ok, p.threads = 0;
    CHECK_EQ_INT(rc_codec_encode(c, &img, &p, &out, NULL), RCANVAS_EINVAL);
    p = ok, p.fps = 0;
    CHECK_EQ_INT(rc_codec_encode(c, &img, &p, &out, NULL), RCANVAS_EINVAL);
    p = ok, p.keyframe_interval = -1;
    CHECK_EQ_INT(rc_codec_encode(c, &img, &p, &out, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(out.len, 0);
    big.codec = codec;
    rc_encode_info info = {0};
    CHECK_EQ_INT(rc_codec_encode(c, &img, &big, &out, &info), RCANVAS_OK);
    CHECK(out.len > 0 && info.keyframe);
    CHECK(rc_codec_by_name(type->name) == type);
    CHECK(rc_codec_for(codec) == type);
    CHECK((type->flags & (RC_CODEC_STATEFUL | RC_CODEC_INTRA | RC_CODEC_STRIPES)) == RC_CODEC_STATEFUL);
    rc_buf_free(&out);
    return c;
}

#endif
