/* SPDX-License-Identifier: MIT */
// jpeg_place.comp — GPU JPEG, block-parallel path: the steps between the block coder and the packer, by mode.
//   0 (one invocation per restart interval, + 1): after the bit counts were prefix-summed (boff[b]: the bit
//     offset of block b, boff[n_blocks] the total), the byte size of each interval (its bits padded to a byte)
//     into ioff[i], 0 into ioff[n_iv]; the next scan makes them byte offsets in the unstuffed stream U.
//   1 (one invocation): (without restart intervals, in place of mode 0 and its scan: ioff[0] = 0, ioff[1] = the
//     stream's bytes) the size of U (misc+1 bytes, misc+2 words; misc+0 = words + 1, the stuffing scan's
//     length) and the indirect dispatch sizes of mode 2 and of the stuffing scan's levels.
//   2 (one invocation per word of U, + 1): gathers the word's 4 bytes bit-aligned from the block slots (a word
//     spans several blocks on smooth content, where a block can be 4 bits), pads each interval's last byte with
//     1-bits, and writes per word c = the count of 0xFF bytes (each gets a stuffed 0x00) + 2 × interval ends
//     (each gets an RSTn marker), | (the 0xFF byte mask | the interval-end mask << 4) << 8. c[words] = 0.
//     U holds at most cap_words words (fitted to the device's storage buffer range): a larger stream (not seen on
//     real content) makes mode 1 flag misc+4 and empty U, and mode 3 write size 0 (the host then reports
//     RCANVAS_ECODEC and the caller uses the CPU encoder).
//   3 (one invocation): after c was scanned (coff): the file size (header + U + stuffing + markers + EOI) into
//     ctl[0] and misc+3, and the packer's indirect dispatch size.
// Indirect arguments live in ctl (host-visible): [0] file size, [1..3] pack, [4..6] mode 2, [8..10] and
// [12..14] the stuffing scan's first two levels. Workgroups may come as x·y (2-D indirect dispatches).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "jpeg_io.h"   // the bindings and push constants, shared with jpeg_gpu.c
#define JPEG_FIELD(name) uint name;
layout(local_size_x = 256) in;

layout(std430, binding = JPEG_BIND_SCRATCH) writeonly buffer U { uint uw[]; };
layout(std430, binding = JPEG_BIND_CTL) buffer Ctl { uint ctl[]; };
layout(std430, binding = JPEG_BIND_SLOT) readonly buffer Slots { uint slot[]; };
layout(std430, binding = JPEG_BIND_SC) buffer Sc { uint sc[]; };

layout(push_constant) uniform P { JPEG_PC_PLACE(JPEG_FIELD) } p;   // jpeg_io.h

void dispatch_at(uint at, uint groups) {   // 2-D past 32768 groups
    groups = max(groups, 1u);
    ctl[at] = min(groups, 32768u);
    ctl[at + 1u] = (groups + 32767u) / 32768u;
    ctl[at + 2u] = 1u;
}

uint bits_from(uint b, uint o, uint take) {   // `take` (1..8) bits of block b's slot from bit o, MSB first
    uint wd = o >> 5, sh = o & 31u;
    uint v = slot[b * 64u + wd] << sh;
    if (sh + take > 32u) v |= slot[b * 64u + wd + 1u] >> (32u - sh);
    return v >> (32u - take);
}

void main() {
    uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (p.mode == 0u) {
        if (id > p.n_iv) return;
        if (id == p.n_iv) { sc[p.ioff + id] = 0u; return; }
        uint b0 = id * p.blocks_per_iv, b1 = min(b0 + p.blocks_per_iv, p.n_blocks);
        sc[p.ioff + id] = (sc[p.boff + b1] - sc[p.boff + b0] + 7u) >> 3;
        return;
    }
    if (p.mode == 1u) {
        if (id != 0u) return;
        if (p.n_iv == 1u) {   // no restart intervals (mode 0 and its scan were left out): one interval, all bits
            sc[p.ioff] = 0u;
            sc[p.ioff + 1u] = (sc[p.boff + p.n_blocks] + 7u) >> 3;
        }
        uint ubytes = sc[p.ioff + p.n_iv], uwords = (ubytes + 3u) >> 2;
        sc[p.misc + 4u] = uwords > p.cap_words ? 1u : 0u;
        if (uwords > p.cap_words) { ubytes = 0u; uwords = 0u; }
        sc[p.misc] = uwords + 1u;
        sc[p.misc + 1u] = ubytes;
        sc[p.misc + 2u] = uwords;
        dispatch_at(4u, (uwords + 1u + 255u) / 256u);
        uint g0 = (uwords + 1u + 1023u) / 1024u;
        dispatch_at(8u, g0);
        dispatch_at(12u, (g0 + 1023u) / 1024u);
        return;
    }
    if (p.mode == 3u) {
        if (id != 0u) return;
        uint uwords = sc[p.misc + 2u];
        uint total = sc[p.misc + 4u] != 0u ? 0u : p.header_bytes + sc[p.misc + 1u] + sc[p.coff + uwords] + 2u;
        sc[p.misc + 3u] = total;
        ctl[0] = total;
        dispatch_at(1u, ((total + 3u) / 4u + 255u) / 256u);
        return;
    }
    // mode 2: gather one word of U
    uint uwords = sc[p.misc + 2u], ubytes = sc[p.misc + 1u];
    if (id > uwords) return;
    if (id == uwords) { sc[p.cbase + id] = 0u; return; }
    uint k0 = id * 4u;
    uint lo = 0u, hi = p.n_iv - 1u;   // the interval of byte k0: the last with ioff ≤ k0
    while (lo < hi) {
        uint mid = (lo + hi + 1u) >> 1;
        if (sc[p.ioff + mid] <= k0) lo = mid; else hi = mid - 1u;
    }
    uint iv = lo, b = 0xFFFFFFFFu, word = 0u, ffm = 0u, endm = 0u;
    for (uint j = 0u; j < 4u; j++) {
        uint k = k0 + j;
        if (k >= ubytes) break;
        while (iv + 1u < p.n_iv && k >= sc[p.ioff + iv + 1u]) { iv++; b = 0xFFFFFFFFu; }
        uint fbk = iv * p.blocks_per_iv, lbk = min(fbk + p.blocks_per_iv, p.n_blocks);
        uint bend = sc[p.boff + lbk];
        uint g = sc[p.boff + fbk] + 8u * (k - sc[p.ioff + iv]);   // this byte's first bit in the bit stream
        if (b == 0xFFFFFFFFu) {   // the block holding bit g: the last in [fbk, lbk) with boff ≤ g
            uint l = fbk, h = lbk - 1u;
            while (l < h) {
                uint mid = (l + h + 1u) >> 1;
                if (sc[p.boff + mid] <= g) l = mid; else h = mid - 1u;
            }
            b = l;
        }
        uint byte = 0u, need = 8u;
        while (need > 0u) {
            if (g >= bend) { byte = (byte << need) | ((1u << need) - 1u); break; }   // pad with 1-bits
            while (sc[p.boff + b + 1u] <= g) b++;
            uint bs = sc[p.boff + b], take = min(need, sc[p.boff + b + 1u] - g);
            byte = (byte << take) | bits_from(b, g - bs, take);
            g += take;
            need -= take;
        }
        word |= byte << (8u * j);
        if (byte == 255u) ffm |= 1u << j;
        if (iv + 1u < p.n_iv && k + 1u == sc[p.ioff + iv + 1u]) endm |= 1u << j;
    }
    uw[id] = word;
    sc[p.cbase + id] = bitCount(ffm) + 2u * bitCount(endm) | (ffm | (endm << 4)) << 8;
}
