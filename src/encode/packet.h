/*
 * packet.h — an encoded frame: 1..RC_MAX_TILES tiles (horizontal stripes), each a complete JPEG/PNG whose
 * 56-byte wire header sits in its buffer's head room, so the transport sends [header|payload] without copying
 * the payload. Packets are reference counted (one encode serves every viewer) and recycled through a per-canvas
 * free list, keeping their tile buffers' capacity: after the first frames no allocation happens per frame.
 */
#ifndef RC_PACKET_H
#define RC_PACKET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/buf.h"
#include "transport/protocol.h"

#define RC_MAX_TILES 64

typedef struct rc_packet_pool rc_packet_pool;

typedef struct rc_packet {
    atomic_int refs;
    rc_packet_pool *pool;
    struct rc_packet *free_next;
    uint32_t seq;
    int64_t present_us;
    rcanvas_codec codec;
    uint16_t flags;             /* RC_FLAG_LOSSLESS, RC_FLAG_REFINE (LAST_TILE is per tile) */
    uint32_t width, height;     /* whole frame */
    int ntiles;
    size_t total_bytes;         /* payload bytes of all tiles */
    rc_buf tiles[RC_MAX_TILES]; /* tile i payload; its header at rc_packet_tile_msg(p, i) */
} rc_packet;

/* The wire message of tile i: header + payload, contiguous. */
static inline uint8_t *rc_packet_tile_msg(const rc_packet *p, int i) {
    return rc_buf_data(&p->tiles[i]) - RC_FRAME_HEADER_SIZE;
}
static inline size_t rc_packet_tile_msg_len(const rc_packet *p, int i) {
    return RC_FRAME_HEADER_SIZE + p->tiles[i].len;
}

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

#endif
