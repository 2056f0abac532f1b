/*
 * buf.h — a growable byte buffer with reserved head room, reused across frames so encoders allocate only when a
 * frame is bigger than any before. The head room (RC_BUF_HEAD bytes) lets the transport put the WebSocket framing
 * (LWS_PRE) and the rcanvas frame header in front of the payload without copying it.
 */
#ifndef RC_BUF_H
#define RC_BUF_H

#include <stddef.h>
#include <stdint.h>

/* LWS_PRE (16 in libwebsockets 4.x, checked at compile time in transport) + the 56-byte frame header, rounded. */
#define RC_BUF_HEAD 128

typedef struct rc_buf {
    uint8_t *mem;  /* allocation: RC_BUF_HEAD bytes of head room, then payload */
    size_t len;    /* payload bytes used */
    size_t cap;    /* payload bytes available */
} rc_buf;

/* Payload start. */
static inline uint8_t *rc_buf_data(const rc_buf *b) { return b->mem + RC_BUF_HEAD; }

/* Makes room for at least `need` payload bytes in total, keeping the content. 0 or RCANVAS_ENOMEM. */
int rc_buf_reserve(rc_buf *b, size_t need);
/* Appends n bytes. 0 or RCANVAS_ENOMEM. */
int rc_buf_append(rc_buf *b, const void *p, size_t n);
static inline void rc_buf_clear(rc_buf *b) { b->len = 0; }
void rc_buf_free(rc_buf *b);

#endif
