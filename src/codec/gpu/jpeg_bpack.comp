/* SPDX-License-Identifier: MIT */
// jpeg_bpack.comp — GPU JPEG, block-parallel path, last stage: writes the complete JPEG file, one 32-bit word per
// invocation, straight into host-visible memory (only the used bytes cross PCIe; dispatched indirectly with the
// size jpeg_place.comp computed): header bytes, then the bytes of U with a 0x00 after each 0xFF and FF D0+n%8
// after the last byte of each restart interval but the last, then EOI (FF D9). An output byte finds its word of U
// by binary search over the word starts 4w + coff[w] (coff: the scanned stuffing and marker bytes before word w),
// once per output word (its next bytes follow in that U word or the next); the masks of its 0xFF bytes and
// interval ends are in c[w] >> 8.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "jpeg_io.h"   // the bindings and push constants, shared with jpeg_gpu.c
#define JPEG_FIELD(name) uint name;
layout(local_size_x = 256) in;

layout(std430, binding = JPEG_BIND_SCRATCH) readonly buffer U { uint uw[]; };
layout(std430, binding = JPEG_BIND_HDR) readonly buffer Header { uint header[]; };
layout(std430, binding = JPEG_BIND_OUT) writeonly buffer Out { uint outw[]; };
layout(std430, binding = JPEG_BIND_SC) readonly buffer Sc { uint sc[]; };

layout(push_constant) uniform P { JPEG_PC_BPACK(JPEG_FIELD) } p;   // jpeg_io.h

uint word_start(uint lo) { return 4u * lo + sc[p.coff + lo]; }   // first stream byte of U word lo

// Byte r (0 ≤ r < 4 + its stuffing and marker bytes) of U word lo as written: its bytes, a 0x00 after each 0xFF,
// FF D0+n after the last byte of interval n.
uint expanded(uint lo, uint r) {
    uint m = sc[p.cbase + lo] >> 8, word = uw[lo];
    for (uint j = 0u; j < 4u; j++) {
        if (r == 0u) return (word >> (8u * j)) & 255u;
        r--;
        if ((m & (1u << j)) != 0u) { if (r == 0u) return 0u; r--; }
        if ((m & (16u << j)) != 0u) {
            if (r == 0u) return 0xFFu;
            uint k = 4u * lo + j, l = 0u, h = p.n_iv - 1u;   // the interval ending at byte k: RST number
            while (l < h) {
                uint mid = (l + h + 1u) >> 1;
                if (sc[p.ioff + mid] <= k) l = mid; else h = mid - 1u;
            }
            if (r == 1u) return 0xD0u + (l & 7u);
            r -= 2u;
        }
    }
    return 0u;   // not reached
}

void main() {
    uint w = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    uint total = sc[p.misc + 3u], uwords = sc[p.misc + 2u];
    uint pos = w * 4u;
    if (pos >= total || w >= p.out_words) return;   // a file past the buffer: the host sees it by its size
    uint v = 0u, lo = 0xFFFFFFFFu, r = 0u;
    for (uint i = 0u; i < 4u; i++) {
        uint at = pos + i, b;
        if (at >= total) break;
        if (at < p.header_bytes) b = (header[at >> 2] >> (8u * (at & 3u))) & 255u;
        else if (at + 2u >= total) b = at + 2u == total ? 0xFFu : 0xD9u;   // EOI
        else {
            if (lo == 0xFFFFFFFFu) {   // once per output word: the last U word starting at or before this byte
                uint q = at - p.header_bytes, l = 0u, h = uwords - 1u;
                while (l < h) {
                    uint mid = (l + h + 1u) >> 1;
                    if (word_start(mid) <= q) l = mid; else h = mid - 1u;
                }
                lo = l;
                r = q - word_start(lo);
            }
            b = expanded(lo, r);
            r++;   // the next byte: further in this word, or the first of the next
            if (r == 4u + sc[p.coff + lo + 1u] - sc[p.coff + lo]) { lo++; r = 0u; }
        }
        v |= b << (8u * i);
    }
    outw[w] = v;
}
