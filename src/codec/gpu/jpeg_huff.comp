/* SPDX-License-Identifier: MIT */
// jpeg_huff.comp — GPU JPEG stage 2: Huffman coding (T.81 F.1.2, tables of Annex K given as code/length pairs)
// of one restart interval per invocation: DC prediction starts at 0 for each interval, so intervals are
// independent. Bytes go to the interval's own slot of a scratch buffer (worst-case sized) with 0xFF byte
// stuffing; the last byte is padded with 1-bits; the byte count goes to len[interval].
#version 450
#extension GL_GOOGLE_include_directive : require
#include "jpeg_io.h"   // the bindings and push constants, shared with jpeg_gpu.c
#define JPEG_FIELD(name) uint name;
layout(local_size_x = 64) in;

layout(std430, binding = JPEG_BIND_COEF) readonly buffer Coefs { int coef[]; };
layout(std430, binding = JPEG_BIND_TAB) readonly buffer Tables { uint dc_code[2][12]; uint ac_code[2][256]; }; // code | len << 24
layout(std430, binding = JPEG_BIND_SCRATCH) writeonly buffer Scratch { uint scratch[]; };
layout(std430, binding = JPEG_BIND_LEN) buffer Lens { uint len[]; };

layout(push_constant) uniform P { JPEG_PC_HUFF(JPEG_FIELD) } p;   // jpeg_io.h

uint acc;      // bit accumulator (up to 32 bits, left-aligned in `nbits`)
uint nbits;
uint word;     // bytes gathered for the next 32-bit store
uint nbytes;   // bytes written in total
uint base;
bool overflow;   // the interval outgrew its slot (≥ 256 bytes a block: not seen on real images); the scan
                 // stage then reports size 0 and the host falls back to the CPU encoder

void put_byte(uint b) {
    if (nbytes >= p.slot_words * 4u) { overflow = true; return; }
    word |= b << (8u * (nbytes & 3u));
    nbytes++;
    if ((nbytes & 3u) == 0u) { scratch[base + (nbytes >> 2) - 1u] = word; word = 0u; }
}

void put_bits(uint code, uint n) {  // n ≤ 24
    acc = (acc << n) | (code & ((1u << n) - 1u));
    nbits += n;
    while (nbits >= 8u) {
        uint b = (acc >> (nbits - 8u)) & 255u;
        put_byte(b);
        if (b == 255u) put_byte(0u);   // byte stuffing
        nbits -= 8u;
    }
}

void put_code(uint c) { put_bits(c & 0xFFFFFFu, c >> 24); }

uint bitlen(uint v) { return v == 0u ? 0u : uint(findMSB(v)) + 1u; }

void main() {
    uint iv = gl_GlobalInvocationID.x;
    if (iv >= p.n_intervals) return;
    acc = 0u; nbits = 0u; word = 0u; nbytes = 0u; overflow = false;
    base = iv * p.slot_words;
    int pred[3] = int[3](0, 0, 0);
    uint m0 = iv * p.mcus_per_interval, m1 = min(m0 + p.mcus_per_interval, p.total_mcus);
    for (uint m = m0; m < m1; m++) {
        for (uint b = 0u; b < p.blocks_per_mcu; b++) {
            uint comp = p.blocks_per_mcu == 6u ? (b < 4u ? 0u : b - 3u) : b;
            uint t = comp == 0u ? 0u : 1u;
            uint cb = (m * p.blocks_per_mcu + b) * 64u;
            int dc = coef[cb];
            int diff = dc - pred[comp];
            pred[comp] = dc;
            uint a = uint(abs(diff)), s = bitlen(a);
            put_code(dc_code[t][s]);
            if (s > 0u) put_bits(diff < 0 ? uint(diff - 1) : uint(diff), s);
            uint run = 0u;
            for (uint k = 1u; k < 64u; k++) {
                int v = coef[cb + k];
                if (v == 0) { run++; continue; }
                while (run > 15u) { put_code(ac_code[t][0xF0u]); run -= 16u; }
                uint av = uint(abs(v)), sz = bitlen(av);
                put_code(ac_code[t][(run << 4) | sz]);
                put_bits(v < 0 ? uint(v - 1) : uint(v), sz);
                run = 0u;
            }
            if (run > 0u) put_code(ac_code[t][0u]); // EOB
        }
    }
    if (nbits > 0u) put_bits(0x7Fu, 8u - nbits);   // pad with 1-bits to the byte boundary
    if ((nbytes & 3u) != 0u && !overflow) scratch[base + (nbytes >> 2)] = word;
    len[iv] = overflow ? 0xFFFFFFFFu : nbytes;
}
