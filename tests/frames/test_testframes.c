/* SPDX-License-Identifier: MIT */
/*
 * test_testframes — the generated test frames (tests/testframes.c) are what the other tests rely on when there
 * is no ../shared/frames:
 *  - deterministic: every frame of every kind and size has the checksum pinned below (the same on every run
 *    and machine; a change to the generator must update them on purpose);
 *  - opaque, drawn the same at any row pitch;
 *  - each kind has the property the tests use it for: noise is incompressible (every byte value about
 *    equally often), gradient is smooth (neighbours differ little), text and plot are mostly white with ink.
 * TF_PRINT=1 prints the checksum table instead of checking it.
 */
#include <string.h>

#include "test.h"
#include "testframes.h"

/* FNV-1a 64 over the RGBA bytes. */
static uint64_t fnv(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static const uint64_t k_sums[][TF_KINDS] = {
    /* plot, text, gradient, heatmap, noise; rows in the order of tf_sizes */
    {0x4d25077f9dcd5758ull, 0x994f76653e2a3951ull, 0xc2f35b986dc201efull, 0xf9de22be9974c6d7ull, 0x8b5654f40b808378ull},
    {0xb02346ba9cfc2979ull, 0x7700cfb8437db769ull, 0x02a9e2376345c654ull, 0x7df5e0a6bfde53bdull, 0xb5ee23a2a3af1c2eull},
    {0xa3bfc0a3515affc3ull, 0xe0306d1b844307fcull, 0xbd52638954456463ull, 0x3f05a10f76e03253ull, 0x96ca457c104823f4ull},
    {0x4b7208ea3567ad70ull, 0x1ee54ec6b868b5aeull, 0x33c018752bec20aeull, 0xcc7040187e5b6e6eull, 0x6be99732969710a3ull},
    {0x9d6701319bf8fe8full, 0x6cfb1edf687cd29bull, 0x0aed3d1108eb479cull, 0x9d06f40d07460f19ull, 0x60b211eae16fb5d9ull},
    {0x983e9dececceeb65ull, 0x57e3bbc3da39d5e9ull, 0x7553cb7e70af3b30ull, 0x4a2cf27b38f12c8cull, 0x60d3c3770c911292ull},
};

static void test_checksums(void) {
    int print = getenv("TF_PRINT") != NULL;
#ifdef RCANVAS_SANITIZE
    const uint64_t max_px = 1920 * 1080; /* the 4K frames cost ASan seconds; the plain run checks them */
#else
    const uint64_t max_px = 0;
#endif
    CHECK_EQ_INT(sizeof k_sums / sizeof k_sums[0], tf_nsizes);
    for (size_t s = 0; s < tf_nsizes; s++) {
        uint32_t w = tf_sizes[s][0], h = tf_sizes[s][1];
        if (print) printf("    {");
        for (int k = 0; k < TF_KINDS; k++) {
            if (!print && max_px && (uint64_t)w * h > max_px) continue;
            uint8_t *px = tf_new((tf_kind)k, w, h);
            if (!px) continue;
            uint64_t sum = fnv(px, (size_t)w * h * 4);
            if (print) printf("0x%016llxull%s", (unsigned long long)sum, k + 1 < TF_KINDS ? ", " : "},\n");
            else
                CHECK_MSG(sum == k_sums[s][k], "%s-%ux%u: checksum %016llx, pinned %016llx", tf_kind_name((tf_kind)k),
                          w, h, (unsigned long long)sum, (unsigned long long)k_sums[s][k]);
            free(px);
        }
    }
}

/* Opaque, and the same pixels at a padded pitch. */
static void test_pitch_alpha(void) {
    const uint32_t w = 333, h = 197;
    const size_t pitch = w * 4 + 20;
    for (int k = 0; k < TF_KINDS; k++) {
        uint8_t *tight = tf_new((tf_kind)k, w, h), *padded = malloc(pitch * h);
        if (!tight || !padded) return;
        tf_draw((tf_kind)k, w, h, padded, pitch);
        int same = 1, opaque = 1;
        for (uint32_t y = 0; y < h; y++) {
            same &= !memcmp(tight + (size_t)y * w * 4, padded + y * pitch, (size_t)w * 4);
            for (uint32_t x = 0; x < w; x++) opaque &= tight[((size_t)y * w + x) * 4 + 3] == 255;
        }
        CHECK_MSG(same, "%s: differs at a padded pitch", tf_kind_name((tf_kind)k));
        CHECK_MSG(opaque, "%s: not opaque", tf_kind_name((tf_kind)k));
        free(tight);
        free(padded);
    }
}

static void test_properties(void) {
    const uint32_t w = 1001, h = 777;
    const size_t n = (size_t)w * h;
    for (int k = 0; k < TF_KINDS; k++) {
        uint8_t *px = tf_new((tf_kind)k, w, h);
        if (!px) return;
        size_t white = 0, hist[256] = {0};
        int maxstep = 0;
        for (size_t i = 0; i < n; i++) {
            const uint8_t *p = px + i * 4;
            white += p[0] == 255 && p[1] == 255 && p[2] == 255;
            for (int c = 0; c < 3; c++) {
                hist[p[c]]++;
                if (i % w + 1 < w) {
                    int d = abs(p[c] - p[c + 4]);
                    if (d > maxstep) maxstep = d;
                }
            }
        }
        size_t lo = n, hi = 0;
        for (int v = 0; v < 256; v++) lo = hist[v] < lo ? hist[v] : lo, hi = hist[v] > hi ? hist[v] : hi;
        double fwhite = (double)white / n;
        const char *name = tf_kind_name((tf_kind)k);
        printf("%-8s %ux%u: %.1f %% white, largest step between neighbours %d, byte histogram %zu..%zu\n", name, w, h,
               100 * fwhite, maxstep, lo, hi);
        if (k == TF_NOISE) CHECK_MSG(lo > n * 3 / 256 * 9 / 10 && hi < n * 3 / 256 * 11 / 10, "noise: histogram");
        if (k == TF_GRADIENT) CHECK_MSG(maxstep <= 4 && fwhite == 0, "gradient: not smooth (step %d)", maxstep);
        if (k == TF_HEATMAP) CHECK_MSG(maxstep > 64 && fwhite < 0.01, "heatmap: too smooth");
        if (k == TF_TEXT) CHECK_MSG(fwhite > 0.6 && fwhite < 0.95, "text: %.2f white", fwhite);
        if (k == TF_PLOT) CHECK_MSG(fwhite > 0.7 && fwhite < 0.97, "plot: %.2f white", fwhite);
        free(px);
    }
}

/* The motion loops: frame n is frame 0 again (the demo plays them in a loop without a jump), consecutive frames
 * differ almost everywhere the content is, and the content covers a good part of the frame. */
static void test_motions(void) {
    enum { MW = 320, MH = 180, N = 16 };
    uint8_t *a = malloc((size_t)MW * MH * 4), *b = malloc((size_t)MW * MH * 4);
    if (!a || !b) { CHECK(0); free(a); free(b); return; }
    for (int m = 0; m < TF_MOTIONS; m++) {
        tf_motion parsed;
        CHECK(tf_motion_parse(tf_motion_name((tf_motion)m), &parsed) == 0 && parsed == (tf_motion)m);
        tf_motion_draw((tf_motion)m, 0, N, MW, MH, a, (size_t)MW * 4);
        tf_motion_draw((tf_motion)m, N, N, MW, MH, b, (size_t)MW * 4);
        CHECK_MSG(!memcmp(a, b, (size_t)MW * MH * 4), "%s: frame %d is not frame 0", tf_motion_name((tf_motion)m), N);
        tf_motion_draw((tf_motion)m, 1, N, MW, MH, b, (size_t)MW * 4);
        size_t ink = 0, moved = 0;
        for (size_t i = 0; i < (size_t)MW * MH; i++) {
            const uint8_t *p = a + i * 4, *q = b + i * 4;
            if (p[0] < 250 || p[1] < 250 || p[2] < 250) ink++;
            if (memcmp(p, q, 3)) moved++;
            CHECK(p[3] == 255);
        }
        printf("motion %s: %.1f %% of the frame drawn, %.1f %% changed from frame 0 to 1\n",
               tf_motion_name((tf_motion)m), 100.0 * ink / (MW * MH), 100.0 * moved / (MW * MH));
        CHECK_MSG(ink > (size_t)MW * MH / 20, "%s: %zu pixels drawn", tf_motion_name((tf_motion)m), ink);
        if (m == TF_MOTION_SCROLL) {
            /* frame 1 is frame 0 moved up by 3 text lines (36 px), exactly; the text changes a tenth of it */
            CHECK_MSG(!memcmp(b, a + (size_t)36 * MW * 4, (size_t)(MH - 36) * MW * 4), "scroll: not a 36 px shift");
            CHECK_MSG(moved > (size_t)MW * MH / 10, "scroll: %zu pixels changed", moved);
        } else if (m == TF_MOTION_ZOOM) {
            CHECK_MSG(moved > (size_t)MW * MH * 9 / 10, "zoom: %zu pixels changed", moved); /* noise-like */
        } else {
            CHECK_MSG(moved > ink / 2, "%s: %zu of %zu drawn pixels changed", tf_motion_name((tf_motion)m), moved, ink);
        }
    }
    tf_motion none;
    CHECK(tf_motion_parse("spin", &none) == -1);
    free(a);
    free(b);
}

int main(void) {
    test_checksums();
    if (getenv("TF_PRINT")) return 0;
    test_pitch_alpha();
    test_properties();
    test_motions();
    TEST_MAIN_END();
}
