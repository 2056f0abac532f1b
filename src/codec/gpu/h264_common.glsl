// SPDX-License-Identifier: MIT
// h264_common.glsl — what every stage of the GPU H.264 encoder (h264_gpu.c) shares: the push constants, the
// buffer bindings and the plane layout.
//
// Planes are one sample per uint (values 0–255), padded to whole macroblocks: luma lw × lh (lw = 16·mbw,
// lh = 16·mbh) at 0, then Cb and Cr, each (lw/2) × (lh/2). The padding repeats the image's last column and row, so
// the decoder's cropped output is the image and the padded part predicts well.
// Per macroblock: MBI (32 uints: [0] flags, [1] mv x, [2] mv y in quarter samples, [3] the P_Skip macroblocks
// just before it (P pictures), [4] [5] the coarse search's vector, [6] [7] the last picture's vector (quarter
// samples), [8 + k] TotalCoeff of block k:
// 0–15 luma in luma4x4BlkIdx order, 16–19 Cb AC, 20–23 Cr AC) and LEV (408 ints, levels in coding order:
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
    uint pass;        // which part of a stage (CAVLC: 0 counts bits, 1 writes them; ME: 0 coarse, 1 fine)
    uint me_flags;    // motion search, for benchmarks: 1 whole pixels only
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
layout(std430, binding = 9) buffer Outw { uint outw[]; };          // the slices' RBSPs, each row byte-aligned
layout(std430, binding = 10) buffer Ctl { uint ctl[]; };           // [0] bytes, [1..3] dispatch, [4 + r] row offset
layout(std430, binding = 11) buffer Host { uint host[]; };         // host-visible copy of outw

#define MBI_STRIDE 32u
#define LEV_STRIDE 408u
#define LEV_CDC 272u
#define LEV_CAC 280u

uint lw() { return pc.mbw * 16u; }
uint lh() { return pc.mbh * 16u; }
uint cwid() { return pc.mbw * 8u; }
uint chei() { return pc.mbh * 8u; }
uint plane_u() { return lw() * lh(); }
uint plane_v() { return lw() * lh() + cwid() * chei(); }

// ---- motion (P pictures: one slice, so every neighbour inside the picture is available) ----

ivec2 mb_mv(uint mb) { return ivec2(int(mbi[mb * MBI_STRIDE + 1u]), int(mbi[mb * MBI_STRIDE + 2u])); }
int median3(int a, int b, int c) { return max(min(a, b), min(max(a, b), c)); }

// The motion vector predictor of a 16×16 partition (H.264 8.4.1.3), every neighbour being inter with refIdx 0 where
// it is available (P pictures here have no intra macroblocks; P_Skip ones have refIdx 0 too). C is the macroblock
// above right, or above left (D) where that is outside the picture.
ivec2 mv_pred(uint mbx, uint mby) {
    uint mb = mby * pc.mbw + mbx;
    bool a = mbx > 0u, b = mby > 0u, c = mby > 0u && mbx + 1u < pc.mbw, d = mbx > 0u && mby > 0u;
    ivec2 A = a ? mb_mv(mb - 1u) : ivec2(0), B = b ? mb_mv(mb - pc.mbw) : ivec2(0);
    bool hc = c || d;
    ivec2 C = c ? mb_mv(mb - pc.mbw + 1u) : d ? mb_mv(mb - pc.mbw - 1u) : ivec2(0);
    if (!b && !hc && a) return A;                       // B and C outside: A
    int n = int(a) + int(b) + int(hc);
    if (n == 1) return a ? A : b ? B : C;              // one and only one with refIdx 0
    return ivec2(median3(A.x, B.x, C.x), median3(A.y, B.y, C.y));
}

// The P_Skip vector (8.4.1.1): 0 at the picture's left or top edge, or where A or B stands still; else mv_pred.
ivec2 skip_mv(uint mbx, uint mby) {
    uint mb = mby * pc.mbw + mbx;
    if (mbx == 0u || mby == 0u) return ivec2(0);
    if (mb_mv(mb - 1u) == ivec2(0) || mb_mv(mb - pc.mbw) == ivec2(0)) return ivec2(0);
    return mv_pred(mbx, mby);
}

// Luma of the reference at (x + fx/4, y + fy/4), 8.4.2.2.1 (h264_interp.glsl), reference samples outside the
// picture taken from its edge.
int ref_y(int x, int y) { return int(ref[clamp(y, 0, int(lh()) - 1) * int(lw()) + clamp(x, 0, int(lw()) - 1)]); }
int tap6(int a, int b, int c, int d, int e, int f) { return a - 5 * b + 20 * c + 20 * d - 5 * e + f; }
#define REF_Y(x, y) ref_y(x, y)
#include "h264_interp.glsl"
#undef REF_Y
