/*
 * test_stream — the canvas stage driven without a browser: the server listens on a free loopback port but no
 * client connects; viewers, acks and events are fed through the same functions the network thread calls.
 *  - frame descriptors: every bad one returns its error code and presents nothing;
 *  - flow control: no draw is due without a viewer, or while the active viewer holds max_in_flight unacked
 *    frames (frames still encoding count); an ack makes one due again;
 *  - newest wins: frames presented while the encoder is busy replace each other, the skipped one is never
 *    encoded, and `latest` ends at the newest;
 *  - update modes: ondemand needs a request, manual never draws, max_fps spaces draws;
 *  - events: pointer_move/wheel/resize merging as in rendercanvas, resize only from the active viewer,
 *    active viewer hand-over;
 *  - refinement: one lossless refinement at a time, so frame slots always come back (issue 7's freeze);
 *  - server: token, URL, port 0, a second server on a used port fails with RCANVAS_EADDRINUSE (logged as
 *    "address already in use"), a refused token is logged with the rule and without the token.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "stream/canvas.h"
#include "test.h"
#include "transport/server_internal.h"

static rcanvas_server *new_server(int port) {
    rcanvas_server_config cfg;
    rcanvas_server_config_init(&cfg);
    cfg.port = port;
    cfg.encode_threads = 2;
    rcanvas_server *s = NULL;
    int r = rcanvas_server_new(&cfg, &s);
    CHECK_MSG(r == RCANVAS_OK, "server_new: %s", rcanvas_strerror(r));
    return s;
}

static rcanvas_canvas *new_canvas(rcanvas_server *s, const char *name, rcanvas_update_mode mode, double fps) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = name;
    cc.update_mode = mode;
    cc.max_fps = fps;
    cc.refine_ms = 0;
    rcanvas_canvas *c = NULL;
    int r = rcanvas_canvas_new(s, &cc, &c);
    CHECK_MSG(r == RCANVAS_OK, "canvas_new: %s", rcanvas_strerror(r));
    return c;
}

static uint8_t g_px[64 * 48 * 4];
static rcanvas_frame frame64(void) {
    return (rcanvas_frame){.pixels = g_px, .width = 64, .height = 48, .pitch = 64 * 4, .format = RCANVAS_FORMAT_RGBA8};
}

static uint32_t latest_seq(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    uint32_t s = c->latest ? c->latest->seq : 0;
    pthread_mutex_unlock(&c->mu);
    return s;
}

static void wait_latest(rcanvas_canvas *c, uint32_t seq) {
    for (int i = 0; i < 2000 && latest_seq(c) < seq; i++) usleep(1000);
}

static void test_bad_frames(rcanvas_server *s) {
    rcanvas_canvas *c = new_canvas(s, "bad", RCANVAS_UPDATE_ONDEMAND, 60);
    rcanvas_frame f = frame64();
    CHECK_EQ_INT(rcanvas_present(NULL, &f), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_present(c, NULL), RCANVAS_EINVAL);
    f.pixels = NULL;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_ENULL);
    f = frame64();
    f.width = 0;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EFRAME_SIZE);
    f = frame64();
    f.height = 8193;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EFRAME_SIZE);
    f = frame64();
    f.pitch = 64 * 4 - 1;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EPITCH);
    f = frame64();
    f.format = (rcanvas_pixel_format)7;
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_EFORMAT);
    CHECK_EQ_INT(c->presented_seq, 0); /* nothing changed */
    f = frame64();
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK);
    CHECK_EQ_INT(c->presented_seq, 1);
    rcanvas_canvas_free(c);
}

static void test_flow_control(rcanvas_server *s) {
    rcanvas_canvas *c = new_canvas(s, "flow", RCANVAS_UPDATE_FASTEST, 0);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0); /* no viewer: nothing due */
    CHECK_EQ_INT(rc_canvas_viewer_join(c, 1), 1);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    rcanvas_frame f = frame64();
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK); /* seq 1 */
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW); /* 1 in flight < 2 */
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK); /* seq 2 */
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);                /* 2 in flight: not due */
    CHECK_EQ_INT(rcanvas_wait(c, 30), 0);               /* still not, after waiting */
    wait_latest(c, 2);
    CHECK_EQ_INT(latest_seq(c), 2);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);                /* encoded but not acked still counts */
    rc_canvas_ack(c, 1, 1);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW); /* one acked → due */
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK);    /* seq 3 */
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);
    rc_canvas_ack(c, 2, 3); /* an ack from a passive (unknown) viewer does not count */
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);
    rc_canvas_ack(c, 1, 3);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    rc_canvas_ack(c, 1, 99); /* an ack beyond what was presented is ignored */
    CHECK_EQ_INT(c->active_acked, 3);
    /* the active viewer leaves; viewer 2 (acked up to 1) takes over: 2 frames in flight for it */
    CHECK_EQ_INT(rc_canvas_viewer_join(c, 2), 0);
    rc_canvas_viewer_leave(c, 1, 2, 1);
    CHECK_EQ_INT(c->active_viewer, 2);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);
    rc_canvas_ack(c, 2, 3);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW);
    rc_canvas_viewer_leave(c, 2, 0, 0);
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0); /* no viewers */
    rcanvas_canvas_free(c);
}

/* A job that holds one encoder thread until released: makes "encoder busy" deterministic. */
typedef struct blocker {
    rc_job job;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, release, done;
} blocker;
static void block_run(rc_job *j, rc_worker *w) {
    blocker *b = (blocker *)j;
    pthread_mutex_lock(&b->mu);
    b->running = 1;
    pthread_cond_broadcast(&b->cv);
    while (!b->release) pthread_cond_wait(&b->cv, &b->mu);
    b->done = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static void test_newest_wins(rcanvas_server *s) {
    rcanvas_canvas *c = new_canvas(s, "newest", RCANVAS_UPDATE_MANUAL, 0);
    rc_canvas_viewer_join(c, 1);
    blocker b[2];
    for (int i = 0; i < 2; i++) { /* occupy both encoder threads */
        memset(&b[i], 0, sizeof b[i]);
        b[i].job.run = block_run;
        pthread_mutex_init(&b[i].mu, NULL);
        pthread_cond_init(&b[i].cv, NULL);
        rc_pool_submit(rc_server_pool(s), &b[i].job);
    }
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&b[i].mu);
        while (!b[i].running) pthread_cond_wait(&b[i].cv, &b[i].mu);
        pthread_mutex_unlock(&b[i].mu);
    }
    rcanvas_frame f = frame64();
    memset(g_px, 10, sizeof g_px);
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK); /* seq 1: encoding (queued behind the blockers) */
    memset(g_px, 20, sizeof g_px);
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK); /* seq 2: pending */
    memset(g_px, 30, sizeof g_px);
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_OK); /* seq 3: replaces 2 */
    pthread_mutex_lock(&c->mu);
    CHECK(c->encoding && c->encoding->seq == 1);
    CHECK(c->pending && c->pending->seq == 3);
    CHECK_EQ_INT(c->pending->pixels[0], 30); /* the app's buffer was copied at present time */
    int free_bufs = 0;
    for (int i = 0; i < RC_FRAME_BUFS; i++) free_bufs += c->frames[i].refs == 0;
    CHECK_EQ_INT(free_bufs, RC_FRAME_BUFS - 2); /* frame 2's buffer went back to the pool */
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&b[i].mu);
        b[i].release = 1;
        pthread_cond_broadcast(&b[i].cv);
        pthread_mutex_unlock(&b[i].mu);
    }
    wait_latest(c, 3);
    CHECK_EQ_INT(latest_seq(c), 3);
    pthread_mutex_lock(&c->mu);
    CHECK(c->last && c->last->seq == 3);
    CHECK(c->encoding == NULL && c->pending == NULL);
    pthread_mutex_unlock(&c->mu);
    rc_canvas_viewer_leave(c, 1, 0, 0); /* (fake viewers must leave, as the network thread would) */
    rcanvas_canvas_free(c);
    for (int i = 0; i < 2; i++) { /* the blocker jobs live on this stack: wait until they returned */
        pthread_mutex_lock(&b[i].mu);
        while (!b[i].done) pthread_cond_wait(&b[i].cv, &b[i].mu);
        pthread_mutex_unlock(&b[i].mu);
        pthread_mutex_destroy(&b[i].mu);
        pthread_cond_destroy(&b[i].cv);
    }
}

/* A refinement whose completion is held until released: the test swaps the refine task's done callback for this
 * one after the canvas queued it, so "a refinement is still running" is a state the test controls. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered, release;
    rc_encode_done_fn orig;
} g_held = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL};

static void held_refine_done(rc_encode_task *t, int status) {
    pthread_mutex_lock(&g_held.mu);
    g_held.entered = 1;
    pthread_cond_broadcast(&g_held.cv);
    while (!g_held.release) pthread_cond_wait(&g_held.cv, &g_held.mu);
    rc_encode_done_fn orig = g_held.orig;
    pthread_mutex_unlock(&g_held.mu);
    orig(t, status);
}

static int free_slots(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    int n = 0;
    for (int i = 0; i < RC_FRAME_BUFS; i++) n += c->frames[i].refs == 0;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static int refine_running(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    int r = c->refine_running;
    pthread_mutex_unlock(&c->mu);
    return r;
}

/* Issue 7: a lossless refinement still running while a newer frame is encoded and becomes due for refinement
 * itself. A second refinement must not start over the first (it overwrote refine_src, so the older frame's
 * buffer was never released; after a few rounds every present found all slots taken and the stream stopped).
 * Each round: frame N encoded → refinement of N started and held in its completion → frame N+1 presented and
 * encoded → refine check (due for N+1) → release N's completion. Afterwards only `last` holds a slot. */
static void test_refine_overlap(rcanvas_server *s) {
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    cc.name = "refine";
    cc.update_mode = RCANVAS_UPDATE_MANUAL;
    /* Due after an hour of real time: the network thread's own timer never starts one; the test calls the check
     * with a time two hours ahead instead, so it alone decides when refinements start. */
    cc.refine_ms = 3600 * 1000;
    rcanvas_canvas *c = NULL;
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c), RCANVAS_OK);
    if (!c) return;
    rc_canvas_viewer_join(c, 1);
    rcanvas_frame f = frame64();
    for (int round = 0; round < 2 * RC_FRAME_BUFS; round++) {
        uint32_t seq = (uint32_t)round + 1;
        memset(g_px, 40 + round, sizeof g_px);
        int r = rcanvas_present(c, &f);
        CHECK_MSG(r == RCANVAS_OK, "round %d: present: %s", round, rcanvas_strerror(r));
        if (r != RCANVAS_OK) break;
        wait_latest(c, seq);
        CHECK_EQ_INT(latest_seq(c), seq);
        if (round % 2 == 1) { /* odd rounds: the refinement of the previous frame is held over this one */
            CHECK_EQ_INT(rc_canvas_refine_check(c, rc_now_us() + 7200LL * 1000000), -1);
            CHECK_MSG(refine_running(c), "round %d: the held refinement is still the one running", round);
            pthread_mutex_lock(&g_held.mu);
            g_held.release = 1;
            pthread_cond_broadcast(&g_held.cv);
            pthread_mutex_unlock(&g_held.mu);
            for (int i = 0; i < 2000 && refine_running(c); i++) usleep(1000);
            CHECK_EQ_INT(refine_running(c), 0);
            CHECK_EQ_INT(free_slots(c), RC_FRAME_BUFS - 1); /* only `last` */
            pthread_mutex_lock(&c->mu);
            CHECK(c->refined == NULL); /* the held one was for an older frame: dropped */
            pthread_mutex_unlock(&c->mu);
            continue;
        }
        /* even rounds: start the refinement of this frame and hold its completion */
        pthread_mutex_lock(&g_held.mu);
        g_held.entered = g_held.release = 0;
        pthread_mutex_unlock(&g_held.mu);
        /* The pool could finish the task as soon as the check queues it, so hold both encoder threads first (as
         * test_newest_wins does) and swap the callback before letting them go. */
        blocker b[2];
        for (int i = 0; i < 2; i++) {
            memset(&b[i], 0, sizeof b[i]);
            b[i].job.run = block_run;
            pthread_mutex_init(&b[i].mu, NULL);
            pthread_cond_init(&b[i].cv, NULL);
            rc_pool_submit(rc_server_pool(s), &b[i].job);
        }
        for (int i = 0; i < 2; i++) {
            pthread_mutex_lock(&b[i].mu);
            while (!b[i].running) pthread_cond_wait(&b[i].cv, &b[i].mu);
            pthread_mutex_unlock(&b[i].mu);
        }
        CHECK_EQ_INT(rc_canvas_refine_check(c, rc_now_us() + 7200LL * 1000000), -1);
        CHECK(refine_running(c));
        pthread_mutex_lock(&c->mu);
        g_held.orig = c->refine_task.done;
        c->refine_task.done = held_refine_done;
        pthread_mutex_unlock(&c->mu);
        for (int i = 0; i < 2; i++) {
            pthread_mutex_lock(&b[i].mu);
            b[i].release = 1;
            pthread_cond_broadcast(&b[i].cv);
            while (!b[i].done) pthread_cond_wait(&b[i].cv, &b[i].mu);
            pthread_mutex_unlock(&b[i].mu);
            pthread_mutex_destroy(&b[i].mu);
            pthread_cond_destroy(&b[i].cv);
        }
        pthread_mutex_lock(&g_held.mu); /* the refinement is encoded and parked in its completion */
        while (!g_held.entered) pthread_cond_wait(&g_held.cv, &g_held.mu);
        pthread_mutex_unlock(&g_held.mu);
    }
    /* the last frame, refined to the end: the refinement is kept and the slots are back */
    CHECK_EQ_INT(rc_canvas_refine_check(c, rc_now_us() + 7200LL * 1000000), -1);
    for (int i = 0; i < 2000 && refine_running(c); i++) usleep(1000);
    pthread_mutex_lock(&c->mu);
    CHECK(c->refined && c->refined->seq == c->presented_seq && (c->refined->flags & RC_FLAG_REFINE));
    pthread_mutex_unlock(&c->mu);
    CHECK_EQ_INT(free_slots(c), RC_FRAME_BUFS - 1);
    rc_canvas_viewer_leave(c, 1, 0, 0);
    rcanvas_canvas_free(c);
}

static void test_modes(rcanvas_server *s) {
    rcanvas_canvas *c = new_canvas(s, "ondemand", RCANVAS_UPDATE_ONDEMAND, 20);
    rc_canvas_viewer_join(c, 1);
    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_DRAW); /* a new viewer asks for a draw */
    CHECK_EQ_INT(rcanvas_wait(c, 0), 0);                 /* consumed; no request */
    rcanvas_request_draw(c);
    /* max_fps 20: the next draw is due 50 ms after the previous one, not before */
    int64_t t0 = rc_now_us();
    CHECK_EQ_INT(rcanvas_wait(c, 1000), RCANVAS_WAKE_DRAW);
    CHECK_MSG(rc_now_us() - t0 >= 40000, "draw came after %lld us, max_fps 20 allows one per 50 ms",
              (long long)(rc_now_us() - t0));
    rc_canvas_viewer_leave(c, 1, 0, 0);
    rcanvas_canvas_free(c);

    c = new_canvas(s, "manual", RCANVAS_UPDATE_MANUAL, 60);
    rc_canvas_viewer_join(c, 1);
    rcanvas_request_draw(c);
    CHECK_EQ_INT(rcanvas_wait(c, 20), 0);
    rc_canvas_viewer_leave(c, 1, 0, 0);
    rcanvas_canvas_free(c);
}

static void test_events(rcanvas_server *s) {
    rcanvas_canvas *c = new_canvas(s, "events", RCANVAS_UPDATE_MANUAL, 60);
    rc_canvas_viewer_join(c, 1);
    rc_canvas_viewer_join(c, 2);
    rcanvas_event e = {.type = RCANVAS_EVENT_POINTER_MOVE, .viewer_id = 1, .buttons = 2};
    for (int i = 0; i < 5; i++) {
        e.x = i;
        e.y = 10 * i;
        rc_canvas_push_event(c, &e);
    }
    e.buttons = 0; /* other buttons: not merged with the previous moves */
    e.x = 100;
    rc_canvas_push_event(c, &e);
    rcanvas_event w = {.type = RCANVAS_EVENT_WHEEL, .viewer_id = 1, .dx = 1, .dy = -3};
    rc_canvas_push_event(c, &w);
    rc_canvas_push_event(c, &w);
    w.modifiers = RCANVAS_MOD_SHIFT;
    rc_canvas_push_event(c, &w);
    rcanvas_event k = {.type = RCANVAS_EVENT_KEY_DOWN, .viewer_id = 2};
    strcpy(k.key, "p");
    rc_canvas_push_event(c, &k);
    rcanvas_event r = {.type = RCANVAS_EVENT_RESIZE, .viewer_id = 2, .width = 100, .height = 100, .pixel_ratio = 1};
    rc_canvas_push_event(c, &r); /* passive viewer: ignored */
    r.viewer_id = 1;
    r.width = 300;
    rc_canvas_push_event(c, &r);
    r.width = 401;
    r.height = 301;
    r.pixel_ratio = 1.5;
    rc_canvas_push_event(c, &r); /* merged with the previous resize */

    CHECK_EQ_INT(rcanvas_wait(c, 0), RCANVAS_WAKE_EVENTS);
    rcanvas_event out;
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_POINTER_MOVE);
    CHECK_NEAR(out.x, 4, 0); /* newest position of the merged run */
    CHECK_NEAR(out.y, 40, 0);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_POINTER_MOVE);
    CHECK_NEAR(out.x, 100, 0);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_WHEEL);
    CHECK_NEAR(out.dx, 2, 0); /* summed */
    CHECK_NEAR(out.dy, -6, 0);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_WHEEL);
    CHECK_EQ_INT(out.modifiers, RCANVAS_MOD_SHIFT);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_KEY_DOWN);
    CHECK(!strcmp(out.key, "p"));
    CHECK_EQ_INT(out.viewer_id, 2);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK_EQ_INT(out.type, RCANVAS_EVENT_RESIZE);
    CHECK_NEAR(out.width, 401, 0);
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 0);
    rcanvas_size sz;
    rcanvas_canvas_get_size(c, &sz);
    CHECK_NEAR(sz.width, 401, 0);
    CHECK_NEAR(sz.height, 301, 0);
    CHECK_EQ_INT(sz.physical_width, 602);  /* round(401 × 1.5) */
    CHECK_EQ_INT(sz.physical_height, 452); /* round(451.5) */

    /* a full queue drops the oldest */
    rcanvas_event kk = {.type = RCANVAS_EVENT_KEY_DOWN, .viewer_id = 1};
    for (int i = 0; i < RC_EVENT_QUEUE + 5; i++) {
        snprintf(kk.key, sizeof kk.key, "%d", i);
        rc_canvas_push_event(c, &kk);
    }
    CHECK_EQ_INT(rcanvas_poll_event(c, &out), 1);
    CHECK(!strcmp(out.key, "5"));
    rc_canvas_viewer_leave(c, 2, 0, 0);
    rc_canvas_viewer_leave(c, 1, 0, 0);
    rcanvas_canvas_free(c);
}

/* The newest library log line, for checks on what a refusal says. */
static char g_last_log[512];
static void capture_log(void *user, rcanvas_log_level level, const char *msg) {
    (void)user, (void)level;
    snprintf(g_last_log, sizeof g_last_log, "%s", msg);
}

static void test_server(rcanvas_server *s) {
    const char *tok = rcanvas_server_token(s);
    CHECK_EQ_INT(strlen(tok), 32);
    int port = rcanvas_server_port(s);
    CHECK(port > 0 && port < 65536);
    char url[256];
    CHECK(rcanvas_server_url(s, NULL, url, sizeof url) > 0);
    char expect[256];
    snprintf(expect, sizeof expect, "http://127.0.0.1:%d/?token=%s", port, tok);
    CHECK_MSG(!strcmp(url, expect), "url %s", url);
    CHECK(rcanvas_server_url(s, "plot", url, sizeof url) > 0);
    CHECK(strstr(url, "/c/plot?token=") != NULL);
    CHECK_EQ_INT(rcanvas_server_url(s, NULL, url, 10), RCANVAS_EINVAL);

    rcanvas_server_config cfg;
    rcanvas_server_config_init(&cfg);
    cfg.port = port; /* in use */
    cfg.log = capture_log;
    rcanvas_server *s2 = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &s2), RCANVAS_EADDRINUSE);
    CHECK(s2 == NULL);
    CHECK_MSG(strstr(g_last_log, "address already in use") != NULL, "log: %s", g_last_log);
    CHECK(!strcmp(rcanvas_strerror(RCANVAS_EADDRINUSE), "address already in use"));
    cfg.port = 0;
    cfg.token = "tiny42";
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &s2), RCANVAS_EINVAL);
    CHECK_MSG(strstr(g_last_log, "token refused") && strstr(g_last_log, "8 to 128 characters of [A-Za-z0-9_-]") &&
                  !strstr(g_last_log, "tiny42"),
              "log: %s", g_last_log);
    cfg.token = "bad token with spaces";
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &s2), RCANVAS_EINVAL);
    cfg.token = NULL;
    cfg.log = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&cfg, &s2), RCANVAS_OK);
    CHECK(strcmp(rcanvas_server_token(s2), tok) != 0); /* random per server */
    rcanvas_server_free(s2);

    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    rcanvas_canvas *c1 = NULL, *c2 = NULL;
    cc.name = "dup";
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c1), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c2), RCANVAS_EEXIST);
    cc.name = "bad/name";
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c2), RCANVAS_ENAME);
    cc.name = "ok";
    cc.quality = 0;
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &c2), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_canvas_set_codec(c1, RCANVAS_CODEC_PNG, 50, RCANVAS_SUBSAMP_444), RCANVAS_OK);
    CHECK_EQ_INT(rcanvas_canvas_set_codec(c1, RCANVAS_CODEC_JPEG, 101, RCANVAS_SUBSAMP_444), RCANVAS_EINVAL);
    rcanvas_canvas_free(c1);
    CHECK(!strcmp(rcanvas_strerror(RCANVAS_EPITCH), "row pitch is smaller than width times bytes per pixel"));
    CHECK(!strcmp(rcanvas_strerror(12345), "unknown error"));
}

/* rcanvas_server_free with a canvas still attached and a thread blocked in rcanvas_wait: it returns ECLOSED. */
static void *waiter(void *arg) {
    int *r = arg;
    extern rcanvas_canvas *g_wait_canvas;
    *r = rcanvas_wait(g_wait_canvas, -1);
    return NULL;
}
rcanvas_canvas *g_wait_canvas;

static void test_shutdown(void) {
    rcanvas_server *s = new_server(0);
    if (!s) return;
    g_wait_canvas = new_canvas(s, "", RCANVAS_UPDATE_CONTINUOUS, 60);
    rcanvas_frame f = frame64();
    rcanvas_present(g_wait_canvas, &f); /* a frame in flight at shutdown */
    int r = 1;
    pthread_t th;
    pthread_create(&th, NULL, waiter, &r);
    usleep(20000);
    rcanvas_canvas *c = g_wait_canvas;
    pthread_mutex_lock(&c->mu);
    c->closing = 1; /* what rcanvas_server_free does first */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(th, NULL);
    CHECK_EQ_INT(r, RCANVAS_ECLOSED);
    CHECK_EQ_INT(rcanvas_present(c, &f), RCANVAS_ECLOSED);
    rcanvas_server_free(s); /* frees the canvas; ASan checks nothing leaks */
}

int main(void) {
    rcanvas_server *s = new_server(0);
    if (!s) TEST_MAIN_END();
    test_server(s);
    test_bad_frames(s);
    test_flow_control(s);
    test_newest_wins(s);
    test_refine_overlap(s);
    test_modes(s);
    test_events(s);
    rcanvas_server_free(s);
    test_shutdown();
    TEST_MAIN_END();
}
