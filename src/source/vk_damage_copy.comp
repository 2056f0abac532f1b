/* SPDX-License-Identifier: MIT */
// vk_damage_copy.comp — damage on the GPU, pass 2 (after the hash pass): the readback of the tiles the staging slot
// lacks. The slot holds a complete frame number slot_frame (0: none); a tile changed after it (changed_at >
// slot_frame) is copied from the mirror into the slot's host-visible staging buffer, the others are not read back
// at all. Per tile it also writes a flag word after the pixels: bit 0 = changed in this frame (vs the previous one),
// bit 1 = copied into the slot. mode 1: the whole frame reached the slot by a plain vkCmdCopyImageToBuffer in the
// same command buffer: only the flags are written (bit 1 everywhere). One workgroup per tile.
#version 450
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TILE = 64u;

layout(std430, binding = 0) readonly buffer Mirror { uint px[]; };
layout(std430, binding = 1) readonly buffer State { uvec4 st[]; };
layout(std430, binding = 2) writeonly buffer Staging { uint stage[]; };  // pixels (stage_pitch), then flags

layout(push_constant) uniform P {
    uint width, height, mirror_pitch;
    uint tiles_x, tiles_y;
    uint frame, slot_frame, reset, mode;
    uint stage_pitch;                   // staging row pitch, pixels
    uint flags_word;                    // index of tile 0's flag word in the staging buffer
} p;

void main() {
    uint tx = gl_WorkGroupID.x, ty = gl_WorkGroupID.y, t = ty * p.tiles_x + tx;
    uint changed_at = st[t].z;
    bool copy = p.mode != 0u || changed_at > p.slot_frame;
    uint i = gl_LocalInvocationID.x;
    if (i == 0u) stage[p.flags_word + t] = (changed_at == p.frame ? 1u : 0u) | (copy ? 2u : 0u);
    if (p.mode != 0u || !copy) return;
    uint x0 = tx * TILE, y0 = ty * TILE;
    uint tw = min(TILE, p.width - x0), th = min(TILE, p.height - y0);
    uint col = i % TILE;
    const uint ROWS = 256u / TILE;
    if (col >= tw) return;
    for (uint y = i / TILE; y < th; y += ROWS)
        stage[(y0 + y) * p.stage_pitch + x0 + col] = px[(y0 + y) * p.mirror_pitch + x0 + col];
}
