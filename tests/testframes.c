/* SPDX-License-Identifier: MIT */
/*
 * testframes.c — deterministic test frames (see testframes.h) and the frame sets the tests iterate over.
 * Everything is drawn with integer arithmetic from one 64-bit mixing function (SplitMix64's finalizer), seeded by
 * kind and size: no rand(), no floating point, no libm, so every run on every machine writes the same bytes.
 */
#include "testframes.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "imageio.h"

static const char *const k_names[TF_KINDS] = {"plot", "text", "gradient", "heatmap", "noise"};

const uint32_t tf_sizes[][2] = {{1, 1}, {7, 5}, {333, 197}, {1001, 777}, {1920, 1080}, {3840, 2160}};
const size_t tf_nsizes = sizeof tf_sizes / sizeof tf_sizes[0];

const char *tf_kind_name(tf_kind k) {
    return k == TF_CORPUS ? "corpus" : (unsigned)k < TF_KINDS ? k_names[k] : "?";
}

int tf_kind_parse(const char *name, tf_kind *k) {
    for (int i = 0; i < TF_KINDS; i++)
        if (!strcmp(name, k_names[i])) {
            *k = (tf_kind)i;
            return 0;
        }
    return -1;
}

/* ---- randomness: SplitMix64 ---- */

static uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) { return mix64(a ^ mix64(b ^ mix64(c))); }

typedef struct rng {
    uint64_t s;
} rng;
static uint64_t rng_next(rng *r) { return mix64(r->s += 0x9E3779B97F4A7C15ull); }
static int rng_below(rng *r, int n) { return n > 0 ? (int)(rng_next(r) % (uint64_t)n) : 0; }

/* ---- drawing ---- */

typedef struct canvas {
    uint8_t *px;
    int w, h;
    size_t pitch;
} canvas;

static void fill(canvas *c, const uint8_t col[3]) {
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            uint8_t *p = c->px + (size_t)y * c->pitch + (size_t)x * 4;
            p[0] = col[0], p[1] = col[1], p[2] = col[2], p[3] = 255;
        }
}

/* col over the pixel with coverage a (0–255); outside the frame: nothing. */
static void blend(canvas *c, int x, int y, const uint8_t col[3], int a) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h || a <= 0) return;
    if (a > 255) a = 255;
    uint8_t *p = c->px + (size_t)y * c->pitch + (size_t)x * 4;
    for (int i = 0; i < 3; i++) p[i] = (uint8_t)((p[i] * (255 - a) + col[i] * a + 127) / 255);
}

static void hline(canvas *c, int x0, int x1, int y, const uint8_t col[3]) {
    for (int x = x0; x <= x1; x++) blend(c, x, y, col, 255);
}
static void vline(canvas *c, int x, int y0, int y1, const uint8_t col[3]) {
    for (int y = y0; y <= y1; y++) blend(c, x, y, col, 255);
}

/* Anti-aliased line (Wu): end points in 1/256 pixel, ≥ 0; each step along the major axis covers two pixels of
 * the minor axis in proportion to the fractional position. */
static void aa_line(canvas *c, int64_t x0, int64_t y0, int64_t x1, int64_t y1, const uint8_t col[3]) {
    int64_t adx = x1 > x0 ? x1 - x0 : x0 - x1, ady = y1 > y0 ? y1 - y0 : y0 - y1, t;
    int steep = ady > adx;
    if (steep) t = x0, x0 = y0, y0 = t, t = x1, x1 = y1, y1 = t;
    if (x0 > x1) t = x0, x0 = x1, x1 = t, t = y0, y0 = y1, y1 = t;
    int64_t dx = x1 - x0, dy = y1 - y0;
    for (int64_t x = (x0 + 255) / 256; x * 256 <= x1; x++) {
        int64_t y = dx ? y0 + (x * 256 - x0) * dy / dx : y0;
        int iy = (int)(y / 256), f = (int)(y % 256);
        if (steep) blend(c, iy, (int)x, col, 255 - f), blend(c, iy + 1, (int)x, col, f);
        else blend(c, (int)x, iy, col, 255 - f), blend(c, (int)x, iy + 1, col, f);
    }
}

/* ---- glyphs: 64 made-up characters of 2–4 strokes between points of a 3×3 grid, in 6×11 cells ---- */

enum { GW = 6, GH = 11, NGLYPH = 64 };
static uint8_t g_glyph[NGLYPH][GH][GW];
static int g_glyph_ready;

static void make_glyphs(void) {
    if (g_glyph_ready) return; /* the same table each time: no harm if two threads build it at once */
    static const int ax[3] = {0, 2, 4}, ay[3] = {2, 5, 8};
    for (int g = 0; g < NGLYPH; g++) {
        uint8_t m[GH][GW];
        memset(m, 0, sizeof m);
        rng r = {hash3(0x61796c70, (uint64_t)g, 11)};
        int strokes = 2 + rng_below(&r, 3);
        for (int s = 0; s < strokes; s++) {
            int a = rng_below(&r, 9), b = rng_below(&r, 8);
            if (b >= a) b++;
            int x0 = ax[a % 3], y0 = ay[a / 3], x1 = ax[b % 3], y1 = ay[b / 3];
            int n = abs(x1 - x0) > abs(y1 - y0) ? abs(x1 - x0) : abs(y1 - y0);
            for (int i = 0; i <= n; i++) m[y0 + (y1 - y0) * i / n][x0 + (x1 - x0) * i / n] = 255;
        }
        if (rng_below(&r, 8) == 0) m[0][2] = 255; /* an accent */
        for (int y = 0; y < GH; y++)                /* soft edges, like a rasterized font */
            for (int x = 0; x < GW; x++) {
                int near = (y > 0 && m[y - 1][x] == 255) + (y + 1 < GH && m[y + 1][x] == 255) +
                           (x > 0 && m[y][x - 1] == 255) + (x + 1 < GW && m[y][x + 1] == 255);
                g_glyph[g][y][x] = m[y][x] ? 255 : (uint8_t)(near ? 40 + 24 * near : 0);
            }
    }
    g_glyph_ready = 1;
}

static void glyph(canvas *c, int x, int y, int g, const uint8_t col[3]) {
    for (int gy = 0; gy < GH; gy++)
        for (int gx = 0; gx < GW; gx++) blend(c, x + gx, y + gy, col, g_glyph[g][gy][gx]);
}

/* A word of n random glyphs at (x, y); returns the x after it. */
static int word(canvas *c, rng *r, int x, int y, int n, const uint8_t col[3]) {
    for (int i = 0; i < n; i++, x += GW) glyph(c, x, y, rng_below(r, NGLYPH), col);
    return x;
}

static const uint8_t k_white[3] = {255, 255, 255}, k_ink[3] = {24, 24, 28}, k_grid[3] = {226, 226, 230},
                     k_axis[3] = {0, 0, 0}, k_frame[3] = {150, 150, 150};
static const uint8_t k_colors[4][3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}};

static void draw_text(canvas *c, uint64_t seed) {
    make_glyphs();
    fill(c, k_white);
    static const uint8_t syntax[4][3] = {{0, 0, 192}, {163, 21, 21}, {0, 128, 0}, {128, 0, 128}};
    rng r = {seed};
    for (int y = -2; y < c->h; y += GH + 1) { /* from -2: even a frame of 5 rows shows strokes */
        if (rng_below(&r, 10) == 0) continue; /* an empty line */
        int indent = rng_below(&r, 6) * 2 * GW, x = c->w > 200 ? 3 + indent : 0, end = (c->w - 3) * (30 + rng_below(&r, 71)) / 100;
        if (end < x + GW) end = x + GW;
        while (x < end) {
            int n = 1 + rng_below(&r, 9), hl = rng_below(&r, 5) == 0;
            x = word(c, &r, x, y, n, hl ? syntax[rng_below(&r, 4)] : k_ink) + GW;
        }
    }
}

static void draw_plot(canvas *c, uint64_t seed) {
    make_glyphs();
    fill(c, k_white);
    int w = c->w, h = c->h;
    int L = w * 8 / 100, R = w - 1 - w * 3 / 100, T = h * 6 / 100, B = h - 1 - h * 9 / 100;
    if (R - L < 8 || B - T < 8) L = 0, R = w - 1, T = 0, B = h - 1; /* tiny frames: the plot area only */
    rng r = {seed};
    for (int i = 1; i < 10; i++) vline(c, L + (R - L) * i / 10, T, B, k_grid);
    for (int i = 1; i < 8; i++) hline(c, L, R, T + (B - T) * i / 8, k_grid);
    /* four signals: a random walk with momentum plus jitter, a vertex every 3 pixels, drawn 1.5 px wide */
    int64_t top = (int64_t)T * 256 + 512, bot = (int64_t)B * 256 - 512;
    if (bot < top) top = (int64_t)T * 256, bot = (int64_t)B * 256;
    int64_t span = bot - top;
    for (int s = 0; s < 4; s++) {
        int64_t v = top + span * (15 + rng_below(&r, 70)) / 100, vel = 0;
        int64_t px = (int64_t)L * 256, py = v;
        for (int x = L + 3; x <= R + 2; x += 3) {
            int xx = x > R ? R : x;
            vel = vel * 7 / 8 + (int64_t)(rng_below(&r, 129) - 64) * span / 2048;
            v += vel + (int64_t)(rng_below(&r, 65) - 32) * span / 1024;
            if (v < top) v = top + (top - v), vel = -vel;
            if (v > bot) v = bot - (v - bot), vel = -vel;
            if (v < top) v = top;
            int64_t nx = (int64_t)xx * 256;
            aa_line(c, px, py, nx, v, k_colors[s]);
            aa_line(c, px, py + 128, nx, v + 128, k_colors[s]);
            px = nx, py = v;
        }
    }
    /* axes, ticks, tick labels, a title and a legend, where there is room */
    vline(c, L, T, B, k_axis);
    hline(c, L, R, B, k_axis);
    for (int i = 0; i <= 10; i++) {
        int x = L + (R - L) * i / 10;
        vline(c, x, B + 1, B + 4, k_axis);
        if (B + 6 + GH < h) word(c, &r, x - GW, B + 6, 2 + rng_below(&r, 2), k_ink);
    }
    for (int i = 0; i <= 8; i++) {
        int y = T + (B - T) * i / 8;
        hline(c, L - 4, L - 1, y, k_axis);
        if (L > 4 * GW + 6) word(c, &r, L - 6 - 4 * GW, y - GH / 2, 4, k_ink);
    }
    if (T > GH + 2) word(c, &r, w / 2 - 9 * GW, (T - GH) / 2, 18, k_ink);
    int lw = 12 * GW + 28, lx = R - lw - 10, ly = T + 10;
    if (lx > L + 10 && ly + 4 * (GH + 4) + 10 < B) {
        for (int y = ly; y < ly + 4 * (GH + 4) + 6; y++) hline(c, lx, lx + lw, y, k_white);
        hline(c, lx, lx + lw, ly, k_frame), hline(c, lx, lx + lw, ly + 4 * (GH + 4) + 6, k_frame);
        vline(c, lx, ly, ly + 4 * (GH + 4) + 6, k_frame), vline(c, lx + lw, ly, ly + 4 * (GH + 4) + 6, k_frame);
        for (int s = 0; s < 4; s++) {
            int y = ly + 4 + s * (GH + 4);
            hline(c, lx + 5, lx + 22, y + GH / 2, k_colors[s]), hline(c, lx + 5, lx + 22, y + GH / 2 + 1, k_colors[s]);
            word(c, &r, lx + 27, y, 4 + rng_below(&r, 8), k_ink);
        }
    }
}

/* Value noise: random values on a grid of cell × cell pixels, blended with a smoothstep; 0–65535. */
typedef struct vnoise {
    uint32_t cell, nx;
    uint16_t *node;
} vnoise;

static int vnoise_init(vnoise *n, uint64_t seed, int w, int h, uint32_t cell) {
    n->cell = cell;
    n->nx = (uint32_t)w / cell + 2;
    uint32_t ny = (uint32_t)h / cell + 2;
    n->node = malloc(sizeof(uint16_t) * n->nx * ny);
    if (!n->node) return -1;
    for (uint32_t j = 0; j < ny; j++)
        for (uint32_t i = 0; i < n->nx; i++) n->node[j * n->nx + i] = (uint16_t)hash3(seed, i, j);
    return 0;
}

static int64_t smooth16(int64_t t) { return t * t * (3 * 65536 - 2 * t) >> 32; } /* t in [0, 65536) */

static int64_t vnoise_at(const vnoise *n, int x, int y) {
    uint32_t i = (uint32_t)x / n->cell, j = (uint32_t)y / n->cell;
    int64_t sx = smooth16((int64_t)((uint32_t)x % n->cell) * 65536 / n->cell);
    int64_t sy = smooth16((int64_t)((uint32_t)y % n->cell) * 65536 / n->cell);
    const uint16_t *p = n->node + j * n->nx + i;
    int64_t a = p[0] + ((p[1] - (int64_t)p[0]) * sx >> 16);
    int64_t b = p[n->nx] + ((p[n->nx + 1] - (int64_t)p[n->nx]) * sx >> 16);
    return a + ((b - a) * sy >> 16);
}

/* Colour map through five anchors; t in 0–65535. */
static void colormap(const uint8_t anchors[5][3], int64_t t, uint8_t out[3]) {
    if (t < 0) t = 0;
    if (t > 65535) t = 65535;
    int64_t s = t * 4, k = s >> 16, f = s & 0xFFFF;
    if (k > 3) k = 3, f = 65536;
    for (int i = 0; i < 3; i++)
        out[i] = (uint8_t)(anchors[k][i] + ((anchors[k + 1][i] - anchors[k][i]) * f + 32768) / 65536);
}

static const uint8_t k_viridis[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
static const uint8_t k_inferno[5][3] = {{0, 0, 4}, {87, 16, 110}, {188, 55, 84}, {249, 142, 9}, {252, 255, 164}};

/* Smooth: a value-noise field over a diagonal ramp, colour-mapped, shaded by a second, wider field. */
static void draw_gradient(canvas *c, uint64_t seed) {
    int w = c->w, h = c->h, big = w > h ? w : h;
    vnoise a, b;
    if (vnoise_init(&a, seed, w, h, (uint32_t)big / 4 + 1)) return;
    if (vnoise_init(&b, seed + 1, w, h, (uint32_t)big / 3 + 1)) {
        free(a.node);
        return;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int64_t ramp = ((int64_t)x * 65535 / (w > 1 ? w - 1 : 1) + (int64_t)y * 65535 / (h > 1 ? h - 1 : 1)) / 2;
            uint8_t *p = c->px + (size_t)y * c->pitch + (size_t)x * 4;
            colormap(k_viridis, (vnoise_at(&a, x, y) * 3 + ramp) / 4, p);
            int64_t shade = 200 + vnoise_at(&b, x, y) * 55 / 65535;
            for (int i = 0; i < 3; i++) p[i] = (uint8_t)(p[i] * shade / 255);
            p[3] = 255;
        }
    free(a.node);
    free(b.node);
}

/* Imaging data: blobs of a value-noise field plus strong per-pixel noise, colour-mapped. */
static void draw_heatmap(canvas *c, uint64_t seed) {
    int w = c->w, h = c->h, big = w > h ? w : h;
    vnoise a;
    if (vnoise_init(&a, seed, w, h, (uint32_t)big / 12 + 1)) return;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int64_t n = (int64_t)(hash3(seed, (uint64_t)y, (uint64_t)x) & 0xFFFF) - 32768;
            uint8_t *p = c->px + (size_t)y * c->pitch + (size_t)x * 4;
            colormap(k_inferno, vnoise_at(&a, x, y) + n / 3, p);
            p[3] = 255;
        }
    free(a.node);
}

static void draw_noise(canvas *c, uint64_t seed) {
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            uint64_t v = hash3(seed, (uint64_t)y, (uint64_t)x);
            uint8_t *p = c->px + (size_t)y * c->pitch + (size_t)x * 4;
            p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = 255;
        }
}

void tf_draw(tf_kind kind, uint32_t w, uint32_t h, uint8_t *rgba, size_t pitch) {
    canvas c = {rgba, (int)w, (int)h, pitch};
    uint64_t seed = hash3((uint64_t)kind + 1, w, h);
    switch (kind) {
    case TF_PLOT: draw_plot(&c, seed); break;
    case TF_TEXT: draw_text(&c, seed); break;
    case TF_GRADIENT: draw_gradient(&c, seed); break;
    case TF_HEATMAP: draw_heatmap(&c, seed); break;
    default: draw_noise(&c, seed); break;
    }
}

uint8_t *tf_new(tf_kind kind, uint32_t w, uint32_t h) {
    uint8_t *px = malloc((size_t)w * h * 4);
    if (px) tf_draw(kind, w, h, px, (size_t)w * 4);
    return px;
}

/* ---- frame sets ---- */

int tf_each_generated(uint64_t max_pixels, tf_visit fn, void *user) {
    int n = 0;
    char left[256] = "";
    for (size_t s = 0; s < tf_nsizes; s++) {
        uint32_t w = tf_sizes[s][0], h = tf_sizes[s][1];
        if (max_pixels && (uint64_t)w * h > max_pixels) {
            size_t l = strlen(left);
            snprintf(left + l, sizeof left - l, " %ux%u", w, h);
            continue;
        }
        for (int k = 0; k < TF_KINDS; k++) {
            tf_frame f = {.kind = (tf_kind)k, .w = w, .h = h};
            snprintf(f.name, sizeof f.name, "%s-%ux%u", k_names[k], w, h);
            uint8_t *px = tf_new((tf_kind)k, w, h);
            if (!px) continue;
            f.px = px;
            fn(&f, user);
            free(px);
            n++;
        }
    }
    if (*left) printf("generated frames above %llu pixels left to the plain (non-sanitizer) run:%s\n",
                      (unsigned long long)max_pixels, left);
    return n;
}


/* Width × height from a PNG's IHDR without decoding it; -1 if the file is not a PNG. */
static int png_size(const char *path, uint32_t *w, uint32_t *h) {
    uint8_t b[24];
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n != sizeof b || memcmp(b, "\x89PNG\r\n\x1a\n", 8) || memcmp(b + 12, "IHDR", 4)) return -1;
    *w = (uint32_t)b[16] << 24 | (uint32_t)b[17] << 16 | (uint32_t)b[18] << 8 | b[19];
    *h = (uint32_t)b[20] << 24 | (uint32_t)b[21] << 16 | (uint32_t)b[22] << 8 | b[23];
    return 0;
}

int tf_each_corpus(const char *what, uint64_t max_pixels, tf_visit fn, void *user, int *load_errors) {
    const char *dir = getenv("RCANVAS_FRAMES_DIR");
    if (!dir || !*dir) dir = "../shared/frames";
    char *names[256];
    int nn = rc_list_png(dir, names, 256), n = 0;
    if (nn < 0) {
        printf("%s: no frame corpus at %s: generated frames only\n", what, dir);
        return -1;
    }
    char left[1024] = "";
    for (int i = 0; i < nn; i++) {
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        uint32_t w = 0, h = 0;
        if (max_pixels && !png_size(path, &w, &h) && (uint64_t)w * h > max_pixels) {
            size_t l = strlen(left);
            snprintf(left + l, sizeof left - l, " %s", names[i]);
            free(names[i]);
            continue;
        }
        uint8_t *px;
        if (rc_image_load(path, &px, &w, &h, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", what, err);
            if (load_errors) ++*load_errors;
        } else {
            tf_frame f = {.kind = TF_CORPUS, .px = px, .w = w, .h = h};
            snprintf(f.name, sizeof f.name, "%s", names[i]);
            fn(&f, user);
            free(px);
            n++;
        }
        free(names[i]);
    }
    printf("%s: frame corpus %s: %d frames\n", what, dir, n);
    if (*left) printf("%s: corpus frames above %llu pixels left to the plain (non-sanitizer) run:%s\n", what,
                      (unsigned long long)max_pixels, left);
    return n;
}

/* A rendered scene's soft gradient with a few flat-shaded shapes with soft edges (libm: not pinned by a checksum). */
uint8_t *tf_smooth_new(uint32_t w, uint32_t h) {
    uint8_t *px = malloc((size_t)w * h * 4);
    if (!px) return NULL;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            double fx = (double)x / w, fy = (double)y / h;
            double r = 40 + 150 * fx + 30 * fy, g = 60 + 90 * fy, b = 180 - 100 * fx * fy;
            double d1 = hypot(fx - 0.3, (fy - 0.4) * h / w * 1.0), s1 = 1 / (1 + exp((d1 - 0.12) * 400));
            r += s1 * (230 - r), g += s1 * (120 - g), b += s1 * (40 - b);               /* a disc */
            double s2 = 1 / (1 + exp((fabs(fx - 0.7) - 0.1) * 600)) / (1 + exp((fabs(fy - 0.6) - 0.15) * 600));
            r += s2 * (50 - r), g += s2 * (200 - g), b += s2 * (120 - b);               /* a box */
            double s3 = 1 / (1 + exp((fabs(fy - 0.2 - 0.3 * fx) - 0.01) * 800));
            r += s3 * (255 - r), g += s3 * (255 - g), b += s3 * (255 - b);             /* a thin line */
            uint8_t *q = px + ((size_t)y * w + x) * 4;
            q[0] = (uint8_t)(r + 0.5), q[1] = (uint8_t)(g + 0.5), q[2] = (uint8_t)(b + 0.5), q[3] = 255;
        }
    return px;
}

/* ---- motion sequences ---- */

static const char *const k_motion_names[TF_MOTIONS] = {"pan", "rotate", "zoom", "scroll"};

const char *tf_motion_name(tf_motion m) { return m >= 0 && m < TF_MOTIONS ? k_motion_names[m] : "?"; }

int tf_motion_parse(const char *name, tf_motion *m) {
    for (int i = 0; i < TF_MOTIONS; i++)
        if (!strcmp(name, k_motion_names[i])) {
            *m = (tf_motion)i;
            return 0;
        }
    return -1;
}

/* Periodic value noise in [-1, 1] along u (world pixels): knots every 8 px, period `period` px (a multiple of 8),
 * smoothstep between them. */
static double motion_noise(uint64_t seed, double u, int64_t period) {
    int64_t knots = period / 8;
    double k = floor(u / 8);
    double f = u / 8 - k;
    int64_t k0 = ((int64_t)k % knots + knots) % knots, k1 = (k0 + 1) % knots;
    double a = (double)(hash3(seed, (uint64_t)k0, 7) >> 11) / 4503599627370496.0 - 1;
    double b = (double)(hash3(seed, (uint64_t)k1, 7) >> 11) / 4503599627370496.0 - 1;
    double s = f * f * (3 - 2 * f);
    return a + (b - a) * s;
}

/* The pan: a dense plot of many coloured signals in stacked panels, with a grid, seen through a camera that moves
 * 40 px right and 20 px down a frame (the 40,20) and zooms in and out by ±20 % over the sequence. The world
 * repeats every 40 n × 20 n px and the zoom every n frames, so frame n is frame 0 again: the sequence loops. */
static void draw_pan(canvas *c, uint32_t i, uint32_t n) {
    static const uint8_t cols[8][3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40},
                                       {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {23, 190, 207}};
    fill(c, k_white);
    int w = c->w, h = c->h;
    const double pi = 3.14159265358979323846;
    int64_t pu = 40 * (int64_t)n, pv = 20 * (int64_t)n; /* world period */
    double ph = (double)pv / 4;                        /* four panels per period */
    double z = 1 + 0.2 * sin(2 * pi * i / n);
    double ou = 40.0 * i, ov = 20.0 * i;
    /* screen (x, y) ↔ world (ou + (x − w/2)/z, ov + (y − h/2)/z) */
#define WU(x) (ou + ((x) - w / 2.0) / z)
#define SY(v) ((((v) - ov) * z) + h / 2.0)
    /* grid: every 80 world px, and darker panel borders */
    for (double u = floor(WU(0) / 80) * 80; u <= WU(w); u += 80) {
        int x = (int)lround((u - ou) * z + w / 2.0);
        vline(c, x, 0, h - 1, k_grid);
    }
    double v0 = ov - h / 2.0 / z, v1 = ov + h / 2.0 / z;
    for (double v = floor(v0 / 80) * 80; v <= v1; v += 80) hline(c, 0, w - 1, (int)lround(SY(v)), k_grid);
    for (double v = floor(v0 / ph) * ph; v <= v1; v += ph) hline(c, 0, w - 1, (int)lround(SY(v)), k_frame);
    /* 8 signals per panel, each a sum of two periodic sines and periodic noise, 1.5 px wide */
    for (double pv0 = floor(v0 / ph) * ph; pv0 <= v1; pv0 += ph) {
        int64_t panel = ((int64_t)llround(pv0 / ph) % 4 + 4) % 4; /* the same 4 panels every period */
        for (int s = 0; s < 8; s++) {
            uint64_t seed = (uint64_t)(panel * 8 + s + 1);
            double base = pv0 + ph * (s + 1) / 9.0, amp = ph / 9.0;
            int m1 = 1 + (int)(hash3(seed, 1, 2) % 5), m2 = 7 + (int)(hash3(seed, 3, 4) % 11);
            int64_t prev_x = -1, prev_y = 0;
            for (int x = 0; x <= w + 2; x += 2) {
                double u = WU(x);
                double v = base + amp * (0.5 * sin(2 * pi * m1 * u / pu + s) + 0.25 * sin(2 * pi * m2 * u / pu) +
                                         0.6 * motion_noise(seed, u, pu));
                double y = SY(v);
                int64_t fx = (int64_t)x * 256, fy = (int64_t)llround(y * 256);
                if (prev_x >= 0 && fy >= 0 && prev_y >= 0 && fy < (int64_t)h * 256 && prev_y < (int64_t)h * 256) {
                    aa_line(c, prev_x, prev_y, fx, fy, cols[s]);
                    aa_line(c, prev_x, prev_y + 128, fx, fy + 128, cols[s]);
                }
                prev_x = fx, prev_y = fy;
            }
        }
    }
#undef WU
#undef SY
}

/* The rotation: a 3D scatter plot (three Gaussian clusters and a helix, 2400 points coloured by height through
 * viridis, shaded as spheres, far ones first) in a wireframe box, turning 360° about the vertical axis over the
 * sequence with a 20° tilt, in perspective: every pixel of the plot moves, at a different speed and direction by
 * depth, the motion of a pygfx/fastplotlib 3D view being orbited. Frame n is frame 0 again. */
typedef struct rot_pt { double x, y, depth, r; uint8_t col[3]; } rot_pt;
static int cmp_depth(const void *a, const void *b) { /* far (larger depth) first */
    double da = ((const rot_pt *)a)->depth, db = ((const rot_pt *)b)->depth;
    return da < db ? 1 : da > db ? -1 : 0;
}
static void draw_disc(canvas *c, const rot_pt *p) {
    int x0 = (int)floor(p->x - p->r - 1), x1 = (int)ceil(p->x + p->r + 1);
    int y0 = (int)floor(p->y - p->r - 1), y1 = (int)ceil(p->y + p->r + 1);
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            double dx = (x + 0.5 - p->x) / p->r, dy = (y + 0.5 - p->y) / p->r, d2 = dx * dx + dy * dy;
            double cover = (1 - sqrt(d2)) * p->r + 0.5; /* the edge's distance in pixels: anti-aliased */
            if (cover <= 0) continue;
            double nz = d2 < 1 ? sqrt(1 - d2) : 0;
            double lit = 0.35 + 0.65 * fmax(0, 0.55 * nz - 0.45 * dx - 0.45 * dy + 0.2); /* light from top left */
            uint8_t col[3];
            for (int k = 0; k < 3; k++) col[k] = (uint8_t)fmin(255, p->col[k] * lit + 60 * pow(fmax(0, nz - 0.6), 3));
            blend(c, x, y, col, (int)(fmin(cover, 1) * 255));
        }
}
static void draw_rotate(canvas *c, uint32_t i, uint32_t n) {
    enum { NPTS = 2400 };
    const double pi = 3.14159265358979323846;
    rot_pt *pts = malloc(NPTS * sizeof *pts);
    fill(c, k_white);
    if (!pts) return; /* out of memory: the white frame */
    int w = c->w, h = c->h;
    double th = 2 * pi * i / n, tilt = 20 * pi / 180;
    double ct = cos(th), st = sin(th), cx = cos(tilt), sx = sin(tilt);
    double f = 1.15 * h, dist = 4.2; /* focal length (px) and the camera's distance (box half-size 1) */
#define PROJ(X, Y, Z, OX, OY, OD) do { \
        double rx_ = ct * (X) + st * (Z), rz_ = -st * (X) + ct * (Z); \
        double ry_ = cx * (Y) - sx * rz_, rd_ = sx * (Y) + cx * rz_ + dist; \
        OX = w / 2.0 + f * rx_ / rd_, OY = h / 2.0 - f * ry_ / rd_, OD = rd_; \
    } while (0)
    /* the box's 12 edges */
    static const int e[12][2] = {{0, 1}, {1, 3}, {3, 2}, {2, 0}, {4, 5}, {5, 7}, {7, 6}, {6, 4},
                                 {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    for (int k = 0; k < 12; k++) {
        double ax, ay, ad, bx, by, bd;
        int a = e[k][0], b = e[k][1];
        PROJ(a & 1 ? 1.0 : -1.0, a & 2 ? 1.0 : -1.0, a & 4 ? 1.0 : -1.0, ax, ay, ad);
        PROJ(b & 1 ? 1.0 : -1.0, b & 2 ? 1.0 : -1.0, b & 4 ? 1.0 : -1.0, bx, by, bd);
        (void)ad, (void)bd;
        if (ax >= 0 && ay >= 0 && bx >= 0 && by >= 0)
            aa_line(c, llround(ax * 256), llround(ay * 256), llround(bx * 256), llround(by * 256), k_frame);
    }
    /* the points: a fixed cloud (the same every frame), turned */
    for (int k = 0; k < NPTS; k++) {
        double X, Y, Z;
        uint64_t hs = hash3(0x5CA77E5, (uint64_t)k, 1);
        double u1 = ((hs >> 11) + 1) / 9007199254740993.0, u2 = (double)(hash3(hs, 2, 3) >> 11) / 9007199254740992.0;
        double u3 = ((hash3(hs, 4, 5) >> 11) + 1) / 9007199254740993.0, u4 = (double)(hash3(hs, 6, 7) >> 11) / 9007199254740992.0;
        double g1 = sqrt(-2 * log(u1)) * cos(2 * pi * u2), g2 = sqrt(-2 * log(u1)) * sin(2 * pi * u2);
        double g3 = sqrt(-2 * log(u3)) * cos(2 * pi * u4);
        int kind = k % 4;
        if (kind == 3) { /* the helix */
            double t = (double)k / NPTS * 6 * pi;
            X = 0.75 * cos(t), Z = 0.75 * sin(t), Y = -0.9 + 1.8 * (double)k / NPTS;
        } else {
            static const double ctr[3][3] = {{-0.45, -0.35, 0.3}, {0.4, 0.3, -0.35}, {0.1, 0.5, 0.5}};
            X = ctr[kind][0] + 0.18 * g1, Y = ctr[kind][1] + 0.18 * g2, Z = ctr[kind][2] + 0.18 * g3;
        }
        rot_pt *p = &pts[k];
        PROJ(X, Y, Z, p->x, p->y, p->depth);
        p->r = 0.015 * f / p->depth;
        colormap(k_viridis, (int64_t)fmin(65535, fmax(0, (Y + 1) / 2 * 65535)), p->col);
    }
#undef PROJ
    qsort(pts, NPTS, sizeof pts[0], cmp_depth);
    for (int k = 0; k < NPTS; k++) draw_disc(c, &pts[k]);
    free(pts);
}

/* The zoom: microscopy-like imaging data (the heatmap kind: blobs of value noise under strong per-pixel grain,
 * inferno) zoomed into and out of, 1× to 2× and back over the loop (a cosine, so frame n is frame 0 again), about
 * a point off the centre, sampled bilinearly from the image at frame size; and a camera's sensor noise of its own
 * in every frame (±6 levels, new each frame): noise-like content in which nearly every pixel changes every frame. */
/* Where screen position pos samples the image when zoomed z× about centre, along an axis of n pixels: the two
 * source pixels *p0, *p1 (clamped to the image) and the weight of *p1. */
static double zoom_tap(double centre, int pos, double z, int n, int *p0, int *p1) {
    double v = centre + (pos - centre) / z;
    int a = (int)floor(v);
    double f = v - a;
    if (a < 0) a = 0, f = 0;
    if (a >= n - 1) a = n - 2 < 0 ? 0 : n - 2, f = n > 1 ? 1 : 0;
    *p0 = a;
    *p1 = n > 1 ? a + 1 : a;
    return f;
}

static void draw_zoom(canvas *c, uint32_t i, uint32_t n) {
    int w = c->w, h = c->h;
    uint8_t *src = malloc((size_t)w * h * 4);
    if (!src) return;
    canvas s = {src, w, h, (size_t)w * 4};
    draw_heatmap(&s, 0x7a6f6f6d);
    const double pi = 3.14159265358979323846;
    double z = 1.5 - 0.5 * cos(2 * pi * i / n);
    double cx = w * 0.42, cy = h * 0.55; /* the point zoomed into: it stays where it is */
    for (int y = 0; y < h; y++) {
        int y0, y1;
        double fy = zoom_tap(cy, y, z, h, &y0, &y1);
        uint8_t *out = c->px + (size_t)y * c->pitch;
        for (int x = 0; x < w; x++) {
            int x0, x1;
            double fx = zoom_tap(cx, x, z, w, &x0, &x1);
            const uint8_t *a = src + ((size_t)y0 * w + x0) * 4, *b = src + ((size_t)y0 * w + x1) * 4;
            const uint8_t *cc = src + ((size_t)y1 * w + x0) * 4, *d = src + ((size_t)y1 * w + x1) * 4;
            int grain = (int)(hash3(i % n, (uint64_t)y, (uint64_t)x) % 13) - 6;
            for (int k = 0; k < 3; k++) {
                double t = (a[k] * (1 - fx) + b[k] * fx) * (1 - fy) + (cc[k] * (1 - fx) + d[k] * fx) * fy;
                int q = (int)lround(t) + grain;
                out[x * 4 + k] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
            }
            out[x * 4 + 3] = 255;
        }
    }
    free(src);
}

/* The scroll: a terminal (light grey text, some of it coloured, on near-black) scrolling up three lines a frame,
 * as `cat` of a log or a fast scroll would: frame i shows lines 3i... of a text of 3n lines that repeats, so frame
 * n is frame 0 again. Each line's words come from its own line number: consecutive frames are the same picture
 * moved up by 3 lines (36 px), exactly. */
static void draw_scroll(canvas *c, uint32_t i, uint32_t n) {
    static const uint8_t bg[3] = {18, 18, 22}, fg[3] = {204, 204, 204};
    static const uint8_t hl[4][3] = {{106, 200, 106}, {230, 200, 90}, {110, 160, 240}, {235, 100, 100}};
    make_glyphs();
    fill(c, bg);
    const int lh = GH + 1, lines = 3 * (int)n;
    for (int row = 0; row * lh < c->h; row++) {
        int line = (int)((3 * (uint64_t)i + (uint64_t)row) % (uint64_t)lines);
        rng r = {hash3(0x7363726f6c6c, (uint64_t)line, 5)};
        if (rng_below(&r, 12) == 0) continue; /* an empty line */
        int y = 2 + row * lh, x = 4, end = (c->w - 4) * (20 + rng_below(&r, 81)) / 100;
        x = word(c, &r, x, y, 8, hl[2]) + GW; /* a time stamp */
        while (x < end) {
            int nch = 1 + rng_below(&r, 10), coloured = rng_below(&r, 7) == 0;
            x = word(c, &r, x, y, nch, coloured ? hl[rng_below(&r, 4)] : fg) + GW;
        }
    }
}

void tf_motion_draw(tf_motion m, uint32_t i, uint32_t n, uint32_t w, uint32_t h, uint8_t *rgba, size_t pitch) {
    if (!rgba || w < 1 || h < 1 || n < 1 || pitch < (size_t)w * 4) return;
    canvas c = {rgba, (int)w, (int)h, pitch};
    switch (m) {
    case TF_MOTION_PAN: draw_pan(&c, i % n, n); break;
    case TF_MOTION_ROTATE: draw_rotate(&c, i % n, n); break;
    case TF_MOTION_ZOOM: draw_zoom(&c, i % n, n); break;
    case TF_MOTION_SCROLL: draw_scroll(&c, i % n, n); break;
    default: fill(&c, k_white); break;
    }
}
