/* SPDX-License-Identifier: MIT */
/*
 * damage.h — private to src/stream/: which parts of a frame changed ("damage"), so that image codecs
 * send only the tiles that changed and an unchanged frame is not sent at all.
 *
 * Frames are cut into RC_DAMAGE_TILE × RC_DAMAGE_TILE tiles (the last column and row may be narrower). A dirty
 * bitmap (rc_damage_map) has one byte per tile, row-major, tiles_x = ceil(width / RC_DAMAGE_TILE) by
 * tiles_y = ceil(height / RC_DAMAGE_TILE), nonzero = the tile changed; or `all` (every tile: a first frame, a new
 * size or pixel format, a history that no longer reaches back far enough).
 *
 * How the canvas uses it (its files, canvas*.c, call the rc_damage_*_locked functions at a few points; all under
 * its mutex unless said otherwise):
 *  - Each presented frame gets its damage against the frame presented before it (rc_damage_present_begin takes
 *    a reference on that one under the lock, rc_damage_compute compares outside it; a GPU source may hand in a
 *    bitmap of its own instead). A pending frame that a newer one replaces folds its damage into the newer one.
 *  - When a frame starts encoding, rc_damage_resolve_locked turns that into damage against `last` (the frame
 *    encoded before it). None: the frame is identical and is not encoded at all (no packet for any codec); it
 *    counts as delivered once the frame it repeats is (rc_damage_done_locked, for the draw flow control).
 *  - When a frame becomes `last`, its damage enters a history of the last RC_DAMAGE_HISTORY frames encoded. A
 *    packet of frame L for viewers whose pictures are frames ≥ B holds the union of the history in (B, L]
 *    (packet.h: base_seq = B), as rectangles of dirty tiles; B = 0 is a whole frame. Image tiers choose B as the
 *    oldest picture among their visible viewers (one encode serves all); a viewer that cannot take a packet
 *    gets a whole frame through the keyframe machinery. Video tiers always encode whole frames.
 *  - The lossless refinement covers only the tiles not yet lossless: a viewer's picture is lossless except the
 *    tiles dirty since its lossless_seq (rc_damage_given_locked keeps that up to date), so the refinement of L
 *    holds the union in (min lossless_seq, L] (from an anchor when the history does not reach back so far).
 */
#ifndef RC_DAMAGE_H
#define RC_DAMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "codec/frame_encode.h"

#define RC_DAMAGE_TILE 64     /* pixels: a multiple of 16, so tiles keep JPEG's 4:2:0 MCU grid */
#define RC_DAMAGE_HISTORY 32  /* encoded frames remembered: a viewer further behind gets a whole frame */
#define RC_DAMAGE_ANCHORS 4   /* frames whose damage since is also kept whole, however many frames follow */
/* A partial packet is worth it while at most this share of the tiles (percent) changed and its rectangles fit
 * in one packet (RC_MAX_TILES); else the whole frame is sent, in stripes on every encoder thread. */
#define RC_DAMAGE_MAX_PERCENT 50

static inline uint32_t rc_damage_tiles(uint32_t pixels) { return (pixels + RC_DAMAGE_TILE - 1) / RC_DAMAGE_TILE; }

/* A dirty bitmap. The bytes are owned (capacity kept across frames). */
typedef struct rc_damage_map {
    uint8_t *bits;
    size_t cap;
    uint32_t tiles_x, tiles_y;
    int all; /* every tile dirty: bits not used */
} rc_damage_map;

/* Sizes m for a width × height frame, all clean (all = 0). 0, or RCANVAS_ENOMEM (then m is `all`). */
int rc_damage_map_reset(rc_damage_map *m, uint32_t width, uint32_t height);
void rc_damage_map_set_all(rc_damage_map *m);
/* dst |= src. Different tile grids: dst becomes `all`. */
void rc_damage_map_or(rc_damage_map *dst, const rc_damage_map *src);
/* Number of dirty tiles (tiles_x × tiles_y when `all`). */
size_t rc_damage_map_count(const rc_damage_map *m);
void rc_damage_map_free(rc_damage_map *m);

/* Compares two images of the same size and format tile by tile (memcmp of each tile's rows, stopping at the
 * first difference in a tile) and writes the bitmap: dirty[ty * tiles_x + tx] = 1 where they differ, else 0;
 * dirty holds rc_damage_tiles(width) × rc_damage_tiles(height) bytes. Returns the number of dirty tiles, or -1
 * if the images differ in size or format (nothing written). Any thread; reads only. */
long rc_damage_diff(const rc_image *now, const rc_image *before, uint8_t *dirty);

/* The rectangles (pixels) of the dirty tiles of m for a width × height frame: runs of dirty tiles in a tile row,
 * merged with the run of the same columns in the row above. Returns their number (0: nothing dirty), or -1 if
 * m is `all`, more than RC_DAMAGE_MAX_PERCENT % of the tiles are dirty, or there would be more than max. */
int rc_damage_rects(const rc_damage_map *m, uint32_t width, uint32_t height, rc_rect *rects, int max);

/* ---- what the canvas keeps (in rcanvas_canvas, guarded by its mutex) ---- */

typedef struct rc_damage_entry {
    uint32_t seq, prev_seq; /* this frame became `last` after frame prev_seq (0: none) */
    rc_damage_map map;      /* its damage against prev_seq */
} rc_damage_entry;

/* The damage since frame `since` up to the newest frame encoded, kept up to date at every commit: the history
 * reaches back RC_DAMAGE_HISTORY frames only, but a viewer lossless at frame S (a refinement) while a marker
 * moves for hundreds of frames should still get a refinement of the marker's tiles only. Anchors are made for
 * the frames viewers hold lossless (rc_damage_given_locked) and dropped when no viewer does any more. */
typedef struct rc_damage_anchor {
    uint32_t since, upto; /* 0: unused */
    rc_damage_map map;
} rc_damage_anchor;

typedef struct rc_damage_state {
    rc_damage_entry hist[RC_DAMAGE_HISTORY]; /* ring of encoded frames, oldest first from head */
    int head, n;
    rc_damage_anchor anchors[RC_DAMAGE_ANCHORS];
    rc_damage_map scratch;   /* unions are built here */
    rc_damage_map carry;     /* a GPU bitmap whose frame the canvas refused: ORed into the next one */
    int have_carry;
    uint32_t skip_seq;       /* newest identical (skipped) frame, 0 none... */
    uint32_t skip_base;      /* ...and the seq of the frame it repeats (`last` then): delivered when that is */
    uint64_t skipped;        /* identical frames not encoded (debug, tests) */
    uint32_t refine_seq;     /* the refinement made or running: of this frame... */
    uint32_t refine_base;    /* ...with this base (0 whole) */
    int resized;             /* the canvas's logical size changed since the last resolve: the next frame is whole,
                              * even if its pixels repeat (a viewer's picture takes the new aspect) */
} rc_damage_state;

void rc_damage_state_free(rc_damage_state *d);

/* dst = src (the bits copied into dst's own memory). 0, or RCANVAS_ENOMEM (then dst is `all`). */
int rc_damage_map_copy(rc_damage_map *dst, const rc_damage_map *src);
/* Frame seq became `last` after frame prev_seq (0: none), with damage dmg against it (whole: unknown, `all`; the
 * grid from width × height): the history takes it, and every anchor its damage. */
void rc_damage_hist_push(rc_damage_state *d, uint32_t seq, uint32_t prev_seq, int whole, const rc_damage_map *dmg,
                         uint32_t width, uint32_t height);
/* out |= the damage of frame `upto` (one pushed) against frame `since`: the union of the history in (since, upto],
 * or an anchor's; `all` where the history does not reach back that far (or since is 0). */
void rc_damage_hist_union(rc_damage_state *d, uint32_t since, uint32_t upto, rc_damage_map *out);
/* The oldest base rc_damage_hist_union can serve up to `upto` (a packet for a viewer at an older frame is whole). */
uint32_t rc_damage_hist_oldest_base(rc_damage_state *d, uint32_t upto);
/* The newest frame in the history (0: none). */
uint32_t rc_damage_hist_newest(const rc_damage_state *d);
/* An anchor at frame `since` (a frame a viewer now holds lossless), if the history can seed it: it replaces one
 * whose frame no viewer holds lossless any more (held(ctx, its since) 0), else the oldest. */
void rc_damage_anchor_make(rc_damage_state *d, uint32_t since, int (*held)(void *ctx, uint32_t since), void *ctx);

#endif
