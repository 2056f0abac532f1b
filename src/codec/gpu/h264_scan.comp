// SPDX-License-Identifier: MIT
// h264_scan.comp — GPU H.264 stage 5, one workgroup of 256.
// pc.pass SCAN_INTRA_WAVE (P pictures, before the macroblocks): the steps of the intra macroblocks (intra_wave).
// pc.pass SCAN_SKIP_RUNS (P pictures, before the CAVLC count): each macroblock's mb_skip_run, the P_Skip macroblocks just before
// it in raster order (into mbi[3]): each invocation takes a contiguous chunk, the chunks' runs are carried across.
// Otherwise: where every macroblock's bits go. Every picture is one slice (chunks, a shared-memory scan of the chunk
// sums). Writes the slices' byte offsets, the total and the copy stage's indirect dispatch to ctl.
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "h264_common.glsl"
layout(local_size_x = 256) in;

shared uint part[1024];
shared uint allskip[256];
shared uint lastrow[2048];   // pass 3: the last row's steps, by the round's parity (1024 each: pictures are at
                             // most 16384 pixels wide, h264_gpu.c)
shared uint cnt[INTRA_STEPS], at[INTRA_STEPS];
shared uint any, demoted;
// The intra wave's MBI_DEPTH is written by one invocation and listed by another: through a coherent view of the
// macroblock buffer (the same binding), for which memoryBarrierBuffer() and barrier() make the writes visible
// across the workgroup (a plain buffer's reads may hit a cache line of the last picture's depths).
layout(std430, binding = RC_H264_BIND_MBI) coherent buffer MbiDepth { uint mbi_depth[]; };

bool skipped(uint mb) { return (mbi[mb * MBI_STRIDE] & 1u) != 0u; }

// Pass 3 (P pictures, after the motion search): the intra wave. Each intra candidate gets the step after the
// latest of its intra neighbours on the left, above on the left, above and above on the right (MBI_DEPTH, from 1);
// one beyond the steps (INTRA_STEPS, or fewer: RCANVAS_GPU_H264_INTRA_STEPS) is coded inter instead (its MB_INTRA
// bit cleared: the motion search's vector stays).
// Macroblock (x, r) is worked out at round step x + 2 (r − r0), invocation r − r0 a row (r0 the round's first
// row, rounds of 256 rows), so that its neighbours above were done in the steps before; each row keeps its last 4
// steps in part[4 t ...] (the row below reads 3 of them).
// The candidates' bits are read 32 steps ahead, all invocations at once (every 32nd step, 32 independent loads):
// a read a step, each waited for before the step's barrier, made the wave's length (mbw + 2 mbh steps) in memory
// latencies, most of this pass's time at 1080p.
// Then the candidates are listed by step in bits[0, n), step k's from bits[n + k], and ctl gets each step's
// indirect dispatch (h264_mb.comp's RC_INTRA build codes them); the order within a step is free (its macroblocks
// are coded at once).
void intra_wave(uint t, uint n) {
    uint steps = clamp((pic.me_flags >> ME_STEPS_SHIFT) & 255u, 1u, INTRA_STEPS);   // h264_gpu.c's intra_steps
    if (t == 0u) { any = bits[n + INTRA_ANY]; demoted = 0u; }
    if (t < INTRA_STEPS) cnt[t] = 0u;
    barrier();
    if (any != 0u) {
        for (uint r0 = 0u; r0 < pc.mbh; r0 += 256u) {
            uint rows = min(256u, pc.mbh - r0), r = r0 + t;
            uint cin = (r0 & 256u) != 0u ? 0u : 1024u, cout = 1024u - cin;   // the last round's, this one's
            uint cand = 0u;   // bit i: macroblock (x0 + i, r) is an intra candidate, x0 = the 32-step block's first x
            for (uint s = 0u; s < pc.mbw + 2u * (rows - 1u); s++) {
                int x = int(s) - 2 * int(t);
                if ((s & 31u) == 0u && t < rows) {
                    cand = 0u;
                    [[unroll]] for (uint i = 0u; i < 32u; i++) {
                        int xi = x + int(i);
                        if (xi >= 0 && xi < int(pc.mbw) &&
                            (mbi[(r * pc.mbw + uint(xi)) * MBI_STRIDE + MBI_PART] & MB_INTRA) != 0u)
                            cand |= 1u << i;
                    }
                }
                if (t < rows && x >= 0 && x < int(pc.mbw)) {
                    uint ux = uint(x), mb = r * pc.mbw + ux, d = 0u;
                    if ((cand & (1u << (s & 31u))) != 0u) {
                        uint up = 0u;
                        if (ux > 0u) up = part[4u * t + ((ux - 1u) & 3u)];
                        if (r > 0u) {   // the row above: this round's row t − 1, or the last round's last row
                            for (uint dx = 0u; dx < 3u; dx++) {
                                uint xx = ux + dx - 1u;   // x − 1, x, x + 1 (wraps to a large value at x = 0)
                                if (xx >= pc.mbw) continue;
                                up = max(up, t > 0u ? part[4u * (t - 1u) + (xx & 3u)] : lastrow[cin + xx]);
                            }
                        }
                        d = up + 1u;
                        if (d > steps) {
                            d = 0u;
                            atomicAnd(mbi[mb * MBI_STRIDE + MBI_PART], ~MB_INTRA);   // not waited for
                            atomicAdd(demoted, 1u);
                        } else {
                            atomicAdd(cnt[d - 1u], 1u);
                        }
                    }
                    part[4u * t + (ux & 3u)] = d;
                    if (t == rows - 1u) lastrow[cout + ux] = d;   // for the next round's first row
                    mbi_depth[mb * MBI_STRIDE + MBI_DEPTH] = d;
                }
                barrier();
            }
        }
    }
    if (t == 0u) {
        uint o = 0u;
        for (uint k = 0u; k < INTRA_STEPS; k++) {
            at[k] = o;
            bits[n + k] = o;
            ctl[CTL_STEP(pc.mbh, k)] = cnt[k];
            ctl[CTL_STEP(pc.mbh, k) + 1u] = 1u;
            ctl[CTL_STEP(pc.mbh, k) + 2u] = 1u;
            o += cnt[k];
        }
        bits[n + INTRA_STEPS] = o;
        ctl[CTL_DEFERRED(pc.mbh)] = demoted;
    }
    if (any == 0u) return;   // uniform: every invocation read it after the first barrier
    memoryBarrierBuffer();   // the MBI_DEPTH of other invocations' rows, read below
    barrier();
    // 8 macroblocks' depths read at once an invocation, before any is listed
    for (uint i0 = 0u; i0 < n; i0 += 256u * 8u) {
        uint d8[8];
        [[unroll]] for (uint k = 0u; k < 8u; k++) {
            uint mb = i0 + t + 256u * k;
            d8[k] = mb < n ? mbi_depth[mb * MBI_STRIDE + MBI_DEPTH] : 0u;
        }
        [[unroll]] for (uint k = 0u; k < 8u; k++)
            if (d8[k] != 0u) bits[atomicAdd(at[d8[k] - 1u], 1u)] = i0 + t + 256u * k;
    }
}

void main() {
    uint t = gl_LocalInvocationID.x, n = pc.mbw * pc.mbh;
    if (pc.pass == SCAN_INTRA_WAVE) {
        intra_wave(t, n);
        return;
    }
    uint chunk = (n + 255u) / 256u, i0 = min(t * chunk, n), i1 = min(i0 + chunk, n);
    // Each invocation's chunk is read 8 values at a time, all 8 issued before the first is used: a loop that stored
    // between its reads of the same buffer waited out a memory latency per macroblock (32 at 1080p, one workgroup).
    if (pc.pass == SCAN_SKIP_RUNS) {
        uint run = 0u, lead = 0u;   // within the chunk, from its start; its leading skipped macroblocks
        bool coded = false;         // a coded one seen
        for (uint b = i0; b < i1; b += 8u) {
            bool sk[8];
            [[unroll]] for (uint k = 0u; k < 8u; k++) sk[k] = b + k < i1 && skipped(b + k);
            [[unroll]] for (uint k = 0u; k < 8u; k++) {
                if (b + k >= i1) break;
                mbi[(b + k) * MBI_STRIDE + 3u] = run;
                run = sk[k] ? run + 1u : 0u;
                coded = coded || !sk[k];
                if (!coded) lead++;
            }
        }
        part[t] = run;                       // skipped macroblocks at the chunk's end
        allskip[t] = run == i1 - i0 ? 1u : 0u;
        barrier();
        uint carry = 0u;                     // skipped macroblocks just before the chunk
        for (int k = int(t) - 1; k >= 0; k--) {
            carry += part[k];
            if (allskip[k] == 0u) break;
        }
        // the leading skipped macroblocks and the first coded one after them: their runs so far were i − i0
        if (carry != 0u)
            for (uint i = i0; i < min(i0 + lead + 1u, i1); i++) mbi[i * MBI_STRIDE + 3u] = i - i0 + carry;
        return;
    }
    uint s = 0u;
    for (uint b = i0; b < i1; b += 8u) {
        uint v[8];
        [[unroll]] for (uint k = 0u; k < 8u; k++) v[k] = b + k < i1 ? bits[b + k] : 0u;
        [[unroll]] for (uint k = 0u; k < 8u; k++) s += v[k];
    }
    part[t] = s;
    barrier();
    for (uint d = 1u; d < 256u; d <<= 1) {   // Hillis–Steele inclusive scan of the chunk sums
        uint v = t >= d ? part[t - d] : 0u;
        barrier();
        part[t] += v;
        barrier();
    }
    uint o = t > 0u ? part[t - 1u] : 0u;
    for (uint b = i0; b < i1; b += 8u) {
        uint v[8];
        [[unroll]] for (uint k = 0u; k < 8u; k++) v[k] = b + k < i1 ? bits[b + k] : 0u;
        [[unroll]] for (uint k = 0u; k < 8u; k++) {
            if (b + k < i1) bits[n + b + k] = o;
            o += v[k];
        }
    }
    if (t == 255u) {
        uint bytes = (part[255] + 7u) >> 3;
        ctl[CTL_SLICE] = 0u;
        ctl[CTL_SLICE + 1u] = bytes;
        ctl[CTL_I4X4(pc.mbh)] = 0u;
        ctl[CTL_P8X8(pc.mbh)] = 0u;
        ctl[CTL_INTRA_P(pc.mbh)] = 0u;
        ctl[CTL_BYTES] = bytes;
        ctl[CTL_COPY_DISPATCH] = (bytes + 255u) / 256u;
        ctl[CTL_COPY_DISPATCH + 1u] = 1u;
        ctl[CTL_COPY_DISPATCH + 2u] = 1u;
    }
}
