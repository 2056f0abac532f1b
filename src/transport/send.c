/* SPDX-License-Identifier: MIT */
/*
 * send.c — frames and notices out to one viewer. Text notices go only between binary messages. A packet from
 * the session goes out tile by tile, each tile one binary WebSocket message [56-byte header | payload], written
 * with one lws_write straight from the packet's tile buffer: the packet is shared by every viewer of its tier and
 * its bytes are never copied per viewer. The frame header differs per viewer (its round trip, its protocol
 * version), so it is written per viewer, when the tile goes out, into the head room in front of the payload
 * (core/buf.h), and lws writes the WebSocket header in front of that (LWS_PRE). lws_write returns only after the
 * kernel took the message or lws copied what it did not take, so the next viewer may overwrite the head room at
 * once. Tiles go out until the socket is choked or RC_SEND_BUDGET bytes went out, so one big frame never holds
 * up other viewers for long. Network thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/transport_internal.h"

/* The head room of a tile's buffer holds lws's WebSocket header (at most LWS_PRE bytes) and the frame header. */
_Static_assert(RC_BUF_HEAD >= LWS_PRE + RC_FRAME_HEADER_SIZE, "tile head room too small for the headers");

/* Tile `tile` of pk as one message: the viewer's frame header in the tile buffer's head room, then lws_write of
 * header + payload from there. The head room belongs to the network thread (packet.h). -1 to close. */
static int write_tile(rc_viewer *v, rc_packet *pk, int tile, const rc_session_state *st, size_t *sent) {
    rc_buf *payload = &pk->tiles[tile].data;
    uint8_t empty[LWS_PRE + RC_FRAME_HEADER_SIZE]; /* a tile without bytes has no buffer, hence no head room */
    uint8_t *msg = payload->len ? rc_buf_data(payload) - RC_FRAME_HEADER_SIZE : empty + LWS_PRE;
    rc_wire_tile_header(pk, tile, st->rtt_us, st->protocol, msg);
    size_t len = RC_FRAME_HEADER_SIZE + payload->len;
    if (lws_write(v->wsi, msg, len, LWS_WRITE_BINARY) < (int)len) return -1;
    *sent += len;
    v->last_out_us = rc_now_us();
    return 0;
}

/* Writes tiles of the packet being sent until it is done, the socket is choked or RC_SEND_BUDGET bytes went out.
 * Returns -1 to close. */
static int write_frame(rc_viewer *v) {
    rc_session_state st;
    rc_session_get_state(v->session, &st); /* this viewer's round trip and protocol, for the headers */
    size_t sent = 0;
    while (v->sending) {
        rc_packet *pk = v->sending;
        size_t before = sent;
        if (write_tile(v, pk, v->tile, &st, &sent)) return -1;
        v->bytes_sent += sent - before; /* /metrics */
        if (++v->tile == pk->ntiles) {
            v->frames_sent++;
            rc_packet_unref(pk);
            v->sending = NULL;
        }
        if (sent >= RC_SEND_BUDGET || lws_send_pipe_choked(v->wsi)) break;
    }
    return 0;
}

int rc_viewer_writable(rc_viewer *v) {
    if (v->close_code) {
        if (!v->close_now) return 0; /* grace period: the timer ends it */
        lws_close_reason(v->wsi, (enum lws_close_status)v->close_code, (unsigned char *)v->close_reason,
                         strlen(v->close_reason));
        return -1;
    }
    if (!v->sending) {
        if (v->ntext) {
            char *b = v->text[0];
            size_t n = v->text_len[0];
            memmove(v->text, v->text + 1, sizeof(v->text[0]) * (size_t)(v->ntext - 1));
            memmove(v->text_len, v->text_len + 1, sizeof(v->text_len[0]) * (size_t)(v->ntext - 1));
            v->ntext--;
            int w = lws_write(v->wsi, (unsigned char *)b + LWS_PRE, n, LWS_WRITE_TEXT);
            free(b);
            if (w < (int)n) return -1;
            v->last_out_us = rc_now_us();
            lws_callback_on_writable(v->wsi); /* more text, or a frame */
            return 0;
        }
        rc_packet *pk = NULL;
        if (rc_session_next(v->session, rc_now_us(), &pk, NULL)) {
            v->sending = pk;
            v->tile = 0;
        }
    }
    if (v->sending && write_frame(v)) return -1;
    if (v->sending || v->ntext) lws_callback_on_writable(v->wsi);
    else rc_viewer_service(v); /* another packet may be ready already */
    return 0;
}
