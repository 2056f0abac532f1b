/* SPDX-License-Identifier: MIT */
/*
 * h264_gpu_rate.c — the rate control of the Vulkan compute H.264 encoder (h264_gpu_rate.h has the model).
 */
#include "codec/gpu/h264_gpu_rate.h"

#include <math.h>

/* The QP step: bits halve every 6 QP (H.264 8.5.12's quantizer step, Qstep doubling every 6). */
#define QP_PER_OCTAVE 6.0
/* After a P picture the QP moves this fraction of the way to the one that would have hit the target: one
 * picture's size is noisy (its content, the motion search's luck), two halves converge within a few pictures. */
#define STEP_GAIN 0.5
/* At most this many QP a picture either way (1.6× the bits): one picture far off its budget (a cut, a burst of
 * detail) moves the QP over a few pictures, not at once, so the next ones do not swing as far the other way. */
#define STEP_MAX 4.0
/* The bucket forgets 3 % a picture (about a second at 30 fps): an old overshoot is not paid for forever. */
#define DECAY 0.97
/* ... and holds at most a second of savings (a still spell must not buy a burst of big pictures). */
#define SAVINGS_S 1.0
/* In debt, the QP is 6·log2(1 + debt / this many seconds of budget) above qp_p (debt_qp): a slideshow of cuts (IDR
 * pictures between still P pictures of a few bytes) settles at its bitrate too. */
#define DEBT_S 0.5
/* The start: the IDR picture that opens the stream should cost about this many pictures' budget on dense content
 * (a quarter of a second at 30 fps), ... */
#define START_PICTURES 8.0
/* ... taken to need this many bits a pixel at QP 26 (a 1080p pan over 32 coloured signals codes its IDR picture at
 * 3.7, a plot at less than 1: the middle of those). Before this start the stream began at QP 30 at any budget: at
 * 2 Mbit/s and 60 pictures a second the first 1080p picture took 960 kB, four seconds of that link. */
#define START_BITS_PER_PIXEL_AT_26 2.0
/* Skip pictures from this QP (51, less the rounding of the controlled QP, qp_p + debt_qp) ... */
#define SKIP_QP 50.5
/* ... while the bucket holds more than this many pictures' budget. At QP 51 the pictures of dense motion can
 * still cost many times the budget (test_h264_gpu's 1080p pan at 2 Mbit/s and 60 fps: about 20 kB a coded picture
 * against 4.2 kB), and QP has nowhere to go: the viewer sees fewer pictures rather than late ones, the coded ones
 * keep QP 51's quality and the stream its bitrate (that pan: 12 pictures of 60 coded, 1789 kbit/s; at 1000 kbit/s
 * 5 of 60, 761 kbit/s: one coded picture more or less is a sixth of that rate). */
#define SKIP_DEBT_PICTURES 0.5

double rc_h264_rate_bits_at(double bits, double qp, double to_qp) {
    return bits * pow(2.0, (qp - to_qp) / QP_PER_OCTAVE);
}

double rc_h264_rate_qp_for(double bits, double qp, double target_bits) {
    return qp + QP_PER_OCTAVE * log2(bits / target_bits);
}

static double clamp_qp(double q) {
    return q < RC_H264_RATE_QP_MIN ? RC_H264_RATE_QP_MIN : q > RC_H264_RATE_QP_MAX ? RC_H264_RATE_QP_MAX : q;
}

static int controlled(const rc_encode_params *p, int qp_override) {
    return p && !p->paint && !qp_override && p->bitrate_kbps > 0;
}

static double fps_of(const rc_encode_params *p) { return p->fps > 0 ? p->fps : 30; }

/* bits a picture may take: the bitrate over the frame rate asked */
static double picture_budget(const rc_encode_params *p) { return p->bitrate_kbps * 1000.0 / fps_of(p); }

void rc_h264_rate_reset(rc_h264_rate *r) {
    r->qp_p = RC_H264_RATE_QP_START;
    r->qp_dense = RC_H264_RATE_QP_MIN; /* no floor until a bitrate is known */
    r->debt = 0;
    r->started = 0;
    r->probed = 0;
}

void rc_h264_rate_begin(rc_h264_rate *r, uint32_t w, uint32_t h, const rc_encode_params *p, int qp_override) {
    if (!controlled(p, qp_override)) return;
    /* the P QP whose IDR picture (RC_H264_RATE_IDR_OFFSET below) takes START_PICTURES budgets by the model */
    double idr_bits = START_BITS_PER_PIXEL_AT_26 * w * h;
    r->qp_dense = clamp_qp(rc_h264_rate_qp_for(idr_bits, 26, START_PICTURES * picture_budget(p)) +
                           RC_H264_RATE_IDR_OFFSET);
    if (!r->started) r->qp_p = r->qp_dense < RC_H264_RATE_QP_START ? RC_H264_RATE_QP_START : r->qp_dense;
    r->started = 1;
}

/* The first IDR picture is coded again where it missed the start's aim by more than this factor either way (the
 * model's law is a rough one over 20 QP: one retry lands within it on the shared corpus). */
#define RETRY_FACTOR 2.0

int rc_h264_rate_retry_idr(rc_h264_rate *r, const rc_encode_params *p, int qp_override, int qp, size_t bytes) {
    if (!controlled(p, qp_override) || r->probed || !bytes) return 0;
    r->probed = 1;
    double aim = START_PICTURES * picture_budget(p), bits = (double)bytes * 8.0;
    if (bits > aim / RETRY_FACTOR && bits < aim * RETRY_FACTOR) return 0;
    double q = clamp_qp(round(rc_h264_rate_qp_for(bits, qp, aim)));
    if (fabs(q - qp) < 2) return 0; /* held at the QPs' ends */
    /* the P pictures start RC_H264_RATE_IDR_OFFSET above it, as rc_h264_rate_begin meant them to; later IDR
     * pictures keep qp_dense's floor (a dense slide after a light start must not cost seconds of the link). A blank
     * first picture (a canvas before its first drawing) is small at any QP and says nothing of what comes next: the
     * encoder's scene-cut rule, seeded by this picture, codes a dense one after it as an IDR picture at that floor
     * (rc_h264_rate_cut), not as a P picture at QP 16. */
    r->qp_p = clamp_qp(q + RC_H264_RATE_IDR_OFFSET);
    return (int)q;
}

void rc_h264_rate_cut(rc_h264_rate *r, const rc_encode_params *p, int qp_override, int qp) {
    if (!controlled(p, qp_override)) return;
    r->qp_p = fmax(r->qp_p, clamp_qp(qp + RC_H264_RATE_IDR_OFFSET));
}

/* The QP above qp_p while in debt: 6·log2(1 + debt / DEBT_S seconds of budget), as a level that falls as the debt is
 * paid (not a step a picture: added up over the pictures after an IDR picture, those steps drove a pan's P pictures
 * up in QP and their quality down 1.3 dB a picture). */
static double debt_qp(const rc_h264_rate *r, const rc_encode_params *p) {
    if (r->debt <= 0 || !p || p->bitrate_kbps <= 0) return 0; /* no bitrate: no budget to be in debt to */
    return QP_PER_OCTAVE * log2(1 + r->debt / (picture_budget(p) * fps_of(p) * DEBT_S));
}

/* The QP the next P picture gets under the rate control. */
static double controlled_qp(const rc_h264_rate *r, const rc_encode_params *p) {
    return clamp_qp(r->qp_p + debt_qp(r, p));
}

int rc_h264_rate_qp(const rc_h264_rate *r, const rc_encode_params *p, int qp_override, int key) {
    double qp;
    if (p && p->paint) qp = RC_H264_RATE_PAINT_QP;
    else if (qp_override) qp = qp_override;
    else if (key) qp = lround(fmax(controlled_qp(r, p), r->qp_dense)) - RC_H264_RATE_IDR_OFFSET; /* not finer than qp_dense's */
    else qp = lround(controlled_qp(r, p));
    return (int)clamp_qp(qp);
}

int rc_h264_rate_skip(const rc_h264_rate *r, const rc_encode_params *p, int qp_override, int key) {
    if (key || !controlled(p, qp_override)) return 0;
    return controlled_qp(r, p) >= SKIP_QP && r->debt > SKIP_DEBT_PICTURES * picture_budget(p);
}

void rc_h264_rate_done(rc_h264_rate *r, const rc_encode_params *p, int qp_override, int qp, int key, int skipped,
                       size_t bytes) {
    r->probed = 1; /* whatever it was: the next IDR picture is not the stream's first */
    if (!controlled(p, qp_override) || !bytes) return;
    double fps = fps_of(p), target = picture_budget(p), bits = (double)bytes * 8.0;
    r->debt = r->debt * DECAY + bits - target;
    if (r->debt < -target * fps * SAVINGS_S) r->debt = -target * fps * SAVINGS_S;
    if (skipped) return; /* the QP stays: the controlled QP is at its top */
    /* a P picture moves qp_p by the step its size asks from the QP it was coded at (no lower while in debt: the
     * debt's own level, debt_qp, pays it); an IDR picture (coded below the P QP, or held at qp_dense's) does not */
    double step = key ? 0 : (rc_h264_rate_qp_for(bits, qp, target) - qp) * STEP_GAIN;
    if (r->debt > 0) step = fmax(step, 0);
    step = step > STEP_MAX ? STEP_MAX : step < -STEP_MAX ? -STEP_MAX : step;
    r->qp_p = clamp_qp(r->qp_p + step);
}
