/* SPDX-License-Identifier: MIT */
/*
 * h264_gpu_gate.h — whether the GPU H.264 encoder's pictures run its costly tools while the device is shared:
 * the deblocking filter (h264_deblock.comp), intra macroblocks in P pictures (their wave of up to 16 dependent
 * steps, h264_scan.comp) and h264_me's adopt rounds (12 small dependent dispatches). The filter is a wavefront: at
 * 1080p about 1.5 ms of an H100's time a picture on 68 workgroups, the rest of the device idle, yet a queue runs it
 * in order with every other encoder's work; the intra steps are 0.1–0.7 ms the same way, the rounds 0.15–0.2 ms.
 * One canvas keeps 60 fps with them; 16 canvases on one queue fell from 58 to 24 (the filter) and 28 (all three)
 * pictures a second. They save 3–12 % (the filter) and 10–20 % (the other two) of the bits at equal quality,
 * which is worth less than the frame rate, so they are gated on contention: a picture that waited in the queue
 * behind other work for longer than its own GPU time (and over 2 ms), twice in a row, turns them off for a spell:
 * 2 s, doubling while the device stays contended up to 32 s, back to 2 s after 10 s on without contention. Each
 * picture's filter flag is in its slice header and the other two are the encoder's choices, so a switch costs
 * nothing at the decoder. What it measures, submission to fence less the picture's own GPU time, also holds the
 * app's own work queued just before (a renderer taking more than about 2 ms a frame on the same queue keeps the
 * tools off most of the time) and the waiting thread's wake-up; contention spread over several queues shows as
 * longer GPU time instead, which it does not see. Pure arithmetic (no Vulkan, built and tested without it): the
 * encoder reports what it measured.
 * Not thread-safe: one per encoder.
 */
#ifndef RC_H264_GPU_GATE_H
#define RC_H264_GPU_GATE_H

#include <stdint.h>

#define RC_H264_GATE_QUEUED_MS 2.0         /* a wait shorter than this is never contention (wakeup jitter) */
#define RC_H264_GATE_SPELL_US 2000000      /* the first off spell */
#define RC_H264_GATE_SPELL_MAX_US 32000000 /* the longest */
#define RC_H264_GATE_CALM_US 10000000      /* on this long without contention: the spell is back to the first's */

typedef struct rc_h264_gate {
    int64_t off_until_us; /* the tools are off before this time (0: on) */
    int64_t spell_us;     /* the next off spell (0: RC_H264_GATE_SPELL_US) */
    int64_t on_since_us;  /* when the tools came on last (0: not yet) */
    int contended;        /* consecutive pictures with the tools that waited behind other work */
} rc_h264_gate;

/* 1: the picture coded at now_us (CLOCK_MONOTONIC, µs) runs the tools; 0: the device is contended. */
int rc_h264_gate_on(rc_h264_gate *g, int64_t now_us);
/* After a picture that ran the tools: gpu_ms its own GPU time (first to last timestamp), wait_ms from its submission to its
 * fence seen signalled, at now_us. Pictures without timestamps teach nothing (the tools stay on). */
void rc_h264_gate_learn(rc_h264_gate *g, int64_t now_us, double gpu_ms, double wait_ms);

#endif
