/* SPDX-License-Identifier: MIT */
/*
 * rate.h — following the link a viewer sits behind, from its acks alone, and steering an encoder to it.
 *
 * rc_link estimates one viewer's link (delivery rate, smoothed and minimum round trip) and keeps a target bitrate
 * for its frames; rc_steer turns a target into encoder settings, preferring, in this order, to lower the quality
 * (JPEG/WebP quality, or the video bitrate), then the frame rate, then the resolution, and to climb back in the
 * opposite order. Pure computation on caller-owned structs, no locks, no clock: the session (session.c) and the
 * tier (tier.c) call them under the canvas lock with the time they read.
 *
 * Sources. The delivery-rate sample is BBR's (Cardwell et al., "BBR: Congestion-Based Congestion Control",
 * ACM Queue 14(5), 2016; draft-cheng-iccrg-delivery-rate-estimation): bytes acked between a packet's send and its
 * ack over the time that took, with the interval restarted when the pipe was empty (an application-limited
 * sample only ever raises the estimate). The bottleneck rate is a windowed maximum of those samples (BBR's
 * BtlBw filter, here two one-second buckets) and the propagation round trip a 10 s windowed minimum (BBR's RTprop).
 * The controller is Google Congestion Control's delay-based one (draft-ietf-rmcat-gcc-02, with WebRTC's trendline
 * filter): each frame's one-way delay variation (its arrival spacing at the client minus its send spacing here)
 * is accumulated and smoothed, the slope of the last RC_TREND_N samples against time is the delay trend, and a
 * trend above an adaptive threshold means overuse: the target drops to 0.85 of the rate the receiver actually got
 * (GCC's beta). A trend below minus the threshold (a queue draining) holds the target; otherwise it grows. A
 * standing queue of noise (a loaded machine adds a constant 30 ms) has no trend, so it costs no quality; a queue
 * above RC_LINK_QUEUE_MAX_US counts as overuse whatever its trend. A window that keeps the queue short hides the
 * delay, so a third signal is the rate: a frame waited for the link (l->blocked: what the viewer holds would take
 * over 100 ms to cross at the measured rate): the target holds, and if it is over twice what arrives (growth never
 * takes it past 1.6×), it comes down to the delivery rate.
 * GCC grows by 8 % a second; we grow much faster (RC_LINK_GROWTH) because a viewer's window of frames bounds the
 * queue an overshoot can build, and a link that comes back should give the top quality back within 3 s; near the
 * rate that last built a queue we grow gently (RC_LINK_GROWTH_NEAR), the way CUBIC (RFC 8312) slows near its last
 * maximum, so a steady link sees a small sawtooth, not a queue every second. The round trip the link sees ends
 * when the frame arrived at the client: the ack says how long the client held it (decode, draw), and that time
 * is taken off, so a busy browser is not mistaken for a queue in the network.
 */
#ifndef RC_RATE_H
#define RC_RATE_H

#include <stdint.h>

#define RC_LINK_MIN_BPS 200000.0       /* never aim below 0.2 Mbit/s */
/* A new viewer's first target. Starting high on a slow link fills it with frames sized for a fast one: their
 * round trips then set the minimum round trip (and the window) to the serialization of a huge frame, and the queue
 * drains for seconds (simulated at 4 Mbit/s: 16 frames, 6 s). Starting low costs a fast link about a second of
 * lower quality (growth ×4.5 a second). WebRTC starts at 0.3 Mbit/s; frames of a canvas need more. */
#define RC_LINK_START_BPS 10e6
#define RC_LINK_MAX_BPS 2000000000.0   /* 2 Gbit/s: "unlimited" */
#define RC_LINK_RTPROP_US 10000000     /* minimum round trip window, BBR's 10 s */
#define RC_LINK_BW_BUCKET_US 1000000   /* delivery-rate max filter: two buckets of this length */
#define RC_LINK_GROWTH 2.0             /* target growth per second without a queue (×e^2 ≈ 7.4 a second) */
#define RC_LINK_GROWTH_NEAR 0.5        /* ... within 0.85–1.1× of the rate that last built a queue (×1.65 a second) */
#define RC_LINK_PROBE_GAIN 1.25       /* the target grows at most this far above the measured delivery rate... */
#define RC_LINK_PROBE_GAIN_FAST 1.6   /* ... or this far, away from the rate that last built a queue */
#define RC_LINK_BETA 0.85              /* on overuse: target = beta × delivery rate (GCC) */
#define RC_LINK_QUEUE_MIN_US 25000     /* a queue (smoothed above minimum round trip) below this is noise */
#define RC_LINK_QUEUE_MAX_US 150000    /* a standing queue longer than this (or than the round trip) is cut */
#define RC_LINK_INFLIGHT_CAP_US 100000.0 /* rc_link_full */
#define RC_TREND_N 20                  /* trendline window, frames (WebRTC's default) */
#define RC_TREND_MIN 8                 /* ... and the fewest it decides on */

typedef struct rc_link {
    uint64_t delivered;        /* bytes acked so far */
    int64_t delivered_us;      /* when the newest ack came, or when sending resumed on an empty pipe */
    uint32_t min_rtt_us;       /* RTprop: windowed minimum round trip (send → ack), µs; 0 = none yet */
    int64_t min_rtt_at_us;
    uint32_t srtt_us;          /* smoothed round trip (RFC 6298's 1/8 gain), µs */
    double bw_bucket[2];       /* max delivery-rate sample (bit/s) of this and the previous bucket */
    int64_t bw_bucket_at_us;   /* start of the current bucket */
    double target_bps;         /* what this viewer's frames should average, bit/s */
    int64_t last_step_us;      /* last time the target moved */
    int64_t last_cut_us;       /* last decrease */
    int overuse;               /* 1 overuse, 0 normal, -1 underuse (a queue draining) */
    /* GCC's trendline (delay-based overuse detector) */
    int64_t prev_arrival_us, prev_sent_us, first_arrival_us;
    double acc_delay_ms, smoothed_delay_ms;
    double trend_t[RC_TREND_N], trend_d[RC_TREND_N];
    int trend_n, trend_i, num_deltas;
    double trend;              /* modified trend (slope × min(deltas, 60) × 4), ms */
    double prev_trend;
    double gamma_ms;           /* the adaptive threshold */
    double overuse_ms;         /* how long the trend has been above it */
    double rate_ewma;          /* delivery rate, smoothed (bit/s); application-limited samples only raise it */
    int blocked;               /* set by the sender: a frame waited for the link since the last ack */
    int blocked_acks;          /* acks in a row after which a frame had waited */
    double over_bps;           /* the delivery rate when a queue last built (bit/s); 0 = never */
    int app_limited;           /* the newest sample was application-limited */
    int cpu_bound;             /* set by the caller before an ack: the server's encoder or this viewer's decoder is
                                * busy RC_CPU_BUSY of the time a frame has (rc_cpu_busy): a rising delay trend with
                                * nothing waiting for the link is that CPU's, not a queue's (rc_link_on_ack) */
} rc_link;

/* What a send records, for the ack's delivery-rate sample. */
typedef struct rc_link_send {
    uint64_t delivered;        /* l->delivered when it was sent */
    int64_t delivered_us;      /* l->delivered_us when it was sent (restarted if the pipe was empty) */
    int app_limited;           /* the pipe was empty: the link was idle, not the bottleneck */
} rc_link_send;

/* A link with no measurement; target_bps = start_bps. */
void rc_link_init(rc_link *l, double start_bps);
/* A packet goes out at now_us while in_flight others are unacked. Fills *rec. */
void rc_link_on_send(rc_link *l, int64_t now_us, int in_flight, rc_link_send *rec);
/* The packet of `bytes` sent at sent_us (with *rec) was acked at now_us, the client having held it hold_us after
 * it arrived: a round-trip and a delivery-rate sample, a delay-trend sample (if timed: 0 for a packet covered by
 * the ack of a later one, whose own arrival time is unknown), then the controller step. */
void rc_link_on_ack(rc_link *l, const rc_link_send *rec, uint32_t bytes, int64_t sent_us, int64_t now_us,
                    uint32_t hold_us, int timed);
/* The bottleneck rate estimate, bit/s (0 = none yet). */
double rc_link_bw(const rc_link *l);
/* 1 if what a viewer holds in flight (n_inflight packets of inflight_bytes) would take longer than
 * RC_LINK_INFLIGHT_CAP_US to cross its link at the measured rate, with a queue to show for it (at an
 * application-limited rate the bytes only look slow): it should get no further packet now. The first packet
 * always goes. Frames big for the link (130 kB on 20 Mbit/s: 52 ms each) would otherwise queue a whole window of
 * them (bench-vnc: 290 ms of click latency). */
int rc_link_full(const rc_link *l, int n_inflight, uint64_t inflight_bytes);
/* Frames this viewer should be allowed in flight to cover its round trip at fps frames a second: at least
 * min_frames, at most max_frames. */
int rc_link_window(const rc_link *l, double fps, int min_frames, int max_frames);

/* ---- steering one encoder (a tier) to a budget ---- */

#define RC_STEER_Q_MIN 30        /* JPEG/WebP quality floor before the frame rate gives */
#define RC_STEER_FPS_MIN 12.0    /* frame rate floor before the resolution gives */
#define RC_STEER_SCALE_MAX 4     /* encode at 1/4 of the size at worst (the client upscales) */
#define RC_STEER_VIDEO_BPP 0.03  /* video: bits per pixel a frame needs to look right (H.264 screen content) */

/* What one frame costs a coder at each size divisor (1, 2, 4), µs, smoothed; 0 = never measured there. */
typedef struct rc_cost {
    double at[3];
    int n[3];                  /* frames measured there (up to RC_CPU_SAMPLES) */
    double seen[3];            /* as at[], but not forgotten while a smaller size is used: what shrinking bought */
} rc_cost;

#define RC_SMALL_MAX_BPP 4.0 /* the bytes a pixel small_bpp counts at most (raw RGBA) */

typedef struct rc_steer {
    int cpu_div;               /* 1, 2 or 4 (0 = 1): the size divisor the encoder's and the decoders' time allows at
                                * the frame rate (rc_steer_cpu); the link's steering never encodes larger */
    int cpu_up_calls;          /* consecutive rc_steer_cpu calls on which a larger size fitted */
    int keep_size;             /* its frames have fine detail (text, 1-px lines: rc_image_fine_detail), which half
                                  the size makes unreadable: the CPUs' steering keeps them whole (cpu_div 1) and
                                  the frame rate gives; set by the tier */
    int limit;                 /* RC_LIMIT_*: what holds this encoder's frame rate now */
    int quality;               /* JPEG/WebP quality now (1–100) */
    int scale_div;             /* 1, 2 or 4: the frame is encoded at width/scale_div × height/scale_div */
    double fps_cap;            /* frames a second this encoder should make; 0 = as many as come */
    double bitrate_bps;        /* video: the encoder's target bitrate */
    double bytes_per_q[101];   /* image codecs: last frame size seen at each quality, per full-size pixel; 0 = none */
    double video_bits;         /* video: bits a full-size P-frame takes at the encoder's coarsest quantizer on this
                                * content; 0 = not seen (rc_steer_video_frame) */
    double video_avg_bits, video_avg_target; /* video: P-frame bits and their targets, averaged, full size */
    int size_up_calls;         /* video: consecutive rc_steer_video calls on which a larger size fitted */
    int video_samples;         /* video: P-frames seen so far (up to RC_STEER_VIDEO_SAMPLES) */
    double video_first[2][12]; /* video: the first RC_STEER_VIDEO_SAMPLES P-frames' bits and targets (full size):
                                * their medians start the averages */
    double video_target_bytes; /* video: the frame size its encoder was last asked for (bitrate / fps) */
    int video_since_cut;       /* video: frames since that size was last lowered */
    int video_since_key;       /* video: P-frames since its last keyframe (the encoder's rate control settles first) */
    int video_painted;         /* video: its last frame was a paint-over, so the next live one teaches nothing */
    /* the encoder's own pace and time, which the CPUs' steering and the frame-rate cap read (rc_steer_started,
     * rc_steer_encoded, rc_steer_rate_allows) */
    int64_t started_us;        /* when it last started a live frame */
    double enc_fps;            /* live frames it starts a second (smoothed) */
    int64_t cap_next_us;       /* its frame-rate cap's schedule (rc_steer_rate_allows) */
    rc_cost enc_cost;          /* what a live frame costs its encoder (wall time, start to done), per size */
    double enc_us;             /* ... the last ones smoothed whatever their size (cpu_bound, rc_video_fill_fps) */
    int enc_div;               /* the size divisor the running encode counts at (set when it starts); 0: it does
                                * not count (a paint-over, a small frame sent as PNG) */
    double fill_fps;           /* video: > 0 while frames are sized for the rate its encoder keeps, not the app's */
    double small_bpp;          /* image codecs: bytes a pixel of its last small frame sent lossless (PNG), at most
                                * RC_SMALL_MAX_BPP; 0 = none yet (rc_steer_small_done) */
} rc_steer;

/* Settings for a new encoder at the top: quality q_top, full size, no frame-rate cap, bitrate top_bps; everything
 * else zero, the encoder's measured pace and cost included (s may be uninitialized). */
void rc_steer_init(rc_steer *s, int q_top, double top_bps);
/* Image codecs (quality-driven; lossless ones pass q_top = 0, which leaves only the frame rate to steer: a
 * lossless codec is chosen for exact pixels, so its size never changes):
 * after a frame of `bytes` at s->quality and s->scale_div of a frame of `pixels` (full size), choose the next
 * settings for a budget of budget_bps at fps frames a second. */
void rc_steer_image(rc_steer *s, int q_top, double budget_bps, double fps, uint64_t pixels, uint64_t bytes);
/* 1 if an encoder under s's frame-rate cap may start a frame at now; s->cap_next_us (0 at first) is its schedule, advanced
 * by one interval per frame started, so the cap holds on average even when frames come on a coarser grid (a 25 fps
 * cap on 60 fps frames takes every 2nd or 3rd, not every 3rd). */
int rc_steer_rate_allows(rc_steer *s, int64_t now_us);
/* A live frame starts at now_us: the rate its encoder is fed at (s->enc_fps). */
void rc_steer_started(rc_steer *s, int64_t now_us);
/* Its encode finished after us µs (start to done). Whether that teaches the encoder's cost is decided here: only an
 * encode that counts (s->enc_div, set when it started), of a whole frame (`whole`: a partial one codes a part), and
 * of video only P-frames (`video_keyframe`: a keyframe, rare, costs several; the first one makes the encoder too). */
void rc_steer_encoded(rc_steer *s, double us, int whole, int video_keyframe);
/* A small frame of `pixels` went out lossless (PNG) in `bytes`: what that costs a pixel (s->small_bpp), at most
 * RC_SMALL_MAX_BPP (a PNG's ~70 bytes of headers would make a 1x1 frame cost 69 a pixel). No pixels: nothing. */
void rc_steer_small_done(rc_steer *s, uint64_t bytes, uint64_t pixels);
/* Video codecs (bitrate-driven): settings for budget_bps at fps frames a second of `pixels` (full size), the
 * encoder's bitrate at most top_bps (bit/s). A frame at 1/d of the size is taken to need the larger of RC_STEER_VIDEO_BPP
 * bits per coded pixel and s->video_bits / d: the frame rate is capped, then the size divided, until such frames
 * fit the budget at RC_STEER_FPS_MIN. */
void rc_steer_video(rc_steer *s, double top_bps, double budget_bps, double fps, uint64_t pixels);
/* A larger size is taken only after it fitted (with the 1.3x margin) on this many calls in a row (one a frame
 * encoded): each size step restarts the video encoder, a keyframe of ~10x a P-frame, so a size that fits for a
 * moment (a budget's peak, the learned floor decaying) must not be tried and given back (on 4 Mbit/s a
 * 1080p pan flapped 1/4 -> 1/2 -> 1/4, 3 keyframes in 4 s and 6.5 fps). 30 frames: 1-2.5 s at 12-30 fps. A
 * smaller size is taken at once. */
#define RC_STEER_SIZE_UP_CALLS 30
/* The dead band of a size step: a larger size needs 1.3x its frames' bits to spare in the budget, the size now is
 * given up when its frames need 1.3x the budget (between the two, the frame rate gives a little). */
#define RC_STEER_SIZE_BAND 1.3
/* Video: the encoder, asked for target_bytes a frame, made a P-frame of `bytes` at s->scale_div. When its frames
 * average over RC_STEER_VIDEO_OVER × their target, a lower bitrate makes them no smaller (openh264 at QP 51 still
 * takes 21 kB for a 1080p pan of the dense plot, where 2.7 Mbit/s at 30 fps means 11 kB): s->video_bits is what
 * they average, as bits of a full-size frame, taking frame bits to go as 1/scale_div (line content keeps its lines:
 * half the size has half the line pixels, not a quarter). While they meet their target it decays by 2 % a frame, so
 * easier content gets its frame rate back within seconds. Keyframes are not for this (intra: far bigger, rare);
 * nor is one P-frame more than twice the average: it counts as twice (the first P-frames after a keyframe or a
 * restart are 5-10x the rest, and two of them would triple a 1/8 average).
 * Bad input (no bytes, no target) changes nothing. */
void rc_steer_video_frame(rc_steer *s, uint64_t bytes, double target_bytes);
/* P-frames after a keyframe before their sizes teach the steering (rc_steer_video_frame): openh264's rate control
 * settles over the first few (measured on the pan loop at 2.7 Mbit/s: 265, 200 kB, … then 24 kB). */
#define RC_VIDEO_SETTLE_FRAMES 4
/* The video encoder is asked for frames of target_bytes (bitrate / fps) from now on: a cut of the target (below 95 %
 * of the last one) restarts the count of frames since one. */
void rc_steer_video_target(rc_steer *s, double target_bytes);
/* A video frame of `bytes` came back (keyframe: it is one; paint: a paint-over at a fixed quantizer). Whether it
 * teaches rc_steer_video_frame is decided here, as the encoder only reports sizes (FFmpeg's split between its
 * encoders and ratecontrol.c): not a keyframe, not a paint-over nor the first live frame after one (the rate
 * control coming back), not the first RC_VIDEO_SETTLE_FRAMES P-frames after a keyframe, nor those right after a cut
 * of the target (openh264 takes a few frames to follow one, and reports no frame QP to tell its ceiling by). */
void rc_steer_video_done(rc_steer *s, int keyframe, int paint, uint64_t bytes);
#define RC_STEER_VIDEO_OVER 1.15
/* P-frames before the averages teach a floor; their medians start them. The first P-frames of a stream (the
 * startup budget, the rate control settling after the keyframe: 265, 200 kB, … then 24 kB) taught 116 kB a frame
 * for content that needs 24 kB, and sent a 1080p pan to 1/4 of its size on a 4 Mbit/s link; a median of 12 ignores up
 * to 5 such frames. */
#define RC_STEER_VIDEO_SAMPLES 12

/* ---- what limits the frame rate: the link, the server's encoder or the viewer's decoder ----
 *
 * A frame costs time on both sides: the server's encode (per tier, measured around each live frame) and the
 * viewer's decode and draw (the ack's decode_ms, docs/protocol.md). When either takes most of the time a frame has
 * at the app's rate, that CPU, not the link, holds the frame rate, and a lower quality or chroma at the same size
 * (what the link's steering would do) buys few frames: Chromium (one core) decodes a 1080p JPEG of the terminal
 * scroll in 20.7 ms at 4:4:4 q85, 17.9 at 4:2:0 q85, 22–25 at q50; of the noisy zoom in 30.4, 20.9, 15.8 (4:2:0
 * q50); at half the size in 8–13 ms plus 5.5 to draw it enlarged. Tried as a first step before the size (4:2:0 and
 * q50 at full size), the pinned bench-vnc gained nothing: zoom 29.7 fps at 23.4 dB either way, slideshow at 20
 * Mbit/s 28.9 against 29.7 fps, scroll (text, 4:2:0 only) +1.5 fps at -1.8 dB. The costs are kept per size
 * (rc_cost: full, 1/2, 1/4), as measured; a
 * size not measured is predicted from those that were, by area (JPEG and H.264 work per block). That is optimistic
 * for a smaller size (a frame has fixed costs too: a 480x270 JPEG took 9.8 ms on the loaded 2-core machine, 6 times
 * its share of a 1080p one) and the next measurements correct it; it is pessimistic for a larger one, which is why
 * a size that was measured keeps its own figure, the lowest prediction counts, and a larger size's figure is
 * forgotten slowly while a smaller one is used (RC_CPU_FORGET): the load that made it slow may have gone, and it
 * is tried again once it would fit.
 * While the picture moves the size gives for the frame rate, as noVNC keeps its frame rate by sending less
 * detail; once it stops, the paint-over and the lossless refinement sharpen it as for any shrunk frame
 * (protocol.md, "Rate adaptation"). Link-limited viewers are steered as before. */
enum { RC_LIMIT_NONE = 0, RC_LIMIT_LINK = 1, RC_LIMIT_ENCODER = 2, RC_LIMIT_DECODER = 3 };
/* a coder busy this fraction of a frame's time (at the goal rate) is what limits the rate */
#define RC_CPU_BUSY 0.8
/* ... and a larger size is taken back only when its predicted cost is at most this fraction of a frame's time
 * (on RC_STEER_SIZE_UP_CALLS calls in a row: each video size step restarts the encoder, a keyframe) */
#define RC_CPU_UP 0.5
/* The frame rate the CPU steering aims at, at most: the app's rate up to this. Past 30 frames a second motion
 * looks smooth, and a halved picture loses detail in every frame: a 1080p picture the machine encodes and decodes
 * at 30 fps stays whole, one it encodes at 13 shrinks. */
#define RC_CPU_FPS_MAX 30.0
/* JPEG/WebP quality at most while the CPU limits (fewer coefficients to entropy-code and decode); the lossless
 * refinement sharpens a still picture */
#define RC_CPU_Q_MAX 50
/* each frame measured at a smaller size, the cost of the larger ones is forgotten by this factor (halved in ~70
 * frames: a larger size is tried again every few seconds at most, and only once it would fit) */
#define RC_CPU_FORGET 0.99

/* a size's figure counts from this many frames measured there on: one slow frame (a load spike, an encoder being
 * made) shrinks nothing */
#define RC_CPU_SAMPLES 3
/* A smaller size must pay: the slower coder's cost measured there under this fraction of its cost measured at the
 * larger size. Halving the size quarters the pixels, so a coder whose work is the pixels' saves most of its time;
 * one that saves less than a quarter is held by something else (a browser whose main thread is busy with its
 * page, a message's fixed cost: a 1080p canvas in JupyterLab on the 2-core machine took 27 ms a frame at 1/4 as at
 * 1/2), and shrinking only blurs the picture. The larger size then comes back, and the frame rate gives. */
#define RC_CPU_PAYS 0.75
/* ... and each frame measured at a larger size, the smaller sizes' own figures (`seen`) are forgotten by this
 * factor, so that a size that did not pay is tried again (for a frame or a few) every 5 s or so at 30 frames a
 * second: the load may have changed */
#define RC_CPU_RETRY_FORGET 0.998

/* A frame coded at 1/div of the size took us µs (div 1, 2 or 4; anything else is ignored). */
void rc_cost_sample(rc_cost *c, int div, double us);
/* The predicted cost of a frame at 1/div: measured there (RC_CPU_SAMPLES frames), else the lowest of the sizes
 * measured scaled by area; 0 = none. */
double rc_cost_predict(const rc_cost *c, int div);
/* 0 if going from 1/big to 1/small (big < small, both 1, 2 or 4) was measured not to pay (RC_CPU_PAYS): the
 * slower of the two coders (either may be NULL) cost at 1/small at least RC_CPU_PAYS of its cost at 1/big, both
 * measured (RC_CPU_SAMPLES frames, `seen`); 1 otherwise (not measured at both: it is worth a try). */
int rc_cost_shrink_pays(const rc_cost *enc, const rc_cost *dec, int big, int small);
/* The name of a limit for the link JSON ("none", "link", "encoder", "decoder"). */
const char *rc_limit_name(int limit);
/* 1 if a coder that takes cost_us a frame, at frames_per_s frames a second, is busy RC_CPU_BUSY of the time. */
int rc_cpu_busy(double cost_us, double frames_per_s);
/* Before a frame at goal_fps (the app's rate): from the encoder's costs and the decoders' (the slowest viewer's at
 * each size; either may be NULL), decide s->cpu_div and s->limit. At min(goal_fps, RC_CPU_FPS_MAX) a frame has
 * 1/fps: when the larger of the two predicted costs at cpu_div is over RC_CPU_BUSY of it, the smallest divisor
 * whose cost fits is taken at once (1/4 at most); a larger size once its cost fitted under RC_CPU_UP on
 * up_calls calls in a row (RC_STEER_SIZE_UP_CALLS for an image codec). A smaller size that was measured not to
 * pay (rc_cost_shrink_pays) is not taken, and is left at once for the larger one, and s->keep_size keeps the
 * full size whatever the costs (fine detail that a smaller size would blur): the coder then limits the
 * frame rate at that size. s->limit is the coder that holds the larger size back (the slower one there) while
 * cpu_div > 1, or the slower one at full size while it is busy there, else RC_LIMIT_LINK where the link's steering
 * holds anything back (quality, frame-rate cap or size), else RC_LIMIT_NONE. rc_steer_image and rc_steer_video then never encode larger than 1/cpu_div,
 * cap an image codec's quality at RC_CPU_Q_MAX while cpu_div > 1, and size the frame-rate cap for the frames at
 * that size. */
void rc_steer_cpu(rc_steer *s, int q_top, double goal_fps, const rc_cost *enc, const rc_cost *dec, int up_calls,
                  uint64_t pixels);
/* The frame rate a video encoder's frames are sized for (bitrate / that: its rate control's bits a frame) when the
 * tier asks for fps: fps, unless the encoder itself cannot keep it — busy RC_CPU_BUSY of each frame's time at fps
 * (enc_us µs a frame, measured) and able to make fewer than 0.9 × fps (1e6 / enc_us) —, then 1e6 / enc_us rounded
 * (≥ 1): frames sized for a rate never reached leave the link that much emptier. From the encoder's own time only,
 * never from the rate frames were taken or started at (a slow link or full windows would then get bigger frames,
 * fewer taken, bigger frames: a spiral). */
double rc_video_fill_fps(double fps, double enc_us);
/* A video encoder's mode for screen content (rc_encode_params.screen: openh264's SCREEN_CONTENT_REAL_TIME, whose
 * scroll detection and search find a terminal's 36 px a frame that its camera mode misses; it costs 2–5× the encode
 * time and spends 6× the bytes on noise-like content: src/codec/h264.c has the figures). */
typedef struct rc_screen_mode {
    int on;                    /* the mode asked of the encoder */
    int known;                 /* the frames were looked at once: the first look decides at once */
    int votes;                 /* looks in a row that disagreed with `on` */
    int plain;                 /* looks in a row without fine detail */
    int frames;                /* frames since `on` last changed (the encoder's time settles in a mode) */
    int64_t off_until_us;      /* the screen mode is not tried again before this (µs, the caller's clock) */
    int64_t backoff_us;        /* the last such wait; 0: none yet */
} rc_screen_mode;
/* One frame of a video tier whose codec has a screen mode (RC_CODEC_SCREEN): looked = the fine-detail detector
 * looked at this frame (rc_image_fine_detail, every RC_DETAIL_EVERY frames) and found fine_detail; behind = the
 * encoder cannot keep the rate frames are asked at (rc_video_fill_fps below it), which counts against the screen
 * mode only once RC_SCREEN_SETTLE frames were coded in it (the encoder's time a frame is smoothed: until then it
 * is the other mode's). The first look decides; later ones change the mode after RC_SCREEN_VOTES looks in a row
 * disagree with it (a change is a keyframe in H.264: content near the detector's line must not cost one every 8
 * frames). A screen mode that is behind gives way at once (frame rate first) for RC_SCREEN_RETRY_US, twice the
 * last wait after each retry that fails again (at most RC_SCREEN_RETRY_MAX_US: two keyframes and a slow second
 * every 30 s would show); RC_SCREEN_VOTES looks in a row without fine detail (other content) forget the wait and
 * its doubling. Returns m->on. Not thread-safe (the tier's lock). */
int rc_screen_mode_step(rc_screen_mode *m, int looked, int fine_detail, int behind, int64_t now_us);
#define RC_SCREEN_VOTES 3
#define RC_SCREEN_SETTLE 16
#define RC_SCREEN_RETRY_US 30000000
#define RC_SCREEN_RETRY_MAX_US 480000000
/* The CPUs' steering never shrinks a frame (of `pixels`, full size) below this many pixels (320x180): a small
 * frame's time is mostly fixed costs (a page's wake, a message, a draw), which no smaller size saves (seen: a
 * 400x300 test scene, its second viewer a page in the background, shrunk to 100x75) */
#define RC_CPU_MIN_PX 57600
/* up_calls for a video tier: 5 s at 30 fps (each size step there is a keyframe) */
#define RC_CPU_VIDEO_UP_CALLS 150

#endif
