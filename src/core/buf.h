/*
 * buf.h — a growable byte buffer, reused across frames so encoders allocate only when a frame is bigger than any
 * before.
 */
#ifndef RC_BUF_H
#define RC_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct rc_buf {
    uint8_t *mem;  /* the bytes */
    size_t len;    /* bytes used */
    size_t cap;    /* bytes available */
} rc_buf;

/* The data (NULL until the first reserve). */
static inline uint8_t *rc_buf_data(const rc_buf *b) { return b->mem; }

/* Makes room for at least `need` bytes in total, keeping the content. 0 or RCANVAS_ENOMEM. */
int rc_buf_reserve(rc_buf *b, size_t need);
/* Appends n bytes. 0 or RCANVAS_ENOMEM. */
int rc_buf_append(rc_buf *b, const void *p, size_t n);
static inline void rc_buf_clear(rc_buf *b) { b->len = 0; }
void rc_buf_free(rc_buf *b);

#endif
