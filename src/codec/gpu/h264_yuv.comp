// SPDX-License-Identifier: MIT
// h264_yuv.comp — GPU H.264 stage 1: the image (RGBA or BGRA bytes) to Y'CbCr 4:2:0 planes, ITU-R BT.601 studio
// range (the 8-bit integer form libyuv's ARGBToI420 uses: Y = (66R + 129G + 25B + 128) / 256 + 16, chroma from the
// 2×2 mean), padded to whole macroblocks by repeating the last column and row; and the luma at 1/4 size (the mean
// of each 4×4) for the coarse motion search. One invocation per 4×4 luma block.
#version 450
#include "h264_common.glsl"
layout(local_size_x = 8, local_size_y = 8) in;

ivec3 rgb(uint x, uint y) {
    uint v = inpx[min(y, pc.h - 1u) * pc.in_pitch + min(x, pc.w - 1u)];
    ivec3 c = ivec3(int(v & 255u), int((v >> 8) & 255u), int((v >> 16) & 255u));
    return pic.bgra != 0u ? c.bgr : c;
}

uint luma(ivec3 c) { return uint(((66 * c.r + 129 * c.g + 25 * c.b + 128) >> 8) + 16); }

void main() {
    uint bx = gl_GlobalInvocationID.x, by = gl_GlobalInvocationID.y;
    if (bx >= pc.mbw * 4u || by >= pc.mbh * 4u) return;
    uint ysum = 0u;
    for (uint cy = 0u; cy < 2u; cy++)
        for (uint cx = 0u; cx < 2u; cx++) {
            ivec3 s = ivec3(0);
            for (uint j = 0u; j < 2u; j++)
                for (uint i = 0u; i < 2u; i++) {
                    uint x = bx * 4u + cx * 2u + i, y = by * 4u + cy * 2u + j;
                    ivec3 c = rgb(x, y);
                    uint l = luma(c);
                    src[y * lw() + x] = l;
                    ysum += l;
                    s += c;
                }
            s = (s + 2) >> 2;
            uint ci = (by * 2u + cy) * cwid() + bx * 2u + cx;
            src[plane_u() + ci] = uint(((-38 * s.r - 74 * s.g + 112 * s.b + 128) >> 8) + 128);
            src[plane_v() + ci] = uint(((112 * s.r - 94 * s.g - 18 * s.b + 128) >> 8) + 128);
        }
    qcur[by * (pc.mbw * 4u) + bx] = (ysum + 8u) >> 4;
}
