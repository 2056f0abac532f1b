// SPDX-License-Identifier: MIT
// h264_common.glsl — what every stage of the GPU H.264 encoder (h264_gpu.c) shares: the push constants, the
// buffer bindings and the plane layout.
//
// Planes are one sample per uint (values 0–255), padded to whole macroblocks: luma lw × lh (lw = 16·mbw,
// lh = 16·mbh) at 0, then Cb and Cr, each (lw/2) × (lh/2). The padding repeats the image's last column and row, so
// the decoder's cropped output is the image and the padded part predicts well.
// Per macroblock: MBI (48 uints: [0] flags, [1] mv x, [2] mv y in quarter samples, [3] the P_Skip macroblocks
// just before it (P pictures), [4] [5] the coarse search's vector (an intra macroblock's Intra4x4 modes once it is
// coded, 4 bits a block: readers check the flags for Intra4x4 first), [6] [7] the last picture's vector (quarter
// samples), [8 + k] TotalCoeff of block k:
// 0–15 luma in luma4x4BlkIdx order, 16–19 Cb AC, 20–23 Cr AC), [32 + 2q] [33 + 2q] the vector of 8×8 quadrant q
// (0–3 in raster order: the partitions of P_8x8, all four the macroblock's vector otherwise), [40] MBI_PART: bit 0
// where the motion search chose P_8x8, bit 1 where it chose an intra macroblock in a P picture, [41..44] the
// deblocking filter's 32 edge strengths, 4 bits each: h264_deblock.comp, [45] MBI_DEPTH, [46] MBI_SAD)
// and LEV (408 ints, levels in coding order:
// [0,16) Intra16x16 DC in zig-zag order, [16 + 16·blk, +16) luma block blk in zig-zag order (index 0 unused by
// Intra16x16), [272,276) Cb DC, [276,280) Cr DC, [280 + 16·(4·c + b), +16) chroma AC (index 0 unused)).
#extension GL_GOOGLE_include_directive : require

layout(push_constant) uniform PC {
    uint mbw, mbh;    // picture size in macroblocks
    uint w, h;        // the image's size in pixels
    uint qp, qpc;     // luma QP, chroma QP (H.264 Table 8-15 of qp, chroma_qp_index_offset 0)
    uint intra;       // 1: an IDR picture (Intra16x16 macroblocks)
    uint frame_num;   // slice header frame_num (log2_max_frame_num 4)
    uint idr_pic_id;  // slice header idr_pic_id (IDR pictures)
    uint in_pitch;    // input row pitch in pixels
    uint bgra;        // 1: input bytes are B, G, R, A
    uint lambda;      // motion search: cost of one bit of motion vector, in SAD units
    uint pass;        // which part of a stage (CAVLC: 0 counts bits, 1 writes them; h264_me: 0 the search,
                      // INTRA_CHOICE (8) the intra choice, ADOPT (16) + c the adopt round's colour c; h264_scan: 2
                      // skip runs, 3 the intra wave, else offsets; the wavefronts: the step)
    uint me_flags;    // motion search: 1 whole pixels only, 2 no P_8x8 (benchmarks), 4 no intra in P pictures,
                      // 8 no adopt rounds (benchmarks, or a contended device); bits 8-15 the intra wave's steps
    uint deblock;     // 1: the deblocking filter is on (disable_deblocking_filter_idc 0), h264_deblock runs
} pc;

layout(std430, binding = 0) readonly buffer In { uint inpx[]; };   // the image, 4 bytes per pixel
layout(std430, binding = 1) buffer Src { uint src[]; };            // this picture's source planes
layout(std430, binding = 2) readonly buffer Ref { uint ref[]; };   // the reference picture (last reconstruction)
layout(std430, binding = 3) coherent buffer Rec { uint rec[]; };   // this picture's reconstruction (IDR rows read
                                                                  // their left neighbour's from other invocations)
layout(std430, binding = 4) buffer QCur { uint qcur[]; };          // source luma at 1/4 size (motion search)
layout(std430, binding = 5) readonly buffer QRef { uint qref[]; }; // the reference's source luma at 1/4 size
layout(std430, binding = 6) buffer Mbi { uint mbi[]; };
layout(std430, binding = 7) buffer Lev { int lev[]; };
layout(std430, binding = 8) buffer Bits { uint bits[]; };          // [0, n) bits per MB, [n, 2n) bit offsets
                                                                  // (P pictures, before CAVLC: [0, n) the intra
                                                                  // wave's macroblocks, from [n + k] those of step k,
                                                                  // [n + INTRA_ANY] whether there are any)
layout(std430, binding = 9) buffer Outw { uint outw[]; };          // the slices' RBSPs, each row byte-aligned
layout(std430, binding = 10) buffer Ctl { uint ctl[]; };           // [0] bytes, [1..3] dispatch, [4 + r] row offset,
                                                                  // [5 + mbh] Intra4x4, [6 + mbh] P_8x8 and
                                                                  // [7 + mbh] intra-in-P macroblocks, [8 + mbh + 3k]
                                                                  // the indirect dispatch of intra wave step k,
                                                                  // [8 + mbh + 3 INTRA_STEPS] the candidates it
                                                                  // left inter
layout(std430, binding = 11) buffer Host { uint host[]; };         // host-visible copy of outw

#define MBI_STRIDE 48u
#define MBI_QMV 32u
#define MBI_PART 40u   // the motion search's choice: MB_P8X8, MB_INTRA (h264_me, h264_scan's pass 3)
#define MB_P8X8 1u
#define MB_INTRA 2u
#define MBI_DEPTH 45u  // an intra macroblock's step in the P picture's intra wave, from 1 (h264_scan's pass 3)
#define MBI_SAD 46u    // the luma SAD at the 16×16 vector (h264_me)
#define MBI_INTER 47u  // the chosen inter prediction's cost, SAD + λ × bits (h264_me's fine search, for its intra choice)
#define MBI_BS 41u
#define LEV_STRIDE 408u
// The intra macroblocks of a P picture are coded after its inter ones, in steps: a macroblock in the step after
// the last of its intra neighbours on the left, above on the left, above and above on the right (the samples it
// predicts from). An intra candidate that would need a step beyond INTRA_STEPS is coded inter instead (h264_scan).
#define INTRA_STEPS 16u
#define INTRA_ANY (INTRA_STEPS + 1u)   // bits[n + INTRA_ANY]: 1 where the motion search chose any (P pictures)
#define LEV_CDC 272u
#define LEV_CAC 280u

// The wavefront of IDR pictures and of the deblocking filter (h264_gpu.c's wave_width): step pc.pass holds the
// macroblocks with x + 2y = pc.pass, each after its neighbours on the left, above and above on the right (the steps
// before), one workgroup each from the topmost. False for a workgroup past the step's last.
bool wave_mb(out uint mbx, out uint mby) {
    uint ylo = pc.pass + 1u > pc.mbw ? (pc.pass + 2u - pc.mbw) / 2u : 0u;
    mby = ylo + gl_WorkGroupID.x;
    mbx = pc.pass - 2u * mby;
    return mby < pc.mbh && 2u * mby <= pc.pass;
}

uint lw() { return pc.mbw * 16u; }
uint lh() { return pc.mbh * 16u; }
uint cwid() { return pc.mbw * 8u; }
uint chei() { return pc.mbh * 8u; }
uint plane_u() { return lw() * lh(); }
uint plane_v() { return lw() * lh() + cwid() * chei(); }

// ---- motion (P pictures: one slice, so every neighbour inside the picture is available) ----

ivec2 mb_mv(uint mb) { return ivec2(int(mbi[mb * MBI_STRIDE + 1u]), int(mbi[mb * MBI_STRIDE + 2u])); }
ivec2 q_mv(uint mb, uint q) {
    return ivec2(int(mbi[mb * MBI_STRIDE + MBI_QMV + 2u * q]), int(mbi[mb * MBI_STRIDE + MBI_QMV + 2u * q + 1u]));
}
int median3(int a, int b, int c) { return max(min(a, b), min(max(a, b), c)); }

// The neighbour at luma sample (x, y) relative to the top left of macroblock (mbx, mby), x and y in −1..16, whose
// 8×8 quadrant is before quadrant cq of (mbx, mby) in decoding order (6.4.11.7: a partition decoded later, or one in
// a macroblock to the right or below, is "not available"): NB_NONE where there is none, NB_INTRA where it is an
// intra macroblock (8.4.1.3.2: refIdx −1 and vector 0; it is still "available"), else NB_REF0 with its vector in v
// (refIdx 0: P pictures here have one reference, and P_Skip macroblocks have refIdx 0 too).
#define NB_NONE 0u
#define NB_INTRA 1u
#define NB_REF0 2u
uint nb_mv(uint mbx, uint mby, int x, int y, uint cq, out ivec2 v) {
    int nx = int(mbx) + (x < 0 ? -1 : x >> 4), ny = int(mby) + (y < 0 ? -1 : y >> 4);
    v = ivec2(0);
    if (nx < 0 || ny < 0 || nx >= int(pc.mbw) || ny >= int(pc.mbh)) return NB_NONE;
    uint q = ((uint(y + 16) & 15u) >> 3) * 2u + ((uint(x + 16) & 15u) >> 3);
    bool before = ny < int(mby) || (ny == int(mby) && nx < int(mbx)) || (nx == int(mbx) && ny == int(mby) && q < cq);
    if (!before) return NB_NONE;
    uint nmb = uint(ny) * pc.mbw + uint(nx);
    if ((mbi[nmb * MBI_STRIDE + MBI_PART] & MB_INTRA) != 0u) return NB_INTRA;
    v = q_mv(nmb, q);
    return NB_REF0;
}

// The motion vector predictor (H.264 8.4.1.3) of the partition at (px, py) in macroblock (mbx, mby), pw samples
// wide, quadrant cq (0 for a 16×16 partition), refIdx 0: the median of A (left), B (above) and C (above right, or
// above left (D) where C is not available), an intra neighbour counting as refIdx −1 with vector 0, with
// 8.4.1.3.1's rules: B and C not available and A available → A for all three; one and only one with refIdx 0 →
// its vector.
ivec2 mv_pred_part(uint mbx, uint mby, int px, int py, int pw, uint cq) {
    ivec2 A, B, C;
    uint a = nb_mv(mbx, mby, px - 1, py, cq, A), b = nb_mv(mbx, mby, px, py - 1, cq, B);
    uint c = nb_mv(mbx, mby, px + pw, py - 1, cq, C);
    if (c == NB_NONE) c = nb_mv(mbx, mby, px - 1, py - 1, cq, C);
    if (b == NB_NONE && c == NB_NONE && a != NB_NONE) return A;   // A's vector (0 where A is intra) three times
    int n = int(a == NB_REF0) + int(b == NB_REF0) + int(c == NB_REF0);
    if (n == 1) return a == NB_REF0 ? A : b == NB_REF0 ? B : C;
    return ivec2(median3(A.x, B.x, C.x), median3(A.y, B.y, C.y));
}
ivec2 mv_pred(uint mbx, uint mby) { return mv_pred_part(mbx, mby, 0, 0, 16, 0u); }

// The P_Skip vector (8.4.1.1): 0 at the picture's left or top edge, or where A or B has refIdx 0 and stands still
// (an intra A or B does not count); else mv_pred.
ivec2 skip_mv(uint mbx, uint mby) {
    ivec2 A, B;
    uint a = nb_mv(mbx, mby, -1, 0, 0u, A), b = nb_mv(mbx, mby, 0, -1, 0u, B);
    if (a == NB_NONE || b == NB_NONE) return ivec2(0);
    if ((a == NB_REF0 && A == ivec2(0)) || (b == NB_REF0 && B == ivec2(0))) return ivec2(0);
    return mv_pred(mbx, mby);
}

// Luma of the reference at (x + fx/4, y + fy/4), 8.4.2.2.1 (h264_interp.glsl), reference samples outside the
// picture taken from its edge.
int ref_y(int x, int y) { return int(ref[clamp(y, 0, int(lh()) - 1) * int(lw()) + clamp(x, 0, int(lw()) - 1)]); }
int tap6(int a, int b, int c, int d, int e, int f) { return a - 5 * b + 20 * c + 20 * d - 5 * e + f; }
#define REF_Y(x, y) ref_y(x, y)
#include "h264_interp.glsl"
#undef REF_Y
