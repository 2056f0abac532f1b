/* SPDX-License-Identifier: MIT */
/*
 * packet.c — reference-counted encoded frames and their free list (see packet.h). The pool outlives its
 * packets: rc_packet_pool_free() marks it closed and the last packet out frees it.
 */
#include "codec/packet.h"

#include <stdlib.h>

struct rc_packet_pool {
    pthread_mutex_t mu;
    rc_packet *free;
    int live;    /* packets handed out and not returned */
    int closed;
    size_t keep; /* rc_packet_pool_set_keep; 0 = no limit */
};

/* Frees the tile buffers of p above keep bytes of capacity. */
static void packet_shed(rc_packet *p, size_t keep) {
    if (!keep) return;
    for (int i = 0; i < RC_MAX_TILES; i++)
        if (p->tiles[i].data.cap > keep) rc_buf_free(&p->tiles[i].data);
}

void rc_packet_pool_set_keep(rc_packet_pool *pool, size_t max_tile_bytes) {
    pthread_mutex_lock(&pool->mu);
    int lower = max_tile_bytes && (!pool->keep || max_tile_bytes < pool->keep);
    pool->keep = max_tile_bytes;
    if (lower)
        for (rc_packet *p = pool->free; p; p = p->free_next) packet_shed(p, max_tile_bytes);
    pthread_mutex_unlock(&pool->mu);
}

rc_packet_pool *rc_packet_pool_new(void) {
    rc_packet_pool *pool = calloc(1, sizeof(*pool));
    if (!pool) return NULL;
    pthread_mutex_init(&pool->mu, NULL);
    return pool;
}

static void packet_destroy(rc_packet *p) {
    for (int i = 0; i < RC_MAX_TILES; i++) rc_buf_free(&p->tiles[i].data);
    free(p);
}

static void pool_destroy(rc_packet_pool *pool) {
    while (pool->free) {
        rc_packet *p = pool->free;
        pool->free = p->free_next;
        packet_destroy(p);
    }
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

void rc_packet_pool_free(rc_packet_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    pool->closed = 1;
    int live = pool->live;
    pthread_mutex_unlock(&pool->mu);
    if (live == 0) pool_destroy(pool);
}

rc_packet *rc_packet_get(rc_packet_pool *pool) {
    pthread_mutex_lock(&pool->mu);
    rc_packet *p = pool->free;
    if (p) pool->free = p->free_next;
    pthread_mutex_unlock(&pool->mu);
    if (!p) {
        p = calloc(1, sizeof(*p));
        if (!p) return NULL;
        p->pool = pool;
    }
    pthread_mutex_lock(&pool->mu);
    pool->live++;
    pthread_mutex_unlock(&pool->mu);
    atomic_store(&p->refs, 1);
    p->free_next = NULL;
    p->seq = p->id = p->depends_on = p->base_seq = 0;
    p->codec = NULL;
    p->flags = 0;
    p->ntiles = 0;
    p->total_bytes = 0;
    for (int i = 0; i < RC_MAX_TILES; i++) rc_buf_clear(&p->tiles[i].data);
    return p;
}

void rc_packet_unref(rc_packet *p) {
    if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) return;
    rc_packet_pool *pool = p->pool;
    pthread_mutex_lock(&pool->mu);
    pool->live--;
    int destroy_pool = pool->closed && pool->live == 0;
    if (pool->closed) {
        pthread_mutex_unlock(&pool->mu);
        packet_destroy(p);
        if (destroy_pool) pool_destroy(pool);
        return;
    }
    packet_shed(p, pool->keep);
    p->free_next = pool->free;
    pool->free = p;
    pthread_mutex_unlock(&pool->mu);
}
