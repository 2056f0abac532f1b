/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jpeg — libFuzzer target for the check of an app's JPEG (rc_jpeg_check_baseline, src/codec/jpeg_app.c), which
 * rcanvas_present_encoded runs on untrusted bytes before sending them as they are: it never reads outside them, and
 * what it takes starts with SOI, ends with EOI and declares the given size in a baseline SOF0. The first 4 bytes of
 * the input are the width and height asked (16 bits each, big-endian); the rest is the file. `make fuzz`,
 * `make test-fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define REQUIRE(c) \
    do {           \
        if (!(c)) abort(); \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    uint32_t w = ((uint32_t)data[0] << 8) | data[1], h = ((uint32_t)data[2] << 8) | data[3];
    size_t n = size - 4;
    uint8_t *f = malloc(n ? n : 1); /* a copy of its own size: ASan sees any read past the end */
    if (!f) return 0;
    memcpy(f, data + 4, n);
    if (rc_jpeg_check_baseline(f, n, w, h)) {
        REQUIRE(n >= 4 && f[0] == 0xFF && f[1] == 0xD8 && f[n - 2] == 0xFF && f[n - 1] == 0xD9);
        int found = 0; /* a SOF0 of w x h somewhere before the end */
        for (size_t i = 0; i + 9 <= n && !found; i++)
            found = f[i] == 0xFF && f[i + 1] == 0xC0 && (((uint32_t)f[i + 5] << 8) | f[i + 6]) == h &&
                    (((uint32_t)f[i + 7] << 8) | f[i + 8]) == w;
        REQUIRE(found);
    }
    free(f);
    return 0;
}
