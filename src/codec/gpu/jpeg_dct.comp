// jpeg_dct.comp — GPU JPEG stage 1 (ITU-T T.81 baseline): RGBA8 → YCbCr (JFIF full-range BT.601), 4:2:0 or 4:4:4,
// forward DCT of 8×8 blocks with the AAN algorithm (Arai–Agui–Nakajima 1988, the float factorization of libjpeg's
// jfdctflt.c), and quantization with the AAN scale folded into the divisors (computed on the CPU), written in
// zigzag order. One workgroup = 8 blocks; invocation (block, row) does that row's 1-D DCT, then the column's.
// Two builds of this file: the pixels from a buffer (the input copied there first), or, with RC_IMAGE_INPUT
// (jpeg_dct_img), straight from the app's image through a sampled-image descriptor and texelFetch (no sampler:
// GL_EXT_samplerless_texture_functions), so no input copy remains.
#version 450
#ifdef RC_IMAGE_INPUT
#extension GL_EXT_samplerless_texture_functions : require
#endif
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Pixels { uint px[]; };         // RGBA8, row pitch = pitch_px
#ifdef RC_IMAGE_INPUT
layout(binding = 12) uniform texture2D img;   // the app's image through a view of its own format
#endif
layout(std430, binding = 1) writeonly buffer Coefs { int coef[]; };       // [block][64] zigzag order
layout(std430, binding = 2) readonly buffer Divisors { float div[]; };    // [2][64] natural order: 1/(q·s_u·s_v·8)

layout(push_constant) uniform P {
    uint width, height, pitch_px;
    uint mcus_x, mcus_y;
    uint subsamp420;      // 1: MCU 16×16 with Y0..Y3 Cb Cr; 0: MCU 8×8 with Y Cb Cr
    uint bgra;            // 1: bytes B,G,R,A (buffer input); image input: 1 = the view is _SRGB (decoded on fetch)
    uint total_blocks;
} p;

shared float rows[8][8][9]; // [block][row][col], padded

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

float sample_at(uint comp, int x, int y, bool sub) {
    vec3 c;
    if (sub) c = 0.25 * (rgb_at(2 * x, 2 * y) + rgb_at(2 * x + 1, 2 * y) + rgb_at(2 * x, 2 * y + 1) + rgb_at(2 * x + 1, 2 * y + 1));
    else c = rgb_at(x, y);
    if (comp == 0u) return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b - 128.0;
    if (comp == 1u) return -0.168735892 * c.r - 0.331264108 * c.g + 0.5 * c.b;
    return 0.5 * c.r - 0.418687589 * c.g - 0.081312411 * c.b;
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

void main() {
    uint lb = gl_LocalInvocationID.x >> 3, r = gl_LocalInvocationID.x & 7u;
    uint block = gl_WorkGroupID.x * 8u + lb;
    bool live = block < p.total_blocks;
    uint bpm = p.subsamp420 != 0u ? 6u : 3u;
    uint mcu = live ? block / bpm : 0u, bi = block % bpm;
    uint mx = mcu % p.mcus_x, my = mcu / p.mcus_x;
    uint comp = p.subsamp420 != 0u ? (bi < 4u ? 0u : bi - 3u) : bi;
    bool sub = p.subsamp420 != 0u && comp != 0u;
    int x0, y0;
    if (p.subsamp420 != 0u) {
        if (comp == 0u) { x0 = int(mx * 16u + (bi & 1u) * 8u); y0 = int(my * 16u + (bi >> 1) * 8u); }
        else { x0 = int(mx * 8u); y0 = int(my * 8u); }  // in subsampled coordinates
    } else { x0 = int(mx * 8u); y0 = int(my * 8u); }
    float d[8];
    for (int i = 0; i < 8; i++) d[i] = live ? sample_at(comp, x0 + i, y0 + int(r), sub) : 0.0;
    aan(d);
    for (int i = 0; i < 8; i++) rows[lb][r][i] = d[i];
    barrier();
    // column r
    for (int i = 0; i < 8; i++) d[i] = rows[lb][i][r];
    aan(d);
    if (!live) return;
    uint t = comp == 0u ? 0u : 1u;
    for (uint v = 0u; v < 8u; v++) {
        uint k = v * 8u + r;                      // natural index: row v, column r
        float q = d[v] * div[t * 64u + k];
        coef[block * 64u + zz_of[k]] = int(floor(q + 0.5)); // round half up, as libjpeg's (int)(x+16384.5)-16384
    }
}
