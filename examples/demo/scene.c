/* SPDX-License-Identifier: MIT */
/*
 * scene.c — the demo's Mandelbrot/Julia explorer (see scene.h). A float buffer of smooth escape values at the
 * render size is recomputed only when the view changes (rows spread over a persistent thread pool, coarse-to-fine
 * when expensive, only the exposed strips after a pan); every frame then maps it through a 4096-entry RGBA
 * palette with a time offset, which is all a palette-cycling frame costs.
 */
#define _POSIX_C_SOURCE 200809L

#include "scene.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- tunables ---- */

#define PAL_BITS 12
#define PAL_N (1u << PAL_BITS)
#define PAL_MASK (PAL_N - 1u)
#define PAL_CYCLE 48.0         /* iterations (smooth count) per palette cycle */
#define ANIM_CYCLES_PER_S 0.1  /* palette cycling speed */

#define INSIDE (-1.0f)         /* escape-buffer sentinel: the point does not escape */
#define BAILOUT2 65536.0       /* |z|² bailout: a large radius makes the normalised iteration count smooth */
#define LANES 4                /* pixels iterated in lockstep by one thread (instruction-level parallelism) */
_Static_assert(LANES == 4, "iterate_row's hot loops are written out for 4 lanes");

#define ZOOM_MIN 0.2
#define CENTRE_MAX 10.0        /* |view centre| limit per coordinate */
#define ZOOM_MAX 1e12          /* a pixel is then ~20 ulp of the coordinates: the end of what double can show */
#define ITER_AUTO_MAX 4096
#define ITER_MIN 16
#define ITER_MAX 65536

#define MAX_STEP 16            /* coarsest lattice of a progressive recompute (pixels) */
#ifndef FIRST_BUDGET_NS
#define FIRST_BUDGET_NS 12e6   /* a recompute's first (coarse) pass should take about this long */
#endif
#ifndef FRAME_BUDGET_NS
#define FRAME_BUDGET_NS 20e6   /* refinement continues within a render call until this much time has passed */
#endif
#define PALETTE_ROWS 16        /* rows per pool unit of the palette pass */

/* ---- thread pool: n-1 persistent workers plus the calling thread; units are handed out by an atomic counter ---- */

typedef void (*job_fn)(void *ctx, int unit, int tid);

typedef struct pool pool;

typedef struct worker {
    pool *p;
    int tid;
    pthread_t th;
} worker;

struct pool {
    int n; /* threads doing work, the caller included */
    int started;
    worker *w;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned gen;
    int busy;
    bool quit;
    job_fn fn;
    void *ctx;
    int nunits;
    atomic_int next;
};

static void pool_work(pool *p, int tid) {
    for (;;) {
        int u = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (u >= p->nunits) break;
        p->fn(p->ctx, u, tid);
    }
}

static void *pool_main(void *arg) {
    worker *w = arg;
    pool *p = w->p;
    unsigned seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
        if (p->quit) break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        pool_work(p, w->tid);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void pool_stop(pool *p) {
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->quit = true;
        pthread_cond_broadcast(&p->go);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->started; i++) pthread_join(p->w[i].th, NULL);
    }
    if (p->w) {
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->go);
        pthread_mutex_destroy(&p->mu);
    }
    free(p->w);
    p->w = NULL;
    p->started = 0;
}

static int pool_start(pool *p, int n) {
    p->n = n;
    p->w = calloc((size_t)n, sizeof *p->w);
    if (!p->w) return -1;
    if (pthread_mutex_init(&p->mu, NULL)) goto fail_mu;
    if (pthread_cond_init(&p->go, NULL)) goto fail_go;
    if (pthread_cond_init(&p->done, NULL)) goto fail_done;
    atomic_init(&p->next, 0);
    for (int i = 1; i < n; i++) {
        p->w[p->started].p = p;
        p->w[p->started].tid = i;
        if (pthread_create(&p->w[p->started].th, NULL, pool_main, &p->w[p->started])) {
            pool_stop(p);
            return -1;
        }
        pthread_setname_np(p->w[p->started].th, "demo-scene"); /* bench-fanout splits the CPU by thread name */
        p->started++;
    }
    return 0;
fail_done:
    pthread_cond_destroy(&p->go);
fail_go:
    pthread_mutex_destroy(&p->mu);
fail_mu:
    free(p->w);
    p->w = NULL;
    return -1;
}

/* Runs fn(ctx, u, tid) for u in [0, nunits) on all threads and returns when every unit is done. */
static void pool_run(pool *p, job_fn fn, void *ctx, int nunits) {
    if (nunits <= 0) return;
    if (p->n == 1 || nunits == 1) {
        for (int u = 0; u < nunits; u++) fn(ctx, u, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->nunits = nunits;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->busy = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    pool_work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* ---- palettes ---- */

typedef struct pal_stop {
    double t;
    uint8_t r, g, b;
} pal_stop;

typedef struct palette_def {
    const char *name;
    const pal_stop *stops;
    int n;
} palette_def;

/* Ultra Fractal's classic blue–white–gold gradient. */
static const pal_stop pal_twilight[] = {
    {0.0, 0, 7, 100}, {0.16, 32, 107, 203}, {0.42, 237, 255, 255}, {0.6425, 255, 170, 0}, {0.8575, 0, 2, 0},
};
static const pal_stop pal_fire[] = {
    {0.0, 0, 0, 0},       {0.12, 90, 8, 4},      {0.25, 200, 40, 0},   {0.37, 255, 140, 10},
    {0.5, 255, 250, 200}, {0.63, 255, 140, 10},  {0.75, 200, 40, 0},   {0.88, 90, 8, 4},
};
static const pal_stop pal_viridis[] = {
    {0.0, 68, 1, 84},    {0.125, 59, 82, 139}, {0.25, 33, 145, 140}, {0.375, 94, 201, 98},
    {0.5, 253, 231, 37}, {0.625, 94, 201, 98}, {0.75, 33, 145, 140}, {0.875, 59, 82, 139},
};
static const pal_stop pal_aurora[] = {
    {0.0, 4, 6, 30},       {0.18, 20, 60, 130},  {0.36, 20, 170, 160}, {0.5, 210, 255, 210},
    {0.66, 150, 80, 200},  {0.84, 50, 15, 90},
};
static const pal_stop pal_gray[] = {{0.0, 8, 8, 8}, {0.5, 248, 248, 248}};

#define NSTOPS(a) ((int)(sizeof(a) / sizeof((a)[0])))
static const palette_def palettes[] = {
    {"twilight", pal_twilight, NSTOPS(pal_twilight)}, {"fire", pal_fire, NSTOPS(pal_fire)},
    {"viridis", pal_viridis, NSTOPS(pal_viridis)},    {"aurora", pal_aurora, NSTOPS(pal_aurora)},
    {"gray", pal_gray, NSTOPS(pal_gray)},
};
#define NPALETTES ((int)(sizeof palettes / sizeof palettes[0]))

static uint32_t pack_rgba(int r, int g, int b) {
    uint8_t px[4] = {(uint8_t)r, (uint8_t)g, (uint8_t)b, 255};
    uint32_t v;
    memcpy(&v, px, 4);
    return v;
}

/* Cyclic cubic Hermite (Catmull–Rom tangents) through the stops, clamped to each segment's range so it never
   overshoots. */
static void build_palette(uint32_t *out, const palette_def *d) {
    const int n = d->n;
    for (uint32_t i = 0; i < PAL_N; i++) {
        double t = (double)i / PAL_N;
        int k = n - 1;
        for (int j = 0; j < n - 1; j++)
            if (t < d->stops[j + 1].t) {
                k = j;
                break;
            }
        if (t < d->stops[0].t) k = n - 1;
        const pal_stop *a = &d->stops[k], *b = &d->stops[(k + 1) % n];
        const pal_stop *pa = &d->stops[(k + n - 1) % n], *nb = &d->stops[(k + 2) % n];
        double ta = a->t, tb = b->t, tpa = pa->t, tnb = nb->t;
        if (tb <= ta) tb += 1.0;
        if (tpa >= ta) tpa -= 1.0;
        while (tnb <= tb) tnb += 1.0;
        double tt = t < ta ? t + 1.0 : t;
        double seg = tb - ta, u = (tt - ta) / seg;
        double h00 = (1 + 2 * u) * (1 - u) * (1 - u), h10 = u * (1 - u) * (1 - u);
        double h01 = u * u * (3 - 2 * u), h11 = u * u * (u - 1);
        double ca[3] = {a->r, a->g, a->b}, cb[3] = {b->r, b->g, b->b};
        double cp[3] = {pa->r, pa->g, pa->b}, cn[3] = {nb->r, nb->g, nb->b};
        int c[3];
        for (int ch = 0; ch < 3; ch++) {
            double m0 = (cb[ch] - cp[ch]) / (tb - tpa) * seg, m1 = (cn[ch] - ca[ch]) / (tnb - ta) * seg;
            double v = h00 * ca[ch] + h10 * m0 + h01 * cb[ch] + h11 * m1;
            double lo = fmin(ca[ch], cb[ch]), hi = fmax(ca[ch], cb[ch]);
            v = v < lo ? lo : v > hi ? hi : v;
            c[ch] = (int)lrint(v);
        }
        out[i] = pack_rgba(c[0], c[1], c[2]);
    }
}

/* ---- the scene ---- */

typedef struct view {
    double cx, cy, zoom;
} view;

static const view mandel_home = {-0.6, 0.0, 1.0};
static const view julia_home = {0.0, 0.0, 1.0};

struct scene {
    pool pool;
    int nthreads;

    /* what to show */
    bool julia;
    double jr, ji;    /* Julia c */
    view mv, jv;      /* Mandelbrot and Julia views; centre = true (unsnapped) centre */
    int palette;
    bool animate;
    double iter_mul;
    double phase;     /* palette offset in entries */
    double last_t;
    bool have_t;

    /* buffers at the last render size */
    uint32_t w, h;
    float *esc;       /* escape values (physical rows, see rows[]) */
    uint8_t *exact;   /* 1 where esc holds the pixel's own value, 0 where it is a coarse neighbour's */
    uint32_t *rows;   /* logical row y → physical row, so a vertical pan only rotates this table */
    uint32_t *rows_tmp;
    int32_t *scratch; /* nthreads × w anchor lists */

    /* what the buffer shows */
    bool rendered;
    bool full_dirty;  /* view changed beyond a pan: recompute everything */
    bool pal_dirty;
    /* Buffer pixel (x, y) shows c = (acx + (x - ox + 0.5 - w/2)*bps, acy - (y - oy + 0.5 - h/2)*bps): the anchor
       is the centre of the last full recompute and (ox, oy) the whole pixels panned since, so the same grid point
       always gets bit-identical coordinates however it was reached, and nothing drifts. */
    double acx, acy, bps;
    long long ox, oy;
    int biter;
    bool bjulia;
    int px0, py0;     /* lattice parity of the progressive passes (moves with pans) */
    int refine_s;     /* lattice step of the next refinement pass; 0 = exact */
    int refine_row;   /* next block row of that pass */
    double ns_per_px; /* measured thread-time per computed pixel, for choosing the coarse step */

    uint32_t pal[NPALETTES][PAL_N];
};

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int pmod(int a, int m) {
    int r = a % m;
    return r < 0 ? r + m : r;
}

static view *cur_view(scene *s) { return s->julia ? &s->jv : &s->mv; }
static const view *cur_view_c(const scene *s) { return s->julia ? &s->jv : &s->mv; }

/* Complex units per pixel at zoom 1: the whole set (or Julia set) fits the frame, whatever its aspect ratio. */
static double base_ps(bool julia, uint32_t w, uint32_t h) {
    if (!w || !h) return 0.0;
    return julia ? fmax(2.6 / h, 3.4 / w) : fmax(2.5 / h, 2.9 / w);
}

static int view_iters(const scene *s) {
    double z = cur_view_c(s)->zoom;
    double a = 256.0 + 64.0 * log2(z > 1.0 ? z : 1.0);
    if (a > ITER_AUTO_MAX) a = ITER_AUTO_MAX;
    a *= s->iter_mul;
    if (a < ITER_MIN) a = ITER_MIN;
    if (a > ITER_MAX) a = ITER_MAX;
    return (int)lrint(a);
}

scene *scene_new(int threads) {
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    if (threads > 64) threads = 64;
    scene *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (pool_start(&s->pool, threads)) {
        free(s);
        return NULL;
    }
    s->nthreads = threads;
    for (int i = 0; i < NPALETTES; i++) build_palette(s->pal[i], &palettes[i]);
    s->mv = mandel_home;
    s->jv = julia_home;
    s->jr = -0.75;
    s->ji = 0.1;
    s->animate = true;
    s->iter_mul = 1.0;
    s->full_dirty = true;
    s->ns_per_px = 60.0;
    return s;
}

static void free_buffers(scene *s) {
    free(s->esc);
    free(s->exact);
    free(s->rows);
    free(s->rows_tmp);
    free(s->scratch);
    s->esc = NULL;
    s->exact = NULL;
    s->rows = s->rows_tmp = NULL;
    s->scratch = NULL;
    s->w = s->h = 0;
}

void scene_free(scene *s) {
    if (!s) return;
    pool_stop(&s->pool);
    free_buffers(s);
    free(s);
}

static int resize(scene *s, uint32_t w, uint32_t h) {
    free_buffers(s);
    size_t n = (size_t)w * h;
    if (n / w != h || n > SIZE_MAX / sizeof(float) || w > INT_MAX / 2 || h > INT_MAX / 2 ||
        (size_t)w > SIZE_MAX / sizeof(int32_t) / (size_t)s->nthreads)
        return -1;
    s->esc = malloc(n * sizeof *s->esc);
    s->exact = malloc(n);
    s->rows = malloc((size_t)h * sizeof *s->rows);
    s->rows_tmp = malloc((size_t)h * sizeof *s->rows_tmp);
    s->scratch = malloc((size_t)w * (size_t)s->nthreads * sizeof *s->scratch);
    if (!s->esc || !s->exact || !s->rows || !s->rows_tmp || !s->scratch) {
        free_buffers(s);
        return -1;
    }
    for (uint32_t y = 0; y < h; y++) s->rows[y] = y;
    s->w = w;
    s->h = h;
    s->full_dirty = true;
    return 0;
}

/* ---- iteration ---- */

/* log2 for positive normal doubles, error < 1e-7: plenty for colouring, and much cheaper than libm. */
static inline double fast_log2(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &b, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e++;
    }
    double t = (m - 1.0) / (m + 1.0), t2 = t * t;
    return e + t * (2.8853900817779268 + t2 * (0.9617966939259756 + t2 * (0.5770780163555854 +
                                                                          t2 * 0.4121985831111324)));
}

/* Normalised iteration count of a point whose |z_n|² = r2 first exceeded the bailout: continuous in the plane,
   in [n, n+1). */
static inline float esc_value(int n, double r2) {
    double mu = n + 5.0 - fast_log2(fast_log2(r2));
    return mu > 0.0 ? (float)mu : 0.0f;
}

typedef struct row_params {
    double acx, koff, ps, im; /* re of pixel x = acx + (x + koff)*ps; im of the row */
    bool julia;
    double jr, ji;
    int maxit;
    double eps;         /* periodicity tolerance */
} row_params;

/* Main cardioid and period-2 bulb: most of the Mandelbrot set's interior, known without iterating. */
static inline bool in_main_parts(double x, double y) {
    double y2 = y * y, xq = x - 0.25;
    double q = xq * xq + y2;
    if (q * (q + xq) <= 0.25 * y2) return true;
    double xp = x + 1.0;
    return xp * xp + y2 <= 0.0625;
}

/* GCC's SLP vectorizer half-packs the four independent lanes below and spills them: plain scalar code is about
   twice as fast, so keep it out of the kernel. */
#if defined(__GNUC__) && !defined(__clang__)
#define SCALAR_KERNEL __attribute__((optimize("no-tree-slp-vectorize", "no-tree-loop-vectorize")))
#else
#define SCALAR_KERNEL
#endif

/* Computes the pixels xs[0..n) of one row into out/ex (that row's escape values and exact flags).
   LANES pixels advance in lockstep so the CPU overlaps their dependency chains; a lane that finishes is refilled
   with the next pixel. Periodicity (Brent): each lane saves its z at doubling intervals and a z that comes back
   to the saved one means an attracting cycle, i.e. an interior point, which stops early. Comparing every step
   costs ~40 %, so it is done only while every lane has been running for PERIOD_AFTER steps (interior regions);
   otherwise only every 16 steps. */
#define PERIOD_AFTER 48

SCALAR_KERNEL static void iterate_row(const row_params *rp, const int32_t *xs, int n, float *out, uint8_t *ex) {
    double zx[LANES], zy[LANES], cr[LANES], ci[LANES], r[LANES], sx[LANES], sy[LANES];
    int st[LANES], save[LANES], pix[LANES];
    const int maxit = rp->maxit;
    const double eps = rp->eps;
    int next = 0, it = 0, active = 0;

#define LOAD_LANE(k)                                                                                          \
    do {                                                                                                      \
        pix[k] = -1;                                                                                          \
        while (next < n) {                                                                                    \
            int x_ = xs[next++];                                                                              \
            double re_ = rp->acx + (x_ + rp->koff) * rp->ps;                                                  \
            if (rp->julia) {                                                                                  \
                zx[k] = re_;                                                                                  \
                zy[k] = rp->im;                                                                               \
                cr[k] = rp->jr;                                                                               \
                ci[k] = rp->ji;                                                                               \
            } else {                                                                                          \
                if (in_main_parts(re_, rp->im)) {                                                             \
                    out[x_] = INSIDE;                                                                         \
                    ex[x_] = 1;                                                                               \
                    continue;                                                                                 \
                }                                                                                             \
                zx[k] = 0.0;                                                                                  \
                zy[k] = 0.0;                                                                                  \
                cr[k] = re_;                                                                                  \
                ci[k] = rp->im;                                                                               \
            }                                                                                                 \
            pix[k] = x_;                                                                                      \
            break;                                                                                            \
        }                                                                                                     \
        if (pix[k] < 0) {                                                                                     \
            zx[k] = zy[k] = cr[k] = ci[k] = 0.0;                                                              \
            st[k] = INT_MAX / 2;                                                                              \
        } else {                                                                                              \
            st[k] = it;                                                                                       \
            active++;                                                                                         \
        }                                                                                                     \
        r[k] = 0.0;                                                                                           \
        save[k] = 0;                                                                                          \
        sx[k] = sy[k] = 1e300;                                                                                \
    } while (0)

#define STEP(x, y, a, b, rr)                                                                                  \
    do {                                                                                                      \
        double xx_ = x * x, yy_ = y * y;                                                                      \
        rr = xx_ + yy_;                                                                                       \
        y = (x + x) * y + b;                                                                                  \
        x = xx_ - yy_ + a;                                                                                    \
    } while (0)

    for (int k = 0; k < LANES; k++) LOAD_LANE(k);
    while (active > 0) {
        int lim = INT_MAX / 2, young = INT_MAX; /* earliest start; steps of the youngest active lane */
        for (int k = 0; k < LANES; k++) {
            lim = st[k] < lim ? st[k] : lim;
            if (pix[k] >= 0 && it - st[k] < young) young = it - st[k];
        }
        lim += maxit;
        int stop = (it | 15) + 1;
        if (stop > lim) stop = lim;
        bool broke = false;
        {
            /* the hot loops: lane state in locals so that it stays in registers */
            double x0 = zx[0], y0 = zy[0], x1 = zx[1], y1 = zy[1], x2 = zx[2], y2 = zy[2], x3 = zx[3], y3 = zy[3];
            const double a0 = cr[0], b0 = ci[0], a1 = cr[1], b1 = ci[1], a2 = cr[2], b2 = ci[2], a3 = cr[3],
                         b3 = ci[3];
            double r0 = 0, r1 = 0, r2 = 0, r3 = 0;
            if (young < PERIOD_AFTER) {
                while (it < stop) {
                    STEP(x0, y0, a0, b0, r0);
                    STEP(x1, y1, a1, b1, r1);
                    STEP(x2, y2, a2, b2, r2);
                    STEP(x3, y3, a3, b3, r3);
                    it++;
                    if ((r0 > BAILOUT2) | (r1 > BAILOUT2) | (r2 > BAILOUT2) | (r3 > BAILOUT2)) {
                        broke = true;
                        break;
                    }
                }
            } else {
                const double s0 = sx[0], s1 = sx[1], s2 = sx[2], s3 = sx[3];
                while (it < stop) {
                    STEP(x0, y0, a0, b0, r0);
                    STEP(x1, y1, a1, b1, r1);
                    STEP(x2, y2, a2, b2, r2);
                    STEP(x3, y3, a3, b3, r3);
                    it++;
                    /* a re-close to its saved value is a candidate: the slow path checks im too */
                    if ((r0 > BAILOUT2) | (r1 > BAILOUT2) | (r2 > BAILOUT2) | (r3 > BAILOUT2) |
                        (fabs(x0 - s0) < eps) | (fabs(x1 - s1) < eps) | (fabs(x2 - s2) < eps) |
                        (fabs(x3 - s3) < eps)) {
                        broke = true;
                        break;
                    }
                }
            }
            zx[0] = x0, zy[0] = y0, zx[1] = x1, zy[1] = y1, zx[2] = x2, zy[2] = y2, zx[3] = x3, zy[3] = y3;
            r[0] = r0, r[1] = r1, r[2] = r2, r[3] = r3;
        }
        if (broke)
            for (int k = 0; k < LANES; k++)
                if (r[k] > BAILOUT2) {
                    out[pix[k]] = esc_value(it - 1 - st[k], r[k]);
                    ex[pix[k]] = 1;
                    active--;
                    LOAD_LANE(k);
                }
        if (it == lim)
            for (int k = 0; k < LANES; k++)
                if (pix[k] >= 0 && it - st[k] >= maxit) {
                    out[pix[k]] = INSIDE;
                    ex[pix[k]] = 1;
                    active--;
                    LOAD_LANE(k);
                }
        if (broke || (it & 15) == 0)
            for (int k = 0; k < LANES; k++) {
                if (pix[k] < 0) continue;
                if (fabs(zx[k] - sx[k]) + fabs(zy[k] - sy[k]) < eps) {
                    out[pix[k]] = INSIDE;
                    ex[pix[k]] = 1;
                    active--;
                    LOAD_LANE(k);
                } else if ((it & 15) == 0 && it - st[k] >= save[k]) {
                    sx[k] = zx[k];
                    sy[k] = zy[k];
                    save[k] = save[k] ? 2 * save[k] : 32;
                }
            }
    }
#undef STEP
#undef LOAD_LANE
}

/* ---- progressive region computation ----
   A pass at lattice step s covers the rect with s×s blocks aligned to the parity (px0, py0); each block's anchor
   (its top-left pixel inside the rect) is computed unless already exact, and the block's inexact pixels take its
   value. Passes at s, s/2, …, 1 thus refine an image without recomputing a pixel; a pass at step 1 leaves the
   rect exact. A unit of work is one row of blocks. */

enum fill_mode {
    FILL_NONE, /* compute anchors only (a probe whose blocks the next pass fills) */
    FILL_NEW,  /* fill the blocks of the anchors computed now (the others were filled by a coarser pass) */
    FILL_ALL,  /* fill every block from its anchor */
};

typedef struct region_job {
    scene *s;
    int x0, y0, x1, y1;
    int step, bx0, by0, unit0;
    enum fill_mode fill;
    row_params rp;
    atomic_long computed;
} region_job;

static void region_unit(void *ctx, int u, int tid) {
    region_job *j = ctx;
    scene *s = j->s;
    const int step = j->step, w = (int)s->w;
    int by = j->by0 + (j->unit0 + u) * step;
    int ylo = by > j->y0 ? by : j->y0, yhi = by + step < j->y1 ? by + step : j->y1;
    if (ylo >= yhi) return;
    size_t prow = (size_t)s->rows[ylo] * (size_t)w;
    float *out = s->esc + prow;
    uint8_t *ex = s->exact + prow;
    int32_t *xs = s->scratch + (size_t)tid * (size_t)w;
    int n = 0;
    for (int bx = j->bx0; bx < j->x1; bx += step) {
        int ax = bx > j->x0 ? bx : j->x0;
        if (!ex[ax]) xs[n++] = ax;
    }
    if (n) {
        row_params rp = j->rp;
        rp.im = s->acy - ((double)(ylo - s->oy) + (0.5 - 0.5 * s->h)) * s->bps;
        iterate_row(&rp, xs, n, out, ex);
        atomic_fetch_add_explicit(&j->computed, n, memory_order_relaxed);
    }
    if (step == 1 || j->fill == FILL_NONE) return;
    if (j->fill == FILL_ALL) {
        n = 0;
        for (int bx = j->bx0; bx < j->x1; bx += step) xs[n++] = bx > j->x0 ? bx : j->x0;
    }
    for (int i = 0; i < n; i++) {
        int ax = xs[i];
        int xe = ax - pmod(ax - s->px0, step) + step;
        if (xe > j->x1) xe = j->x1;
        float v = out[ax];
        for (int y = ylo; y < yhi; y++) {
            size_t p = (size_t)s->rows[y] * (size_t)w;
            float *o = s->esc + p;
            const uint8_t *e = s->exact + p;
            for (int x = ax; x < xe; x++)
                if (!e[x]) o[x] = v;
        }
    }
}

static void fill_row_params(const scene *s, row_params *rp) {
    rp->acx = s->acx;
    rp->koff = (0.5 - 0.5 * s->w) - (double)s->ox; /* exact: x + koff is the grid index */
    rp->ps = s->bps;
    rp->im = 0.0;
    rp->julia = s->bjulia;
    rp->jr = s->jr;
    rp->ji = s->ji;
    rp->maxit = s->biter;
    rp->eps = fmin(1e-10, s->bps * 1e-3);
}

/* Number of block rows of a pass at `step` over rows [y0, y1), and the first one's start. */
static int block_rows(const scene *s, int y0, int y1, int step, int *by0) {
    *by0 = y0 - pmod(y0 - s->py0, step);
    return (y1 - *by0 + step - 1) / step;
}

/* Runs block rows [unit0, unit0+nunits) of a pass at `step` over the rect; updates the cost estimate and
   returns this run's measurement (ns of thread time per computed pixel; 0 if too few pixels to tell). */
static double compute_region(scene *s, int x0, int y0, int x1, int y1, int step, int unit0, int nunits,
                           enum fill_mode fill) {
    if (x0 >= x1 || y0 >= y1 || nunits <= 0) return 0.0;
    region_job j;
    j.s = s;
    j.x0 = x0;
    j.y0 = y0;
    j.x1 = x1;
    j.y1 = y1;
    j.step = step;
    j.bx0 = x0 - pmod(x0 - s->px0, step);
    block_rows(s, y0, y1, step, &j.by0);
    j.unit0 = unit0;
    j.fill = fill;
    fill_row_params(s, &j.rp);
    atomic_init(&j.computed, 0);
    double t0 = now_ns();
    pool_run(&s->pool, region_unit, &j, nunits);
    double dt = now_ns() - t0;
    long n = atomic_load(&j.computed);
    if (n < 256) return 0.0;
    double sample = dt * s->nthreads / (double)n;
    s->ns_per_px = 0.5 * s->ns_per_px + 0.5 * sample;
    return sample;
}

/* Coarsest step needed so that computing npx pixels' lattice stays within budget. */
static int choose_step(const scene *s, double npx, double budget_ns) {
    int step = 1;
    while (step < MAX_STEP && s->ns_per_px * npx / ((double)step * step) / s->nthreads > budget_ns) step *= 2;
    return step;
}

/* Fresh computation of the whole buffer: a probe on the coarsest lattice (1/256 of the pixels) measures what
   this view costs, then a first pass coarse enough for the budget; the rest is refined by later calls. */
static void compute_all(scene *s, const view *v, double ps, int iters) {
    const int w = (int)s->w, h = (int)s->h;
    s->acx = v->cx;
    s->acy = v->cy;
    s->ox = s->oy = 0;
    s->bps = ps;
    s->biter = iters;
    s->bjulia = s->julia;
    s->px0 = s->py0 = 0;
    memset(s->exact, 0, (size_t)w * (size_t)h);
    int by0, nbr = block_rows(s, 0, h, MAX_STEP, &by0);
    double t0 = now_ns();
    double sample = compute_region(s, 0, 0, w, h, MAX_STEP, 0, nbr, FILL_NONE);
    if (sample > 0.0) s->ns_per_px = sample; /* a new view: its own cost, not the last one's */
    int step = choose_step(s, (double)w * h, FIRST_BUDGET_NS - (now_ns() - t0));
    nbr = block_rows(s, 0, h, step, &by0);
    compute_region(s, 0, 0, w, h, step, 0, nbr, FILL_ALL);
    s->refine_s = step / 2;
    s->refine_row = 0;
}

/* ---- panning: shift the buffer by whole pixels, compute the exposed strips ---- */

typedef struct hshift_job {
    scene *s;
    int ix;
} hshift_job;

static void hshift_unit(void *ctx, int u, int tid) {
    (void)tid;
    hshift_job *j = ctx;
    scene *s = j->s;
    const size_t w = s->w, keep = w - (size_t)abs(j->ix);
    size_t p = (size_t)s->rows[u] * w;
    size_t dst = j->ix > 0 ? (size_t)j->ix : 0, src = j->ix > 0 ? 0 : (size_t)-j->ix;
    memmove(s->esc + p + dst, s->esc + p + src, keep * sizeof(float));
    memmove(s->exact + p + dst, s->exact + p + src, keep);
}

/* New pixel (x, y) shows old pixel (x - ix, y - iy). */
static void shift_view(scene *s, int ix, int iy) {
    const int w = (int)s->w, h = (int)s->h;
    if (iy) {
        for (int y = 0; y < h; y++) s->rows_tmp[y] = s->rows[pmod(y - iy, h)];
        uint32_t *t = s->rows;
        s->rows = s->rows_tmp;
        s->rows_tmp = t;
    }
    if (ix) {
        hshift_job j = {s, ix};
        pool_run(&s->pool, hshift_unit, &j, h);
    }
    s->ox += ix;
    s->oy += iy;
    s->px0 = pmod(s->px0 + ix, MAX_STEP);
    s->py0 = pmod(s->py0 + iy, MAX_STEP);

    /* exposed strips: rows [ry0, ry1) full width, then columns [cx0, cx1) of the other rows */
    int ry0 = 0, ry1 = 0, cx0 = 0, cx1 = 0;
    if (iy > 0) ry1 = iy;
    else if (iy < 0) ry0 = h + iy, ry1 = h;
    if (ix > 0) cx1 = ix;
    else if (ix < 0) cx0 = w + ix, cx1 = w;
    int oy0 = ry0 == 0 ? ry1 : 0, oy1 = ry0 == 0 ? h : ry0; /* rows outside the row strip */
    for (int y = ry0; y < ry1; y++) memset(s->exact + (size_t)s->rows[y] * (size_t)w, 0, (size_t)w);
    if (cx1 > cx0)
        for (int y = oy0; y < oy1; y++) memset(s->exact + (size_t)s->rows[y] * (size_t)w + cx0, 0, (size_t)(cx1 - cx0));
    double area = (double)(ry1 - ry0) * w + (double)(cx1 - cx0) * (oy1 - oy0);
    int step = choose_step(s, area, FIRST_BUDGET_NS);
    int by0, nbr;
    if (ry1 > ry0) {
        nbr = block_rows(s, ry0, ry1, step, &by0);
        compute_region(s, 0, ry0, w, ry1, step, 0, nbr, FILL_NEW);
    }
    if (cx1 > cx0 && oy1 > oy0) {
        nbr = block_rows(s, oy0, oy1, step, &by0);
        compute_region(s, cx0, oy0, cx1, oy1, step, 0, nbr, FILL_NEW);
    }
    /* any pending refinement restarts at the coarser level, from the top: exact pixels are skipped */
    if (step / 2 > s->refine_s) s->refine_s = step / 2;
    s->refine_row = 0;
}

/* Whole pixels the buffer must move to show the view's true centre (the remainder stays in the centre). */
static long pan_x(const scene *s, const view *v, double ps) {
    double d = (s->acx - (double)s->ox * ps - v->cx) / ps;
    return fabs(d) < 1e15 ? lround(d) : LONG_MAX / 2;
}
static long pan_y(const scene *s, const view *v, double ps) {
    double d = (v->cy - (s->acy + (double)s->oy * ps)) / ps;
    return fabs(d) < 1e15 ? lround(d) : LONG_MAX / 2;
}

/* ---- palette pass ---- */

typedef struct palette_job {
    const scene *s;
    uint8_t *rgba;
    size_t pitch;
    const uint32_t *pal;
    uint32_t off;
} palette_job;

static void palette_unit(void *ctx, int u, int tid) {
    (void)tid;
    const palette_job *j = ctx;
    const scene *s = j->s;
    const uint32_t w = s->w, *pal = j->pal, off = j->off, black = pack_rgba(0, 0, 0);
    const float k = (float)(PAL_N / PAL_CYCLE);
    uint32_t y1 = (uint32_t)(u + 1) * PALETTE_ROWS;
    if (y1 > s->h) y1 = s->h;
    for (uint32_t y = (uint32_t)u * PALETTE_ROWS; y < y1; y++) {
        const float *e = s->esc + (size_t)s->rows[y] * w;
        uint8_t *o = j->rgba + (size_t)y * j->pitch;
        size_t x = 0;
        /* four pixels per 16-byte store: ~35 % faster than one at a time */
        for (; x + 4 <= w; x += 4) {
            uint32_t c[4];
            for (int i = 0; i < 4; i++) {
                float v = e[x + (size_t)i];
                uint32_t t = pal[((uint32_t)(int32_t)(v * k) + off) & PAL_MASK];
                c[i] = v < 0.0f ? black : t;
            }
            memcpy(o + 4 * (size_t)x, c, sizeof c);
        }
        for (; x < w; x++) {
            float v = e[x];
            uint32_t c = pal[((uint32_t)(int32_t)(v * k) + off) & PAL_MASK];
            c = v < 0.0f ? black : c;
            memcpy(o + 4 * (size_t)x, &c, 4);
        }
    }
}

/* ---- public API ---- */

int scene_render(scene *s, uint8_t *rgba, uint32_t width, uint32_t height, size_t pitch, double t_seconds) {
    if (!width || !height) return 0;
    if (pitch < (size_t)width * 4) return -1;
    double t0 = now_ns();
    if (width != s->w || height != s->h) {
        if (resize(s, width, height)) return -1;
    }
    const view *v = cur_view_c(s);
    double ps = base_ps(s->julia, s->w, s->h) / v->zoom;
    int iters = view_iters(s);
    if (!s->rendered || iters != s->biter || s->julia != s->bjulia || ps != s->bps) s->full_dirty = true;

    if (!s->full_dirty) {
        long ix = pan_x(s, v, ps), iy = pan_y(s, v, ps);
        if (labs(ix) >= (long)s->w || labs(iy) >= (long)s->h) s->full_dirty = true;
        else if (ix || iy) shift_view(s, (int)ix, (int)iy);
    }
    if (s->full_dirty) {
        compute_all(s, v, ps, iters);
        s->full_dirty = false;
    }

    /* refine within the frame budget */
    while (s->refine_s) {
        double left = FRAME_BUDGET_NS - (now_ns() - t0);
        if (left <= 0) break;
        const int step = s->refine_s;
        int by0, nbr = block_rows(s, 0, (int)s->h, step, &by0);
        double per_row = s->ns_per_px * ((double)s->w / step) * 0.75 / s->nthreads;
        double want = 0.5 * left / (per_row > 1.0 ? per_row : 1.0);
        int chunk = want > nbr ? nbr : (int)want;
        if (chunk < 2 * s->nthreads) chunk = 2 * s->nthreads;
        if (chunk > nbr - s->refine_row) chunk = nbr - s->refine_row;
        compute_region(s, 0, 0, (int)s->w, (int)s->h, step, s->refine_row, chunk, FILL_NEW);
        s->refine_row += chunk;
        if (s->refine_row >= nbr) {
            s->refine_s /= 2;
            s->refine_row = 0;
        }
    }

    /* palette */
    if (s->animate && s->have_t) {
        double dt = t_seconds - s->last_t;
        if (dt < 0) dt = 0;
        if (dt > 0.5) dt = 0.5;
        s->phase = fmod(s->phase + dt * ANIM_CYCLES_PER_S * PAL_N, PAL_N);
    }
    s->last_t = t_seconds;
    s->have_t = true;
    palette_job pj = {s, rgba, pitch, s->pal[s->palette], (uint32_t)s->phase & PAL_MASK};
    pool_run(&s->pool, palette_unit, &pj, (int)((s->h + PALETTE_ROWS - 1) / PALETTE_ROWS));
    s->rendered = true;
    s->pal_dirty = false;
    return 0;
}

/* Keeps the centre where there is something to see (everything beyond |c| = 2 escapes at once). */
static double clamp_coord(double c) { return c < -CENTRE_MAX ? -CENTRE_MAX : c > CENTRE_MAX ? CENTRE_MAX : c; }

void scene_drag(scene *s, double dx_px, double dy_px) {
    if (!s->w || !isfinite(dx_px) || !isfinite(dy_px)) return;
    view *v = cur_view(s);
    double ps = base_ps(s->julia, s->w, s->h) / v->zoom;
    v->cx = clamp_coord(v->cx - dx_px * ps);
    v->cy = clamp_coord(v->cy + dy_px * ps);
}

void scene_zoom(scene *s, double x_px, double y_px, double factor) {
    if (!s->w || !isfinite(x_px) || !isfinite(y_px) || !isfinite(factor) || factor <= 0.0) return;
    view *v = cur_view(s);
    double base = base_ps(s->julia, s->w, s->h);
    double ps = base / v->zoom;
    double nz = v->zoom * factor;
    nz = nz < ZOOM_MIN ? ZOOM_MIN : nz > ZOOM_MAX ? ZOOM_MAX : nz;
    if (nz == v->zoom) return;
    double dx = x_px - 0.5 * s->w, dy = y_px - 0.5 * s->h;
    double px = v->cx + dx * ps, py = v->cy - dy * ps; /* the point under the pointer stays put */
    double nps = base / nz;
    v->cx = clamp_coord(px - dx * nps);
    v->cy = clamp_coord(py + dy * nps);
    v->zoom = nz;
    s->full_dirty = true;
}

static void set_julia(scene *s, double cr, double ci, bool reset_view) {
    s->jr = cr;
    s->ji = ci;
    if (reset_view) s->jv = julia_home;
    s->julia = true;
    s->full_dirty = true;
}

void scene_key(scene *s, const char *key) {
    if (!key || !key[0]) return;
    if (!key[1]) {
        switch (key[0]) {
        case 'p': case 'P':
            s->palette = (s->palette + 1) % NPALETTES;
            s->pal_dirty = true;
            return;
        case 'a': case 'A':
            s->animate = !s->animate;
            s->pal_dirty = true;
            return;
        case 'j': case 'J':
            if (s->julia) {
                s->julia = false;
                s->full_dirty = true;
            } else {
                set_julia(s, s->mv.cx, s->mv.cy, true);
            }
            return;
        case 'c': case 'C':
            if (s->julia) set_julia(s, s->jv.cx, s->jv.cy, false);
            else set_julia(s, s->mv.cx, s->mv.cy, true);
            return;
        case 'r': case 'R':
            *cur_view(s) = s->julia ? julia_home : mandel_home;
            s->iter_mul = 1.0;
            s->full_dirty = true;
            return;
        case '+': case '=':
            if (s->iter_mul < 64.0) s->iter_mul *= 1.5;
            s->full_dirty = true;
            return;
        case '-': case '_':
            if (s->iter_mul > 1.0 / 16) s->iter_mul /= 1.5;
            s->full_dirty = true;
            return;
        default:
            return;
        }
    }
    const char *k = strncmp(key, "Arrow", 5) == 0 ? key + 5 : key;
    double dx = 0, dy = 0;
    if (!strcmp(k, "Left") || !strcmp(k, "left")) dx = 0.1 * s->w; /* look left: content moves right */
    else if (!strcmp(k, "Right") || !strcmp(k, "right")) dx = -0.1 * s->w;
    else if (!strcmp(k, "Up") || !strcmp(k, "up")) dy = 0.1 * s->h;
    else if (!strcmp(k, "Down") || !strcmp(k, "down")) dy = -0.1 * s->h;
    else return;
    scene_drag(s, round(dx), round(dy));
}

int scene_changed(const scene *s) {
    if (!s->rendered || s->full_dirty || s->pal_dirty || s->animate || s->refine_s) return 1;
    const view *v = cur_view_c(s);
    double ps = base_ps(s->julia, s->w, s->h) / v->zoom;
    if (ps != s->bps || s->julia != s->bjulia || view_iters(s) != s->biter) return 1;
    return pan_x(s, v, ps) != 0 || pan_y(s, v, ps) != 0;
}

/* Cuts a UTF-8 string back to a character boundary if snprintf truncated it. */
static void utf8_trim(char *buf, size_t cap, int n) {
    if (n < 0) {
        buf[0] = 0;
        return;
    }
    if ((size_t)n < cap) return;
    size_t end = cap - 1; /* buf[end] == 0; drop a partial trailing sequence */
    size_t i = end;
    while (i > 0 && ((unsigned char)buf[i - 1] & 0xC0) == 0x80) i--;
    if (i > 0 && ((unsigned char)buf[i - 1] & 0x80)) {
        unsigned char lead = (unsigned char)buf[i - 1];
        size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
        if (end - (i - 1) < len) buf[i - 1] = 0;
    }
}

void scene_describe(const scene *s, char *buf, size_t cap) {
    if (!buf || !cap) return;
    const view *v = cur_view_c(s);
    int digits = (int)ceil(log10(v->zoom > 1.0 ? v->zoom : 1.0)) + 3;
    if (digits > 17) digits = 17;
    char zoom[32];
    if (v->zoom < 10.0) snprintf(zoom, sizeof zoom, "%.2f", v->zoom);
    else if (v->zoom < 1e6) snprintf(zoom, sizeof zoom, "%.0f", v->zoom);
    else snprintf(zoom, sizeof zoom, "%.2e", v->zoom);
    int n;
    if (s->julia)
        n = snprintf(buf, cap, "Julia c=(%.6g,%.6g) x=%.*f y=%.*f zoom=%s\u00d7 iter=%d", s->jr, s->ji, digits, v->cx,
                     digits, v->cy, zoom, view_iters(s));
    else
        n = snprintf(buf, cap, "Mandelbrot x=%.*f y=%.*f zoom=%s\u00d7 iter=%d", digits, v->cx, digits, v->cy, zoom,
                     view_iters(s));
    utf8_trim(buf, cap, n);
}
