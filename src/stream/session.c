/* SPDX-License-Identifier: MIT */
/*
 * session.c — the viewers' side of a canvas (see session.h): per-viewer flow control (packets in flight, newest
 * wins), the lossless refinement of what a viewer has, keyframe needs, round trips, the active role and its
 * hand-over, visibility. Everything runs under the canvas mutex; the transport's network thread is the only
 * caller, so a session's fields change only there or under the canvas lock from the canvas's own threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stream/canvas_internal.h"

/* ---- roles ---- */

/* s becomes the active viewer: the canvas's flow control follows its acks, its last resize sizes the canvas,
 * and the app is asked for a draw. mu held. */
static void make_active_locked(rcanvas_canvas *c, rc_session *s) {
    if (c->active) c->active->active = 0;
    c->active = s;
    if (!s) {
        c->active_acked = 0;
        return;
    }
    s->active = 1;
    c->active_acked = s->acked_seq;
    if (s->have_resize) { /* clamped again: the codec may have changed since */
        rc_canvas_set_size_locked(c, s->last_resize.width, s->last_resize.height, s->req_ratio);
        s->last_resize.pixel_ratio = c->size.pixel_ratio;
        rc_canvas_queue_event_locked(c, &s->last_resize);
    }
    c->draw_requested = 1;
    pthread_cond_broadcast(&c->cv);
    rc_canvas_notify_locked(c); /* both viewers are told their new role */
}

void rc_canvas_resize_again_locked(rcanvas_canvas *c) {
    rc_session *s = c->active;
    if (!s || !s->have_resize) return;
    rcanvas_size was = c->size;
    rc_canvas_set_size_locked(c, s->last_resize.width, s->last_resize.height, s->req_ratio);
    if (c->size.physical_width == was.physical_width && c->size.physical_height == was.physical_height) return;
    s->last_resize.pixel_ratio = c->size.pixel_ratio;
    rc_canvas_queue_event_locked(c, &s->last_resize);
    c->draw_requested = 1;
    pthread_cond_broadcast(&c->cv);
}

/* The oldest other session (lowest id), skipping closing ones unless include_closing, and always view-only ones
 * (they never become active). mu held. */
static rc_session *oldest_other(rcanvas_canvas *c, const rc_session *s, int include_closing) {
    rc_session *heir = NULL;
    for (rc_session *o = c->sessions; o; o = o->next)
        if (o != s && !o->caps.view_only && (include_closing || !o->closing) && (!heir || o->id < heir->id))
            heir = o;
    return heir;
}

int64_t rc_session_check_stall_locked(rcanvas_canvas *c, int64_t now_us) {
    rc_session *s = c->active;
    if (!s || s->n_inflight < s->window || s->n_inflight == 0) return -1;
    int64_t waited = now_us - s->inflight[s->if_head].sent_us;
    if (waited < RC_STALL_US) return RC_STALL_US - waited;
    rc_session *heir = oldest_other(c, s, 0);
    if (!heir) return RC_STALL_US; /* alone: nobody to hand over to; look again later */
    rc_log(c->env.log, RCANVAS_LOG_WARN, "canvas '%s': viewer %u acked nothing for %lld ms; viewer %u becomes active",
           c->name, s->id, (long long)(waited / 1000), heir->id);
    make_active_locked(c, heir);
    return -1;
}

/* JPEG and PNG every client decodes (protocol 1 knows only them; the refinement is PNG by default). */
static int decodes(const rc_session *s, const rc_codec_type *codec) {
    unsigned mask = s->caps.exact_codecs ? s->caps.codecs
                                         : s->caps.codecs | (1u << RCANVAS_CODEC_JPEG) | (1u << RCANVAS_CODEC_PNG);
    return codec && codec->wire_id < 32 && (mask & (1u << codec->wire_id));
}

int rc_session_decodes(const rc_session *s, const rc_codec_type *codec) { return decodes(s, codec); }

void rc_session_place_locked(rcanvas_canvas *c, rc_session *s) {
    const rc_codec_type *want = NULL;
    for (int i = 0; i < c->nprefs; i++)
        if (decodes(s, c->prefs[i])) {
            want = c->prefs[i];
            break;
        }
    /* a consumer of exactly one codec (an RTP output) gets its codec even where the canvas prefers another one */
    for (int w = 0; !want && s->caps.exact_codecs && w < 32; w++)
        if ((s->caps.codecs & (1u << w)) && rc_codec_for((rcanvas_codec)w) &&
            !(c->codecs_disabled & (1u << rc_codec_index(rc_codec_for((rcanvas_codec)w)))))
            want = rc_codec_for((rcanvas_codec)w);
    if (!want) want = &rc_codec_jpeg;
    int t = rc_tier_acquire_locked(c, want, s->rung);
    /* every tier taken: its codec at any rung, else JPEG (tier 0 or made) */
    for (int r = 0; t < 0 && r < RC_RUNGS; r++) t = rc_tier_acquire_locked(c, want, r);
    for (int r = 0; t < 0 && r < RC_RUNGS; r++) t = rc_tier_acquire_locked(c, &rc_codec_jpeg, r);
    if (t < 0) t = 0;
    if (s->tier >= 0 && s->tier == t) return;
    if (s->tier >= 0 && --c->tiers[s->tier].nsessions == 0 && s->tier > 0 && !rc_tier_busy(&c->tiers[s->tier]))
        rc_tier_unwatched(&c->tiers[s->tier]); /* no stale packet for its next viewer */
    s->tier = t;
    c->tiers[t].nsessions++;
    s->need_keyframe = 1;
    s->last_id = 0;
    s->floor_seq = s->given_seq; /* nothing older than what it shows (a slower tier may hold an older frame) */
    s->given_seq = 0; /* it gets the newest packet of its tier (no new draw: a still scene's keyframe is the last
                       * frame encoded again, see side_check_locked in canvas_refine.c) */
    rc_tier *tt = &c->tiers[t]; /* a tier without the newest frame: make it (keyframe_check_locked) */
    if (!rc_tier_busy(tt) && c->last && (!tt->latest || tt->latest->seq < c->last->seq))
        rc_tier_request_keyframe_locked(c, tt);
}

int rc_sessions_visible_locked(rcanvas_canvas *c) {
    for (rc_session *s = c->sessions; s; s = s->next)
        if (s->visible) return 1;
    return 0;
}

/* ---- rate rungs ---- */

static int rung_of(double bps) {
    static const double floors[RC_RUNGS] = RC_RUNG_FLOORS;
    for (int r = 0; r < RC_RUNGS; r++)
        if (bps >= floors[r]) return r;
    return RC_RUNGS - 1;
}

/* The viewer's target left its rung (by RC_RUNG_HYSTERESIS, at most every RC_RUNG_MOVE_US): alone on its tier it
 * takes the tier along (no new encoder, no keyframe); sharing one, it moves to the tier of its codec and new rung,
 * made if needed, so the others keep their quality. mu held. */
static void rung_check_locked(rcanvas_canvas *c, rc_session *s, int64_t now_us) {
    static const double floors[RC_RUNGS] = RC_RUNG_FLOORS;
    double t = s->link.target_bps;
    double lo = floors[s->rung] / RC_RUNG_HYSTERESIS;
    double hi = s->rung > 0 ? floors[s->rung - 1] * RC_RUNG_HYSTERESIS : INFINITY;
    if ((t >= lo && t < hi) || now_us - s->rung_at_us < RC_RUNG_MOVE_US || s->tier < 0 || !c->rate_adapt) return;
    int r = rung_of(t);
    if (r == s->rung) return;
    s->rung = r;
    s->rung_at_us = now_us;
    rc_tier *tt = &c->tiers[s->tier];
    int taken = 0;
    for (int i = 0; i < RC_MAX_TIERS; i++)
        if (i != s->tier && c->tiers[i].codec == tt->codec && c->tiers[i].rung == r && c->tiers[i].nsessions) taken = 1;
    if (tt->nsessions == 1 && !taken) {
        tt->rung = r;
        return;
    }
    rc_session_place_locked(c, s);
}

/* ---- open, close ---- */

static int rung_of(double bps);

int rc_session_open(rcanvas_canvas *c, const rc_session_caps *caps, rc_session **out) {
    *out = NULL;
    rc_session *s = calloc(1, sizeof(*s));
    if (!s) return RCANVAS_ENOMEM;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        free(s);
        return RCANVAS_ECLOSED;
    }
    s->canvas = c;
    s->id = ++c->next_session_id;
    s->visible = 1;
    s->need_keyframe = 1;
    if (caps) s->caps = *caps;
    s->acked_seq = c->presented_seq; /* frames before it joined are not its to ack */
    s->window = c->max_in_flight;
    /* The first guess at its link: what the fastest viewer gets (they share this server's uplink; a joiner then
     * starts on the tier that serves it, with no encode of its own), else RC_LINK_START_BPS. Its acks correct it
     * within a round trip or two; its first rung change is not held back by RC_RUNG_MOVE_US. */
    double start = RC_LINK_START_BPS;
    for (rc_session *o = c->sessions; o; o = o->next)
        if (!o->caps.fixed_bps && o->link.target_bps > start) start = o->link.target_bps;
    if (s->caps.fixed_bps > 0) start = s->caps.fixed_bps; /* a configured rate (RTP output): not measured */
    rc_link_init(&s->link, start);
    s->rung = rung_of(start);
    s->tier = -1;
    rc_session_place_locked(c, s);
    s->next = c->sessions;
    c->sessions = s;
    c->nsessions++;
    if (!c->active && !s->caps.view_only) make_active_locked(c, s); /* view-only: never active */
    else if (c->presented_seq == 0) c->draw_requested = 1; /* nothing to show it yet */
    /* a passive viewer is served the newest encoded frame, no new draw */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    *out = s;
    return RCANVAS_OK;
}

void rc_session_close(rc_session *s) {
    if (!s) return;
    rcanvas_canvas *c = s->canvas;
    pthread_mutex_lock(&c->mu);
    rc_session **pp = &c->sessions;
    while (*pp && *pp != s) pp = &(*pp)->next;
    if (*pp) *pp = s->next;
    c->nsessions--;
    if (s->tier >= 0 && --c->tiers[s->tier].nsessions == 0 && s->tier > 0 && !rc_tier_busy(&c->tiers[s->tier])) {
        rc_tier *t = &c->tiers[s->tier]; /* nobody watches it: its packets go stale, a new viewer starts afresh */
        rc_packet_unref(t->latest);
        t->latest = NULL;
        t->ref_id = 0;
    }
    if (c->active == s) {
        c->active = NULL;
        rc_session *heir = oldest_other(c, s, 0);
        if (!heir) heir = oldest_other(c, s, 1); /* so the canvas keeps an active viewer */
        make_active_locked(c, heir);
    }
    pthread_cond_broadcast(&c->cv); /* rcanvas_wait (no viewer: no draw), rc_canvas_wait_sessions */
    pthread_mutex_unlock(&c->mu);
    free(s);
}

void rc_session_set_closing(rc_session *s) {
    pthread_mutex_lock(&s->canvas->mu);
    s->closing = 1;
    pthread_mutex_unlock(&s->canvas->mu);
}

uint32_t rc_session_id(const rc_session *s) { return s->id; }
rcanvas_canvas *rc_session_canvas(const rc_session *s) { return s->canvas; }

/* ---- sending ---- */

/* The packet s should get now, or NULL; mu held. Newest wins: a viewer whose window was full when several frames
 * were encoded gets only the newest. A viewer that has a frame lossy gets its refinement once made. A packet of a
 * stateful codec goes only to a viewer that holds the packet it depends on; one that does not waits for a
 * keyframe, which it asks of its tier (coalesced, and at most one per RC_KEYFRAME_MIN_US). */
static rc_packet *pick_locked(rcanvas_canvas *c, rc_session *s, int *keyframe_wait) {
    if (!s->visible || c->closing || s->tier < 0) return NULL;
    /* its window is full, or its link holds enough (rc_link_full): nothing now; if a newer frame waits for the
     * link (not for the round trip, as a full window may), its estimate learns that the link limits it */
    if (s->n_inflight >= s->window) return NULL;
    if (rc_link_full(&s->link, s->n_inflight, s->inflight_bytes)) {
        const rc_packet *w = c->tiers[s->tier].latest;
        if (w && w->seq > s->given_seq) s->link.blocked = 1; /* (a full window alone may be the round trip) */
        return NULL;
    }
    rc_tier *t = &c->tiers[s->tier];
    rc_packet *l = t->latest;
    /* new to it: a newer frame; or, for a stateful codec, a keyframe re-encode of the frame it has (made for a
     * viewer that joined a still scene), which keeps every viewer of the tier on one reference chain */
    /* or a paint-over of the frame it has, unless it has that frame lossless already */
    int fresh = l && l->seq >= s->floor_seq && (l->seq > s->given_seq ||
                      (l->id && l->id != s->last_id && l->seq == s->given_seq &&
                       ((l->flags & RC_PACKET_KEYFRAME) || ((l->flags & RC_PACKET_PAINT) && s->lossless_seq < l->seq))));
    if (fresh) {
        /* a viewer that joins a still scene gets the lossless version straight away */
        if (c->refined && c->refined->seq == l->seq && s->given_seq < l->seq && !l->id &&
            decodes(s, c->refined->codec) && rc_damage_fits(s, c->refined))
            return c->refined;
        /* a partial packet (damage) only over a picture it fits; else a whole frame, as for a keyframe */
        if (rc_damage_fits(s, l) &&
            ((l->flags & RC_PACKET_KEYFRAME) || (!s->need_keyframe && l->depends_on == s->last_id)))
            return l;
        /* it lacks the reference: never send a packet it cannot decode */
        s->need_keyframe = 1;
        rc_tier_request_keyframe_locked(c, t);
        if (keyframe_wait) *keyframe_wait = 1;
        return NULL;
    }
    /* a video viewer gets the refinement only over the tier's newest packet, and not while a paint-over of it is
     * being coded: it takes no paint frame after the refinement, so one made meanwhile would break its chain */
    if (l && l->id && (l->id != s->last_id || t->state == RC_TIER_PAINT)) return NULL;
    if (c->refined && c->refined->seq == s->given_seq && s->lossless_seq < c->refined->seq &&
        decodes(s, c->refined->codec) && rc_damage_fits(s, c->refined))
        return c->refined;
    return NULL;
}

int rc_session_next(rc_session *s, int64_t now_us, rc_packet **out, int *keyframe_wait) {
    rcanvas_canvas *c = s->canvas;
    if (keyframe_wait) *keyframe_wait = 0;
    pthread_mutex_lock(&c->mu);
    rc_packet *pk = pick_locked(c, s, keyframe_wait);
    if (pk) {
        if (pk->seq > s->given_seq) s->given_seq = pk->seq;
        rc_damage_given_locked(c, s, pk); /* lossless_seq: what a refinement must cover */
        if (!(pk->flags & RC_PACKET_REFINE)) { /* a refinement is drawn over; the video chain goes on */
            s->last_id = pk->id;
            s->need_keyframe = 0;
        }
        if (pk->flags & RC_PACKET_PAINT) rc_canvas_notify_locked(c); /* the tick: the next paint frame may be due */
        int slot = (s->if_head + s->n_inflight) % RC_MAX_INFLIGHT;
        s->inflight[slot].seq = pk->seq;
        s->inflight[slot].present_us = pk->present_us;
        s->inflight[slot].sent_us = now_us;
        s->inflight[slot].bytes = pk->total_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)pk->total_bytes;
        /* what the viewer's decoder takes for it counts for a live frame, and of video for a P-frame only */
        s->inflight[slot].div = (pk->flags & (RC_PACKET_REFINE | RC_PACKET_PAINT)) || s->tier < 0 ||
                                        ((pk->flags & RC_PACKET_KEYFRAME) && (pk->codec->flags & RC_CODEC_STATEFUL)) ? 0
                              : c->tiers[s->tier].steer.scale_div > 1 ? c->tiers[s->tier].steer.scale_div : 1;
        s->inflight_bytes += s->inflight[slot].bytes;
        rc_link_on_send(&s->link, now_us, s->n_inflight, &s->inflight[slot].rec);
        s->n_inflight++;
        rc_packet_ref(pk);
        /* an active viewer whose window just filled may stall: the stall check needs a timer */
        if (s->active && s->n_inflight >= s->window) rc_canvas_notify_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
    *out = pk;
    return pk != NULL;
}

int rc_session_ack(rc_session *s, uint32_t seq, uint32_t hold_us, int64_t now_us) {
    return rc_session_ack_decoded(s, seq, hold_us, 0, now_us);
}

int rc_session_ack_decoded(rc_session *s, uint32_t seq, uint32_t hold_us, uint32_t decode_us, int64_t now_us) {
    rcanvas_canvas *c = s->canvas;
    pthread_mutex_lock(&c->mu);
    int found = 0, known = 0;
    for (int i = 0; i < s->n_inflight && !known; i++) known = s->inflight[(s->if_head + i) % RC_MAX_INFLIGHT].seq == seq;
    if (!known) { /* never sent, or acked already: refused, nothing changes */
        pthread_mutex_unlock(&c->mu);
        return RCANVAS_EINVAL;
    }
    while (s->n_inflight > 0 && !found) {
        uint32_t q = s->inflight[s->if_head].seq;
        if (q > seq) break;
        int head = s->if_head;
        s->if_head = (s->if_head + 1) % RC_MAX_INFLIGHT;
        s->n_inflight--;
        s->inflight_bytes -= s->inflight[head].bytes;
        if (q == seq) {
            found = 1;
            int64_t rtt = now_us - s->inflight[head].present_us;
            s->rtt_us = rtt < 0 ? 0 : rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
            /* its decoder's time for a live frame, and how often its acks come (1/4 gains: a few frames) */
            int div = s->inflight[head].div;
            if (decode_us && div) {
                rc_cost_sample(&s->dec_cost, div, (double)decode_us);
                s->dec_us = s->dec_us > 0 ? s->dec_us + ((double)decode_us - s->dec_us) / 4 : (double)decode_us;
            }
            if (s->last_ack_us && now_us > s->last_ack_us) {
                double iv = (double)(now_us - s->last_ack_us);
                s->ack_iv_us = s->ack_iv_us > 0 ? s->ack_iv_us + (iv - s->ack_iv_us) / 4 : iv;
            }
            s->last_ack_us = now_us;
            /* its decoder busy most of the time between its frames, or the encoder of its tier busy most of the
             * time between its frames: delay is the CPU's, not the link's (rate.h, cpu_bound) */
            const rc_tier *tt = s->tier >= 0 ? &c->tiers[s->tier] : NULL;
            s->link.cpu_bound = (s->ack_iv_us > 0 && rc_cpu_busy(s->dec_us, 1e6 / s->ack_iv_us)) ||
                                (tt && rc_cpu_busy(tt->steer.enc_us, tt->steer.enc_fps));
        }
        /* an ack covers the packets before it too (the client acks what it drew; a skipped one is delivered); a
         * fixed-rate consumer's acks are its own sends: its link is what it was configured with */
        if (!(s->caps.fixed_bps > 0))
            rc_link_on_ack(&s->link, &s->inflight[head].rec, s->inflight[head].bytes, s->inflight[head].sent_us,
                           now_us, hold_us, q == seq);
    }
    if (found) {
        /* the window covers the round trip at the rate frames would come, not at the rate the app was held to by
         * the windows (a 60 fps app held to 8 by a slow viewer's window of 2 kept that window at 2) */
        double fps = rc_canvas_unheld_fps_locked(c, now_us);
        if (s->tier >= 0 && c->tiers[s->tier].steer.fps_cap > 0 && c->tiers[s->tier].steer.fps_cap < fps)
            fps = c->tiers[s->tier].steer.fps_cap; /* its frames come no faster than its encoder's cap */
        if (!(s->caps.fixed_bps > 0)) {
            s->window = rc_link_window(&s->link, fps, c->max_in_flight, RC_MAX_INFLIGHT);
            rung_check_locked(c, s, now_us);
        }
        /* its tier skipped frames while it was full: the catch-up on `last` is the tick's (side_check_locked,
         * canvas_refine.c) */
        if (s->tier >= 0 && c->last && (!c->tiers[s->tier].latest || c->tiers[s->tier].latest->seq < c->last->seq))
            rc_canvas_notify_locked(c);
        if (seq > s->acked_seq) {
            s->acked_seq = seq;
            /* a draw held back by the windows may be due now (the app goes at its fastest viewer's pace); an app
             * not held back waits for something else (100 viewers ack 6000 times a second: no wake for those) */
            if (c->draw_held) pthread_cond_broadcast(&c->cv);
        }
        if (c->active == s && seq > c->active_acked && seq <= c->presented_seq) c->active_acked = seq;
    }
    pthread_mutex_unlock(&c->mu);
    return found ? RCANVAS_OK : RCANVAS_EINVAL;
}

/* ---- input ---- */

void rc_session_push_event(rc_session *s, const rcanvas_event *in) {
    if (s->caps.view_only) return; /* the transport drops a view-only viewer's input already */
    rcanvas_canvas *c = s->canvas;
    rcanvas_event ev = *in;
    ev.viewer_id = s->id;
    pthread_mutex_lock(&c->mu);
    if (ev.type == RCANVAS_EVENT_RESIZE) {
        s->req_ratio = ev.pixel_ratio;
        ev.pixel_ratio = rc_canvas_clamp_ratio(c, ev.width, ev.height, ev.pixel_ratio); /* the app is told the
                                                                        ratio it renders at (max_canvas_pixels) */
        s->last_resize = ev;
        s->have_resize = 1;
        if (c->active != s) { /* only the active viewer sizes the canvas */
            pthread_mutex_unlock(&c->mu);
            return;
        }
        rc_canvas_set_size_locked(c, ev.width, ev.height, ev.pixel_ratio);
        c->draw_requested = 1;
    }
    rc_canvas_queue_event_locked(c, &ev);
    pthread_mutex_unlock(&c->mu);
}

void rc_session_request_keyframe(rc_session *s) {
    rcanvas_canvas *c = s->canvas;
    int64_t now = rc_now_us();
    pthread_mutex_lock(&c->mu);
    /* at most one a second per viewer (the client asks at most that often): a client that floods cannot make the
     * tier encode keyframes for everybody */
    if (s->last_kf_request_us && now - s->last_kf_request_us < RC_SESSION_KEYFRAME_US) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    s->last_kf_request_us = now;
    s->need_keyframe = 1;
    if (s->tier >= 0 && (c->tiers[s->tier].codec->flags & RC_CODEC_STATEFUL))
        rc_tier_request_keyframe_locked(c, &c->tiers[s->tier]);
    pthread_mutex_unlock(&c->mu);
}

void rc_session_set_visible(rc_session *s, int visible) {
    rcanvas_canvas *c = s->canvas;
    pthread_mutex_lock(&c->mu);
    if (s->visible != !!visible) {
        s->visible = !!visible;
        if (visible) c->draw_requested = 1; /* it shows a stale frame: a new one, please */
        pthread_cond_broadcast(&c->cv);
        rc_canvas_notify_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- state ---- */

void rc_session_get_state(rc_session *s, rc_session_state *out) {
    rcanvas_canvas *c = s->canvas;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&c->mu);
    out->active = s->active;
    out->closing = c->closing;
    out->title_version = c->title_version;
    out->cursor_version = c->cursor_version;
    out->size = c->size;
    out->rtt_us = s->rtt_us;
    out->srtt_us = s->link.srtt_us;
    out->min_rtt_us = s->link.min_rtt_us;
    out->rate_kbps = rc_link_bw(&s->link) / 1000;
    out->target_kbps = s->link.target_bps / 1000;
    out->window = s->window;
    out->rung = s->rung;
    if (s->tier >= 0) {
        const rc_tier *t = &c->tiers[s->tier];
        out->quality = (t->codec->flags & RC_CODEC_STATEFUL) || (t->codec->flags & RC_CODEC_LOSSLESS) ? 0 : t->steer.quality;
        out->scale_div = t->steer.scale_div ? t->steer.scale_div : 1;
        out->fps_cap = t->steer.fps_cap;
        out->bitrate_kbps = (t->codec->flags & RC_CODEC_STATEFUL) ? t->steer.bitrate_bps / 1000 : 0;
        out->limit = t->steer.limit;
        out->fill_fps = (t->codec->flags & RC_CODEC_STATEFUL) ? t->steer.fill_fps : 0;
        out->screen = (t->codec->flags & RC_CODEC_SCREEN) ? t->screen.on : 0;
    }
    const rc_codec_type *tc = s->tier >= 0 ? c->tiers[s->tier].codec : &rc_codec_jpeg;
    out->encoder = tc == &rc_codec_jpeg && c->source_codec ? c->source_codec : tc;
    out->ready = pick_locked(c, s, NULL) != NULL;
    out->protocol = s->caps.protocol ? s->caps.protocol : 1;
    out->in_flight = s->n_inflight;
    pthread_mutex_unlock(&c->mu);
}

void rc_session_get_hello(rc_session *s, rc_session_hello *out) {
    rcanvas_canvas *c = s->canvas;
    pthread_mutex_lock(&c->mu);
    memcpy(out->canvas, c->name, sizeof out->canvas);
    memcpy(out->title, c->title, sizeof out->title);
    out->title_version = c->title_version;
    memcpy(out->cursor, c->cursor, sizeof out->cursor);
    out->cursor_version = c->cursor_version;
    out->size = c->size;
    out->codec = s->tier >= 0 && c->tiers[s->tier].codec ? (rcanvas_codec)c->tiers[s->tier].codec->wire_id
                                                          : RCANVAS_CODEC_JPEG;
    out->max_in_flight = c->max_in_flight;
    pthread_mutex_unlock(&c->mu);
}
