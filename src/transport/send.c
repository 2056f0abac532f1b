/*
 * send.c — frames and notices out to one viewer. Text notices go only between binary messages. A packet from
 * the session goes out tile by tile, each tile one binary WebSocket message [56-byte header | payload] sent as
 * fragments of at most RC_CHUNK bytes, RC_CHUNKS_PER_WRITABLE per writable callback, so one big frame never
 * holds up other viewers. The header is written per viewer (wire.c) when its tile starts: it carries that
 * viewer's round trip. Network thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/transport_internal.h"

/* Writes up to RC_CHUNKS_PER_WRITABLE fragments of the packet being sent. Returns -1 to close. */
static int write_frame(rc_viewer *v) {
    for (int k = 0; k < RC_CHUNKS_PER_WRITABLE && v->sending; k++) {
        rc_packet *pk = v->sending;
        const rc_buf *payload = &pk->tiles[v->tile].data;
        size_t len = RC_FRAME_HEADER_SIZE + payload->len;
        if (v->off == 0) {
            rc_session_state st;
            rc_session_get_state(v->session, &st);
            rc_wire_tile_header(pk, v->tile, st.rtt_us, st.protocol, v->header);
        }
        size_t n = len - v->off < RC_CHUNK ? len - v->off : RC_CHUNK;
        uint8_t *dst = v->chunk + LWS_PRE;
        size_t h = 0; /* header bytes in this fragment */
        if (v->off < RC_FRAME_HEADER_SIZE) {
            h = RC_FRAME_HEADER_SIZE - v->off;
            if (h > n) h = n;
            memcpy(dst, v->header + v->off, h);
        }
        if (n > h) memcpy(dst + h, rc_buf_data(payload) + (v->off + h - RC_FRAME_HEADER_SIZE), n - h);
        int flags = v->off == 0 ? LWS_WRITE_BINARY : LWS_WRITE_CONTINUATION;
        if (v->off + n < len) flags |= LWS_WRITE_NO_FIN;
        if (lws_write(v->wsi, dst, n, (enum lws_write_protocol)flags) < (int)n) return -1;
        v->off += n;
        if (v->off == len) {
            v->off = 0;
            if (++v->tile == pk->ntiles) {
                rc_packet_unref(pk);
                v->sending = NULL;
            }
        }
        if (lws_send_pipe_choked(v->wsi)) break;
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
            lws_callback_on_writable(v->wsi); /* more text, or a frame */
            return 0;
        }
        rc_packet *pk = NULL;
        if (rc_session_next(v->session, rc_now_us(), &pk, NULL)) {
            v->sending = pk;
            v->tile = 0;
            v->off = 0;
        }
    }
    if (v->sending && write_frame(v)) return -1;
    if (v->sending || v->ntext) lws_callback_on_writable(v->wsi);
    else rc_viewer_service(v); /* another packet may be ready already */
    return 0;
}
