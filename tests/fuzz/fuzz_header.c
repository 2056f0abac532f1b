/* SPDX-License-Identifier: MIT */
/*
 * fuzz_header — libFuzzer target for the wire-header reader (rc_frame_header_read, src/transport/wire.c): any
 * bytes are refused or read into a header that satisfies every documented rule and writes back
 * (rc_frame_header_write) to the same 56 bytes. `make fuzz`, `make test-fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/wire.h"

#define REQUIRE(c) \
    do {           \
        if (!(c)) abort(); \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rc_frame_header h;
    if (rc_frame_header_read(data, size, &h) != RCANVAS_OK) return 0;
    REQUIRE(size >= RC_FRAME_HEADER_SIZE && h.payload_bytes == size - RC_FRAME_HEADER_SIZE);
    REQUIRE(h.version >= 1 && h.version <= RCANVAS_PROTOCOL_VERSION);
    REQUIRE(h.tile_count > 0 && h.tile_index < h.tile_count);
    REQUIRE(h.w > 0 && h.h > 0 && (uint64_t)h.x + h.w <= h.frame_width && (uint64_t)h.y + h.h <= h.frame_height);
    uint8_t back[RC_FRAME_HEADER_SIZE];
    rc_frame_header_write(back, &h);
    REQUIRE(!memcmp(back, data, RC_FRAME_HEADER_SIZE));
    return 0;
}
