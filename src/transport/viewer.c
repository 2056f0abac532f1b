/* SPDX-License-Identifier: MIT */
/*
 * viewer.c — the transport's WebSocket viewers: a connection becomes a viewer with a session of its canvas;
 * client messages (acks, events, visibility) are validated (wire.c) and handed to the session; what changed in
 * the session (role, title, encoder, closing) goes out as text notices, written with cJSON; bad input closes that
 * one connection with a code and reason after a short grace period. Network thread only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport_internal.h"
#include "stream/rate.h"

#include <cjson/cJSON.h>

void rc_viewer_queue_text(rc_viewer *v, const char *json) {
    if (v->ntext == RC_MAX_TEXT_QUEUE) {
        rc_log_limited(&v->t->ratelog, v->t->log, "text queue full", RCANVAS_LOG_WARN, "viewer %u: text queue full, dropping a message", v->id);
        return;
    }
    size_t n = strlen(json);
    char *b = malloc(LWS_PRE + n + 1);
    if (!b) {
        rc_log(v->t->log, RCANVAS_LOG_ERROR, "viewer %u: out of memory for a text message", v->id);
        return;
    }
    memcpy(b + LWS_PRE, json, n + 1);
    v->text[v->ntext] = b;
    v->text_len[v->ntext] = n;
    v->ntext++;
}

/* Queues o as one text message (cJSON's unformatted print) and frees it. */
static void queue_json(rc_viewer *v, cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    if (s) rc_viewer_queue_text(v, s);
    else rc_log(v->t->log, RCANVAS_LOG_ERROR, "viewer %u: out of memory for a text message", v->id);
    cJSON_free(s);
    cJSON_Delete(o);
}

/* A notice {"type": type} to add fields to (NULL: out of memory, which queue_json reports). */
static cJSON *notice(const char *type) {
    cJSON *o = cJSON_CreateObject();
    if (o) cJSON_AddStringToObject(o, "type", type);
    return o;
}

/* The live codec's fields of hello and encoder notices: "codec", and for video "codec_string" and "color" (what
 * the client configures its VideoDecoder with; docs/protocol.md, version 2). */
static void add_codec_fields(cJSON *o, const rc_codec_type *encoder) {
    const rc_codec_type *live = encoder && encoder->wire_id == RCANVAS_CODEC_JPEG ? &rc_codec_jpeg : encoder;
    cJSON_AddStringToObject(o, "codec", live ? live->name : "jpeg");
    if (!live || !live->webcodecs) return;
    cJSON_AddStringToObject(o, "codec_string", live->webcodecs);
    cJSON *c = cJSON_AddObjectToObject(o, "color");
    cJSON_AddStringToObject(c, "primaries", "smpte170m");
    cJSON_AddStringToObject(c, "transfer", "smpte170m");
    cJSON_AddStringToObject(c, "matrix", "smpte170m");
    cJSON_AddBoolToObject(c, "full_range", 0);
}

/* x to 2 significant digits, a whole number: link notices go out when something changed, not on every ack */
static double round2(double x) {
    if (x <= 0) return 0;
    double step = pow(10, floor(log10(x)) - 1);
    return round(round(x / step) * step);
}

/* The viewer's link and its encoder's settings as fields of o (docs/protocol.md, "link"). */
static void add_link_fields(cJSON *o, const rc_session_state *st) {
    cJSON_AddNumberToObject(o, "rate_kbps", round2(st->rate_kbps));
    cJSON_AddNumberToObject(o, "target_kbps", round2(st->target_kbps));
    cJSON_AddNumberToObject(o, "rtt_ms", (st->srtt_us + 500) / 1000);
    cJSON_AddNumberToObject(o, "min_rtt_ms", (st->min_rtt_us + 500) / 1000);
    cJSON_AddNumberToObject(o, "window", st->window);
    cJSON_AddNumberToObject(o, "rung", st->rung);
    cJSON_AddNumberToObject(o, "quality", st->quality);
    cJSON_AddNumberToObject(o, "scale", st->scale_div ? st->scale_div : 1);
    cJSON_AddNumberToObject(o, "fps_cap", round(st->fps_cap));
    cJSON_AddNumberToObject(o, "bitrate_kbps", round2(st->bitrate_kbps));
    cJSON_AddStringToObject(o, "limit", rc_limit_name(st->limit));
    cJSON_AddNumberToObject(o, "fill_fps", round(st->fill_fps));
    cJSON_AddNumberToObject(o, "screen", st->screen);
}

/* The link fields as the text they print to (told_link: what was last sent); "" where they do not fit. */
static void link_text(const rc_session_state *st, char *out, int cap) {
    cJSON *o = cJSON_CreateObject();
    out[0] = '\0';
    if (o) add_link_fields(o, st);
    if (!o || !cJSON_PrintPreallocated(o, out, cap, 0)) out[0] = '\0';
    cJSON_Delete(o);
}

/* Queues {"type":"cursor","cursor":"pointer"} once the canvas has set one (after the hello of a new viewer, and on
 * every change). */
static void queue_cursor(rc_viewer *v) {
    rc_session_hello h;
    rc_session_get_hello(v->session, &h);
    cJSON *o = notice("cursor");
    if (o) cJSON_AddStringToObject(o, "cursor", h.cursor);
    queue_json(v, o);
    v->told_cursor_version = h.cursor_version;
}

static void queue_hello(rc_viewer *v) {
    rc_session_hello h;
    rc_session_state st;
    rc_session_get_hello(v->session, &h);
    rc_session_get_state(v->session, &st);
    v->told_title_version = h.title_version;
    v->told_active = st.active;
    v->told_encoder = st.encoder;
    link_text(&st, v->told_link, sizeof v->told_link);
    v->told_link_us = rc_now_us();
    v->told_width = h.size.width;
    v->told_height = h.size.height;
    v->told_ratio = h.size.pixel_ratio;
    cJSON *o = notice("hello");
    if (o) {
        cJSON_AddNumberToObject(o, "protocol", st.protocol);
        cJSON_AddStringToObject(o, "canvas", h.canvas);
        cJSON_AddStringToObject(o, "title", h.title);
        cJSON_AddNumberToObject(o, "width", h.size.width);
        cJSON_AddNumberToObject(o, "height", h.size.height);
        cJSON_AddNumberToObject(o, "pixel_ratio", h.size.pixel_ratio);
        static const char *const image_codecs[] = {"jpeg", "png"};
        cJSON_AddItemToObject(o, "codecs", cJSON_CreateStringArray(image_codecs, 2));
        add_codec_fields(o, st.encoder);
        cJSON_AddStringToObject(o, "encoder", st.encoder ? st.encoder->name : "jpeg");
        cJSON_AddNumberToObject(o, "viewer_id", v->id);
        cJSON_AddBoolToObject(o, "active", st.active);
        cJSON_AddBoolToObject(o, "view_only", v->view_only);
        cJSON_AddNumberToObject(o, "max_in_flight", h.max_in_flight);
        cJSON_AddNumberToObject(o, "max_message_bytes", (double)v->t->max_message_bytes);
        cJSON_AddNumberToObject(o, "heartbeat_ms", RC_HEARTBEAT_US / 1000);
        add_link_fields(cJSON_AddObjectToObject(o, "link"), &st);
    }
    queue_json(v, o);
}

/* Closes the viewer with code and reason after a grace period of RC_CLOSE_GRACE_US in which its input is read
 * and discarded: a client that sent a burst (the usual case for junk) has then finished, so our close frame is
 * read by it instead of being lost to a TCP reset caused by unread data (which the browser reports as 1006). */
void rc_viewer_request_close(rc_viewer *v, int code, const char *reason) {
    if (v->close_code) return;
    v->close_code = code;
    snprintf(v->close_reason, sizeof v->close_reason, "%s", reason);
    if (v->session) rc_session_set_closing(v->session);
    lws_set_timer_usecs(v->wsi, RC_CLOSE_GRACE_US);
}

void rc_viewer_service(rc_viewer *v) {
    if (v->close_code) return;
    rc_session_state st;
    rc_session_get_state(v->session, &st);
    if (st.closing) {
        rc_viewer_request_close(v, LWS_CLOSE_STATUS_GOINGAWAY, "canvas closed");
        return;
    }
    char link[RC_LINK_FIELDS_MAX];
    int64_t now = rc_now_us();
    int role_changed = st.active != v->told_active;
    /* printed only when it could go out (a role change, or RC_LINK_NOTICE_US since the last look): not on every
     * ack. The look counts whether or not the text changed: a steady link's text was printed again on every call
     * (several a frame) once its last notice was RC_LINK_NOTICE_US old, cJSON's numbers each a printf and a scanf
     * of the net thread's time. */
    int due = role_changed || (now - v->told_link_us >= RC_LINK_NOTICE_US && v->ntext == 0);
    if (due) {
        link_text(&st, link, sizeof link);
        v->told_link_us = now;
    }
    if (role_changed || (due && strcmp(link, v->told_link))) {
        /* a role notice carries the link; else a link notice, at most every RC_LINK_NOTICE_US and never ahead of
         * other notices */
        cJSON *o = notice(role_changed ? "role" : "link");
        if (o && role_changed) {
            cJSON_AddBoolToObject(o, "active", st.active);
            add_link_fields(cJSON_AddObjectToObject(o, "link"), &st);
        } else if (o) {
            add_link_fields(o, &st);
        }
        queue_json(v, o);
        v->told_active = st.active;
        memcpy(v->told_link, link, sizeof link);
    }
    if (st.title_version != v->told_title_version) {
        rc_session_hello h;
        rc_session_get_hello(v->session, &h);
        cJSON *o = notice("title");
        if (o) cJSON_AddStringToObject(o, "title", h.title);
        queue_json(v, o);
        v->told_title_version = h.title_version;
    }
    if (st.cursor_version != v->told_cursor_version) queue_cursor(v);
    if (st.size.width != v->told_width || st.size.height != v->told_height || st.size.pixel_ratio != v->told_ratio) {
        /* the canvas's logical size changed (the active viewer resized): every viewer maps its pointer coordinates into
         * it, and a viewer of another size letterboxes the frames */
        cJSON *o = notice("size");
        if (o) {
            cJSON_AddNumberToObject(o, "width", st.size.width);
            cJSON_AddNumberToObject(o, "height", st.size.height);
            cJSON_AddNumberToObject(o, "pixel_ratio", st.size.pixel_ratio);
        }
        queue_json(v, o);
        v->told_width = st.size.width;
        v->told_height = st.size.height;
        v->told_ratio = st.size.pixel_ratio;
    }
    if (st.encoder != v->told_encoder && st.encoder) { /* codec changed, or a GPU encoder came or went */
        cJSON *o = notice("encoder");
        if (o) {
            cJSON_AddStringToObject(o, "encoder", st.encoder->name);
            add_codec_fields(o, st.encoder);
        }
        queue_json(v, o);
        v->told_encoder = st.encoder;
    }
    if (v->ntext || (!v->sending && st.ready)) lws_callback_on_writable(v->wsi);
}

int rc_viewer_established(struct lws *wsi, rc_transport *t, rc_pss *p) {
    rc_viewer *v = calloc(1, sizeof(*v));
    if (v) v->rx = malloc(t->max_message_bytes);
    int r = v && v->rx ? rc_registry_open(t->registry, p->canvas, strlen(p->canvas), &p->caps, &v->session)
                       : RCANVAS_ENOMEM;
    if (r) {
        if (v) free(v->rx);
        free(v);
        return -1; /* WSI_DESTROY releases the reservation */
    }
    p->reserved = 0; /* the viewer owns the slot now; rc_viewer_closed releases it */
    v->view_only = p->caps.view_only;
    v->wsi = wsi;
    v->t = t;
    v->id = rc_session_id(v->session);
    v->next = t->viewers;
    t->viewers = v;
    p->v = v;
    v->last_out_us = rc_now_us();
    char peer[64] = "", from[80] = " (its peer already gone)"; /* it reset the connection right after asking */
    if (rc_transport_peer(wsi, peer, sizeof peer)) snprintf(from, sizeof from, " from %s", peer);
    queue_hello(v);
    rc_log(t->log, RCANVAS_LOG_INFO, "viewer %u connected%s to canvas '%s'%s", v->id, from, p->canvas,
           v->told_active ? " (active)" : v->view_only ? " (view-only)" : "");
    rc_viewer_service(v);
    lws_callback_on_writable(wsi);
    return 0;
}

static void bad_message(rc_viewer *v, const char *what) {
    rc_transport *t = v->t;
    v->bad_msgs++;
    rc_log_limited(&t->ratelog, t->log, "bad message", RCANVAS_LOG_WARN, "viewer %u: dropped message (%s); %d of %d allowed", v->id, what, v->bad_msgs,
           t->max_bad_messages);
    if (v->bad_msgs > t->max_bad_messages)
        rc_viewer_request_close(v, LWS_CLOSE_STATUS_POLICY_VIOLATION, "too many malformed messages");
}

/* A view-only viewer's event (pointer, keys, wheel, resize): dropped and counted, logged once; the connection
 * stays open (its page may send input as any page does). Acks, keyframe requests and visibility still count:
 * they concern only its own stream. */
static void drop_view_only_input(rc_viewer *v) {
    if (v->dropped_input++ == 0)
        rc_log(v->t->log, RCANVAS_LOG_INFO, "viewer %u is view-only: its input is dropped", v->id);
}

static void handle_message(rc_viewer *v, const char *json, size_t len) {
    rc_client_msg m;
    const char *why = NULL;
    if (rc_client_msg_parse(json, len, &m, &why) != RCANVAS_OK) {
        bad_message(v, why);
        return;
    }
    if (m.kind == RC_MSG_ACK) {
        if (rc_session_ack_decoded(v->session, m.ack_seq, m.ack_hold_us, m.ack_decode_us, rc_now_us()) != RCANVAS_OK) {
            char what[64];
            snprintf(what, sizeof what, "ack of seq %u that was not in flight", m.ack_seq);
            bad_message(v, what);
            return;
        }
        rc_viewer_service(v); /* its window opened: the newest packet (or a refinement made meanwhile) */
        return;
    }
    if (m.kind == RC_MSG_KEYFRAME) {
        rc_session_request_keyframe(v->session);
        return;
    }
    if (m.kind == RC_MSG_VISIBILITY) {
        rc_session_set_visible(v->session, m.visible);
        return;
    }
    if (v->view_only) {
        drop_view_only_input(v);
        return;
    }
    m.event.server_time_us = rc_now_us();
    rc_session_push_event(v->session, &m.event);
}

int rc_viewer_receive(rc_viewer *v, const void *in, size_t len) {
    rc_transport *t = v->t;
    if (v->close_code) return 0;
    /* Refusals close through the writable callback (close frame, then the peer's reply) rather than by returning
     * -1 here: dropping the TCP connection with client data unread makes the kernel send a reset, and the
     * browser would then see 1006 instead of our code and reason. Input after that is discarded. */
    if (lws_frame_is_binary(v->wsi)) {
        rc_log_limited(&t->ratelog, t->log, "binary message", RCANVAS_LOG_WARN, "viewer %u: binary message, closing", v->id);
        rc_viewer_request_close(v, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, "binary messages are not accepted");
        return 0;
    }
    size_t remaining = lws_remaining_packet_payload(v->wsi);
    if (len > t->max_message_bytes - v->rx_len || remaining > t->max_message_bytes - v->rx_len - len) {
        rc_log_limited(&t->ratelog, t->log, "message too big", RCANVAS_LOG_WARN, "viewer %u: message over %zu bytes, closing", v->id, t->max_message_bytes);
        char r[64];
        snprintf(r, sizeof r, "message larger than %zu bytes", t->max_message_bytes);
        rc_viewer_request_close(v, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, r);
        return 0;
    }
    memcpy(v->rx + v->rx_len, in, len);
    v->rx_len += len;
    if (!lws_is_final_fragment(v->wsi) || lws_remaining_packet_payload(v->wsi) > 0) return 0;
    handle_message(v, (const char *)v->rx, v->rx_len);
    v->rx_len = 0;
    return 0;
}

void rc_viewer_heartbeat(rc_viewer *v, int64_t now_us) {
    if (v->close_code || v->sending || v->ntext || now_us - v->last_out_us < RC_HEARTBEAT_US) return;
    rc_viewer_queue_text(v, "{\"type\":\"ping\"}");
    v->last_out_us = now_us; /* one at a time: the next is due RC_HEARTBEAT_US later, sent or not */
    lws_callback_on_writable(v->wsi);
}

void rc_viewer_timer(rc_viewer *v) {
    if (!v->close_code) return;
    v->close_now = 1; /* grace period over */
    lws_callback_on_writable(v->wsi);
}

void rc_viewer_closed(rc_viewer *v) {
    rc_transport *t = v->t;
    if (v->dropped_input)
        rc_log(t->log, RCANVAS_LOG_INFO, "viewer %u disconnected (view-only: %llu events dropped)", v->id,
               (unsigned long long)v->dropped_input);
    else
        rc_log(t->log, RCANVAS_LOG_INFO, "viewer %u disconnected", v->id);
    rc_viewer **pp = &t->viewers;
    while (*pp && *pp != v) pp = &(*pp)->next;
    if (*pp) *pp = v->next;
    rc_session_close(v->session); /* another viewer may become active: the wake that follows tells it */
    rc_packet_unref(v->sending);
    for (int i = 0; i < v->ntext; i++) free(v->text[i]);
    free(v->rx);
    free(v);
    rc_transport_release_slot(t);
    rc_transport_wake(t);
}
