/*
 * test_soak — mixed animation, drag bursts and pauses against one canvas, with a fake viewer acking from its own
 * thread and the server's own refine timer starting lossless refinements whenever the scene pauses. This is the
 * load under which issue 7's stream froze (a refinement overlapping another leaked a frame slot per overlap until
 * every present failed). It checks that every present is taken, that the newest frame always gets encoded, and
 * that at the end every frame slot but `last` is free.
 *
 * ctest runs it for a few seconds at 1920×1080. For the long check run it by hand, e.g. under ASan at 4K:
 *   RCANVAS_SOAK_SECONDS=180 RCANVAS_SOAK_SIZE=3840x2160 build-asan/test_soak
 * Timings come from a fixed-seed PRNG, so the phase sequence is the same on every run (the thread interleaving
 * is not, which is the point of a soak).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stream/canvas.h"
#include "test.h"
#include "transport/server_internal.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) { /* xorshift64*, fixed seed */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (uint32_t)((g_rng * 0x2545F4914F6CDD1Dull) >> 33) % n;
}

static atomic_int g_stop;
static struct {
    uint32_t refinements, overlaps, acks;
} g_seen;

/* The fake viewer: acks the newest encoded frame every 2–12 ms, as a browser that draws what it gets. It also
 * counts refinements made and the moments when one runs while a newer frame is already `last` (the overlap). */
static void *viewer_thread(void *arg) {
    rcanvas_canvas *c = arg;
    uint32_t last_refined = 0;
    uint64_t rng = 12345;
    while (!atomic_load(&g_stop)) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        usleep(2000 + (unsigned)((rng >> 33) % 10000));
        pthread_mutex_lock(&c->mu);
        uint32_t seq = c->latest ? c->latest->seq : 0;
        if (c->refined && c->refined->seq != last_refined) {
            last_refined = c->refined->seq;
            g_seen.refinements++;
        }
        if (c->refine_running && c->refine_src && c->last && c->last->seq > c->refine_src->seq) g_seen.overlaps++;
        pthread_mutex_unlock(&c->mu);
        if (seq) {
            rc_canvas_ack(c, 1, seq);
            g_seen.acks++;
        }
    }
    return NULL;
}

int main(void) {
    const char *secs_env = getenv("RCANVAS_SOAK_SECONDS");
    const char *size_env = getenv("RCANVAS_SOAK_SIZE");
    double seconds = secs_env ? atof(secs_env) : 6;
    unsigned w = 1920, h = 1080;
    if (size_env && sscanf(size_env, "%ux%u", &w, &h) != 2) {
        fprintf(stderr, "RCANVAS_SOAK_SIZE must be WIDTHxHEIGHT\n");
        return 2;
    }
    printf("soak: %.0f s at %ux%u\n", seconds, w, h);

    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.encode_threads = 2;
    rcanvas_server *s = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&sc, &s), RCANVAS_OK);
    if (!s) TEST_MAIN_END();
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    cc.max_fps = 0;
    cc.refine_ms = 20; /* short, so pauses and nudges end with refinements that the next frames overlap */
    cc.width = w;
    cc.height = h;
    rcanvas_canvas *c = NULL;
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c), RCANVAS_OK);
    if (!c) {
        rcanvas_server_free(s);
        TEST_MAIN_END();
    }

    /* Two frames as in the report: top half noise (slow to encode), bottom half flat, and the same shifted. */
    size_t pitch = (size_t)w * 4;
    uint8_t *px[2] = {malloc(pitch * h), malloc(pitch * h)};
    for (int k = 0; k < 2; k++) {
        for (unsigned y = 0; y < h; y++)
            for (unsigned x = 0; x < pitch; x++)
                px[k][y * pitch + x] = y < h / 2 ? (uint8_t)rnd(256) : (uint8_t)(60 + 100 * k);
    }

    rc_canvas_viewer_join(c, 1);
    pthread_t th;
    pthread_create(&th, NULL, viewer_thread, c);

    int64_t t0 = rc_now_us(), end = t0 + (int64_t)(seconds * 1e6);
    uint32_t presents = 0, refused = 0, pauses = 0, drags = 0, nudges = 0;
    int first_error = RCANVAS_OK;
    while (rc_now_us() < end) {
        uint32_t phase = rnd(4);
        int64_t until = rc_now_us() + 200000 + (int64_t)rnd(600000);
        if (phase == 0) { /* animation: draw whenever flow control says a draw is due */
            while (rc_now_us() < until) {
                int m = rcanvas_wait(c, 50);
                if (m < 0) break;
                if (!(m & RCANVAS_WAKE_DRAW)) continue;
                rcanvas_frame f = {px[presents & 1], w, h, pitch, RCANVAS_FORMAT_RGBA8, 0};
                int r = rcanvas_present(c, &f);
                presents++;
                if (r != RCANVAS_OK && refused++ == 0) first_error = r;
            }
        } else if (phase == 1) { /* drag: a burst of presents 5–30 ms apart, flow control ignored */
            drags++;
            while (rc_now_us() < until) {
                rcanvas_frame f = {px[presents & 1], w, h, pitch, RCANVAS_FORMAT_RGBA8, 0};
                int r = rcanvas_present(c, &f);
                presents++;
                if (r != RCANVAS_OK && refused++ == 0) first_error = r;
                usleep(5000 + rnd(25000));
            }
        } else if (phase == 2) { /* nudges: one frame, then still for just over refine_ms, again and again, so
                                  * a refinement is often still running when the next frame's one falls due */
            nudges++;
            while (rc_now_us() < until) {
                rcanvas_frame f = {px[presents & 1], w, h, pitch, RCANVAS_FORMAT_RGBA8, 0};
                int r = rcanvas_present(c, &f);
                presents++;
                if (r != RCANVAS_OK && refused++ == 0) first_error = r;
                usleep(1000 * (cc.refine_ms + 5 + rnd(3 * cc.refine_ms)));
            }
        } else { /* pause: the refine timer fires after refine_ms and a refinement runs into the next phase */
            pauses++;
            usleep(30000 + rnd(400000));
        }
    }
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);

    CHECK_MSG(refused == 0, "%u of %u presents refused, first: %s", refused, presents, rcanvas_strerror(first_error));
    /* the newest frame gets encoded: nothing is stuck */
    uint32_t presented = c->presented_seq;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&c->mu);
        int idle = !c->encoding && !c->pending && !c->refine_running && c->latest && c->latest->seq == presented;
        pthread_mutex_unlock(&c->mu);
        if (idle) break;
        usleep(1000);
    }
    pthread_mutex_lock(&c->mu);
    CHECK_MSG(c->latest && c->latest->seq == presented, "latest %u, presented %u", c->latest ? c->latest->seq : 0,
              presented);
    CHECK(!c->encoding && !c->pending && !c->refine_running);
    int free_slots = 0;
    for (int i = 0; i < RC_FRAME_BUFS; i++) free_slots += c->frames[i].refs == 0;
    CHECK_EQ_INT(free_slots, RC_FRAME_BUFS - 1); /* only `last` holds one */
    CHECK(c->last && c->last->refs == 1);
    pthread_mutex_unlock(&c->mu);
    CHECK_MSG(g_seen.refinements > 0, "no refinement was made in %u pauses", pauses);
    printf("soak: %u presents (%u refused), %u drags, %u nudge runs, %u pauses, %u refinements seen, "
           "%u overlap samples, %u acks, %d of %d frame slots free at the end\n",
           presents, refused, drags, nudges, pauses, g_seen.refinements, g_seen.overlaps, g_seen.acks, free_slots,
           RC_FRAME_BUFS);

    rc_canvas_viewer_leave(c, 1, 0, 0);
    rcanvas_server_free(s);
    free(px[0]);
    free(px[1]);
    TEST_MAIN_END();
}
