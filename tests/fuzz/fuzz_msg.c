/* SPDX-License-Identifier: MIT */
/*
 * fuzz_msg — libFuzzer target for the client-message parser (rc_client_msg_parse, src/transport/wire.c): any
 * bytes must come back as RCANVAS_OK with every field inside the documented limits, or RCANVAS_EINVAL with a
 * reason; never a crash, a leak or undefined behaviour (built with ASan and UBSan). `make fuzz`, `make test-fuzz`.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/wire.h"

#define REQUIRE(c) \
    do {           \
        if (!(c)) abort(); \
    } while (0)

static void check_utf8_str(const char *s, size_t cap) {
    size_t n = strnlen(s, cap);
    REQUIRE(n > 0 && n < cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rc_client_msg m;
    const char *why = (const char *)1;
    int r = rc_client_msg_parse((const char *)data, size, &m, &why);
    if (r != RCANVAS_OK) {
        REQUIRE(r == RCANVAS_EINVAL && why && *why);
        return 0;
    }
    REQUIRE(why == NULL);
    switch (m.kind) {
    case RC_MSG_ACK: REQUIRE(m.ack_hold_us <= 60000u * 1000u && m.ack_decode_us <= 60000u * 1000u); break;
    case RC_MSG_VISIBILITY: REQUIRE(m.visible == 0 || m.visible == 1); break;
    case RC_MSG_KEYFRAME: break;
    case RC_MSG_EVENT: {
        const rcanvas_event *e = &m.event;
        REQUIRE(strcmp(rcanvas_event_type_name(e->type), "unknown"));
        REQUIRE(isfinite(e->x) && fabs(e->x) <= 1e6 && isfinite(e->y) && fabs(e->y) <= 1e6);
        REQUIRE(isfinite(e->dx) && fabs(e->dx) <= 1e6 && isfinite(e->dy) && fabs(e->dy) <= 1e6);
        REQUIRE(e->button >= 0 && e->button <= 5 && e->buttons < (1u << 6));
        REQUIRE(e->ntouches >= 0 && e->ntouches <= RCANVAS_MAX_TOUCHES);
        REQUIRE(e->time_stamp >= 0 && e->time_stamp <= 1e12);
        if (e->type == RCANVAS_EVENT_KEY_DOWN || e->type == RCANVAS_EVENT_KEY_UP) check_utf8_str(e->key, sizeof e->key);
        if (e->type == RCANVAS_EVENT_CHAR) check_utf8_str(e->data, sizeof e->data);
        if (e->type == RCANVAS_EVENT_RESIZE)
            REQUIRE(e->width > 0 && e->width <= 32768 && e->height > 0 && e->height <= 32768 &&
                    e->pixel_ratio > 0 && e->pixel_ratio <= 16);
        break;
    }
    default: abort();
    }
    return 0;
}
