/* SPDX-License-Identifier: MIT */
/*
 * test_av1 — the av1 codec (src/codec/av1.c, libaom real-time) round-tripped through dav1d, on the generated moving
 * scene (tests/gen_frames.h; no corpus needed):
 *  - 640×360, 30 fps, 2 threads, 30 frames at 1500 kbit/s: every packet is one temporal unit of size-delimited
 *    OBUs (temporal delimiter first; a sequence header in key frames only, main profile, BT.601 limited range in its
 *    color_config) and decodes at 640×360; the first is a key frame, the others are not, except the one after
 *    request_keyframe(), which decodes alone on a fresh decoder; Y PSNR against the source's I420 ≥ PSNR_360P_MIN
 *    on every frame; the mean colour of a flat RGB (200, 40, 90) patch comes back within ±3 per channel through
 *    the BT.601 limited-range inverse (single pixels within PATCH_PIXEL_MAX);
 *  - bitrate: 1500, 400 and 4000 kbit/s on the same encoder move the bytes per frame down and up, without a key
 *    frame;
 *  - a key frame interval set mid-stream; a size and thread count change mid-stream (a key frame at the new size,
 *    which the same decoder follows);
 *  - odd and small sizes: 333×197 (24 frames), 1001×777, 7×5, 1×1 decode at exactly their size;
 *  - bad parameters give RCANVAS_EINVAL; extreme frame rates, thread counts and bitrates are accepted.
 * Built only with libaom and dav1d (CMake leaves it out otherwise).
 */
#include <dav1d/dav1d.h>
#include <math.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/yuv.h"
#include "codec_stream.h"
#include "gen_frames.h"
#include "test.h"

/* Lowest Y PSNR of any frame, 2 dB under what was measured (libaom 3.6.0 on x86-64 AVX2, the settings of av1.c,
 * 2 threads; dav1d 1.0.0). */
#define PSNR_360P_MIN 38.5 /* 640×360 at 1500 kbit/s, 30 fps: measured min 40.58 dB, mean 45.51 */
#define PSNR_ODD_MIN 37.0  /* 333×197 at 600 kbit/s: measured min 39.31 dB */
/* The flat patch's worst single pixel, any channel, after the BT.601 inverse: measured 4–5 levels at 1500 and 4000
 * kbit/s. libaom's real-time mode quantizes the static patch's chroma coarsely on some inter frames, whatever the
 * rate, speed (7–10), AQ or CDEF setting (4–8 levels measured); the patch's mean colour, which a wrong matrix or
 * range would move by 10–20 levels, stays within ±1.5. */
#define PATCH_PIXEL_MAX 8

/* ---- OBUs of a packet ---- */

enum { OBU_SEQ = 1, OBU_TD = 2, OBU_FRAME_HEADER = 3, OBU_TILE_GROUP = 4, OBU_METADATA = 5, OBU_FRAME = 6 };

typedef struct obus {
    int count, td, seq, frame, other, td_first, sized; /* sized: every OBU has obu_has_size_field */
    const uint8_t *seq_payload;
    size_t seq_len;
} obus;

/* Reads the size-delimited OBUs of a packet; 0, or -1 if they do not fill it exactly. */
static int read_obus(const uint8_t *p, size_t n, obus *o) {
    memset(o, 0, sizeof *o);
    o->sized = 1;
    size_t i = 0;
    while (i < n) {
        uint8_t h = p[i++];
        int type = (h >> 3) & 15, ext = (h >> 2) & 1, has_size = (h >> 1) & 1;
        if (h & 0x80) return -1; /* forbidden bit */
        if (ext) i++;
        if (!has_size) {
            o->sized = 0;
            return -1;
        }
        uint64_t len = 0;
        for (int k = 0; k < 8; k++) {
            if (i >= n) return -1;
            uint8_t b = p[i++];
            len |= (uint64_t)(b & 0x7f) << (7 * k);
            if (!(b & 0x80)) break;
        }
        if (len > n - i) return -1;
        if (o->count == 0) o->td_first = type == OBU_TD;
        o->count++;
        if (type == OBU_TD) o->td++;
        else if (type == OBU_SEQ) {
            o->seq++;
            o->seq_payload = p + i;
            o->seq_len = (size_t)len;
        } else if (type == OBU_FRAME || type == OBU_FRAME_HEADER) o->frame++;
        else if (type != OBU_TILE_GROUP) o->other++;
        i += (size_t)len;
    }
    return 0;
}

/* ---- decoding (dav1d, one frame per temporal unit) ---- */

static Dav1dContext *decoder_new(void) {
    Dav1dSettings s;
    dav1d_default_settings(&s);
    s.n_threads = 1;
    s.max_frame_delay = 1; /* low latency: the picture of a temporal unit comes out with it */
    Dav1dContext *d = NULL;
    return dav1d_open(&d, &s) == 0 ? d : NULL;
}

static void decoder_free(Dav1dContext *d) {
    if (d) dav1d_close(&d);
}

/* Decodes one temporal unit into *pic (unref it after); 0, or -1. */
static int decode(Dav1dContext *d, const rc_buf *pkt, Dav1dPicture *pic) {
    Dav1dData data = {0};
    uint8_t *buf = dav1d_data_create(&data, pkt->len);
    if (!buf) return -1;
    memcpy(buf, rc_buf_data(pkt), pkt->len);
    memset(pic, 0, sizeof *pic);
    int got = 0;
    for (int guard = 0; guard < 16 && (data.sz || !got); guard++) {
        int r = data.sz ? dav1d_send_data(d, &data) : DAV1D_ERR(EAGAIN);
        if (r < 0 && r != DAV1D_ERR(EAGAIN)) break;
        if (!got) {
            int g = dav1d_get_picture(d, pic);
            if (g == 0) got = 1;
            else if (g != DAV1D_ERR(EAGAIN)) break;
            else if (!data.sz) break; /* all sent, no picture */
        }
    }
    if (data.sz) dav1d_data_unref(&data);
    if (!got) return -1;
    return 0;
}

static double psnr_y(const Dav1dPicture *d, const rc_i420 *src) {
    return gen_psnr_plane(d->data[0], d->stride[0], src->y, src->stride_y, (int)src->width, (int)src->height);
}

static void patch_error(const Dav1dPicture *d, double *mean_err, int *pixel_err) {
    gen_patch_error(d->data[0], d->data[1], d->data[2], d->stride[0], d->stride[1], mean_err, pixel_err);
}

/* ---- the stream under test ---- */

typedef struct stream { /* codec_stream.h's, and the OBUs of its last packet */
    union {
        codec_stream cs;
        struct {
            CODEC_STREAM_FIELDS
        };
    };
    obus obu;
} stream;

static int stream_init(stream *s, uint32_t w, uint32_t h, int kbps, int threads) {
    memset(&s->obu, 0, sizeof s->obu);
    return codec_stream_init(&s->cs, &rc_codec_av1, RCANVAS_CODEC_AV1, w, h, kbps, threads);
}
static void stream_resize(stream *s, uint32_t w, uint32_t h) { codec_stream_resize(&s->cs, w, h); }

/* Draws frame t and encodes it into s->pkt (cleared first); checks the packet's OBU structure. */
static int stream_encode(stream *s, int t) {
    int r = codec_stream_encode(&s->cs, t);
    if (r) return r;
    int ok = read_obus(rc_buf_data(&s->pkt), s->pkt.len, &s->obu) == 0;
    CHECK_MSG(ok && s->obu.sized, "%ux%u frame %d: packet of %zu bytes is not a sequence of sized OBUs", s->w, s->h, t,
              s->pkt.len);
    CHECK_MSG(s->obu.td_first && s->obu.td == 1 && s->obu.frame == 1,
              "%ux%u frame %d: temporal unit of %d OBUs: temporal delimiter first %d, %d TD, %d frame", s->w, s->h, t,
              s->obu.count, s->obu.td_first, s->obu.td, s->obu.frame);
    CHECK_MSG(s->obu.seq == (s->info.keyframe ? 1 : 0), "%ux%u frame %d: keyframe %d with %d sequence headers", s->w,
              s->h, t, s->info.keyframe, s->obu.seq);
    return 0;
}

static void stream_free(stream *s) { codec_stream_free(&s->cs); }

/* The packet decodes on d at the frame's size, its frame type agrees with info.keyframe, and the frame's
 * part has Y PSNR ≥ min. Returns the PSNR (0 on failure); the picture stays in *out if out (unref it after). */
static double check_decode(stream *s, Dav1dContext *d, int t, double min, Dav1dPicture *out) {
    Dav1dPicture pic;
    if (decode(d, &s->pkt, &pic)) {
        CHECK_MSG(0, "%ux%u frame %d (%zu bytes) does not decode", s->w, s->h, t, s->pkt.len);
        return 0;
    }
    CHECK_MSG(pic.p.w == (int)s->w && pic.p.h == (int)s->h, "%ux%u frame %d decodes at %dx%d", s->w, s->h, t,
              pic.p.w, pic.p.h);
    CHECK_MSG((pic.frame_hdr->frame_type == DAV1D_FRAME_TYPE_KEY) == (s->info.keyframe != 0),
              "%ux%u frame %d: frame type %d, info.keyframe %d", s->w, s->h, t, pic.frame_hdr->frame_type,
              s->info.keyframe);
    CHECK_EQ_INT(pic.p.layout, DAV1D_PIXEL_LAYOUT_I420);
    CHECK_EQ_INT(pic.p.bpc, 8);
    double p = 0;
    if (pic.p.w >= (int)s->w && pic.p.h >= (int)s->h) {
        p = psnr_y(&pic, &s->ref);
        CHECK_MSG(p >= min, "%ux%u frame %d: Y PSNR %.2f dB < %.1f", s->w, s->h, t, p, min);
    }
    if (out) *out = pic;
    else dav1d_picture_unref(&pic);
    return p;
}

/* 640×360: key frames, sequence header, PSNR, colour, request_keyframe. */
static void test_360p(void) {
    stream s;
    if (stream_init(&s, 640, 360, 1500, 2)) return;
    Dav1dContext *d = decoder_new();
    CHECK(d != NULL);
    double psnr_min = 99, psnr_sum = 0, worst_mean = 0;
    int worst_pixel = 0, n = 0;
    size_t key_bytes = 0, inter_bytes = 0;
    for (int t = 0; t < 30 && d; t++) {
        if (t == 15) rc_codec_request_keyframe(s.c);
        if (stream_encode(&s, t)) break;
        int want_key = t == 0 || t == 15;
        CHECK_MSG(s.info.keyframe == want_key, "360p frame %d: keyframe %d", t, s.info.keyframe);
        if (want_key) key_bytes += s.pkt.len;
        else inter_bytes += s.pkt.len;
        if (t == 0) {
            Dav1dSequenceHeader sh;
            int r = s.obu.seq ? dav1d_parse_sequence_header(&sh, rc_buf_data(&s.pkt), s.pkt.len) : -1;
            CHECK_EQ_INT(r, 0);
            if (!r) {
                CHECK_EQ_INT(sh.profile, 0); /* main: 8-bit 4:2:0 */
                CHECK_EQ_INT(sh.max_width, 640);
                CHECK_EQ_INT(sh.max_height, 360);
                CHECK_EQ_INT(sh.color_description_present, 1);
                CHECK_EQ_INT(sh.pri, DAV1D_COLOR_PRI_BT601); /* 6: SMPTE 170M */
                CHECK_EQ_INT(sh.trc, DAV1D_TRC_BT601);
                CHECK_EQ_INT(sh.mtrx, DAV1D_MC_BT601);
                CHECK_EQ_INT(sh.color_range, 0); /* limited */
                CHECK_EQ_INT(sh.still_picture, 0);
                printf("sequence header: profile %d, level %d.%d, tier %d, %dx%d, colour %d/%d/%d, full range %d\n",
                       sh.profile, sh.operating_points[0].major_level, sh.operating_points[0].minor_level,
                       sh.operating_points[0].tier, sh.max_width, sh.max_height, sh.pri, sh.trc, sh.mtrx,
                       sh.color_range);
            }
        }
        Dav1dPicture pic;
        double p = check_decode(&s, d, t, PSNR_360P_MIN, &pic);
        if (p > 0) {
            psnr_min = fmin(psnr_min, p);
            psnr_sum += p;
            n++;
            double me;
            int pe;
            patch_error(&pic, &me, &pe);
            worst_mean = fmax(worst_mean, me);
            if (pe > worst_pixel) worst_pixel = pe;
            dav1d_picture_unref(&pic);
        }
        if (t == 15) { /* the requested key frame decodes on its own */
            Dav1dContext *fresh = decoder_new();
            CHECK(fresh != NULL);
            if (fresh) check_decode(&s, fresh, t, PSNR_360P_MIN, NULL);
            decoder_free(fresh);
        }
    }
    /* The mean colour tells a wrong matrix (BT.709: green +20) or range (full: red −10, green +11) apart. */
    CHECK_MSG(worst_mean <= 3.0, "flat patch (200, 40, 90): mean colour off by up to %.2f levels", worst_mean);
    CHECK_MSG(worst_pixel <= PATCH_PIXEL_MAX, "flat patch (200, 40, 90): a pixel off by %d levels", worst_pixel);
    printf("640x360, 1500 kbit/s, 30 fps, 2 threads: key frames %.0f bytes, inter %.0f bytes/frame (target %.0f); "
           "Y PSNR min %.2f mean %.2f dB (threshold %.1f); flat patch: mean within %.2f, pixels within %d levels\n",
           key_bytes / 2.0, inter_bytes / 28.0, 1500e3 / 8 / 30, psnr_min, psnr_sum / (n ? n : 1), PSNR_360P_MIN,
           worst_mean, worst_pixel);
    decoder_free(d);
    stream_free(&s);
}

/* The flat RGB (200, 40, 90) patch through I420 (BT.601 limited), AV1 and back through the inverse the sequence
 * header names: its mean colour within ±3 per channel, every frame, and every pixel of its inside within
 * PATCH_PIXEL_MAX, at a rate that is generous for the size. */
static void test_colour(void) {
    stream s;
    if (stream_init(&s, 640, 360, 4000, 2)) return;
    Dav1dContext *d = decoder_new();
    CHECK(d != NULL);
    double worst_mean = 0;
    int worst_pixel = 0;
    for (int t = 0; t < 15 && d; t++) {
        if (stream_encode(&s, t)) break;
        Dav1dPicture pic;
        if (check_decode(&s, d, t, 30, &pic) <= 0) break;
        double me;
        int pe;
        patch_error(&pic, &me, &pe);
        dav1d_picture_unref(&pic);
        worst_mean = fmax(worst_mean, me);
        if (pe > worst_pixel) worst_pixel = pe;
    }
    CHECK_MSG(worst_mean <= 3.0, "flat patch (200, 40, 90): mean colour off by up to %.2f levels", worst_mean);
    CHECK_MSG(worst_pixel <= PATCH_PIXEL_MAX, "flat patch (200, 40, 90): a pixel off by %d levels", worst_pixel);
    printf("640x360, 4000 kbit/s: flat patch (200, 40, 90) back within %.2f levels (mean), %d (any pixel)\n",
           worst_mean, worst_pixel);
    decoder_free(d);
    stream_free(&s);
}

/* Bytes per frame at 1500, then 400, then 4000 kbit/s on one encoder (and one decoder): no key frame on a change. */
static void test_bitrate(void) {
    stream s;
    if (stream_init(&s, 640, 360, 1500, 2)) return;
    Dav1dContext *d = decoder_new();
    CHECK(d != NULL);
    static const int rates[3] = {1500, 400, 4000};
    double mean[3] = {0};
    for (int k = 0; k < 3 && d; k++) {
        s.p.bitrate_kbps = rates[k];
        int n = 0;
        for (int i = 0; i < 30; i++) { /* the last 15 of 30 frames: the rate control's buffer has settled */
            int t = k * 30 + i;
            if (stream_encode(&s, t)) break;
            CHECK_MSG(s.info.keyframe == (t == 0), "%d kbit/s, frame %d: keyframe %d", rates[k], i, s.info.keyframe);
            check_decode(&s, d, t, 20, NULL);
            if (i >= 15) mean[k] += s.pkt.len, n++;
        }
        mean[k] /= n ? n : 1;
    }
    CHECK_MSG(mean[1] < 0.6 * mean[0] && mean[2] > 1.4 * mean[0],
              "bytes/frame at 1500, 400, 4000 kbit/s: %.0f, %.0f, %.0f", mean[0], mean[1], mean[2]);
    printf("640x360 bytes/frame at 1500, 400, 4000 kbit/s: %.0f, %.0f, %.0f (targets %.0f, %.0f, %.0f)\n",
           mean[0], mean[1], mean[2], 1500e3 / 240, 400e3 / 240, 4000e3 / 240);
    decoder_free(d);
    stream_free(&s);
}

/* A key frame interval set mid-stream, then a size (and thread count) change mid-stream. */
static void test_interval_and_resize(void) {
    stream s;
    if (stream_init(&s, 320, 240, 500, 1)) return;
    Dav1dContext *d = decoder_new();
    CHECK(d != NULL);
    int keys[31] = {0};
    for (int t = 0; t < 31 && d; t++) {
        if (t == 5) s.p.keyframe_interval = 10;
        if (stream_encode(&s, t)) break;
        keys[t] = s.info.keyframe;
        check_decode(&s, d, t, 25, NULL);
    }
    int nkeys = 0, first = -1;
    for (int t = 1; t < 31; t++)
        if (keys[t]) {
            nkeys++;
            if (first < 0) first = t;
        }
    /* a new interval starts with a key frame: at 5, 15, 25 */
    CHECK_MSG(nkeys == 3 && first == 5 && keys[15] && keys[25],
              "keyframe interval 10 from frame 5: %d key frames after frame 0, first at %d", nkeys, first);
    s.p.keyframe_interval = 0;
    stream_resize(&s, 400, 226);
    s.p.threads = 2;
    for (int t = 31; t < 36 && d; t++) {
        if (stream_encode(&s, t)) break;
        CHECK_MSG(s.info.keyframe == (t == 31), "after resize, frame %d: keyframe %d", t, s.info.keyframe);
        check_decode(&s, d, t, 25, NULL); /* the same decoder follows the new sequence header */
    }
    decoder_free(d);
    stream_free(&s);
}

/* Odd and small sizes are coded at their own size. */
static void test_odd_sizes(void) {
    stream s;
    if (stream_init(&s, 333, 197, 600, 2)) return;
    Dav1dContext *d = decoder_new();
    CHECK(d != NULL);
    double low = 99;
    for (int t = 0; t < 24 && d; t++) {
        if (stream_encode(&s, t)) break;
        CHECK_MSG(s.info.keyframe == (t == 0), "333x197 frame %d: keyframe %d", t, s.info.keyframe);
        low = fmin(low, check_decode(&s, d, t, PSNR_ODD_MIN, NULL));
    }
    printf("333x197, 600 kbit/s: Y PSNR min %.2f dB (threshold %.1f)\n", low, PSNR_ODD_MIN);
    decoder_free(d);

    static const uint32_t sizes[][2] = {{1001, 777}, {7, 5}, {1, 1}, {17, 16}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        stream_resize(&s, sizes[i][0], sizes[i][1]);
        d = decoder_new();
        if (!d || stream_encode(&s, 3)) break;
        CHECK(s.info.keyframe);
        double p = check_decode(&s, d, 3, 20, NULL);
        printf("%ux%u: Y PSNR %.2f dB\n", s.w, s.h, p);
        decoder_free(d);
        d = NULL;
    }
    decoder_free(d);
    stream_free(&s);
}

static void test_bad_params(void) {
    /* a high frame rate, more threads than libaom's 64 and the largest bitrate rcanvas allows are accepted */
    rc_codec *c = codec_stream_check_params(&rc_codec_av1, RCANVAS_CODEC_AV1,
                                            (rc_encode_params){.bitrate_kbps = 200000, .threads = 256, .fps = 1000});
    if (!c) return;
    uint8_t px[64 * 64 * 4] = {0};
    rc_image img = {px, 64, 64, 256, RCANVAS_FORMAT_RGBA8, NULL};
    rc_buf out = {0};
    rc_encode_info info;
    rc_encode_params p = {.codec = RCANVAS_CODEC_AV1, .bitrate_kbps = 500, .threads = 1, .fps = 1e-6};
    CHECK_EQ_INT(rc_codec_encode(c, &img, &p, &out, &info), RCANVAS_OK); /* a frame duration of days: clamped */
    CHECK(rc_codec_av1.webcodecs && !strncmp(rc_codec_av1.webcodecs, "av01.0.", 7));
    rc_buf_free(&out);
    rc_codec_free(c);
}

int main(void) {
    test_bad_params();
    test_360p();
    test_colour();
    test_bitrate();
    test_interval_and_resize();
    test_odd_sizes();
    TEST_MAIN_END();
}
