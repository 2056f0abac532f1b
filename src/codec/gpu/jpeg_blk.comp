/* SPDX-License-Identifier: MIT */
// jpeg_blk.comp — GPU JPEG, block-parallel path, stage 2: Huffman coding (T.81 F.1.2, Annex K tables) of one
// 8×8 block per invocation, independent of restart intervals: the DC difference is taken from the previous block
// of the same component in scan order (0 at the start of a restart interval, when there are intervals). The
// block's bits go MSB-first, unstuffed, into its own 64-word slot (a block codes to at most 1728 bits: DC 11+11,
// 63 AC of 16+11), and its bit count to boff[block] (the next stage prefix-sums them in place). Only the nonzero AC
// coefficients are read, found in the block's mask from the DCT pass (H200, 3840×2160 q75 4:4:4: 0.186 → 0.069 ms
// on a heatmap, 0.172 → 0.037 ms on a smooth frame, against reading all 63).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "jpeg_io.h"   // the bindings and push constants, shared with jpeg_gpu.c
#define JPEG_FIELD(name) uint name;
layout(local_size_x = 64) in;

layout(std430, binding = JPEG_BIND_COEF) readonly buffer Coefs { int coef[]; };
layout(std430, binding = JPEG_BIND_TAB) readonly buffer Tables { uint dc_code[2][12]; uint ac_code[2][256]; }; // code | len << 24
layout(std430, binding = JPEG_BIND_SLOT) writeonly buffer Slots { uint slot[]; };
layout(std430, binding = JPEG_BIND_SC) buffer Sc { uint sc[]; };
layout(std430, binding = JPEG_BIND_MASK) readonly buffer Masks { uvec2 nzmask[]; };   // per block: bit k = coef k (zigzag) ≠ 0

layout(push_constant) uniform P { JPEG_PC_BLK(JPEG_FIELD) } p;   // jpeg_io.h

uint cw, fb, wi, base;   // current word, its filled bits, words written, slot base

void put_bits(uint code, uint n) {   // n ≤ 16
    if (n == 0u) return;
    code &= (1u << n) - 1u;
    if (fb + n < 32u) { cw |= code << (32u - fb - n); fb += n; return; }
    uint n1 = 32u - fb, n2 = n - n1;          // n1 ≥ 1 bits fill the word, n2 go to the next
    cw |= code >> n2;
    slot[base + wi] = cw; wi++;
    cw = n2 == 0u ? 0u : code << (32u - n2);
    fb = n2;
}

void put_code(uint c) { put_bits(c & 0xFFFFu, c >> 24); }

uint bitlen(uint v) { return v == 0u ? 0u : uint(findMSB(v)) + 1u; }

void main() {
    uint b = gl_GlobalInvocationID.x;
    if (b == 0u) sc[p.boff + p.n_blocks] = 0u;   // the scan's extra element: the total after it
    if (b >= p.n_blocks) return;
    uint bpm = p.blocks_per_mcu, m = b / bpm, bi = b % bpm;
    uint comp = bpm == 6u ? (bi < 4u ? 0u : bi - 3u) : bi;
    uint t = comp == 0u ? 0u : 1u;
    uint start = p.mcus_per_interval == 0u ? 0u : (m / p.mcus_per_interval) * p.mcus_per_interval;
    int pred = 0;
    if (bpm == 6u && bi >= 1u && bi <= 3u) pred = coef[(b - 1u) * 64u];
    else if (m > start) pred = coef[(b - (bpm == 6u && bi == 0u ? 3u : bpm)) * 64u];
    cw = 0u; fb = 0u; wi = 0u; base = b * 64u;
    uint cb = b * 64u;
    int diff = coef[cb] - pred;
    uint s = bitlen(uint(abs(diff)));
    put_code(dc_code[t][s]);
    put_bits(diff < 0 ? uint(diff - 1) : uint(diff), s);
    // the nonzero AC coefficients only, in zigzag order, from the DCT pass's mask (smooth content: a few a block)
    uvec2 mk = nzmask[b];
    uint last = 0u;
    for (uint h = 0u; h < 2u; h++) {
        uint m = h == 0u ? mk.x & ~1u : mk.y;
        while (m != 0u) {
            uint k = uint(findLSB(m)) + 32u * h;
            m &= m - 1u;
            int v = coef[cb + k];
            uint run = k - last - 1u;
            while (run > 15u) { put_code(ac_code[t][0xF0u]); run -= 16u; }
            uint sz = bitlen(uint(abs(v)));
            put_code(ac_code[t][(run << 4) | sz]);
            put_bits(v < 0 ? uint(v - 1) : uint(v), sz);
            last = k;
        }
    }
    if (last < 63u) put_code(ac_code[t][0u]); // EOB
    if (fb > 0u) slot[base + wi] = cw;
    sc[p.boff + b] = wi * 32u + fb;
}
