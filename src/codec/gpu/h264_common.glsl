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
// deblocking filter's 32 edge strengths, 4 bits each: h264_deblock.comp, [45] MBI_DEPTH (after the intra wave
// MBI_ADOPTED, the adopt rounds' stamps), [46] MBI_SAD, [47] MBI_INTER)
// and LEV (408 ints, levels in coding order:
// [0,16) Intra16x16 DC in zig-zag order, [16 + 16·blk, +16) luma block blk in zig-zag order (index 0 unused by
// Intra16x16), [272,276) Cb DC, [276,280) Cr DC, [280 + 16·(4·c + b), +16) chroma AC (index 0 unused)).
#extension GL_GOOGLE_include_directive : require
#include "h264_io.h"   // the bindings, blocks, record fields and passes, shared with h264_gpu.c

#define RC_H264_FIELD(name) uint name;
layout(push_constant) uniform PC { RC_H264_PC(RC_H264_FIELD) } pc;
layout(std430, binding = RC_H264_BIND_PIC) readonly restrict buffer Pic { RC_H264_PIC(RC_H264_FIELD) } pic;

layout(std430, binding = RC_H264_BIND_IN) readonly buffer In { uint inpx[]; };
layout(std430, binding = RC_H264_BIND_SRC) buffer Src { uint src[]; };
layout(std430, binding = RC_H264_BIND_REF) readonly buffer Ref { uint ref[]; };
// (coherent: IDR rows and the deblocking rows read what other workgroups wrote)
layout(std430, binding = RC_H264_BIND_REC) coherent buffer Rec { uint rec[]; };
layout(std430, binding = RC_H264_BIND_QCUR) buffer QCur { uint qcur[]; };
layout(std430, binding = RC_H264_BIND_QREF) readonly buffer QRef { uint qref[]; };
layout(std430, binding = RC_H264_BIND_MBI) buffer Mbi { uint mbi[]; };
layout(std430, binding = RC_H264_BIND_LEV) buffer Lev { int lev[]; };
layout(std430, binding = RC_H264_BIND_BITS) buffer Bits { uint bits[]; };
layout(std430, binding = RC_H264_BIND_OUT) buffer Outw { uint outw[]; };   // the slices' RBSPs, byte-aligned
layout(std430, binding = RC_H264_BIND_CTL) buffer Ctl { uint ctl[]; };
layout(std430, binding = RC_H264_BIND_HOST) buffer Host { uint host[]; };

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
