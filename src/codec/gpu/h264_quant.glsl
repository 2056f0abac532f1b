// SPDX-License-Identifier: MIT
// h264_quant.glsl — the forward 4×4 transform and quantization of the GPU H.264 encoder (h264_mb codes with them,
// h264_me probes whether an inter residual would be coded at all).
// By QP % 6 and position class (pos_class): MF the forward multipliers (the JM reference encoder's quant_coef for
// flat matrices), V the inverse's normAdjust4x4 v (8.5.12.1).
const int MF[18] = int[](13107, 5243, 8066, 11916, 4660, 7490, 10082, 4194, 6554,
                         9362, 3647, 5825, 8192, 3355, 5243, 7282, 2893, 4559);
const int V[18] = int[](10, 16, 13, 11, 18, 14, 13, 20, 16, 14, 23, 18, 16, 25, 20, 18, 29, 23);
// zig-zag scan of a 4×4 block: coding index → raster index (y·4 + x)  (Table 8-13, frame macroblocks)
const uint ZZ[16] = uint[](0u, 1u, 4u, 8u, 5u, 2u, 3u, 6u, 9u, 12u, 13u, 10u, 7u, 11u, 14u, 15u);
// x264's decimate_score (common/quant.c, after the JM reference encoder's coefficient cost): 9 for a block with a
// level beyond ±1, else for each ±1 (from the last) a cost by the run of zeros before it in coding order:
// 3, 2, 2, 1, 1, 1, then 0.
const uint DS[16] = uint[](3u, 2u, 2u, 1u, 1u, 1u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
uint decimate_score(int z[16], int first) {
    int i = 15;
    while (i >= first && z[i] == 0) i--;
    uint s = 0u;
    while (i >= first) {
        if (abs(z[i]) > 1) return 9u;
        i--;
        uint run = 0u;
        while (i >= first && z[i] == 0) { i--; run++; }
        s += DS[run];
    }
    return s;
}

int pos_class(uint r) {   // raster index → 0 (both even), 1 (both odd), 2 (else)
    uint x = r & 3u, y = r >> 2;
    return ((x | y) & 1u) == 0u ? 0 : ((x & y) & 1u) != 0u ? 1 : 2;
}

int quant(int c, int mf, int qbits, int f) {
    int a = (abs(c) * mf + f) >> qbits;
    a = min(a, 2047);
    return c < 0 ? -a : a;
}

void fwd4(inout int b[16]) {   // Y = Cf X Cf^T (8.5.12.2's inverse in reverse)
    for (int i = 0; i < 4; i++) {
        int a = b[i * 4] + b[i * 4 + 3], bb = b[i * 4 + 1] + b[i * 4 + 2];
        int c = b[i * 4 + 1] - b[i * 4 + 2], d = b[i * 4] - b[i * 4 + 3];
        b[i * 4] = a + bb; b[i * 4 + 1] = 2 * d + c; b[i * 4 + 2] = a - bb; b[i * 4 + 3] = d - 2 * c;
    }
    for (int i = 0; i < 4; i++) {
        int a = b[i] + b[12 + i], bb = b[4 + i] + b[8 + i];
        int c = b[4 + i] - b[8 + i], d = b[i] - b[12 + i];
        b[i] = a + bb; b[4 + i] = 2 * d + c; b[8 + i] = a - bb; b[12 + i] = d - 2 * c;
    }
}

