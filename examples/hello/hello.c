/* SPDX-License-Identifier: MIT */
/*
 * hello.c — the smallest complete rcanvas program, meant to be copied: one animated canvas served on 127.0.0.1
 * with a random token; it prints the URL to open, prints the events the browser sends back, and stops cleanly on
 * Ctrl-C. Build it as README.md ("Your own program") shows, then run: rcanvas-hello [PORT]  (default 8080,
 * 0 = any free port).
 */
#define _POSIX_C_SOURCE 200809L /* sigaction, clock_gettime under -std=c17 */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rcanvas.h>

static volatile sig_atomic_t stop_requested = 0;
static void on_signal(int sig) { (void)sig; stop_requested = 1; } /* only a flag: rcanvas calls are not signal-safe */

/* The library never prints; it hands its log lines (refused connections, errors) to this callback, from its own
 * threads. One fprintf per line is thread-safe. */
static void on_log(void *user, rcanvas_log_level level, const char *msg) {
    (void)user, (void)level;
    fprintf(stderr, "rcanvas: %s\n", msg);
}

/* The animation: red and green ramps that scroll with time t (s), blue that pulses, and a white dot of radius r
 * at (px, py). Everything in physical pixels; alpha is ignored (frames are opaque). */
static void render(uint8_t *pixels, uint32_t w, uint32_t h, size_t pitch, double t, double px, double py, double r) {
    uint8_t blue = (uint8_t)(128 + 127 * sin(2 * t));
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *p = pixels + y * pitch;
        for (uint32_t x = 0; x < w; x++, p += 4) {
            int dot = (x - px) * (x - px) + (y - py) * (y - py) < r * r;
            p[0] = dot ? 255 : (uint8_t)(x + (uint32_t)(120 * t));
            p[1] = dot ? 255 : (uint8_t)(y + (uint32_t)(60 * t));
            p[2] = dot ? 255 : blue;
            p[3] = 255;
        }
    }
}

static void print_event(const rcanvas_event *e) {
    printf("event %s", rcanvas_event_type_name(e->type));
    if (e->type == RCANVAS_EVENT_RESIZE) printf(" %gx%g pixel_ratio=%g", e->width, e->height, e->pixel_ratio);
    else if (e->type == RCANVAS_EVENT_KEY_DOWN || e->type == RCANVAS_EVENT_KEY_UP) printf(" key=%s", e->key);
    else if (e->type == RCANVAS_EVENT_WHEEL) printf(" x=%g y=%g dy=%g", e->x, e->y, e->dy);
    else if (e->type == RCANVAS_EVENT_CHAR) printf(" data=%s", e->data);
    else if (e->type != RCANVAS_EVENT_CLOSE)
        printf(" x=%g y=%g button=%d", e->x, e->y, e->button);
    printf("\n");
    fflush(stdout); /* show it at once, also when stdout is a pipe */
}

int main(int argc, char **argv) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc); /* 127.0.0.1 (this machine only), port 8080, 128-bit random token,
                                        at most 256 viewers at once (sc.max_viewers; one more gets HTTP 503) */
    if (argc > 1) { /* optional port: a whole number, 0 = any free port */
        char *end;
        long port = strtol(argv[1], &end, 10);
        if (*argv[1] == '\0' || *end || port < 0 || port > 65535) {
            fprintf(stderr, "hello: port %s: must be a number from 0 to 65535\n", argv[1]);
            return 2;
        }
        sc.port = (int)port;
    }
    sc.log = on_log;
    sc.log_level = RCANVAS_LOG_WARN;
    rcanvas_server *srv = NULL;
    int r = rcanvas_server_new(&sc, &srv);
    if (r) {
        fprintf(stderr, "hello: cannot serve on port %d: %s\n", sc.port, rcanvas_strerror(r));
        return 1;
    }

    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc); /* JPEG q85, 640x480 until a viewer reports its size */
    cc.title = "rcanvas hello";
    /* CONTINUOUS: a draw is due every 1/max_fps s (60/s by default) while a viewer watches — what an animation
     * wants. A picture that changes only on input keeps the default ONDEMAND and calls rcanvas_request_draw()
     * after each change; then nothing is rendered or sent while nothing changes (ONDEMAND without request_draw
     * shows one still frame). */
    cc.update_mode = RCANVAS_UPDATE_CONTINUOUS;
    rcanvas_canvas *cv = NULL;
    char url[512];
    r = rcanvas_canvas_new(srv, &cc, &cv);
    if (!r) r = rcanvas_server_url(srv, NULL, url, sizeof url) < 0 ? RCANVAS_EINVAL : 0; /* returns its length */
    if (r) {
        fprintf(stderr, "hello: %s\n", rcanvas_strerror(r));
        rcanvas_server_free(srv);
        return 1;
    }
    /* before the URL goes out: whoever reads it (a user, a script, test_hello) may stop us at once, and a signal
     * that came before the handlers killed the program instead of stopping it cleanly */
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    printf("hello: open %s\n", url); /* the token is part of the URL: without it the server answers 401 */
    fflush(stdout);

    uint8_t *pixels = NULL;
    size_t cap = 0;
    double px = -1e9, py = -1e9; /* last pointer position, logical (CSS) pixels */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = 0;
    while (!stop_requested) {
        int wake = rcanvas_wait(cv, 100); /* ≤ 100 ms, so Ctrl-C is seen even with no viewer */
        if (wake < 0) break;              /* RCANVAS_ECLOSED: the server is stopping */
        rcanvas_event ev;
        while (rcanvas_poll_event(cv, &ev) == 1) {
            if (ev.type == RCANVAS_EVENT_POINTER_MOVE || ev.type == RCANVAS_EVENT_POINTER_DOWN) px = ev.x, py = ev.y;
            if (ev.type != RCANVAS_EVENT_POINTER_MOVE) print_event(&ev); /* moves come dozens a second */
        }
        if (!(wake & RCANVAS_WAKE_DRAW)) continue;

        rcanvas_size sz; /* render at the viewer's physical size: sharp on HiDPI screens */
        rcanvas_canvas_get_size(cv, &sz);
        size_t pitch = (size_t)sz.physical_width * 4, need = pitch * sz.physical_height;
        if (need > cap) {
            uint8_t *p = realloc(pixels, need);
            if (!p) {
                fprintf(stderr, "hello: out of memory\n");
                rc = 1;
                break;
            }
            pixels = p, cap = need;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        double t = (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec);
        render(pixels, sz.physical_width, sz.physical_height, pitch, t, px * sz.pixel_ratio, py * sz.pixel_ratio,
               10 * sz.pixel_ratio);
        rcanvas_frame f = {pixels, sz.physical_width, sz.physical_height, pitch, RCANVAS_FORMAT_RGBA8, 0};
        if ((r = rcanvas_present(cv, &f))) { /* copies the pixels: the buffer is ours again at once */
            fprintf(stderr, "hello: present: %s\n", rcanvas_strerror(r));
            rc = 1;
            break;
        }
    }
    printf("hello: stopping\n");
    rcanvas_server_free(srv); /* closes the viewers, joins the threads, frees the canvas too */
    free(pixels);
    return rc;
}
