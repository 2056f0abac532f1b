/* SPDX-License-Identifier: MIT */
/*
 * av1.c — AV1 through libaom's real-time encoder (AOM_USAGE_REALTIME: one pass, no lookahead, CBR, the non-RD
 * speed path that WebRTC uses), one instance per stream (RC_CODEC_STATEFUL). In: an RGBA/BGRA/RGBX image, converted
 * to I420 (BT.601, limited range) by rc_i420_from_image() into a buffer kept between frames. Out: one temporal unit
 * per frame in the low-overhead OBU format (temporal delimiter; on a key frame the sequence header; the frame;
 * every OBU with its size field): what a WebCodecs VideoDecoder configured with "av01…" takes as one chunk.
 *
 * Why not SVT-AV1 (the first choice): Debian 12's SVT-AV1 1.4.1 cannot give the packet of a picture before
 * the next picture is sent. Its resource coordination stage forwards picture N only when picture N+1 (or the end of
 * the stream) arrives, in low delay too (EbResourceCoordinationProcess.c, prev_pcs_wrapper_ptr; "To accomodate
 * FFMPEG EOS, 1 frame delay is needed", EbEncHandle.c): a synchronous encode of one frame never gets its packet,
 * and a pipelined one would send every frame one frame late, and the last frame of a still scene never. 1.4.1 also
 * honours a forced key picture only in random access with CRF/CQP ("Force key frame is only supported with RA
 * CRF/CQP mode") and cannot change the bitrate of a running encoder. SVT-AV1 1.8 added key frame placement and
 * rate changes for low-delay CBR (its changelog), and a later version's EbEncHandle.c no longer holds a picture in
 * low delay (eos_delay = is_low_delay ? 0 : 1); a build with both (not tried here) would fit this interface.
 *
 * libaom gives one packet per frame at once (g_lag_in_frames = 0), key frames on request (AOM_EFLAG_FORCE_KF),
 * and bitrate, frame rate and key frame interval changes on the running encoder (aom_codec_enc_config_set and the
 * frame durations): only a new size or thread count makes a new encoder. It codes any size, odd ones included:
 * the decoder's picture is the frame, nothing to crop.
 */
#include "codec/codec.h"

#include <aom/aom_encoder.h>
#include <aom/aomcx.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/yuv.h"

/* Speed (AOME_SET_CPUUSED) of the real-time mode, 5 (slowest) … 10 (fastest). Measured with bench-video (8 corpus
 * sequences panned and zoomed + the generated scene, 30 frames each, 1080p, 30 fps, 2 threads, 2–16 Mbit/s; bytes
 * at equal Y PSNR against JPEG): speeds 8, 9 and 10 compress alike (within 0.01 of the ratio to JPEG at every
 * rate) and 10 costs the least CPU (8: up to 1.3× on heatmap and lines). */
#ifndef RC_AV1_SPEED
#define RC_AV1_SPEED 10
#endif
/* Content tuning. AOM_CONTENT_SCREEN (palette, screen-content rate control and mode search), measured as above
 * against AOM_CONTENT_DEFAULT: fewer bytes at equal PSNR on lines (−43 % at 4 Mbit/s), scatter (−43 %), text
 * (−41 %) and the generated scene, the same on render and surface, more on the 1080p heat map (+19 % at 4, +72 %
 * at 8 Mbit/s); over all sequences 0.08 / 0.11 / 0.16 / 0.22 of JPEG's bytes at 2 / 4 / 8 / 16 Mbit/s instead of
 * 0.11 / 0.14 / 0.19 / 0.24. CPU time −22 % to +12 % per sequence and rate, about the same overall. */
#ifndef RC_AV1_CONTENT
#define RC_AV1_CONTENT AOM_CONTENT_SCREEN
#endif

#define AV1_MAX_THREADS 64 /* libaom's MAX_NUM_THREADS */
#define AV1_TIMEBASE 90000 /* pts and durations in 1/90000 s: libaom takes the frame rate from the durations */

typedef struct av1_codec {
    rc_codec base;
    aom_codec_ctx_t ctx;
    int live;                   /* ctx is initialized */
    aom_codec_enc_cfg_t cfg;    /* the running encoder's configuration */
    uint32_t src_w, src_h;      /* the frame size the encoder was made for */
    int threads;                /* applied: 1–64 */
    int kbps, keyframe_interval;
    int want_key;               /* request_keyframe() was called */
    int64_t pts;                /* in 1/AV1_TIMEBASE s */
    rc_i420 yuv;                /* the frame in I420 */
    aom_image_t img;            /* wraps yuv */
} av1_codec;

static int av1_fail(av1_codec *e, const char *what) {
    const char *detail = e->live ? aom_codec_error_detail(&e->ctx) : NULL;
    snprintf(e->base.err, sizeof e->base.err, "libaom %s: %s%s%s", what,
             e->live ? aom_codec_error(&e->ctx) : "failed", detail ? ": " : "", detail ? detail : "");
    return RCANVAS_ECODEC;
}

static void encoder_free(av1_codec *e) {
    if (!e->live) return;
    aom_codec_destroy(&e->ctx);
    e->live = 0;
}

static void av1_destroy(rc_codec *c) {
    av1_codec *e = (av1_codec *)c;
    encoder_free(e);
    rc_i420_free(&e->yuv);
    free(e);
}

static int av1_create(const rc_codec_type *type, rc_codec **out) {
    av1_codec *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = type;
    *out = &e->base;
    return RCANVAS_OK;
}

static int clamp_threads(int t) { return t < 1 ? 1 : t > AV1_MAX_THREADS ? AV1_MAX_THREADS : t; }

/* Tiles, as log2 of columns and rows: libaom's real-time path runs tiles (and rows within them, row-mt) in
 * parallel; one tile per thread, columns first. libaom lowers them where the frame is too small for as many. */
static void tiles_for(int threads, int *log2_cols, int *log2_rows) {
    int n = 0;
    while ((2 << n) <= threads && n < 6) n++; /* n = floor(log2(threads)) */
    *log2_cols = (n + 1) / 2;
    *log2_rows = n / 2;
}

/* Rate control, key frame interval: the parts of cfg that apply to a running encoder too. */
static void set_rate(aom_codec_enc_cfg_t *q, const rc_encode_params *p) {
    q->rc_target_bitrate = (unsigned)p->bitrate_kbps; /* kbit/s */
    /* keyframe_interval 0: key frames only when asked for (a viewer joins); N: one every N frames as well. libaom
     * places automatic key frames only when kf_min_dist != kf_max_dist (auto_key), at most kf_max_dist apart: min 0,
     * max N. Disabled, the distance stays at libaom's default 9999 (0 there crashes libaom 3.6 on the 2nd frame). */
    q->kf_mode = p->keyframe_interval > 0 ? AOM_KF_AUTO : AOM_KF_DISABLED;
    q->kf_min_dist = 0;
    q->kf_max_dist = p->keyframe_interval > 0 ? (unsigned)p->keyframe_interval : 9999;
}

#define CTRL(id, v)                                                                                                    \
    do {                                                                                                               \
        if (aom_codec_control(&e->ctx, id, v) != AOM_CODEC_OK) {                                                       \
            av1_fail(e, "aom_codec_control(" #id ")");                                                                 \
            encoder_free(e);                                                                                           \
            return RCANVAS_ECODEC;                                                                                     \
        }                                                                                                              \
    } while (0)

static int encoder_new(av1_codec *e, const rc_encode_params *p) {
    aom_codec_enc_cfg_t *q = &e->cfg;
    if (aom_codec_enc_config_default(aom_codec_av1_cx(), q, AOM_USAGE_REALTIME) != AOM_CODEC_OK)
        return av1_fail(e, "aom_codec_enc_config_default");
    int threads = clamp_threads(p->threads);
    q->g_usage = AOM_USAGE_REALTIME;
    q->g_w = e->src_w;
    q->g_h = e->src_h;
    q->g_threads = (unsigned)threads;
    q->g_profile = 0; /* main: 8-bit 4:2:0 */
    q->g_bit_depth = AOM_BITS_8;
    q->g_input_bit_depth = 8;
    q->g_timebase.num = 1;
    q->g_timebase.den = AV1_TIMEBASE;
    q->g_pass = AOM_RC_ONE_PASS;
    q->g_lag_in_frames = 0; /* no frame waits for later ones: one packet per encode call */
    q->g_error_resilient = 0;
    q->rc_end_usage = AOM_CBR;
    q->rc_dropframe_thresh = 0; /* flow control upstream chooses the frames: every call must give a packet */
    q->rc_resize_mode = 0;
    q->rc_superres_mode = AOM_SUPERRES_NONE;
    /* The real-time defaults of WebRTC's libaom wrapper: a 1 s buffer, starting and aiming at 0.6 s. */
    q->rc_buf_sz = 1000;
    q->rc_buf_initial_sz = 600;
    q->rc_buf_optimal_sz = 600;
    q->rc_undershoot_pct = 50;
    q->rc_overshoot_pct = 50;
    set_rate(q, p);

    aom_codec_err_t ir = aom_codec_enc_init(&e->ctx, aom_codec_av1_cx(), q, 0);
    if (ir != AOM_CODEC_OK) {
        /* Only the code: a failed init has freed the encoder that ctx.err_detail may point into. */
        snprintf(e->base.err, sizeof e->base.err, "libaom aom_codec_enc_init (%ux%u, %d threads): %s", q->g_w, q->g_h,
                 threads, aom_codec_err_to_string(ir));
        return RCANVAS_ECODEC;
    }
    e->live = 1;
    int log2_cols, log2_rows;
    tiles_for(threads, &log2_cols, &log2_rows);
    CTRL(AOME_SET_CPUUSED, RC_AV1_SPEED);
    CTRL(AV1E_SET_TUNE_CONTENT, RC_AV1_CONTENT);
    CTRL(AV1E_SET_ROW_MT, 1u);
    CTRL(AV1E_SET_TILE_COLUMNS, (unsigned)log2_cols);
    CTRL(AV1E_SET_TILE_ROWS, (unsigned)log2_rows);
    CTRL(AV1E_SET_AQ_MODE, 3u);    /* cyclic refresh: the real-time mode's AQ */
    CTRL(AV1E_SET_DELTAQ_MODE, 0u);
    CTRL(AV1E_SET_ENABLE_CDEF, 1u);
    CTRL(AV1E_SET_ENABLE_TPL_MODEL, 0u);
    /* A key frame's target: 3 frame budgets (WebRTC's value). libaom overshoots it (3–8× the budget at 1080p and
     * 8 Mbit/s on the stills), less than without it. */
    CTRL(AOME_SET_MAX_INTRA_BITRATE_PCT, 300u);
    /* Colour: what rc_i420_from_image() produced — BT.601 (SMPTE 170M) matrix, primaries and transfer, limited
     * range — in the sequence header's color_config, so the browser converts back with the same matrix. */
    CTRL(AV1E_SET_COLOR_PRIMARIES, AOM_CICP_CP_BT_601);
    CTRL(AV1E_SET_TRANSFER_CHARACTERISTICS, AOM_CICP_TC_BT_601);
    CTRL(AV1E_SET_MATRIX_COEFFICIENTS, AOM_CICP_MC_BT_601);
    CTRL(AV1E_SET_COLOR_RANGE, AOM_CR_STUDIO_RANGE);

    e->threads = threads;
    e->kbps = p->bitrate_kbps;
    e->keyframe_interval = p->keyframe_interval;
    e->pts = 0;
    e->want_key = 0; /* a new encoder starts with a key frame */
    return RCANVAS_OK;
}

/* Bitrate and key frame interval changes, on the running encoder (the frame rate follows the durations). */
static int apply_params(av1_codec *e, const rc_encode_params *p) {
    if (p->bitrate_kbps == e->kbps && p->keyframe_interval == e->keyframe_interval) return RCANVAS_OK;
    set_rate(&e->cfg, p);
    if (aom_codec_enc_config_set(&e->ctx, &e->cfg) != AOM_CODEC_OK) return av1_fail(e, "aom_codec_enc_config_set");
    /* libaom counts down to the next automatic key frame from the last one, with the distance it had then (9999
     * when there was none): a new interval starts with a key frame here. */
    if (p->keyframe_interval != e->keyframe_interval && p->keyframe_interval > 0) e->want_key = 1;
    e->kbps = p->bitrate_kbps;
    e->keyframe_interval = p->keyframe_interval;
    return RCANVAS_OK;
}

static int av1_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out, rc_encode_info *info) {
    av1_codec *e = (av1_codec *)c;
    if (p->bitrate_kbps < 1 || p->keyframe_interval < 0 || p->threads < 1 || !(p->fps > 0) || !isfinite(p->fps))
        return RCANVAS_EINVAL;
    /* AV1 codes up to 65536×65536 (libaom checks its own limits at init); this keeps the arithmetic safe. */
    if (img->width > 65536 || img->height > 65536) return RCANVAS_EINVAL;

    /* A new size (or thread count) needs a new encoder; its first packet is a key frame. */
    if (e->live && (img->width != e->src_w || img->height != e->src_h || clamp_threads(p->threads) != e->threads))
        encoder_free(e);
    int r;
    if (!e->live) {
        e->src_w = img->width;
        e->src_h = img->height;
        if ((r = encoder_new(e, p))) return r;
    } else if ((r = apply_params(e, p))) {
        return r;
    }

    if ((r = rc_i420_from_image(&e->yuv, img))) return r;
    /* aom_img_wrap rounds the luma stride up to even: point the planes at rc_i420's own layout instead. */
    aom_img_wrap(&e->img, AOM_IMG_FMT_I420, img->width, img->height, 1, e->yuv.mem);
    e->img.planes[AOM_PLANE_Y] = e->yuv.y;
    e->img.planes[AOM_PLANE_U] = e->yuv.u;
    e->img.planes[AOM_PLANE_V] = e->yuv.v;
    e->img.stride[AOM_PLANE_Y] = e->yuv.stride_y;
    e->img.stride[AOM_PLANE_U] = e->img.stride[AOM_PLANE_V] = e->yuv.stride_uv;

    /* The duration tells libaom the frame rate (rate control budgets bitrate / frame rate per frame). */
    double d = AV1_TIMEBASE / p->fps;
    unsigned long duration = d < 1.0 ? 1ul : d > 1e9 ? 1000000000ul : (unsigned long)llround(d);
    aom_enc_frame_flags_t flags = e->want_key ? AOM_EFLAG_FORCE_KF : 0;
    if (aom_codec_encode(&e->ctx, &e->img, e->pts, duration, flags) != AOM_CODEC_OK) {
        av1_fail(e, "aom_codec_encode");
        encoder_free(e); /* its state is unknown: start over (with a key frame) */
        return RCANVAS_ECODEC;
    }
    e->pts += (int64_t)duration;
    e->want_key = 0;

    int frames = 0, key = 0;
    const aom_codec_cx_pkt_t *pkt;
    aom_codec_iter_t it = NULL;
    size_t start = out->len;
    while ((pkt = aom_codec_get_cx_data(&e->ctx, &it))) {
        if (pkt->kind != AOM_CODEC_CX_FRAME_PKT) continue;
        frames++;
        key |= (pkt->data.frame.flags & AOM_FRAME_IS_KEY) != 0;
        if ((r = rc_buf_reserve(out, out->len + pkt->data.frame.sz))) {
            out->len = start;
            encoder_free(e); /* the lost packet is a reference: the next one must be a key frame */
            return r;
        }
        memcpy(rc_buf_data(out) + out->len, pkt->data.frame.buf, pkt->data.frame.sz);
        out->len += pkt->data.frame.sz;
    }
    if (frames != 1) {
        /* Frame dropping is off and there is no lookahead, so this is not expected; a packet-less frame would stall
         * the stream, two would put it out of step. */
        out->len = start;
        snprintf(e->base.err, sizeof e->base.err, "libaom aom_codec_encode gave %d frame packets for one frame", frames);
        encoder_free(e);
        return RCANVAS_ECODEC;
    }
    info->keyframe = key;
    return RCANVAS_OK;
}

static void av1_request_keyframe(rc_codec *c) { ((av1_codec *)c)->want_key = 1; }

/* The codec string is the client's probe (docs/protocol.md): main profile (0), level 4.0 (seq_level_idx 8: up to
 * 2048×1088, 1080p at 30 fps), main tier, 8 bits. libaom writes the stream's own level in the sequence header (2.1
 * for 640×360 at 30 fps), which the decoder reads. Chromium 156's VideoDecoder.isConfigSupported accepts every level
 * tried (seq_level_idx 4, 5, 8, 9, 12, 13 and 31), and decodes this codec's stream configured with this string
 * (rcanvas-demo --codec av1, 1273×717, no decode errors). */
const rc_codec_type rc_codec_av1 = {
    .name = "av1", .wire_id = RCANVAS_CODEC_AV1, .webcodecs = "av01.0.08M.08", .flags = RC_CODEC_STATEFUL,
    .create = av1_create, .encode = av1_encode, .request_keyframe = av1_request_keyframe, .destroy = av1_destroy};
