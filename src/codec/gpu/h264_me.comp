// SPDX-License-Identifier: MIT
// h264_me.comp — GPU H.264 stage 2 (P pictures): one 16×16 motion vector per macroblock, whole pixels, by a
// two-level search (the hierarchical search of e.g. Nam et al., "A fast hierarchical motion vector estimation
// algorithm using mean pyramid", IEEE TCSVT 1995): a full search of ±ME_RANGE at 1/4 size (±4·ME_RANGE pixels) on
// the 4×4 means, then ±2 pixels around that vector and around (0,0) on the reference's reconstruction. The cost is
// SAD + lambda × the bits of the vector's components (se(v) lengths of the quarter-pel values), which keeps still
// areas at (0,0), where they can be P_Skip. One workgroup per macroblock.
#version 450
#include "h264_common.glsl"
layout(local_size_x = 64) in;

#define ME_RANGE 16
#define ME_SIDE (2 * ME_RANGE + 1)

shared uint scost[64];
shared int sidx[64];

uint se_bits(int v) {   // length of se(v)
    uint k = v > 0 ? uint(2 * v - 1) : uint(-2 * v);
    return 2u * uint(findMSB(k + 1u)) + 1u;
}

void reduce(uint t, uint cost, int idx) {
    scost[t] = cost;
    sidx[t] = idx;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (t < s) {
            uint c2 = scost[t + s];
            int i2 = sidx[t + s];
            if (c2 < scost[t] || (c2 == scost[t] && i2 < sidx[t])) { scost[t] = c2; sidx[t] = i2; }
        }
        barrier();
    }
}

void main() {
    uint mbx = gl_WorkGroupID.x, mby = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
    uint mb = mby * pc.mbw + mbx;
    int qw = int(pc.mbw * 4u), qh = int(pc.mbh * 4u);
    // coarse: ±ME_RANGE on the 1/4-size means
    uint best = 0xFFFFFFFFu;
    int bi = 0x7FFFFFFF;
    for (int i = int(t); i < ME_SIDE * ME_SIDE; i += 64) {
        int dx = i % ME_SIDE - ME_RANGE, dy = i / ME_SIDE - ME_RANGE;
        uint sad = 0u;
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++) {
                int cx = int(mbx) * 4 + x, cy = int(mby) * 4 + y;
                int rx = clamp(cx + dx, 0, qw - 1), ry = clamp(cy + dy, 0, qh - 1);
                sad += uint(abs(int(qcur[cy * qw + cx]) - int(qref[ry * qw + rx])));
            }
        uint cost = sad * 16u + pc.lambda * (se_bits(dx * 16) + se_bits(dy * 16));
        if (cost < best) { best = cost; bi = i; }
    }
    reduce(t, best, bi);
    int cdx = (sidx[0] % ME_SIDE - ME_RANGE) * 4, cdy = (sidx[0] / ME_SIDE - ME_RANGE) * 4;
    barrier();
    // fine: ±2 around (0,0) (candidates 0–24) and around the coarse vector (25–49), on the reconstruction
    best = 0xFFFFFFFFu;
    bi = 0x7FFFFFFF;
    if (t < 50u) {
        int k = int(t % 25u);
        int dx = k % 5 - 2, dy = k / 5 - 2;
        if (t >= 25u) { dx += cdx; dy += cdy; }
        int W = int(lw()), H = int(lh());
        uint sad = 0u;
        for (int y = 0; y < 16; y++) {
            int cy = int(mby) * 16 + y, ry = clamp(cy + dy, 0, H - 1);
            for (int x = 0; x < 16; x++) {
                int cx = int(mbx) * 16 + x, rx = clamp(cx + dx, 0, W - 1);
                sad += uint(abs(int(src[cy * W + cx]) - int(ref[ry * W + rx])));
            }
        }
        best = sad + pc.lambda * (se_bits(dx * 4) + se_bits(dy * 4));
        bi = int(t);
    }
    reduce(t, best, bi);
    if (t == 0u) {
        int k = sidx[0] % 25;
        int dx = k % 5 - 2, dy = k / 5 - 2;
        if (sidx[0] >= 25) { dx += cdx; dy += cdy; }
        mbi[mb * MBI_STRIDE + 1u] = uint(dx);
        mbi[mb * MBI_STRIDE + 2u] = uint(dy);
    }
}
