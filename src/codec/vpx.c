/* SPDX-License-Identifier: MIT */
/*
 * vpx.c — VP8 and VP9 through libvpx, real-time: one encoder per stream (RC_CODEC_STATEFUL), no lookahead (each
 * frame's packet comes out of the call that took the frame), CBR at the canvas's bitrate, no frame dropping (flow
 * control upstream already decides which frames are encoded). Frames go to I420 through rc_i420_from_image (BT.601,
 * limited range: VP9 signals exactly that in its header; VP8 has no colour signalling and is BT.601 by definition)
 * and libvpx reads the planes in place through a vpx_image_t, so nothing is allocated per frame after the first.
 * The encoder is created on the first frame and again on a size or frame-rate change (a keyframe); bitrate,
 * keyframe interval and (VP9) threads change through vpx_codec_enc_config_set on the running encoder.
 * The speed settings below were measured at 1920×1080, 4000 kbit/s, 60 fps on panned corpus frames (VP9 on 2
 * threads, VP8 on 1), CPU time per frame (the machine was shared and busy).
 */
#include "codec/codec.h"
#include "codec/yuv.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <vpx/vp8cx.h>
#include <vpx/vpx_encoder.h>

/* VP8E_SET_CPUUSED for VP8 in real-time mode: negative = that fixed speed (positive would let libvpx pick the speed
 * from measured encode times: not reproducible). On 1080p panned plots/text/heatmaps, one thread, -6 → -16 saves
 * at most 1.7 ms of ~9 ms per frame and loses 1.2–2.7 dB Y PSNR at the same bitrate: -6 (WebRTC's desktop value). */
#define VP8_CPU_USED (-6)
/* VP9 real-time speed, 1080p, 2 threads, 4000 kbit/s: on panned frames (60 fps) 9 takes 17–39 % less CPU than 8 for
 * -1.0…+3.1 dB; on panned and zoomed frames (bench-video, 30 fps) 9 takes 19–38 % less CPU (11–20 against 14–29 ms
 * per frame) but loses 0.7–3.0 dB (lines -3.0, text -2.3): zooming a plot is the common interaction, so 8.
 * 7 costs another 18–38 % for -3.4…+0.3 dB. */
#define VP9_CPU_USED 8
/* Cyclic-refresh AQ: on panned frames +1.2…+1.4 dB at the same bitrate (heatmap ±0), on zoomed ones -0.1…-0.3 dB,
 * at no extra CPU; it also brings still regions up to quality over a few frames. */
#define VP9_AQ_MODE 3
/* VP9's content tuning: VP9E_CONTENT_SCREEN where the stream says the frames are screen content
 * (rc_encode_params.screen: text, thin lines), else DEFAULT. Measured on the corpus' stills panned and zoomed
 * (bench-video), screen tuning cost 15–30 % CPU, lost 0.8–2.1 dB on panned text and 1.2 dB on zoomed lines, and
 * gained at most 1.2 dB elsewhere; on moving content made for it (`bench-video --play`, rcanvas-testframes --motion,
 * 1080p, 30 fps, 2 threads) it wins where the stream asks for it: a terminal scrolling 36 px a frame 28.9 against
 * 22.9 dB in 19.3 against 35.7 kB a frame at 4000 kbit/s, 37.6 against 23.6 dB at 8000; a pan of a dense plot
 * 26.4 against 25.6 dB in 18.6 against 24.4 kB at 4000, +1.2 dB at 8000; for 10–25 % more CPU. VP8's
 * VP8E_SET_SCREEN_CONTENT_MODE gained nothing on either (24.6 and 26.9 dB in 4–23 % more bytes): not used. */

typedef struct vpx_enc {
    rc_codec base;
    int vp9;
    int open;                 /* ctx holds a live encoder */
    int screen;               /* its content tuning (rc_encode_params.screen), as last set */
    vpx_codec_ctx_t ctx;
    vpx_codec_enc_cfg_t cfg;  /* the configuration the encoder runs with */
    double fps;               /* frame rate ctx's timebase was made from */
    vpx_codec_pts_t pts;      /* in frames (timebase = 1/fps) */
    atomic_int force_kf;      /* set by request_keyframe, taken by the next encode */
    rc_i420 yuv;              /* the frame in I420, reused */
    vpx_image_t img;          /* describes yuv's planes to libvpx */
} vpx_enc;

static void vpx_close(vpx_enc *e) {
    if (e->open) vpx_codec_destroy(&e->ctx);
    e->open = 0;
}

static void vpx_destroy(rc_codec *c) {
    vpx_enc *e = (vpx_enc *)c;
    vpx_close(e);
    rc_i420_free(&e->yuv);
    free(e);
}

static int vpx_create(const rc_codec_type *type, rc_codec **out) {
    vpx_enc *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = type;
    e->vp9 = type == &rc_codec_vp9;
    atomic_init(&e->force_kf, 0);
    *out = &e->base;
    return RCANVAS_OK;
}

static void vpx_request_keyframe(rc_codec *c) { atomic_store(&((vpx_enc *)c)->force_kf, 1); }

/* Message of a failed call on a live encoder: libvpx's error and its detail. */
static int vpx_fail(vpx_enc *e, const char *what) {
    const char *detail = vpx_codec_error_detail(&e->ctx);
    snprintf(e->base.err, sizeof e->base.err, "%s: %s%s%s", what, vpx_codec_error(&e->ctx), detail ? ": " : "",
             detail ? detail : "");
    return RCANVAS_ECODEC;
}

/* libvpx takes at most 64 threads. */
static unsigned vpx_threads(int threads) { return threads > 64 ? 64u : (unsigned)threads; }

/* The parts of cfg that follow the params (also on a running encoder). */
static void cfg_from_params(vpx_codec_enc_cfg_t *cfg, const rc_encode_params *p) {
    cfg->rc_target_bitrate = (unsigned)p->bitrate_kbps;
    /* VP8's threads wait for each other's rows by spinning and yielding: on a 2-core machine busy with other work,
     * 2 threads took 60–100 ms per 1080p frame where 1 took 11–15 ms (quiet: 7 against 8). VP9 waits on condition
     * variables and has no such cliff. */
    cfg->g_threads = vpx_threads(p->threads);
    if (p->keyframe_interval > 0) {
        cfg->kf_mode = VPX_KF_AUTO;
        cfg->kf_min_dist = 0;
        cfg->kf_max_dist = (unsigned)p->keyframe_interval;
    } else {
        cfg->kf_mode = VPX_KF_DISABLED; /* keyframes only on request (a viewer joins or missed a packet) */
    }
}

/* VP9 tiles: log2 of the column count, one column per thread (libvpx lowers it to what the width allows). Row
 * multithreading splits work within tiles too, so this mostly sets how the loop filter and packing spread. */
static int vp9_tile_columns_log2(int threads) {
    int l = 0;
    while (l < 6 && (2 << l) <= threads) l++;
    return l;
}

#define CTRL(id, v)                                                                                            \
    do {                                                                                                       \
        if (vpx_codec_control(&e->ctx, id, v) != VPX_CODEC_OK) {                                               \
            int r_ = vpx_fail(e, #id);                                                                         \
            vpx_close(e);                                                                                      \
            return r_;                                                                                         \
        }                                                                                                      \
    } while (0)

static int vpx_open(vpx_enc *e, uint32_t w, uint32_t h, const rc_encode_params *p) {
    vpx_close(e);
    vpx_codec_iface_t *iface = e->vp9 ? vpx_codec_vp9_cx() : vpx_codec_vp8_cx();
    vpx_codec_enc_cfg_t *cfg = &e->cfg;
    vpx_codec_err_t r = vpx_codec_enc_config_default(iface, cfg, 0);
    if (r != VPX_CODEC_OK) {
        snprintf(e->base.err, sizeof e->base.err, "vpx_codec_enc_config_default: %s", vpx_codec_err_to_string(r));
        return RCANVAS_ECODEC;
    }
    cfg->g_w = w;
    cfg->g_h = h;
    /* One tick per frame at the expected rate: libvpx's rate control gives each frame bitrate/fps. libvpx reads the
     * timebase only when the encoder is made, so a new fps makes a new encoder. */
    cfg->g_timebase.num = 1000;
    cfg->g_timebase.den = (int)lround(p->fps * 1000.0);
    cfg->g_pass = VPX_RC_ONE_PASS;
    cfg->g_lag_in_frames = 0;
    /* Off: the transport is reliable (TCP) and a viewer that skipped a packet gets nothing until the next keyframe
     * (packets' depends_on), so a decoder never sees a gap, which is all error resilience is for; in VP9 it costs
     * 0.4–1.1 dB at the same bitrate (no probability adaptation between frames). */
    cfg->g_error_resilient = 0;
    cfg->rc_end_usage = VPX_CBR;
    cfg->rc_dropframe_thresh = 0;
    cfg->rc_resize_allowed = 0;
    /* WebRTC's real-time values: a rate buffer of about a second (libvpx's default is 6 s, which lets the rate
     * wander far longer than a live view tolerates) and a quantizer range that keeps the worst frame readable. */
    cfg->rc_buf_initial_sz = 500;
    cfg->rc_buf_optimal_sz = 600;
    cfg->rc_buf_sz = 1000;
    cfg->rc_min_quantizer = 2;
    cfg->rc_max_quantizer = 56;
    cfg_from_params(cfg, p);

    r = vpx_codec_enc_init(&e->ctx, iface, cfg, 0);
    if (r != VPX_CODEC_OK) { /* the context is not usable (libvpx destroyed it): only the code is left */
        snprintf(e->base.err, sizeof e->base.err, "vpx_codec_enc_init: %s", vpx_codec_err_to_string(r));
        return r == VPX_CODEC_MEM_ERROR ? RCANVAS_ENOMEM : RCANVAS_ECODEC;
    }
    e->open = 1;
    if (e->vp9) {
        CTRL(VP8E_SET_CPUUSED, VP9_CPU_USED);
        CTRL(VP9E_SET_ROW_MT, 1);
        CTRL(VP9E_SET_TILE_COLUMNS, vp9_tile_columns_log2(p->threads));
        CTRL(VP9E_SET_AQ_MODE, VP9_AQ_MODE);
        CTRL(VP9E_SET_TUNE_CONTENT, p->screen ? VP9E_CONTENT_SCREEN : VP9E_CONTENT_DEFAULT);
        /* What rc_i420_from_image produced, so the browser converts back with the same matrix and range. */
        CTRL(VP9E_SET_COLOR_SPACE, VPX_CS_BT_601);
        CTRL(VP9E_SET_COLOR_RANGE, VPX_CR_STUDIO_RANGE);
    } else {
        CTRL(VP8E_SET_CPUUSED, VP8_CPU_USED);
    }
    e->screen = !!p->screen;
    e->fps = p->fps;
    e->pts = 0;
    return RCANVAS_OK;
}

/* Applies changed params to the running encoder; 1 if it must be made anew instead. */
static int vpx_reconfigure(vpx_enc *e, const rc_encode_params *p, int *status) {
    *status = RCANVAS_OK;
    if (p->fps != e->fps) return 1;
    /* libvpx's VP8 starts its threads when the encoder is made and ignores a later g_threads (libvpx 1.12,
     * vp8/encoder/onyx_if.c); VP9 re-creates its workers for a new count. */
    if (!e->vp9 && vpx_threads(p->threads) != e->cfg.g_threads) return 1;
    vpx_codec_enc_cfg_t cfg = e->cfg;
    cfg_from_params(&cfg, p);
    if (cfg.rc_target_bitrate == e->cfg.rc_target_bitrate && cfg.g_threads == e->cfg.g_threads &&
        cfg.kf_mode == e->cfg.kf_mode && cfg.kf_max_dist == e->cfg.kf_max_dist)
        return 0;
    if (vpx_codec_enc_config_set(&e->ctx, &cfg) != VPX_CODEC_OK) {
        *status = vpx_fail(e, "vpx_codec_enc_config_set");
        return 0;
    }
    if (e->vp9 && cfg.g_threads != e->cfg.g_threads &&
        vpx_codec_control(&e->ctx, VP9E_SET_TILE_COLUMNS, vp9_tile_columns_log2(p->threads)) != VPX_CODEC_OK) {
        *status = vpx_fail(e, "VP9E_SET_TILE_COLUMNS");
        return 0;
    }
    e->cfg = cfg;
    return 0;
}

static int vpx_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out,
                      rc_encode_info *info) {
    vpx_enc *e = (vpx_enc *)c;
    if (p->bitrate_kbps <= 0 || p->threads < 1 || !(p->fps > 0 && p->fps <= 1000) || p->keyframe_interval < 0)
        return RCANVAS_EINVAL;
    if (img->width > 16383 || img->height > 16383) return RCANVAS_EINVAL; /* VP8's limit; VP9's is larger */
    int r = RCANVAS_OK;
    if (!e->open || e->cfg.g_w != img->width || e->cfg.g_h != img->height || vpx_reconfigure(e, p, &r))
        r = vpx_open(e, img->width, img->height, p);
    if (r) {
        vpx_close(e);
        return r;
    }
    if (e->vp9 && !!p->screen != e->screen) { /* the tuning changes on the running encoder: no keyframe */
        int tune = p->screen ? VP9E_CONTENT_SCREEN : VP9E_CONTENT_DEFAULT;
        if (vpx_codec_control(&e->ctx, VP9E_SET_TUNE_CONTENT, tune) != VPX_CODEC_OK) {
            r = vpx_fail(e, "VP9E_SET_TUNE_CONTENT");
            vpx_close(e);
            return r;
        }
        e->screen = !!p->screen;
    }
    if ((r = rc_i420_from_image(&e->yuv, img))) return r;
    /* Planes set by hand: vpx_img_wrap would place U after an even-rounded Y height, rc_i420 after the real one. */
    vpx_img_wrap(&e->img, VPX_IMG_FMT_I420, img->width, img->height, 1, e->yuv.mem);
    e->img.planes[VPX_PLANE_Y] = e->yuv.y;
    e->img.planes[VPX_PLANE_U] = e->yuv.u;
    e->img.planes[VPX_PLANE_V] = e->yuv.v;
    e->img.stride[VPX_PLANE_Y] = e->yuv.stride_y;
    e->img.stride[VPX_PLANE_U] = e->img.stride[VPX_PLANE_V] = e->yuv.stride_uv;
    e->img.cs = VPX_CS_BT_601;
    e->img.range = VPX_CR_STUDIO_RANGE;

    int force = atomic_exchange(&e->force_kf, 0);
    if (vpx_codec_encode(&e->ctx, &e->img, e->pts, 1, force ? VPX_EFLAG_FORCE_KF : 0, VPX_DL_REALTIME) !=
        VPX_CODEC_OK) {
        r = vpx_fail(e, "vpx_codec_encode");
        vpx_close(e); /* the next frame starts a new encoder, with a keyframe */
        return r;
    }
    e->pts++;
    /* Lag 0, no spatial layers: exactly one frame packet per input. Two frames in one packet would not decode as one
     * chunk in the browser, so anything else is an error (and the stream restarts with a keyframe). */
    size_t start = out->len;
    int frames = 0, key = 0;
    const vpx_codec_cx_pkt_t *pkt;
    vpx_codec_iter_t it = NULL;
    while ((pkt = vpx_codec_get_cx_data(&e->ctx, &it))) {
        if (pkt->kind != VPX_CODEC_CX_FRAME_PKT) continue;
        frames++;
        key |= (pkt->data.frame.flags & VPX_FRAME_IS_KEY) != 0;
        if (!r) r = rc_buf_append(out, pkt->data.frame.buf, pkt->data.frame.sz);
    }
    if (!r && frames != 1) {
        snprintf(c->err, sizeof c->err, "libvpx returned %d frames for one input (lag 0: expected 1)", frames);
        r = RCANVAS_ECODEC;
    }
    if (r) {
        out->len = start;
        vpx_close(e);
        return r;
    }
    info->keyframe = key;
    return RCANVAS_OK;
}

/* Codec strings as the client probes them (docs/protocol.md): VP9 profile 0, 8 bit, level 1.0 — the level in a
 * WebCodecs VP9 string is informative (the decoder reads the stream's own), as for H.264's level. */
const rc_codec_type rc_codec_vp8 = {
    .name = "vp8", .wire_id = RCANVAS_CODEC_VP8, .webcodecs = "vp8", .flags = RC_CODEC_STATEFUL | RC_CODEC_ONE_THREAD,
    .create = vpx_create, .encode = vpx_encode, .request_keyframe = vpx_request_keyframe, .destroy = vpx_destroy};

const rc_codec_type rc_codec_vp9 = {
    .name = "vp9", .wire_id = RCANVAS_CODEC_VP9, .webcodecs = "vp09.00.10.08",
    .flags = RC_CODEC_STATEFUL | RC_CODEC_SCREEN,
    .create = vpx_create, .encode = vpx_encode, .request_keyframe = vpx_request_keyframe, .destroy = vpx_destroy};
