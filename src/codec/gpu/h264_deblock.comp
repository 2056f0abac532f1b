// SPDX-License-Identifier: MIT
// h264_deblock.comp — GPU H.264: the deblocking filter (ITU-T H.264 clause 8.7) over this picture's reconstruction,
// in place, so that the next picture predicts from exactly what the decoder shows.
//
// The standard filters macroblock by macroblock in raster order, each macroblock's vertical edges left to right
// and then its horizontal edges top to bottom, every edge reading what the edges before it wrote. A macroblock's
// filtering writes up to 3 samples into the macroblocks on its left and above, and reads up to 4, so it must follow
// the one on its left, the one above and, since that one's right column is written by its own right neighbour, the
// one above on the right: h264_gpu.c runs the filter as the IDR pictures' wavefront (the 2D-wave of Meenderinck et
// al., J. Signal Process. Syst. 2009): step pc.pass filters the macroblocks with x + 2y = pc.pass, which touch no
// sample in common, one workgroup a macroblock.
//
// The macroblock's samples and the 4 (luma) or 2 (chroma) beyond its left and upper edges are filtered in shared
// memory, one global read and one write a sample: the wave's critical path is every macroblock's latency in turn.
// So nothing on it waits for more than that one read: the edges' boundary strengths, which need the neighbours'
// types, coefficients and vectors (chains of dependent reads that made each macroblock take about 20 µs on an
// H100 when every edge found its own), are found for every macroblock at once beforehand (pc.pass = DEBLOCK_STRENGTHS, a
// workgroup a macroblock), 32 of 4 bits in mbi[MBI_BS..+3]; the step reads its 4 words beside its samples.
// Two ways to run the wave (after DEBLOCK_STRENGTHS): pc.pass a step number, one dispatch a step, each after the
// last (any device); or pc.pass = DEBLOCK_ROWS, one dispatch, a workgroup a macroblock row walking it left to right, each macroblock after its row
// above has passed it by two (a counter a row in bits[BITS_ROWS(n) + row], set with release semantics after the macroblock's
// samples, spun on by the row below): 254 steps at 1080p as one dispatch instead of 254. That one relies on the
// rows running concurrently as the lower rows start first, as a decoupled look-back scan does (Merrill and
// Garland, 2016), which Vulkan does not promise: h264_gpu.c takes it on NVIDIA's own driver (decoder-exact on an H100,
// 1.45 ms a 1080p picture against the steps' 2.1), the steps elsewhere.
// Its spin is bounded, so a device that breaks the assumption gets wrong samples in its reference rather than a
// hang. Lavapipe breaks it twice: its thread pool gives each thread a block of consecutive workgroups (a row can
// start before the row above), and it caps one invocation's loop iterations at 65535 in all (after which every
// loop runs once), which a spinning row, or one workgroup walking a 1080p picture, exhausts.
//
// One slice, one QP a picture (and its chroma QP; qPav of 8.7.2.2 is then the picture's), FilterOffsetA and
// FilterOffsetB 0 (slice_alpha_c0_offset_div2 and slice_beta_offset_div2 0), 4:2:0, frame macroblocks,
// transform_size_8x8_flag 0, one reference picture. Boundary strength (8.7.2.1): 4 on a macroblock edge with an
// intra macroblock on either side, 3 inside an intra macroblock, 2 where either 4×4 luma block has a nonzero
// level, 1 where the two blocks' vectors differ by 4 quarter samples or more in x or y, else 0; chroma edges take
// the strength of the luma edge at twice their coordinates.
// 32 invocations: 0–15 luma (a row each on the vertical edges, then a column each on the horizontal edges), 16–31
// chroma (Cb rows 0–7, Cr rows 0–7, then columns); luma and chroma are independent planes.
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "h264_common.glsl"
layout(local_size_x = 32) in;

// Tables 8-16 and 8-17 (bit depth 8): alpha' and beta' by indexA / indexB, tC0 by indexA and bS 1, 2, 3
const int ALPHA[52] = int[](0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 5, 6, 7, 8, 9, 10, 12, 13, 15, 17,
                            20, 22, 25, 28, 32, 36, 40, 45, 50, 56, 63, 71, 80, 90, 101, 113, 127, 144, 162, 182,
                            203, 226, 255, 255);
const int BETA[52] = int[](0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 6, 6, 7, 7,
                           8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18);
const int TC0[156] = int[](
    0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,   //  0– 9
    0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 0,  0, 0, 1,  0, 0, 1,  0, 0, 1,   // 10–19
    0, 0, 1,  0, 1, 1,  0, 1, 1,  1, 1, 1,  1, 1, 1,  1, 1, 1,  1, 1, 1,  1, 1, 2,  1, 1, 2,  1, 1, 2,   // 20–29
    1, 1, 2,  1, 2, 3,  1, 2, 3,  2, 2, 3,  2, 2, 4,  2, 3, 4,  2, 3, 4,  3, 3, 5,  3, 4, 6,  3, 4, 6,   // 30–39
    4, 5, 7,  4, 5, 8,  4, 6, 9,  5, 7, 10, 6, 8, 11, 6, 8, 13, 7, 10, 14, 8, 11, 16, 9, 12, 18, 10, 13, 20, // 40–49
    11, 15, 23, 13, 17, 25);                                                                               // 50–51
// raster index of a 4×4 block (y·4 + x) → luma4x4BlkIdx (6.4.3)
const uint IDX4[16] = uint[](0u, 1u, 4u, 5u, 2u, 3u, 6u, 7u, 8u, 9u, 12u, 13u, 10u, 11u, 14u, 15u);
// a macroblock's 32 luma edge segments' bS, 4 bits each in mbi[MBI_BS..+3]: segment j = dir·16 + edge·4 + s (dir 0
// the vertical edges, s the 4-sample run along the edge, top to bottom or left to right)

bool is_intra(uint mb) { return (mbi[mb * MBI_STRIDE] & (1u << 16)) != 0u; }

// bS (8.7.2.1) between 4×4 luma block (px, py) of macroblock mp and block (qx, qy) of mq; mb_edge: the edge is a
// macroblock edge.
uint strength(uint mp, uint px, uint py, uint mq, uint qx, uint qy, bool mb_edge) {
    if (is_intra(mp) || is_intra(mq)) return mb_edge ? 4u : 3u;
    // TotalCoeff as the macroblock stage left it: 0 where the block's 8×8 is not coded, so nonzero levels only
    if (mbi[mp * MBI_STRIDE + MBI_TC + IDX4[py * 4u + px]] != 0u || mbi[mq * MBI_STRIDE + MBI_TC + IDX4[qy * 4u + qx]] != 0u)
        return 2u;
    ivec2 a = q_mv(mp, (py >> 1) * 2u + (px >> 1)), b = q_mv(mq, (qy >> 1) * 2u + (qx >> 1));
    return abs(a.x - b.x) >= 4 || abs(a.y - b.y) >= 4 ? 1u : 0u;
}


// the region in shared memory: luma 20×20 from (−4, −4), Cb and Cr 12×12 from (−4, −4)
#define LS 20u
#define CS 12u
#define CB0 400u
#define CR0 544u
shared int S[688];
shared uint SB[32];   // STRENGTHS: the segments' bS; a step: the macroblock's 4 packed words (mbi[MBI_BS..])

uint bs_of(uint j) { return (SB[j >> 3] >> (4u * (j & 7u))) & 15u; }

// Filters the line of samples across an edge (8.7.2.3, 8.7.2.4) in S: q0 at index at, p0 at at − step, and so on;
// alpha, beta and tc0 (by bS 1, 2, 3) of the plane's QP.
void filter_line(uint at, uint step, uint bs, bool chroma, int alpha, int beta, ivec3 tc0s) {
    if (bs == 0u) return;
    int p0 = S[at - step], q0 = S[at], p1 = S[at - 2u * step], q1 = S[at + step];
    if (abs(p0 - q0) >= alpha || abs(p1 - p0) >= beta || abs(q1 - q0) >= beta) return;
    if (chroma) {   // chromaStyleFilteringFlag: p0 and q0 only
        if (bs < 4u) {
            int tc = tc0s[bs - 1u] + 1;
            int d = clamp((((q0 - p0) << 2) + (p1 - q1) + 4) >> 3, -tc, tc);
            S[at - step] = clamp(p0 + d, 0, 255);
            S[at] = clamp(q0 - d, 0, 255);
        } else {
            S[at - step] = (2 * p1 + p0 + q1 + 2) >> 2;
            S[at] = (2 * q1 + q0 + p1 + 2) >> 2;
        }
        return;
    }
    int p2 = S[at - 3u * step], q2 = S[at + 2u * step];
    bool ap = abs(p2 - p0) < beta, aq = abs(q2 - q0) < beta;
    if (bs < 4u) {
        int tc0 = tc0s[bs - 1u], tc = tc0 + (ap ? 1 : 0) + (aq ? 1 : 0);
        int d = clamp((((q0 - p0) << 2) + (p1 - q1) + 4) >> 3, -tc, tc);
        S[at - step] = clamp(p0 + d, 0, 255);
        S[at] = clamp(q0 - d, 0, 255);
        if (ap) S[at - 2u * step] = p1 + clamp((p2 + ((p0 + q0 + 1) >> 1) - (p1 << 1)) >> 1, -tc0, tc0);
        if (aq) S[at + step] = q1 + clamp((q2 + ((p0 + q0 + 1) >> 1) - (q1 << 1)) >> 1, -tc0, tc0);
        return;
    }
    int p3 = S[at - 4u * step], q3 = S[at + 3u * step];
    bool near = abs(p0 - q0) < ((alpha >> 2) + 2);
    if (ap && near) {
        S[at - step] = (p2 + 2 * p1 + 2 * p0 + 2 * q0 + q1 + 4) >> 3;
        S[at - 2u * step] = (p2 + p1 + p0 + q0 + 2) >> 2;
        S[at - 3u * step] = (2 * p3 + 3 * p2 + p1 + p0 + q0 + 4) >> 3;
    } else {
        S[at - step] = (2 * p1 + p0 + q1 + 2) >> 2;
    }
    if (aq && near) {
        S[at] = (p1 + 2 * p0 + 2 * q0 + 2 * q1 + q2 + 4) >> 3;
        S[at + step] = (p0 + q0 + q1 + q2 + 2) >> 2;
        S[at + 2u * step] = (2 * q3 + 3 * q2 + q1 + q0 + p0 + 4) >> 3;
    } else {
        S[at] = (2 * q1 + q0 + p1 + 2) >> 2;
    }
}

// Sample k of the shared region ↔ its place in rec, for k = t + 32i (i < 13: luma; i ≥ 13: chroma, t + 32(i − 13)
// into the Cb and Cr regions), with constant divisors; false where k is past the region or the sample lies outside
// the picture (above or on the left of its edge: never read then, as those edges are not filtered).
bool region_at(uint t, uint i, uint mbx, uint mby, out uint k, out uint g) {   // i < 22
    bool luma = i < 13u;
    uint r = luma ? t + 32u * i : t + 32u * (i - 13u), plane = luma ? 0u : r < 144u ? 1u : 2u;
    if (!luma) r -= plane == 2u ? 144u : 0u;
    int x = int(luma ? r % LS : r % CS) - 4, y = int(luma ? r / LS : r / CS) - 4, n = luma ? 16 : 8;
    int gx = int(mbx) * n + x, gy = int(mby) * n + y;
    k = luma ? r : (plane == 1u ? CB0 : CR0) + r;
    g = plane == 0u ? 0u : plane == 1u ? plane_u() : plane_v();
    g += uint(max(gy, 0)) * (luma ? lw() : cwid()) + uint(max(gx, 0));
    return (luma ? r < 400u : r < 144u) && gx >= 0 && gy >= 0;
}

// Finds macroblock mb's 32 segments' bS (invocation t: segment t) into mbi[MBI_BS..+3], 0 on the picture's edges.
void strengths(uint mbx, uint mby, uint t) {
    uint mb = mby * pc.mbw + mbx, e = (t >> 2) & 3u, s = t & 3u, bs = 0u;
    if (t < 16u) {   // vertical edge e, rows 4s..4s+3
        if (e > 0u) bs = strength(mb, e - 1u, s, mb, e, s, false);
        else if (mbx > 0u) bs = strength(mb - 1u, 3u, s, mb, 0u, s, true);
    } else {         // horizontal edge e, columns 4s..4s+3
        if (e > 0u) bs = strength(mb, s, e - 1u, mb, s, e, false);
        else if (mby > 0u) bs = strength(mb - pc.mbw, s, 3u, mb, s, 0u, true);
    }
    SB[t] = bs;
    barrier();
    if (t < 4u) {
        uint w = 0u;
        for (uint j = 0u; j < 8u; j++) w |= SB[t * 8u + j] << (4u * j);
        mbi[mb * MBI_STRIDE + MBI_BS + t] = w;
    }
}

// Slot (t, i)'s place in the region: x, y from its top left (the macroblock's samples from (4, 4)).
uvec2 slot_xy(uint t, uint i) {
    bool luma = i < 13u;
    uint r = luma ? t + 32u * i : t + 32u * (i - 13u);
    if (!luma && r >= 144u) r -= 144u;
    return luma ? uvec2(r % LS, r / LS) : uvec2(r % CS, r / CS);
}

// The edges of the macroblock in S (its samples, the region's and SB ready, after a barrier): vertical edges, then
// horizontal ones; every invocation calls it; ends with a barrier.
void filter_mb(uint mbx, uint mby, uint t, uint qp, uint qpc) {
    // the plane's thresholds (Tables 8-16, 8-17)
    uint q = t < 16u ? qp : qpc;
    int alpha = ALPHA[q], beta = BETA[q];
    ivec3 tc0s = ivec3(TC0[q * 3u], TC0[q * 3u + 1u], TC0[q * 3u + 2u]);
    // vertical edges, left to right: luma row k at x = 0, 4, 8, 12; chroma row i at x = 0, 4 (luma edges 0 and 2)
    if (t < 16u) {
        uint k = t, row = (k + 4u) * LS + 4u;
        for (uint e = mbx > 0u ? 0u : 1u; e < 4u; e++)
            filter_line(row + 4u * e, 1u, bs_of(e * 4u + (k >> 2)), false, alpha, beta, tc0s);
    } else {
        uint i = t & 7u, row = (t < 24u ? CB0 : CR0) + (i + 4u) * CS + 4u;
        for (uint e = mbx > 0u ? 0u : 2u; e < 4u; e += 2u)
            filter_line(row + 2u * e, 1u, bs_of(e * 4u + (i >> 1)), true, alpha, beta, tc0s);
    }
    barrier();
    // horizontal edges, top to bottom: luma column k at y = 0, 4, 8, 12; chroma column i at y = 0, 4
    if (t < 16u) {
        uint k = t, col = 4u * LS + 4u + k;
        for (uint e = mby > 0u ? 0u : 1u; e < 4u; e++)
            filter_line(col + 4u * e * LS, LS, bs_of(16u + e * 4u + (k >> 2)), false, alpha, beta, tc0s);
    } else {
        uint i = t & 7u, col = (t < 24u ? CB0 : CR0) + 4u * CS + 4u + i;
        for (uint e = mby > 0u ? 0u : 2u; e < 4u; e += 2u)
            filter_line(col + 2u * e * CS, CS, bs_of(16u + e * 4u + (i >> 1)), true, alpha, beta, tc0s);
    }
    barrier();
}

// The samples an edge may have changed: all but the region's corner above on the left and what no edge reaches.
bool slot_changed(uint i, uvec2 xy) {
    uint d = i < 13u ? 3u : 1u;   // changed before an edge: 3 luma, 1 chroma
    return (xy.y >= 4u && xy.x >= 4u - d) || (xy.x >= 4u && xy.y >= 4u - d);
}

// Filters macroblock (mbx, mby) as one step of the wave: every invocation of the workgroup calls it.
void deblock_mb(uint mbx, uint mby, uint t, uint qp, uint qpc) {
    uint mb = mby * pc.mbw + mbx;
    if (t < 4u) SB[t] = mbi[mb * MBI_STRIDE + MBI_BS + t];
    // all 22 reads issued before the first is used: a loop that stored each into S before the next read waited
    // out a memory latency per sample
    // (each slot's place worked out once: the steps' critical path is a warp's arithmetic too)
    // (a slot outside the picture, or past the region's 688, is neither loaded nor stored: no edge reads it)
    uint v[22], kk[22], gg[22], in_pic = 0u, back = 0u;   // bits i: slot i is loaded; goes back into rec
    [[unroll]] for (uint i = 0u; i < 22u; i++) {
        if (region_at(t, i, mbx, mby, kk[i], gg[i])) in_pic |= 1u << i;
        v[i] = (in_pic & (1u << i)) != 0u ? rec[gg[i]] : 0u;
        if ((in_pic & (1u << i)) != 0u && slot_changed(i, slot_xy(t, i))) back |= 1u << i;
    }
    [[unroll]] for (uint i = 0u; i < 22u; i++)
        if ((in_pic & (1u << i)) != 0u) S[kk[i]] = int(v[i]);
    barrier();
    filter_mb(mbx, mby, t, qp, qpc);
    [[unroll]] for (uint i = 0u; i < 22u; i++)
        if ((back & (1u << i)) != 0u) rec[gg[i]] = uint(S[kk[i]]);
}

// A row of macroblocks left to right (the row wave: main), each as a step of the wave, after the row above has
// passed it by two (one poll, skipped while an earlier one already showed it far enough ahead). (Reading the
// left columns from S rather than rec, and writing the last 4 rows before the counter and the rest after it,
// measured 7 % slower on an H100.)
void deblock_row(uint mby, uint t, uint qp, uint qpc, uint ctr) {
    uint seen = 0u;
    for (uint mbx = 0u; mbx < pc.mbw; mbx++) {
        if (mby > 0u) {   // the row above two macroblocks ahead (or done): its samples are then visible
            uint need = min(mbx + 2u, pc.mbw);
            // (a bound, not a hang, where a device breaks the assumption: wrong samples then, which
            // test_h264_gpu's decoders would show)
            if (t == 0u) {
                for (uint spin = 0u; seen < need && spin < (1u << 24); spin++) seen = atomicAdd(bits[ctr - 1u], 0u);
                memoryBarrierBuffer();   // acquire: after the counter, the samples it covers
            }
            barrier();
            memoryBarrierBuffer();
        }
        deblock_mb(mbx, mby, t, qp, qpc);
        memoryBarrierBuffer();
        barrier();
        if (t == 0u) atomicExchange(bits[ctr], mbx + 1u);
    }
}

void main() {
    uint t = gl_LocalInvocationID.x, n = pc.mbw * pc.mbh;
    if (pc.pass == DEBLOCK_STRENGTHS) {   // a workgroup a macroblock, all at once
        strengths(gl_WorkGroupID.x, gl_WorkGroupID.y, t);
        return;
    }
    uint qp = pic.qp, qpc = pic.qpc;
    if (pc.pass != DEBLOCK_ROWS) {   // one step of the wave (wave_mb)
        uint mbx, mby;
        if (wave_mb(mbx, mby)) deblock_mb(mbx, mby, t, qp, qpc);   // false for the whole workgroup
        return;
    }
    deblock_row(gl_WorkGroupID.x, t, qp, qpc, BITS_ROWS(n) + gl_WorkGroupID.x);
}
