/* SPDX-License-Identifier: MIT */
/*
 * test_nal.c — H.264 emulation prevention and Annex B walking (src/codec/nal.h): every RBSP of a set of hand-made
 * cases and of 2000 random ones (biased to zero bytes, ending as RBSPs do in a nonzero byte) escapes to bytes with no 00 00 0x (x ≤ 3) pattern, no
 * start code inside and no trailing 00, within RC_NAL_ESCAPED_MAX, and unescapes back to itself (in place too);
 * the known escapes byte for byte; an access unit of 3- and 4-byte start codes, trailing zeros, an empty NAL unit
 * and leading garbage walks into exactly its NAL units.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/nal.h"
#include "test.h"

/* 1 when the escaped bytes could be taken for a start code or end in 00 (7.4.1's rules for a NAL unit's bytes) */
static int bad_escape(const uint8_t *e, size_t n) {
    for (size_t i = 0; i + 2 < n; i++)
        if (e[i] == 0 && e[i + 1] == 0 && e[i + 2] <= 3 && e[i + 2] != 3) return 1;
    return n > 0 && e[n - 1] == 0;
}

static int round_trip(const uint8_t *rbsp, size_t n) {
    uint8_t *e = malloc(RC_NAL_ESCAPED_MAX(n) + 1), *u = malloc(RC_NAL_ESCAPED_MAX(n) + 1);
    size_t en = rc_nal_escape(e, rbsp, n);
    int ok = en <= RC_NAL_ESCAPED_MAX(n) && !bad_escape(e, en);
    size_t un = rc_nal_unescape(u, e, en);
    ok = ok && un == n && !memcmp(u, rbsp, n);
    size_t in_place = rc_nal_unescape(e, e, en);
    ok = ok && in_place == n && !memcmp(e, rbsp, n);
    free(e);
    free(u);
    return ok;
}

static void check_escape(void) {
    static const struct { uint8_t in[8]; size_t n; uint8_t out[12]; size_t on; } k[] = {
        {{0x00, 0x00, 0x00, 0x01}, 4, {0x00, 0x00, 0x03, 0x00, 0x01}, 5},
        {{0x00, 0x00, 0x01}, 3, {0x00, 0x00, 0x03, 0x01}, 4},
        {{0x00, 0x00, 0x03, 0x00, 0x00, 0x02}, 6, {0x00, 0x00, 0x03, 0x03, 0x00, 0x00, 0x03, 0x02}, 8},
        {{0x00, 0x00, 0x04}, 3, {0x00, 0x00, 0x04}, 3},
        {{0x65, 0x88, 0x00, 0x00}, 4, {0x65, 0x88, 0x00, 0x00, 0x03}, 5}, /* ends in 00 00: a 03 after it */
        {{0x00, 0x01, 0x00, 0x00, 0x80}, 5, {0x00, 0x01, 0x00, 0x00, 0x80}, 5},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        uint8_t e[16];
        size_t en = rc_nal_escape(e, k[i].in, k[i].n);
        CHECK_MSG(en == k[i].on && !memcmp(e, k[i].out, en), "escape case %zu: %zu bytes", i, en);
        CHECK_MSG(round_trip(k[i].in, k[i].n), "round trip of case %zu", i);
    }
    CHECK_EQ_INT((int)rc_nal_escape(NULL, NULL, 0), 0);
    srand(7);
    int bad = 0;
    for (int t = 0; t < 2000; t++) {
        size_t n = (size_t)(rand() % 300);
        uint8_t *b = malloc(n + 1);
        for (size_t i = 0; i < n; i++) b[i] = rand() % 3 ? 0 : (uint8_t)(rand() % 5);
        if (n) b[n - 1] = (uint8_t)(1 + rand() % 255); /* an RBSP ends in its stop bit (or in 00 00: the cases) */
        bad += !round_trip(b, n);
        free(b);
    }
    CHECK_EQ_INT(bad, 0);
}

static void check_walk(void) {
    const uint8_t au[] = {0x09, 0x09,                               /* garbage before the first start code */
                          0x00, 0x00, 0x00, 0x01, 0x67, 0x42, 0x00, 0x1f, /* SPS, 4-byte start code */
                          0x00, 0x00, 0x01, 0x68, 0xce,                   /* PPS, 3-byte */
                          0x00, 0x00, 0x01,                               /* an empty NAL unit */
                          0x00, 0x00, 0x01, 0x65, 0x88, 0x00, 0x00, 0x03, 0x01, 0x80, 0x00, 0x00}; /* IDR, trailing 00s */
    static const struct { uint8_t type; size_t len; } want[] = {{0x67, 4}, {0x68, 2}, {0x65, 7}};
    size_t pos = 0, len = 0;
    const uint8_t *nal = NULL;
    int k = 0;
    while (rc_nal_next(au, sizeof au, &pos, &nal, &len)) {
        CHECK_MSG(k < 3 && nal[0] == want[k].type && len == want[k].len, "NAL unit %d: type %02x, %zu bytes", k,
                  nal[0], len);
        k++;
    }
    CHECK_EQ_INT(k, 3);
    CHECK_EQ_INT((int)pos, (int)sizeof au);
    pos = 0;
    CHECK(!rc_nal_next(au, 2, &pos, &nal, &len)); /* no start code */
    pos = 0;
    CHECK(!rc_nal_next(NULL, 0, &pos, &nal, &len));
}

int main(void) {
    check_escape();
    check_walk();
    TEST_MAIN_END();
}
