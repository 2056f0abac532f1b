/* SPDX-License-Identifier: MIT */
/*
 * buf.h — a growable byte buffer, reused across frames so encoders allocate only when a frame is bigger than any
 * before. Every buffer keeps RC_BUF_HEAD bytes of head room in front of its data that writers never touch: a
 * transport writes its headers there, right in front of the bytes, and sends both with one call, without copying
 * the bytes (src/transport/send.c: the WebSocket and frame headers of each tile, per viewer).
 */
#ifndef RC_BUF_H
#define RC_BUF_H

#include <stddef.h>
#include <stdint.h>

#define RC_BUF_HEAD 128 /* bytes of head room in front of the data (a multiple of 64: the data stays aligned) */

typedef struct rc_buf {
    uint8_t *mem;  /* the allocation: RC_BUF_HEAD bytes of head room, then the data */
    size_t len;    /* data bytes used */
    size_t cap;    /* data bytes available */
} rc_buf;

/* The data (NULL until the first reserve). */
static inline uint8_t *rc_buf_data(const rc_buf *b) { return b->mem ? b->mem + RC_BUF_HEAD : NULL; }
/* The head room: RC_BUF_HEAD bytes ending where the data starts (NULL until the first reserve). */
static inline uint8_t *rc_buf_head(const rc_buf *b) { return b->mem; }

/* Makes room for at least `need` bytes in total, keeping the content. 0 or RCANVAS_ENOMEM. */
int rc_buf_reserve(rc_buf *b, size_t need);
/* Appends n bytes. 0 or RCANVAS_ENOMEM. */
int rc_buf_append(rc_buf *b, const void *p, size_t n);
static inline void rc_buf_clear(rc_buf *b) { b->len = 0; }
void rc_buf_free(rc_buf *b);

#endif
