/* SPDX-License-Identifier: MIT */
/*
 * x11_player.c — bench-x11-player: the VNC side of `make bench-vnc` (tests/browser/bench_vnc.mjs). Plays the PNG
 * frames of a directory in a loop in an X11 window of their size (at 0,0, no window manager needed), at --fps, the
 * way `rcanvas-demo --frames DIR` plays them into an rcanvas canvas; a left click toggles the same marker
 * (frames.h: FRAME_MARKER_*) on every frame drawn after it, so the benchmark times input to pixels the same way
 * for both. Frames are loaded by the demo's loader (examples/demo/frames.c, libspng), converted once to the
 * server's pixel layout, and each is put whole with one MIT-SHM PutImage (XPutImage without MIT-SHM), so a VNC
 * server never sees half a frame.
 *
 *   DISPLAY=:5 bench-x11-player --fps 30 DIR      (prints one "ready" line on stdout, then runs until a signal)
 */
#define _POSIX_C_SOURCE 200809L

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/select.h>
#include <sys/shm.h>
#include <time.h>

#include "cli.h"
#include "frames.h"

#define PROG "bench-x11-player"

static const char USAGE[] =
    "usage: bench-x11-player [--fps F] [--no-shm] DIR\n"
    "  Plays the PNG files of DIR (all of one size) in a loop in an X11 window of that size on $DISPLAY, one\n"
    "  frame every 1/F s; a left click toggles a magenta 256x256 square at 64,64 on the frames drawn after it\n"
    "  (as rcanvas-demo --frames does). Prints one line when the window shows, runs until SIGINT/SIGTERM.\n"
    "  --fps F     frames per second, 1-240 (default 30)\n"
    "  --no-shm    XPutImage through the socket instead of MIT-SHM\n"
    "  --help      print this and exit\n";

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The shift of a channel mask of 8 contiguous bits (0xff0000 -> 16), or -1 for any other mask. */
static int mask_shift(unsigned long m) {
    for (int s = 0; s <= 24; s++)
        if (m == 0xFFul << s) return s;
    return -1;
}

static int g_xerror = 0;
static int on_xerror(Display *d, XErrorEvent *e) {
    (void)d;
    g_xerror = e->error_code ? e->error_code : 1;
    return 0;
}

int main(int argc, char **argv) {
    double fps = 30;
    int use_shm = 1;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--fps")) {
            if (cli_number(PROG, a, cli_value(argc, argv, &i), 1, 240, &fps)) return CLI_USAGE;
        } else if (!strcmp(a, "--no-shm")) {
            use_shm = 0;
        } else {
            int r = cli_rest(PROG, USAGE, a, &dir, "DIR");
            if (r >= 0) return r;
        }
    }
    if (!dir) return cli_error(PROG, "a directory of PNG files is needed");

    char err[256];
    frame_set *fs = NULL;
    if (frame_set_load(dir, &fs, err, sizeof err)) {
        fprintf(stderr, PROG ": %s: %s\n", dir, err);
        return 1;
    }
    size_t n = frame_set_count(fs);
    uint32_t w, h;
    frame_set_pixels(fs, 0, &w, &h);
    for (size_t i = 1; i < n; i++) {
        uint32_t wi, hi;
        frame_set_pixels(fs, i, &wi, &hi);
        if (wi != w || hi != h) {
            fprintf(stderr, PROG ": %s: %s is %ux%u, the first frame %ux%u: all must be of one size\n", dir,
                    frame_set_name(fs, i), wi, hi, w, h);
            frame_set_free(fs);
            return 1;
        }
    }

    const char *dname = getenv("DISPLAY");
    Display *dpy = XOpenDisplay(NULL);
    if (!dpy) {
        fprintf(stderr, PROG ": cannot open the X display %s\n", dname ? dname : "(DISPLAY is not set)");
        frame_set_free(fs);
        return 1;
    }
    int scr = DefaultScreen(dpy);
    Visual *vis = DefaultVisual(dpy, scr);
    int depth = DefaultDepth(dpy, scr);
    int rs = mask_shift(vis->red_mask), gs = mask_shift(vis->green_mask), bs = mask_shift(vis->blue_mask);
    if (vis->class != TrueColor || depth < 24 || rs < 0 || gs < 0 || bs < 0) {
        fprintf(stderr, PROG ": the display's default visual is not 24-bit TrueColor (depth %d); start the X "
                        "server with -depth 24\n", depth);
        XCloseDisplay(dpy);
        frame_set_free(fs);
        return 1;
    }
    if ((int)w > DisplayWidth(dpy, scr) || (int)h > DisplayHeight(dpy, scr))
        fprintf(stderr, PROG ": warning: %ux%u frames on a %dx%d screen are cut\n", w, h, DisplayWidth(dpy, scr),
                DisplayHeight(dpy, scr));

    /* every frame once in the server's layout: 32 bits a pixel, the channels where the visual's masks say */
    size_t npx = (size_t)w * h;
    uint32_t **conv = calloc(n, sizeof *conv);
    for (size_t i = 0; conv && i < n; i++) {
        const uint8_t *p = frame_set_pixels(fs, i, NULL, NULL);
        if (!(conv[i] = malloc(npx * 4))) break;
        for (size_t k = 0; k < npx; k++, p += 4)
            conv[i][k] = (uint32_t)p[0] << rs | (uint32_t)p[1] << gs | (uint32_t)p[2] << bs;
    }
    if (!conv || !conv[n - 1]) {
        fprintf(stderr, PROG ": out of memory for %zu frames of %ux%u\n", n, w, h);
        return 1;
    }
    const uint32_t marker_px = (FRAME_MARKER_RGB >> 16 & 0xFFu) << rs | (FRAME_MARKER_RGB >> 8 & 0xFFu) << gs |
                               (FRAME_MARKER_RGB & 0xFFu) << bs;

    Window win = XCreateSimpleWindow(dpy, RootWindow(dpy, scr), 0, 0, w, h, 0, BlackPixel(dpy, scr),
                                     BlackPixel(dpy, scr));
    XSetWindowAttributes swa = {.override_redirect = True};
    XChangeWindowAttributes(dpy, win, CWOverrideRedirect, &swa);
    XStoreName(dpy, win, PROG);
    XSelectInput(dpy, win, ButtonPressMask | ExposureMask | StructureNotifyMask);
    GC gc = XCreateGC(dpy, win, 0, NULL);

    /* the picture: one MIT-SHM image (XSync after each put, so the buffer is free again), else a plain XImage */
    XShmSegmentInfo shm = {.shmid = -1, .shmaddr = (char *)-1};
    XImage *img = NULL;
    if (use_shm && XShmQueryExtension(dpy)) {
        img = XShmCreateImage(dpy, vis, depth, ZPixmap, NULL, &shm, w, h);
        if (img && img->bits_per_pixel == 32 &&
            (shm.shmid = shmget(IPC_PRIVATE, (size_t)img->bytes_per_line * h, IPC_CREAT | 0600)) >= 0 &&
            (shm.shmaddr = img->data = shmat(shm.shmid, NULL, 0)) != (char *)-1) {
            XErrorHandler old = XSetErrorHandler(on_xerror);
            shm.readOnly = True;
            XShmAttach(dpy, &shm);
            XSync(dpy, False);
            XSetErrorHandler(old);
            shmctl(shm.shmid, IPC_RMID, NULL); /* gone once both sides detach */
            if (g_xerror) {                     /* a server on another machine: no shared memory */
                shmdt(shm.shmaddr);
                img->data = NULL;
                XDestroyImage(img);
                img = NULL;
            }
        } else if (img) {
            if (shm.shmid >= 0) shmctl(shm.shmid, IPC_RMID, NULL);
            XDestroyImage(img);
            img = NULL;
        }
    }
    int shm_on = img != NULL;
    if (!img) {
        char *data = malloc(npx * 4);
        img = data ? XCreateImage(dpy, vis, depth, ZPixmap, 0, data, w, h, 32, (int)w * 4) : NULL;
        if (!img || img->bits_per_pixel != 32) {
            fprintf(stderr, PROG ": cannot make a 32-bit image of %ux%u\n", w, h);
            return 1;
        }
    }

    XMapRaised(dpy, win);
    for (XEvent ev;;) { /* shown once mapped */
        XNextEvent(dpy, &ev);
        if (ev.type == MapNotify) break;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    printf(PROG ": ready: %zu frames of %ux%u at %g fps on %s (%s)\n", n, w, h, fps, dname ? dname : "",
           shm_on ? "MIT-SHM" : "XPutImage");
    fflush(stdout);

    int marker = 0;
    size_t k = 0, drawn = 0;
    const double period = 1.0 / fps, t0 = now_s();
    double next = t0;
    int fd = ConnectionNumber(dpy);
    while (!g_stop) {
        int redraw = 0;
        while (XPending(dpy)) {
            XEvent ev;
            XNextEvent(dpy, &ev);
            if (ev.type == ButtonPress && ev.xbutton.button == Button1) marker = !marker; /* from the next frame */
            else if (ev.type == Expose && ev.xexpose.count == 0) redraw = 1;
        }
        double t = now_s();
        if (t >= next || redraw) {
            if (t >= next) {
                next += period;
                if (t - next > period) next = t + period; /* fell behind (a busy machine): no burst to catch up */
            }
            size_t fi = redraw && k ? (k - 1) % n : k++ % n;
            memcpy(img->data, conv[fi], npx * 4);
            if (marker) {
                uint32_t x1 = FRAME_MARKER_X + FRAME_MARKER_SIZE, y1 = FRAME_MARKER_Y + FRAME_MARKER_SIZE;
                if (x1 > w) x1 = w;
                if (y1 > h) y1 = h;
                for (uint32_t y = FRAME_MARKER_Y; y < y1; y++)
                    for (uint32_t x = FRAME_MARKER_X; x < x1; x++) ((uint32_t *)img->data)[(size_t)y * w + x] = marker_px;
            }
            if (shm_on) XShmPutImage(dpy, win, gc, img, 0, 0, 0, 0, w, h, False);
            else XPutImage(dpy, win, gc, img, 0, 0, 0, 0, w, h);
            XSync(dpy, False);
            drawn++;
            continue;
        }
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(fd, &rd);
        double wait = next - t;
        struct timeval tv = {.tv_sec = (time_t)wait, .tv_usec = (suseconds_t)((wait - (time_t)wait) * 1e6)};
        if (select(fd + 1, &rd, NULL, NULL, &tv) < 0 && errno != EINTR) break;
    }
    double secs = now_s() - t0;
    printf(PROG ": %zu frames in %.1f s (%.1f fps)\n", drawn, secs, secs > 0 ? drawn / secs : 0);

    if (shm_on) {
        XShmDetach(dpy, &shm);
        XSync(dpy, False);
        shmdt(shm.shmaddr);
        img->data = NULL;
    }
    XDestroyImage(img);
    XFreeGC(dpy, gc);
    XDestroyWindow(dpy, win);
    XCloseDisplay(dpy);
    for (size_t i = 0; i < n; i++) free(conv[i]);
    free(conv);
    frame_set_free(fs);
    return 0;
}
