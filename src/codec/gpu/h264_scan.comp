// SPDX-License-Identifier: MIT
// h264_scan.comp — GPU H.264 stage 5: where every macroblock's bits go. One workgroup: each invocation sums the
// bit counts of its rows (a row is a slice; its RBSP starts on a byte), invocation 0 makes the rows' byte offsets,
// then each writes its macroblocks' bit offsets. Also the total size and the copy stage's indirect dispatch.
#version 450
#include "h264_common.glsl"
layout(local_size_x = 256) in;

shared uint rowbytes[1024];

void main() {
    uint t = gl_LocalInvocationID.x, n = pc.mbw * pc.mbh;
    for (uint r = t; r < pc.mbh; r += 256u) {
        uint s = 0u;
        for (uint x = 0u; x < pc.mbw; x++) s += bits[r * pc.mbw + x];
        rowbytes[r] = (s + 7u) >> 3;
    }
    barrier();
    if (t == 0u) {
        uint o = 0u;
        for (uint r = 0u; r < pc.mbh; r++) {
            ctl[4u + r] = o;
            o += rowbytes[r];
            rowbytes[r] = ctl[4u + r];
        }
        ctl[4u + pc.mbh] = o;
        ctl[0] = o;
        ctl[1] = (o + 255u) / 256u;   // 64 invocations × 4 bytes
        ctl[2] = 1u;
        ctl[3] = 1u;
    }
    barrier();
    for (uint r = t; r < pc.mbh; r += 256u) {
        uint o = rowbytes[r] * 8u;
        for (uint x = 0u; x < pc.mbw; x++) {
            bits[n + r * pc.mbw + x] = o;
            o += bits[r * pc.mbw + x];
        }
    }
}
