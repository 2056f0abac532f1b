/* SPDX-License-Identifier: MIT */
/*
 * damage.c — damage tracking's data (see damage.h): dirty-tile bitmaps, tile diffs, the rectangles of a partial
 * packet, the history of encoded frames and its anchors. A leaf: it knows no canvas (the canvas's hooks that use
 * it are canvas_damage.c).
 */
#include "stream/damage.h"

#include <stdlib.h>
#include <string.h>


/* ---- bitmaps ---- */

int rc_damage_map_reset(rc_damage_map *m, uint32_t width, uint32_t height) {
    uint32_t tx = rc_damage_tiles(width), ty = rc_damage_tiles(height);
    size_t n = (size_t)tx * ty;
    if (n > m->cap) {
        uint8_t *b = realloc(m->bits, n);
        if (!b) {
            m->all = 1;
            return RCANVAS_ENOMEM;
        }
        m->bits = b;
        m->cap = n;
    }
    m->tiles_x = tx;
    m->tiles_y = ty;
    m->all = 0;
    if (n) memset(m->bits, 0, n);
    return RCANVAS_OK;
}

void rc_damage_map_set_all(rc_damage_map *m) { m->all = 1; }

void rc_damage_map_or(rc_damage_map *dst, const rc_damage_map *src) {
    if (dst->all) return;
    if (src->all || src->tiles_x != dst->tiles_x || src->tiles_y != dst->tiles_y) {
        dst->all = 1;
        return;
    }
    size_t n = (size_t)dst->tiles_x * dst->tiles_y;
    for (size_t i = 0; i < n; i++) dst->bits[i] |= src->bits[i];
}

size_t rc_damage_map_count(const rc_damage_map *m) {
    size_t n = (size_t)m->tiles_x * m->tiles_y;
    if (m->all) return n;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += m->bits[i] != 0;
    return k;
}

void rc_damage_map_free(rc_damage_map *m) {
    free(m->bits);
    memset(m, 0, sizeof(*m));
}

int rc_damage_map_copy(rc_damage_map *dst, const rc_damage_map *src) {
    if (src->all) { /* the grid too: what is ORed into it later must match */
        dst->all = 1;
        dst->tiles_x = src->tiles_x;
        dst->tiles_y = src->tiles_y;
        return RCANVAS_OK;
    }
    size_t n = (size_t)src->tiles_x * src->tiles_y;
    if (n > dst->cap) {
        uint8_t *b = realloc(dst->bits, n);
        if (!b) {
            dst->all = 1;
            return RCANVAS_ENOMEM;
        }
        dst->bits = b;
        dst->cap = n;
    }
    if (n) memcpy(dst->bits, src->bits, n);
    dst->tiles_x = src->tiles_x;
    dst->tiles_y = src->tiles_y;
    dst->all = 0;
    return RCANVAS_OK;
}

/* ---- the diff ---- */

long rc_damage_diff(const rc_image *now, const rc_image *before, uint8_t *dirty) {
    if (now->width != before->width || now->height != before->height || now->format != before->format) return -1;
    unsigned bpp = rc_format_bpp(now->format);
    if (!bpp) return -1;
    uint32_t w = now->width, h = now->height;
    uint32_t tx = rc_damage_tiles(w), ty = rc_damage_tiles(h);
    long count = 0;
    for (uint32_t j = 0; j < ty; j++) {
        uint8_t *row_bits = dirty + (size_t)j * tx;
        memset(row_bits, 0, tx);
        uint32_t y0 = j * RC_DAMAGE_TILE, y1 = y0 + RC_DAMAGE_TILE < h ? y0 + RC_DAMAGE_TILE : h;
        uint32_t clean = tx; /* tiles of this band not found dirty yet */
        /* row by row across the band (the memory order of both images), each tile until its first difference */
        for (uint32_t y = y0; y < y1 && clean > 0; y++) {
            const uint8_t *a = now->pixels + (size_t)y * now->pitch;
            const uint8_t *b = before->pixels + (size_t)y * before->pitch;
            for (uint32_t i = 0; i < tx; i++) {
                if (row_bits[i]) continue;
                uint32_t x0 = i * RC_DAMAGE_TILE, x1 = x0 + RC_DAMAGE_TILE < w ? x0 + RC_DAMAGE_TILE : w;
                size_t off = (size_t)x0 * bpp, len = (size_t)(x1 - x0) * bpp;
                if (memcmp(a + off, b + off, len) != 0) {
                    row_bits[i] = 1;
                    clean--;
                    count++;
                }
            }
        }
    }
    return count;
}

/* ---- rectangles ---- */

int rc_damage_rects(const rc_damage_map *m, uint32_t width, uint32_t height, rc_rect *rects, int max) {
    if (m->all || m->tiles_x != rc_damage_tiles(width) || m->tiles_y != rc_damage_tiles(height)) return -1;
    size_t total = (size_t)m->tiles_x * m->tiles_y, dirty = rc_damage_map_count(m);
    if (dirty * 100 > total * RC_DAMAGE_MAX_PERCENT) return -1;
    int n = 0;
    int prev_first = 0, prev_n = 0; /* the rectangles that end on the tile row above: rects[prev_first ..) */
    for (uint32_t j = 0; j < m->tiles_y; j++) {
        const uint8_t *row = m->bits + (size_t)j * m->tiles_x;
        int row_first = n;
        uint32_t y = j * RC_DAMAGE_TILE, hh = height - y < RC_DAMAGE_TILE ? height - y : RC_DAMAGE_TILE;
        for (uint32_t i = 0; i < m->tiles_x;) {
            if (!row[i]) {
                i++;
                continue;
            }
            uint32_t i1 = i;
            while (i1 < m->tiles_x && row[i1]) i1++;
            uint32_t x = i * RC_DAMAGE_TILE, x1 = i1 * RC_DAMAGE_TILE < width ? i1 * RC_DAMAGE_TILE : width;
            /* the same columns dirty on the row above: that rectangle grows down instead */
            int merged = 0;
            for (int k = prev_first; k < prev_first + prev_n; k++) {
                rc_rect *r = &rects[k];
                if (r->x == x && r->w == x1 - x && r->y + r->h == y) {
                    r->h += hh;
                    /* it now ends on this row: keep it among this row's rectangles */
                    rc_rect t = *r;
                    memmove(r, r + 1, (size_t)(n - k - 1) * sizeof *r);
                    rects[n - 1] = t;
                    prev_n--;
                    row_first--;
                    merged = 1;
                    break;
                }
            }
            if (!merged) {
                if (n == max) return -1;
                rects[n++] = (rc_rect){x, y, x1 - x, hh};
            }
            i = i1;
        }
        prev_first = row_first;
        prev_n = n - row_first;
    }
    return n;
}

/* ---- history of encoded frames ---- */

static rc_damage_entry *hist_at(rc_damage_state *d, int i) { /* i-th oldest */
    return &d->hist[(d->head + i) % RC_DAMAGE_HISTORY];
}
static const rc_damage_entry *hist_at_c(const rc_damage_state *d, int i) {
    return &d->hist[(d->head + i) % RC_DAMAGE_HISTORY];
}

/* out = the damage of frame `upto` (a `last` frame) against frame `since`: the union of the history in
 * (since, upto]. `all` when the history does not reach back that far (or since is no frame encoded before). */
void rc_damage_hist_union(rc_damage_state *d, uint32_t since, uint32_t upto, rc_damage_map *out) {
    if (since == upto) return; /* out stays as it is */
    if (since > upto || since == 0) {
        out->all = 1;
        return;
    }
    for (int i = 0; i < RC_DAMAGE_ANCHORS; i++) {
        rc_damage_anchor *a = &d->anchors[i];
        if (a->since == since && a->upto == upto) {
            rc_damage_map_or(out, &a->map);
            return;
        }
    }
    uint32_t want = upto;
    for (int i = d->n - 1; i >= 0 && !out->all; i--) {
        rc_damage_entry *e = hist_at(d, i);
        if (e->seq != want) break; /* a gap: the chain is broken */
        rc_damage_map_or(out, &e->map);
        if (e->prev_seq == since) return;
        if (e->prev_seq < since || e->prev_seq == 0) break;
        want = e->prev_seq;
    }
    out->all = 1;
}

/* The oldest base hist_union can serve up to `upto` (a packet for a viewer at an older frame is whole). */
uint32_t rc_damage_hist_oldest_base(rc_damage_state *d, uint32_t upto) {
    uint32_t want = upto, base = upto;
    for (int i = d->n - 1; i >= 0; i--) {
        rc_damage_entry *e = hist_at(d, i);
        if (e->seq != want || e->map.all || e->prev_seq == 0) break;
        base = e->prev_seq;
        want = e->prev_seq;
    }
    return base;
}

/* The newest frame in the history (0: none). */
uint32_t rc_damage_hist_newest(const rc_damage_state *d) { return d->n ? hist_at_c(d, d->n - 1)->seq : 0; }


void rc_damage_anchor_make(rc_damage_state *d, uint32_t since, int (*held)(void *ctx, uint32_t since), void *ctx) {
    uint32_t upto = rc_damage_hist_newest(d);
    if (!since || !upto || since > upto) return;
    rc_damage_anchor *a = NULL;
    for (int i = 0; i < RC_DAMAGE_ANCHORS; i++)
        if (d->anchors[i].since == since) return; /* there is one */
    for (int i = 0; i < RC_DAMAGE_ANCHORS && !a; i++) {
        rc_damage_anchor *x = &d->anchors[i];
        if (!x->since || !held(ctx, x->since)) a = x;
    }
    for (int i = 0; i < RC_DAMAGE_ANCHORS && !a; i++)
        if (!a || d->anchors[i].since < a->since) a = &d->anchors[i];
    if (!a) a = &d->anchors[0];
    rc_damage_entry *e = hist_at(d, d->n - 1);
    a->since = 0;
    if (rc_damage_map_reset(&a->map, e->map.tiles_x * RC_DAMAGE_TILE, e->map.tiles_y * RC_DAMAGE_TILE)) return;
    rc_damage_hist_union(d, since, upto, &a->map);
    if (a->map.all) return; /* beyond the history */
    a->since = since;
    a->upto = upto;
}

/* A frame entered the history: every anchor takes its damage too (one that becomes `all` is of no use). */
static void anchors_add(rc_damage_state *d, const rc_damage_entry *e) {
    for (int i = 0; i < RC_DAMAGE_ANCHORS; i++) {
        rc_damage_anchor *a = &d->anchors[i];
        if (!a->since) continue;
        if (a->upto != e->prev_seq) a->map.all = 1; /* a gap */
        else rc_damage_map_or(&a->map, &e->map);
        a->upto = e->seq;
        if (a->map.all) a->since = 0;
    }
}

void rc_damage_hist_push(rc_damage_state *d, uint32_t seq, uint32_t prev_seq, int whole, const rc_damage_map *dmg,
                         uint32_t width, uint32_t height) {
    rc_damage_entry *e;
    if (d->n < RC_DAMAGE_HISTORY) e = hist_at(d, d->n++);
    else {
        e = hist_at(d, 0);
        d->head = (d->head + 1) % RC_DAMAGE_HISTORY;
    }
    e->seq = seq;
    e->prev_seq = prev_seq;
    if (whole || !e->prev_seq) {
        e->map.all = 1;
        e->map.tiles_x = rc_damage_tiles(width); /* the grid, for what follows (anchors) */
        e->map.tiles_y = rc_damage_tiles(height);
    } else {
        rc_damage_map_copy(&e->map, dmg);
    }
    anchors_add(d, e);
}

void rc_damage_state_free(rc_damage_state *d) {
    for (int i = 0; i < RC_DAMAGE_HISTORY; i++) rc_damage_map_free(&d->hist[i].map);
    for (int i = 0; i < RC_DAMAGE_ANCHORS; i++) rc_damage_map_free(&d->anchors[i].map);
    rc_damage_map_free(&d->scratch);
    rc_damage_map_free(&d->carry);
}

