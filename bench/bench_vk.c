/*
 * bench-vk — headless benchmark of the GPU frame path (no browser): a corpus frame is uploaded once into a
 * device-local VkImage, then presented N times through rcanvas_present_vk(). Per ring depth, at 1080p and 4K,
 * with and without encoding (JPEG q85 4:2:0 in stripes on the worker pool, as the server does), it reports:
 *   copy ms      GPU time of the image→staging copy (Vulkan timestamp queries), mean
 *   fence ms     time the readback thread blocked on the fence, mean
 *   ready ms     vkQueueSubmit → fence seen signalled (CPU clock), mean
 *   handoff ms   handing the mapped buffer on (no copy), mean
 *   encode ms    stripe-parallel JPEG of the mapped buffer, mean (encode runs only)
 *   frames/s     whole path, wall clock over N frames (presents are retried while the ring is full)
 *   bench-vk [--frames N] [--threads T] [--depths 1,2,3,4] [--json FILE] DIR
 * DIR holds 1920x1080 and 3840x2160 PNG frames (heatmap-* used when present).
 */
#include <vulkan/vulkan.h>

#include <errno.h>

#include "rcanvas_vk.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool.h"
#include "codec/frame_encode.h"
#include "cli.h"
#include "imageio.h"
#include "source/vk_readback.h"
#include "vk_util.h"

typedef struct job {
    rc_encode_task task;
    void (*release)(void *);
    void *arg;
    int64_t t0;
    struct sink *sk;
} job;

typedef struct sink {
    rcanvas_vk *vk;
    rc_pool *pool;
    rc_packet_pool *packets;
    int encode;
    atomic_int done;
    atomic_llong encode_us;
    double copy_ms, fence_ms, ready_ms, handoff_ms;
    int n;
    job jobs[16];
    atomic_int job_busy[16];
} sink;

static void encode_done(rc_encode_task *t, int status) {
    job *j = (job *)t;
    sink *sk = j->sk;
    if (status) fprintf(stderr, "encode failed: %s\n", t->error);
    atomic_fetch_add(&sk->encode_us, rc_now_us() - j->t0);
    rc_packet_unref(t->packet);
    void (*release)(void *) = j->release;
    void *arg = j->arg;
    atomic_store(&sk->job_busy[j - sk->jobs], 0);
    release(arg);
    atomic_fetch_add(&sk->done, 1);
}

static void deliver(void *user, const rc_image *img, const rc_vk_damage_info *dmg, void (*release)(void *), void *arg) {
    (void)dmg;
    sink *sk = user;
    rc_vk_stats st;
    rc_vk_get_stats(sk->vk, &st);
    sk->copy_ms += st.copy_ms;
    sk->fence_ms += st.fence_wait_ms;
    sk->ready_ms += st.submit_to_ready_ms;
    sk->handoff_ms += st.handoff_ms; /* of the previous frame */
    sk->n++;
    if (!sk->encode) {
        release(arg);
        atomic_fetch_add(&sk->done, 1);
        return;
    }
    int k = 0;
    for (;; k = (k + 1) % 16) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&sk->job_busy[k], &expect, 1)) break;
    }
    job *j = &sk->jobs[k];
    memset(&j->task, 0, sizeof j->task);
    j->task.img = *img;
    j->task.params = (rc_encode_params){.codec = RCANVAS_CODEC_JPEG, .quality = 85, .subsampling = RCANVAS_SUBSAMP_420};
    j->task.seq = 1;
    j->task.done = encode_done;
    j->task.packet = rc_packet_get(sk->packets);
    j->release = release;
    j->arg = arg;
    j->sk = sk;
    j->t0 = rc_now_us();
    rc_encode_submit(sk->pool, &j->task);
}

#define PROG "bench-vk"

static int load(const char *dir, const char *name, uint8_t **px, uint32_t *w, uint32_t *h) {
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (rc_image_load(path, px, w, h, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        return -1;
    }
    return 0;
}

#define DEPTHS_RULE "1 to 16 ring depths from 1 to 16, separated by commas"
static const char USAGE[] =
    "usage: bench-vk [options] DIR\n"
    "  DIR                  directory of 1920x1080 and 3840x2160 PNG frames (heatmap-* used)\n"
    "  --frames N           timed frames per run, 10-1000000 (default 300)\n"
    "  --threads T          encoder threads, 0-256 (default 0: all cores)\n"
    "  --depths D,D,...     ring depths to measure, each 1-16 (default 1,2,3,4)\n"
    "  --json FILE          also write the figures as JSON to FILE\n"
    "  --help               print this and exit\n";

/* "1,2,4" → depths (each 1..16, at most 16 of them). 0 or -1. */
static int parse_depths(const char *s, int *depths, int *nd) {
    char buf[256];
    if (!*s || strlen(s) >= sizeof buf) return -1;
    memcpy(buf, s, strlen(s) + 1);
    *nd = 0;
    for (char *tok = buf, *comma;; tok = comma + 1) {
        comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        long d;
        if (*nd == 16 || cli_parse_long(tok, 1, 16, &d)) return -1;
        depths[(*nd)++] = (int)d;
        if (!comma) return 0;
    }
}

int main(int argc, char **argv) {
    int frames = 300, threads = 0;
    const char *dir = NULL, *json = NULL, *depths_s = "1,2,3,4";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "--frames")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 10, 1000000, &frames)) return CLI_USAGE;
        } else if (!strcmp(a, "--threads")) {
            if (cli_int(PROG, a, cli_value(argc, argv, &i), 0, 256, &threads)) return CLI_USAGE;
        } else if (!strcmp(a, "--depths")) {
            if (!(depths_s = cli_value(argc, argv, &i))) return cli_missing(PROG, a, DEPTHS_RULE);
        } else if (!strcmp(a, "--json")) {
            if (!(json = cli_value(argc, argv, &i)) || !*json) return cli_missing(PROG, a, "a file to write");
        } else if (a[0] == '-' && a[1]) {
            return cli_error(PROG, "%s: unknown option", a);
        } else if (dir) {
            return cli_error(PROG, "%s: unexpected argument (DIR is %s already)", a, dir);
        } else {
            dir = a;
        }
    }
    int depths[16], nd = 0;
    if (parse_depths(depths_s, depths, &nd)) {
        char b[64];
        return cli_error(PROG, "--depths %s: must be %s", cli_show(depths_s, b, sizeof b), DEPTHS_RULE);
    }
    if (!dir) return cli_error(PROG, "missing DIR: the directory of 1920x1080 and 3840x2160 PNG frames");
    if (!threads) threads = rc_cpu_count();
    const char *names[2] = {"heatmap-1920x1080.png", "heatmap-3840x2160.png"};
    FILE *js = json ? fopen(json, "w") : NULL;
    if (json && !js) {
        fprintf(stderr, PROG ": --json %s: %s\n", json, strerror(errno));
        return 1;
    }
    if (js) fprintf(js, "[\n");
    rc_pool *pool;
    if (rc_pool_new(threads, &pool)) return 1;
    rc_packet_pool *packets = rc_packet_pool_new();
    int first = 1;
    printf("| frame | ring depth | encode | copy ms (GPU) | fence ms | ready ms | handoff ms | encode ms | frames/s |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (int ni = 0; ni < 2; ni++) {
        uint8_t *px;
        uint32_t w, h;
        if (load(dir, names[ni], &px, &w, &h)) return 1;
        for (int di = 0; di < nd; di++)
            for (int enc = 0; enc < 2; enc++) {
                rcanvas_vk_config vc;
                rcanvas_vk_config_init(&vc);
                vc.ring_depth = depths[di];
                rcanvas_vk *vk;
                static sink sk;
                memset(&sk, 0, sizeof sk);
                if (rc_vk_new_internal(NULL, &vc, NULL, &vk)) {
                    fprintf(stderr, "no Vulkan device\n");
                    return 1;
                }
                sk.vk = vk;
                sk.pool = pool;
                sk.packets = packets;
                sk.encode = enc;
                rc_vk_set_sink(vk, (rc_vk_sink){.deliver = deliver, .user = &sk});
                VkDeviceMemory mem;
                VkImage img = upload_image(vk, px, w, h, &mem);
                rcanvas_vk_frame f = {.image = img, .format = VK_FORMAT_R8G8B8A8_UNORM, .width = w, .height = h,
                                      .layout = VK_IMAGE_LAYOUT_GENERAL};
                int warm = 20, total = warm + frames;
                int64_t t0 = 0;
                for (int i = 0; i < total; i++) {
                    if (i == warm) {
                        while (atomic_load(&sk.done) < warm) sched_yield();
                        t0 = rc_now_us();
                        sk.copy_ms = sk.fence_ms = sk.ready_ms = sk.handoff_ms = 0;
                        sk.n = 0;
                        atomic_store(&sk.encode_us, 0);
                    }
                    int r;
                    while ((r = rcanvas_present_vk(vk, &f)) == RCANVAS_EBUSY) sched_yield();
                    if (r) {
                        fprintf(stderr, "present_vk: %s\n", rcanvas_strerror(r));
                        return 1;
                    }
                }
                while (atomic_load(&sk.done) < total) sched_yield();
                double secs = (double)(rc_now_us() - t0) / 1e6;
                int n = sk.n ? sk.n : 1;
                double enc_ms = enc ? (double)atomic_load(&sk.encode_us) / 1000.0 / frames : 0;
                char enc_s[32] = "–";
                if (enc) snprintf(enc_s, sizeof enc_s, "%.2f", enc_ms);
                printf("| %ux%u | %d | %s | %.3f | %.3f | %.3f | %.3f | %s | %.0f |\n", w, h, depths[di],
                       enc ? "jpeg q85" : "none", sk.copy_ms / n, sk.fence_ms / n, sk.ready_ms / n, sk.handoff_ms / n,
                       enc_s, frames / secs);
                fflush(stdout);
                if (js)
                    fprintf(js, "%s  {\"width\":%u,\"height\":%u,\"depth\":%d,\"encode\":%d,\"copy_ms\":%.4f,"
                                "\"fence_ms\":%.4f,\"ready_ms\":%.4f,\"handoff_ms\":%.4f,\"encode_ms\":%.3f,\"fps\":%.1f}",
                            first ? "" : ",\n", w, h, depths[di], enc, sk.copy_ms / n, sk.fence_ms / n, sk.ready_ms / n,
                            sk.handoff_ms / n, enc_ms, frames / secs);
                first = 0;
                VkDevice dev = rcanvas_vk_device(vk);
                vkDeviceWaitIdle(dev);
                vkDestroyImage(dev, img, NULL);
                vkFreeMemory(dev, mem, NULL);
                rcanvas_vk_free(vk);
            }
        free(px);
    }
    if (js) {
        fprintf(js, "\n]\n");
        fclose(js);
    }
    rc_packet_pool_free(packets);
    rc_pool_free(pool);
    return 0;
}
