/* SPDX-License-Identifier: MIT */
/*
 * damage.c — damage tracking (see damage.h): tile diffs, the history of encoded frames, the rectangles of a
 * partial packet, and the canvas's hooks that choose a packet's base and keep each viewer's lossless state.
 */
#include "stream/damage.h"

#include <stdlib.h>
#include <string.h>

#include "stream/canvas_internal.h"

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

static int copy_map(rc_damage_map *dst, const rc_damage_map *src) {
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

/* out = the damage of frame `upto` (a `last` frame) against frame `since`: the union of the history in
 * (since, upto]. `all` when the history does not reach back that far (or since is no frame encoded before). */
static void hist_union(rc_damage_state *d, uint32_t since, uint32_t upto, rc_damage_map *out) {
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
static uint32_t hist_oldest_base(rc_damage_state *d, uint32_t upto) {
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
static uint32_t hist_newest(rc_damage_state *d) { return d->n ? hist_at(d, d->n - 1)->seq : 0; }

/* An anchor at frame `since` (a frame a viewer now holds lossless), if the history can seed it. Replaces one no
 * viewer holds lossless any more, else the oldest. */
static void anchor_make(rcanvas_canvas *c, uint32_t since) {
    rc_damage_state *d = &c->damage;
    uint32_t upto = hist_newest(d);
    if (!since || !upto || since > upto) return;
    rc_damage_anchor *a = NULL;
    for (int i = 0; i < RC_DAMAGE_ANCHORS; i++)
        if (d->anchors[i].since == since) return; /* there is one */
    for (int i = 0; i < RC_DAMAGE_ANCHORS && !a; i++) {
        rc_damage_anchor *x = &d->anchors[i];
        int held = 0;
        for (rc_session *s = c->sessions; s && x->since && !held; s = s->next) held = s->lossless_seq == x->since;
        if (!held) a = x;
    }
    for (int i = 0; i < RC_DAMAGE_ANCHORS && !a; i++)
        if (!a || d->anchors[i].since < a->since) a = &d->anchors[i];
    if (!a) a = &d->anchors[0];
    rc_damage_entry *e = hist_at(d, d->n - 1);
    a->since = 0;
    if (rc_damage_map_reset(&a->map, e->map.tiles_x * RC_DAMAGE_TILE, e->map.tiles_y * RC_DAMAGE_TILE)) return;
    hist_union(d, since, upto, &a->map);
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

void rc_damage_state_free(rc_damage_state *d) {
    for (int i = 0; i < RC_DAMAGE_HISTORY; i++) rc_damage_map_free(&d->hist[i].map);
    for (int i = 0; i < RC_DAMAGE_ANCHORS; i++) rc_damage_map_free(&d->anchors[i].map);
    rc_damage_map_free(&d->scratch);
    rc_damage_map_free(&d->carry);
}

/* ---- frames in ---- */

rc_frame_buf *rc_damage_present_begin(rcanvas_canvas *c) {
    rc_frame_buf *p = c->pending ? c->pending : c->encoding ? c->encoding : c->last;
    if (p) p->refs++;
    return p;
}

void rc_damage_compute(rc_frame_buf *fb, const rc_frame_buf *prev, const uint8_t *dirty, uint32_t tiles_x,
                       uint32_t tiles_y) {
    fb->dmg_from_source = 0;
    fb->dmg_base = prev ? prev->seq : 0;
    if (rc_damage_map_reset(&fb->dmg, fb->img.width, fb->img.height)) return; /* out of memory: all */
    if (dirty && tiles_x == fb->dmg.tiles_x && tiles_y == fb->dmg.tiles_y) {
        memcpy(fb->dmg.bits, dirty, (size_t)tiles_x * tiles_y);
        fb->dmg_from_source = 1; /* against the source's previous frame: dmg_base is set when published */
        return;
    }
    /* a frame that came encoded without its pixels (rcanvas_present_encoded) has nothing to compare with */
    if (!prev || !prev->img.pixels || rc_damage_diff(&fb->img, &prev->img, fb->dmg.bits) < 0) fb->dmg.all = 1;
}

void rc_damage_carry_locked(rcanvas_canvas *c, const rc_image *img, const uint8_t *dirty, uint32_t tiles_x,
                            uint32_t tiles_y) {
    rc_damage_state *d = &c->damage;
    rc_damage_map m = {0};
    int ok = dirty && tiles_x == rc_damage_tiles(img->width) && tiles_y == rc_damage_tiles(img->height);
    if (!d->have_carry) {
        if (rc_damage_map_reset(&d->carry, img->width, img->height) == RCANVAS_OK && ok)
            memcpy(d->carry.bits, dirty, (size_t)tiles_x * tiles_y);
        else d->carry.all = 1;
        d->have_carry = 1;
        return;
    }
    if (!ok) {
        d->carry.all = 1;
        return;
    }
    m.bits = (uint8_t *)dirty; /* read only */
    m.tiles_x = tiles_x;
    m.tiles_y = tiles_y;
    rc_damage_map_or(&d->carry, &m);
}

void rc_damage_publish_locked(rcanvas_canvas *c, rc_frame_buf *fb) {
    rc_damage_state *d = &c->damage;
    if (fb->dmg_from_source) {
        fb->dmg_base = c->presented_seq; /* the source's previous frame */
        if (d->have_carry) rc_damage_map_or(&fb->dmg, &d->carry);
    }
    d->have_carry = 0;
    rc_frame_buf *p = c->pending; /* replaced, never encoded: its damage becomes part of fb's */
    if (p) {
        if (fb->dmg_base == p->seq) {
            rc_damage_map_or(&fb->dmg, &p->dmg);
            fb->dmg_base = p->dmg_base;
        } else {
            fb->dmg.all = 1;
        }
    }
}

int rc_damage_resolve_locked(rcanvas_canvas *c, rc_frame_buf *fb) {
    rc_damage_state *d = &c->damage;
    rc_frame_buf *l = c->last;
    if (!l || l->img.width != fb->img.width || l->img.height != fb->img.height || l->img.format != fb->img.format ||
        d->resized) {
        fb->dmg.all = 1;
    } else if (fb->dmg_base != l->seq && !(fb->dmg_base == d->skip_seq && d->skip_base == l->seq)) {
        fb->dmg.all = 1; /* against a frame that is gone (a failed encode): unknown */
    }
    d->resized = 0;
    fb->dmg_base = l ? l->seq : 0;
    return !fb->dmg.all && rc_damage_map_count(&fb->dmg) == 0;
}

void rc_damage_skip_locked(rcanvas_canvas *c, rc_frame_buf *fb) {
    rc_damage_state *d = &c->damage;
    d->skip_seq = fb->seq;
    d->skip_base = c->last->seq;
    d->skipped++;
    c->last_present_us = c->last->present_us; /* still since then: the refinement is not put off */
    for (int i = 0; i < RC_MAX_TIERS; i++) {
        rc_tier *t = &c->tiers[i];
        if (t->codec && t->nsessions && !t->busy && (!t->latest || t->latest->seq < c->last->seq))
            rc_canvas_request_keyframe_locked(c, t); /* its encode of last failed: encode it again */
    }
}

uint32_t rc_damage_done_locked(const rcanvas_canvas *c, uint32_t done) {
    const rc_damage_state *d = &c->damage;
    return d->skip_seq > done && done >= d->skip_base ? d->skip_seq : done;
}

void rc_damage_commit_locked(rcanvas_canvas *c, rc_frame_buf *fb, int whole) {
    rc_damage_state *d = &c->damage;
    rc_damage_entry *e;
    if (d->n < RC_DAMAGE_HISTORY) e = hist_at(d, d->n++);
    else {
        e = hist_at(d, 0);
        d->head = (d->head + 1) % RC_DAMAGE_HISTORY;
    }
    e->seq = fb->seq;
    e->prev_seq = c->last ? c->last->seq : 0;
    if (whole || fb->dmg_base != e->prev_seq || !e->prev_seq) {
        e->map.all = 1;
        e->map.tiles_x = rc_damage_tiles(fb->img.width); /* the grid, for what follows (anchors) */
        e->map.tiles_y = rc_damage_tiles(fb->img.height);
    } else {
        copy_map(&e->map, &fb->dmg);
    }
    anchors_add(d, e);
}

/* ---- packets ---- */

static int tier_index(const rcanvas_canvas *c, const rc_tier *t) { return (int)(t - c->tiers); }

void rc_damage_plan_live_locked(rcanvas_canvas *c, rc_tier *t, rc_frame_buf *fb, int whole, rc_packet *pk,
                                rc_encode_task *task) {
    rc_damage_state *d = &c->damage;
    task->nrects = 0;
    pk->base_seq = 0;
    rc_frame_buf *l = c->last;
    if (whole || !l) return;
    if (fb != l && (fb->dmg.all || fb->dmg_base != l->seq)) return; /* its damage against last is unknown */
    /* the base: the oldest picture among the tier's visible viewers, as far back as the history reaches; a
     * viewer further behind (or new: 0) makes it whole; hidden ones get a whole frame when they are back */
    uint32_t oldest = hist_oldest_base(d, l->seq), base = UINT32_MAX;
    int ti = tier_index(c, t);
    for (rc_session *s = c->sessions; s; s = s->next) {
        if (s->tier != ti || !s->visible) continue;
        if (s->given_seq == 0 || s->need_keyframe) return; /* new: a whole frame for it (for all) */
        if (s->given_seq < oldest) continue;               /* beyond the history: it asks for a whole one */
        if (s->given_seq < base) base = s->given_seq;
    }
    if (base == UINT32_MAX || base > l->seq) return;
    rc_damage_map *u = &d->scratch;
    /* fb against last (none when fb is last: a tier catching up on it), then the history back to base */
    if (fb == l ? rc_damage_map_reset(u, fb->img.width, fb->img.height) : copy_map(u, &fb->dmg)) return;
    hist_union(d, base, l->seq, u);
    int n = rc_damage_rects(u, fb->img.width, fb->img.height, task->rects, RC_MAX_TILES);
    if (n <= 0) return;
    task->nrects = n;
    pk->base_seq = base;
}

long rc_damage_refine_base_locked(rcanvas_canvas *c, const rc_codec_type *codec) {
    rc_frame_buf *l = c->last;
    if (!l) return -1;
    uint32_t L = l->seq, base = UINT32_MAX;
    int need = 0;
    for (rc_session *s = c->sessions; s; s = s->next) {
        if (s->tier < 0 || !rc_session_decodes(s, codec)) continue;
        uint32_t k = s->lossless_seq, cand;
        const rc_packet *tl = c->tiers[s->tier].latest;
        if (s->given_seq == L) {
            if (k == L) continue; /* lossless already */
            cand = k;
        } else if (tl && tl->seq == L && s->given_seq < L) { /* it will get L: as what? */
            if (tl->flags & RC_PACKET_LOSSLESS) {
                if (!tl->base_seq || (k && k >= tl->base_seq)) continue;
                cand = k;
            } else {
                uint32_t b = tl->base_seq; /* it fits: min(k, b), as rc_damage_given_locked; else a whole frame */
                cand = b && s->given_seq && s->given_seq >= b ? (k < b ? k : b) : 0;
            }
        } else {
            continue; /* its tier has no packet of L: nothing to draw a refinement of L over */
        }
        need = 1;
        if (cand < base) base = cand;
    }
    if (!need) return -1;
    const rc_packet *r = c->refined;
    if (r && r->seq == L && (!r->base_seq || r->base_seq <= base)) return -1; /* the one made serves them */
    return base;
}

void rc_damage_plan_refine_locked(rcanvas_canvas *c, uint32_t base, rc_packet *pk, rc_encode_task *task) {
    rc_damage_state *d = &c->damage;
    task->nrects = 0;
    pk->base_seq = 0;
    rc_frame_buf *l = c->last;
    if (!base || !l || base >= l->seq) return;
    rc_damage_map *u = &d->scratch;
    if (rc_damage_map_reset(u, l->img.width, l->img.height)) return;
    hist_union(d, base, l->seq, u);
    int n = rc_damage_rects(u, l->img.width, l->img.height, task->rects, RC_MAX_TILES);
    if (n <= 0) return;
    task->nrects = n;
    pk->base_seq = base;
}

/* ---- viewers ---- */

int rc_damage_fits(const rc_session *s, const rc_packet *pk) {
    if (!pk->base_seq) return 1;
    if (pk->flags & RC_PACKET_REFINE) return s->lossless_seq && s->lossless_seq >= pk->base_seq;
    return s->given_seq && s->given_seq >= pk->base_seq && s->given_seq < pk->seq;
}

void rc_damage_given_locked(rcanvas_canvas *c, rc_session *s, const rc_packet *pk) {
    /* its picture is lossless except the tiles dirty in (lossless_seq, given_seq] */
    if (pk->flags & RC_PACKET_LOSSLESS) {
        if (!pk->base_seq || (s->lossless_seq && s->lossless_seq >= pk->base_seq)) {
            s->lossless_seq = pk->seq;
            anchor_make(c, pk->seq); /* its next refinement: the tiles changed since, however many frames */
        }
    } else if (pk->base_seq < s->lossless_seq) {
        s->lossless_seq = pk->base_seq; /* lossy tiles over tiles it had lossless */
    }
    /* it has the newest frame lossy and the refinement made does not fit it: the canvas's tick makes one that
     * does (the network thread runs it on this wake-up) */
    const rc_packet *r = c->refined;
    if (!(pk->flags & RC_PACKET_LOSSLESS) && r && r->seq == pk->seq && !rc_damage_fits(s, r))
        rc_canvas_notify_locked(c);
}
