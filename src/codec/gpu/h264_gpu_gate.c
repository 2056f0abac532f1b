/* SPDX-License-Identifier: MIT */
/* h264_gpu_gate.c — the costly tools' gate on a contended device (h264_gpu_gate.h says why and how). */
#include "codec/gpu/h264_gpu_gate.h"

int rc_h264_gate_on(rc_h264_gate *g, int64_t now_us) {
    if (now_us < g->off_until_us) return 0;
    if (g->off_until_us) { /* a spell ended: on again, a probe of the device */
        g->off_until_us = 0;
        g->on_since_us = now_us;
    }
    if (!g->on_since_us) g->on_since_us = now_us;
    return 1;
}

void rc_h264_gate_learn(rc_h264_gate *g, int64_t now_us, double gpu_ms, double wait_ms) {
    if (!(gpu_ms > 0)) return;
    if (!g->spell_us) g->spell_us = RC_H264_GATE_SPELL_US;
    double queued = wait_ms - gpu_ms;
    if (!(queued > RC_H264_GATE_QUEUED_MS && queued > gpu_ms)) {
        g->contended = 0;
        if (g->on_since_us && now_us - g->on_since_us >= RC_H264_GATE_CALM_US) g->spell_us = RC_H264_GATE_SPELL_US;
        return;
    }
    if (++g->contended < 2) return; /* one picture behind another encoder's IDR picture is not a busy device */
    g->contended = 0;
    g->off_until_us = now_us + g->spell_us;
    g->on_since_us = 0;
    g->spell_us = g->spell_us * 2 > RC_H264_GATE_SPELL_MAX_US ? RC_H264_GATE_SPELL_MAX_US : g->spell_us * 2;
}
