/* SPDX-License-Identifier: MIT */
// mandel.comp — the demo's GPU scene: one invocation per pixel iterates z = z² + c (Mandelbrot) or, with
// julia = 1, z = z² + k starting at the pixel (Julia), and writes a smooth-coloured RGBA8 pixel (normalized
// iteration count; cosine palette shifted by time for the animation). Compiled by glslc at build time.
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(binding = 0, rgba8) uniform writeonly image2D img;
layout(push_constant) uniform Params {
    vec2 center;      // complex-plane point at the frame centre
    vec2 julia_c;     // k of the Julia set
    float scale;      // complex units per pixel
    float t;          // animation phase (s)
    uint width, height, max_iter, palette, julia;
} p;

void main() {
    uvec2 g = gl_GlobalInvocationID.xy;
    if (g.x >= p.width || g.y >= p.height) return;
    vec2 pos = p.center + (vec2(g) + 0.5 - 0.5 * vec2(p.width, p.height)) * vec2(p.scale, -p.scale);
    vec2 z = p.julia != 0u ? pos : vec2(0.0);
    vec2 c = p.julia != 0u ? p.julia_c : pos;
    uint i = 0u;
    float r2 = 0.0;
    for (; i < p.max_iter; i++) {
        z = vec2(z.x * z.x - z.y * z.y, 2.0 * z.x * z.y) + c;
        r2 = dot(z, z);
        if (r2 > 256.0) break;
    }
    vec3 col = vec3(0.0);
    if (i < p.max_iter) {
        float mu = float(i) + 1.0 - log2(0.5 * log2(r2));
        float v = sqrt(mu) * 0.22 + p.t * 0.05;
        vec3 phase = p.palette == 0u ? vec3(0.00, 0.10, 0.20) : p.palette == 1u ? vec3(0.0, 0.33, 0.67)
                                                              : vec3(0.5, 0.20, 0.25);
        col = 0.5 + 0.5 * cos(6.2831853 * (v + phase));
    }
    imageStore(img, ivec2(g), vec4(col, 1.0));
}
