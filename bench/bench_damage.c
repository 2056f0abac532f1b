/* SPDX-License-Identifier: MIT */
/*
 * bench-damage — what damage tracking saves and what it costs:
 *  (a) bytes per frame of a still plot with a small moving marker (the plot of tests/testframes.h, a 12 × 12
 *      marker moving 5 px right and 2 px down per frame), through a real canvas and a viewer acking every frame
 *      as the server runs it: the partial packets (only the marker's tiles) against the same frames encoded
 *      whole (stripes on the pool, as before damage); encode ms of both; then the lossless refinement once the
 *      marker stops, partial (tiles changed since the viewer's last lossless frame) against whole;
 *  (b) the cost of the tile diff (rc_damage_diff, one thread) at 1920×1080 and 3840×2160: identical frames (the
 *      worst case: every byte compared), one tile changed, every tile changed (each stops at its first row), next
 *      to a memcpy of the frame (what rcanvas_present does anyway).
 * The plot is generated (tests/testframes.h), or a PNG of the corpus with --background FILE (its size then).
 *   bench-damage [--frames N] [--quality Q] [--threads T] [--runs N] [--width W --height H] [--background FILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "imageio.h"
#include "codec/frame_encode.h"
#include "core/util.h"
#include "stream/canvas.h"
#include "stream/damage.h"
#include "stream/session.h"
#include "testframes.h"
#include "bench_util.h"

#define PROG "bench-damage"
static const char USAGE[] =
    "usage: bench-damage [options]\n"
    "  --frames N           marker frames, 1-10000 (default 120)\n"
    "  --quality Q          JPEG quality 1-100 (default 85)\n"
    "  --threads T          encoder threads, 0-256 (default 0: all cores)\n"
    "  --runs N             timed runs of each diff case, 1-100000 (default 51)\n"
    "  --width W --height H frame size of part (a), 64-8192 (default 1920 x 1080)\n"
    "  --background FILE    a PNG under the marker instead of the generated plot (e.g. lines-1920x1080.png)\n"
    "  --help               print this and exit\n";


#define MARK 12
static void draw_frame(uint8_t *px, const uint8_t *plot, uint32_t w, uint32_t h, int step) {
    memcpy(px, plot, (size_t)w * h * 4);
    if (step < 0) return;
    uint32_t x0 = (uint32_t)(40 + 5 * step) % (w - MARK), y0 = (uint32_t)(30 + 2 * step) % (h - MARK);
    for (uint32_t y = y0; y < y0 + MARK; y++)
        for (uint32_t x = x0; x < x0 + MARK; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            p[0] = 230, p[1] = 30, p[2] = 40, p[3] = 255;
        }
}

static void no_notify(void *u) { (void)u; }

/* The packet the transport would send s now (waits for the encode), or NULL. */
static rc_packet *next_packet(rcanvas_canvas *c, rc_session *s, uint32_t seq, int tick) {
    for (int i = 0; i < 20000; i++) {
        rc_packet *pk = NULL;
        if (rc_session_next(s, rc_now_us(), &pk, NULL)) {
            if (pk->seq >= seq) return pk;
            rc_session_ack(s, pk->seq, 0, rc_now_us());
            rc_packet_unref(pk);
            continue;
        }
        if (tick) rc_canvas_tick(c, rc_now_us() + 7200LL * 1000000);
        usleep(200);
    }
    return NULL;
}

static int part_a(rc_pool *pool, uint8_t *plot, uint32_t w, uint32_t h, int frames, int quality) {
    uint8_t *px = malloc((size_t)w * h * 4);
    double *ms_whole = malloc(sizeof(double) * (size_t)frames), *ms_part = malloc(sizeof(double) * (size_t)frames);
    double *b_whole = malloc(sizeof(double) * (size_t)frames), *b_part = malloc(sizeof(double) * (size_t)frames);
    rc_packet_pool *pp = rc_packet_pool_new();
    if (!plot || !px || !ms_whole || !ms_part || !b_whole || !b_part || !pp) return 1;
    const rc_logger log = {0};
    rc_canvas_env env = {.pool = pool, .log = &log, .max_frame_dim = 8192, .notify = no_notify};
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.codec = RCANVAS_CODEC_JPEG;
    cc.quality = quality;
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    cc.refine_ms = 3600 * 1000; /* refinement only when this program ticks ahead */
    rcanvas_canvas *c = NULL;
    rc_session *s = NULL;
    if (rc_canvas_create(&env, &cc, &c) || rc_session_open(c, NULL, &s)) return 1;
    rcanvas_frame f = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, 0};
    draw_frame(px, plot, w, h, -1);
    rcanvas_present(c, &f);
    rc_packet *pk = next_packet(c, s, 1, 0);
    if (!pk) return 1;
    size_t first = pk->total_bytes;
    rc_session_ack(s, pk->seq, 0, rc_now_us());
    rc_packet_unref(pk);
    /* still for a moment: the whole refinement (nothing was lossless), as a viewer gets it before the marker */
    pk = next_packet(c, s, 1, 1);
    if (!pk || !(pk->flags & RC_PACKET_REFINE)) return 1;
    size_t refine_whole = pk->total_bytes;
    rc_session_ack(s, pk->seq, 0, rc_now_us());
    rc_packet_unref(pk);
    double tiles = 0;
    for (int i = 0; i < frames; i++) {
        draw_frame(px, plot, w, h, i);
        /* whole: the frame in stripes on the pool, as every frame was sent before damage */
        rc_packet *wp = rc_packet_get(pp);
        rc_encode_task task = {.img = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8},
                               .params = {.codec = RCANVAS_CODEC_JPEG, .quality = quality,
                                          .subsampling = RCANVAS_SUBSAMP_420},
                               .seq = 1, .packet = wp};
        int64_t t0 = rc_now_us();
        if (rc_encode_sync(pool, &task)) return 1;
        ms_whole[i] = (double)(rc_now_us() - t0) / 1000.0;
        b_whole[i] = (double)wp->total_bytes;
        rc_packet_unref(wp);
        /* damage: through the canvas (copy, diff, rectangles, encode) until the viewer has the packet */
        t0 = rc_now_us();
        rcanvas_present(c, &f);
        pk = next_packet(c, s, (uint32_t)i + 2, 0);
        ms_part[i] = (double)(rc_now_us() - t0) / 1000.0;
        if (!pk) return 1;
        b_part[i] = (double)pk->total_bytes;
        tiles += pk->ntiles;
        rc_session_ack(s, pk->seq, 0, rc_now_us());
        rc_packet_unref(pk);
    }
    double sum_w = 0, sum_p = 0;
    for (int i = 0; i < frames; i++) sum_w += b_whole[i], sum_p += b_part[i];
    printf("\n(a) %ux%u still picture + %dx%d marker, %d frames, JPEG q%d 4:2:0, %d encoder threads\n\n", w, h, MARK,
           MARK, frames, quality, rc_pool_threads(pool));
    printf("| | bytes/frame (mean) | bytes/frame (median) | tiles/frame | ms/frame (median) |\n|---|---|---|---|---|\n");
    printf("| whole frames (stripes) | %.0f | %.0f | %d | %.2f (encode) |\n", sum_w / frames,
           bench_median(b_whole, frames), rc_encode_plan_stripes(w, h, rc_pool_threads(pool)),
           bench_median(ms_whole, frames));
    printf("| damage (marker tiles) | %.0f | %.0f | %.2f | %.2f (present → packet) |\n", sum_p / frames,
           bench_median(b_part, frames), tiles / frames, bench_median(ms_part, frames));
    printf("| ratio | %.2f %% | | | |\n", 100.0 * sum_p / sum_w);
    printf("(first frame, whole through the canvas: %zu bytes)\n", first);

    /* the refinement once the marker stops: partial (the viewer was lossless at the frame before the marker) */
    pk = next_packet(c, s, (uint32_t)frames + 1, 1);
    if (!pk) return 1;
    size_t refine_bytes = pk->total_bytes;
    int refine_tiles = pk->ntiles, refine_partial = pk->base_seq != 0;
    rc_session_ack(s, pk->seq, 0, rc_now_us());
    rc_packet_unref(pk);
    printf("lossless refinement (PNG): before the marker (whole) %zu bytes; after the %d marker frames %zu bytes "
           "in %d tiles (%s)\n",
           refine_whole, frames, refine_bytes, refine_tiles, refine_partial ? "partial" : "whole");
    rc_session_close(s);
    rc_canvas_close(c);
    rc_canvas_destroy(c);
    rc_packet_pool_free(pp);
    free(plot), free(px), free(ms_whole), free(ms_part), free(b_whole), free(b_part);
    return 0;
}

static int part_b(int runs) {
    static const uint32_t sizes[][2] = {{1920, 1080}, {3840, 2160}};
    printf("\n(b) tile diff (rc_damage_diff, 64x64 tiles, one thread), median of %d runs, ms\n\n", runs);
    printf("| size | identical (all compared) | one tile changed | every tile changed | memcpy of the frame |\n");
    printf("|---|---|---|---|---|\n");
    double *t = malloc(sizeof(double) * (size_t)runs);
    if (!t) return 1;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint32_t w = sizes[k][0], h = sizes[k][1];
        size_t n = (size_t)w * h * 4;
        uint8_t *a = tf_new(TF_PLOT, w, h), *b = malloc(n), *cpy = malloc(n);
        uint8_t *bits = malloc((size_t)rc_damage_tiles(w) * rc_damage_tiles(h));
        if (!a || !b || !cpy || !bits) return 1;
        rc_image ia = {a, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL}, ib = {b, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
        double res[4];
        for (int kase = 0; kase < 4; kase++) {
            memcpy(b, a, n);
            if (kase == 1) b[((size_t)(h / 2) * w + w / 2) * 4] ^= 1;
            if (kase == 2)
                for (uint32_t y = 0; y < h; y += RC_DAMAGE_TILE)
                    for (uint32_t x = 0; x < w; x += RC_DAMAGE_TILE) b[((size_t)y * w + x) * 4] ^= 1;
            for (int r = 0; r < runs + 2; r++) {
                int64_t t0 = rc_now_us();
                if (kase == 3) memcpy(cpy, b, n);
                else if (rc_damage_diff(&ib, &ia, bits) < 0) return 1;
                if (r >= 2) t[r - 2] = (double)(rc_now_us() - t0) / 1000.0;
            }
            res[kase] = bench_median(t, runs);
        }
        printf("| %ux%u | %.2f | %.2f | %.2f | %.2f |\n", w, h, res[0], res[1], res[2], res[3]);
        free(a), free(b), free(cpy), free(bits);
    }
    free(t);
    return 0;
}

int main(int argc, char **argv) {
    int frames = 120, quality = 85, threads = 0, runs = 51, w = 1920, h = 1080;
    const char *background = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--frames")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 10000, &frames)) return CLI_USAGE;
        } else if (!strcmp(a, "--quality")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 100, &quality)) return CLI_USAGE;
        } else if (!strcmp(a, "--threads")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 0, 256, &threads)) return CLI_USAGE;
        } else if (!strcmp(a, "--runs")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 100000, &runs)) return CLI_USAGE;
        } else if (!strcmp(a, "--width")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 64, 8192, &w)) return CLI_USAGE;
        } else if (!strcmp(a, "--height")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 64, 8192, &h)) return CLI_USAGE;
        } else if (!strcmp(a, "--background")) {
            if (!(background = cli_value(argc, argv, &i))) return cli_missing(PROG, a, "a PNG file");
        } else {
            int r = cli_rest(PROG, USAGE, a, NULL, NULL);
            if (r >= 0) return r;
        }
    }
    uint8_t *plot = NULL;
    if (background) {
        char err[256];
        uint32_t bw, bh;
        if (rc_image_load(background, &plot, &bw, &bh, err, sizeof err)) {
            fprintf(stderr, PROG ": --background %s: %s\n", background, err);
            return 1;
        }
        w = (int)bw, h = (int)bh;
        printf("background: %s\n", background);
    } else {
        plot = tf_new(TF_PLOT, (uint32_t)w, (uint32_t)h);
        printf("background: the generated plot (tests/testframes.h)\n");
    }
    if (!plot || w <= 2 * MARK || h <= 2 * MARK) return 1;
    if (!threads) threads = rc_cpu_count();
    rc_pool *pool;
    if (rc_pool_new(threads, &pool)) return 1;
    int r = part_a(pool, plot, (uint32_t)w, (uint32_t)h, frames, quality);
    if (!r) r = part_b(runs);
    rc_pool_free(pool);
    if (r) fprintf(stderr, PROG ": failed\n");
    return r;
}
