// SPDX-License-Identifier: MIT
// h264_mb.comp — GPU H.264 stage 3: prediction, the 4×4 integer transform, quantization, and the reconstruction a
// decoder makes from the levels (ITU-T H.264 clause 8.5: 8.5.10 Intra16x16 DC, 8.5.11 chroma DC, 8.5.12 scaling
// and the inverse transform, with flat scaling matrices), so that the next picture predicts from exactly what the
// decoder has (no drift).
//  - P pictures (pic.intra 0, one slice): one workgroup per macroblock. P_L0_16x16 or P_8x8 (four 8×8
//    partitions, sub_mb_type P_L0_8x8) with the quarter-sample motion vectors of h264_me (luma by 8.4.2.2.1's 6-tap filter, chroma by 8.4.2.2.2's bilinear rule), or P_Skip when
//    that vector is the P_Skip vector (8.4.1.1, from the neighbours' vectors) and every level is 0. The macroblocks
//    the motion search made intra (MB_INTRA) are left to the RC_INTRA build.
//  - IDR pictures (pic.intra 1, built with RC_INTRA), one slice: Intra16x16 (intra_pred: vertical, horizontal, DC
//    or plane, whichever has the smallest SAD) or Intra4x4 (intra4x4 below), whichever costs less; chroma the same
//    four. A macroblock predicts from its neighbours' reconstruction, so the picture is coded in a wavefront: one
//    dispatch a step (pc.pass = s: the macroblocks with x + 2y = s), one workgroup a macroblock.
//  - The intra macroblocks of P pictures (pic.intra 0, RC_INTRA), the same way, after the inter ones, from which
//    they may predict (constrained_intra_pred_flag 0): step pc.pass codes those h264_scan's intra_wave listed for it.
// Forward quantization as in the JM reference encoder: (|c| × MF + f) >> (15 + qp/6), f = 2^qbits/3 intra,
// /6 inter; levels limited to ±2047 so that CAVLC codes them with level_prefix ≤ 15 (Baseline).
// 16 invocations: one per 4×4 luma block; the first 8 also take the 4×4 chroma blocks (Cb 0–3, Cr 0–3).
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "h264_common.glsl"
#include "h264_quant.glsl"
layout(local_size_x = 16) in;

// luma4x4BlkIdx → (x, y) of the block in 4×4 units (6.4.3)
const uint BX[16] = uint[](0u, 1u, 0u, 1u, 2u, 3u, 2u, 3u, 0u, 1u, 0u, 1u, 2u, 3u, 2u, 3u);
const uint BY[16] = uint[](0u, 0u, 1u, 1u, 0u, 0u, 1u, 1u, 2u, 2u, 3u, 3u, 2u, 2u, 3u, 3u);
// raster index of a 4×4 block (y·4 + x) → luma4x4BlkIdx
const uint IDX4[16] = uint[](0u, 1u, 4u, 5u, 2u, 3u, 6u, 7u, 8u, 9u, 12u, 13u, 10u, 11u, 14u, 15u);

shared int pred[256];   // luma prediction, raster 16×16
shared int predc[128];  // chroma prediction, Cb then Cr, raster 8×8
shared int dcc[16];     // luma DC coefficients (raster of blocks), then levels
shared int cdc[8];      // chroma DC coefficients per component (raster 2×2), then levels
shared uint sad[8];     // mode decision
shared uint nzflag[3];  // luma AC / luma any, chroma DC, chroma AC nonzero
shared uint dsc[16];    // decimation scores of the luma blocks
shared int r4[256];     // Intra4x4: the macroblock's luma reconstruction, raster 16×16
shared int lv4[256];    // ... its levels, block by block in luma4x4BlkIdx order, each in coding order
shared uint mode4[16];  // ... its Intra4x4PredMode per block
shared uint lmode4[4];  // the left macroblock's modes of its right column (2 where it is not Intra4x4, or absent)
shared uint tmode4[4];  // the upper macroblock's modes of its bottom row (the same)
// Intra4x4 codes up to two 4×4 blocks at once (slots k = 0, 1: intra4x4's wavefront); per slot:
shared int p9[2 * 144]; // the 9 modes' predictions of the block
shared uint c9[2 * 9];  // ... and their costs
shared int edge[2 * 13]; // the block's neighbours: [0] above left, [1, 8] above and above right, [9, 12] left
shared uint satd16;
shared uint dscc[8];    // ... and of the chroma AC blocks

void inv4(inout int d[16]) {   // 8.5.12.2: rows first, then columns, then (x + 32) >> 6
    for (int i = 0; i < 4; i++) {
        int e0 = d[i * 4] + d[i * 4 + 2], e1 = d[i * 4] - d[i * 4 + 2];
        int e2 = (d[i * 4 + 1] >> 1) - d[i * 4 + 3], e3 = d[i * 4 + 1] + (d[i * 4 + 3] >> 1);
        d[i * 4] = e0 + e3; d[i * 4 + 1] = e1 + e2; d[i * 4 + 2] = e1 - e2; d[i * 4 + 3] = e0 - e3;
    }
    for (int i = 0; i < 4; i++) {
        int g0 = d[i] + d[8 + i], g1 = d[i] - d[8 + i];
        int g2 = (d[4 + i] >> 1) - d[12 + i], g3 = d[4 + i] + (d[12 + i] >> 1);
        d[i] = (g0 + g3 + 32) >> 6; d[4 + i] = (g1 + g2 + 32) >> 6;
        d[8 + i] = (g1 - g2 + 32) >> 6; d[12 + i] = (g0 - g3 + 32) >> 6;
    }
}

uint cplane(uint c) { return c == 0u ? plane_u() : plane_v(); }

// Codes macroblock (mbx, mby): prediction already in pred/predc; writes levels, TotalCoeffs, flags, reconstruction.
void code_mb(uint mbx, uint mby, uint t, bool intra, uint lmode, uint cmode, bool i4) {
    uint mb = mby * pc.mbw + mbx;
    uint L = lw(), CW = cwid();
    int qp = int(pic.qp), qpc = int(pic.qpc);
    int qbits = 15 + qp / 6, qbitsc = 15 + qpc / 6;
    int f = intra ? (1 << qbits) / 3 : (1 << qbits) / 6;
    int fc = intra ? (1 << qbitsc) / 3 : (1 << qbitsc) / 6;
    int m = qp % 6, mc = qpc % 6;
    uint lbase = mb * LEV_STRIDE;
    if (t < 3u) nzflag[t] = 0u;
    barrier();
    // luma block t (Intra4x4: coded already by intra4x4, its levels in lv4)
    uint bx = BX[t], by = BY[t];
    int zl[16];   // levels in coding (zig-zag) order
    if (i4) {
        for (uint k = 0u; k < 16u; k++) zl[k] = lv4[t * 16u + k];
    } else {
        int b[16];
        for (uint r = 0u; r < 16u; r++) {
            uint x = bx * 4u + (r & 3u), y = by * 4u + (r >> 2);
            b[r] = int(src[(mby * 16u + y) * L + mbx * 16u + x]) - pred[y * 16u + x];
        }
        fwd4(b);
        int lv[16];
        for (uint r = 0u; r < 16u; r++) lv[r] = quant(b[r], MF[m * 3 + pos_class(r)], qbits, f);
        if (intra) { dcc[by * 4u + bx] = b[0]; lv[0] = 0; }
        for (uint k = 0u; k < 16u; k++) zl[k] = lv[ZZ[k]];
    }
    dsc[t] = intra ? 9u : decimate_score(zl, 0);
    // chroma blocks: invocation t < 8 takes component t / 4, block t % 4
    int cb[16];
    uint cc = t >> 2, cbk = t & 3u, cac = 0u;
    if (t < 8u) {
        uint cx0 = (cbk & 1u) * 4u, cy0 = (cbk >> 1) * 4u;
        for (uint r = 0u; r < 16u; r++) {
            uint x = cx0 + (r & 3u), y = cy0 + (r >> 2);
            cb[r] = int(src[cplane(cc) + (mby * 8u + y) * CW + mbx * 8u + x]) - predc[cc * 64u + y * 8u + x];
        }
        fwd4(cb);
        cdc[cc * 4u + cbk] = cb[0];
        int z[16];   // the AC levels in coding order, written now and zeroed after the barrier if decimated
        z[0] = 0;
        for (uint k = 1u; k < 16u; k++) {
            z[k] = quant(cb[ZZ[k]], MF[mc * 3 + pos_class(ZZ[k])], qbitsc, fc);
            lev[lbase + LEV_CAC + t * 16u + k] = z[k];
            cac += z[k] != 0 ? 1u : 0u;
        }
        dscc[t] = intra ? 9u : decimate_score(z, 1);
    }
    barrier();
    // Decimation (P pictures): the levels of a block that holds only a few scattered ±1 cost more bits than they
    // are worth, so an 8×8 luma quadrant scoring under 4, all of the luma under 6 and a chroma component's AC under
    // 7 are zeroed (the JM reference encoder's coefficient cost thresholds, as x264 applies them:
    // x264_macroblock_encode_p and x264_mb_encode_chroma; decimate_score above).
    uint q8 = t & ~3u, s8 = min(dsc[q8] + dsc[q8 + 1u] + dsc[q8 + 2u] + dsc[q8 + 3u], 9u);
    uint smb = 0u;
    for (uint k = 0u; k < 16u; k += 4u) {
        uint s = min(dsc[k] + dsc[k + 1u] + dsc[k + 2u] + dsc[k + 3u], 9u);
        smb += s;   // x264 and JM count a quadrant's score here even where it was zeroed
    }
    if (!intra && (s8 < 4u || smb < 6u))
        for (uint k = 0u; k < 16u; k++) zl[k] = 0;
    uint tc = 0u;
    for (uint k = 0u; k < 16u; k++) {
        lev[lbase + 16u + t * 16u + k] = zl[k];
        tc += zl[k] != 0 ? 1u : 0u;
    }
    if (tc != 0u) atomicOr(nzflag[0], 1u << (t >> 2));   // per 8×8 (luma4x4BlkIdx / 4)
    if (t < 8u) {
        uint c4 = cc * 4u;
        if (!intra && dscc[c4] + dscc[c4 + 1u] + dscc[c4 + 2u] + dscc[c4 + 3u] < 7u) {
            for (uint k = 1u; k < 16u; k++) lev[lbase + LEV_CAC + t * 16u + k] = 0;
            cac = 0u;
        }
        mbi[mb * MBI_STRIDE + MBI_TC + 16u + t] = cac;
        if (cac != 0u) atomicOr(nzflag[2], 1u);
    }
    // DC transforms: invocation 0 the luma DC (Intra16x16), 1 and 2 the chroma DC of Cb and Cr
    if (t == 0u && intra && !i4) {
        int d[16];
        for (int i = 0; i < 16; i++) d[i] = dcc[i];
        // 4×4 Hadamard, then / 2
        for (int i = 0; i < 4; i++) {
            int a = d[i * 4] + d[i * 4 + 1], bb = d[i * 4 + 2] + d[i * 4 + 3];
            int c = d[i * 4] - d[i * 4 + 1], e = d[i * 4 + 2] - d[i * 4 + 3];
            d[i * 4] = a + bb; d[i * 4 + 1] = a - bb; d[i * 4 + 2] = c - e; d[i * 4 + 3] = c + e;
        }
        for (int i = 0; i < 4; i++) {
            int a = d[i] + d[4 + i], bb = d[8 + i] + d[12 + i];
            int c = d[i] - d[4 + i], e = d[8 + i] - d[12 + i];
            d[i] = a + bb; d[4 + i] = a - bb; d[8 + i] = c - e; d[12 + i] = c + e;
        }
        uint any = 0u;
        for (int i = 0; i < 16; i++) {
            int l = quant(d[i] >> 1, MF[m * 3], qbits + 1, 2 * f);
            dcc[i] = l;
            any |= l != 0 ? 1u : 0u;
        }
        for (uint k = 0u; k < 16u; k++) lev[lbase + k] = dcc[ZZ[k]];
    }
    if (t == 1u || t == 2u) {
        uint c = t - 1u;
        int w0 = cdc[c * 4u], w1 = cdc[c * 4u + 1u], w2 = cdc[c * 4u + 2u], w3 = cdc[c * 4u + 3u];
        int y[4] = int[](w0 + w1 + w2 + w3, w0 - w1 + w2 - w3, w0 + w1 - w2 - w3, w0 - w1 - w2 + w3);
        uint any = 0u;
        for (uint i = 0u; i < 4u; i++) {
            int l = quant(y[i], MF[mc * 3], qbitsc + 1, 2 * fc);
            cdc[c * 4u + i] = l;
            lev[lbase + LEV_CDC + c * 4u + i] = l;
            any |= l != 0 ? 1u : 0u;
        }
        if (any != 0u) atomicOr(nzflag[1], 1u);
    }
    barrier();
    // the decisions: coded_block_pattern, P_Skip
    uint cbpl = nzflag[0], cbpc = nzflag[2] != 0u ? 2u : nzflag[1] != 0u ? 1u : 0u;
    if (intra && !i4 && cbpl != 0u) cbpl = 15u;   // Intra16x16: all AC blocks or none
    bool skip = false;
    if (!intra) {
        skip = (mbi[mb * MBI_STRIDE + MBI_PART] & MB_P8X8) == 0u && mb_mv(mb) == skip_mv(mbx, mby) && cbpl == 0u && cbpc == 0u;
    }
    // TotalCoeff of block t as a neighbour sees it (0 where its 8×8 is not coded)
    mbi[mb * MBI_STRIDE + MBI_TC + t] = (cbpl & (1u << (t >> 2))) != 0u ? tc : 0u;
    if (cbpc != 2u && t < 8u) mbi[mb * MBI_STRIDE + MBI_TC + 16u + t] = 0u;
    if (t == 0u && intra) {   // no vector: the next picture's temporal candidate starts from (0,0)
        mbi[mb * MBI_STRIDE + 1u] = 0u;
        mbi[mb * MBI_STRIDE + 2u] = 0u;
    }
    if (t == 0u)
        mbi[mb * MBI_STRIDE] = (skip ? 1u : 0u) | (lmode << 1) | (cmode << 3) | ((cbpl | (cbpc << 4)) << 8) |
                               (intra ? 1u << 16 : 0u) | (i4 ? 1u << 17 : 0u) |
                               (!intra && (mbi[mb * MBI_STRIDE + MBI_PART] & MB_P8X8) != 0u ? 1u << 17 : 0u);
    // reconstruction from the levels, as the decoder does (Intra4x4: made block by block in r4)
    if (i4) {
        for (uint r = 0u; r < 16u; r++) {
            uint x = bx * 4u + (r & 3u), y = by * 4u + (r >> 2);
            rec[(mby * 16u + y) * L + mbx * 16u + x] = uint(r4[y * 16u + x]);
        }
    } else {
        int d[16];
        for (uint r = 0u; r < 16u; r++) d[r] = 0;
        for (uint k = 0u; k < 16u; k++) d[ZZ[k]] = lev[lbase + 16u + t * 16u + k];
        for (uint r = 0u; r < 16u; r++) d[r] = (d[r] * V[m * 3 + pos_class(r)]) << (qp / 6);
        if (intra) {   // 8.5.10: the inverse Hadamard of the DC levels, scaled
            // f = H c H for this block's position: row by of H times c times column bx of H
            const int H[16] = int[](1, 1, 1, 1, 1, 1, -1, -1, 1, -1, -1, 1, 1, -1, 1, -1);
            int s = 0;
            for (uint i = 0u; i < 4u; i++)
                for (uint j = 0u; j < 4u; j++) s += H[by * 4u + i] * dcc[i * 4u + j] * H[j * 4u + bx];
            int ls = 16 * V[m * 3];
            d[0] = qp >= 36 ? (s * ls) << (qp / 6 - 6) : (s * ls + (1 << (5 - qp / 6))) >> (6 - qp / 6);
        }
        if (cbpl == 0u && !intra) for (uint r = 0u; r < 16u; r++) d[r] = 0;
        inv4(d);
        for (uint r = 0u; r < 16u; r++) {
            uint x = bx * 4u + (r & 3u), y = by * 4u + (r >> 2);
            rec[(mby * 16u + y) * L + mbx * 16u + x] = uint(clamp(pred[y * 16u + x] + d[r], 0, 255));
        }
    }
    if (t < 8u) {
        int d[16];
        for (uint r = 0u; r < 16u; r++) d[r] = 0;
        if (cbpc == 2u)
            for (uint k = 1u; k < 16u; k++) d[ZZ[k]] = lev[lbase + LEV_CAC + t * 16u + k];
        for (uint r = 1u; r < 16u; r++) d[r] = (d[r] * V[mc * 3 + pos_class(r)]) << (qpc / 6);
        // 8.5.11.2: f = H2 c H2, dcC = ((f × LevelScale(qPc % 6, 0, 0)) << (qPc / 6)) >> 5
        int c0 = cdc[cc * 4u], c1 = cdc[cc * 4u + 1u], c2 = cdc[cc * 4u + 2u], c3 = cdc[cc * 4u + 3u];
        int fdc = cbk == 0u ? c0 + c1 + c2 + c3 : cbk == 1u ? c0 - c1 + c2 - c3 : cbk == 2u ? c0 + c1 - c2 - c3
                                                                                             : c0 - c1 - c2 + c3;
        d[0] = ((fdc * 16 * V[mc * 3]) << (qpc / 6)) >> 5;
        if (cbpc == 0u) for (uint r = 0u; r < 16u; r++) d[r] = 0;
        inv4(d);
        uint cx0 = (cbk & 1u) * 4u, cy0 = (cbk >> 1) * 4u;
        for (uint r = 0u; r < 16u; r++) {
            uint x = cx0 + (r & 3u), y = cy0 + (r >> 2);
            rec[cplane(cc) + (mby * 8u + y) * CW + mbx * 8u + x] =
                uint(clamp(predc[cc * 64u + y * 8u + x] + d[r], 0, 255));
        }
    }
}

// P_L0_16x16 or P_8x8: each 8×8 quadrant predicted with its own vector (all four alike for 16×16).
void inter_pred(uint mbx, uint mby, uint t) {
    uint mb = mby * pc.mbw + mbx;
    int CW = int(cwid()), CH = int(chei());
    for (uint i = t; i < 256u; i += 16u) {
        uint px = i & 15u, py = i >> 4;
        ivec2 mv = q_mv(mb, (py >> 3) * 2u + (px >> 3));
        int x = int(mbx * 16u + px), y = int(mby * 16u + py);
        pred[i] = luma_q(x + (mv.x >> 2), y + (mv.y >> 2), mv.x & 3, mv.y & 3);
    }
    // chroma: the vector in 1/8 chroma samples is the luma vector in 1/4 samples, 8.4.1.4 and 8.4.2.2.2
    for (uint i = t; i < 128u; i += 16u) {
        uint c = i >> 6, j = i & 63u, cx = j & 7u, cy = j >> 3;
        ivec2 mv = q_mv(mb, (cy >> 2) * 2u + (cx >> 2));
        int vx = mv.x, vy = mv.y;
        int fx = vx & 7, fy = vy & 7;
        int xi = int(mbx * 8u + cx) + (vx >> 3), yi = int(mby * 8u + cy) + (vy >> 3);
        int x0 = clamp(xi, 0, CW - 1), x1 = clamp(xi + 1, 0, CW - 1);
        int y0 = clamp(yi, 0, CH - 1), y1 = clamp(yi + 1, 0, CH - 1);
        uint p = cplane(c);
        int A = int(ref[p + y0 * CW + x0]), B = int(ref[p + y0 * CW + x1]);
        int C = int(ref[p + y1 * CW + x0]), D = int(ref[p + y1 * CW + x1]);
        predc[i] = ((8 - fx) * (8 - fy) * A + fx * (8 - fy) * B + (8 - fx) * fy * C + fx * fy * D + 32) >> 6;
    }
}

// Intra16x16 with the left neighbour only: lmode 1 (horizontal) or 2 (DC); chroma cmode 1 (horizontal) or 0 (DC).
#ifdef RC_INTRA
// The neighbours of the macroblock (8.3.3, 8.3.4): the row above and the column on the left (128 where not
// available), and the sample above on the left; chroma the same per component.
shared int ntop[16], nleft[16], ctop[16], cleft[16];   // chroma: Cb in [0, 8), Cr in [8, 16)
shared int ncorner[3];                                  // luma, Cb, Cr
shared int ntr[4];                                      // luma above on the right (x 16–19)

// Intra16x16 (8.3.3) and chroma (8.3.4) prediction of intra macroblock (mbx, mby) in a picture of one slice: each
// mode whose neighbours are available (vertical, horizontal, DC, plane), the one with the least SAD against the
// source; into pred and predc, the modes into lmode (Intra16x16PredMode) and cmode (intra_chroma_pred_mode).
void intra_pred(uint mbx, uint mby, uint t, out uint lmode, out uint cmode) {
    uint L = lw(), CW = cwid();
    bool hl = mbx > 0u, ht = mby > 0u;
    if (t < 8u) sad[t] = 0u;
    ntop[t] = ht ? int(rec[(mby * 16u - 1u) * L + mbx * 16u + t]) : 128;
    nleft[t] = hl ? int(rec[(mby * 16u + t) * L + mbx * 16u - 1u]) : 128;
    uint c = t >> 3, i = t & 7u, p = cplane(c);
    ctop[t] = ht ? int(rec[p + (mby * 8u - 1u) * CW + mbx * 8u + i]) : 128;
    cleft[t] = hl ? int(rec[p + (mby * 8u + i) * CW + mbx * 8u - 1u]) : 128;
    if (t < 4u) ntr[t] = ht && mbx + 1u < pc.mbw ? int(rec[(mby * 16u - 1u) * L + mbx * 16u + 16u + t]) : 128;
    if (t < 3u) {
        uint pl = t == 0u ? 0u : cplane(t - 1u), w = t == 0u ? L : CW, s = t == 0u ? 16u : 8u;
        ncorner[t] = ht && hl ? int(rec[pl + (mby * s - 1u) * w + mbx * s - 1u]) : 128;
    }
    barrier();
    // luma: DC (8.3.3.3) and plane (8.3.3.4) from the neighbours; row t's SAD of each mode
    int st = 0, sl = 0, H = 0, V = 0;
    for (int k = 0; k < 16; k++) st += ntop[k], sl += nleft[k];
    for (int k = 0; k < 8; k++) {
        H += (k + 1) * (ntop[8 + k] - (k < 7 ? ntop[6 - k] : ncorner[0]));
        V += (k + 1) * (nleft[8 + k] - (k < 7 ? nleft[6 - k] : ncorner[0]));
    }
    int dc = ht && hl ? (st + sl + 16) >> 5 : hl ? (sl + 8) >> 4 : ht ? (st + 8) >> 4 : 128;
    int pa = 16 * (nleft[15] + ntop[15]), pb = (5 * H + 32) >> 6, pc_ = (5 * V + 32) >> 6;
    uint s0 = 0u, s1 = 0u, s2 = 0u, s3 = 0u;
    for (uint x = 0u; x < 16u; x++) {
        int sv = int(src[(mby * 16u + t) * L + mbx * 16u + x]);
        s0 += uint(abs(sv - ntop[x]));
        s1 += uint(abs(sv - nleft[t]));
        s2 += uint(abs(sv - dc));
        s3 += uint(abs(sv - clamp((pa + pb * (int(x) - 7) + pc_ * (int(t) - 7) + 16) >> 5, 0, 255)));
    }
    atomicAdd(sad[0], s0);
    atomicAdd(sad[1], s1);
    atomicAdd(sad[2], s2);
    atomicAdd(sad[3], s3);
    // chroma, invocation t: row i of component c. DC per 4×4 block (8.3.4.1–3: the top-right block prefers the
    // row above, the bottom-left one the column on the left), plane (8.3.4.4)
    int cdcv[4];
    for (uint bb = 0u; bb < 4u; bb++) {
        uint xo = (bb & 1u) * 4u, yo = (bb >> 1) * 4u;
        int ct = 0, cl = 0;
        for (uint k = 0u; k < 4u; k++) ct += ctop[c * 8u + xo + k], cl += cleft[c * 8u + yo + k];
        int both = (ct + cl + 4) >> 3, onlyt = (ct + 2) >> 2, onlyl = (cl + 2) >> 2;
        if (xo == yo) cdcv[bb] = ht && hl ? both : hl ? onlyl : ht ? onlyt : 128;
        else if (xo > 0u) cdcv[bb] = ht ? onlyt : hl ? onlyl : 128;
        else cdcv[bb] = hl ? onlyl : ht ? onlyt : 128;
    }
    int cH = 0, cV = 0;
    for (int k = 0; k < 4; k++) {
        cH += (k + 1) * (ctop[c * 8u + uint(4 + k)] - (k < 3 ? ctop[c * 8u + uint(2 - k)] : ncorner[1u + c]));
        cV += (k + 1) * (cleft[c * 8u + uint(4 + k)] - (k < 3 ? cleft[c * 8u + uint(2 - k)] : ncorner[1u + c]));
    }
    int ca = 16 * (cleft[c * 8u + 7u] + ctop[c * 8u + 7u]), cb = (34 * cH + 32) >> 6, cc = (34 * cV + 32) >> 6;
    uint d0 = 0u, d1 = 0u, d2 = 0u, d3 = 0u;
    for (uint x = 0u; x < 8u; x++) {
        int sv = int(src[p + (mby * 8u + i) * CW + mbx * 8u + x]);
        d0 += uint(abs(sv - cdcv[(i >> 2) * 2u + (x >> 2)]));
        d1 += uint(abs(sv - cleft[c * 8u + i]));
        d2 += uint(abs(sv - ctop[c * 8u + x]));
        d3 += uint(abs(sv - clamp((ca + cb * (int(x) - 3) + cc * (int(i) - 3) + 16) >> 5, 0, 255)));
    }
    atomicAdd(sad[4], d0);
    atomicAdd(sad[5], d1);
    atomicAdd(sad[6], d2);
    atomicAdd(sad[7], d3);
    barrier();
    // every invocation the same choice: DC unless an available mode has a smaller SAD
    lmode = 2u;
    if (ht && sad[0] < sad[lmode]) lmode = 0u;
    if (hl && sad[1] < sad[lmode]) lmode = 1u;
    if (ht && hl && sad[3] < sad[lmode]) lmode = 3u;
    cmode = 0u;
    if (hl && sad[5] < sad[4u + cmode]) cmode = 1u;
    if (ht && sad[6] < sad[4u + cmode]) cmode = 2u;
    if (ht && hl && sad[7] < sad[4u + cmode]) cmode = 3u;
    barrier();
    for (uint x = 0u; x < 16u; x++)
        pred[t * 16u + x] = lmode == 0u ? ntop[x] : lmode == 1u ? nleft[t] : lmode == 2u ? dc
                          : clamp((pa + pb * (int(x) - 7) + pc_ * (int(t) - 7) + 16) >> 5, 0, 255);
    for (uint x = 0u; x < 8u; x++)
        predc[c * 64u + i * 8u + x] = cmode == 0u ? cdcv[(i >> 2) * 2u + (x >> 2)] : cmode == 1u ? cleft[c * 8u + i]
                                    : cmode == 2u ? ctop[c * 8u + x]
                                    : clamp((ca + cb * (int(x) - 3) + cc * (int(i) - 3) + 16) >> 5, 0, 255);
    barrier();
}

// SATD of a 4×4 difference: the sum of its Hadamard transform's magnitudes, halved (x264's satd_4x4).
uint satd4(int d[16]) {
    for (int i = 0; i < 4; i++) {
        int a = d[i * 4] + d[i * 4 + 1], b = d[i * 4] - d[i * 4 + 1];
        int c = d[i * 4 + 2] + d[i * 4 + 3], e = d[i * 4 + 2] - d[i * 4 + 3];
        d[i * 4] = a + c; d[i * 4 + 1] = b + e; d[i * 4 + 2] = a - c; d[i * 4 + 3] = b - e;
    }
    uint s = 0u;
    for (int i = 0; i < 4; i++) {
        int a = d[i] + d[4 + i], b = d[i] - d[4 + i], c = d[8 + i] + d[12 + i], e = d[8 + i] - d[12 + i];
        s += uint(abs(a + c) + abs(b + e) + abs(a - c) + abs(b - e));
    }
    return s >> 1;
}

// p[x, y] of 8.3.1.2 from slot k's edge: y = −1 the row above (x −1..7), x = −1 the column on the left (y 0..3).
uint ek;   // the slot pred4 reads
int pe(int x, int y) { return y < 0 ? edge[ek + uint(x + 1)] : edge[ek + uint(9 + y)]; }

// Intra_4x4 prediction mode m (8.3.1.2.1–9) at (x, y) of the block; hasT, hasL: the rows above and left.
int pred4(uint m, int x, int y, bool hasT, bool hasL) {
    if (m == 0u) return pe(x, -1);
    if (m == 1u) return pe(-1, y);
    if (m == 2u) {
        int st = pe(0, -1) + pe(1, -1) + pe(2, -1) + pe(3, -1), sl = pe(-1, 0) + pe(-1, 1) + pe(-1, 2) + pe(-1, 3);
        return hasT && hasL ? (st + sl + 4) >> 3 : hasL ? (sl + 2) >> 2 : hasT ? (st + 2) >> 2 : 128;
    }
    if (m == 3u) {
        if (x == 3 && y == 3) return (pe(6, -1) + 3 * pe(7, -1) + 2) >> 2;
        return (pe(x + y, -1) + 2 * pe(x + y + 1, -1) + pe(x + y + 2, -1) + 2) >> 2;
    }
    if (m == 4u) {
        if (x > y) return (pe(x - y - 2, -1) + 2 * pe(x - y - 1, -1) + pe(x - y, -1) + 2) >> 2;
        if (x < y) return (pe(-1, y - x - 2) + 2 * pe(-1, y - x - 1) + pe(-1, y - x) + 2) >> 2;
        return (pe(0, -1) + 2 * pe(-1, -1) + pe(-1, 0) + 2) >> 2;
    }
    if (m == 5u) {
        int z = 2 * x - y;
        if (z >= 0 && (z & 1) == 0) return (pe(x - (y >> 1) - 1, -1) + pe(x - (y >> 1), -1) + 1) >> 1;
        if (z > 0) return (pe(x - (y >> 1) - 2, -1) + 2 * pe(x - (y >> 1) - 1, -1) + pe(x - (y >> 1), -1) + 2) >> 2;
        if (z == -1) return (pe(-1, 0) + 2 * pe(-1, -1) + pe(0, -1) + 2) >> 2;
        return (pe(-1, y - 1) + 2 * pe(-1, y - 2) + pe(-1, y - 3) + 2) >> 2;
    }
    if (m == 6u) {
        int z = 2 * y - x;
        if (z >= 0 && (z & 1) == 0) return (pe(-1, y - (x >> 1) - 1) + pe(-1, y - (x >> 1)) + 1) >> 1;
        if (z > 0) return (pe(-1, y - (x >> 1) - 2) + 2 * pe(-1, y - (x >> 1) - 1) + pe(-1, y - (x >> 1)) + 2) >> 2;
        if (z == -1) return (pe(-1, 0) + 2 * pe(-1, -1) + pe(0, -1) + 2) >> 2;
        return (pe(x - 1, -1) + 2 * pe(x - 2, -1) + pe(x - 3, -1) + 2) >> 2;
    }
    if (m == 7u) {
        if ((y & 1) == 0) return (pe(x + (y >> 1), -1) + pe(x + (y >> 1) + 1, -1) + 1) >> 1;
        return (pe(x + (y >> 1), -1) + 2 * pe(x + (y >> 1) + 1, -1) + pe(x + (y >> 1) + 2, -1) + 2) >> 2;
    }
    int z = x + 2 * y;   // 8: Horizontal_Up
    if (z > 5) return pe(-1, 3);
    if (z == 5) return (pe(-1, 2) + 3 * pe(-1, 3) + 2) >> 2;
    if ((z & 1) == 0) return (pe(-1, y + (x >> 1)) + pe(-1, y + (x >> 1) + 1) + 1) >> 1;
    return (pe(-1, y + (x >> 1)) + 2 * pe(-1, y + (x >> 1) + 1) + pe(-1, y + (x >> 1) + 2) + 2) >> 2;
}

// A reconstructed luma sample at (x, y) relative to the macroblock, where available: inside it from r4 (its blocks
// decoded so far), outside from the neighbours intra_pred loaded (x −1 to 19 above, −1 on the left).
int rec_at(int x, int y) {
    if (y < 0) return x < 0 ? ncorner[0] : x < 16 ? ntop[x] : ntr[x - 16];
    if (x < 0) return nleft[y];
    return r4[y * 16 + x];
}

shared int blk_a[2 * 16], blk_b[2 * 16], blk_l[2 * 16];   // the blocks being coded: residual, coefficients, levels
shared int s16[256];    // the macroblock's source luma, raster 16×16: read many times on the wave's critical path

// The Intra4x4 wavefront within a macroblock: step s codes the blocks at x + 2y = s (in 4×4 blocks), whose
// left, above and above-right neighbours are all at earlier steps (s − 1, s − 2, s − 1): 10 steps of at most two
// blocks instead of 16 one after another. A block still sees exactly the neighbours it has in luma4x4BlkIdx order
// (an above-right block coded earlier here but later in that order stays "not available", hasTR below), so the
// modes, levels and reconstruction are those of the sequential order. [2 s + k]: luma4x4BlkIdx of slot k, 16: none.
const uint WAVE4[20] = uint[](0u, 16u, 1u, 16u, 4u, 2u, 5u, 3u, 6u, 8u, 7u, 9u, 12u, 10u, 13u, 11u, 14u, 16u, 15u, 16u);

// Intra4x4 for intra macroblock (mbx, mby): each block takes the mode of the 9 (8.3.1.2) with the least SATD +
// lambda × its mode bits (1 where it is the predicted mode, else 4: prev_intra4x4_pred_mode_flag and
// rem_intra4x4_pred_mode), and is coded and reconstructed before the blocks that predict from it (WAVE4). Returns
// whether that costs less than Intra16x16 with intra_pred's prediction in pred (SATD + lambda × a 16×16 mb_type's
// bits): x264's choice between them (x264_mb_analyse_intra; Intra16x16's mb_type taken as 5 bits, it has 3 to 7).
// Fills r4, lv4, mode4; every invocation returns the same. (All blocks are searched even where Intra16x16 has won
// already: stopping early, with a break or a flag, makes lavapipe's compiler (LLVM's coroutine split at the
// barriers) run for minutes.)
bool intra4x4(uint mbx, uint mby, uint t) {
    uint L = lw();
    int qp = int(pic.qp), qbits = 15 + qp / 6, f = (1 << qbits) / 3, m6 = qp % 6;
    if (t == 0u) satd16 = 0u;
    for (uint x = 0u; x < 16u; x++) s16[t * 16u + x] = int(src[(mby * 16u + t) * L + mbx * 16u + x]);
    barrier();
    {
        int d[16];
        for (uint r = 0u; r < 16u; r++) {
            uint x = BX[t] * 4u + (r & 3u), y = BY[t] * 4u + (r >> 2);
            d[r] = s16[y * 16u + x] - pred[y * 16u + x];
        }
        atomicAdd(satd16, satd4(d));
    }
    uint acc = pic.lambda;   // mb_type I_NxN: 1 bit
    int u = int(t >> 2), v = int(t & 3u);
    [[dont_unroll]] for (uint s = 0u; s < 10u; s++) {   // unrolled, lavapipe's compiler takes minutes
        uint nk = WAVE4[2u * s + 1u] < 16u ? 2u : 1u;
        uint blks[2] = uint[](WAVE4[2u * s], WAVE4[2u * s + 1u] & 15u);
        int bxs[2], bys[2];
        bool hL[2], hT[2];
        for (uint k = 0u; k < 2u; k++) {
            uint blk = blks[k];
            int bx = int(BX[blk]), by = int(BY[blk]);
            bxs[k] = bx, bys[k] = by;
            // the blocks above on the right that are decoded before this one in luma4x4BlkIdx order (6.4.11.4):
            // inside the macroblock, or in the macroblock above (above on the right for block 5)
            bool hasL = bx > 0 || mbx > 0u, hasT = by > 0 || mby > 0u;
            bool hasTR = by == 0 ? mby > 0u && (bx < 3 || mbx + 1u < pc.mbw)
                                 : blk == 2u || blk == 6u || blk == 8u || blk == 9u || blk == 10u || blk == 12u || blk == 14u;
            hL[k] = hasL, hT[k] = hasT;
            // the neighbours (8.3.1.2), 128 where not available
            if (t < 13u && k < nk) {
                int e = 128;
                if (t == 0u) {
                    if (hasT && hasL) e = rec_at(bx * 4 - 1, by * 4 - 1);
                } else if (t < 9u) {
                    int i = min(int(t) - 1, hasTR ? 7 : 3);
                    if (hasT) e = rec_at(bx * 4 + i, by * 4 - 1);
                } else {
                    if (hasL) e = rec_at(bx * 4 - 1, by * 4 + int(t) - 9);
                }
                edge[k * 13u + t] = e;
            }
        }
        barrier();
        // the 9 predictions, one sample an invocation, mode by mode: every invocation takes the same mode's branch
        // (one mode an invocation made the 9 modes' code paths run one after another on the wave's critical path)
        for (uint k = 0u; k < nk; k++) {
            ek = k * 13u;
            for (uint m = 0u; m < 9u; m++) p9[k * 144u + m * 16u + t] = pred4(m, v, u, hT[k], hL[k]);
        }
        barrier();
        uint pms[2];
        for (uint k = 0u; k < nk; k++) {
            int bx = bxs[k], by = bys[k];
            // the predicted mode (8.3.1.1): 2 where the block above or on the left is not available
            uint ma = bx > 0 ? mode4[IDX4[by * 4 + bx - 1]] : lmode4[by];
            uint mt = by > 0 ? mode4[IDX4[(by - 1) * 4 + bx]] : tmode4[bx];
            pms[k] = !hT[k] || !hL[k] ? 2u : min(ma, mt);
        }
        // the 18 (or 9) modes' costs: invocation t takes slot t / 9's mode t % 9, then the second slot's last two
        for (uint j = t; j < nk * 9u; j += 16u) {
            uint k = j / 9u, m = j % 9u;
            bool ok = m == 0u || m == 3u || m == 7u ? hT[k] : m == 1u || m == 8u ? hL[k] : m == 2u ? true : hT[k] && hL[k];
            int d[16];
            for (uint r = 0u; r < 16u; r++)
                d[r] = s16[(uint(bys[k]) * 4u + (r >> 2)) * 16u + uint(bxs[k]) * 4u + (r & 3u)] - p9[k * 144u + m * 16u + r];
            c9[j] = ok ? satd4(d) + pic.lambda * (m == pms[k] ? 1u : 4u) : 0xFFFFFFFFu;
        }
        barrier();
        uint bests[2];
        for (uint k = 0u; k < nk; k++) {
            uint best = 0u;
            for (uint i = 1u; i < 9u; i++) if (c9[k * 9u + i] < c9[k * 9u + best]) best = i;   // every invocation the same
            bests[k] = best;
            acc += c9[k * 9u + best];
            // code the block and reconstruct it as the decoder will (8.5.12), one coefficient or sample an invocation
            // (the block is on the macroblock's critical path, and every macroblock of the wave waits for it)
            blk_a[k * 16u + t] = s16[uint(bys[k] * 4 + u) * 16u + uint(bxs[k] * 4 + v)] - p9[k * 144u + best * 16u + t];
            if (t == 0u) mode4[blks[k]] = best;
        }
        barrier();
        for (uint k = 0u; k < nk; k++) {   // coefficient (u, v) of Cf X Cf^T (fwd4's, term by term), quantized, and
                                           // scaled back (8.5.12.1)
            const int CF[16] = int[](1, 1, 1, 1, 2, 1, -1, -2, 1, -1, -1, 1, 1, -2, 2, -1);
            int y = 0;
            for (int i = 0; i < 4; i++) {
                int row = 0;
                for (int j = 0; j < 4; j++) row += blk_a[k * 16u + uint(i * 4 + j)] * CF[v * 4 + j];
                y += CF[u * 4 + i] * row;
            }
            int l = quant(y, MF[m6 * 3 + pos_class(t)], qbits, f);
            blk_l[k * 16u + t] = l;
            blk_b[k * 16u + t] = (l * V[m6 * 3 + pos_class(t)]) << (qp / 6);
        }
        barrier();
        for (uint k = 0u; k < nk; k++) {
            lv4[blks[k] * 16u + t] = blk_l[k * 16u + ZZ[t]];
            // 8.5.12.2, rows: element (u, v) of row u's butterfly
            uint o = k * 16u + uint(u) * 4u;
            int d0 = blk_b[o], d1 = blk_b[o + 1u], d2 = blk_b[o + 2u], d3 = blk_b[o + 3u];
            int e0 = d0 + d2, e1 = d0 - d2, e2 = (d1 >> 1) - d3, e3 = d1 + (d3 >> 1);
            blk_a[k * 16u + t] = v == 0 ? e0 + e3 : v == 1 ? e1 + e2 : v == 2 ? e1 - e2 : e0 - e3;
        }
        barrier();
        for (uint k = 0u; k < nk; k++) {   // ... then columns: sample (u, v) from column v, (x + 32) >> 6, onto the
                                           // prediction
            uint o = k * 16u + uint(v);
            int d0 = blk_a[o], d1 = blk_a[o + 4u], d2 = blk_a[o + 8u], d3 = blk_a[o + 12u];
            int g0 = d0 + d2, g1 = d0 - d2, g2 = (d1 >> 1) - d3, g3 = d1 + (d3 >> 1);
            int r = u == 0 ? g0 + g3 : u == 1 ? g1 + g2 : u == 2 ? g1 - g2 : g0 - g3;
            r4[(bys[k] * 4 + u) * 16 + bxs[k] * 4 + v] = clamp(p9[k * 144u + bests[k] * 16u + t] + ((r + 32) >> 6), 0, 255);
        }
        barrier();
    }
    return acc < satd16 + 5u * pic.lambda;
}

#endif

void main() {
    uint t = gl_LocalInvocationID.x;
#ifndef RC_INTRA
    uint mbx = gl_WorkGroupID.x, mby = gl_WorkGroupID.y;
    if ((mbi[(mby * pc.mbw + mbx) * MBI_STRIDE + MBI_PART] & MB_INTRA) != 0u) return;   // the intra wave's
    inter_pred(mbx, mby, t);
    barrier();
    code_mb(mbx, mby, t, false, 0u, 0u, false);
#else
    uint mbx, mby;
    if (pic.intra != 0u) {   // IDR: one wavefront step (wave_mb)
        if (!wave_mb(mbx, mby)) return;   // the whole workgroup
    } else {   // a P picture's intra macroblocks of step pc.pass (h264_scan's intra_wave lists them)
        uint n = pc.mbw * pc.mbh, i = bits[n + pc.pass] + gl_WorkGroupID.x;
        if (i >= bits[n + pc.pass + 1u]) return;
        mbx = bits[i] % pc.mbw;
        mby = bits[i] / pc.mbw;
    }
    uint mb = mby * pc.mbw + mbx;
    if (t < 4u) {   // the neighbours' modes next to this macroblock (packed by the steps before); 2 where a
                    // neighbour is not Intra4x4 (8.3.1.1: Intra16x16 or inter, constrained_intra_pred_flag 0)
        uint l = IDX4[t * 4u + 3u], u = IDX4[12u + t];
        const uint I4 = 3u << 16;   // h264_mb's flags: intra, Intra4x4
        lmode4[t] = mbx > 0u && (mbi[(mb - 1u) * MBI_STRIDE] & I4) == I4
                  ? (mbi[(mb - 1u) * MBI_STRIDE + 4u + (l >> 3)] >> (4u * (l & 7u))) & 15u : 2u;
        tmode4[t] = mby > 0u && (mbi[(mb - pc.mbw) * MBI_STRIDE] & I4) == I4
                  ? (mbi[(mb - pc.mbw) * MBI_STRIDE + 4u + (u >> 3)] >> (4u * (u & 7u))) & 15u : 2u;
    }
    barrier();
    uint lmode, cmode;
    intra_pred(mbx, mby, t, lmode, cmode);
    bool i4 = intra4x4(mbx, mby, t);
    code_mb(mbx, mby, t, true, lmode, cmode, i4);
    if (t < 2u) {   // the modes for CAVLC and the next macroblocks: 4 bits a block, blocks 8t to 8t + 7
        uint w = 0u;
        for (uint k = 0u; k < 8u; k++) w |= (i4 ? mode4[t * 8u + k] : 2u) << (4u * k);
        mbi[mb * MBI_STRIDE + 4u + t] = w;
    }
#endif
}
