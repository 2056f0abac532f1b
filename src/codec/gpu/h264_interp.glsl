// SPDX-License-Identifier: MIT
// h264_interp.glsl — the luma sample interpolation of H.264 8.4.2.2.1, over integer samples REF_Y(x, y) (defined
// by the includer: the reference picture, or a tile of it in shared memory); included once per sample source, with
// the function names renamed by the includer where it is included twice.
// Luma of the reference at (x + fx/4, y + fy/4): the 6-tap half samples and the averaged quarter samples of
// 8.4.2.2.1 (Table 8-12's positions a–s), reference samples outside the picture taken from its edge.
int b1_at(int x, int y) {
    return tap6(REF_Y(x - 2, y), REF_Y(x - 1, y), REF_Y(x, y), REF_Y(x + 1, y), REF_Y(x + 2, y), REF_Y(x + 3, y));
}
int half_h(int x, int y) { return clamp((b1_at(x, y) + 16) >> 5, 0, 255); }   // b: between (x, y) and (x + 1, y)
int half_v(int x, int y) {                                                      // h: between (x, y) and (x, y + 1)
    return clamp((tap6(REF_Y(x, y - 2), REF_Y(x, y - 1), REF_Y(x, y), REF_Y(x, y + 1), REF_Y(x, y + 2),
                       REF_Y(x, y + 3)) + 16) >> 5, 0, 255);
}
int half_c(int x, int y) {                                                      // j: the centre
    int j1 = tap6(b1_at(x, y - 2), b1_at(x, y - 1), b1_at(x, y), b1_at(x, y + 1), b1_at(x, y + 2), b1_at(x, y + 3));
    return clamp((j1 + 512) >> 10, 0, 255);
}
int luma_q(int x, int y, int fx, int fy) {
    if (fx == 0 && fy == 0) return REF_Y(x, y);
    if (fx == 0) {
        int h = half_v(x, y);
        return fy == 2 ? h : fy == 1 ? (REF_Y(x, y) + h + 1) >> 1 : (REF_Y(x, y + 1) + h + 1) >> 1;   // h, d, n
    }
    if (fy == 0) {
        int b = half_h(x, y);
        return fx == 2 ? b : fx == 1 ? (REF_Y(x, y) + b + 1) >> 1 : (REF_Y(x + 1, y) + b + 1) >> 1;   // b, a, c
    }
    if (fx == 2 || fy == 2) {
        int j = half_c(x, y);
        if (fx == 2 && fy == 2) return j;                                                            // j
        if (fx == 2) return ((fy == 1 ? half_h(x, y) : half_h(x, y + 1)) + j + 1) >> 1;               // f, q
        return ((fx == 1 ? half_v(x, y) : half_v(x + 1, y)) + j + 1) >> 1;                            // i, k
    }
    // e, g, p, r: the mean of a horizontal and a vertical half sample
    int b = fy == 1 ? half_h(x, y) : half_h(x, y + 1);
    int h = fx == 1 ? half_v(x, y) : half_v(x + 1, y);
    return (b + h + 1) >> 1;
}
