// SPDX-License-Identifier: MIT
// h264_copy.comp — GPU H.264 stage 6: the used words of the slices into host-visible memory, dispatched
// indirectly with the size h264_scan wrote, so that only the bytes of this picture cross to the host.
#version 450
#include "h264_common.glsl"
layout(local_size_x = 64) in;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < (ctl[CTL_BYTES] + 3u) / 4u) host[i] = outw[i];
}
