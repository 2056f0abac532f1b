/* SPDX-License-Identifier: MIT */
/*
 * canvas_damage.c — the canvas's damage hooks (damage.h's second half): each presented frame's damage, the frames
 * skipped as identical, the history kept as frames become `last`, the base and rectangles of each packet, and each
 * viewer's lossless state. Under the canvas's mutex unless said otherwise; the data structures are damage.c's.
 */
#include "stream/canvas_damage.h"

#include <stdlib.h>
#include <string.h>

#include "stream/canvas_internal.h"

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
        if (t->codec && t->nsessions && !rc_tier_busy(t) && (!t->latest || t->latest->seq < c->last->seq))
            rc_tier_request_keyframe_locked(c, t); /* its encode of last failed: encode it again */
    }
}

uint32_t rc_damage_done_locked(const rcanvas_canvas *c, uint32_t done) {
    const rc_damage_state *d = &c->damage;
    return d->skip_seq > done && done >= d->skip_base ? d->skip_seq : done;
}

void rc_damage_commit_locked(rcanvas_canvas *c, rc_frame_buf *fb, int whole) {
    uint32_t prev = c->last ? c->last->seq : 0;
    rc_damage_hist_push(&c->damage, fb->seq, prev, whole || fb->dmg_base != prev, &fb->dmg, fb->img.width,
                        fb->img.height);
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
    uint32_t oldest = rc_damage_hist_oldest_base(d, l->seq), base = UINT32_MAX;
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
    if (fb == l ? rc_damage_map_reset(u, fb->img.width, fb->img.height) : rc_damage_map_copy(u, &fb->dmg)) return;
    rc_damage_hist_union(d, base, l->seq, u);
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
    rc_damage_hist_union(d, base, l->seq, u);
    int n = rc_damage_rects(u, l->img.width, l->img.height, task->rects, RC_MAX_TILES);
    if (n <= 0) return;
    task->nrects = n;
    pk->base_seq = base;
}

/* ---- viewers ---- */

/* A viewer of canvas ctx holds frame `since` lossless (an anchor from it is still of use). */
static int lossless_held(void *ctx, uint32_t since) {
    const rcanvas_canvas *c = ctx;
    for (const rc_session *s = c->sessions; s; s = s->next)
        if (s->lossless_seq == since) return 1;
    return 0;
}

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
            /* its next refinement: the tiles changed since, however many frames */
            rc_damage_anchor_make(&c->damage, pk->seq, lossless_held, c);
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
