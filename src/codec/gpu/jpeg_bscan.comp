/* SPDX-License-Identifier: MIT */
// jpeg_bscan.comp — GPU JPEG, block-parallel path: one level of a multi-level exclusive prefix sum over uints in
// the sc buffer (reduce-then-scan, no inter-workgroup waiting, so it runs on any device, lavapipe included):
//   mode 0 (local): workgroup g scans in[g·1024 ..] (256 invocations × 4 values) into out[] and writes its total
//                   to aux[g];
//   mode 1 (add):   out[g·1024 + i] += aux[g] (aux scanned by the level above).
// Three levels cover 2^30 values. n is a push constant, or (dyn ≥ 1) read on the GPU from sc[misc] and divided by
// 1024^(dyn−1) (rounded up) — the stuffing scan, whose length the GPU learns. Workgroups may come as x·y (2-D
// indirect dispatches past 65535 groups).
// Within a workgroup: built with RC_SUBGROUP (jpeg_bscan_sg, for devices with subgroup arithmetic in compute
// shaders) and where the workgroup's subgroups are full, each subgroup scans its values with subgroupInclusiveAdd
// and adds the totals of the subgroups before it; else a Hillis–Steele scan of the 256 partial sums in shared
// memory (8 rounds, 16 barriers).
#version 450
#ifdef RC_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "jpeg_io.h"   // the bindings and push constants, shared with jpeg_gpu.c
#define JPEG_FIELD(name) uint name;
layout(local_size_x = 256) in;

layout(std430, binding = JPEG_BIND_SC) buffer Sc { uint sc[]; };

layout(push_constant) uniform P { JPEG_PC_BSCAN(JPEG_FIELD) } p;   // jpeg_io.h

shared uint part[256];

void main() {
    uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
#ifdef RC_SUBGROUP
    // Subgroups may be partial in Vulkan 1.1 compute (without REQUIRE_FULL_SUBGROUPS: some devices run fewer lanes
    // than gl_SubgroupSize says); the subgroup scan needs them full, so a workgroup that finds them otherwise
    // (uniform: the same for all its invocations) takes the shared-memory scan. Where they are full, the
    // invocation's place in scan order follows the subgroups, however the device forms them.
    bool full = gl_NumSubgroups * gl_SubgroupSize == 256u;
    uint t = full ? gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID : gl_LocalInvocationID.x;
#else
    uint t = gl_LocalInvocationID.x;
#endif
    uint n = p.n;
    if (p.dyn != 0u) {
        n = sc[p.misc];
        for (uint l = 1u; l < p.dyn; l++) n = (n + 1023u) >> 10;
    }
    if (g > 0u && g * 1024u >= n) return;   // a spare group of a 2-D dispatch (uniform in the workgroup)
    uint i0 = g * 1024u + t * 4u;
    if (p.mode == 1u) {
        uint a = sc[p.aux_base + g];
        for (uint j = 0u; j < 4u; j++)
            if (i0 + j < n) sc[p.out_base + i0 + j] += a;
        return;
    }
    uint v[4];
    uint s = 0u;
    for (uint j = 0u; j < 4u; j++) {
        v[j] = i0 + j < n ? sc[p.in_base + i0 + j] & p.mask : 0u;
        s += v[j];
    }
    uint incl;
#ifdef RC_SUBGROUP
    if (full) {
        incl = subgroupInclusiveAdd(s);
        if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u) part[gl_SubgroupID] = incl;
        barrier();
        for (uint k = 0u; k < gl_SubgroupID; k++) incl += part[k];   // ≤ 7 on 32-wide subgroups
    } else
#endif
    {
        part[t] = s;
        barrier();
        for (uint d = 1u; d < 256u; d <<= 1) {   // Hillis–Steele inclusive scan of the 256 partial sums
            uint x = t >= d ? part[t - d] : 0u;
            barrier();
            part[t] += x;
            barrier();
        }
        incl = part[t];
    }
    uint o = incl - s;
    for (uint j = 0u; j < 4u; j++) {
        if (i0 + j < n) sc[p.out_base + i0 + j] = o;
        o += v[j];
    }
    if (t == 255u) sc[p.aux_base + g] = incl;
}
