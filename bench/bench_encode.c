/* SPDX-License-Identifier: MIT */
/*
 * bench-encode — encoder figures over the frame corpus: per frame and codec, median ms over N runs of
 *   (a) one single-threaded libturbojpeg call (tjCompress2, same flags as ours) — the reference, and
 *   (b) rcanvas's stripe-parallel encode on the worker pool (all cores), as the server runs it,
 * plus bytes per frame, PSNR of the decoded result, and the ratio (b)/(a). PNG (the lossless refinement) too.
 *   bench-encode [--runs N] [--threads T] [--quality Q] [DIR]    (DIR defaults to $RCANVAS_FRAMES_DIR)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "core/util.h"
#include "codec/frame_encode.h"
#include "cli.h"
#include "imageio.h"
#include "bench_util.h"


/* Decodes every tile of pk into one RGBA image and returns its PSNR against src. */
static double packet_psnr(const rc_packet *pk, const uint8_t *src, uint32_t w, uint32_t h) {
    uint8_t *full = malloc((size_t)w * h * 4);
    if (!full) return -1;
    for (int i = 0; i < pk->ntiles; i++) {
        const rc_tile *hd = &pk->tiles[i];
        uint8_t *px;
        uint32_t tw, th;
        int r = pk->codec->wire_id == RCANVAS_CODEC_JPEG ? rc_decode_jpeg(rc_buf_data(&pk->tiles[i].data), pk->tiles[i].data.len, &px, &tw, &th)
                                                : rc_decode_png(rc_buf_data(&pk->tiles[i].data), pk->tiles[i].data.len, &px, &tw, &th);
        if (r || tw != hd->w || th != hd->h) goto fail;
        for (uint32_t y = 0; y < th; y++) memcpy(full + ((size_t)(hd->y + y) * w + hd->x) * 4, px + (size_t)y * tw * 4, (size_t)tw * 4);
        free(px);
    }
    double p = rc_psnr_rgb(full, (size_t)w * 4, src, (size_t)w * 4, w, h);
    free(full);
    return p;
fail:
    free(full);
    return -1;
}

#define PROG "bench-encode"
static const char USAGE[] =
    "usage: bench-encode [options] [DIR]\n"
    "  DIR                  directory of PNG frames (default: $RCANVAS_FRAMES_DIR)\n"
    "  --runs N             timed runs per frame and codec, 1-100000 (default 21)\n"
    "  --threads T          encoder threads, 0-256 (default 0: all cores)\n"
    "  --quality Q          JPEG quality 1-100 (default 85)\n"
    "  --help               print this and exit\n";

int main(int argc, char **argv) {
    int runs = 21, threads = 0, quality = 85;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--runs")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 100000, &runs)) return CLI_USAGE;
        } else if (!strcmp(a, "--threads")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 0, 256, &threads)) return CLI_USAGE;
        } else if (!strcmp(a, "--quality")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 1, 100, &quality)) return CLI_USAGE;
        } else {
            int r = cli_rest(PROG, USAGE, a, &dir, "DIR");
            if (r >= 0) return r;
        }
    }
    if (!dir) dir = getenv("RCANVAS_FRAMES_DIR");
    if (!dir || !*dir) return cli_error(PROG, "missing DIR: the directory of PNG frames (or set RCANVAS_FRAMES_DIR)");
    if (!threads) threads = rc_cpu_count();
    char *names[64];
    int nn = rc_list_png(dir, names, 64);
    if (nn < 0) {
        fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
        return 1;
    }

    rc_pool *pool;
    if (rc_pool_new(threads, &pool)) return 1;
    rc_packet_pool *pp = rc_packet_pool_new();
    tjhandle tj = tjInitCompress();
    double *t = malloc(sizeof(double) * (size_t)runs);
    if (!pp || !tj || !t) return 1;
    printf("| frame | codec | 1-thread libturbojpeg ms | rcanvas ms (%d threads, stripes) | ratio | bytes (rcanvas) | bytes (1 call) | PSNR dB |\n", threads);
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int f = 0; f < nn; f++) {
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, names[f]);
        uint8_t *px;
        uint32_t w, h;
        if (rc_image_load(path, &px, &w, &h, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            continue;
        }
        rc_image img = {.pixels = px, .width = w, .height = h, .pitch = (size_t)w * 4, .format = RCANVAS_FORMAT_RGBA8};
        for (int codec = RCANVAS_CODEC_JPEG; codec <= RCANVAS_CODEC_PNG; codec++) {
            rc_encode_params p = {.codec = codec, .quality = quality, .subsampling = RCANVAS_SUBSAMP_420};
            /* The reference call and ours alternate run by run, so both see the same machine: on a shared VM a
             * core can vanish for a while, which would otherwise bias whichever ran during that spell. */
            double ref_ms = 0;
            unsigned long ref_bytes = 0, cap = tjBufSize((int)w, (int)h, TJSAMP_420);
            unsigned char *out = malloc(cap);
            double *tr = malloc(sizeof(double) * (size_t)runs);
            if (!out || !tr) return 1;
            rc_packet *pk = NULL;
            for (int r = 0; r < runs + 2; r++) { /* 2 warm-up runs */
                if (codec == RCANVAS_CODEC_JPEG) {
                    unsigned long sz = cap;
                    int64_t t0 = rc_now_us();
                    if (tjCompress2(tj, px, (int)w, (int)w * 4, (int)h, TJPF_RGBA, &out, &sz, TJSAMP_420, quality,
                                    TJFLAG_NOREALLOC | TJFLAG_FASTDCT)) {
                        fprintf(stderr, "tjCompress2: %s\n", tjGetErrorStr2(tj));
                        return 1;
                    }
                    if (r >= 2) tr[r - 2] = (double)(rc_now_us() - t0) / 1000.0;
                    ref_bytes = sz;
                }
                rc_packet_unref(pk);
                pk = rc_packet_get(pp);
                rc_encode_task task = {.img = img, .params = p, .seq = 1, .packet = pk};
                int64_t t0 = rc_now_us();
                if (rc_encode_sync(pool, &task)) {
                    fprintf(stderr, "encode failed: %s\n", task.error);
                    return 1;
                }
                if (r >= 2) t[r - 2] = (double)(rc_now_us() - t0) / 1000.0;
            }
            if (codec == RCANVAS_CODEC_JPEG) ref_ms = bench_median(tr, runs);
            free(tr);
            free(out);
            double ms = bench_median(t, runs);
            double psnr = packet_psnr(pk, px, w, h);
            if (codec == RCANVAS_CODEC_JPEG)
                printf("| %s | jpeg q%d 4:2:0 | %.2f | %.2f | %.2f | %zu | %lu | %.2f |\n", names[f], quality, ref_ms, ms,
                       ms / ref_ms, pk->total_bytes, ref_bytes, psnr);
            else
                printf("| %s | png (lossless) | – | %.2f | – | %zu | – | %s |\n", names[f], ms, pk->total_bytes,
                       psnr >= 99 ? "exact" : "NOT EXACT");
            fflush(stdout);
            rc_packet_unref(pk);
        }
        free(px);
    }
    for (int i = 0; i < nn; i++) free(names[i]);
    free(t);
    tjDestroy(tj);
    rc_packet_pool_free(pp);
    rc_pool_free(pool);
    return 0;
}
