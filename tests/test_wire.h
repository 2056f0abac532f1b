/* SPDX-License-Identifier: MIT */
/*
 * test_wire.h — tests read packets as a viewer would: the wire header of a tile is made by the transport's one
 * writer (rc_wire_tile_header) in front of the payload and parsed back by its one reader (rc_frame_header_read),
 * so every packet a test checks also passes the wire format's own validation.
 */
#ifndef RC_TEST_WIRE_H
#define RC_TEST_WIRE_H

#include <stdlib.h>
#include <string.h>

#include "transport/wire.h"

/* The header of tile i of pk as sent; RCANVAS_OK or the reader's RCANVAS_EINVAL. */
static inline int test_tile_header(const rc_packet *pk, int i, rc_frame_header *h) {
    size_t len = pk->tiles[i].data.len;
    uint8_t *msg = malloc(RC_FRAME_HEADER_SIZE + len);
    if (!msg) return RCANVAS_ENOMEM;
    rc_wire_tile_header(pk, i, 0, RCANVAS_PROTOCOL_VERSION, msg);
    memcpy(msg + RC_FRAME_HEADER_SIZE, rc_buf_data(&pk->tiles[i].data), len);
    int r = rc_frame_header_read(msg, RC_FRAME_HEADER_SIZE + len, h);
    free(msg);
    return r;
}

#endif
