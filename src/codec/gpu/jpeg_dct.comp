/* SPDX-License-Identifier: MIT */
// jpeg_dct.comp — GPU JPEG stage 1 (ITU-T T.81 baseline): RGBA8 → YCbCr (JFIF full-range BT.601), 4:2:0 or 4:4:4,
// forward DCT of 8×8 blocks with the AAN algorithm (Arai–Agui–Nakajima 1988, the float factorization of libjpeg's
// jfdctflt.c), and quantization with the AAN scale folded into the divisors (computed on the CPU), written in
// zigzag order. One workgroup = 6 blocks (one 4:2:0 MCU or two 4:4:4 MCUs): its 64 invocations fetch each texel
// once and colour-convert it into shared memory, then invocation (block, row) does that row's 1-D DCT, then the
// column's (a per-block fetch read each texel three times, and 4:2:0 chroma 32 texels an invocation: 0.133 ms at
// 3840×2160 on an H200 from the image, against 0.079 from a buffer).
// Two builds of this file: the pixels from a buffer (the input copied there first), or, with RC_IMAGE_INPUT
// (jpeg_dct_img), straight from the app's image through a sampled-image descriptor and texelFetch (no sampler:
// GL_EXT_samplerless_texture_functions), so no input copy remains.
#version 450
#ifdef RC_IMAGE_INPUT
#extension GL_EXT_samplerless_texture_functions : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "jpeg_io.h"   // the bindings and push constants, shared with jpeg_gpu.c
#define JPEG_FIELD(name) uint name;
layout(local_size_x = 64) in;

layout(std430, binding = JPEG_BIND_PX) readonly buffer Pixels { uint px[]; };         // RGBA8, row pitch = pitch_px
#ifdef RC_IMAGE_INPUT
layout(binding = JPEG_BIND_IMAGE) uniform texture2D img;   // the app's image through a view of its own format
#endif
layout(std430, binding = JPEG_BIND_COEF) writeonly buffer Coefs { int coef[]; };       // [block][64] zigzag order
layout(std430, binding = JPEG_BIND_DIV) readonly buffer Divisors { float div[]; };    // [2][64] natural order: 1/(q·s_u·s_v·8)
layout(std430, binding = JPEG_BIND_MASK) writeonly buffer Masks { uvec2 nzmask[]; };  // per block: bit k = coef k (zigzag) ≠ 0

layout(push_constant) uniform P { JPEG_PC_DCT(JPEG_FIELD) } p;   // jpeg_io.h

shared float rows[6][8][9]; // [block][row][col], padded

// position in zigzag order of natural index k (T.81 Figure A.6), as a table
const uint zz_of[64] = uint[64](
     0,  1,  5,  6, 14, 15, 27, 28,  2,  4,  7, 13, 16, 26, 29, 42,
     3,  8, 12, 17, 25, 30, 41, 43,  9, 11, 18, 24, 31, 40, 44, 53,
    10, 19, 23, 32, 39, 45, 52, 54, 20, 22, 33, 38, 46, 51, 55, 60,
    21, 34, 37, 47, 50, 56, 59, 61, 35, 36, 48, 49, 57, 58, 62, 63);

vec3 rgb_at(int x, int y) {
    x = clamp(x, 0, int(p.width) - 1);   // edge replication, as libjpeg pads partial MCUs
    y = clamp(y, 0, int(p.height) - 1);
#ifdef RC_IMAGE_INPUT
    vec3 t = texelFetch(img, ivec2(x, y), 0).rgb;   // the view orders the channels: no swizzle for BGRA
    if (p.bgra != 0u)   // _SRGB: the fetch decoded to linear; encode back (IEC 61966-2-1) to the stored bytes
        t = mix(12.92 * t, 1.055 * pow(t, vec3(1.0 / 2.4)) - 0.055, greaterThan(t, vec3(0.0031308)));
    return floor(t * 255.0 + 0.5);   // the stored 8-bit values exactly (UNORM: v/255 on fetch)
#else
    uint v = px[uint(y) * p.pitch_px + uint(x)];
    vec3 c = vec3(float(v & 255u), float((v >> 8) & 255u), float((v >> 16) & 255u));
    return p.bgra != 0u ? c.bgr : c;
#endif
}

void aan(inout float d[8]) {
    float tmp0 = d[0] + d[7], tmp7 = d[0] - d[7], tmp1 = d[1] + d[6], tmp6 = d[1] - d[6];
    float tmp2 = d[2] + d[5], tmp5 = d[2] - d[5], tmp3 = d[3] + d[4], tmp4 = d[3] - d[4];
    float tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3, tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
    d[0] = tmp10 + tmp11;
    d[4] = tmp10 - tmp11;
    float z1 = (tmp12 + tmp13) * 0.707106781;
    d[2] = tmp13 + z1;
    d[6] = tmp13 - z1;
    tmp10 = tmp4 + tmp5;
    tmp11 = tmp5 + tmp6;
    tmp12 = tmp6 + tmp7;
    float z5 = (tmp10 - tmp12) * 0.382683433;
    float z2 = 0.541196100 * tmp10 + z5;
    float z4 = 1.306562965 * tmp12 + z5;
    float z3 = tmp11 * 0.707106781;
    float z11 = tmp7 + z3, z13 = tmp7 - z3;
    d[5] = z13 + z2;
    d[3] = z13 - z2;
    d[1] = z11 + z4;
    d[7] = z11 - z4;
}

// The texels of one workgroup's six blocks, fetched once each: 4:2:0 one MCU (16×16 px: Y0..Y3, Cb, Cr), 4:4:4
// two MCUs (8×8 px each: Y Cb Cr, Y Cb Cr), in the file's block order, so the group writes blocks 6g..6g+5.
shared float samples[6][8][9];
shared uvec2 nz[6][8];  // per block and column: the column's nonzero coefficients (zigzag bits), OR-ed at the end

vec3 to_ycc(vec3 c) {
    return vec3(0.299 * c.r + 0.587 * c.g + 0.114 * c.b - 128.0,
                -0.168735892 * c.r - 0.331264108 * c.g + 0.5 * c.b,
                0.5 * c.r - 0.418687589 * c.g - 0.081312411 * c.b);
}

void main() {
    uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
    if (g * 6u >= p.total_blocks) return;   // a spare group of a 2-D dispatch (uniform in the workgroup)
    // 1. fetch: every texel once, colour-converted into samples[]
    if (p.subsamp420 != 0u) {   // invocation t: the 2×2 quad (qx, qy) of the MCU
        uint mx = g % p.mcus_x, my = g / p.mcus_x, qx = t & 7u, qy = t >> 3;
        int x = int(mx * 16u + 2u * qx), y = int(my * 16u + 2u * qy);
        vec3 a = rgb_at(x, y), b = rgb_at(x + 1, y), c = rgb_at(x, y + 1), d = rgb_at(x + 1, y + 1);
        uint bi = (qy >> 2) * 2u + (qx >> 2), r = (2u * qy) & 7u, k = (2u * qx) & 7u;
        samples[bi][r][k] = to_ycc(a).x;
        samples[bi][r][k + 1u] = to_ycc(b).x;
        samples[bi][r + 1u][k] = to_ycc(c).x;
        samples[bi][r + 1u][k + 1u] = to_ycc(d).x;
        vec3 m = to_ycc(0.25 * (a + b + c + d));   // chroma of the averaged RGB (the conversion is linear: as
                                                   // averaging the converted values, up to rounding)
        samples[4][qy][qx] = m.y;
        samples[5][qy][qx] = m.z;
    } else {   // invocations 32h..32h+31: MCU 2g+h, two texels each
        uint h = t >> 5, u = t & 31u, m = min(2u * g + h, p.mcus_x * p.mcus_y - 1u);
        uint mx = m % p.mcus_x, my = m / p.mcus_x, r = u >> 2, k = (u & 3u) * 2u;
        for (uint j = 0u; j < 2u; j++) {
            vec3 v = to_ycc(rgb_at(int(mx * 8u + k + j), int(my * 8u + r)));
            samples[3u * h][r][k + j] = v.x;
            samples[3u * h + 1u][r][k + j] = v.y;
            samples[3u * h + 2u][r][k + j] = v.z;
        }
    }
    barrier();
    // 2. 1-D DCT of each row (invocations 0..47: block t/8, row t%8), then of each column
    uint lb = t >> 3, r = t & 7u;
    float d[8];
    if (t < 48u) {
        for (uint i = 0u; i < 8u; i++) d[i] = samples[lb][r][i];
        aan(d);
        for (uint i = 0u; i < 8u; i++) rows[lb][r][i] = d[i];
    }
    barrier();
    uint block = g * 6u + lb;
    bool live = t < 48u && block < p.total_blocks;
    if (live) {
        for (uint i = 0u; i < 8u; i++) d[i] = rows[lb][i][r];   // column r
        aan(d);
        uint comp = p.subsamp420 != 0u ? (lb < 4u ? 0u : lb - 3u) : lb % 3u;
        uint tq = comp == 0u ? 0u : 1u;
        uvec2 m = uvec2(0u);
        for (uint v = 0u; v < 8u; v++) {
            uint k = v * 8u + r, z = zz_of[k];   // natural index: row v, column r
            float q = d[v] * div[tq * 64u + k];
            int c = int(floor(q + 0.5));   // round half up, as libjpeg's (int)(x+16384.5)-16384
            coef[block * 64u + z] = c;
            if (c != 0) { if (z < 32u) m.x |= 1u << z; else m.y |= 1u << (z - 32u); }
        }
        nz[lb][r] = m;
    }
    barrier();
    if (live && r == 0u) {
        uvec2 m = nz[lb][0];
        for (uint i = 1u; i < 8u; i++) m |= nz[lb][i];
        nzmask[block] = m;
    }
}
