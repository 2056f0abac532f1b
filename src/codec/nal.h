/* SPDX-License-Identifier: MIT */
/*
 * nal.h — H.264 NAL units in Annex B byte streams (ITU-T H.264 7.4.1 and Annex B): emulation prevention each way,
 * and walking an access unit's NAL units. One implementation for the encoders (h264_gpu.c writes its slices'
 * RBSPs through rc_nal_escape), the RTP packer (rtp_pack.c cuts access units with rc_nal_next) and the tests.
 * Pure functions on byte arrays; thread-safe.
 */
#ifndef RC_NAL_H
#define RC_NAL_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes rc_nal_escape writes for n RBSP bytes: an emulation prevention byte at most every 2 bytes, and one
 * after the last (a trailing 0x00 0x00 would otherwise run into the next start code). */
#define RC_NAL_ESCAPED_MAX(n) ((n) + (n) / 2 + 1)

/* Writes rbsp[0, n) to dst with emulation prevention (7.4.1: 0x03 inserted after two zero bytes before a byte
 * 0x00–0x03, and after an RBSP that ends in two zero bytes); dst holds RC_NAL_ESCAPED_MAX(n) bytes and must not
 * overlap rbsp. Returns the bytes written. */
size_t rc_nal_escape(uint8_t *dst, const uint8_t *rbsp, size_t n);

/* The inverse: nal[0, n) (a NAL unit's bytes after its start code) to dst with each emulation prevention byte
 * (0x03 after two zero bytes) removed; dst holds n bytes, and may be nal itself. Returns the bytes written. */
size_t rc_nal_unescape(uint8_t *dst, const uint8_t *nal, size_t n);

/* The next NAL unit of the Annex B access unit au[0, n) at or after *pos (start with *pos = 0): returns 1 with
 * *nal, *len its bytes (header first; the start code of 3 or 4 bytes and trailing zero bytes off) and *pos past
 * it, or 0 when there is none. Empty NAL units are skipped; bytes before the first start code are not a NAL unit. */
int rc_nal_next(const uint8_t *au, size_t n, size_t *pos, const uint8_t **nal, size_t *len);

#endif
