/* SPDX-License-Identifier: MIT */
/*
 * video_decoders.h — reference decoders for the video tests and benchmarks (test_h264, test_rtp, bench-video,
 * bench-anchor, the paint-over test's scorer): each decodes one
 * packet (one access unit / frame) to planar YUV, to measure what a viewer sees. openh264 (constrained baseline, what
 * rc_codec_h264 writes) when RCANVAS_HAVE_H264, libvpx VP8/VP9 (VP9 profiles 0 and 1: 4:2:0 and 4:4:4) when
 * RCANVAS_HAVE_VPX, and libavcodec's H.264 (any profile: x264's high) when RCANVAS_BENCH_AVCODEC. Header only, for
 * programs that link those libraries themselves: every one found, since an -O0 build emits the decoder tables
 * (and so references the functions) even when a program uses one codec. libavcodec is the exception: it is loaded
 * at run time (lavc_h264_available), so a program built with its headers runs where it is absent.
 */
#ifndef RC_BENCH_VIDEO_DECODERS_H
#define RC_BENCH_VIDEO_DECODERS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if RCANVAS_HAVE_H264
#include <wels/codec_api.h>
#endif
#if RCANVAS_HAVE_VPX
#include <vpx/vp8dx.h>
#include <vpx/vpx_decoder.h>
#endif
#if RCANVAS_BENCH_AVCODEC
#include <dlfcn.h>
#include <libavcodec/avcodec.h>
#endif

/* A decoded picture: planes owned by the decoder, valid until its next call. Chroma is (w+1)/2 × (h+1)/2, or w × h
 * when chroma444. */
typedef struct yuv_view {
    const uint8_t *y, *u, *v;
    int w, h, stride_y, stride_uv;
    int chroma444;
} yuv_view;

/* A codec's reference decoder. decode() gives 0 with the picture of that packet in *out, or -1 when the packet
 * does not decode or gives no picture (these decoders are set for no delay: each frame's picture comes from its own
 * packet). */
typedef struct video_decoder {
    void *(*open)(void);
    int (*decode)(void *d, const uint8_t *data, size_t len, yuv_view *out); /* 0 or -1 */
    void (*close)(void *d);
} video_decoder;

#if RCANVAS_HAVE_H264
static inline void *h264_open(void) {
    ISVCDecoder *d = NULL;
    if (WelsCreateDecoder(&d) || !d) return NULL;
    int level = WELS_LOG_QUIET;
    (*d)->SetOption(d, DECODER_OPTION_TRACE_LEVEL, &level);
    SDecodingParam p;
    memset(&p, 0, sizeof p);
    p.sVideoProperty.size = sizeof p.sVideoProperty;
    p.sVideoProperty.eVideoBsType = VIDEO_BITSTREAM_AVC;
    p.eEcActiveIdc = ERROR_CON_DISABLE; /* no concealment: a broken access unit must show as an error */
    if ((*d)->Initialize(d, &p)) {
        WelsDestroyDecoder(d);
        return NULL;
    }
    return d;
}
static inline int h264_decode(void *dp, const uint8_t *data, size_t len, yuv_view *out) {
    ISVCDecoder *d = dp;
    uint8_t *dst[3] = {0};
    SBufferInfo bi;
    memset(&bi, 0, sizeof bi);
    if ((*d)->DecodeFrameNoDelay(d, data, (int)len, dst, &bi) != dsErrorFree || bi.iBufferStatus != 1) return -1;
    *out = (yuv_view){bi.pDst[0], bi.pDst[1], bi.pDst[2], bi.UsrData.sSystemBuffer.iWidth,
                      bi.UsrData.sSystemBuffer.iHeight, bi.UsrData.sSystemBuffer.iStride[0],
                      bi.UsrData.sSystemBuffer.iStride[1], 0};
    return 0;
}
static inline void h264_close(void *dp) { /* NULL: nothing */
    ISVCDecoder *d = dp;
    if (!d) return;
    (*d)->Uninitialize(d);
    WelsDestroyDecoder(d);
}
static const video_decoder h264_decoder = {h264_open, h264_decode, h264_close};
#endif

#if RCANVAS_HAVE_VPX
static inline void *vpx_dec_open(vpx_codec_iface_t *iface) {
    vpx_codec_ctx_t *d = malloc(sizeof *d);
    if (d && vpx_codec_dec_init(d, iface, NULL, 0) != VPX_CODEC_OK) {
        free(d);
        d = NULL;
    }
    return d;
}
static inline void *vp8_open(void) { return vpx_dec_open(vpx_codec_vp8_dx()); }
static inline void *vp9_open(void) { return vpx_dec_open(vpx_codec_vp9_dx()); }
static inline int vpx_decode(void *dp, const uint8_t *data, size_t len, yuv_view *out) {
    vpx_codec_iter_t it = NULL;
    if (vpx_codec_decode(dp, data, (unsigned)len, NULL, 0) != VPX_CODEC_OK) return -1;
    vpx_image_t *img = vpx_codec_get_frame(dp, &it);
    if (!img || (img->fmt != VPX_IMG_FMT_I420 && img->fmt != VPX_IMG_FMT_I444)) return -1;
    *out = (yuv_view){img->planes[VPX_PLANE_Y], img->planes[VPX_PLANE_U], img->planes[VPX_PLANE_V], (int)img->d_w,
                      (int)img->d_h, img->stride[VPX_PLANE_Y], img->stride[VPX_PLANE_U],
                      img->fmt == VPX_IMG_FMT_I444};
    return 0;
}
static inline void vpx_dec_close(void *dp) {
    vpx_codec_destroy(dp);
    free(dp);
}
static const video_decoder vp8_decoder = {vp8_open, vpx_decode, vpx_dec_close};
static const video_decoder vp9_decoder = {vp9_open, vpx_decode, vpx_dec_close};
#endif

#if RCANVAS_BENCH_AVCODEC
/* libavcodec, loaded on first use from the major version these headers describe (dlopen), not linked: its
 * dependency closure on Debian 12 is 146 MB (x265, codec2, rsvg, ICU's data…), which a kit of test binaries for
 * another machine cannot carry (the GPU machine takes 64 MiB); there the tests decode with openh264 alone, and say
 * so. The table's types are the headers' own, so a signature that changes does not compile. */
typedef struct lavc_api {
    __typeof__(&avcodec_find_decoder) avcodec_find_decoder;
    __typeof__(&avcodec_alloc_context3) avcodec_alloc_context3;
    __typeof__(&avcodec_open2) avcodec_open2;
    __typeof__(&avcodec_free_context) avcodec_free_context;
    __typeof__(&avcodec_send_packet) avcodec_send_packet;
    __typeof__(&avcodec_receive_frame) avcodec_receive_frame;
    __typeof__(&av_packet_alloc) av_packet_alloc;
    __typeof__(&av_packet_free) av_packet_free;
    __typeof__(&av_frame_alloc) av_frame_alloc;
    __typeof__(&av_frame_free) av_frame_free;
    __typeof__(&av_frame_unref) av_frame_unref;
} lavc_api;
#define LAVC_STR_(x) #x
#define LAVC_STR(x) LAVC_STR_(x)
#define LAVC_SONAME "libavcodec.so." LAVC_STR(LIBAVCODEC_VERSION_MAJOR)
/* The functions, or NULL when libavcodec (LAVC_SONAME, with its libavutil) cannot be loaded here or lacks one of
 * them. Not thread-safe on the first call. */
static inline const lavc_api *lavc_load(void) {
    static lavc_api api;
    static int state; /* 0 not tried, 1 loaded, -1 absent */
    if (state) return state > 0 ? &api : NULL;
    state = -1;
    void *h = dlopen(LAVC_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) return NULL;
#define LAVC_LOAD(f)                                                                                                   \
    if (!(api.f = (__typeof__(api.f))dlsym(h, #f))) {                                                                  \
        dlclose(h);                                                                                                    \
        return NULL;                                                                                                   \
    }
    LAVC_LOAD(avcodec_find_decoder) LAVC_LOAD(avcodec_alloc_context3) LAVC_LOAD(avcodec_open2)
    LAVC_LOAD(avcodec_free_context) LAVC_LOAD(avcodec_send_packet) LAVC_LOAD(avcodec_receive_frame)
    LAVC_LOAD(av_packet_alloc) LAVC_LOAD(av_packet_free) LAVC_LOAD(av_frame_alloc) LAVC_LOAD(av_frame_free)
    LAVC_LOAD(av_frame_unref)
#undef LAVC_LOAD
    state = 1;
    return &api;
}
/* 1 if libavcodec's H.264 decoder can be used here. */
static inline int lavc_h264_available(void) {
    const lavc_api *a = lavc_load();
    return a && a->avcodec_find_decoder(AV_CODEC_ID_H264) != NULL;
}

/* libavcodec's H.264 decoder on one thread, low delay: a stream without B-frames (x264's zerolatency) gives each
 * picture back from its own packet. */
typedef struct lavc_dec {
    AVCodecContext *ctx;
    AVPacket *pkt;
    AVFrame *frame;
} lavc_dec;
static inline void lavc_close(void *dp) {
    lavc_dec *d = dp;
    const lavc_api *a = lavc_load(); /* loaded: d was opened */
    a->avcodec_free_context(&d->ctx);
    a->av_packet_free(&d->pkt);
    a->av_frame_free(&d->frame);
    free(d);
}
static inline void *lavc_h264_open(void) {
    const lavc_api *a = lavc_load();
    const AVCodec *c = a ? a->avcodec_find_decoder(AV_CODEC_ID_H264) : NULL;
    lavc_dec *d = c ? calloc(1, sizeof *d) : NULL;
    if (!d) return NULL;
    d->ctx = a->avcodec_alloc_context3(c);
    d->pkt = a->av_packet_alloc();
    d->frame = a->av_frame_alloc();
    if (d->ctx) {
        d->ctx->thread_count = 1;
        d->ctx->flags |= AV_CODEC_FLAG_LOW_DELAY;
    }
    if (!d->ctx || !d->pkt || !d->frame || a->avcodec_open2(d->ctx, c, NULL) < 0) {
        lavc_close(d);
        return NULL;
    }
    return d;
}
static inline int lavc_decode(void *dp, const uint8_t *data, size_t len, yuv_view *out) {
    lavc_dec *d = dp;
    const lavc_api *a = lavc_load();
    a->av_frame_unref(d->frame);
    d->pkt->data = (uint8_t *)data;
    d->pkt->size = (int)len;
    if (a->avcodec_send_packet(d->ctx, d->pkt) < 0 || a->avcodec_receive_frame(d->ctx, d->frame) < 0) return -1;
    if (d->frame->format != AV_PIX_FMT_YUV420P && d->frame->format != AV_PIX_FMT_YUVJ420P) return -1;
    *out = (yuv_view){d->frame->data[0], d->frame->data[1], d->frame->data[2], d->frame->width, d->frame->height,
                      d->frame->linesize[0], d->frame->linesize[1], 0};
    return 0;
}
static const video_decoder lavc_h264_decoder = {lavc_h264_open, lavc_decode, lavc_close};
#endif

#endif
