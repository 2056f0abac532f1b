/* SPDX-License-Identifier: MIT */
// jpeg_pack.comp — GPU JPEG stage 4: writes the complete JPEG file, one 32-bit word per invocation, straight into
// host-visible memory: header bytes (written once by the CPU into a device buffer), then each interval's bytes
// at its prefix-sum offset followed by its RSTn marker (FF D0+n%8), then EOI (FF D9). Each output byte finds its
// interval by binary search over the offsets, so writes are whole aligned words and only the used bytes cross
// PCIe (the dispatch size comes from the scan stage, indirectly).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "jpeg_io.h"   // the bindings and push constants, shared with jpeg_gpu.c
#define JPEG_FIELD(name) uint name;
layout(local_size_x = 256) in;

layout(std430, binding = JPEG_BIND_SCRATCH) readonly buffer Scratch { uint scratch[]; };
layout(std430, binding = JPEG_BIND_LEN) readonly buffer Lens { uint len[]; };
layout(std430, binding = JPEG_BIND_OFF) readonly buffer Offs { uint off[]; };
layout(std430, binding = JPEG_BIND_CTL) readonly buffer Ctl { uint total_bytes; uint dispatch_x, dispatch_y, dispatch_z; };
layout(std430, binding = JPEG_BIND_HDR) readonly buffer Header { uint header[]; };
layout(std430, binding = JPEG_BIND_OUT) writeonly buffer Out { uint outw[]; };

layout(push_constant) uniform P { JPEG_PC_PACK(JPEG_FIELD) } p;   // jpeg_io.h

uint scratch_byte(uint iv, uint k) { return (scratch[iv * p.slot_words + (k >> 2)] >> (8u * (k & 3u))) & 255u; }

uint byte_at(uint pos) {
    if (pos < p.header_bytes) return (header[pos >> 2] >> (8u * (pos & 3u))) & 255u;
    if (pos + 2u >= total_bytes) return pos + 2u == total_bytes ? 0xFFu : 0xD9u;   // EOI
    uint lo = 0u, hi = p.n_intervals - 1u;   // last interval with off ≤ pos
    while (lo < hi) {
        uint mid = (lo + hi + 1u) >> 1;
        if (off[mid] <= pos) lo = mid; else hi = mid - 1u;
    }
    uint k = pos - off[lo];
    if (k < len[lo]) return scratch_byte(lo, k);
    return k == len[lo] ? 0xFFu : 0xD0u + (lo & 7u);   // RSTn
}

void main() {
    uint w = gl_GlobalInvocationID.x;
    uint pos = w * 4u;
    if (pos >= total_bytes) return;
    uint v = 0u;
    for (uint i = 0u; i < 4u; i++)
        if (pos + i < total_bytes) v |= byte_at(pos + i) << (8u * i);
    outw[w] = v;
}
