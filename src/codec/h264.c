/* SPDX-License-Identifier: MIT */
/*
 * h264.c — H.264 through openh264 (Cisco's ISVCEncoder): constrained baseline (CAVLC, no B-frames), real-time rate
 * control, one instance per stream (RC_CODEC_STATEFUL). In: an RGBA/BGRA/RGBX image, converted to I420 (BT.601,
 * limited range) by rc_i420_from_image() into a buffer kept between frames. Out: one Annex B access unit per frame
 * (SPS and PPS in front of every IDR, start codes kept), ready for the browser's WebCodecs VideoDecoder.
 *
 * Sizes. H.264 4:2:0 codes even sizes only (frame cropping counts in units of 2 luma samples) and openh264 refuses
 * pictures under 16×16. A frame of another size is coded at its even size (at least 16×16) with its last column
 * and row replicated into the padding; the SPS crops to that coded size, and the decoder's picture is the frame
 * plus at most one column and one row (more only under 16) that the client must crop away with the size in the
 * frame header. (Handing openh264 the odd size itself would not help: it rounds the size *down* to even —
 * SUsedPicRect in param_svc.h, WelsGetPaddingOffset in au_set.cpp — and silently drops the last column and row.)
 */
#include "codec/codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wels/codec_api.h>

#include "codec/yuv.h"

/* Usage type: CAMERA_VIDEO_REAL_TIME, or SCREEN_CONTENT_REAL_TIME where the stream asks for it
 * (rc_encode_params.screen: frames with fine detail). Measured with bench-video (8 corpus sequences panned and zoomed
 * + the generated scene, 30 frames each, 1080p, 30 fps, 2 threads, 2–16 Mbit/s; bytes compared at equal Y PSNR along
 * each rate curve): the screen mode needs fewer bytes on lines (−34 %), text (−33 %), surface (−17 %), scatter
 * (−13 %) and the generated scene (−9 %), the same on render and more on the heat maps (+15 %, +85 %). It costs
 * 1.1–5.5× the CPU (text 38 vs 9 ms a frame, lines at 4K 82 vs 15: screen-content motion search and scroll
 * detection), and its rate control (ratectl.cpp, the "Scc" functions) keeps QP within 26–35 whatever iMinQp and
 * iMaxQp say: at 2 Mbit/s it spends 6× the target on the 1080p heat map, and from 4 Mbit/s up it stops at ~15 kB a
 * frame on smooth content. On a terminal scrolling 36 px a frame (rcanvas-testframes --motion scroll, `bench-video
 * --play`, 30 fps, 2 threads) the camera mode's search does not find the motion: 19.0–26.3 dB in 32–63 kB a frame
 * at 2–16 Mbit/s, over every target up to 8 Mbit/s; the screen mode meets each target (9.6–43.6 kB) at 20.7, 24.9,
 * 37.2 and 47.5 dB, 11–15 ms a frame. Hence camera by default and screen for text and lines, which the steering
 * leaves when its encoder falls behind (rc_screen_mode_step in src/stream/rate.c). iComplexityMode (LOW/MEDIUM/HIGH) changed neither bytes nor time
 * by more than 10 % in either mode on that sequence. */
/* openh264 2.3.1 limits (codec/encoder/core/inc/wels_const.h): MIN/MAX_FRAME_RATE 1/60, MAX_THREADS_NUM 4. */
#define H264_MIN_FPS 1.0
#define H264_MAX_FPS 60.0
#define H264_MAX_THREADS 4
#define H264_MIN_DIM 16
/* The rate control's QP range. Left at 0, openh264 (encoder_ext.cpp, ParamValidation) puts the camera mode at
 * GOM_MIN_QP_MODE–MAX_LOW_BR_QP, 12–42, and at QP 42 a 1080p pan of 40,20 px a frame over a dense plot (the
 * testframes pan loop) still takes 91 kB a P-frame whatever the target: 2.7 Mbit/s asked, 22 Mbit/s given at
 * 30 fps. The full H.264 range on top (QP_MAX_VALUE 51): 24 kB at that target, 27 kB at 8 Mbit/s (its 33 kB met). What
 * QP 51 still cannot meet, the steering meets with frame rate and size (rc_steer_video). */
/* Paint-over: a still frame re-encoded with the rate control off (ENCODER_OPTION_RC_MODE, which
 * openh264 switches without a reset: the frames stay P-frames) at this QP (iDLayerQp, its RC_OFF_MODE QP, fixed
 * at InitializeExt). Measured on the 1080p pan of a dense plot at 2 and 8 Mbit/s (both ~20 dB Y PSNR in
 * motion, QP 51 at their cap), 4 paint frames: QP 24: 473 kB then 8, 19, 2 kB, 32.3 → 40.3 dB; QP 26: 417 kB,
 * 38.3 dB after 4; QP 30: 316 kB, 35 dB. Back in the bitrate mode the next motion frame is 28 kB (24 before):
 * no keyframe, no flood. 24 is the lowest that passes 40 dB on that plot. */
#define H264_PAINT_QP 24
#define H264_MIN_QP 12
#define H264_MAX_QP 51

typedef struct h264_codec {
    rc_codec base;
    ISVCEncoder *enc;           /* NULL until the first encode, and after an error that left it unusable */
    uint32_t src_w, src_h;      /* the frame size the encoder was made for */
    int coded_w, coded_h;       /* even, ≥ 16: what openh264 codes */
    int threads;                /* applied: 1–4 */
    int screen;                 /* 1: made as SCREEN_CONTENT_REAL_TIME (rc_encode_params.screen) */
    int kbps, keyframe_interval;
    double fps;
    int want_idr;               /* request_keyframe() was called */
    int painting;               /* the rate control is off (RC_OFF_MODE): the last frame was a paint-over */
    long long ts_ms;            /* synthesized timestamps at the encoder's frame rate (rate control) */
    rc_i420 yuv;                /* the frame in I420 at its own size */
    uint8_t *pad;               /* the frame padded to the coded size, when that differs */
    size_t pad_cap;
    SSourcePicture pic;
    SFrameBSInfo bs;            /* ~7 KiB: kept here rather than on the worker's stack */
    char trace[128];            /* openh264's last error message (its trace callback), "" if none */
} h264_codec;

/* openh264's log goes here instead of stderr (the library never prints): errors only, the last one kept for err. */
static void h264_trace(void *ctx, int level, const char *msg) {
    h264_codec *e = ctx;
    if (level & WELS_LOG_ERROR) snprintf(e->trace, sizeof e->trace, "%s", msg);
}

static int h264_fail(h264_codec *e, const char *what, long rc) {
    size_t n = strlen(e->trace);
    while (n && (e->trace[n - 1] == '\n' || e->trace[n - 1] == ' ')) e->trace[--n] = '\0';
    snprintf(e->base.err, sizeof e->base.err, "openh264 %s: %ld%s%s", what, rc, n ? ": " : "", e->trace);
    return RCANVAS_ECODEC;
}

static void encoder_free(h264_codec *e) {
    if (!e->enc) return;
    (*e->enc)->Uninitialize(e->enc);
    WelsDestroySVCEncoder(e->enc);
    e->enc = NULL;
}

static void h264_destroy(rc_codec *c) {
    h264_codec *e = (h264_codec *)c;
    encoder_free(e);
    rc_i420_free(&e->yuv);
    free(e->pad);
    free(e);
}

static int h264_create(const rc_codec_type *type, rc_codec **out) {
    h264_codec *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->base.type = type;
    *out = &e->base;
    return RCANVAS_OK;
}

static double clamp_fps(double fps) {
    return fps < H264_MIN_FPS ? H264_MIN_FPS : fps > H264_MAX_FPS ? H264_MAX_FPS : fps;
}

/* openh264 budgets bitrate / frame rate per frame and clamps the frame rate to 1–60: outside that range the target
 * is scaled so that the bits per *actual* frame stay bitrate / fps (at 120 fps it would otherwise spend twice the
 * bitrate). bit/s, at most INT_MAX. */
static int encoder_bps(int kbps, double fps) {
    double bps = (double)kbps * 1000.0 * clamp_fps(fps) / fps;
    return bps > 2147483647.0 ? 2147483647 : bps < 1.0 ? 1 : (int)bps;
}

static int clamp_threads(int t) { return t < 1 ? 1 : t > H264_MAX_THREADS ? H264_MAX_THREADS : t; }

static int encoder_new(h264_codec *e, const rc_encode_params *p) {
    int r = WelsCreateSVCEncoder(&e->enc);
    if (r || !e->enc) {
        e->enc = NULL;
        return h264_fail(e, "WelsCreateSVCEncoder", r);
    }
    void *ctx = e;
    WelsTraceCallback cb = h264_trace;
    int level = WELS_LOG_ERROR;
    (*e->enc)->SetOption(e->enc, ENCODER_OPTION_TRACE_CALLBACK_CONTEXT, &ctx);
    (*e->enc)->SetOption(e->enc, ENCODER_OPTION_TRACE_CALLBACK, &cb);
    (*e->enc)->SetOption(e->enc, ENCODER_OPTION_TRACE_LEVEL, &level);

    SEncParamExt q;
    (*e->enc)->GetDefaultParams(e->enc, &q);
    int threads = clamp_threads(p->threads);
    q.iUsageType = p->screen ? SCREEN_CONTENT_REAL_TIME : CAMERA_VIDEO_REAL_TIME;
    q.iPicWidth = e->coded_w;
    q.iPicHeight = e->coded_h;
    q.iRCMode = RC_BITRATE_MODE;
    q.iTargetBitrate = encoder_bps(p->bitrate_kbps, p->fps);
    q.iMaxBitrate = UNSPECIFIED_BIT_RATE;
    q.iMinQp = H264_MIN_QP;
    q.iMaxQp = H264_MAX_QP;
    q.fMaxFrameRate = (float)clamp_fps(p->fps);
    q.iTemporalLayerNum = 1;
    q.iSpatialLayerNum = 1;
    q.uiIntraPeriod = (unsigned)p->keyframe_interval; /* 0: only the first frame and requested ones */
    q.eSpsPpsIdStrategy = CONSTANT_ID; /* every IDR carries SPS/PPS with id 0: a viewer can join at any IDR */
    q.bPrefixNalAddingCtrl = false;
    q.bSimulcastAVC = false;
    q.iEntropyCodingModeFlag = 0; /* CAVLC: baseline */
    q.bEnableFrameSkip = false;   /* flow control upstream chooses the frames: every call must give a packet */
    q.bEnableLongTermReference = false;
    /* Background detection is for camera noise: off, 2 % fewer bytes at equal PSNR on the bench sequences. Scene
     * change detection off: keyframes come when asked for (a new viewer, the interval), not on openh264's guess;
     * neither bytes at equal PSNR nor CPU time changed measurably. */
    q.bEnableBackgroundDetection = false;
    q.bEnableSceneChangeDetect = false;
    q.iMultipleThreadIdc = (unsigned short)threads;
    q.bUseLoadBalancing = false; /* fixed slice boundaries: the same input gives the same bytes */
    q.bEnableFrameCroppingFlag = true;
    SSpatialLayerConfig *l = &q.sSpatialLayers[0];
    l->iVideoWidth = e->coded_w;
    l->iVideoHeight = e->coded_h;
    l->fFrameRate = q.fMaxFrameRate;
    l->iSpatialBitrate = q.iTargetBitrate;
    l->iMaxSpatialBitrate = UNSPECIFIED_BIT_RATE;
    l->uiProfileIdc = PRO_BASELINE; /* with CAVLC openh264 writes constraint_set0+1: constrained baseline */
    l->uiLevelIdc = LEVEL_UNKNOWN;  /* derived from size, frame rate and bitrate */
    l->iDLayerQp = H264_PAINT_QP;   /* used only with the rate control off: paint-over frames */
    /* One slice per thread: openh264 encodes slices in parallel (and then turns deblocking across slice edges
     * off, iLoopFilterDisableIdc 2). */
    l->sSliceArgument.uiSliceMode = threads > 1 ? SM_FIXEDSLCNUM_SLICE : SM_SINGLE_SLICE;
    l->sSliceArgument.uiSliceNum = (unsigned)threads;
    /* VUI: what rc_i420_from_image() produced — BT.601 (SMPTE 170M) matrix, primaries and transfer, limited range —
     * so the browser converts back with the same matrix. */
    l->bVideoSignalTypePresent = true;
    l->uiVideoFormat = VF_UNDEF;
    l->bFullRange = false;
    l->bColorDescriptionPresent = true;
    l->uiColorPrimaries = CP_SMPTE170M;
    l->uiTransferCharacteristics = TRC_SMPTE170M;
    l->uiColorMatrix = CM_SMPTE170M;

    r = (*e->enc)->InitializeExt(e->enc, &q);
    if (r != cmResultSuccess) {
        h264_fail(e, "InitializeExt", r);
        encoder_free(e);
        return RCANVAS_ECODEC;
    }
    int fmt = videoFormatI420;
    r = (*e->enc)->SetOption(e->enc, ENCODER_OPTION_DATAFORMAT, &fmt);
    if (r != cmResultSuccess) {
        h264_fail(e, "SetOption(DATAFORMAT)", r);
        encoder_free(e);
        return RCANVAS_ECODEC;
    }
    e->threads = threads;
    e->screen = !!p->screen;
    e->kbps = p->bitrate_kbps;
    e->fps = p->fps;
    e->keyframe_interval = p->keyframe_interval;
    e->ts_ms = 0;
    e->want_idr = 0; /* a new encoder starts with an IDR */
    e->painting = 0;
    return RCANVAS_OK;
}

/* Rate control and keyframe interval changes, on the running encoder. */
static int apply_params(h264_codec *e, const rc_encode_params *p) {
    int r;
    if (p->fps != e->fps) {
        float f = (float)clamp_fps(p->fps);
        if ((r = (*e->enc)->SetOption(e->enc, ENCODER_OPTION_FRAME_RATE, &f)) != cmResultSuccess)
            return h264_fail(e, "SetOption(FRAME_RATE)", r);
    }
    if (p->fps != e->fps || p->bitrate_kbps != e->kbps) {
        SBitrateInfo b = {.iLayer = SPATIAL_LAYER_ALL, .iBitrate = encoder_bps(p->bitrate_kbps, p->fps)};
        if ((r = (*e->enc)->SetOption(e->enc, ENCODER_OPTION_BITRATE, &b)) != cmResultSuccess)
            return h264_fail(e, "SetOption(BITRATE)", r);
    }
    if (!!p->paint != e->painting) { /* paint-over: rate control off at H264_PAINT_QP, then back on */
        int mode = p->paint ? RC_OFF_MODE : RC_BITRATE_MODE;
        if ((r = (*e->enc)->SetOption(e->enc, ENCODER_OPTION_RC_MODE, &mode)) != cmResultSuccess)
            return h264_fail(e, "SetOption(RC_MODE)", r);
        e->painting = !!p->paint;
    }
    if (p->keyframe_interval != e->keyframe_interval) {
        int v = p->keyframe_interval;
        if ((r = (*e->enc)->SetOption(e->enc, ENCODER_OPTION_IDR_INTERVAL, &v)) != cmResultSuccess)
            return h264_fail(e, "SetOption(IDR_INTERVAL)", r);
    }
    e->fps = p->fps;
    e->kbps = p->bitrate_kbps;
    e->keyframe_interval = p->keyframe_interval;
    return RCANVAS_OK;
}

/* Copies one plane of w × h into dw × dh (dw ≥ w, dh ≥ h), replicating the last column and the last row. */
static void pad_plane(uint8_t *dst, int dw, int dh, const uint8_t *src, int stride, int w, int h) {
    for (int y = 0; y < h; y++) {
        uint8_t *d = dst + (size_t)y * dw;
        memcpy(d, src + (size_t)y * stride, (size_t)w);
        memset(d + w, d[w - 1], (size_t)(dw - w));
    }
    for (int y = h; y < dh; y++) memcpy(dst + (size_t)y * dw, dst + (size_t)(h - 1) * dw, (size_t)dw);
}

/* Points pic at the I420 frame, padded to the coded size when that differs from the frame's. */
static int prepare_picture(h264_codec *e) {
    SSourcePicture *s = &e->pic;
    memset(s, 0, sizeof *s);
    s->iColorFormat = videoFormatI420;
    s->iPicWidth = e->coded_w;
    s->iPicHeight = e->coded_h;
    if ((uint32_t)e->coded_w == e->src_w && (uint32_t)e->coded_h == e->src_h) {
        s->pData[0] = e->yuv.y;
        s->pData[1] = e->yuv.u;
        s->pData[2] = e->yuv.v;
        s->iStride[0] = e->yuv.stride_y;
        s->iStride[1] = s->iStride[2] = e->yuv.stride_uv;
        return RCANVAS_OK;
    }
    int cw = e->coded_w / 2, ch = e->coded_h / 2;
    size_t need = (size_t)e->coded_w * e->coded_h + 2 * (size_t)cw * ch;
    if (need > e->pad_cap) {
        uint8_t *m = realloc(e->pad, need);
        if (!m) return RCANVAS_ENOMEM;
        e->pad = m;
        e->pad_cap = need;
    }
    int w = (int)e->src_w, h = (int)e->src_h, sw = (w + 1) / 2, sh = (h + 1) / 2;
    s->pData[0] = e->pad;
    s->pData[1] = e->pad + (size_t)e->coded_w * e->coded_h;
    s->pData[2] = s->pData[1] + (size_t)cw * ch;
    s->iStride[0] = e->coded_w;
    s->iStride[1] = s->iStride[2] = cw;
    pad_plane(s->pData[0], e->coded_w, e->coded_h, e->yuv.y, e->yuv.stride_y, w, h);
    pad_plane(s->pData[1], cw, ch, e->yuv.u, e->yuv.stride_uv, sw, sh);
    pad_plane(s->pData[2], cw, ch, e->yuv.v, e->yuv.stride_uv, sw, sh);
    return RCANVAS_OK;
}

static int h264_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out,
                       rc_encode_info *info) {
    h264_codec *e = (h264_codec *)c;
    if (p->bitrate_kbps < 1 || p->keyframe_interval < 0 || p->threads < 1 || !(p->fps > 0) || !isfinite(p->fps))
        return RCANVAS_EINVAL;
    /* openh264 codes up to 36864 macroblocks (MAX_MBS_PER_FRAME: 3840×2160 fits, 4096×2304 at most); InitializeExt
     * refuses more with its own code. This bound only keeps the int arithmetic below safe. */
    if (img->width > 65536 || img->height > 65536) return RCANVAS_EINVAL;
    e->trace[0] = '\0';

    /* A new size, thread count or usage type needs a new encoder; its first packet is an IDR. */
    if (e->enc && (img->width != e->src_w || img->height != e->src_h || clamp_threads(p->threads) != e->threads ||
                   !!p->screen != e->screen))
        encoder_free(e);
    int r;
    if (!e->enc) {
        e->src_w = img->width;
        e->src_h = img->height;
        e->coded_w = (int)(img->width + 1) & ~1;
        e->coded_h = (int)(img->height + 1) & ~1;
        if (e->coded_w < H264_MIN_DIM) e->coded_w = H264_MIN_DIM;
        if (e->coded_h < H264_MIN_DIM) e->coded_h = H264_MIN_DIM;
        if ((r = encoder_new(e, p))) return r;
    } else if ((r = apply_params(e, p))) {
        return r;
    }

    if ((r = rc_i420_from_image(&e->yuv, img))) return r;
    if ((r = prepare_picture(e))) return r;

    if (e->want_idr) {
        /* The C vtable has no iLayerId (the C++ method's second argument, then undefined): harmless, since
         * ForceCodingIDR() ignores it unless bSimulcastAVC, which is off. */
        if ((r = (*e->enc)->ForceIntraFrame(e->enc, true)) != 0) return h264_fail(e, "ForceIntraFrame", r);
        e->want_idr = 0;
    }
    e->pic.uiTimeStamp = e->ts_ms;
    e->ts_ms += (long long)llround(1000.0 / clamp_fps(e->fps));

    r = (*e->enc)->EncodeFrame(e->enc, &e->pic, &e->bs);
    if (r != cmResultSuccess) {
        /* After a memory error openh264 frees its context (WelsUninitEncoderExt): start over next time. */
        h264_fail(e, "EncodeFrame", r);
        encoder_free(e);
        return RCANVAS_ECODEC;
    }
    if (e->bs.eFrameType == videoFrameTypeSkip || e->bs.eFrameType == videoFrameTypeInvalid) {
        /* Frame skipping is off, so this is not expected; a packet-less frame would stall the stream. The
         * reference state is untouched: the next frame may still be predicted from the last one sent. */
        return h264_fail(e, "EncodeFrame gave no picture (frame type)", e->bs.eFrameType);
    }

    size_t total = 0;
    for (int i = 0; i < e->bs.iLayerNum; i++)
        for (int n = 0; n < e->bs.sLayerInfo[i].iNalCount; n++) total += (size_t)e->bs.sLayerInfo[i].pNalLengthInByte[n];
    if ((r = rc_buf_reserve(out, out->len + total))) return r;
    for (int i = 0; i < e->bs.iLayerNum; i++) {
        const SLayerBSInfo *l = &e->bs.sLayerInfo[i];
        size_t len = 0;
        for (int n = 0; n < l->iNalCount; n++) len += (size_t)l->pNalLengthInByte[n];
        memcpy(rc_buf_data(out) + out->len, l->pBsBuf, len); /* a layer's NALs lie back to back, start codes in */
        out->len += len;
    }
    info->keyframe = e->bs.eFrameType == videoFrameTypeIDR;
    return RCANVAS_OK;
}

static void h264_request_keyframe(rc_codec *c) { ((h264_codec *)c)->want_idr = 1; }

/* The codec string is the client's probe (docs/protocol.md): profile 66 (the SPS also sets constraint_set0+1,
 * constrained baseline), level 4.0. openh264 picks the stream's level from size, frame rate and bitrate (3.1 for
 * 720p30, 4.x for 1080p, 5.1 for 4K) and the decoder reads it in band. */
const rc_codec_type rc_codec_h264 = {
    .name = "h264", .wire_id = RCANVAS_CODEC_H264, .webcodecs = "avc1.42E028",
    .flags = RC_CODEC_STATEFUL | RC_CODEC_PAINT | RC_CODEC_SCREEN,
    .create = h264_create, .encode = h264_encode, .request_keyframe = h264_request_keyframe,
    .destroy = h264_destroy};
