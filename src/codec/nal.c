/* SPDX-License-Identifier: MIT */
/* nal.c — H.264 emulation prevention and Annex B walking (nal.h). */
#include "codec/nal.h"

#include <string.h>

size_t rc_nal_escape(uint8_t *dst, const uint8_t *rbsp, size_t n) {
    size_t k = 0;
    int zeros = 0;
    for (size_t i = 0; i < n;) {
        if (zeros >= 2 && rbsp[i] <= 3) {
            dst[k++] = 3;
            zeros = 0;
        }
        if (rbsp[i]) { /* a run of nonzero bytes, copied whole: a slice's bytes are rarely 0 (byte by byte this
                        * loop was 6 % of the GPU demo's CPU at 1080p) */
            const uint8_t *z = memchr(rbsp + i, 0, n - i);
            size_t j = z ? (size_t)(z - rbsp) : n;
            memcpy(dst + k, rbsp + i, j - i);
            k += j - i;
            i = j;
            zeros = 0;
        } else {
            dst[k++] = 0;
            zeros++;
            i++;
        }
    }
    if (zeros >= 2) dst[k++] = 3; /* 7.4.1: the last byte of a NAL unit is never 0x00 */
    return k;
}

size_t rc_nal_unescape(uint8_t *dst, const uint8_t *nal, size_t n) {
    size_t k = 0;
    int zeros = 0;
    for (size_t i = 0; i < n; i++) {
        if (zeros >= 2 && nal[i] == 3) {
            zeros = 0;
            continue;
        }
        zeros = nal[i] == 0 ? zeros + 1 : 0;
        dst[k++] = nal[i];
    }
    return k;
}

int rc_nal_next(const uint8_t *au, size_t n, size_t *pos, const uint8_t **nal, size_t *len) {
    size_t i = *pos;
    for (;;) { /* the next start code 00 00 01 */
        while (i + 3 <= n && !(au[i] == 0 && au[i + 1] == 0 && au[i + 2] == 1)) i++;
        if (i + 3 > n) return 0;
        size_t s = i + 3, e = s;
        while (e + 3 <= n && !(au[e] == 0 && au[e + 1] == 0 && au[e + 2] == 1)) e++;
        if (e + 3 > n) e = n;
        *pos = e;
        /* trailing_zero_8bits, or the first byte of a 4-byte start code */
        while (e > s && au[e - 1] == 0) e--;
        if (e > s) {
            *nal = au + s;
            *len = e - s;
            return 1;
        }
        i = *pos; /* an empty NAL unit: skipped */
    }
}
