/* SPDX-License-Identifier: MIT */
/*
 * bench-h264-gpu — the Vulkan compute H.264 encoder (src/codec/gpu/h264_gpu.h) for speed and density.
 *   single (default): at each --size, a generated motion sequence (tests/testframes.h: the pan over a dense plot
 *     and the turning 3D scatter, 16 frames each uploaded once as VkImages) coded from the VkImages for --frames
 *     frames (an IDR, then P pictures) at a fixed QP (--qp, default 28) and then under the rate control at --kbps:
 *     per stage GPU ms (timestamp queries: input copy, colour, motion search, macroblocks, CAVLC count, scan + CAVLC
 *     write, copy out; the deblocking filter, which runs after the bitstream is read back, apart), GPU ms to the
 *     bitstream and with the filter (the reference ready), and wall ms per picture (medians over the P pictures coded: IDR pictures apart, and
 *     the pictures the rate control skipped, which have no GPU pass), the process's CPU ms per picture (getrusage
 *     over the timed loop: recording, submitting, the fence wait, NAL framing), bytes per P picture and the P
 *     pictures' kbit/s at 60 fps (skipped ones included: the stream's bitrate), the P pictures skipped; and the
 *     same pixels from the CPU (rc_gpu_h264_encode_cpu: the upload copy included).
 *   --density K[,K...]: K canvases at once, each a thread coding the pan at --size, paced at --fps (default 60)
 *     for --seconds S (default 5): with h264-gpu (K encoders on one device, one queue, from VkImages), with the
 *     codec table's h264-gpu as a canvas runs it (the process-wide device, from CPU bitmaps: on one queue, then
 *     spread over its queues) and with openh264
 *     (rc_codec_h264, one thread each, from CPU bitmaps, at --kbps): pictures/s per canvas (mean, the slowest),
 *     the process's CPU (cores busy) and CPU ms per picture.
 * Prints markdown tables; asserts nothing.
 *     --pace MS: a pause of MS between the single runs' pictures, as frames that come at a frame rate: each encode
 *     then starts with the GPU idle (the last picture's deblocking filter done), and wall ms/P is the time from the
 *     call to its bitstream, what a viewer waits for.
 *   bench-h264-gpu [--size WxH[,WxH...]] [--frames N] [--qp Q] [--kbps K] [--pace MS] [--density K,...] [--fps F]
 *     [--seconds S]
 */
#include <vulkan/vulkan.h>

#include "rcanvas_vk.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "codec/codec.h"
#include "codec/gpu/h264_gpu.h"
#include "source/vk_readback.h"
#include "testframes.h"
#include "vk_util.h"
#include "bench_util.h"

#define PROG "bench-h264-gpu"
#define NSRC 16


typedef struct seqimg {
    uint32_t w, h;
    uint8_t *rgba[NSRC];
    VkImage img[NSRC];
    VkDeviceMemory mem[NSRC];
} seqimg;

static int seq_make(rcanvas_vk *vk, tf_motion m, uint32_t w, uint32_t h, seqimg *s) {
    memset(s, 0, sizeof *s);
    s->w = w, s->h = h;
    for (int i = 0; i < NSRC; i++) {
        s->rgba[i] = malloc((size_t)w * h * 4);
        if (!s->rgba[i]) return -1;
        tf_motion_draw(m, (uint32_t)i, 64, w, h, s->rgba[i], (size_t)w * 4);
        s->img[i] = upload_image_as(vk, s->rgba[i], w, h, VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                                    &s->mem[i]);
        if (!s->img[i]) return -1;
    }
    return 0;
}
static void seq_free(rcanvas_vk *vk, seqimg *s) {
    for (int i = 0; i < NSRC; i++) {
        if (s->img[i]) vkDestroyImage(rcanvas_vk_device(vk), s->img[i], NULL);
        if (s->mem[i]) vkFreeMemory(rcanvas_vk_device(vk), s->mem[i], NULL);
        free(s->rgba[i]);
    }
}

/* One run: n pictures of s (cycling its frames back and forth so that motion continues), from the images or the
 * CPU. */
static int g_pace_ms; /* --pace */

static void run_single(rc_gpu_h264 *e, const seqimg *s, const char *seqname, int n, int qp, int kbps, int from_cpu) {
    double st[14][4096], gpu[4096], ref[4096], wall[4096], kgpu = 0;
    int np = 0, nk = 0, nc = 0, nskip = 0; /* P pictures, IDR pictures, P pictures coded, P pictures skipped */
    size_t pbytes = 0, kbytes = 0;
    rc_buf out = {0};
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = kbps, .fps = 60};
    rc_gpu_h264_request_keyframe(e);
    if (n > 4096) n = 4096;
    int64_t c0 = bench_cpu_us();
    int lastqp = 0;
    for (int i = 0; i < n; i++) {
        int k = i % (2 * NSRC - 2);
        k = k < NSRC ? k : 2 * NSRC - 2 - k;
        rc_gpu_h264_info info;
        rc_buf_clear(&out);
        int r;
        if (from_cpu) {
            rc_image img = {s->rgba[k], s->w, s->h, (size_t)s->w * 4, RCANVAS_FORMAT_RGBA8, NULL};
            r = rc_gpu_h264_encode_cpu(e, &img, &p, qp, &out, &info);
        } else {
            r = rc_gpu_h264_encode_image(e, s->img[k], VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_LAYOUT_GENERAL, s->w, s->h,
                                         &p, qp, &out, &info);
        }
        if (r) {
            fprintf(stderr, "%s: encode failed: %s\n", PROG, rcanvas_strerror(r));
            break;
        }
        lastqp = info.qp;
        if (g_pace_ms) usleep((useconds_t)g_pace_ms * 1000);
        if (info.keyframe) {
            nk++, kbytes += out.len, kgpu += info.gpu_ms;
            continue;
        }
        pbytes += out.len;
        np++;
        if (info.skipped) { /* the rate control sent a picture of skipped macroblocks: no GPU pass to time */
            nskip++;
            continue;
        }
        for (int j = 0; j < 7; j++) st[j][nc] = info.stage_ms[j];
        st[7][nc] = info.me_coarse_ms;
        st[8][nc] = info.deblock_ms;
        st[9][nc] = info.me_fine_ms, st[10][nc] = info.me_choice_ms, st[11][nc] = info.me_adopt_ms;
        st[12][nc] = info.mb_intra_steps_ms, st[13][nc] = info.me_wave_ms;
        gpu[nc] = info.gpu_ms, wall[nc] = info.wall_ms;
        ref[nc] = info.gpu_ms + info.deblock_ms; /* the last filter's time: the previous picture's, alike */
        nc++;
    }
    double cpu_ms = (double)(bench_cpu_us() - c0) / 1000.0 / (n ? n : 1);
    char qps[32];
    if (qp) snprintf(qps, sizeof qps, "fixed");
    else snprintf(qps, sizeof qps, "rate ctl (last %d)", lastqp);
    printf("| %s %ux%u | %s | %s | %.3f | %.3f | %.3f (%.3f / %.3f / %.3f / %.3f / %.3f) | %.3f (%.3f) | %.3f | %.3f | %.3f | %.3f | **%.3f** | %.3f | %.3f | %.3f | %.1f | %.0f | "
           "%d of %d | %.1f (%.2f ms) |\n",
           seqname, s->w, s->h, from_cpu ? "CPU bitmap" : "VkImage", qps, bench_median(st[0], nc),
           bench_median(st[1], nc), bench_median(st[2], nc), bench_median(st[7], nc), bench_median(st[9], nc),
           bench_median(st[10], nc), bench_median(st[13], nc), bench_median(st[11], nc), bench_median(st[3], nc),
           bench_median(st[12], nc),
           bench_median(st[8], nc), bench_median(st[4], nc), bench_median(st[5], nc), bench_median(st[6], nc),
           bench_median(gpu, nc), bench_median(ref, nc), bench_median(wall, nc), cpu_ms, np ? (double)pbytes / np / 1000.0 : 0,
           np ? (double)pbytes * 8 * p.fps / np / 1000.0 : 0, nskip, np, nk ? (double)kbytes / nk / 1000.0 : 0,
           nk ? kgpu / nk : 0);
    fflush(stdout);
    rc_buf_free(&out);
}

/* ---- density ---- */

typedef struct dens_job {
    int gpu;                /* 1: h264-gpu on the shared device (one queue), from VkImages; 2: the codec table's
                             * h264-gpu (the process-wide device, its queues) from CPU bitmaps, as a canvas runs it;
                             * 0: openh264 */
    rcanvas_vk *vk;
    pthread_mutex_t *qlock;
    const seqimg *s;
    double fps, seconds;
    int kbps;
    pthread_barrier_t *start;
    int frames, errors;
    int coded, contended; /* pictures with a GPU pass (not skipped for the bitrate), and of those the ones coded
                           * without the costly tools (h264_gpu_gate.h) */
    double gpu_ms;
} dens_job;

static void sleep_until_us(int64_t t) {
    int64_t now = rc_now_us();
    if (t > now) {
        struct timespec ts = {(time_t)((t - now) / 1000000), (long)((t - now) % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
}

static void *dens_thread(void *arg) {
    dens_job *j = arg;
    rc_gpu_h264 *ge = NULL;
    rc_codec *ce = NULL;
    if (j->gpu == 2) {
        if (rc_codec_new(&rc_codec_h264_gpu, &ce)) j->errors++;
    } else if (j->gpu) {
        if (rc_gpu_h264_new(rcanvas_vk_physical_device(j->vk), rcanvas_vk_device(j->vk), rcanvas_vk_queue_family(j->vk),
                            rcanvas_vk_queue(j->vk), j->qlock, NULL, &ge))
            j->errors++;
    } else if (rc_codec_new(&rc_codec_h264, &ce)) {
        j->errors++;
    }
    rc_buf out = {0};
    rc_encode_params p = {.codec = RCANVAS_CODEC_H264, .bitrate_kbps = j->kbps, .fps = j->fps, .threads = 1};
    pthread_barrier_wait(j->start);
    int64_t t0 = rc_now_us(), period = (int64_t)(1e6 / j->fps);
    for (int i = 0; !j->errors; i++) {
        int64_t due = t0 + (int64_t)i * period;
        if (due - t0 >= (int64_t)(j->seconds * 1e6)) break;
        sleep_until_us(due);
        int k = i % (2 * NSRC - 2);
        k = k < NSRC ? k : 2 * NSRC - 2 - k;
        rc_buf_clear(&out);
        int r;
        if (ge) {
            rc_gpu_h264_info info;
            r = rc_gpu_h264_encode_image(ge, j->s->img[k], VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_LAYOUT_GENERAL, j->s->w,
                                         j->s->h, &p, 0, &out, &info);
            j->gpu_ms += info.gpu_ms + info.deblock_ms; /* the filter: the last picture's, as alike */
            j->coded += !r && !info.skipped;
            j->contended += !r && !info.skipped && info.contended;
        } else {
            rc_image img = {j->s->rgba[k], j->s->w, j->s->h, (size_t)j->s->w * 4, RCANVAS_FORMAT_RGBA8, NULL};
            r = ce ? rc_codec_encode(ce, &img, &p, &out, NULL) : RCANVAS_EINVAL;
        }
        if (r) j->errors++;
        else j->frames++;
    }
    rc_gpu_h264_free(ge);
    rc_codec_free(ce);
    rc_buf_free(&out);
    return NULL;
}

static void run_density(rcanvas_vk *vk, const seqimg *s, int k, int gpu, double fps, double seconds, int kbps) {
    pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)k + 1);
    dens_job *jobs = calloc((size_t)k, sizeof *jobs);
    pthread_t *th = calloc((size_t)k, sizeof *th);
    for (int i = 0; i < k; i++) {
        jobs[i] = (dens_job){.gpu = gpu, .vk = vk, .qlock = &qlock, .s = s, .fps = fps, .seconds = seconds,
                             .kbps = kbps, .start = &start};
        pthread_create(&th[i], NULL, dens_thread, &jobs[i]);
    }
    pthread_barrier_wait(&start);
    int64_t c0 = bench_cpu_us(), w0 = rc_now_us();
    for (int i = 0; i < k; i++) pthread_join(th[i], NULL);
    double wall_s = (double)(rc_now_us() - w0) / 1e6, cpu_s = (double)(bench_cpu_us() - c0) / 1e6;
    int total = 0, slowest = 1 << 30, errors = 0, coded = 0, contended = 0;
    double gms = 0;
    for (int i = 0; i < k; i++) {
        total += jobs[i].frames;
        coded += jobs[i].coded;
        contended += jobs[i].contended;
        errors += jobs[i].errors;
        gms += jobs[i].gpu_ms;
        if (jobs[i].frames < slowest) slowest = jobs[i].frames;
    }
    char g[32] = "–", name[64], gated[32] = "–";
    if (gpu == 1 && total) snprintf(g, sizeof g, "%.3f", gms / total);
    if (gpu == 1 && coded) snprintf(gated, sizeof gated, "%.0f %% of %d", 100.0 * contended / coded, coded);
    const char *nq = getenv("RCANVAS_GPU_QUEUES");
    if (gpu == 2) snprintf(name, sizeof name, "h264-gpu, CPU bitmaps, %s queue(s)", nq ? nq : "1");
    else snprintf(name, sizeof name, "%s", gpu ? "h264-gpu, VkImages, one queue" : "openh264");
    printf("| %d | %s | %ux%u @ %.0f | %.1f | %.1f | %.2f | %.3f | %s | %s | %d |\n", k, name, s->w, s->h, fps,
           total / wall_s / k, slowest / wall_s, cpu_s / wall_s, total ? cpu_s * 1000 / total : 0, g, gated, errors);
    fflush(stdout);
    free(jobs);
    free(th);
    pthread_barrier_destroy(&start);
}

static const char USAGE[] =
    "usage: bench-h264-gpu [options]\n"
    "  --size WxH[,WxH...]   picture sizes (default 1920x1080,3840x2160)\n"
    "  --frames N            pictures per single run, 8-4096 (default 300)\n"
    "  --qp Q                the fixed QP of the single runs, 12-51 (default 28)\n"
    "  --kbps K              the rate-controlled runs' and openh264's bitrate, kbit/s (default 8000)\n"
    "  --pace MS             a pause between the single runs' pictures, 0-100 ms (default 0: back to back)\n"
    "  --density K[,K...]    canvases at once (instead of the single runs), each at the first --size\n"
    "  --fps F               density: pictures per second per canvas, 1-240 (default 60)\n"
    "  --seconds S           density: seconds per run, 1-120 (default 5)\n"
    "  --help                print this and exit\n";

int main(int argc, char **argv) {
    int frames = 300, qp = 28, kbps = 8000, dens[16], nd = 0;
    double fps = 60, seconds = 5;
    uint32_t sw[8] = {1920, 3840}, sh[8] = {1080, 2160};
    int ns = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--frames")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 8, 4096, &frames)) return CLI_USAGE;
        } else if (!strcmp(a, "--qp")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 12, 51, &qp)) return CLI_USAGE;
        } else if (!strcmp(a, "--pace")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 0, 100, &g_pace_ms)) return CLI_USAGE;
        } else if (!strcmp(a, "--kbps")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 100, 200000, &kbps)) return CLI_USAGE;
        } else if (!strcmp(a, "--fps")) {
            if (cli_number(PROG, a, cli_value(argc, argv, &i), 1, 240, &fps)) return CLI_USAGE;
        } else if (!strcmp(a, "--seconds")) {
            if (cli_number(PROG, a, cli_value(argc, argv, &i), 1, 120, &seconds)) return CLI_USAGE;
        } else if (!strcmp(a, "--size") || !strcmp(a, "--density")) {
            if (!(v = cli_value(argc, argv, &i))) return cli_missing(PROG, a, "a comma-separated list");
            char buf[256], *save = NULL;
            snprintf(buf, sizeof buf, "%s", v);
            int is_size = !strcmp(a, "--size");
            if (is_size) ns = 0;
            for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                unsigned x, y;
                long kk;
                if (is_size && ns < 8 && sscanf(t, "%ux%u", &x, &y) == 2 && x >= 16 && y >= 16 && x <= 8192 && y <= 8192)
                    sw[ns] = x, sh[ns++] = y;
                else if (!is_size && nd < 16 && !cli_parse_long(t, 1, 256, &kk)) dens[nd++] = (int)kk;
                else return cli_error(PROG, "%s %s: %s", a, v, is_size ? "each WxH, 16-8192 a side" : "each 1-256");
            }
        } else {
            int r = cli_rest(PROG, USAGE, a, NULL, NULL);
            if (r >= 0) return r;
        }
    }
    rcanvas_vk_config vc;
    rcanvas_vk_config_init(&vc);
    rcanvas_vk *vk = NULL;
    int r = rc_vk_new_internal(NULL, &vc, NULL, &vk);
    if (r) {
        fprintf(stderr, "%s: no Vulkan device: %s\n", PROG, rcanvas_strerror(r));
        return 1;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(rcanvas_vk_physical_device(vk), &props);
    printf("device: %s; %ld CPUs online\n\n", props.deviceName, sysconf(_SC_NPROCESSORS_ONLN));
    if (nd) {
        seqimg s;
        if (seq_make(vk, TF_MOTION_PAN, sw[0], sh[0], &s)) return 1;
        printf("| canvases | encoder | size @ fps asked | pictures/s per canvas (mean) | slowest canvas | CPU cores "
               "busy | CPU ms/picture | GPU ms/picture | coded without the costly tools (contended), of those not skipped | "
               "errors |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
        for (int d = 0; d < nd; d++) {
            run_density(vk, &s, dens[d], 1, fps, seconds, kbps);
            /* the process-wide device is made anew for each run (its last user gone): one queue (its default),
             * then as many as it can make */
            setenv("RCANVAS_GPU_QUEUES", "1", 1);
            run_density(vk, &s, dens[d], 2, fps, seconds, kbps);
            setenv("RCANVAS_GPU_QUEUES", "8", 1);
            run_density(vk, &s, dens[d], 2, fps, seconds, kbps);
            unsetenv("RCANVAS_GPU_QUEUES");
            run_density(vk, &s, dens[d], 0, fps, seconds, kbps);
        }
        seq_free(vk, &s);
        rcanvas_vk_free(vk);
        return 0;
    }
    rc_gpu_h264 *e = NULL;
    if (rc_gpu_h264_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                        rcanvas_vk_queue(vk), NULL, NULL, &e))
        return 1;
    printf("| sequence | input | QP | copy in | colour | motion (coarse / fine / intra choice / intra wave / adopt) | MBs (intra steps) | deblock | CAVLC count | scan+write | copy out | "
           "GPU ms/P (bitstream) | + deblock | wall ms/P | CPU ms/picture | kB/P | P kbit/s | P skipped | kB/IDR (GPU ms) |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int si = 0; si < ns; si++)
        for (int m = 0; m < TF_MOTIONS; m++) {
            seqimg s;
            if (seq_make(vk, (tf_motion)m, sw[si], sh[si], &s)) return 1;
            run_single(e, &s, tf_motion_name((tf_motion)m), frames, qp, 0, 0);
            /* the rate control from its start on each sequence: an encoder of its own (the one above carries the
             * last sequence's QP and bucket) */
            rc_gpu_h264 *re = NULL;
            if (rc_gpu_h264_new(rcanvas_vk_physical_device(vk), rcanvas_vk_device(vk), rcanvas_vk_queue_family(vk),
                                rcanvas_vk_queue(vk), NULL, NULL, &re))
                return 1;
            run_single(re, &s, tf_motion_name((tf_motion)m), frames, 0, kbps, 0);
            rc_gpu_h264_free(re);
            run_single(e, &s, tf_motion_name((tf_motion)m), frames / 2, qp, 0, 1);
            seq_free(vk, &s);
        }
    rc_gpu_h264_free(e);
    rcanvas_vk_free(vk);
    return 0;
}
