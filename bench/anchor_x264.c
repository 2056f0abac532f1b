/* SPDX-License-Identifier: MIT */
/*
 * anchor_x264.c — x264 as bench-anchor configures it (see anchor_x264.h): preset P + tune zerolatency (no B-frames,
 * no lookahead, sliced threads), profile baseline or high, ABR at the target with VBV max rate = target and a 1 s
 * VBV buffer (CBR-like, as vpx.c's 1 s rate buffer), no periodic keyframes (x264's scene-cut I-frames left on), SPS
 * and PPS before each IDR, Annex B, BT.601 limited range signalled (as rc_codec_h264).
 */
#include "anchor_x264.h"

#include <stdio.h>
#include <stdlib.h>
#include <x264.h>

#include "codec/yuv.h"

struct anchor_x264 {
    x264_t *h;
    rc_i420 yuv;
    int64_t pts;
};

anchor_x264 *anchor_x264_open(const char *preset, const char *profile, int w, int h, int fps, int kbps, int threads) {
    x264_param_t p;
    if (x264_param_default_preset(&p, preset, "zerolatency") < 0) {
        fprintf(stderr, "bench-anchor: x264: unknown preset %s\n", preset);
        return NULL;
    }
    p.i_log_level = X264_LOG_NONE;
    p.i_threads = threads;
    p.i_width = w, p.i_height = h;
    p.i_csp = X264_CSP_I420;
    p.i_fps_num = (uint32_t)fps, p.i_fps_den = 1;
    p.i_timebase_num = 1, p.i_timebase_den = (uint32_t)fps;
    p.i_keyint_max = X264_KEYINT_MAX_INFINITE;
    p.b_repeat_headers = 1;
    p.b_annexb = 1;
    p.rc.i_rc_method = X264_RC_ABR;
    p.rc.i_bitrate = kbps;
    p.rc.i_vbv_max_bitrate = kbps;
    p.rc.i_vbv_buffer_size = kbps;
    p.vui.i_colorprim = 6, p.vui.i_transfer = 6, p.vui.i_colmatrix = 6; /* SMPTE 170M */
    p.vui.b_fullrange = 0;
    if (x264_param_apply_profile(&p, profile) < 0) {
        fprintf(stderr, "bench-anchor: x264: profile %s refused\n", profile);
        return NULL;
    }
    anchor_x264 *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (!(s->h = x264_encoder_open(&p))) {
        fprintf(stderr, "bench-anchor: x264_encoder_open failed\n");
        free(s);
        return NULL;
    }
    return s;
}

int anchor_x264_encode(anchor_x264 *s, const uint8_t *rgba, int w, int h, size_t pitch, rc_buf *out) {
    rc_image img = {rgba, (uint32_t)w, (uint32_t)h, pitch, RCANVAS_FORMAT_RGBA8, NULL};
    if (rc_i420_from_image(&s->yuv, &img)) return -1;
    x264_picture_t in, pic_out;
    x264_picture_init(&in);
    in.img.i_csp = X264_CSP_I420;
    in.img.i_plane = 3;
    in.img.plane[0] = s->yuv.y, in.img.plane[1] = s->yuv.u, in.img.plane[2] = s->yuv.v;
    in.img.i_stride[0] = s->yuv.stride_y, in.img.i_stride[1] = in.img.i_stride[2] = s->yuv.stride_uv;
    in.i_pts = s->pts++;
    x264_nal_t *nal;
    int nn, sz = x264_encoder_encode(s->h, &nal, &nn, &in, &pic_out);
    if (sz <= 0) return -1;                                       /* zerolatency: each frame's packet at once */
    return rc_buf_append(out, nal[0].p_payload, (size_t)sz) ? -1 : 0; /* the NALs lie back to back */
}

void anchor_x264_close(anchor_x264 *s) {
    if (!s) return;
    x264_encoder_close(s->h);
    rc_i420_free(&s->yuv);
    free(s);
}

const char *anchor_x264_version(void) {
    static char v[32];
    snprintf(v, sizeof v, "libx264 build %d", X264_BUILD);
    return v;
}
