/*
 * rate.c — link estimation from acks and encoder steering (see rate.h for the sources followed).
 */
#include "stream/rate.h"

#include <math.h>
#include <string.h>

void rc_link_init(rc_link *l, double start_bps) {
    memset(l, 0, sizeof(*l));
    l->target_bps = start_bps < RC_LINK_MIN_BPS ? RC_LINK_MIN_BPS : start_bps > RC_LINK_MAX_BPS ? RC_LINK_MAX_BPS : start_bps;
}

double rc_link_bw(const rc_link *l) { return l->bw_bucket[0] > l->bw_bucket[1] ? l->bw_bucket[0] : l->bw_bucket[1]; }

void rc_link_on_send(rc_link *l, int64_t now_us, int in_flight, rc_link_send *rec) {
    /* an empty pipe: the time it stood idle is not delivery time (BBR restarts the interval here) */
    if (in_flight == 0) l->delivered_us = now_us;
    rec->delivered = l->delivered;
    rec->delivered_us = l->delivered_us;
    rec->app_limited = in_flight == 0;
}

int rc_link_window(const rc_link *l, double fps, int min_frames, int max_frames) {
    int w = min_frames;
    if (l->min_rtt_us && fps > 0) {
        double frames = ceil((double)l->min_rtt_us * fps / 1e6) + 1;
        if (frames > w) w = frames > max_frames ? max_frames : (int)frames;
    }
    return w < max_frames ? w : max_frames;
}

void rc_link_on_ack(rc_link *l, const rc_link_send *rec, uint32_t bytes, int64_t sent_us, int64_t now_us) {
    int64_t rtt = now_us - sent_us;
    if (rtt < 0) rtt = 0;
    if (rtt > 60000000) rtt = 60000000;
    l->srtt_us = l->srtt_us ? (uint32_t)((int64_t)l->srtt_us + (rtt - (int64_t)l->srtt_us) / 8) : (uint32_t)rtt;
    if (!l->min_rtt_us || rtt <= l->min_rtt_us || now_us - l->min_rtt_at_us > RC_LINK_RTPROP_US) {
        l->min_rtt_us = (uint32_t)rtt;
        l->min_rtt_at_us = now_us;
    }

    /* the delivery-rate sample */
    l->delivered += bytes;
    int64_t interval = now_us - rec->delivered_us;
    if (interval < 1000) interval = 1000;
    double rate = (double)(l->delivered - rec->delivered) * 8e6 / (double)interval;
    if (now_us - l->bw_bucket_at_us >= RC_LINK_BW_BUCKET_US) {
        l->bw_bucket[1] = now_us - l->bw_bucket_at_us >= 2 * RC_LINK_BW_BUCKET_US ? 0 : l->bw_bucket[0];
        l->bw_bucket[0] = 0;
        l->bw_bucket_at_us = now_us;
    }
    double bw_before = rc_link_bw(l);
    if ((!rec->app_limited || rate > bw_before) && rate > l->bw_bucket[0]) l->bw_bucket[0] = rate;
    l->delivered_us = now_us;
    l->app_limited = rec->app_limited;

    /* the controller */
    int64_t dt = l->last_step_us ? now_us - l->last_step_us : 0;
    if (dt < 0) dt = 0;
    if (dt > 200000) dt = 200000;
    l->last_step_us = now_us;
    int64_t thresh = l->min_rtt_us / 4 > RC_LINK_QUEUE_MIN_US ? l->min_rtt_us / 4 : RC_LINK_QUEUE_MIN_US;
    int64_t queue = (int64_t)l->srtt_us - (int64_t)l->min_rtt_us;
    double bw = rc_link_bw(l);
    /* (On a slow link the first big frames set the minimum round trip themselves; the frames queued behind them
     * still show as a queue, and the cut follows one round trip later.) */
    if (queue > thresh) {
        l->overuse = 1;
        if (now_us - l->last_cut_us >= (int64_t)l->srtt_us + 50000) { /* one cut per round trip */
            double got = rate < bw || bw <= 0 ? rate : bw; /* what the receiver gets now */
            double to = RC_LINK_BETA * got;
            if (to < l->target_bps) l->target_bps = to;
            l->last_cut_us = now_us;
            l->over_bps = got;
        }
    } else {
        l->overuse = 0;
        if (queue < thresh / 2) {
            /* near the rate that last built a queue, probe gently (as CUBIC does near its last maximum); far
             * below it (recovering) or past it (the link got better), fast */
            double g = RC_LINK_GROWTH;
            if (l->over_bps > 0 && now_us - l->last_cut_us < RC_LINK_RTPROP_US && l->target_bps > 0.5 * l->over_bps &&
                l->target_bps < 1.2 * l->over_bps)
                g = RC_LINK_GROWTH_NEAR;
            double grown = l->target_bps * exp(g * (double)dt / 1e6);
            /* growth stops at twice what was measured: an application-limited sender cannot tell more than that */
            double cap = 2 * (bw > 0 ? bw : RC_LINK_MIN_BPS);
            if (grown > cap) grown = cap > l->target_bps ? cap : l->target_bps;
            l->target_bps = grown;
        }
    }
    if (l->target_bps < RC_LINK_MIN_BPS) l->target_bps = RC_LINK_MIN_BPS;
    if (l->target_bps > RC_LINK_MAX_BPS) l->target_bps = RC_LINK_MAX_BPS;
}

/* ---- steering ---- */

void rc_steer_init(rc_steer *s, int q_top, double top_bps) {
    memset(s, 0, sizeof(*s));
    s->quality = q_top > 0 ? q_top : 100;
    s->scale_div = 1;
    s->bitrate_bps = top_bps;
}

/* Relative JPEG size at quality q. libjpeg scales its quantization tables by S = 5000/q (q < 50) or 200 - 2q
 * (jcparam.c, jpeg_quality_scaling); on our corpus the file size goes roughly as S^-0.6 (q50 → q75: ×1.5,
 * q75 → q90: ×1.7). Only ratios of this are used, from the size last measured. */
static double jpeg_size_model(int q) {
    double s = q < 50 ? 5000.0 / q : 200.0 - 2.0 * q;
    if (s < 1) s = 1;
    return pow(s, -0.6);
}

void rc_steer_image(rc_steer *s, int q_top, double budget_bps, double fps, uint64_t pixels, uint64_t bytes) {
    if (!(fps > 0) || !pixels || !bytes) return;
    int lossless = q_top <= 0;
    double frame_budget = budget_bps / 8 / fps; /* bytes */
    double d0 = s->scale_div;
    double per_px = (double)bytes / (double)pixels; /* at quality s->quality, scale d0 */
    /* predicted bytes of the next frame at quality q and scale d (pixels scale with 1/d²) */
#define PRED(q, d) (per_px * (lossless ? 1.0 : jpeg_size_model(q) / jpeg_size_model(s->quality)) * (double)pixels * \
                    (d0 * d0) / ((double)(d) * (d)))
    int qmin = lossless ? 0 : (q_top < RC_STEER_Q_MIN ? q_top : RC_STEER_Q_MIN);
    double fps_floor = fps < RC_STEER_FPS_MIN ? fps : RC_STEER_FPS_MIN;
    /* the largest size (smallest divisor) at which the quality floor still gives the frame-rate floor; going to a
     * larger size than now needs 30 % to spare, so the size does not flap */
    int d = 1;
    for (; d < RC_STEER_SCALE_MAX; d *= 2) {
        double need = PRED(qmin, d) * 8 * fps_floor * (d < d0 ? 1.3 : 1.0);
        if (need <= budget_bps) break;
    }
    double at_floor = PRED(qmin, d);
    if (at_floor * fps * 8 > budget_bps) { /* even the lowest quality is too big at full rate: cap the rate */
        s->quality = lossless ? s->quality : qmin;
        s->fps_cap = budget_bps / 8 / at_floor;
    } else {
        s->fps_cap = 0;
        if (!lossless) {
            int q = qmin;
            while (q < q_top && PRED(q + 1, d) <= frame_budget) q++;
            /* down at once; up only past a dead band (the model is rough; the next frame corrects it) */
            if (q < s->quality || q >= s->quality + 3 || d != s->scale_div) s->quality = q;
            if (s->quality > q_top) s->quality = q_top;
        }
    }
    s->scale_div = d;
#undef PRED
}

void rc_steer_video(rc_steer *s, double top_bps, double budget_bps, double fps, uint64_t pixels) {
    if (!(fps > 0) || !pixels) return;
    s->bitrate_bps = budget_bps < top_bps ? budget_bps : top_bps;
    double fps_floor = fps < RC_STEER_FPS_MIN ? fps : RC_STEER_FPS_MIN;
    int d = 1;
    for (; d < RC_STEER_SCALE_MAX; d *= 2) {
        double need = RC_STEER_VIDEO_BPP * (double)pixels / ((double)d * d) * fps_floor * (d < s->scale_div ? 1.3 : 1.0);
        if (need <= s->bitrate_bps) break;
    }
    double full = RC_STEER_VIDEO_BPP * (double)pixels / ((double)d * d) * fps;
    s->fps_cap = full > s->bitrate_bps ? s->bitrate_bps / (RC_STEER_VIDEO_BPP * (double)pixels / ((double)d * d)) : 0;
    s->scale_div = d;
}
