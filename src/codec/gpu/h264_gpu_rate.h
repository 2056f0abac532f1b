/* SPDX-License-Identifier: MIT */
/*
 * h264_gpu_rate.h — the rate control of the Vulkan compute H.264 encoder (h264_gpu.h): which QP a picture is
 * coded at, which pictures are skipped, and what each coded picture teaches, for the bitrate and frame rate the
 * stream's steering asks in rc_encode_params (bitrate_kbps, fps: the same seam as the CPU encoders). Pure
 * arithmetic on doubles, no Vulkan (it is built and tested without it): the encoder reports each picture's size (FFmpeg's split: ratecontrol.c owns its
 * state, the encoder reports frame_size).
 *
 * The model (named below): a picture's bits go as 2^(−QP/6), the quantizer step of ITU-T H.264 8.5.12 doubling every
 * 6 QP. On it: a QP that moves half-way to the one that would have hit the per-picture target, a leaky bucket of the
 * bits over budget that keeps the QP from falling while in debt and lifts it by a level that falls as the debt is
 * paid, a start QP from the budget, and pictures of skipped macroblocks once QP 51 (with the debt's level) is not
 * enough. Not thread-safe: one per encoder, under the encoder's own rules.
 */
#ifndef RC_H264_GPU_RATE_H
#define RC_H264_GPU_RATE_H

#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"

/* The QP of a paint-over (rc_encode_params.paint): the still picture repainted sharp once motion stops. */
#define RC_H264_RATE_PAINT_QP 24

/* QPs the rate control uses: H.264 allows 0–51 (7.4.2.2, pic_init_qp); below 12 the pictures of a 1080p pan cost
 * several times a fast link for no visible gain (and the refinement sends still pictures lossless anyway). */
#define RC_H264_RATE_QP_MIN 12
#define RC_H264_RATE_QP_MAX 51
/* An IDR picture is coded this many QP below the P pictures (x264's ipratio 1.4 is about 3; one more: an IDR
 * picture is what every following P picture predicts from). */
#define RC_H264_RATE_IDR_OFFSET 4
/* The QP a stream starts from when the budget allows it (and the floor of rc_h264_rate_start). */
#define RC_H264_RATE_QP_START 30

typedef struct rc_h264_rate {
    double qp_p;    /* the QP for P pictures (fractional: moved by the model's steps) */
    double debt;    /* the leaky bucket: bits over budget, decaying DECAY (h264_gpu_rate.c) a picture */
    int started;    /* qp_p was set from the budget at this size (rc_h264_rate_begin) */
    double qp_dense; /* the P QP at which an IDR picture of dense content would fit a few pictures' budget at
                      * this size and budget (rc_h264_rate_begin): IDR pictures are coded no finer than it */
    int probed;      /* a picture has been coded since the reset: the next IDR picture is not the first */
} rc_h264_rate;

/* The model: the bits a picture of `bits` at QP qp would take at QP to_qp. */
double rc_h264_rate_bits_at(double bits, double qp, double to_qp);
/* The model inverted: the QP at which a picture of `bits` at QP qp would take target_bits (> 0). */
double rc_h264_rate_qp_for(double bits, double qp, double target_bits);

/* A new stream or size: QP RC_H264_RATE_QP_START, no debt, not started. */
void rc_h264_rate_reset(rc_h264_rate *r);
/* Before a picture of w × h under a bitrate (p->bitrate_kbps > 0, not a paint-over, no fixed QP): qp_dense, the P
 * QP at which an IDR picture of dense content would cost a few pictures' budget (START_* in h264_gpu_rate.c); the
 * first picture at this size starts qp_p there, or at RC_H264_RATE_QP_START if that is higher. */
void rc_h264_rate_begin(rc_h264_rate *r, uint32_t w, uint32_t h, const rc_encode_params *p, int qp_override);
/* The QP of the next picture: RC_H264_RATE_PAINT_QP for a paint-over (p->paint), else qp_override (12–51) when
 * nonzero, else the rate control's, within the QPs above: for a P picture the controlled QP, qp_p plus the debt's
 * level (6·log2(1 + debt / half a second of budget) while in debt); for an IDR picture RC_H264_RATE_IDR_OFFSET below
 * that or qp_dense, whichever is higher. A still spell (P_Skip pictures of a few
 * bytes) walks qp_p down to 12, and a slide's IDR picture after it cost 2.5 MB, ten seconds of a 2 Mbit/s link
 * (test_h264_gpu_rate's slideshow); a scene cut is coded as an IDR picture (h264_gpu.c), so it is held too. */
int rc_h264_rate_qp(const rc_h264_rate *r, const rc_encode_params *p, int qp_override, int key);
/* The stream's first picture (an IDR picture under the rate control, the first since the last reset), coded at
 * qp, took `bytes`: where that is off the start's aim (START_PICTURES budgets, h264_gpu_rate.c) by over a factor
 * of 2, the QP to code it again at, which the model says hits the aim; qp_p then starts RC_H264_RATE_IDR_OFFSET
 * above it, and later IDR pictures keep qp_dense's floor. Else 0 (not off the aim by that much, already weighed,
 * or held at the QPs' ends).
 * Only the first IDR picture is weighed: the start's density (START_BITS_PER_PIXEL_AT_26) is a guess about content
 * the picture itself answers, and a picture coded too coarse there is what every P picture after it predicts from
 * (a 640×360 rotation at 250 kbit/s: an IDR picture of 1.3 budgets at 32.6 dB, and P pictures 30–33 dB for the
 * next 13, where x264's first picture took 3 budgets at 37.2 dB). */
int rc_h264_rate_retry_idr(rc_h264_rate *r, const rc_encode_params *p, int qp_override, int qp, size_t bytes);
/* A P picture was coded again as an IDR picture at qp (a scene cut, h264_gpu.c): the P pictures after it start no
 * finer than RC_H264_RATE_IDR_OFFSET above it (the content changed; what the old content allowed says nothing).
 * Nothing for paint-overs and fixed QPs. */
void rc_h264_rate_cut(rc_h264_rate *r, const rc_encode_params *p, int qp_override, int qp);
/* 1 if the next picture is to be skipped (sent as a picture of skipped macroblocks) for the bitrate: a P picture
 * under the rate control while the QP is at its top and the bucket holds more than half a picture's budget. */
int rc_h264_rate_skip(const rc_h264_rate *r, const rc_encode_params *p, int qp_override, int key);
/* A picture of `bytes` was sent at qp (key: an IDR picture; skipped: rc_h264_rate_skip's picture, which moves
 * the bucket only). Nothing for paint-overs, a fixed QP (qp_override nonzero), no bitrate or an empty picture,
 * but that the stream has begun (rc_h264_rate_retry_idr weighs only its first picture). */
void rc_h264_rate_done(rc_h264_rate *r, const rc_encode_params *p, int qp_override, int qp, int key, int skipped,
                       size_t bytes);

#endif
