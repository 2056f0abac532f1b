// SPDX-License-Identifier: MIT
// h264_scan.comp — GPU H.264 stage 5, one workgroup of 256.
// pc.pass 2 (P pictures, before the CAVLC count): each macroblock's mb_skip_run, the P_Skip macroblocks just before
// it in raster order (into mbi[3]): each invocation takes a contiguous chunk, the chunks' runs are carried across.
// Otherwise: where every macroblock's bits go. Every picture is one slice (chunks, a shared-memory scan of the chunk
// sums). Writes the slices' byte offsets, the total and the copy stage's indirect dispatch to ctl.
#version 450
#include "h264_common.glsl"
layout(local_size_x = 256) in;

shared uint part[1024];
shared uint allskip[256];

bool skipped(uint mb) { return (mbi[mb * MBI_STRIDE] & 1u) != 0u; }

void main() {
    uint t = gl_LocalInvocationID.x, n = pc.mbw * pc.mbh;
    uint chunk = (n + 255u) / 256u, i0 = min(t * chunk, n), i1 = min(i0 + chunk, n);
    if (pc.pass == 2u) {
        uint run = 0u;   // within the chunk, from its start
        for (uint i = i0; i < i1; i++) {
            mbi[i * MBI_STRIDE + 3u] = run;
            run = skipped(i) ? run + 1u : 0u;
        }
        part[t] = run;                       // skipped macroblocks at the chunk's end
        allskip[t] = run == i1 - i0 ? 1u : 0u;
        barrier();
        uint carry = 0u;                     // skipped macroblocks just before the chunk
        for (int k = int(t) - 1; k >= 0; k--) {
            carry += part[k];
            if (allskip[k] == 0u) break;
        }
        for (uint i = i0; i < i1; i++) {
            mbi[i * MBI_STRIDE + 3u] += carry;
            if (!skipped(i)) break;          // after a coded one the run starts inside the chunk
        }
        return;
    }
    uint s = 0u;
    for (uint i = i0; i < i1; i++) s += bits[i];
    part[t] = s;
    barrier();
    for (uint d = 1u; d < 256u; d <<= 1) {   // Hillis–Steele inclusive scan of the chunk sums
        uint v = t >= d ? part[t - d] : 0u;
        barrier();
        part[t] += v;
        barrier();
    }
    uint o = t > 0u ? part[t - 1u] : 0u;
    for (uint i = i0; i < i1; i++) {
        bits[n + i] = o;
        o += bits[i];
    }
    if (t == 255u) {
        uint bytes = (part[255] + 7u) >> 3;
        ctl[4u] = 0u;
        ctl[5u] = bytes;
        ctl[5u + pc.mbh] = 0u;
        ctl[6u + pc.mbh] = 0u;
        ctl[0] = bytes;
        ctl[1] = (bytes + 255u) / 256u;
        ctl[2] = 1u;
        ctl[3] = 1u;
    }
}
