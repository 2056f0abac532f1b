/* SPDX-License-Identifier: MIT */
// vk_damage_hash.comp — damage on the GPU, pass 1: a 64-bit hash of each TILE×TILE tile of the frame (copied into
// the mirror buffer just before), compared with the tile's hash of the previous frame; a tile whose hash changed
// (or every tile, on reset) gets the new hash and changed_at = this frame's number. One workgroup per tile.
//
// The hash: two independent 32-bit lanes, each a chain over the invocation's texels (one column of the tile,
// every 256/TILE-th row), seeded with the invocation's index:
//   lane a: the block step and finalizer of MurmurHash3_x86_32 (Austin Appleby, public domain, smhasher),
//   lane b: the round and avalanche of xxHash32 (Yann Collet, BSD-2-Clause, github.com/Cyan4973/xxHash),
// then the workgroup XORs the 256 finalized pairs. Every step of either chain is a bijection of the running state
// and of the texel (odd multipliers, rotations, xor-shifts), so a change of ONE texel always changes the tile's
// hash (no collision possible); several changed texels collide with probability ~2^-64.
#version 450
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TILE = 64u;   // RC_DAMAGE_TILE; 256 % TILE == 0

layout(std430, binding = 0) readonly buffer Mirror { uint px[]; };   // the frame, RGBA8/BGRA8 words
layout(std430, binding = 1) buffer State { uvec4 st[]; };            // per tile: hash (x, y), changed_at (z)

layout(push_constant) uniform P {
    uint width, height, mirror_pitch;   // pixels, mirror row pitch in pixels
    uint tiles_x, tiles_y;
    uint frame;                         // this frame's number (≥ 1)
    uint slot_frame;                    // (copy pass) number of the frame the staging slot holds, 0 = none
    uint reset;                         // 1: every tile changed (first frame, size or format change)
    uint mode;                          // (copy pass)
    uint stage_pitch;                   // (copy pass)
    uint flags_word;                    // (copy pass)
} p;

shared uvec2 part[256];

uint rotl(uint x, uint r) { return (x << r) | (x >> (32u - r)); }

uint murmur_step(uint h, uint k) {
    k *= 0xcc9e2d51u;
    k = rotl(k, 15u);
    k *= 0x1b873593u;
    h ^= k;
    h = rotl(h, 13u);
    return h * 5u + 0xe6546b64u;
}
uint murmur_fmix(uint h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}
const uint XX_P1 = 2654435761u, XX_P2 = 2246822519u, XX_P3 = 3266489917u, XX_P5 = 374761393u;
uint xx_round(uint acc, uint v) { return rotl(acc + v * XX_P2, 13u) * XX_P1; }
uint xx_avalanche(uint h) {
    h ^= h >> 15;
    h *= XX_P2;
    h ^= h >> 13;
    h *= XX_P3;
    h ^= h >> 16;
    return h;
}

void main() {
    uint tx = gl_WorkGroupID.x, ty = gl_WorkGroupID.y, t = ty * p.tiles_x + tx;
    uint x0 = tx * TILE, y0 = ty * TILE;
    uint tw = min(TILE, p.width - x0), th = min(TILE, p.height - y0);
    uint i = gl_LocalInvocationID.x, col = i % TILE, row0 = i / TILE;
    const uint ROWS = 256u / TILE;
    uint a = 0x9747b28cu + i, b = XX_P5 + i;
    if (col < tw)
        for (uint y = row0; y < th; y += ROWS) {
            uint v = px[(y0 + y) * p.mirror_pitch + x0 + col];
            a = murmur_step(a, v);
            b = xx_round(b, v);
        }
    part[i] = uvec2(murmur_fmix(a), xx_avalanche(b));
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (i < s) part[i] ^= part[i + s];
        barrier();
    }
    if (i == 0u) {
        uvec2 h = part[0];
        if (p.reset != 0u || st[t].xy != h) st[t] = uvec4(h, p.frame, 0u);
    }
}
