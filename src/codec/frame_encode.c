/* SPDX-License-Identifier: MIT */
/*
 * frame_encode.c — stripe-parallel encoding of one frame (see frame_encode.h). Each stripe job encodes rows
 * [y0, y0+rows) straight from the frame buffer (pointer offset, same pitch: no copy) into its tile buffer; the
 * tile's rectangle is set at submit time. The last stripe to finish calls done(). A task with rectangles (damage)
 * runs one job per rectangle the same way, offset in x too.
 */
#include "codec/frame_encode.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

int rc_encode_plan_stripes(uint32_t width, uint32_t height, int threads) {
    if (threads < 2 || (uint64_t)width * height < 256 * 1024 || height < 128) return 1;
    uint32_t n = (uint32_t)threads;
    if (n > RC_MAX_TILES) n = RC_MAX_TILES;
    uint32_t rows = (height + n - 1) / n;
    rows = (rows + 15) / 16 * 16;
    if (rows < 64) rows = 64;
    return (int)((height + rows - 1) / rows);
}

static void stripe_run(rc_job *job, rc_worker *w) {
    rc_stripe_job *sj = (rc_stripe_job *)job;
    rc_encode_task *t = sj->task;
    rc_packet *pk = t->packet;
    rc_buf *out = &pk->tiles[sj->index].data;
    if (atomic_load_explicit(&t->status, memory_order_relaxed) == RCANVAS_OK) {
        rc_codec *enc = rc_worker_codec(w, pk->codec);
        rc_image part = t->img;
        part.gpu = NULL; /* a stripe, not the whole frame */
        part.pixels = t->img.pixels + (size_t)sj->y0 * t->img.pitch + (size_t)sj->x0 * rc_format_bpp(t->img.format);
        part.width = sj->cols;
        part.height = sj->rows;
        rc_buf_clear(out);
        int st = enc ? rc_codec_encode(enc, &part, &t->params, out, NULL) : RCANVAS_ECODEC;
        if (st == RCANVAS_OK && out->len > UINT32_MAX) st = RCANVAS_ECODEC;
        if (st != RCANVAS_OK) {
            int expected = RCANVAS_OK;
            if (atomic_compare_exchange_strong(&t->status, &expected, st))
                snprintf(t->error, sizeof t->error, "%s", enc ? rc_codec_error(enc) : rc_codec_create_error(pk->codec));
        }
    }
    if (atomic_fetch_sub_explicit(&t->remaining, 1, memory_order_acq_rel) == 1) {
        int status = atomic_load(&t->status);
        if (status == RCANVAS_OK) {
            size_t total = 0;
            for (int i = 0; i < pk->ntiles; i++) total += pk->tiles[i].data.len;
            pk->total_bytes = total;
        }
        t->done(t, status);
    }
}

/* 1 if every rectangle of t lies inside its image and is not empty. */
static int rects_valid(const rc_encode_task *t) {
    if (t->nrects > RC_MAX_TILES) return 0;
    for (int i = 0; i < t->nrects; i++) {
        const rc_rect *r = &t->rects[i];
        if (!r->w || !r->h || (uint64_t)r->x + r->w > t->img.width || (uint64_t)r->y + r->h > t->img.height)
            return 0;
    }
    return 1;
}

void rc_encode_submit(rc_pool *pool, rc_encode_task *t) {
    int by_rects = t->nrects > 0 && rects_valid(t);
    int n = t->stripes > 0 ? t->stripes : rc_encode_plan_stripes(t->img.width, t->img.height, rc_pool_threads(pool));
    if (n > RC_MAX_TILES) n = RC_MAX_TILES;
    if ((uint32_t)n > t->img.height) n = (int)t->img.height;
    uint32_t rows = (t->img.height + (uint32_t)n - 1) / (uint32_t)n;
    if (n > 1) rows = (rows + 15) / 16 * 16;
    /* Rounding rows up may leave fewer stripes than asked. */
    n = (int)((t->img.height + rows - 1) / rows);
    if (by_rects) n = t->nrects;
    rc_packet *pk = t->packet;
    pk->seq = t->seq;
    pk->depends_on = 0;
    pk->present_us = t->present_us;
    pk->codec = t->codec ? t->codec : rc_codec_for(t->params.codec);
    pk->width = t->img.width;
    pk->height = t->img.height;
    pk->ntiles = n;
    if (!by_rects) pk->flags |= RC_PACKET_KEYFRAME; /* stripe-parallel codecs are intra-only; rectangles update
                                                      * part of a picture: not decodable alone */
    if (pk->codec && (pk->codec->flags & RC_CODEC_LOSSLESS)) pk->flags |= RC_PACKET_LOSSLESS;
    t->error[0] = '\0';
    atomic_store(&t->status, pk->codec ? RCANVAS_OK : RCANVAS_EINVAL);
    atomic_store(&t->remaining, n);
    rc_job *jobs[RC_MAX_TILES];
    for (int i = 0; i < n; i++) {
        rc_stripe_job *sj = &t->jobs[i];
        sj->job.run = stripe_run;
        sj->task = t;
        sj->index = i;
        if (by_rects) {
            sj->x0 = t->rects[i].x;
            sj->y0 = t->rects[i].y;
            sj->cols = t->rects[i].w;
            sj->rows = t->rects[i].h;
        } else {
            sj->x0 = 0;
            sj->y0 = (uint32_t)i * rows;
            sj->cols = t->img.width;
            sj->rows = (i == n - 1) ? t->img.height - sj->y0 : rows;
        }
        pk->tiles[i].x = sj->x0;
        pk->tiles[i].y = sj->y0;
        pk->tiles[i].w = sj->cols;
        pk->tiles[i].h = sj->rows;
        jobs[i] = &sj->job;
    }
    rc_pool_submit_n(pool, jobs, n);
}

typedef struct sync_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int finished;
    int status;
} sync_wait;

static void sync_done(rc_encode_task *t, int status) {
    sync_wait *sw = t->user;
    pthread_mutex_lock(&sw->mu);
    sw->finished = 1;
    sw->status = status;
    pthread_cond_signal(&sw->cv);
    pthread_mutex_unlock(&sw->mu);
}

int rc_encode_sync(rc_pool *pool, rc_encode_task *t) {
    sync_wait sw = {.finished = 0, .status = 0};
    pthread_mutex_init(&sw.mu, NULL);
    pthread_cond_init(&sw.cv, NULL);
    t->done = sync_done;
    t->user = &sw;
    rc_encode_submit(pool, t);
    pthread_mutex_lock(&sw.mu);
    while (!sw.finished) pthread_cond_wait(&sw.cv, &sw.mu);
    pthread_mutex_unlock(&sw.mu);
    pthread_mutex_destroy(&sw.mu);
    pthread_cond_destroy(&sw.cv);
    return sw.status;
}
