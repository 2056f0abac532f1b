/* SPDX-License-Identifier: MIT */
/*
 * rate.c — link estimation from acks and encoder steering (see rate.h for the sources followed).
 */
#include "stream/rate.h"

#include <limits.h>
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

int rc_link_full(const rc_link *l, int n_inflight, uint64_t inflight_bytes) {
    double bw = rc_link_bw(l);
    return n_inflight > 0 && bw > 0 && (double)inflight_bytes * 8e6 / bw > RC_LINK_INFLIGHT_CAP_US &&
           l->srtt_us > l->min_rtt_us + RC_LINK_QUEUE_MIN_US;
}

int rc_link_window(const rc_link *l, double fps, int min_frames, int max_frames) {
    int w = min_frames;
    if (l->min_rtt_us && fps > 0) {
        double frames = ceil((double)l->min_rtt_us * fps / 1e6) + 1;
        if (frames > w) w = frames > max_frames ? max_frames : (int)frames;
    }
    return w < max_frames ? w : max_frames;
}

/* One trendline sample: the frame sent at sent_us arrived at arrival_us (server clock, plus a constant: the ack's
 * way back). Updates l->trend and the adaptive threshold; returns the detector's state (1, 0, -1). */
static int trendline(rc_link *l, int64_t sent_us, int64_t arrival_us) {
    if (!l->prev_arrival_us) {
        l->prev_arrival_us = l->first_arrival_us = arrival_us;
        l->prev_sent_us = sent_us;
        l->gamma_ms = 12.5;
        return 0;
    }
    double dt_ms = (double)(arrival_us - l->prev_arrival_us) / 1000;
    double delta = dt_ms - (double)(sent_us - l->prev_sent_us) / 1000;
    l->prev_arrival_us = arrival_us;
    l->prev_sent_us = sent_us;
    l->num_deltas++;
    l->acc_delay_ms += delta;
    l->smoothed_delay_ms = 0.9 * l->smoothed_delay_ms + 0.1 * l->acc_delay_ms; /* WebRTC's smoothing coefficient */
    l->trend_t[l->trend_i] = (double)(arrival_us - l->first_arrival_us) / 1000;
    l->trend_d[l->trend_i] = l->smoothed_delay_ms;
    l->trend_i = (l->trend_i + 1) % RC_TREND_N;
    if (l->trend_n < RC_TREND_N) l->trend_n++;
    /* WebRTC waits for a full window; a viewer on a slow link gets a few frames a second, so 20 would take it
     * seconds: from RC_TREND_MIN on, the regression runs over what there is (the ring fills from slot 0) */
    int n = l->trend_n;
    if (n < RC_TREND_MIN) return 0;
    double mt = 0, md = 0;
    for (int i = 0; i < n; i++) {
        mt += l->trend_t[i];
        md += l->trend_d[i];
    }
    mt /= n;
    md /= n;
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num += (l->trend_t[i] - mt) * (l->trend_d[i] - md);
        den += (l->trend_t[i] - mt) * (l->trend_t[i] - mt);
    }
    double slope = den > 0 ? num / den : 0;
    l->prev_trend = l->trend;
    l->trend = slope * (l->num_deltas < 60 ? l->num_deltas : 60) * 4; /* WebRTC: threshold gain 4 */
    double m = l->trend;
    int state = 0;
    if (m > l->gamma_ms) {
        l->overuse_ms += dt_ms;
        if (l->overuse_ms > 10 && m >= l->prev_trend) state = 1; /* overusing for 10 ms and not easing */
    } else {
        l->overuse_ms = 0;
        if (m < -l->gamma_ms) state = -1;
    }
    /* the adaptive threshold (GCC 5.4): follows |m| up slowly, down faster; spikes do not move it */
    double am = fabs(m);
    if (am - l->gamma_ms <= 15) {
        double k = am < l->gamma_ms ? 0.039 : 0.0087;
        l->gamma_ms += k * (am - l->gamma_ms) * (dt_ms < 100 ? dt_ms : 100);
        if (l->gamma_ms < 6) l->gamma_ms = 6;
        if (l->gamma_ms > 600) l->gamma_ms = 600;
    }
    return state;
}

void rc_link_on_ack(rc_link *l, const rc_link_send *rec, uint32_t bytes, int64_t sent_us, int64_t now_us,
                    uint32_t hold_us, int timed) {
    /* the client's own time is not the network's: the round trip the link sees ends when the frame arrived */
    int64_t arrived = hold_us && now_us - (int64_t)hold_us > sent_us ? now_us - (int64_t)hold_us : now_us;
    int64_t rtt = arrived - sent_us;
    if (rtt < 0) rtt = 0;
    if (rtt > 60000000) rtt = 60000000;
    l->srtt_us = l->srtt_us ? (uint32_t)((int64_t)l->srtt_us + (rtt - (int64_t)l->srtt_us) / 8) : (uint32_t)rtt;
    if (!l->min_rtt_us || rtt <= l->min_rtt_us || now_us - l->min_rtt_at_us > RC_LINK_RTPROP_US) {
        l->min_rtt_us = (uint32_t)rtt;
        l->min_rtt_at_us = now_us;
    }

    /* the delivery-rate sample, timed by arrival, not by ack: a client that decodes slowly acks late, and that is
     * not the link's rate (the delivered time never goes back, though holds vary) */
    int64_t delivered_at = arrived > l->delivered_us ? arrived : l->delivered_us;
    l->delivered += bytes;
    int64_t interval = delivered_at - rec->delivered_us;
    if (interval < 1000) interval = 1000;
    double rate = (double)(l->delivered - rec->delivered) * 8e6 / (double)interval;
    if (now_us - l->bw_bucket_at_us >= RC_LINK_BW_BUCKET_US) {
        l->bw_bucket[1] = now_us - l->bw_bucket_at_us >= 2 * RC_LINK_BW_BUCKET_US ? 0 : l->bw_bucket[0];
        l->bw_bucket[0] = 0;
        l->bw_bucket_at_us = now_us;
    }
    double bw_before = rc_link_bw(l);
    if ((!rec->app_limited || rate > bw_before) && rate > l->bw_bucket[0]) l->bw_bucket[0] = rate;
    if (!rec->app_limited || rate > l->rate_ewma) /* a sample after an idle pipe says nothing lower */
        l->rate_ewma = l->rate_ewma > 0 ? l->rate_ewma + (rate - l->rate_ewma) / 4 : rate;
    l->delivered_us = delivered_at;
    l->app_limited = rec->app_limited;
    if (!timed) return;

    /* the controller */
    int state = trendline(l, sent_us, arrived);
    /* a delay trend while the encoder or this viewer's decoder is saturated, with no frame waiting for the link
     * (l->blocked, below, still cuts), is that CPU's: a starved machine writes and reads its frames late, each a
     * little later than the one before while it falls behind, and that is no queue in the network (seen: the 1080p
     * demo through 20 Mbit/s cut to 810 kbit/s and 13 fps with the shaper's queue empty, on a loaded 2-core
     * machine). A standing queue over qmax (below) counts whatever the CPUs do. */
    if (state > 0 && l->cpu_bound) state = 0;
    int64_t dt = l->last_step_us ? now_us - l->last_step_us : 0;
    if (dt < 0) dt = 0;
    if (dt > 200000) dt = 200000;
    l->last_step_us = now_us;
    int64_t queue = (int64_t)l->srtt_us - (int64_t)l->min_rtt_us;
    int64_t qmax = l->min_rtt_us > RC_LINK_QUEUE_MAX_US ? l->min_rtt_us : RC_LINK_QUEUE_MAX_US;
    if (queue > qmax) state = 1;
    double bw = rc_link_bw(l);
    l->overuse = state;
    int blocked = l->blocked;
    l->blocked = 0;
    l->blocked_acks = blocked ? l->blocked_acks + 1 : 0;
    if (state <= 0 && blocked) {
        /* far above what arrives (growth never takes it past 1.6× the rate), or above it for 3 acks in a row (a
         * growing target outruns the rate it is measured against for an ack or two): down to the rate; else hold */
        if (bw > 0 && (l->target_bps > 2 * bw || (l->blocked_acks >= 3 && l->target_bps > 1.2 * bw)) &&
            now_us - l->last_cut_us >= (int64_t)l->srtt_us + 50000) {
            l->target_bps = bw;
            l->last_cut_us = now_us;
            l->over_bps = bw;
        }
        state = -1; /* no growth on this ack */
    }
    if (state > 0) {
        if (now_us - l->last_cut_us >= (int64_t)l->srtt_us + 50000) { /* one cut per round trip */
            double got = l->rate_ewma < bw || bw <= 0 ? l->rate_ewma : bw; /* what the receiver gets now */
            double to = RC_LINK_BETA * got;
            if (to < l->target_bps) l->target_bps = to;
            l->last_cut_us = now_us;
            l->over_bps = got;
        }
    } else if (state == 0) {
        /* near the rate that last built a queue, probe gently (as CUBIC does near its last maximum); far below it
         * (recovering) or past it (the link got better), fast */
        double g = RC_LINK_GROWTH;
        if (l->over_bps > 0 && now_us - l->last_cut_us < RC_LINK_RTPROP_US && l->target_bps > 0.8 * l->over_bps &&
            l->target_bps < 1.1 * l->over_bps)
            g = RC_LINK_GROWTH_NEAR;
        double grown = l->target_bps * exp(g * (double)dt / 1e6);
        /* growth stops a step above what was measured (BBR probes at 1.25× too): an application-limited sender
         * knows no more than that, and a bigger overshoot would cost a queue (and a size or quality jump) */
        double cap = (g == RC_LINK_GROWTH ? RC_LINK_PROBE_GAIN_FAST : RC_LINK_PROBE_GAIN) * (bw > 0 ? bw : RC_LINK_MIN_BPS);
        if (grown > cap) grown = cap > l->target_bps ? cap : l->target_bps;
        l->target_bps = grown;
    } /* underuse: a queue drains; hold */
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
    /* a lossless codec was chosen for exact pixels: its frame rate gives, never its size */
    double fps_floor = lossless ? 0 : fps < RC_STEER_FPS_MIN ? fps : RC_STEER_FPS_MIN;
    /* the largest size (smallest divisor) at which the quality floor still gives the frame-rate floor; going to a
     * larger size than now needs 30 % to spare, so the size does not flap */
    /* never larger than the CPUs allow (rc_steer_cpu); and a lower quality while they limit */
    int dmin = !lossless && s->cpu_div > 1 ? s->cpu_div : 1;
    if (dmin > 1 && q_top > RC_CPU_Q_MAX) q_top = RC_CPU_Q_MAX;
    int d = dmin;
    for (; d < RC_STEER_SCALE_MAX && !lossless; d *= 2) {
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
            if (q < s->quality || q >= s->quality + 3 || q == q_top || d != s->scale_div) s->quality = q;
            if (s->quality > q_top) s->quality = q_top;
        }
    }
    s->scale_div = d;
#undef PRED
}

int rc_steer_rate_allows(rc_steer *s, int64_t now_us) {
    if (!(s->fps_cap > 0)) {
        s->cap_next_us = now_us;
        return 1;
    }
    int64_t iv = (int64_t)(1e6 / s->fps_cap);
    if (now_us + 2000 < s->cap_next_us) return 0; /* 2 ms early is on time */
    s->cap_next_us = (s->cap_next_us > now_us - iv ? s->cap_next_us : now_us - iv) + iv;
    return 1;
}

void rc_steer_started(rc_steer *s, int64_t now_us) {
    if (s->started_us && now_us > s->started_us) { /* the rate this encoder actually starts frames at */
        double f = 1e6 / (double)(now_us - s->started_us);
        s->enc_fps = s->enc_fps > 0 ? s->enc_fps + (f - s->enc_fps) / 8 : f;
    }
    s->started_us = now_us;
}

void rc_steer_encoded(rc_steer *s, double us, int whole, int video_keyframe) {
    if (s->enc_div <= 0 || !whole || video_keyframe || !(us >= 0)) return;
    s->enc_us = s->enc_us > 0 ? s->enc_us + (us - s->enc_us) / 4 : us;
    rc_cost_sample(&s->enc_cost, s->enc_div, us);
}

void rc_steer_small_done(rc_steer *s, uint64_t bytes, uint64_t pixels) {
    if (!pixels) return;
    double bpp = (double)bytes / (double)pixels;
    s->small_bpp = bpp < RC_SMALL_MAX_BPP ? bpp : RC_SMALL_MAX_BPP;
}

/* bits of one frame at 1/d of the size (rc_steer_video) */
static double video_frame_bits(const rc_steer *s, uint64_t pixels, int d) {
    double area = RC_STEER_VIDEO_BPP * (double)pixels / ((double)d * d), seen = s->video_bits / d;
    return seen > area ? seen : area;
}

void rc_steer_video(rc_steer *s, double top_bps, double budget_bps, double fps, uint64_t pixels) {
    if (!(fps > 0) || !pixels) return;
    s->bitrate_bps = budget_bps < top_bps ? budget_bps : top_bps;
    double fps_floor = fps < RC_STEER_FPS_MIN ? fps : RC_STEER_FPS_MIN;
    /* the smallest size-divisor whose frames fit at fps_floor, with a dead band of RC_STEER_SIZE_BAND around the
     * size now: a larger size must fit with that much to spare, the size now is kept until its frames need that
     * much more than the budget (the frame-rate cap gives meanwhile, a little under fps_floor): each step restarts
     * the encoder, and the restart's keyframe itself dips the budget */
    int cur = s->scale_div > 0 ? s->scale_div : 1, d = s->cpu_div > 1 ? s->cpu_div : 1; /* the CPUs' size at most */
    for (; d < RC_STEER_SCALE_MAX; d *= 2) {
        double m = d < cur ? RC_STEER_SIZE_BAND : d == cur ? 1 / RC_STEER_SIZE_BAND : 1.0;
        double need = video_frame_bits(s, pixels, d) * fps_floor * m;
        if (need <= s->bitrate_bps) break;
    }
    if (d < s->scale_div && ++s->size_up_calls < RC_STEER_SIZE_UP_CALLS) d = s->scale_div; /* not yet */
    else s->size_up_calls = 0;
    double frame_bits = video_frame_bits(s, pixels, d);
    s->fps_cap = frame_bits * fps > s->bitrate_bps ? s->bitrate_bps / frame_bits : 0;
    if (s->fps_cap > 0 && s->fps_cap < 1) s->fps_cap = 1; /* a frame a second at worst, at the smallest size */
    s->scale_div = d;
}

/* the median of v[0..n) (n ≤ 12), v reordered */
static double median(double *v, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void rc_steer_video_target(rc_steer *s, double target_bytes) {
    s->video_since_cut = target_bytes < 0.95 * s->video_target_bytes ? 0 : s->video_since_cut + 1;
    s->video_target_bytes = target_bytes;
}

void rc_steer_video_done(rc_steer *s, int keyframe, int paint, uint64_t bytes) {
    if (paint || s->video_painted) { /* a paint-over's size is its fixed quantizer's, not the rate control's */
        s->video_painted = paint;
        if (keyframe) s->video_since_key = 0;
        return;
    }
    if (keyframe) s->video_since_key = 0;
    else if (++s->video_since_key > RC_VIDEO_SETTLE_FRAMES && s->video_since_cut > RC_VIDEO_SETTLE_FRAMES)
        rc_steer_video_frame(s, bytes, s->video_target_bytes);
}

void rc_steer_video_frame(rc_steer *s, uint64_t bytes, double target_bytes) {
    int d = s->scale_div > 0 ? s->scale_div : 1;
    if (!bytes || !(target_bytes > 0)) return;
    double full = (double)bytes * 8 * d, want = target_bytes * 8 * d;
    if (s->video_samples < RC_STEER_VIDEO_SAMPLES) { /* the first ones: their medians start the averages */
        s->video_first[0][s->video_samples] = full;
        s->video_first[1][s->video_samples] = want;
        if (++s->video_samples < RC_STEER_VIDEO_SAMPLES) return;
        s->video_avg_bits = median(s->video_first[0], RC_STEER_VIDEO_SAMPLES);
        s->video_avg_target = median(s->video_first[1], RC_STEER_VIDEO_SAMPLES);
    } else {
        /* averages over every P-frame (1/8 a frame), not the big ones alone: openh264 meets its target on average,
         * one frame may be well over it */
        if (full > 2 * s->video_avg_bits) full = 2 * s->video_avg_bits; /* an outlier */
        s->video_avg_bits += (full - s->video_avg_bits) / 8;
        s->video_avg_target += (want - s->video_avg_target) / 8;
    }
    if (s->video_avg_bits > RC_STEER_VIDEO_OVER * s->video_avg_target) s->video_bits = s->video_avg_bits;
    else s->video_bits *= 0.98; /* meets its target: forget the floor within a second or two */
}

/* ---- what limits the frame rate (rate.h) ---- */

const char *rc_limit_name(int limit) {
    switch (limit) {
    case RC_LIMIT_LINK: return "link";
    case RC_LIMIT_ENCODER: return "encoder";
    case RC_LIMIT_DECODER: return "decoder";
    default: return "none";
    }
}

int rc_cpu_busy(double cost_us, double frames_per_s) {
    return cost_us > 0 && frames_per_s > 0 && cost_us * frames_per_s >= RC_CPU_BUSY * 1e6;
}

static int div_index(int div) { return div == 1 ? 0 : div == 2 ? 1 : div == 4 ? 2 : -1; }

void rc_cost_sample(rc_cost *c, int div, double us) {
    int i = div_index(div);
    if (i < 0 || !(us > 0)) return;
    c->at[i] = c->at[i] > 0 ? c->at[i] + (us - c->at[i]) / 4 : us;
    c->seen[i] = c->seen[i] > 0 ? c->seen[i] + (us - c->seen[i]) / 4 : us;
    if (c->n[i] < RC_CPU_SAMPLES) c->n[i]++;
    for (int k = 0; k < i; k++) c->at[k] *= RC_CPU_FORGET; /* the larger sizes, not measured meanwhile */
    for (int k = i + 1; k < 3; k++) c->seen[k] *= RC_CPU_RETRY_FORGET; /* the smaller ones: tried again some day */
}

/* the cost measured at 1/div (RC_CPU_SAMPLES frames), not forgotten for a smaller size's sake; 0 = not measured */
static double cost_seen(const rc_cost *c, int div) {
    int i = div_index(div);
    return c && i >= 0 && c->n[i] >= RC_CPU_SAMPLES ? c->seen[i] : 0;
}

int rc_cost_shrink_pays(const rc_cost *enc, const rc_cost *dec, int big, int small) {
    double b = fmax(cost_seen(enc, big), cost_seen(dec, big)), s = fmax(cost_seen(enc, small), cost_seen(dec, small));
    if (!(b > 0) || !(s > 0)) return 1;
    return s < RC_CPU_PAYS * b;
}

double rc_cost_predict(const rc_cost *c, int div) {
    int i = div_index(div);
    if (!c || i < 0) return 0;
    if (c->at[i] > 0 && c->n[i] >= RC_CPU_SAMPLES) return c->at[i];
    /* from the sizes measured, by area, the lowest: from a larger size that is optimistic (a frame's fixed costs do
     * not shrink), which the next measurements correct; from a smaller one it is pessimistic (its fixed costs, and
     * on a starved machine its waits, grow by the area too), so a larger size measured before, its figure fading,
     * is what lets a size between them be tried again */
    double best = 0;
    for (int k = 0; k < 3; k++)
        if (k != i && c->at[k] > 0 && c->n[k] >= RC_CPU_SAMPLES) {
            double r = (double)(1 << k) / div; /* its divisor over ours: the linear size ratio */
            if (!(best > 0) || c->at[k] * r * r < best) best = c->at[k] * r * r;
        }
    return best;
}

void rc_steer_cpu(rc_steer *s, int q_top, double goal_fps, const rc_cost *enc, const rc_cost *dec, int up_calls,
                  uint64_t pixels) {
    if (!(goal_fps > 0)) return;
    double fps = goal_fps < RC_CPU_FPS_MAX ? goal_fps : RC_CPU_FPS_MAX;
    double frame_us = 1e6 / fps;
#define COST(d) fmax(rc_cost_predict(enc, d), rc_cost_predict(dec, d))
    int dmax = 1; /* the smallest size it may take */
    while (!s->keep_size && dmax < RC_STEER_SCALE_MAX && pixels / (uint64_t)(4 * dmax * dmax) >= RC_CPU_MIN_PX) dmax *= 2;
    int cur = s->cpu_div > 1 ? s->cpu_div : 1;
    if (cur > dmax) cur = dmax;
    if (cur > 1 && !rc_cost_shrink_pays(enc, dec, cur / 2, cur)) { /* it bought nothing: the larger size back */
        cur /= 2;
        s->cpu_up_calls = 0;
    } else if (COST(cur) > RC_CPU_BUSY * frame_us) { /* smaller at once: every frame late costs frames */
        while (cur < dmax && COST(cur) > RC_CPU_BUSY * frame_us && rc_cost_shrink_pays(enc, dec, cur, cur * 2)) {
            cur *= 2;
            /* a size measured before (a retry of one that did not pay): one step, and its frames tell the rest */
            if (cost_seen(enc, cur) > 0 || cost_seen(dec, cur) > 0) break;
        }
        s->cpu_up_calls = 0;
    } else if (cur > 1 && COST(cur / 2) <= RC_CPU_UP * frame_us) {
        if (++s->cpu_up_calls >= up_calls) { /* larger only once it has fitted for a while */
            cur /= 2;
            s->cpu_up_calls = 0;
        }
    } else {
        s->cpu_up_calls = 0;
    }
    s->cpu_div = cur;
    if (cur > 1)
        s->limit = rc_cost_predict(enc, cur / 2) >= rc_cost_predict(dec, cur / 2) ? RC_LIMIT_ENCODER : RC_LIMIT_DECODER;
    else if (COST(1) > RC_CPU_BUSY * frame_us) /* busy at full size, where no smaller size paid */
        s->limit = rc_cost_predict(enc, 1) >= rc_cost_predict(dec, 1) ? RC_LIMIT_ENCODER : RC_LIMIT_DECODER;
    else if (s->fps_cap > 0 || s->scale_div > 1 || (q_top > 0 && s->quality < q_top)) s->limit = RC_LIMIT_LINK;
    else s->limit = RC_LIMIT_NONE;
#undef COST
}

static void screen_set(rc_screen_mode *m, int on) {
    if (on != m->on) m->frames = 0;
    m->on = on;
    m->votes = 0;
}

int rc_screen_mode_step(rc_screen_mode *m, int looked, int fine_detail, int behind, int64_t now_us) {
    if (m->frames < INT_MAX) m->frames++;
    if (m->on && behind && m->frames > RC_SCREEN_SETTLE) {
        m->backoff_us = m->backoff_us ? 2 * m->backoff_us : RC_SCREEN_RETRY_US;
        if (m->backoff_us > RC_SCREEN_RETRY_MAX_US) m->backoff_us = RC_SCREEN_RETRY_MAX_US;
        m->off_until_us = now_us + m->backoff_us;
        screen_set(m, 0);
        return 0;
    }
    if (!looked) return m->on;
    m->plain = fine_detail ? 0 : m->plain < INT_MAX ? m->plain + 1 : INT_MAX;
    if (m->plain >= RC_SCREEN_VOTES) m->backoff_us = 0, m->off_until_us = 0; /* other content: start afresh */
    int want = fine_detail && now_us >= m->off_until_us;
    if (!m->known) {
        m->known = 1;
        screen_set(m, want);
    } else if (want == m->on) {
        m->votes = 0;
    } else if (++m->votes >= RC_SCREEN_VOTES) {
        screen_set(m, want);
    }
    return m->on;
}

double rc_video_fill_fps(double fps, double enc_us) {
    if (!(enc_us > 0) || !(fps > 0) || !rc_cpu_busy(enc_us, fps)) return fps;
    double can = 1e6 / enc_us; /* what the encoder makes at most, whatever the link takes */
    if (can >= 0.9 * fps) return fps;
    double kept = round(can);
    return kept < 1 ? 1 : kept;
}
