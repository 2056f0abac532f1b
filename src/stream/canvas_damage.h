/* SPDX-License-Identifier: MIT */
/*
 * canvas_damage.h — private to src/stream/: the canvas's damage hooks (canvas_damage.c), which the canvas's files
 * and session.c call at the points damage.h's opening comment lists, over the data structures of damage.h.
 */
#ifndef RC_CANVAS_DAMAGE_H
#define RC_CANVAS_DAMAGE_H

#include "stream/damage.h"

typedef struct rcanvas_canvas rcanvas_canvas;
typedef struct rc_session rc_session;
struct rc_frame_buf;
struct rc_tier;
struct rc_packet;
struct rc_encode_task;

/* Presenting frame fb (reserved, not yet published): a reference to the newest presented frame still held
 * (pending, else encoding, else last), to diff against outside the lock; NULL if none. mu held. The caller lets
 * it go (under mu) after publishing. */
struct rc_frame_buf *rc_damage_present_begin(rcanvas_canvas *c);
/* Outside the lock: fb's damage against prev (NULL: everything), or from a source's bitmap (dirty != NULL and
 * tiles_x/tiles_y that match fb's image: copied; else the CPU diff). */
void rc_damage_compute(struct rc_frame_buf *fb, const struct rc_frame_buf *prev, const uint8_t *dirty,
                       uint32_t tiles_x, uint32_t tiles_y);
/* fb is being published with seq = c->presented_seq + 1 (not yet assigned): folds a replaced pending frame's
 * damage, and a carried source bitmap, into it. mu held. */
void rc_damage_publish_locked(rcanvas_canvas *c, struct rc_frame_buf *fb);
/* A GPU source's bitmap for a frame the canvas refused: kept for the next frame. mu held. */
void rc_damage_carry_locked(rcanvas_canvas *c, const rc_image *img, const uint8_t *dirty, uint32_t tiles_x,
                            uint32_t tiles_y);
/* fb is about to be encoded: its damage against c->last. Returns 1 if it is identical to last (nothing to
 * send: the caller drops it, see rc_damage_skip_locked), else 0. mu held. */
int rc_damage_resolve_locked(rcanvas_canvas *c, struct rc_frame_buf *fb);
/* fb (identical to last) is dropped unencoded: it counts as delivered once last is, and does not delay the
 * refinement. Tiers whose viewers lack last are asked for it (else they would never show it). mu held. */
void rc_damage_skip_locked(rcanvas_canvas *c, struct rc_frame_buf *fb);
/* The draw flow control's "delivered up to" seq, advanced over skipped frames. mu held. */
uint32_t rc_damage_done_locked(const rcanvas_canvas *c, uint32_t done);
/* fb becomes `last` (whole = its damage is unknown: all). mu held, before c->last changes. */
void rc_damage_commit_locked(rcanvas_canvas *c, struct rc_frame_buf *fb, int whole);
/* An intra tier starts encoding frame fb into pk with task: chooses the packet's base and rectangles
 * (task->nrects, pk->base_seq), or the whole frame (whole != 0 forces it: a viewer asked for one, or a keyframe
 * re-encode of last). fb is the frame just resolved (rc_damage_resolve_locked) or `last` itself (a tier that
 * catches up on it). mu held. */
void rc_damage_plan_live_locked(rcanvas_canvas *c, struct rc_tier *t, struct rc_frame_buf *fb, int whole,
                                struct rc_packet *pk, struct rc_encode_task *task);
/* The refinement of `last`: the base it needs (the oldest lossless_seq among the viewers that will hold last
 * lossy), or -1 if no viewer needs one, or the refinement made (c->refined) serves them all. mu held. */
long rc_damage_refine_base_locked(rcanvas_canvas *c, const rc_codec_type *codec);
/* The refinement of `last` with that base: rectangles (task->nrects, pk->base_seq), or the whole frame. */
void rc_damage_plan_refine_locked(rcanvas_canvas *c, uint32_t base, struct rc_packet *pk,
                                  struct rc_encode_task *task);
/* 1 if session s may be given pk now as far as damage goes: a partial packet only over a picture it fits. */
int rc_damage_fits(const rc_session *s, const struct rc_packet *pk);
/* s was given pk: keeps its lossless_seq (see above). mu held. */
void rc_damage_given_locked(rcanvas_canvas *c, rc_session *s, const struct rc_packet *pk);

#endif
