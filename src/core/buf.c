/* SPDX-License-Identifier: MIT */
/*
 * buf.c — growable byte buffer (see buf.h). Grows by 1.5× so a stream of slightly larger frames
 * does not reallocate every time; the allocation is RC_BUF_HEAD bytes of head room + cap.
 */
#include "core/buf.h"

#include <stdlib.h>
#include <string.h>

#include "rcanvas.h"

int rc_buf_reserve(rc_buf *b, size_t need) {
    if (need <= b->cap && b->mem) return RCANVAS_OK;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return RCANVAS_ENOMEM;
        cap += cap / 2;
    }
    if (cap > SIZE_MAX - RC_BUF_HEAD) return RCANVAS_ENOMEM;
    uint8_t *m = realloc(b->mem, RC_BUF_HEAD + cap);
    if (!m) return RCANVAS_ENOMEM;
    b->mem = m;
    b->cap = cap;
    return RCANVAS_OK;
}

int rc_buf_append(rc_buf *b, const void *p, size_t n) {
    if (n > SIZE_MAX - b->len) return RCANVAS_ENOMEM;
    int r = rc_buf_reserve(b, b->len + n);
    if (r) return r;
    memcpy(rc_buf_data(b) + b->len, p, n);
    b->len += n;
    return RCANVAS_OK;
}

void rc_buf_free(rc_buf *b) {
    free(b->mem);
    b->mem = NULL;
    b->len = b->cap = 0;
}
