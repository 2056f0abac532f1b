/* SPDX-License-Identifier: MIT */
/*
 * canvas_present.c — frames in: rcanvas_present() copies the app's frame into a free frame slot (the slots,
 * RC_FRAME_BUFS, and the shrink of an oversized one), external frames (a source's mapped buffer, with or without
 * its own damage bitmap, or already encoded by the source), and the publish that makes a frame `pending` and
 * starts the encode pipeline (a newer present replaces the pending one).
 */
#include "stream/canvas_internal.h"

#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>

/* fb (refs = 1, img set) becomes the newest frame: the pending one it replaces is never encoded. */
/* The tile buffer capacity free packets keep (rc_packet_pool_set_keep) for frames of N pixels: N × 6 + 1 MiB, above
 * the worst case of any codec's packet of such a frame (4 bytes a pixel raw; PNG's incompressible worst case a
 * little over; JPEG's tjBufSize under 4 at 4:4:4) grown by rc_buf's 1.5× steps. */
#define RC_PACKET_KEEP_PER_PX 6
#define RC_PACKET_KEEP_SLACK (1u << 20)

/* A frame of w × h is presented: the packet pool's keep limit follows the size (what a packet of it may need at most
 * stays in the free list), and codecs that failed at another size get another chance. mu held. */
static void note_size_locked(rcanvas_canvas *c, uint32_t w, uint32_t h) {
    uint64_t px = (uint64_t)w * h;
    if (px != c->keep_px) {
        c->keep_px = px;
        rc_packet_pool_set_keep(c->packets, (size_t)(px * RC_PACKET_KEEP_PER_PX) + RC_PACKET_KEEP_SLACK);
    }
    if (w != c->present_w || h != c->present_h) {
        c->present_w = w;
        c->present_h = h;
        if (c->codecs_disabled) { /* a new size: the codecs that failed at the old one get another chance */
            c->codecs_disabled = 0;
            rc_canvas_codec_changed_locked(c);
        }
    }
}

/* Frame fb is presented at now: its sequence number and time, and the app's own frame rate (smoothed over the
 * intervals in which no viewer held it back). mu held. */
static void stamp_locked(rcanvas_canvas *c, rc_frame_buf *fb, int64_t now) {
    fb->seq = ++c->presented_seq;
    fb->present_us = now;
    if (c->last_present_us && now > c->last_present_us && c->draw_held_us < c->last_present_us) {
        double f = 1e6 / (double)(now - c->last_present_us);
        c->present_fps = c->present_fps > 0 ? c->present_fps + (f - c->present_fps) / 8 : f;
    }
    c->prev_present_us = c->last_present_us;
    c->last_present_us = now;
}

static void publish_locked(rcanvas_canvas *c, rc_frame_buf *fb) {
    note_size_locked(c, fb->img.width, fb->img.height);
    int64_t now = rc_now_us();
    rc_damage_publish_locked(c, fb); /* before the pending frame it replaces goes */
    stamp_locked(c, fb, now);
    c->counters.presented++;
    if (c->pending) {
        c->counters.dropped++; /* replaced before it was encoded */
        rc_frame_release_locked(c->pending);
    }
    c->pending = fb;
    if (!c->encoding && !rc_canvas_tiers_busy_locked(c)) rc_canvas_start_encode_locked(c);
}

/* Slots that once held a much larger frame let go of their memory when a smaller one comes (after a resize back
 * from a large size): free, not realloc, so that the big blocks (mmap'd by malloc) go back to the system at once
 * instead of staying in the heap; the next copy into a slot allocates what it needs. The slot being filled and the
 * other free ones (slots are taken lowest first, so the high ones may never be used again at the small size: two
 * slots of a 10 Mpx canvas kept 80 MB after it went back to 640×480). Detaches their pixels into shed[] (at most
 * RC_FRAME_BUFS) for the caller to free outside the lock; returns how many. mu held. */
static int frame_bufs_shed_locked(rcanvas_canvas *c, rc_frame_buf *fb, size_t need, uint8_t **shed) {
    int n = 0;
    for (int i = 0; i < RC_FRAME_BUFS; i++) {
        rc_frame_buf *o = &c->frames[i];
        if ((o == fb || o->refs == 0) && o->cap > RC_SHRINK_MIN_BYTES && o->cap / 2 >= need) {
            shed[n++] = o->pixels;
            o->pixels = NULL;
            o->cap = 0;
        }
    }
    return n;
}

/* Frees what frame_bufs_shed_locked detached. Lock not held. */
static void frame_bufs_free(uint8_t **shed, int n) {
    for (int i = 0; i < n; i++) free(shed[i]);
#ifdef __GLIBC__
    /* glibc raises its mmap threshold whenever an mmap'd block is freed (up to 32 MiB, mallopt(3)
     * M_MMAP_THRESHOLD), so the encoders' later big blocks came from the heaps, and freed heap memory stays with the
     * process until trimmed: malloc_trim gives the free pages of every arena back. Only after a resize down. */
    if (n) malloc_trim(0);
#endif
}

int rcanvas_present(rcanvas_canvas *c, const rcanvas_frame *f) {
    if (!c || !f) return RCANVAS_EINVAL;
    if (!f->pixels) return RCANVAS_ENULL;
    unsigned bpp = rc_format_bpp(f->format);
    if (!bpp) return RCANVAS_EFORMAT;
    uint32_t maxd = c->env.max_frame_dim;
    if (f->width == 0 || f->height == 0 || f->width > maxd || f->height > maxd) return RCANVAS_EFRAME_SIZE;
    size_t row = (size_t)f->width * bpp;
    if (f->pitch < row) return RCANVAS_EPITCH;

    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_ECLOSED;
    }
    if (!rc_canvas_codec_fits_locked(c, f->width, f->height)) {
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_EFRAME_SIZE;
    }
    rc_frame_buf *fb = NULL;
    for (int i = 0; i < RC_FRAME_BUFS && !fb; i++)
        if (c->frames[i].refs == 0) fb = &c->frames[i];
    size_t need = row * f->height;
    uint8_t *shed[RC_FRAME_BUFS];
    int nshed = 0;
    if (fb) {
        fb->refs = 1; /* reserved for this present; no other slot points at it */
        nshed = frame_bufs_shed_locked(c, fb, need, shed);
    }
    rc_frame_buf *prev = fb ? rc_damage_present_begin(c) : NULL; /* held while we diff against it */
    pthread_mutex_unlock(&c->mu);
    if (!fb) return RCANVAS_EBUSY; /* only if several threads present on one canvas at once */
    frame_bufs_free(shed, nshed);

    if (fb->cap < need) {
        uint8_t *p = realloc(fb->pixels, need);
        if (!p) {
            pthread_mutex_lock(&c->mu);
            fb->refs = 0;
            rc_frame_release_locked(prev);
            pthread_mutex_unlock(&c->mu);
            return RCANVAS_ENOMEM;
        }
        fb->pixels = p;
        fb->cap = need;
    }
    const uint8_t *src = f->pixels;
    if (f->pitch == row) memcpy(fb->pixels, src, need);
    else
        for (uint32_t y = 0; y < f->height; y++) memcpy(fb->pixels + y * row, src + y * f->pitch, row);
    fb->img = (rc_image){.pixels = fb->pixels, .width = f->width, .height = f->height, .pitch = row,
                         .format = f->format};
    rc_damage_compute(fb, prev, NULL, 0, 0); /* the tiles that differ from the frame before, outside the lock */

    pthread_mutex_lock(&c->mu);
    rc_frame_release_locked(prev);
    if (c->closing) {
        fb->refs = 0;
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_ECLOSED;
    }
    /* the app's own encoder no longer made the newest frame: viewers are told rcanvas' (the Vulkan source's stays) */
    if (c->source_codec == &rc_codec_jpeg_wgpu || c->source_codec == &rc_codec_jpeg_app) {
        c->source_codec = NULL;
        rc_canvas_notify_locked(c);
    }
    publish_locked(c, fb);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

/* A free frame slot holding the external pixels (refs = 1), or NULL (closing, or all slots taken: then the
 * caller unlocks and releases). */
static rc_frame_buf *take_external_locked(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg) {
    rc_frame_buf *fb = NULL;
    for (int i = 0; i < RC_FRAME_BUFS && !fb && !c->closing; i++)
        if (c->frames[i].refs == 0) fb = &c->frames[i];
    if (!fb) return NULL;
    fb->refs = 1;
    fb->img = *img;
    fb->ext_release = release;
    fb->ext_arg = arg;
    return fb;
}

/* An external frame, with a source's damage bitmap (dirty) or without (NULL: the CPU diff). The diff runs outside
 * the lock, against a reference to the frame presented before. */
static int present_external(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                            const uint8_t *dirty, uint32_t tiles_x, uint32_t tiles_y) {
    pthread_mutex_lock(&c->mu);
    rc_frame_buf *fb = take_external_locked(c, img, release, arg);
    if (!fb) {
        int r = c->closing ? RCANVAS_ECLOSED : RCANVAS_EBUSY;
        if (dirty) rc_damage_carry_locked(c, img, dirty, tiles_x, tiles_y); /* the next frame's bitmap needs it */
        pthread_mutex_unlock(&c->mu);
        release(arg);
        return r;
    }
    rc_frame_buf *prev = dirty ? NULL : rc_damage_present_begin(c);
    pthread_mutex_unlock(&c->mu);
    rc_damage_compute(fb, prev, dirty, tiles_x, tiles_y);
    pthread_mutex_lock(&c->mu);
    rc_frame_release_locked(prev);
    if (c->closing) {
        rc_frame_release_locked(fb); /* releases the pixels */
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_ECLOSED;
    }
    publish_locked(c, fb);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

int rc_canvas_present_external(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg) {
    return present_external(c, img, release, arg, NULL, 0, 0);
}

int rc_canvas_present_external_damage(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                                      const uint8_t *dirty, uint32_t tiles_x, uint32_t tiles_y) {
    if (dirty && (tiles_x != rc_damage_tiles(img->width) || tiles_y != rc_damage_tiles(img->height)))
        dirty = NULL; /* not this frame's grid: the CPU diff */
    return present_external(c, img, release, arg, dirty, tiles_x, tiles_y);
}

void rc_canvas_release_external(rcanvas_canvas *c) {
    pthread_mutex_lock(&c->mu);
    if (c->pending && c->pending->ext_release) {
        rc_frame_release_locked(c->pending);
        c->pending = NULL;
    }
    /* a running encode may start the next pending frame: wait until the pipeline is empty of external frames */
    while (c->encoding || c->refine_running || rc_canvas_tiers_busy_locked(c) ||
           (c->pending && c->pending->ext_release)) {
        if (c->pending && c->pending->ext_release) {
            rc_frame_release_locked(c->pending);
            c->pending = NULL;
        }
        if (c->encoding || c->refine_running || rc_canvas_tiers_busy_locked(c)) pthread_cond_wait(&c->cv, &c->mu);
    }
    if (c->last && c->last->ext_release) {
        rc_frame_release_locked(c->last);
        c->last = NULL;
    }
    pthread_mutex_unlock(&c->mu);
}

/* 1 if a packet of `codec`, coded at `quality`, may serve a frame like img as the canvas's only live packet: the
 * one tier in use is that codec's (a JPEG canvas whose viewers all decode JPEG), nothing is encoding, its steering
 * asks for the full size and rate and at least that quality (the configured quality before it has steered), and
 * the frame is not one that goes out lossless for its size (rc_tier_small_lossless_locked). Otherwise the frame
 * goes through the CPU pipeline, which encodes every tier at its own settings. mu held. */
static int encoded_fits_locked(const rcanvas_canvas *c, const rc_codec_type *codec, const rc_image *img, int quality) {
    const rc_tier *t = &c->tiers[0];
    if (!t->codec || t->codec->wire_id != codec->wire_id || c->encoding || rc_canvas_tiers_busy_locked(c) ||
        c->codec_change_pending || c->closing || rc_canvas_small_frame_locked(c, img))
        return 0;
    for (int i = 1; i < RC_MAX_TIERS; i++)
        if (c->tiers[i].nsessions) return 0;
    const rc_steer *st = &t->steer;
    if (quality > c->params.quality) return 0; /* more than the canvas is configured for: its link was not asked */
    return !st->scale_div || (st->scale_div == 1 && !(st->fps_cap > 0) && st->quality >= quality);
}

/* One packet holding `data` as one tile, the whole frame (filled outside the lock), or NULL (out of memory). */
static rc_packet *encoded_packet(rcanvas_canvas *c, const rc_codec_type *codec, const void *data, size_t len,
                                 uint32_t w, uint32_t h) {
    rc_packet *pk = len <= UINT32_MAX ? rc_packet_get(c->packets) : NULL;
    if (!pk || rc_buf_reserve(&pk->tiles[0].data, len)) {
        rc_packet_unref(pk);
        return NULL;
    }
    memcpy(rc_buf_data(&pk->tiles[0].data), data, len);
    pk->tiles[0].data.len = len;
    pk->tiles[0].x = pk->tiles[0].y = 0;
    pk->tiles[0].w = w;
    pk->tiles[0].h = h;
    pk->ntiles = 1;
    pk->total_bytes = len;
    pk->codec = codec;
    pk->flags = RC_PACKET_KEYFRAME | ((codec->flags & RC_CODEC_LOSSLESS) ? RC_PACKET_LOSSLESS : 0);
    pk->width = w;
    pk->height = h;
    return pk;
}

/* fb (refs = 1, img set: its pixels, or NULL for a frame that came without them) becomes `last` with pk as the
 * first tier's newest packet, as if the CPU pipeline had encoded it: counted, the pending frame it overtakes
 * dropped, the steering taught by its size at the quality it was coded at (as rc_tier_learn does, tier.c,
 * for the CPU pipeline), viewers woken. mu held. */
static void publish_encoded_locked(rcanvas_canvas *c, rc_frame_buf *fb, rc_packet *pk, int quality) {
    int64_t now = rc_now_us();
    rc_tier *t = &c->tiers[0];
    stamp_locked(c, fb, now);
    note_size_locked(c, fb->img.width, fb->img.height);
    pk->seq = fb->seq;
    pk->present_us = now;
    c->counters.presented++;
    c->counters.encoded++; /* encoded by its source */
    if (c->pending) { /* an older frame waiting for the CPU encoder: never encoded */
        c->counters.dropped++;
        rc_frame_release_locked(c->pending);
        c->pending = NULL;
    }
    /* the steering learns from its size as from a frame of its own (rc_tier_budget_locked, then rc_steer_image) */
    rc_tier_steer_init_locked(c, t);
    t->budget_bps = t->nsessions && c->rate_adapt ? rc_tier_budget_locked(c, 0) : RC_LINK_MAX_BPS;
    if (!(pk->codec->flags & RC_CODEC_LOSSLESS) && quality > 0) {
        t->steer.quality = quality; /* rc_steer_image reads the bytes as coded at s->quality */
        rc_steer_image(&t->steer, c->params.quality, t->budget_bps, rc_canvas_fps_goal_locked(c),
                       (uint64_t)pk->width * pk->height, pk->total_bytes);
    }
    rc_packet *old_latest = t->latest, *old_refined = c->refined;
    t->latest = pk;
    t->keyframe_requested = 0; /* it has the newest frame, decodable alone */
    c->latest_seq = pk->seq;
    c->refined = NULL;
    fb->dmg_base = 0;
    rc_damage_commit_locked(c, fb, 1); /* sent whole */
    rc_frame_release_locked(c->last);
    c->last = fb; /* the source of the lossless refinement (once it has pixels) */
    rc_packet_unref(old_latest);
    rc_packet_unref(old_refined);
    rc_canvas_notify_locked(c);
    pthread_cond_broadcast(&c->cv);
}

int rc_canvas_present_external_encoded(rcanvas_canvas *c, const rc_image *img, void (*release)(void *), void *arg,
                                       const rc_codec_type *codec, const uint8_t *data, size_t len) {
    pthread_mutex_lock(&c->mu);
    int only = encoded_fits_locked(c, codec, img, c->params.quality); /* the GPU encoder codes at the top */
    pthread_mutex_unlock(&c->mu);
    if (!only) return rc_canvas_present_external(c, img, release, arg);
    rc_packet *pk = encoded_packet(c, codec, data, len, img->width, img->height);
    if (!pk) {
        release(arg);
        return RCANVAS_ENOMEM;
    }
    pthread_mutex_lock(&c->mu);
    if (!encoded_fits_locked(c, codec, img, c->params.quality)) { /* a viewer or a codec change came in between */
        pthread_mutex_unlock(&c->mu);
        rc_packet_unref(pk);
        return rc_canvas_present_external(c, img, release, arg);
    }
    rc_frame_buf *fb = take_external_locked(c, img, release, arg);
    if (!fb) {
        int r = c->closing ? RCANVAS_ECLOSED : RCANVAS_EBUSY;
        pthread_mutex_unlock(&c->mu);
        rc_packet_unref(pk);
        release(arg);
        return r;
    }
    publish_encoded_locked(c, fb, pk, c->params.quality); /* the GPU encoder codes at the configured quality */
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

/* ---- frames the app encoded (rcanvas_present_encoded) ---- */

int rcanvas_present_encoded(rcanvas_canvas *c, const rcanvas_encoded_frame *f) {
    if (!c || !f || !f->data) return RCANVAS_EINVAL;
    if (f->codec != RCANVAS_CODEC_JPEG || f->quality < 1 || f->quality > 100 || f->size < 4 ||
        f->size > ((size_t)256 << 20))
        return RCANVAS_EINVAL;
    const rc_codec_type *codec = &rc_codec_jpeg_app;
    if (f->encoder) {
        if (strcmp(f->encoder, rc_codec_jpeg_wgpu.name)) return RCANVAS_EINVAL;
        codec = &rc_codec_jpeg_wgpu;
    }
    uint32_t maxd = c->env.max_frame_dim;
    if (f->width == 0 || f->height == 0 || f->width > maxd || f->height > maxd || f->width > 65500 ||
        f->height > 65500)
        return RCANVAS_EFRAME_SIZE;
    if (!rc_jpeg_check_baseline(f->data, f->size, f->width, f->height)) return RCANVAS_EDATA;
    rc_image img = {.pixels = NULL, .width = f->width, .height = f->height, .pitch = 0, .format = RCANVAS_FORMAT_RGBA8};
    pthread_mutex_lock(&c->mu);
    int fits = encoded_fits_locked(c, codec, &img, f->quality);
    int closing = c->closing;
    pthread_mutex_unlock(&c->mu);
    if (closing) return RCANVAS_ECLOSED;
    if (!fits) return RCANVAS_ENOTUSED;
    rc_packet *pk = encoded_packet(c, codec, f->data, f->size, f->width, f->height);
    if (!pk) return RCANVAS_ENOMEM;
    pthread_mutex_lock(&c->mu);
    int r = RCANVAS_OK;
    rc_frame_buf *fb = NULL;
    if (c->closing) r = RCANVAS_ECLOSED;
    else if (!encoded_fits_locked(c, codec, &img, f->quality)) r = RCANVAS_ENOTUSED; /* changed in between */
    else {
        for (int i = 0; i < RC_FRAME_BUFS && !fb; i++)
            if (c->frames[i].refs == 0) fb = &c->frames[i];
        if (!fb) r = RCANVAS_EBUSY;
    }
    if (r != RCANVAS_OK) {
        pthread_mutex_unlock(&c->mu);
        rc_packet_unref(pk);
        return r;
    }
    fb->refs = 1;
    fb->img = img; /* no pixels: rcanvas_present_pixels() brings them when they are needed */
    if (c->source_codec != codec) { /* viewers are told the encoder ("encoder" message, stats) */
        c->source_codec = codec;
        c->pixels_wanted_seq = c->pixels_woken_seq = 0;
    }
    publish_encoded_locked(c, fb, pk, f->quality);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

int rc_canvas_want_pixels_locked(rcanvas_canvas *c, rc_frame_buf *fb) {
    if (fb->img.pixels) return 1;
    if (c->pixels_wanted_seq != fb->seq) {
        c->pixels_wanted_seq = fb->seq;
        pthread_cond_broadcast(&c->cv); /* rcanvas_wait returns RCANVAS_WAKE_PIXELS */
    }
    return 0;
}

int rcanvas_present_pixels(rcanvas_canvas *c, const rcanvas_frame *f) {
    if (!c || !f) return RCANVAS_EINVAL;
    if (!f->pixels) return RCANVAS_ENULL;
    unsigned bpp = rc_format_bpp(f->format);
    if (!bpp) return RCANVAS_EFORMAT;
    size_t row = (size_t)f->width * bpp;
    if (f->pitch < row) return RCANVAS_EPITCH;
    pthread_mutex_lock(&c->mu);
    rc_frame_buf *fb = c->last;
    int r = c->closing ? RCANVAS_ECLOSED
            : !fb || fb->img.pixels || fb->seq != c->presented_seq ? RCANVAS_ESTALE
            : f->width != fb->img.width || f->height != fb->img.height ? RCANVAS_EFRAME_SIZE
                                                                        : RCANVAS_OK;
    if (r == RCANVAS_OK) fb->refs++; /* held while its pixels are copied in, outside the lock */
    pthread_mutex_unlock(&c->mu);
    if (r != RCANVAS_OK) return r;
    size_t need = row * f->height;
    uint8_t *p = fb->cap >= need ? fb->pixels : realloc(fb->pixels, need);
    if (p) { /* no other thread reads fb->pixels while img.pixels is NULL */
        fb->pixels = p;
        if (fb->cap < need) fb->cap = need;
        const uint8_t *src = f->pixels;
        if (f->pitch == row) memcpy(p, src, need);
        else
            for (uint32_t y = 0; y < f->height; y++) memcpy(p + y * row, src + y * f->pitch, row);
    }
    pthread_mutex_lock(&c->mu);
    if (p) {
        fb->img.pixels = fb->pixels;
        fb->img.pitch = row;
        fb->img.format = f->format;
        rc_canvas_notify_locked(c); /* the tick starts what waited for them (refinement, a tier's keyframe) */
    }
    rc_frame_release_locked(fb);
    pthread_mutex_unlock(&c->mu);
    return p ? RCANVAS_OK : RCANVAS_ENOMEM;
}
