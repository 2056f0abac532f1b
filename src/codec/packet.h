/* SPDX-License-Identifier: MIT */
/*
 * packet.h — an encoded frame: 1..RC_MAX_TILES tiles, each a complete JPEG/PNG (or video access unit) for one
 * rectangle of the frame (all of it, or only what changed: base_seq), plus what the stream needs to route it: its sequence number, whether it is a keyframe
 * and which packet it depends on. Packets carry no wire bytes: the transport frames them when it sends.
 * Packets are reference counted (one encode serves every viewer that decodes that codec) and recycled through a
 * per-canvas free list, keeping their tile buffers' capacity: after the first frames nothing is allocated per
 * frame. Once published a packet's bytes are read-only, except the head room of each tile buffer (core/buf.h):
 * that belongs to the transport's network thread, which writes each viewer's headers there as it sends the tile
 * (src/transport/send.c), so that no viewer needs a copy of the bytes.
 */
#ifndef RC_PACKET_H
#define RC_PACKET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/buf.h"

typedef struct rc_codec_type rc_codec_type;

#define RC_MAX_TILES 64

/* rc_packet.flags */
#define RC_PACKET_LOSSLESS 0x1u /* an exact copy of the frame (PNG) */
#define RC_PACKET_REFINE 0x2u   /* a lossless resend of a frame already sent lossy (same seq) */
#define RC_PACKET_KEYFRAME 0x4u /* decodable alone (every whole-frame packet of an intra-only codec) */
#define RC_PACKET_SCALED 0x8u   /* encoded at a lower resolution than the frame (rate adaptation): nothing in it is lossless */
#define RC_PACKET_PAINT 0x10u   /* video: a paint-over, the tier's newest frame coded again sharper (same seq) */

typedef struct rc_tile {
    rc_buf data;             /* the encoded bytes */
    uint32_t x, y, w, h;     /* the rectangle of the frame it covers, pixels */
} rc_tile;

typedef struct rc_packet_pool rc_packet_pool;

typedef struct rc_packet {
    atomic_int refs;
    rc_packet_pool *pool;
    struct rc_packet *free_next;
    uint32_t seq;               /* the frame's sequence number (a refinement has its frame's seq) */
    uint32_t id;                /* its number in its encoder's stream (stateful codecs), from 1; 0 otherwise */
    uint32_t depends_on;        /* id of the packet of the same stream needed decoded first; 0 for a keyframe */
    /* Damage (src/stream/damage.c): 0 = the whole frame. Else a partial update: the tiles hold only the rectangles
     * that changed after frame base_seq, so a viewer may draw it only over the picture of a frame G with
     * base_seq <= G < seq (the tiles' rectangles changed in (base_seq, seq], the rest of the picture did not). */
    uint32_t base_seq;
    int64_t present_us;         /* when the app presented the frame (CLOCK_MONOTONIC, µs) */
    const rc_codec_type *codec; /* the encoder that made it; codec->wire_id tells the client's decoder */
    unsigned flags;             /* RC_PACKET_* */
    uint32_t width, height;     /* whole frame, pixels */
    int ntiles;
    size_t total_bytes;         /* encoded bytes of all tiles */
    rc_tile tiles[RC_MAX_TILES];
} rc_packet;

/* A free list of packets. Thread-safe. */
rc_packet_pool *rc_packet_pool_new(void);
/* Frees the pool and its free packets; packets still referenced free themselves on their last unref. */
void rc_packet_pool_free(rc_packet_pool *pool);
/* A packet with refs = 1, tiles cleared (capacity kept), or NULL on ENOMEM. */
rc_packet *rc_packet_get(rc_packet_pool *pool);
static inline rc_packet *rc_packet_ref(rc_packet *p) {
    if (p) atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}
/* Drops a reference; the last one returns the packet to its pool. NULL ignored. Any thread. */
void rc_packet_unref(rc_packet *p);
/* The largest tile buffer (capacity, bytes) a packet keeps in the free list; 0 = no limit (the default). Tile
 * buffers of free packets above it are freed now, and those of packets returned later when they come back: after
 * the frames got much smaller (a resize down), the buffers grown for the big ones (the JPEG encoder reserves its
 * worst case, tjBufSize) go back to the system instead of staying in the free list (147 MB still allocated after a
 * 10 Mpx canvas went back to 640×480). Thread-safe. */
void rc_packet_pool_set_keep(rc_packet_pool *pool, size_t max_tile_bytes);

#endif
