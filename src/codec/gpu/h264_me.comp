// SPDX-License-Identifier: MIT
// h264_me.comp — GPU H.264 stage 2 (P pictures): a 16×16 motion vector per macroblock and, where P_8x8 pays, one
// per 8×8 quadrant (fine(), at its end), in quarter samples.
// The coarse search (built with RC_ME_COARSE): a full search of ±ME_RANGE on the 4×4 means of the source and of
// the reference's source, the macroblock's 4×4 and a ring of one around them (±4·ME_RANGE pixels; the hierarchical
// search of e.g. Nam et al., "A fast hierarchical motion vector estimation algorithm using mean pyramid", IEEE TCSVT
// 1995). The fine search (built without it or RC_ME_POST) on the reference's reconstruction: ±2 whole pixels around the
// macroblock's coarse vector, around (0,0), around its vector in the last picture and around the median of its
// neighbours' coarse vectors (what mv_pred will make of their final ones: a uniform pan then needs no mvd, and a
// macroblock whose residual vanishes becomes P_Skip); then the 8 half-sample and the 8 quarter-sample positions
// around the best (8.4.2.2.1's interpolation, as the decoder makes it). The cost is SAD + lambda × the bits of
// the vector's difference to that median (se(v) lengths). One workgroup of 64 per macroblock.
// After it (built with RC_ME_POST): whether the macroblock is better intra (pc.pass ME_INTRA_CHOICE: intra_cost,
// inter_coded), and the adopt rounds (pc.pass ME_ADOPT + c), which settle the 16×16 vectors on the exact predictors
// once all are known. The three are pipelines of their own so that each reserves only its own shared memory and
// registers (the coarse and fine searches 6 and 11 kB rather than 17): more workgroups fit on a multiprocessor.
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "h264_common.glsl"
#include "h264_quant.glsl"
layout(local_size_x = 64) in;

#define ME_RANGE 16
#define ME_SIDE (2 * ME_RANGE + 1)

shared uint scost[64];
shared int sidx[64];
shared uint ssad[8];

uint se_bits(int v) {   // length of se(v)
    uint k = v > 0 ? uint(2 * v - 1) : uint(-2 * v);
    return 2u * uint(findMSB(k + 1u)) + 1u;
}

void reduce(uint t, uint cost, int idx) {
    scost[t] = cost;
    sidx[t] = idx;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (t < s) {
            uint c2 = scost[t + s];
            int i2 = sidx[t + s];
            if (c2 < scost[t] || (c2 == scost[t] && i2 < sidx[t])) { scost[t] = c2; sidx[t] = i2; }
        }
        barrier();
    }
}

ivec2 coarse_of(uint mb) { return ivec2(int(mbi[mb * MBI_STRIDE + 4u]), int(mbi[mb * MBI_STRIDE + 5u])); }

#ifdef RC_ME_COARSE
#define QSIDE (6 + 2 * ME_RANGE)
shared uint qrs[QSIDE * QSIDE];   // the reference's 1/4-size luma around the macroblock
shared uint qcs[36];              // the macroblock's 6 × 6

void coarse(uint mbx, uint mby, uint t) {
    uint lambda = pic.lambda;   // read before the tile's loads, so that its latency hides behind theirs
    uint mb = mby * pc.mbw + mbx;
    int qw = int(pc.mbw * 4u), qh = int(pc.mbh * 4u);
    int x0 = int(mbx) * 4 - 1, y0 = int(mby) * 4 - 1;
    const uint NQ = (QSIDE * QSIDE + 63) / 64;   // reads an invocation, all issued before the first is stored
    uint v[NQ];
    [[unroll]] for (uint k = 0u; k < NQ; k++) {
        uint i = min(t + 64u * k, QSIDE * QSIDE - 1u);
        v[k] = qref[clamp(y0 - ME_RANGE + int(i / QSIDE), 0, qh - 1) * qw + clamp(x0 - ME_RANGE + int(i % QSIDE), 0, qw - 1)];
    }
    [[unroll]] for (uint k = 0u; k < NQ; k++)
        if (t + 64u * k < QSIDE * QSIDE) qrs[t + 64u * k] = v[k];
    if (t < 36u) qcs[t] = qcur[clamp(y0 + int(t / 6u), 0, qh - 1) * qw + clamp(x0 + int(t % 6u), 0, qw - 1)];
    barrier();
    uint best = 0xFFFFFFFFu;
    int bi = 0x7FFFFFFF;
    for (int i = int(t); i < ME_SIDE * ME_SIDE; i += 64) {
        int dx = i % ME_SIDE - ME_RANGE, dy = i / ME_SIDE - ME_RANGE;
        uint sad = 0u;
        // the macroblock's 4×4 means and a ring around them: more texture to match
        for (int y = 0; y < 6; y++)
            for (int x = 0; x < 6; x++)
                sad += uint(abs(int(qcs[y * 6 + x]) - int(qrs[(y + dy + ME_RANGE) * QSIDE + x + dx + ME_RANGE])));
        // a hint for the fine search: the vector's bits weigh a quarter of the fine search's
        uint cost = sad * 16u + lambda * (se_bits(dx * 16) + se_bits(dy * 16)) / 4u;
        if (cost < best) { best = cost; bi = i; }
    }
    reduce(t, best, bi);
    if (t == 0u && mb == 0u) {   // set by intra_choice and adopt (RC_ME_POST)
        bits[pc.mbw * pc.mbh + INTRA_ANY] = 0u;
        for (uint r = 0u; r < ME_ADOPT_ROUNDS; r++) bits[BITS_ADOPT(pc.mbw * pc.mbh, pc.mbh) + r] = 0u;
        ctl[CTL_ADOPT_LOOKS(pc.mbh)] = 0u;
    }
    if (t == 0u) {
        mbi[mb * MBI_STRIDE + 6u] = mbi[mb * MBI_STRIDE + 1u];   // the last picture's vector: a temporal candidate
        mbi[mb * MBI_STRIDE + 7u] = mbi[mb * MBI_STRIDE + 2u];
        mbi[mb * MBI_STRIDE + MBI_ADOPTED] = 0u;   // no adopt stamp yet (the intra wave may write a depth, < it)
        mbi[mb * MBI_STRIDE + 4u] = uint((sidx[0] % ME_SIDE - ME_RANGE) * 16);   // 1/4 size → quarter samples
        mbi[mb * MBI_STRIDE + 5u] = uint((sidx[0] / ME_SIDE - ME_RANGE) * 16);
    }
}

#else
shared uint srcs[256];   // the macroblock's source samples
shared uint csad[25];
#ifndef RC_ME_POST
shared uint cbest, pms;   // fine(): a window's least cost and its index (packed), the SAD at the predictor
shared uint ncand, clist[25];   // ... the window's candidates no earlier window holds
// The fine search reads the reference through a tile in shared memory (loaded once per centre): TILE × TILE
// samples from (tox, toy), edge samples repeated as ref_y does.
// A row pitch of 25 words: the search's invocations read rows 1 apart (25 ≡ −7 banks) and columns 8 apart, which
// a pitch of 24 put more often in one of the 32 banks.
#define TILE 24
#define TPITCH 25
shared uint tile[TILE * TPITCH];
int tox, toy;
int tile_y(int x, int y) { return int(tile[(y - toy) * TPITCH + (x - tox)]); }

// The sub-sample stage's planes over R, the 18 × 18 whole-sample positions from (rx0, ry0) = the best whole-pixel
// block's origin − 1: G (the whole samples), b (half, right), h (half, below), j (centre), made once from the tile
// (b1: the unclipped horizontal 6-tap sums, rows from ry0 − 2), so that each quarter sample is two lookups (the
// same values as luma_q's, 8.4.2.2.1).
#define RS 18
#define RP (RS * RS)   // a plane's size: G at 0, b at RP, h at 2 RP, j at 3 RP
shared int b1s[(RS + 5) * RS];
shared uint pl[4 * RP];
int rx0, ry0;

void make_planes(uint t) {   // all invocations; after load_tile; ends with a barrier
    for (uint i = t; i < (RS + 5) * RS; i += 64u) {
        int u = rx0 + int(i % RS), v = ry0 - 2 + int(i / RS);
        b1s[i] = tap6(tile_y(u - 2, v), tile_y(u - 1, v), tile_y(u, v), tile_y(u + 1, v), tile_y(u + 2, v), tile_y(u + 3, v));
    }
    barrier();
    for (uint i = t; i < RP; i += 64u) {
        uint c = i % RS, r = i / RS;
        int u = rx0 + int(c), v = ry0 + int(r);
        pl[i] = uint(tile_y(u, v));
        pl[RP + i] = uint(clamp((b1s[(r + 2u) * RS + c] + 16) >> 5, 0, 255));
        pl[2u * RP + i] = uint(clamp((tap6(tile_y(u, v - 2), tile_y(u, v - 1), tile_y(u, v), tile_y(u, v + 1),
                                            tile_y(u, v + 2), tile_y(u, v + 3)) + 16) >> 5, 0, 255));
        int j1 = tap6(b1s[r * RS + c], b1s[(r + 1u) * RS + c], b1s[(r + 2u) * RS + c], b1s[(r + 3u) * RS + c],
                      b1s[(r + 4u) * RS + c], b1s[(r + 5u) * RS + c]);
        pl[3u * RP + i] = uint(clamp((j1 + 512) >> 10, 0, 255));
    }
    barrier();
}

// Every quarter sample of 8.4.2.2.1 is one plane sample or the rounded mean of two (a = (G + b + 1) >> 1, f = (b + j
// + 1) >> 1, e = (b + h + 1) >> 1, ...): its two lookups as offsets into pl (a single one twice), by fy × 4 + fx.
// The same two loads and one add for every fraction, so that invocations of one subgroup with different fractions
// take one path (a branch per fraction ran each subgroup's fractions one after another).
const uint LP_A[16] = uint[](0u, 0u, RP, 1u, 0u, RP, RP, RP,
                             2u * RP, 2u * RP, 3u * RP, 2u * RP + 1u, RS, RP + RS, RP + RS, RP + RS);
const uint LP_B[16] = uint[](0u, RP, RP, RP, 2u * RP, 2u * RP, 3u * RP, 2u * RP + 1u,
                             2u * RP, 3u * RP, 3u * RP, 3u * RP, 2u * RP, 2u * RP, 3u * RP, 2u * RP + 1u);
// The lookups of vector q (quarter samples) for the block at whole sample (bx, by): offsets into pl from the
// block's first sample; add y × RS + x for sample (x, y) of the block. (bx + q.x >> 2, …) and one more inside R.
uvec2 lp_at(int bx, int by, ivec2 q) {
    uint f = uint((q.y & 3) * 4 + (q.x & 3));
    uint i = uint((by + (q.y >> 2) - ry0) * RS + (bx + (q.x >> 2) - rx0));
    return uvec2(LP_A[f] + i, LP_B[f] + i);
}
uint luma_p(uvec2 o, uint i) { return (pl[o.x + i] + pl[o.y + i] + 1u) >> 1; }

shared uint qsad[4];    // the quadrants' SADs at the macroblock's vector
shared uint qs32[32];   // [quadrant][candidate]
shared uint qbest[4];   // a quadrant's least cost and its candidate (packed)
// SAD of one row y (0–7) of quadrant qd, 4 columns from x0, at vector q, from the planes.
uint sad_q8(uint mbx, uint mby, ivec2 q, uint qd, uint y, uint x0) {
    uint ox = (qd & 1u) * 8u, oy = (qd >> 1) * 8u, s = 0u;
    uvec2 o = lp_at(int(mbx * 16u + ox), int(mby * 16u + oy), q);
    for (uint x = x0; x < x0 + 4u; x++)
        s += uint(abs(int(srcs[(oy + y) * 16u + ox + x]) - int(luma_p(o, y * RS + x))));
    return s;
}

uint sad_p(uint mbx, uint mby, ivec2 q, uint y0, uint y1) {
    uint s = 0u;
    uvec2 o = lp_at(int(mbx * 16u), int(mby * 16u), q);
    for (uint y = y0; y < y1; y++)
        for (uint x = 0u; x < 16u; x++) s += uint(abs(int(srcs[y * 16u + x]) - int(luma_p(o, y * RS + x))));
    return s;
}

// All invocations; ends with a barrier. The 9 reads of an invocation are all issued before the first is stored (and
// before the barrier that waits for the tile's last readers): a loop storing each before the next read waited out
// a memory latency per sample.
void load_tile(int x0, int y0, uint t) {
    uint v[TILE * TILE / 64];
    [[unroll]] for (uint k = 0u; k < TILE * TILE / 64u; k++) {
        uint i = t + 64u * k;
        v[k] = uint(ref_y(x0 + int(i % TILE), y0 + int(i / TILE)));
    }
    barrier();
    tox = x0, toy = y0;
    [[unroll]] for (uint k = 0u; k < TILE * TILE / 64u; k++) {
        uint i = t + 64u * k;
        tile[(i / TILE) * TPITCH + i % TILE] = v[k];
    }
    barrier();
}

// SAD of columns x0..x0+w-1 of the macroblock at whole-pixel vector q (quarter samples, multiples of 4), from the
// tile: whole samples only, so no interpolation is compiled into the search's inner loop. Split by columns: the
// invocations of a candidate read the source 4 or 8 banks apart (rows 8 apart were 128 words, one bank).
uint sad_t(uint mbx, uint mby, ivec2 q, uint x0, uint w) {
    uint s = 0u;
    int bx = int(mbx * 16u) + (q.x >> 2) - tox, by = int(mby * 16u) + (q.y >> 2) - toy;
    for (uint y = 0u; y < 16u; y++) {
        uint row = uint(by + int(y)) * TPITCH + uint(bx);
        for (uint x = x0; x < x0 + w; x++) s += uint(abs(int(srcs[y * 16u + x]) - int(tile[row + x])));
    }
    return s;
}

void fine(uint mbx, uint mby, uint t) {
    uint lambda = pic.lambda, flags = pic.me_flags;   // read first: their latency hides behind the loads below
    uint mb = mby * pc.mbw + mbx;
    int W = int(lw());
    uint sv[4];
    [[unroll]] for (uint k = 0u; k < 4u; k++) sv[k] = src[(mby * 16u + (t + 64u * k) / 16u) * W + mbx * 16u + (t & 15u)];
    [[unroll]] for (uint k = 0u; k < 4u; k++) srcs[t + 64u * k] = sv[k];
    // the predictor the neighbours' vectors will likely make (their coarse ones; A, B, C as in mv_pred)
    ivec2 A = mbx > 0u ? coarse_of(mb - 1u) : ivec2(0), B = mby > 0u ? coarse_of(mb - pc.mbw) : ivec2(0);
    ivec2 C = mby > 0u && mbx + 1u < pc.mbw ? coarse_of(mb - pc.mbw + 1u) : mby > 0u && mbx > 0u ? coarse_of(mb - pc.mbw - 1u) : ivec2(0);
    ivec2 pm = mby == 0u ? A : ivec2(median3(A.x, B.x, C.x), median3(A.y, B.y, C.y));
    ivec2 prev = ivec2(int(mbi[mb * MBI_STRIDE + 6u]), int(mbi[mb * MBI_STRIDE + 7u])) & ~3;
    // inside the level limits' vector range (Table A-1: ±2048 horizontally, ±512 vertically, in whole pixels), with
    // room for the ±2 and the sub-sample steps
    const ivec2 lim = ivec2(2040 * 4, 500 * 4);
    ivec2 centre[4] = ivec2[](coarse_of(mb), ivec2(0), clamp(pm & ~3, -lim, lim), clamp(prev, -lim, lim));
    // whole pixels: ±2 around the coarse vector, (0,0), the neighbours' median and the last picture's vector (a
    // steady pan is found again even where the coarse search was fooled by a repeating grid); a centre equal to an
    // earlier one is not searched again, nor a candidate an earlier window holds (centres a pixel or two apart,
    // as a pan's coarse, predicted and last vectors often are, share most of their windows). A window's remaining
    // candidates are listed first (clist, in any order) and take two invocations each, 8 columns each, or four of
    // 4 columns where there are at most 16.
    // Their costs are worked out at once, an invocation each, and the least taken by one atomicMin of cost × 32 +
    // index: the first of the least in raster order, as a loop over them in that order would (which every
    // invocation ran, 25 steps, about as long as the SADs). Costs stay far below 2^27 (SAD ≤ 65280, λ ≤ 77). A
    // candidate skipped as an earlier window's was weighed there, where it wins a tie: the same choice as searching
    // every window whole.
    ivec2 bq = ivec2(0);
    uint bcost = 0xFFFFFFFFu, bsad = 0u;
    if (t == 0u) pms = 0xFFFFFFFFu;   // seen by all after load_tile's barriers
    for (uint c = 0u; c < 4u; c++) {
        bool dup = false;
        for (uint d = 0u; d < c; d++) dup = dup || centre[d] == centre[c];
        if (dup) continue;
        if (t == 0u) { cbest = 0xFFFFFFFFu; ncand = 0u; }
        if (t < 25u) csad[t] = 0u;
        barrier();
        if (t < 25u) {
            ivec2 q = centre[c] + ivec2(int(t % 5u) - 2, int(t / 5u) - 2) * 4;
            bool held = false;
            for (uint d = 0u; d < c; d++) held = held || all(lessThanEqual(abs(q - centre[d]), ivec2(8)));
            if (!held) clist[atomicAdd(ncand, 1u)] = t;
        }
        load_tile(int(mbx * 16u) + (centre[c].x >> 2) - 4, int(mby * 16u) + (centre[c].y >> 2) - 4, t);
        uint nc = ncand, per = nc <= 16u ? 4u : 2u, w = 16u / per;   // after load_tile's barriers
        if (t < nc * per) {
            uint j = clist[t / per];
            ivec2 q = centre[c] + ivec2(int(j % 5u) - 2, int(j / 5u) - 2) * 4;
            atomicAdd(csad[j], sad_t(mbx, mby, q, (t % per) * w, w));
        }
        barrier();
        if (t < nc) {
            uint j = clist[t];
            ivec2 q = centre[c] + ivec2(int(j % 5u) - 2, int(j / 5u) - 2) * 4;
            atomicMin(cbest, ((csad[j] + lambda * (se_bits(q.x - pm.x) + se_bits(q.y - pm.y))) << 5) | j);
            if (q == centre[2]) pms = csad[j];   // any window that holds it: the same SAD
        }
        barrier();
        uint m = cbest, j = m & 31u;
        if (nc > 0u && (m >> 5) < bcost) {   // an earlier centre's window keeps a tie
            bcost = m >> 5;
            bq = centre[c] + ivec2(int(j % 5u) - 2, int(j / 5u) - 2) * 4;
            bsad = csad[j];
        }
        barrier();
    }
    uint pmsad = pms;
    // half, then quarter samples: 8 neighbours each, 8 invocations a candidate (2 rows each), from one tile around
    // the best whole-pixel vector (every tap of ±3/4 sample lies within it); not where that one matches exactly
    load_tile(int(mbx * 16u) + (bq.x >> 2) - 4, int(mby * 16u) + (bq.y >> 2) - 4, t);
    rx0 = tox + 3, ry0 = toy + 3;
    ivec2 bw = bq;   // the best whole-pixel vector: the planes reach ±1 whole sample around it
    if ((flags & ME_INT_ONLY) == 0u && bsad > 0u) make_planes(t);
    for (int step = 2; step >= 1 && (flags & ME_INT_ONLY) == 0u && bsad > 0u; step >>= 1) {
        if (t < 8u) ssad[t] = 0u;
        barrier();
        uint c = t >> 3, part = t & 7u;
        uint ci = c < 4u ? c : c + 1u;   // the 3×3 neighbourhood without its centre
        ivec2 q = bq + ivec2(int(ci % 3u) - 1, int(ci / 3u) - 1) * step;
        atomicAdd(ssad[c], sad_p(mbx, mby, q, part * 2u, part * 2u + 2u));
        barrier();
        ivec2 nb = bq;
        uint nc = bcost;
        for (uint i = 0u; i < 8u; i++) {
            uint ii = i < 4u ? i : i + 1u;
            ivec2 qq = bq + ivec2(int(ii % 3u) - 1, int(ii / 3u) - 1) * step;
            uint cost = ssad[i] + lambda * (se_bits(qq.x - pm.x) + se_bits(qq.y - pm.y));
            if (cost < nc) { nc = cost; nb = qq; }
        }
        bq = nb;
        bcost = nc;
        barrier();
    }
    // P_8x8: each 8×8 quadrant's vector refined from the macroblock's, half then quarter samples (8 neighbours
    // each, 2 invocations a candidate, 4 rows each), within ±1 whole sample of bw; the vectors' bits counted
    // against the macroblock's vector (what the partitions' predictors mostly are). Chosen over 16×16 when the
    // quadrants' SADs and bits, with P_8x8's 8 more header bits (mb_type and 4 sub_mb_type), cost less: a zoom or
    // a rotation moves the corners of a macroblock differently.
    // The predicted vector where it costs about as much: a macroblock at the predictor with no residual is P_Skip,
    // nearly free, where one at another vector costs its mb_skip_run, mb_type, coded_block_pattern and vector
    // difference (about 3 bits more than its vector's): a still or steadily panned area is not coded again at a
    // vector that only fits the reference's coding noise (x264 probes P_Skip first for the same reason).
    bool at_pm = pmsad != 0xFFFFFFFFu && pmsad + 2u * lambda <= bcost + 3u * lambda;
    bool moved = at_pm && bq != centre[2];   // then the planes may not reach the quadrants' candidates
    if (at_pm) bq = centre[2];
    ivec2 qv[4] = ivec2[](bq, bq, bq, bq);
    bool p8 = false;
    // P_8x8 costs at least its header bits more than its four SADs, so where the 16×16 SAD is no more than those bits
    // it cannot win: not searched (the same choice, without the search; most macroblocks of a well-predicted picture)
    uint sad16 = at_pm ? pmsad : bcost - lambda * (se_bits(bq.x - pm.x) + se_bits(bq.y - pm.y));
    uint inter = at_pm ? pmsad + 2u * lambda : bcost;   // the chosen inter prediction's cost
    bool p8_may_pay = sad16 > (at_pm ? 11u : 8u) * lambda;
    if ((flags & (ME_INT_ONLY | ME_NO_P8X8)) == 0u && bsad > 0u && !moved && p8_may_pay) {
        if (t < 4u) qsad[t] = 0u;
        barrier();
        atomicAdd(qsad[t >> 4], sad_q8(mbx, mby, bq, t >> 4, (t & 15u) >> 1, (t & 1u) * 4u));
        barrier();
        uint qc[4], q16 = 0u;
        for (uint q = 0u; q < 4u; q++) { qc[q] = qsad[q] + 2u * lambda; q16 += qsad[q]; }
        for (int step = 2; step >= 1; step >>= 1) {
            if (t < 32u) qs32[t] = 0u;
            if (t < 4u) qbest[t] = qc[t] << 4;   // the quadrant's vector as it is: a candidate must cost less
            barrier();
            uint qd = t >> 4, c = (t >> 1) & 7u, h = t & 1u;
            uint ci = c < 4u ? c : c + 1u;
            ivec2 cand = qv[qd] + ivec2(int(ci % 3u) - 1, int(ci / 3u) - 1) * step;
            if (all(lessThanEqual(abs(cand - bw), ivec2(4))))
                for (uint r = h * 4u; r < h * 4u + 4u; r++)
                    atomicAdd(qs32[qd * 8u + c], sad_q8(mbx, mby, cand, qd, r, 0u) +
                                                     sad_q8(mbx, mby, cand, qd, r, 4u));
            barrier();
            // the 32 costs at once, each quadrant's least by atomicMin of cost × 16 + candidate + 1 (as above)
            if (t < 32u) {
                uint i = t & 7u, ii = i < 4u ? i : i + 1u;
                ivec2 cq = qv[t >> 3] + ivec2(int(ii % 3u) - 1, int(ii / 3u) - 1) * step;
                if (all(lessThanEqual(abs(cq - bw), ivec2(4))))
                    atomicMin(qbest[t >> 3], ((qs32[t] + lambda * (se_bits(cq.x - bq.x) + se_bits(cq.y - bq.y))) << 4) |
                                             (i + 1u));
            }
            barrier();
            for (uint q = 0u; q < 4u; q++) {
                uint m = qbest[q], i = (m & 15u) - 1u, ii = i < 4u ? i : i + 1u;
                if ((m & 15u) == 0u) continue;   // none cost less
                qc[q] = m >> 4;
                qv[q] += ivec2(int(ii % 3u) - 1, int(ii / 3u) - 1) * step;
            }
            barrier();
        }
        uint c8 = (at_pm ? 11u : 8u) * lambda;   // at the predictor, 16×16 may be P_Skip: 3 bits less
        for (uint q = 0u; q < 4u; q++) c8 += qc[q];
        p8 = c8 < q16 && (qv[0] != qv[1] || qv[0] != qv[2] || qv[0] != qv[3]);
        if (!p8) qv = ivec2[](bq, bq, bq, bq);
        if (p8) inter = c8;
    }
    if (t == 0u) {
        mbi[mb * MBI_STRIDE + 1u] = uint(bq.x);   // P_8x8: the temporal candidate and the neighbours' hint
        mbi[mb * MBI_STRIDE + 2u] = uint(bq.y);
        for (uint q = 0u; q < 4u; q++) {
            mbi[mb * MBI_STRIDE + MBI_QMV + 2u * q] = uint(qv[q].x);
            mbi[mb * MBI_STRIDE + MBI_QMV + 2u * q + 1u] = uint(qv[q].y);
        }
        mbi[mb * MBI_STRIDE + MBI_PART] = p8 ? MB_P8X8 : 0u;
        mbi[mb * MBI_STRIDE + MBI_SAD] = sad16;     // for adopt()
        mbi[mb * MBI_STRIDE + MBI_INTER] = inter;   // for intra_choice()
    }
}

#else

// The intra estimate: the least of Intra16x16 (vertical, horizontal, DC: 8.3.3) and of Intra4x4 with each 4×4
// block's best of vertical, horizontal and DC (8.3.1.2.1–3), as SAD + lambda × the mode's bits (a 16×16 mb_type
// in a P picture about 8 bits over P_L0_16x16's; I_NxN about 3 a block), predicted from the source's samples
// around each block. All invocations; uniform result.
shared uint nsrc[32];   // the source above (0–15), on the left (16–31)
shared uint isad[51];   // [3b + m] 4×4 block b (raster) in mode m (0 vertical, 1 horizontal, 2 DC); [48 + m] 16×16
uint intra_cost(uint mbx, uint mby, uint t) {
    uint W = lw();
    bool ht = mby > 0u, hl = mbx > 0u;
    if (t < 16u) nsrc[t] = ht ? src[(mby * 16u - 1u) * W + mbx * 16u + t] : 0u;
    else if (t < 32u) nsrc[t] = hl ? src[(mby * 16u + t - 16u) * W + mbx * 16u - 1u] : 0u;
    if (t < 51u) isad[t] = 0u;
    barrier();
    uint st = 0u, sl = 0u;
    for (uint k = 0u; k < 16u; k++) { st += nsrc[k]; sl += nsrc[16u + k]; }
    uint dc16 = ht && hl ? (st + sl + 16u) >> 5 : ht ? (st + 8u) >> 4 : hl ? (sl + 8u) >> 4 : 128u;
    // 16×16: row t >> 2, columns 4 (t & 3) ... + 3; 4×4: block t >> 2 (raster), its row t & 3
    uint v16 = 0u, h16 = 0u, d16 = 0u;
    uint y16 = t >> 2, x16 = (t & 3u) * 4u;
    for (uint k = 0u; k < 4u; k++) {
        int s = int(srcs[y16 * 16u + x16 + k]);
        v16 += uint(abs(s - int(nsrc[x16 + k])));
        h16 += uint(abs(s - int(nsrc[16u + y16])));
        d16 += uint(abs(s - int(dc16)));
    }
    uint b = t >> 2, r = t & 3u, bx = (b & 3u) * 4u, by = (b >> 2) * 4u;
    bool bt = by > 0u || ht, bl = bx > 0u || hl;
    uint above[4], left[4], sa = 0u, sle = 0u;
    for (uint k = 0u; k < 4u; k++) {
        above[k] = by > 0u ? srcs[(by - 1u) * 16u + bx + k] : nsrc[bx + k];
        left[k] = bx > 0u ? srcs[(by + k) * 16u + bx - 1u] : nsrc[16u + by + k];
        sa += above[k];
        sle += left[k];
    }
    uint dc4 = bt && bl ? (sa + sle + 4u) >> 3 : bt ? (sa + 2u) >> 2 : bl ? (sle + 2u) >> 2 : 128u;
    uint v4 = 0u, h4 = 0u, d4 = 0u;
    for (uint k = 0u; k < 4u; k++) {
        int s = int(srcs[(by + r) * 16u + bx + k]);
        v4 += uint(abs(s - int(above[k])));
        h4 += uint(abs(s - int(left[r])));
        d4 += uint(abs(s - int(dc4)));
    }
    atomicAdd(isad[48u], v16);
    atomicAdd(isad[49u], h16);
    atomicAdd(isad[50u], d16);
    atomicAdd(isad[3u * b], v4);
    atomicAdd(isad[3u * b + 1u], h4);
    atomicAdd(isad[3u * b + 2u], d4);
    barrier();
    uint i16 = isad[50u];
    if (ht) i16 = min(i16, isad[48u]);
    if (hl) i16 = min(i16, isad[49u]);
    uint i4 = 0u;
    for (uint k = 0u; k < 16u; k++) {
        uint kx = k & 3u, ky = k >> 2, c = isad[3u * k + 2u];
        if (ky > 0u || ht) c = min(c, isad[3u * k]);
        if (kx > 0u || hl) c = min(c, isad[3u * k + 1u]);
        i4 += c;
    }
    barrier();
    return min(i16 + 8u * pic.lambda, i4 + 48u * pic.lambda);
}

// Whether h264_mb would code any luma level of the inter prediction with vectors qv (per 8×8 quadrant): the 4×4
// transform and the inter quantizer of h264_mb's code_mb, then its decimation (an 8×8 under 4, the whole luma under
// 6). All invocations; uniform result.
shared int ires[256];    // the residual, raster 16×16
shared uint iscore[16];  // decimate_score per 4×4 block (luma4x4 raster order)
bool inter_coded(uint mbx, uint mby, uint t, ivec2 qv[4]) {
    for (uint i = t; i < 256u; i += 64u) {
        uint px = i & 15u, py = i >> 4;
        ivec2 mv = qv[(py >> 3) * 2u + (px >> 3)];
        ires[i] = int(srcs[i]) - luma_q(int(mbx * 16u + px) + (mv.x >> 2), int(mby * 16u + py) + (mv.y >> 2),
                                        mv.x & 3, mv.y & 3);
    }
    barrier();
    if (t < 16u) {
        int qp = int(pic.qp), qbits = 15 + qp / 6, m = qp % 6;
        int b[16];
        uint bx = (t & 3u) * 4u, by = (t >> 2) * 4u;
        for (uint r = 0u; r < 16u; r++) b[r] = ires[(by + (r >> 2)) * 16u + bx + (r & 3u)];
        fwd4(b);
        int z[16];
        for (uint k = 0u; k < 16u; k++) z[k] = quant(b[ZZ[k]], MF[m * 3 + pos_class(ZZ[k])], qbits, (1 << qbits) / 6);
        iscore[t] = decimate_score(z, 0);
    }
    barrier();
    uint smb = 0u;
    bool any8 = false;
    for (uint q = 0u; q < 4u; q++) {   // quadrant q: raster blocks (2 (q & 1), 2 (q >> 1)) and the three after
        uint b0 = (q >> 1) * 8u + (q & 1u) * 2u;
        uint s8 = min(iscore[b0] + iscore[b0 + 1u] + iscore[b0 + 4u] + iscore[b0 + 5u], 9u);
        smb += s8;
        any8 = any8 || s8 >= 4u;
    }
    barrier();
    return any8 && smb >= 6u;
}

// Whether macroblock (mbx, mby) is better intra, after the fine search (pc.pass ME_INTRA_CHOICE; not dispatched where
// intra macroblocks in P pictures are off): sets MB_INTRA in its MBI_PART and the picture's INTRA_ANY.
// An intra macroblock where no vector predicts well (an area the motion uncovered, a change of content), as
// x264 weighs intra against inter in P pictures (x264_mb_analyse_intra after the inter analysis). The intra
// cost is estimated from the source's own neighbours (their reconstruction is not made yet), which lack the
// coding noise the decoder's prediction will have: it pays 64 λ more (the least bits of 0, 32, 48, 64, 96 and
// 128 λ on the 1080p pan, zoom, rotation and 40-px pan at equal PSNR, docs/benchmarks.md). Never where the inter
// residual would not be coded at all (a luma-only check at the chosen vectors, like x264's P_Skip probe,
// x264_macroblock_probe_pskip): the SADs there are the reference's coding noise, which the estimate does not
// see.
// A pass of its own, not the end of fine(): its code and shared memory would weigh on every workgroup of the
// search (registers and shared memory are reserved for the longest path), and a contended device skips it.
void intra_choice(uint mbx, uint mby, uint t) {
    uint mb = mby * pc.mbw + mbx, inter = mbi[mb * MBI_STRIDE + MBI_INTER];
    if (inter <= 8u * pic.lambda) return;   // the whole workgroup
    uint W = lw();
    for (uint k = 0u; k < 4u; k++)
        srcs[t + 64u * k] = src[(mby * 16u + (t + 64u * k) / 16u) * W + mbx * 16u + (t & 15u)];
    barrier();
    bool intra = intra_cost(mbx, mby, t) + 64u * pic.lambda < inter;
    if (intra) {
        ivec2 qv[4];
        for (uint q = 0u; q < 4u; q++)
            qv[q] = ivec2(int(mbi[mb * MBI_STRIDE + MBI_QMV + 2u * q]), int(mbi[mb * MBI_STRIDE + MBI_QMV + 2u * q + 1u]));
        intra = inter_coded(mbx, mby, t, qv);
    }
    if (intra && t == 0u) {
        mbi[mb * MBI_STRIDE + MBI_PART] |= MB_INTRA;
        bits[pc.mbw * pc.mbh + INTRA_ANY] = 1u;   // h264_scan's intra_wave runs
    }
}

// After the fine search (pc.pass ME_ADOPT + c: round c / 4, colour c % 4): a P_L0_16x16 macroblock takes its P_Skip vector, or else
// its vector predictor, where that costs no more than its own vector (SAD + λ × the vector difference's bits,
// the P_Skip vector 4 λ less: no mb_type, coded_block_pattern or vector difference when its residual vanishes).
// The fine search could only guess the predictor from the neighbours' coarse vectors; here it is exact for
// their vectors as they stand. In a smooth motion field (a rotation, a zoom) the vectors found apart differ by
// a quarter sample here and there, each difference costs bits, and at a high QP those bits were most of a
// picture. Macroblocks of colour c = (x + 2y) mod 4 at once: none of them is another's A, B, C or D (8.4.1.3),
// so each sees its neighbours as the CAVLC stage will, except those of later colours that change after it.
// A macroblock decides from its own vector and SAD and its neighbours A, B, C, D: where none of them changed since
// its last look, it would decide the same (its own change then is one the same look keeps). So a round after the
// first looks again only where a neighbour's stamp (MBI_ADOPTED) is of dispatches c − 3 to c − 1, those since the
// macroblock's turn in the last round (c − 4: a look, or a turn skipped because nothing had changed since the look
// before), and a round after one that changed no macroblock at all returns at once.
void adopt(uint c, uint t) {
    uint round = c >> 2, n = pc.mbw * pc.mbh;
    bool all_ = (pic.me_flags & ME_ADOPT_ALL) != 0u;   // tests: no look skipped
    if (round > 0u && !all_ && bits[BITS_ADOPT(n, pc.mbh) + round - 1u] == 0u) return;   // the whole workgroup
    uint mby = gl_WorkGroupID.y, mbx = gl_WorkGroupID.x * 4u + (((c & 3u) + 4u - (2u * mby) % 4u) % 4u);
    if (mbx >= pc.mbw) return;   // the whole workgroup
    uint mb = mby * pc.mbw + mbx;
    if (mbi[mb * MBI_STRIDE + MBI_PART] != 0u) return;   // P_8x8 or intra: kept
    if (round > 0u && !all_) {
        bool moved = false;
        for (int k = 0; k < 4; k++) {   // A, B, C, D
            int nx = int(mbx) + (k == 0 ? -1 : k == 1 ? 0 : k == 2 ? 1 : -1), ny = int(mby) - (k == 0 ? 0 : 1);
            if (nx < 0 || ny < 0 || nx >= int(pc.mbw)) continue;
            uint st = mbi[(uint(ny) * pc.mbw + uint(nx)) * MBI_STRIDE + MBI_ADOPTED];
            moved = moved || (st + 3u >= ADOPT_STAMP + c && st < ADOPT_STAMP + c);
        }
        if (!moved) return;   // the whole workgroup
    }
    ivec2 own = mb_mv(mb), pmv = mv_pred(mbx, mby), sv = skip_mv(mbx, mby);
    if (t == 0u && (pic.me_flags & ME_ADOPT_COUNT) != 0u) atomicAdd(ctl[CTL_ADOPT_LOOKS(pc.mbh)], 1u);   // tests
    if (own == sv) return;
    uint W = lw();
    for (uint k = 0u; k < 4u; k++)
        srcs[t + 64u * k] = src[(mby * 16u + (t + 64u * k) / 16u) * W + mbx * 16u + (t & 15u)];
    if (t < 2u) csad[t] = 0u;
    barrier();
    ivec2 cand[2] = ivec2[](sv, pmv);
    for (uint j = 0u; j < 2u; j++) {
        uint s = 0u;
        for (uint k = 0u; k < 4u; k++) {
            uint i = t + 64u * k, px = i & 15u, py = i >> 4;
            ivec2 v = cand[j];
            s += uint(abs(int(srcs[i]) - luma_q(int(mbx * 16u + px) + (v.x >> 2), int(mby * 16u + py) + (v.y >> 2),
                                                  v.x & 3, v.y & 3)));
        }
        atomicAdd(csad[j], s);
    }
    barrier();
    uint l = pic.lambda;
    uint cown = mbi[mb * MBI_STRIDE + MBI_SAD] + l * (se_bits(own.x - pmv.x) + se_bits(own.y - pmv.y));
    uint csv = csad[0] + l * (se_bits(sv.x - pmv.x) + se_bits(sv.y - pmv.y));
    uint cpm = csad[1] + 2u * l;
    ivec2 v = own;
    uint sad = 0u;
    if (csv <= cown + 4u * l && csv <= cpm + 4u * l) { v = sv; sad = csad[0]; }
    else if (cpm <= cown) { v = pmv; sad = csad[1]; }
    if (t == 0u && v != own) {
        atomicAdd(bits[BITS_ADOPT(n, pc.mbh) + round], 1u);
        mbi[mb * MBI_STRIDE + MBI_ADOPTED] = ADOPT_STAMP + c;
        mbi[mb * MBI_STRIDE + 1u] = uint(v.x);
        mbi[mb * MBI_STRIDE + 2u] = uint(v.y);
        for (uint q = 0u; q < 4u; q++) {
            mbi[mb * MBI_STRIDE + MBI_QMV + 2u * q] = uint(v.x);
            mbi[mb * MBI_STRIDE + MBI_QMV + 2u * q + 1u] = uint(v.y);
        }
        mbi[mb * MBI_STRIDE + MBI_SAD] = sad;
    }
}
#endif   // RC_ME_POST
#endif   // RC_ME_COARSE

void main() {
    uint mbx = gl_WorkGroupID.x, mby = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
#if defined(RC_ME_COARSE)
    coarse(mbx, mby, t);
#elif defined(RC_ME_POST)
    if (pc.pass >= ME_ADOPT) adopt(pc.pass - ME_ADOPT, t);
    else if (pc.pass == ME_INTRA_CHOICE) intra_choice(mbx, mby, t);
#else
    fine(mbx, mby, t);
#endif
}
