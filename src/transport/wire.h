/* SPDX-License-Identifier: MIT */
/*
 * wire.h — the wire protocol (docs/protocol.md), in one place: the fixed little-endian header in front of every
 * binary frame message (written here from a packet's tile when the transport sends it, read here by the tests),
 * and the parsing of client JSON messages (events, acks) into C structs with full validation.
 */
#ifndef RC_WIRE_H
#define RC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "codec/packet.h"
#include "rcanvas.h"

#define RC_FRAME_MAGIC 0x46434352u /* "RCCF" as little-endian bytes 'R','C','C','F' */
#define RC_FRAME_HEADER_SIZE 56

/* Header flags */
#define RC_FLAG_LOSSLESS 0x0001u    /* the tile is an exact copy of the frame (PNG refinement or PNG codec) */
#define RC_FLAG_LAST_TILE 0x0002u   /* last tile of this frame: draw all its tiles now, then ack */
#define RC_FLAG_REFINE 0x0004u      /* a lossless resend of an earlier frame (same seq as the lossy one) */
#define RC_FLAG_KEYFRAME 0x0008u    /* protocol 2: decodable alone (video keyframe, or any image tile) */
/* The frame was shrunk by the server's rate adaptation (1/2 or 1/4 of the app's frame): the client
 * upscales it smoothly, as an approximation of the whole picture; a frame without it is the app's bitmap as it drew
 * it, which the client upscales nearest-neighbour (rendercanvas' set_bitmap). Both versions; clients that do not know
 * it ignore it. */
#define RC_FLAG_SCALED 0x0010u

typedef struct rc_frame_header {
    uint8_t version;         /* 1 or 2 (RCANVAS_PROTOCOL_VERSION): the viewer's protocol */
    uint8_t codec;           /* rcanvas_codec */
    uint16_t flags;          /* RC_FLAG_* */
    uint32_t seq;            /* frame sequence number, per canvas, from 1 */
    uint16_t tile_index;     /* 0..tile_count-1 */
    uint16_t tile_count;
    int64_t timestamp_us;    /* server CLOCK_MONOTONIC when the frame was presented (µs) */
    uint32_t frame_width, frame_height; /* whole frame, pixels */
    uint32_t x, y, w, h;     /* rectangle this tile covers, pixels */
    uint32_t rtt_us;         /* last round trip measured for this viewer (present → ack), µs; 0 = none yet */
    uint32_t payload_bytes;  /* encoded bytes following the header */
} rc_frame_header;

/* The header of tile `tile` of packet pk as one viewer receives it (rtt_us: that viewer's last round trip;
 * version: its protocol, 1 or 2 — version 1 has no keyframe flag), into out. The one place that maps a packet to
 * the wire. */
void rc_wire_tile_header(const rc_packet *pk, int tile, uint32_t rtt_us, int version,
                         uint8_t out[RC_FRAME_HEADER_SIZE]);

/* The bit (1 << codec id) of each codec named in a comma-separated list (`codecs=` of the upgrade URL: "h264",
 * "vp8", "vp9", "av1", "jpeg", "png", "webp"; unknown names are ignored); 0 if none is known. */
unsigned rc_wire_codec_list(const char *list);

/* Writes the 56-byte header into out. */
void rc_frame_header_write(uint8_t out[RC_FRAME_HEADER_SIZE], const rc_frame_header *h);
/* Parses a header from msg (len bytes, header + payload). Returns RCANVAS_OK or RCANVAS_EINVAL (short, bad magic,
 * bad version, payload_bytes ≠ len − 56, rectangle outside the frame, tile_index ≥ tile_count). */
int rc_frame_header_read(const uint8_t *msg, size_t len, rc_frame_header *h);

/* A parsed client message. */
typedef enum rc_msg_kind { RC_MSG_EVENT = 1, RC_MSG_ACK = 2, RC_MSG_VISIBILITY = 3, RC_MSG_KEYFRAME = 4 } rc_msg_kind;

typedef struct rc_client_msg {
    rc_msg_kind kind;
    rcanvas_event event;     /* RC_MSG_EVENT */
    uint32_t ack_seq;        /* RC_MSG_ACK */
    uint32_t ack_decode_us;  /* RC_MSG_ACK: the time its decode and draw took the client (decode_ms), µs; 0 = not said */
    uint32_t ack_hold_us;    /* RC_MSG_ACK: the time the client held the frame (arrival → ack: decode, draw), µs */
    int visible;             /* RC_MSG_VISIBILITY: 1 the viewer's canvas can be seen, 0 it cannot (no frames) */
} rc_client_msg;

/* Parses one client JSON text message (len bytes, not NUL-terminated). Returns RCANVAS_OK, or RCANVAS_EINVAL with
 * a reason (static string) in *why: malformed JSON, unknown type, missing or wrong-typed field, NaN/Inf, value out
 * of range. Limits: x, y, dx, dy in [-1e6, 1e6]; button 0..5; up to 10 buttons, modifiers and touches; key and
 * char ≤ 31 bytes UTF-8; resize width/height in (0, 32768], pixel_ratio in (0, 16]. */
int rc_client_msg_parse(const char *json, size_t len, rc_client_msg *out, const char **why);

#endif /* RC_WIRE_H */
