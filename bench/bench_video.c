/* SPDX-License-Identifier: MIT */
/*
 * bench-video — the video codecs against JPEG on moving 1920×1080 sequences. Each PNG of a directory (default
 * ../shared/frames) at least 1920×1080 becomes a sequence of N frames that pans and zooms over it (viewport 1/1.1 to
 * 1/1.4 of the source, back and forth, scaled with libyuv's bilinear filter); without a corpus, or with --generated,
 * the generated scene of tests/gen_frames.h (panning 3 px a frame over a drifting gradient) is a sequence too.
 * Per sequence, codec and bitrate: bytes per frame, Y PSNR against the source's I420 (mean over frames), encode ms
 * per frame (median wall time, RGBA → I420 included, as the server runs it) and CPU ms per frame (mean, all threads:
 * less disturbed by a busy machine); JPEG (rc_codec_jpeg, one call, 4:2:0) at q85, and at the quality of equal PSNR
 * — bytes interpolated between the two qualities whose PSNR brackets the video's, measured on every 3rd frame — and
 * the ratio "video bytes / JPEG bytes at equal PSNR". JPEG's Y is measured like the video's: decoded to RGB and
 * converted by rc_i420_from_image. With --play, DIR's 1920×1080 PNGs are instead one sequence played in name order
 * and looped (rcanvas-testframes --motion: the scroll, zoom, pan and rotation of bench-vnc). Prints figures,
 * asserts nothing.
 *   bench-video [--frames N] [--kbps K[,K…]] [--threads T] [--fps F] [--generated] [--play] [--screen]
 *               [--no-jpeg] [DIR]
 * Adding a codec: a decoder (open, decode one packet to I420, close) and one line in k_codecs.
 */
#include <libyuv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "codec/codec.h"
#include "codec/yuv.h"
#include "cli.h"
#include "core/util.h"
#include "gen_frames.h"
#include "imageio.h"
#include "video_decoders.h"
#include "bench_util.h"

#if RCANVAS_BENCH_AV1
#include <dav1d/dav1d.h>
#endif

#define OUT_W 1920
#define OUT_H 1080

#if RCANVAS_BENCH_AV1
/* dav1d, one picture per temporal unit (max_frame_delay 1); the picture is kept until the next decode. */
typedef struct av1_dec {
    Dav1dContext *ctx;
    Dav1dPicture pic;
} av1_dec;
static void *av1_open(void) {
    av1_dec *d = calloc(1, sizeof *d);
    Dav1dSettings s;
    dav1d_default_settings(&s);
    s.n_threads = 1;
    s.max_frame_delay = 1;
    if (!d || dav1d_open(&d->ctx, &s)) {
        free(d);
        return NULL;
    }
    return d;
}
static int av1_decode(void *dp, const uint8_t *data, size_t len, yuv_view *out) {
    av1_dec *d = dp;
    dav1d_picture_unref(&d->pic);
    Dav1dData dd = {0};
    uint8_t *buf = dav1d_data_create(&dd, len);
    if (!buf) return -1;
    memcpy(buf, data, len);
    int got = 0; /* send until the data is in, take the picture (either may wait on the other) */
    for (int i = 0; i < 16 && (dd.sz || !got); i++) {
        int r = dd.sz ? dav1d_send_data(d->ctx, &dd) : 0;
        if (r < 0 && r != DAV1D_ERR(EAGAIN)) break;
        if (!got) {
            int g = dav1d_get_picture(d->ctx, &d->pic);
            if (g == 0) got = 1;
            else if (g != DAV1D_ERR(EAGAIN) || !dd.sz) break;
        }
    }
    if (dd.sz) dav1d_data_unref(&dd);
    if (!got) return -1;
    *out = (yuv_view){d->pic.data[0], d->pic.data[1], d->pic.data[2], d->pic.p.w, d->pic.p.h,
                      (int)d->pic.stride[0], (int)d->pic.stride[1], 0};
    return 0;
}
static void av1_close(void *dp) {
    av1_dec *d = dp;
    dav1d_picture_unref(&d->pic);
    dav1d_close(&d->ctx);
    free(d);
}
static const video_decoder av1_decoder = {av1_open, av1_decode, av1_close};
#endif

/* The video codecs: one line each. */
static const struct {
    const rc_codec_type *type;
    const video_decoder *dec;
} k_codecs[] = {
#if RCANVAS_HAVE_H264
    {&rc_codec_h264, &h264_decoder},
#endif
#if RCANVAS_HAVE_VPX
    {&rc_codec_vp8, &vp8_decoder},
    {&rc_codec_vp9, &vp9_decoder},
#endif
#if RCANVAS_BENCH_AV1
    {&rc_codec_av1, &av1_decoder},
#endif
};
#define NCODECS (sizeof k_codecs / sizeof k_codecs[0])

/* JPEG qualities tried to find the one of equal PSNR. */
static const int k_jpeg_q[] = {5, 10, 15, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 93, 95, 97, 99};
#define NQ (sizeof k_jpeg_q / sizeof k_jpeg_q[0])

/* A source still and the sequence over it. */
typedef struct source {
    char name[64];
    uint8_t *rgba; /* NULL: the generated scene, drawn frame by frame */
    uint32_t w, h;
    uint8_t **seq; /* --play: the frames themselves, each OUT_W×OUT_H, played in order and looped */
    int nseq;
} source;

/* Frame i of n: the viewport zooms between 1.1× and 1.4× and pans across the rest, back and forth. */
static void render(const source *s, int i, int n, uint8_t *dst) {
    if (s->seq) {
        memcpy(dst, s->seq[i % s->nseq], (size_t)OUT_W * OUT_H * 4);
        return;
    }
    if (!s->rgba) { /* the generated scene moves by itself: pan (3, 1) pixels per frame, drifting gradient */
        gen_frame(dst, OUT_W, OUT_H, (size_t)OUT_W * 4, i, 1.0);
        return;
    }
    double ph = 6.283185307 * i / n;
    double z = 1.1 + 0.3 * (0.5 - 0.5 * cos(ph));
    int vw = (int)(s->w / z) & ~1, vh = (int)(s->h / z) & ~1;
    double fx = 0.5 + 0.5 * sin(ph), fy = 0.5 + 0.5 * sin(ph * 0.5);
    int x0 = (int)((s->w - (uint32_t)vw) * fx), y0 = (int)((s->h - (uint32_t)vh) * fy);
    ARGBScale(s->rgba + ((size_t)y0 * s->w + (size_t)x0) * 4, (int)s->w * 4, vw, vh, dst, OUT_W * 4, OUT_W, OUT_H,
              kFilterBilinear);
}

/* --play: every PNG of dir, exactly OUT_W×OUT_H, as the frames of one sequence (at most 64). */
static int load_played(const char *dir, source **out) {
    char *names[64];
    int nn = rc_list_png(dir, names, 64);
    if (nn < 0) return 0;
    source *s = calloc(1, sizeof *s);
    if (s) s->seq = calloc((size_t)nn + 1, sizeof(uint8_t *));
    for (int i = 0; i < nn; i++) {
        char path[4096], err[256];
        uint8_t *px = NULL;
        uint32_t w = 0, h = 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (s && s->seq && rc_image_load(path, &px, &w, &h, err, sizeof err) == 0 && w == OUT_W && h == OUT_H)
            s->seq[s->nseq++] = px;
        else
            free(px);
        free(names[i]);
    }
    if (!s || !s->nseq) {
        if (s) free(s->seq);
        free(s);
        return 0;
    }
    const char *base = strrchr(dir, '/');
    snprintf(s->name, sizeof s->name, "%s", base && base[1] ? base + 1 : dir);
    s->rgba = s->seq[0]; /* not NULL: not the generated scene */
    *out = s;
    return 1;
}

static int load_sources(const char *dir, int with_generated, source **out) {
    int n = 0;
    source *v = NULL;
    char *names[64];
    int nn = dir ? rc_list_png(dir, names, 64) : -1;
    if (nn >= 0) {
        v = calloc((size_t)nn + 1, sizeof(source));
        for (int i = 0; i < nn; i++) {
            char path[4096], err[256];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            source *s = &v[n];
            if (rc_image_load(path, &s->rgba, &s->w, &s->h, err, sizeof err) == 0 && s->w >= OUT_W &&
                s->h >= OUT_H) {
                snprintf(s->name, sizeof s->name, "%.*s", (int)strlen(names[i]) - 4, names[i]);
                n++;
            } else {
                free(s->rgba);
            }
            free(names[i]);
        }
    }
    if (n == 0 || with_generated) {
        source *g = realloc(v, sizeof(source) * ((size_t)n + 1));
        if (!g) {
            *out = v;
            return n;
        }
        v = g;
        memset(&v[n], 0, sizeof(source));
        snprintf(v[n].name, sizeof v[n].name, "generated");
        n++;
    }
    *out = v;
    return n;
}

#define PROG "bench-video"
static const char USAGE[] =
    "usage: bench-video [options] [DIR]\n"
    "  DIR                  directory of PNG frames, each >= 1920x1080 (default: ../shared/frames if there;\n"
    "                       without frames, the generated scene of tests/gen_frames.h)\n"
    "  --frames N           frames per sequence, 2-100000 (default 60)\n"
    "  --kbps K[,K...]      video bitrates in kbit/s, 100-200000 each, at most 8 (default 4000,8000,16000)\n"
    "  --threads T          video encoder threads, 0-256 (default 0: all cores)\n"
    "  --fps F              frame rate the rate control assumes, 1-1000 (default 30)\n"
    "  --generated          the generated scene as a sequence too\n"
    "  --play               DIR's 1920x1080 PNGs, in name order, are the sequence (looped), not stills to pan\n"
    "  --screen             video encoders in their screen-content mode (rc_encode_params.screen)\n"
    "  --no-jpeg            video figures only\n"
    "  --help               print this and exit\n";

int main(int argc, char **argv) {
    int nframes = 60, threads = 0, kbps[8] = {4000, 8000, 16000}, nk = 3, with_generated = 0, jpeg_on = 1, play = 0, screen = 0;
    double fps = 30;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--frames")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 2, 100000, &nframes)) return CLI_USAGE;
        } else if (!strcmp(a, "--threads")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 0, 256, &threads)) return CLI_USAGE;
        } else if (!strcmp(a, "--fps")) {
            if (cli_number(PROG, a, cli_value(argc, argv, &i), 1, 1000, &fps)) return CLI_USAGE;
        } else if (!strcmp(a, "--kbps")) {
            const char *v = cli_value(argc, argv, &i);
            char list[256], *save = NULL;
            if (!v) return cli_missing(PROG, a, "a list of integers from 100 to 200000");
            snprintf(list, sizeof list, "%s", v);
            nk = 0;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (nk == 8) return cli_error(PROG, "%s %s: at most 8 bitrates", a, v);
                if (cli_int(PROG, a, t, 100, 200000, &kbps[nk++])) return CLI_USAGE;
            }
            if (!nk) return cli_error(PROG, "%s %s: must be a list of integers from 100 to 200000", a, v);
        } else if (!strcmp(a, "--generated")) {
            with_generated = 1;
        } else if (!strcmp(a, "--play")) {
            play = 1;
        } else if (!strcmp(a, "--screen")) {
            screen = 1;
        } else if (!strcmp(a, "--no-jpeg")) {
            jpeg_on = 0;
        } else {
            int r = cli_rest(PROG, USAGE, a, &dir, "DIR");
            if (r >= 0) return r;
        }
    }
    struct stat st;
    if (!dir && stat("../shared/frames", &st) == 0) dir = "../shared/frames";
    if (!threads) threads = rc_cpu_count();
    source *src;
    int nsrc = play ? (dir ? load_played(dir, &src) : 0) : load_sources(dir, with_generated, &src);
    if (play && !nsrc) return cli_error(PROG, "--play: no 1920x1080 PNG in %s", dir ? dir : "(no DIR)");
    printf("bench-video: %d sequence(s) of %d frames, %dx%d, %s %s; %.0f fps; video encoders on %d "
           "thread(s)%s; JPEG one call, 4:2:0; machine: %d cores\n",
           nsrc, nframes, OUT_W, OUT_H, play ? "played as they are from" : "pan and zoom over",
           play ? dir : !src[0].rgba ? "the generated scene" : dir, fps, threads,
           screen ? ", screen-content mode" : "", rc_cpu_count());
    if (NCODECS == 0) printf("no video codec built in (openh264, libvpx missing): JPEG only\n");

    size_t cap = (size_t)OUT_W * OUT_H * 4;
    uint8_t *frame = malloc(cap);
    rc_i420 ref = {0}, jy = {0};
    rc_buf pkt = {0};
    double *ms = malloc(sizeof(double) * (size_t)nframes), *jms = malloc(sizeof(double) * (size_t)nframes);
    rc_codec *jpeg;
    if (!frame || !ms || !jms || rc_codec_new(&rc_codec_jpeg, &jpeg)) return 1;
    rc_image img = {frame, OUT_W, OUT_H, (size_t)OUT_W * 4, RCANVAS_FORMAT_RGBA8, NULL};

    printf("\n| sequence | codec | kbit/s | bytes/frame | Y PSNR dB | encode ms (median) | CPU ms/frame | JPEG q85 bytes | q85 PSNR | "
           "JPEG q85 ms | JPEG at equal PSNR: q, bytes | video / JPEG bytes at equal PSNR |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    double tot_video[NCODECS + 1][8], tot_jpeg[NCODECS + 1][8];
    memset(tot_video, 0, sizeof tot_video);
    memset(tot_jpeg, 0, sizeof tot_jpeg);
    for (int si = 0; si < nsrc; si++) {
        /* JPEG over every 3rd frame at each quality: (bytes, PSNR) curve of this sequence; q85 over all frames. */
        double qb[NQ] = {0}, qp[NQ] = {0}, q85_bytes = 0, q85_psnr = 0;
        int nsub = 0;
        for (int i = 0; i < nframes && jpeg_on; i++) {
            render(&src[si], i, nframes, frame);
            rc_i420_from_image(&ref, &img);
            for (size_t q = 0; q < NQ; q++) {
                if (i % 3 && k_jpeg_q[q] != 85) continue;
                rc_encode_params p = {.codec = RCANVAS_CODEC_JPEG, .quality = k_jpeg_q[q],
                                      .subsampling = RCANVAS_SUBSAMP_420};
                rc_buf_clear(&pkt);
                int64_t t0 = rc_now_us();
                if (rc_codec_encode(jpeg, &img, &p, &pkt, NULL)) return 1;
                if (k_jpeg_q[q] == 85) jms[i] = (double)(rc_now_us() - t0) / 1000.0;
                uint8_t *px;
                uint32_t w, h;
                if (rc_decode_jpeg(rc_buf_data(&pkt), pkt.len, &px, &w, &h)) return 1;
                rc_image di = {px, w, h, (size_t)w * 4, RCANVAS_FORMAT_RGBA8, NULL};
                rc_i420_from_image(&jy, &di);
                double ps = gen_psnr_plane(jy.y, jy.stride_y, ref.y, ref.stride_y, OUT_W, OUT_H);
                free(px);
                if (k_jpeg_q[q] == 85) q85_bytes += (double)pkt.len / nframes, q85_psnr += ps / nframes;
                if (i % 3 == 0) qb[q] += (double)pkt.len, qp[q] += ps;
            }
            if (i % 3 == 0) nsub++;
        }
        for (size_t q = 0; q < NQ; q++) qb[q] /= nsub ? nsub : 1, qp[q] /= nsub ? nsub : 1;
        double q85_ms = jpeg_on ? bench_median(jms, nframes) : 0;

        for (size_t c = 0; c < NCODECS; c++)
            for (int k = 0; k < nk; k++) {
                rc_codec *enc;
                void *dec = k_codecs[c].dec->open();
                if (rc_codec_new(k_codecs[c].type, &enc) || !dec) return 1;
                rc_encode_params p = {.codec = (rcanvas_codec)k_codecs[c].type->wire_id, .bitrate_kbps = kbps[k],
                                      .keyframe_interval = 0, .threads = threads, .fps = fps,
                                      .screen = screen};
                double bytes = 0, psnr = 0, cpu = 0;
                for (int i = 0; i < nframes; i++) {
                    render(&src[si], i, nframes, frame);
                    rc_buf_clear(&pkt);
                    int64_t c0 = bench_cpu_us(), t0 = rc_now_us();
                    int r = rc_codec_encode(enc, &img, &p, &pkt, NULL);
                    ms[i] = (double)(rc_now_us() - t0) / 1000.0;
                    cpu += (double)(bench_cpu_us() - c0) / 1000.0 / nframes;
                    if (r) {
                        fprintf(stderr, "%s: %s\n", k_codecs[c].type->name, rc_codec_error(enc));
                        return 1;
                    }
                    yuv_view yv;
                    if (k_codecs[c].dec->decode(dec, rc_buf_data(&pkt), pkt.len, &yv) || yv.w < OUT_W ||
                        yv.h < OUT_H) {
                        fprintf(stderr, "%s: frame %d does not decode\n", k_codecs[c].type->name, i);
                        return 1;
                    }
                    rc_i420_from_image(&ref, &img);
                    bytes += (double)pkt.len / nframes;
                    psnr += gen_psnr_plane(yv.y, yv.stride_y, ref.y, ref.stride_y, OUT_W, OUT_H) / nframes;
                }
                k_codecs[c].dec->close(dec);
                rc_codec_free(enc);
                /* JPEG bytes at the video's PSNR: linear between the bracketing qualities. */
                char eq[64];
                double jb = -1;
                size_t q = 0;
                while (q < NQ && qp[q] < psnr) q++;
                if (q == 0) snprintf(eq, sizeof eq, "< q%d", k_jpeg_q[0]), jb = qb[0];
                else if (q == NQ) snprintf(eq, sizeof eq, "> q%d", k_jpeg_q[NQ - 1]), jb = qb[NQ - 1];
                else {
                    double f = (psnr - qp[q - 1]) / (qp[q] - qp[q - 1]);
                    jb = qb[q - 1] + f * (qb[q] - qb[q - 1]);
                    snprintf(eq, sizeof eq, "q%.0f, %.0f", k_jpeg_q[q - 1] + f * (k_jpeg_q[q] - k_jpeg_q[q - 1]), jb);
                }
                tot_video[c][k] += bytes;
                tot_jpeg[c][k] += jb;
                printf("| %s | %s | %d | %.0f | %.2f | %.2f | %.2f ", src[si].name, k_codecs[c].type->name, kbps[k],
                       bytes, psnr, bench_median(ms, nframes), cpu);
                if (jpeg_on)
                    printf("| %.0f | %.2f | %.2f | %s | %s%.2f |\n", q85_bytes, q85_psnr, q85_ms, eq,
                           q == 0 || q == NQ ? "~" : "", bytes / jb);
                else
                    printf("| – | – | – | – | – |\n");
                fflush(stdout);
            }
    }
    if (jpeg_on && NCODECS) {
        printf("\nAll sequences, video bytes / JPEG bytes at equal PSNR (sums over sequences):");
        for (size_t c = 0; c < NCODECS; c++)
            for (int k = 0; k < nk; k++)
                printf(" %s@%d: %.2f", k_codecs[c].type->name, kbps[k], tot_video[c][k] / tot_jpeg[c][k]);
        printf("\n");
    }
    for (int i = 0; i < nsrc; i++) {
        if (src[i].seq) {
            for (int j = 0; j < src[i].nseq; j++) free(src[i].seq[j]);
            free(src[i].seq);
        } else {
            free(src[i].rgba);
        }
    }
    free(src);
    free(frame);
    free(ms);
    free(jms);
    rc_i420_free(&ref);
    rc_i420_free(&jy);
    rc_buf_free(&pkt);
    rc_codec_free(jpeg);
    return 0;
}
