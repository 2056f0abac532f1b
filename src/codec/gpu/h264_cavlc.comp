// SPDX-License-Identifier: MIT
// h264_cavlc.comp — GPU H.264 stage 4: the slice data, CAVLC (ITU-T H.264 clauses 7.3.4–7.3.5.3, 9.2), one
// invocation per macroblock: the mb_skip_run before it, its macroblock_layer() and residual blocks; the invocation of
// a slice's first macroblock also writes the slice header (7.3.3), the last one the run of skipped macroblocks
// that ends the slice and the rbsp_stop_one_bit. P slices may hold intra macroblocks (h264_me's MB_INTRA). Every
// picture is one slice (nC from the left and above, the vector predictor of mv_pred, the predicted Intra4x4 modes);
// everything a macroblock's syntax depends on is known from h264_me and h264_mb.
// pc.pass 0 counts each macroblock's bits into bits[mb]; pass 1 (after h264_scan) writes them at bits[n + mb],
// a bit offset into outw (zeroed), with atomicOr where two macroblocks share a word.
#version 450
#include "h264_common.glsl"
layout(local_size_x = 64) in;

// VLC tables as code | length << 16, from the H.264 tables named (each checked against a decoder in test_h264_gpu).
// coeff_token, Table 9-5: [nC class 0–2][TotalCoeff 0–16][TrailingOnes 0–3]; class 3 (nC ≥ 8) is the 6-bit FLC.
#define E(l, c) ((l) << 16 | (c))
const uint CT[204] = uint[](
    E(1,1),0,0,0, E(6,5),E(2,1),0,0, E(8,7),E(6,4),E(3,1),0, E(9,7),E(8,6),E(7,5),E(5,3),
    E(10,7),E(9,6),E(8,5),E(6,3), E(11,7),E(10,6),E(9,5),E(7,4), E(13,15),E(11,6),E(10,5),E(8,4),
    E(13,11),E(13,14),E(11,5),E(9,4), E(13,8),E(13,10),E(13,13),E(10,4), E(14,15),E(14,14),E(13,9),E(11,4),
    E(14,11),E(14,10),E(14,13),E(13,12), E(15,15),E(15,14),E(14,9),E(14,12), E(15,11),E(15,10),E(15,13),E(14,8),
    E(16,15),E(15,1),E(15,9),E(15,12), E(16,11),E(16,14),E(16,13),E(15,8), E(16,7),E(16,10),E(16,9),E(16,12),
    E(16,4),E(16,6),E(16,5),E(16,8),
    E(2,3),0,0,0, E(6,11),E(2,2),0,0, E(6,7),E(5,7),E(3,3),0, E(7,7),E(6,10),E(6,9),E(4,5),
    E(8,7),E(6,6),E(6,5),E(4,4), E(8,4),E(7,6),E(7,5),E(5,6), E(9,7),E(8,6),E(8,5),E(6,8),
    E(11,15),E(9,6),E(9,5),E(6,4), E(11,11),E(11,14),E(11,13),E(7,4), E(12,15),E(11,10),E(11,9),E(9,4),
    E(12,11),E(12,14),E(12,13),E(11,12), E(12,8),E(12,10),E(12,9),E(11,8), E(13,15),E(13,14),E(13,13),E(12,12),
    E(13,11),E(13,10),E(13,9),E(13,12), E(13,7),E(14,11),E(13,6),E(13,8), E(14,9),E(14,8),E(14,10),E(13,1),
    E(14,7),E(14,6),E(14,5),E(14,4),
    E(4,15),0,0,0, E(6,15),E(4,14),0,0, E(6,11),E(5,15),E(4,13),0, E(6,8),E(5,12),E(5,14),E(4,12),
    E(7,15),E(5,10),E(5,11),E(4,11), E(7,11),E(5,8),E(5,9),E(4,10), E(7,9),E(6,14),E(6,13),E(4,9),
    E(7,8),E(6,10),E(6,9),E(4,8), E(8,15),E(7,14),E(7,13),E(5,13), E(8,11),E(8,14),E(7,10),E(6,12),
    E(9,15),E(8,10),E(8,13),E(7,12), E(9,11),E(9,14),E(8,9),E(8,12), E(9,8),E(9,10),E(9,13),E(8,8),
    E(10,13),E(9,7),E(9,9),E(9,12), E(10,9),E(10,12),E(10,11),E(10,10), E(10,5),E(10,8),E(10,7),E(10,6),
    E(10,1),E(10,4),E(10,3),E(10,2));
// coeff_token for chroma DC (nC = −1): [TotalCoeff 0–4][TrailingOnes 0–3]
const uint CTC[20] = uint[](E(2,1),0,0,0, E(6,7),E(1,1),0,0, E(6,4),E(6,6),E(3,1),0,
                            E(6,3),E(7,3),E(7,2),E(6,5), E(6,2),E(8,3),E(8,2),E(7,0));
// total_zeros, Tables 9-7 and 9-8: [TotalCoeff 1–15][total_zeros 0–15]
const uint TZ[240] = uint[](
    E(1,1),E(3,3),E(3,2),E(4,3),E(4,2),E(5,3),E(5,2),E(6,3),E(6,2),E(7,3),E(7,2),E(8,3),E(8,2),E(9,3),E(9,2),E(9,1),
    E(3,7),E(3,6),E(3,5),E(3,4),E(3,3),E(4,5),E(4,4),E(4,3),E(4,2),E(5,3),E(5,2),E(6,3),E(6,2),E(6,1),E(6,0),0,
    E(4,5),E(3,7),E(3,6),E(3,5),E(4,4),E(4,3),E(3,4),E(3,3),E(4,2),E(5,3),E(5,2),E(6,1),E(5,1),E(6,0),0,0,
    E(5,3),E(3,7),E(4,5),E(4,4),E(3,6),E(3,5),E(3,4),E(4,3),E(3,3),E(4,2),E(5,2),E(5,1),E(5,0),0,0,0,
    E(4,5),E(4,4),E(4,3),E(3,7),E(3,6),E(3,5),E(3,4),E(3,3),E(4,2),E(5,1),E(4,1),E(5,0),0,0,0,0,
    E(6,1),E(5,1),E(3,7),E(3,6),E(3,5),E(3,4),E(3,3),E(3,2),E(4,1),E(3,1),E(6,0),0,0,0,0,0,
    E(6,1),E(5,1),E(3,5),E(3,4),E(3,3),E(2,3),E(3,2),E(4,1),E(3,1),E(6,0),0,0,0,0,0,0,
    E(6,1),E(4,1),E(5,1),E(3,3),E(2,3),E(2,2),E(3,2),E(3,1),E(6,0),0,0,0,0,0,0,0,
    E(6,1),E(6,0),E(4,1),E(2,3),E(2,2),E(3,1),E(2,1),E(5,1),0,0,0,0,0,0,0,0,
    E(5,1),E(5,0),E(3,1),E(2,3),E(2,2),E(2,1),E(4,1),0,0,0,0,0,0,0,0,0,
    E(4,0),E(4,1),E(3,1),E(3,2),E(1,1),E(3,3),0,0,0,0,0,0,0,0,0,0,
    E(4,0),E(4,1),E(2,1),E(1,1),E(3,1),0,0,0,0,0,0,0,0,0,0,0,
    E(3,0),E(3,1),E(1,1),E(2,1),0,0,0,0,0,0,0,0,0,0,0,0,
    E(2,0),E(2,1),E(1,1),0,0,0,0,0,0,0,0,0,0,0,0,0,
    E(1,0),E(1,1),0,0,0,0,0,0,0,0,0,0,0,0,0,0);
// total_zeros for chroma DC 4:2:0, Table 9-9 (a): [TotalCoeff 1–3][total_zeros 0–3]
const uint TZC[12] = uint[](E(1,1),E(2,1),E(3,1),E(3,0), E(1,1),E(2,1),E(2,0),0, E(1,1),E(1,0),0,0);
// run_before, Table 9-10: [zerosLeft 1–6, >6][run_before 0–14]
const uint RB[105] = uint[](
    E(1,1),E(1,0),0,0,0,0,0,0,0,0,0,0,0,0,0,
    E(1,1),E(2,1),E(2,0),0,0,0,0,0,0,0,0,0,0,0,0,
    E(2,3),E(2,2),E(2,1),E(2,0),0,0,0,0,0,0,0,0,0,0,0,
    E(2,3),E(2,2),E(2,1),E(3,1),E(3,0),0,0,0,0,0,0,0,0,0,0,
    E(2,3),E(2,2),E(3,3),E(3,2),E(3,1),E(3,0),0,0,0,0,0,0,0,0,0,
    E(2,3),E(3,0),E(3,1),E(3,3),E(3,2),E(3,5),E(3,4),0,0,0,0,0,0,0,0,
    E(3,7),E(3,6),E(3,5),E(3,4),E(3,3),E(3,2),E(3,1),E(4,1),E(5,1),E(6,1),E(7,1),E(8,1),E(9,1),E(10,1),E(11,1));
// coded_block_pattern → codeNum for Inter macroblocks, the inverse of Table 9-4's inter column
const uint CBP_INTER[48] = uint[](0u, 2u, 3u, 7u, 4u, 8u, 17u, 13u, 5u, 18u, 9u, 14u, 10u, 15u, 16u, 11u,
                                  1u, 32u, 33u, 36u, 34u, 37u, 44u, 40u, 35u, 45u, 38u, 41u, 39u, 42u, 43u, 19u,
                                  6u, 24u, 25u, 20u, 26u, 21u, 46u, 28u, 27u, 47u, 22u, 29u, 23u, 30u, 31u, 12u);
// ... and for Intra_4x4 macroblocks, the inverse of Table 9-4's intra column
const uint CBP_INTRA[48] = uint[](3u, 29u, 30u, 17u, 31u, 18u, 37u, 8u, 32u, 38u, 19u, 9u, 20u, 10u, 11u, 2u, 16u, 33u, 34u, 21u, 35u, 22u, 39u, 4u, 36u, 40u, 23u, 5u, 24u, 6u, 7u, 1u, 41u, 42u, 43u, 25u, 44u, 26u, 46u, 12u, 45u, 47u, 27u, 13u, 28u, 14u, 15u, 0u);

uint bpos;   // pass 0: bits counted; pass 1: where the next bit goes

uint bswap(uint x) { return (x >> 24) | ((x >> 8) & 0xFF00u) | ((x << 8) & 0xFF0000u) | (x << 24); }

void put(uint v, uint n) {   // n ≤ 32 bits of v, most significant first
    if (pc.pass == 0u || n == 0u) { bpos += n; return; }
    uint room = 32u - (bpos & 31u);
    if (n <= room) {
        atomicOr(outw[bpos >> 5], bswap(v << (room - n)));
    } else {
        uint rest = n - room;
        atomicOr(outw[bpos >> 5], bswap(v >> rest));
        atomicOr(outw[(bpos >> 5) + 1u], bswap(v << (32u - rest)));
    }
    bpos += n;
}
void putc(uint e) { put(e & 0xFFFFu, e >> 16); }
void ue(uint k) {   // 2m + 1 bits; over 32 (k ≥ 65535: a long mb_skip_run) the m leading zeros go first
    uint m = uint(findMSB(k + 1u));
    if (2u * m + 1u > 32u) { put(0u, m); put(k + 1u, m + 1u); }
    else put(k + 1u, 2u * m + 1u);
}
void se(int v) { ue(v > 0 ? uint(2 * v - 1) : uint(-2 * v)); }

// One residual_block_cavlc (7.3.5.3.2, 9.2): n coefficients lev[off .. off + n) in coding order, nC as in 9.2.1
// (−1: chroma DC).
void block(uint off, uint n, int nc) {
    int v[16];
    uint runs[16];
    uint tc = 0u, tz = 0u, zrun = 0u;
    bool seen = false;
    // from the highest frequency down: the nonzero levels, and the zeros below each
    for (int i = int(n) - 1; i >= 0; i--) {
        int l = lev[off + uint(i)];
        if (l != 0) {
            if (seen) runs[tc - 1u] = zrun;
            v[tc++] = l;
            zrun = 0u;
            seen = true;
        } else if (seen) {
            zrun++;
            tz++;
        }
    }
    if (tc > 0u) runs[tc - 1u] = zrun;
    uint t1 = 0u;
    while (t1 < tc && t1 < 3u && abs(v[t1]) == 1) t1++;
    if (nc < 0) putc(CTC[tc * 4u + t1]);
    else if (nc >= 8) put(tc == 0u ? 3u : ((tc - 1u) << 2) | t1, 6u);
    else putc(CT[(nc < 2 ? 0u : nc < 4 ? 68u : 136u) + tc * 4u + t1]);
    if (tc == 0u) return;
    uint sl = tc > 10u && t1 < 3u ? 1u : 0u;
    for (uint i = 0u; i < tc; i++) {
        if (i < t1) { put(v[i] < 0 ? 1u : 0u, 1u); continue; }
        int l = v[i];
        uint code = l > 0 ? uint(2 * l - 2) : uint(-2 * l - 1);
        if (i == t1 && t1 < 3u) code -= 2u;
        if (sl == 0u) {
            if (code < 14u) put(1u, code + 1u);
            else if (code < 30u) { put(1u, 15u); put(code - 14u, 4u); }
            else { put(1u, 16u); put(code - 30u, 12u); }
        } else {
            if (code < (15u << sl)) { put(1u, (code >> sl) + 1u); put(code & ((1u << sl) - 1u), sl); }
            else { put(1u, 16u); put(code - (15u << sl), 12u); }
        }
        if (sl == 0u) sl = 1u;
        if (uint(abs(l)) > (3u << (sl - 1u)) && sl < 6u) sl++;
    }
    if (tc < n) {
        if (nc < 0) putc(TZC[(tc - 1u) * 4u + tz]);
        else putc(TZ[(tc - 1u) * 16u + tz]);
    }
    uint left = tz;
    for (uint i = 0u; i + 1u < tc && left > 0u; i++) {
        putc(RB[(min(left, 7u) - 1u) * 15u + runs[i]]);
        left -= runs[i];
    }
}

uint nzof(uint mb, uint k) { return mbi[mb * MBI_STRIDE + MBI_TC + k]; }

// nC of luma block blk (9.2.1): from the blocks on the left and above, in this macroblock or its neighbours (every
// picture is one slice).
bool top_in_slice(uint mby) { return mby > 0u; }

int nc_luma(uint mb, uint mbx, uint mby, uint blk) {
    const uint BX[16] = uint[](0u, 1u, 0u, 1u, 2u, 3u, 2u, 3u, 0u, 1u, 0u, 1u, 2u, 3u, 2u, 3u);
    const uint BY[16] = uint[](0u, 0u, 1u, 1u, 0u, 0u, 1u, 1u, 2u, 2u, 3u, 3u, 2u, 2u, 3u, 3u);
    const uint IDX[16] = uint[](0u, 1u, 4u, 5u, 2u, 3u, 6u, 7u, 8u, 9u, 12u, 13u, 10u, 11u, 14u, 15u); // raster→blk
    uint x = BX[blk], y = BY[blk];
    bool ha = x > 0u || mbx > 0u, hb = y > 0u || top_in_slice(mby);
    uint na = 0u, nb = 0u;
    if (x > 0u) na = nzof(mb, IDX[y * 4u + x - 1u]);
    else if (mbx > 0u) na = nzof(mb - 1u, IDX[y * 4u + 3u]);
    if (y > 0u) nb = nzof(mb, IDX[(y - 1u) * 4u + x]);
    else if (hb) nb = nzof(mb - pc.mbw, IDX[12u + x]);
    return ha && hb ? int((na + nb + 1u) >> 1) : ha ? int(na) : hb ? int(nb) : 0;
}

// nC of chroma AC block b (0–3, raster 2×2) of component c.
int nc_chroma(uint mb, uint mbx, uint mby, uint c, uint b) {
    uint x = b & 1u, y = b >> 1;
    bool ha = x > 0u || mbx > 0u, hb = y > 0u || top_in_slice(mby);
    uint na = 0u, nb = 0u;
    if (x > 0u) na = nzof(mb, 16u + c * 4u + b - 1u);
    else if (mbx > 0u) na = nzof(mb - 1u, 16u + c * 4u + b + 1u);
    if (y > 0u) nb = nzof(mb, 16u + c * 4u + b - 2u);
    else if (hb) nb = nzof(mb - pc.mbw, 16u + c * 4u + b + 2u);
    return ha && hb ? int((na + nb + 1u) >> 1) : ha ? int(na) : hb ? int(nb) : 0;
}

// Intra4x4PredMode of block b (luma4x4BlkIdx) of an Intra4x4 macroblock (h264_mb packs them in MBI [4], [5]).
uint mode_of(uint mb, uint b) { return (mbi[mb * MBI_STRIDE + 4u + (b >> 3)] >> (4u * (b & 7u))) & 15u; }

// predIntra4x4PredMode (8.3.1.1): 2 where the block above or on the left is not available; a neighbouring
// macroblock that is not Intra4x4 (Intra16x16, or inter: constrained_intra_pred_flag is 0) counts as mode 2.
uint pred_mode(uint mb, uint mbx, uint mby, uint b) {
    const uint BX[16] = uint[](0u, 1u, 0u, 1u, 2u, 3u, 2u, 3u, 0u, 1u, 0u, 1u, 2u, 3u, 2u, 3u);
    const uint BY[16] = uint[](0u, 0u, 1u, 1u, 0u, 0u, 1u, 1u, 2u, 2u, 3u, 3u, 2u, 2u, 3u, 3u);
    const uint IDX[16] = uint[](0u, 1u, 4u, 5u, 2u, 3u, 6u, 7u, 8u, 9u, 12u, 13u, 10u, 11u, 14u, 15u); // raster→blk
    uint x = BX[b], y = BY[b];
    if ((y == 0u && mby == 0u) || (x == 0u && mbx == 0u)) return 2u;
    const uint I4 = 3u << 16;   // h264_mb's flags: intra, Intra4x4
    uint a = x > 0u ? mode_of(mb, IDX[y * 4u + x - 1u])
                    : (mbi[(mb - 1u) * MBI_STRIDE] & I4) == I4 ? mode_of(mb - 1u, IDX[y * 4u + 3u]) : 2u;
    uint u = y > 0u ? mode_of(mb, IDX[(y - 1u) * 4u + x])
                    : (mbi[(mb - pc.mbw) * MBI_STRIDE] & I4) == I4 ? mode_of(mb - pc.mbw, IDX[12u + x]) : 2u;
    return min(a, u);
}

void slice_header(uint first_mb) {
    ue(first_mb);                     // first_mb_in_slice
    ue(pic.intra != 0u ? 7u : 5u);     // slice_type: I or P, all slices of the picture alike
    ue(0u);                           // pic_parameter_set_id
    put(pic.frame_num & 15u, 4u);      // frame_num, log2_max_frame_num 4
    if (pic.intra != 0u) ue(pic.idr_pic_id);
    // pic_order_cnt_type 2: nothing
    if (pic.intra == 0u) {
        put(0u, 1u);                  // num_ref_idx_active_override_flag
        put(0u, 1u);                  // ref_pic_list_modification_flag_l0
    }
    if (pic.intra != 0u) put(0u, 2u);  // no_output_of_prior_pics_flag, long_term_reference_flag
    else put(0u, 1u);                 // adaptive_ref_pic_marking_mode_flag
    se(int(pic.qp) - 26);              // slice_qp_delta (pic_init_qp 26)
    if (pic.deblock != 0u) {
        ue(0u);                       // disable_deblocking_filter_idc: on, across the whole slice
        se(0);                        // slice_alpha_c0_offset_div2
        se(0);                        // slice_beta_offset_div2
    } else {
        ue(1u);                       // disable_deblocking_filter_idc: off (no edge the filter could change)
    }
}

void main() {
    uint mb = gl_GlobalInvocationID.x;
    uint n = pc.mbw * pc.mbh;
    if (mb >= n) return;
    uint mbx = mb % pc.mbw, mby = mb / pc.mbw;
    bpos = pc.pass == 0u ? 0u : bits[n + mb];
    bool islice = pic.intra != 0u;
    if (mb == 0u) slice_header(0u);
    uint flags = mbi[mb * MBI_STRIDE];
    bool intra = (flags & (1u << 16)) != 0u;   // every macroblock of an I slice, some of a P slice
    bool last = mb + 1u == n;   // the slice's last macroblock
    uint run = mbi[mb * MBI_STRIDE + 3u];                     // P_Skip macroblocks just before (h264_scan)
    if (!islice && (flags & 1u) != 0u) {   // P_Skip: counted by the next coded macroblock, or here at the slice's end
        if (last) ue(run + 1u);
    } else {
        if (!islice) ue(run);                                    // mb_skip_run
        uint cbp = (flags >> 8) & 63u, cbpl = cbp & 15u, cbpc = cbp >> 4;
        bool i4 = intra && (flags & (1u << 17)) != 0u;
        if (pc.pass == 1u && (flags & (1u << 17)) != 0u) atomicAdd(ctl[intra ? CTL_I4X4(pc.mbh) : CTL_P8X8(pc.mbh)], 1u);
        if (pc.pass == 1u && intra && !islice) atomicAdd(ctl[CTL_INTRA_P(pc.mbh)], 1u);
        uint ioff = islice ? 0u : 5u;   // a P slice's intra mb_types follow its 5 inter ones (Table 7-13)
        if (i4) {
            ue(ioff);                                                // mb_type I_NxN
            for (uint b = 0u; b < 16u; b++) {                        // the 16 Intra4x4PredModes
                uint m = mode_of(mb, b), pm = pred_mode(mb, mbx, mby, b);
                if (m == pm) put(1u, 1u);                            // prev_intra4x4_pred_mode_flag
                else put(m < pm ? m : m - 1u, 4u);                   // 0, then rem_intra4x4_pred_mode
            }
            ue((flags >> 3) & 3u);                                   // intra_chroma_pred_mode
            ue(CBP_INTRA[cbpl | (cbpc << 4)]);                       // coded_block_pattern
        } else if (intra) {
            uint lmode = (flags >> 1) & 3u, cmode = (flags >> 3) & 3u;
            ue(ioff + 1u + lmode + 4u * cbpc + (cbpl != 0u ? 12u : 0u));   // mb_type I_16x16_<mode>_<cbp>
            ue(cmode);                                               // intra_chroma_pred_mode
        } else {
            if ((flags & (1u << 17)) == 0u) {
                ue(0u);                                              // mb_type P_L0_16x16
                ivec2 mvd = mb_mv(mb) - mv_pred(mbx, mby);
                se(mvd.x);                                           // mvd_l0, quarter samples
                se(mvd.y);
            } else {
                ue(3u);                                              // mb_type P_8x8
                put(15u, 4u);                                        // sub_mb_type P_L0_8x8 ×4: ue(0) each
                for (uint q = 0u; q < 4u; q++) {                     // mvd_l0 of each, predicted in order
                    ivec2 mvd = q_mv(mb, q) - mv_pred_part(mbx, mby, int(q & 1u) * 8, int(q >> 1) * 8, 8, q);
                    se(mvd.x);
                    se(mvd.y);
                }
            }
            ue(CBP_INTER[cbpl | (cbpc << 4)]);                       // coded_block_pattern
        }
        if ((intra && !i4) || cbp != 0u) se(0);                      // mb_qp_delta
        uint base = mb * LEV_STRIDE;
        if (intra && !i4) {
            block(base, 16u, nc_luma(mb, mbx, mby, 0u));                  // Intra16x16DCLevel
            if (cbpl != 0u)
                for (uint b = 0u; b < 16u; b++) block(base + 16u + b * 16u + 1u, 15u, nc_luma(mb, mbx, mby, b));
        } else {
            for (uint b = 0u; b < 16u; b++)
                if ((cbpl & (1u << (b >> 2))) != 0u) block(base + 16u + b * 16u, 16u, nc_luma(mb, mbx, mby, b));
        }
        if (cbpc != 0u) {
            block(base + LEV_CDC, 4u, -1);
            block(base + LEV_CDC + 4u, 4u, -1);
        }
        if (cbpc == 2u)
            for (uint c = 0u; c < 2u; c++)
                for (uint b = 0u; b < 4u; b++)
                    block(base + LEV_CAC + (c * 4u + b) * 16u + 1u, 15u, nc_chroma(mb, mbx, mby, c, b));
    }
    if (last) put(1u, 1u);   // rbsp_stop_one_bit; the alignment zeros are outw's
    if (pc.pass == 0u) bits[mb] = bpos;
}
