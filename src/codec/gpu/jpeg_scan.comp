/* SPDX-License-Identifier: MIT */
// jpeg_scan.comp — GPU JPEG stage 3: exclusive prefix sum of the interval sizes (each + 2 bytes for its RSTn
// marker, except the last), one workgroup of 1024 invocations: each sums a contiguous chunk, the chunk sums are
// scanned in shared memory, then each writes its chunk's offsets. Also writes the output size and the indirect
// dispatch size of the pack stage.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "jpeg_io.h"   // the bindings and push constants, shared with jpeg_gpu.c
#define JPEG_FIELD(name) uint name;
layout(local_size_x = 1024) in;

layout(std430, binding = JPEG_BIND_LEN) buffer Lens { uint len[]; };
layout(std430, binding = JPEG_BIND_OFF) writeonly buffer Offs { uint off[]; };
layout(std430, binding = JPEG_BIND_CTL) buffer Ctl { uint total_bytes; uint dispatch_x, dispatch_y, dispatch_z; };

layout(push_constant) uniform P { JPEG_PC_SCAN(JPEG_FIELD) } p;   // jpeg_io.h

shared uint sums[1024];
shared uint bad;

void main() {
    uint t = gl_LocalInvocationID.x;
    uint chunk = (p.n_intervals + 1023u) / 1024u;
    uint i0 = min(t * chunk, p.n_intervals), i1 = min(i0 + chunk, p.n_intervals);
    if (t == 0u) bad = 0u;
    barrier();
    uint s = 0u;
    for (uint i = i0; i < i1; i++) {
        if (len[i] == 0xFFFFFFFFu) { atomicOr(bad, 1u); continue; }
        s += len[i] + (i + 1u < p.n_intervals ? 2u : 0u);
    }
    sums[t] = s;
    barrier();
    for (uint d = 1u; d < 1024u; d <<= 1) {   // Hillis–Steele inclusive scan
        uint v = t >= d ? sums[t - d] : 0u;
        barrier();
        sums[t] += v;
        barrier();
    }
    uint o = p.header_bytes + (t > 0u ? sums[t - 1u] : 0u);
    for (uint i = i0; i < i1; i++) { off[i] = o; o += len[i] + (i + 1u < p.n_intervals ? 2u : 0u); }
    if (t == 1023u) {
        uint total = bad != 0u ? 0u : p.header_bytes + sums[1023] + 2u;   // + EOI; 0 = an interval overflowed
        total_bytes = total;
        dispatch_x = ((total + 3u) / 4u + 255u) / 256u;
        dispatch_y = 1u;
        dispatch_z = 1u;
    }
}
