/*
 * server.c — the transport stage: one libwebsockets context on its own network thread serves the page, the
 * embedded client and the WebSockets. Per viewer it keeps flow control (frames sent and not acked), the newest
 * packet waiting to be sent (newest wins), and sends each tile as fragments of ≤ 64 KiB so one big frame never
 * holds up other viewers. Client messages (events, acks) are validated here and handed to the canvas.
 * Other threads reach the network thread only through rc_server_wake() (lws_cancel_service).
 */
#include <errno.h>
#include <libwebsockets.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream/canvas.h"
#include "transport/assets.h"
#include "transport/protocol.h"
#include "transport/server_internal.h"

_Static_assert(LWS_PRE + RC_FRAME_HEADER_SIZE <= RC_BUF_HEAD, "head room too small for LWS_PRE + header");

#define MAX_CANVASES 64
#define CHUNK (64 * 1024)
#define MAX_INFLIGHT_TRACK 16
#define MAX_TEXT_QUEUE 8
#define CHUNKS_PER_WRITABLE 4
/* An active viewer whose window stays full this long while others watch loses the active role, so one stalled
 * or hostile client cannot freeze the canvas for everybody (it keeps its connection and gets frames as a
 * passive viewer when it acks again). */
#define STALL_US 2000000

typedef struct canvas_entry {
    rcanvas_canvas *c;
    int detaching;
} canvas_entry;

typedef struct rc_viewer rc_viewer;
struct rc_viewer {
    struct lws *wsi;
    rcanvas_server *srv;
    rcanvas_canvas *canvas;
    rc_viewer *next;
    uint32_t id;
    int active;
    /* sending */
    rc_packet *sending;
    int tile;
    size_t off;
    rc_packet *pending;
    uint32_t given_seq;     /* newest live frame assigned to this viewer */
    uint32_t lossless_seq;  /* newest seq assigned in lossless form */
    int title_version;
    const char *encoder;    /* encoder name last told to this viewer (hello or "encoder" message) */
    /* flow control */
    struct { uint32_t seq; int64_t present_us, sent_us; } inflight[MAX_INFLIGHT_TRACK];
    int if_head, n_inflight;
    uint32_t acked_seq;
    uint32_t rtt_us;
    /* input */
    uint8_t *rx;
    size_t rx_len;
    int bad_msgs;
    int have_resize;
    rcanvas_event last_resize;
    /* text out: each buffer has LWS_PRE head room */
    char *text[MAX_TEXT_QUEUE];
    size_t text_len[MAX_TEXT_QUEUE];
    int ntext;
    /* close */
    int close_code;
    int close_now;            /* grace period over: send the close frame */
    char close_reason[100];
    uint8_t chunk[LWS_PRE + CHUNK];
};

typedef struct pss {
    rc_viewer *v;              /* WebSocket */
    rcanvas_canvas *canvas;    /* set at upgrade filtering */
    int reserved;              /* holds one of max_viewers until it becomes a viewer */
    unsigned char *body;       /* HTTP response body with LWS_PRE head room */
    size_t body_len;
} pss;

struct rcanvas_server {
    char host[256];
    char token[129];
    char **origins;
    int n_origins;
    int max_viewers;
    size_t max_message_bytes;
    int max_bad_messages;
    uint32_t max_frame_dim;
    rc_logger log;
    rc_pool *pool;

    struct lws_context *ctx;
    struct lws_protocols protocols[2];
    int port;
    pthread_t thread;
    int thread_started;
    atomic_int stop;
    lws_sorted_usec_list_t refine_sul;

    pthread_mutex_t mu;        /* canvases, nviewers; cv: detach waits */
    pthread_cond_t cv;
    canvas_entry canvases[MAX_CANVASES];
    int ncanvases;
    int nviewers;

    rc_viewer *viewers;        /* network thread only */
    uint32_t next_viewer_id;
};

/* ---- lws log routing: lws logs globally, so the newest server's logger gets its lines ---- */

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static rc_logger g_lws_logger;

static void lws_emit(int level, const char *line) {
    pthread_mutex_lock(&g_log_mu);
    rc_logger lg = g_lws_logger;
    pthread_mutex_unlock(&g_log_mu);
    char buf[400];
    snprintf(buf, sizeof buf, "lws: %s", line);
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
    rc_log(&lg, level == LLL_ERR ? RCANVAS_LOG_ERROR : RCANVAS_LOG_WARN, "%s", buf);
}

/* ---- the internal interface for canvas.c ---- */

rc_pool *rc_server_pool(rcanvas_server *s) { return s->pool; }
const rc_logger *rc_server_logger(rcanvas_server *s) { return &s->log; }
uint32_t rc_server_max_frame_dim(rcanvas_server *s) { return s->max_frame_dim; }

void rc_server_wake(rcanvas_server *s) {
    if (s->ctx) lws_cancel_service(s->ctx);
}

int rc_server_attach(rcanvas_server *s, rcanvas_canvas *c) {
    int r = RCANVAS_OK;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->ncanvases; i++)
        if (!strcmp(s->canvases[i].c->name, c->name)) r = RCANVAS_EEXIST;
    if (!r && s->ncanvases == MAX_CANVASES) r = RCANVAS_ENOMEM;
    if (!r) s->canvases[s->ncanvases++] = (canvas_entry){.c = c, .detaching = 0};
    pthread_mutex_unlock(&s->mu);
    return r;
}

void rc_server_detach(rcanvas_server *s, rcanvas_canvas *c) {
    pthread_mutex_lock(&s->mu);
    int idx = -1;
    for (int i = 0; i < s->ncanvases; i++)
        if (s->canvases[i].c == c) idx = i;
    if (idx < 0) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    s->canvases[idx].detaching = 1;
    pthread_mutex_unlock(&s->mu);
    rc_server_wake(s);
    pthread_mutex_lock(&s->mu);
    while (rcanvas_canvas_viewer_count(c) > 0 && s->thread_started && !atomic_load(&s->stop))
        pthread_cond_wait(&s->cv, &s->mu);
    for (int i = 0; i < s->ncanvases; i++)
        if (s->canvases[i].c == c) {
            s->canvases[i] = s->canvases[--s->ncanvases];
            break;
        }
    pthread_mutex_unlock(&s->mu);
}

/* ---- helpers ---- */

static rcanvas_canvas *find_canvas(rcanvas_server *s, const char *name, size_t len) {
    rcanvas_canvas *found = NULL;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->ncanvases; i++) {
        canvas_entry *e = &s->canvases[i];
        if (!e->detaching && strlen(e->c->name) == len && !memcmp(e->c->name, name, len)) found = e->c;
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

static int canvas_detaching(rcanvas_server *s, rcanvas_canvas *c) {
    int d = 1;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->ncanvases; i++)
        if (s->canvases[i].c == c) d = s->canvases[i].detaching;
    pthread_mutex_unlock(&s->mu);
    return d;
}

/* Parses "/ws" or "/c/NAME/ws" (ws = 1) or "/", "/c/NAME", "/c/NAME/" (ws = 0) into the canvas name.
 * Returns 0 and name/len, or -1 if the path is not of that shape. */
static int parse_canvas_path(const char *path, int ws, const char **name, size_t *len) {
    if (ws) {
        if (!strcmp(path, "/ws")) {
            *name = "";
            *len = 0;
            return 0;
        }
        if (strncmp(path, "/c/", 3)) return -1;
        const char *n = path + 3, *slash = strchr(n, '/');
        if (!slash || strcmp(slash, "/ws") || slash == n) return -1;
        *name = n;
        *len = (size_t)(slash - n);
        return 0;
    }
    if (!strcmp(path, "/") || !strcmp(path, "/index.html")) {
        *name = "";
        *len = 0;
        return 0;
    }
    if (strncmp(path, "/c/", 3)) return -1;
    const char *n = path + 3;
    size_t l = strlen(n);
    if (l > 0 && n[l - 1] == '/') l--;
    if (l == 0 || memchr(n, '/', l)) return -1;
    *name = n;
    *len = l;
    return 0;
}

/* 0 ok, 401 no token, 403 wrong token. */
static int check_token(struct lws *wsi, rcanvas_server *s) {
    char buf[200];
    const char *v = lws_get_urlarg_by_name(wsi, "token=", buf, (int)sizeof buf);
    if (!v) v = lws_get_urlarg_by_name(wsi, "token", buf, (int)sizeof buf);
    if (!v) return 401;
    if (*v == '=') v++;
    return rc_consttime_equal(v, strlen(v), s->token, strlen(s->token)) ? 0 : 403;
}

/* Origin must be absent, same host:port as Host, or allow-listed. */
static int check_origin(struct lws *wsi, rcanvas_server *s) {
    char origin[300], host[300];
    int ol = lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN);
    if (ol <= 0) return 0;
    if (ol >= (int)sizeof origin || lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) < 0) return -1;
    for (int i = 0; i < s->n_origins; i++)
        if (!strcasecmp(origin, s->origins[i])) return 0;
    int hl = lws_hdr_total_length(wsi, WSI_TOKEN_HOST);
    if (hl <= 0 || hl >= (int)sizeof host || lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) < 0) return -1;
    const char *o = strstr(origin, "://");
    if (!o) return -1;
    o += 3;
    return strcasecmp(o, host) ? -1 : 0;
}

static void queue_text(rc_viewer *v, const char *json) {
    if (v->ntext == MAX_TEXT_QUEUE) {
        rc_log(&v->srv->log, RCANVAS_LOG_WARN, "viewer %u: text queue full, dropping a message", v->id);
        return;
    }
    size_t n = strlen(json);
    char *b = malloc(LWS_PRE + n + 1);
    if (!b) {
        rc_log(&v->srv->log, RCANVAS_LOG_ERROR, "viewer %u: out of memory for a text message", v->id);
        return;
    }
    memcpy(b + LWS_PRE, json, n + 1);
    v->text[v->ntext] = b;
    v->text_len[v->ntext] = n;
    v->ntext++;
}

/* JSON string body (without quotes) of s, escaped, into out. */
static void json_escape(char *out, size_t cap, const char *s) {
    size_t o = 0;
    for (; *s && o + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch < 0x20) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = '\0';
}

/* Encoder of the canvas's live frames, as viewers are told: "jpeg", "png" or "jpeg-gpu" (the Vulkan compute
 * encoder; a frame it is too busy for is still encoded on the CPU). c->mu held. */
static const char *encoder_name_locked(const rcanvas_canvas *c) {
    if (c->params.codec == RCANVAS_CODEC_PNG) return "png";
    return c->gpu_jpeg ? "jpeg-gpu" : "jpeg";
}

static void queue_hello(rc_viewer *v) {
    rcanvas_canvas *c = v->canvas;
    char title[256 * 6 + 1], msg[2400];
    pthread_mutex_lock(&c->mu);
    json_escape(title, sizeof title, c->title);
    v->title_version = c->title_version;
    rcanvas_size sz = c->size;
    const char *codec = c->params.codec == RCANVAS_CODEC_PNG ? "png" : "jpeg";
    v->encoder = encoder_name_locked(c);
    pthread_mutex_unlock(&c->mu);
    snprintf(msg, sizeof msg,
             "{\"type\":\"hello\",\"protocol\":%d,\"canvas\":\"%s\",\"title\":\"%s\",\"width\":%.17g,"
             "\"height\":%.17g,\"pixel_ratio\":%.17g,\"codecs\":[\"jpeg\",\"png\"],\"codec\":\"%s\","
             "\"encoder\":\"%s\",\"viewer_id\":%u,\"active\":%s,\"max_in_flight\":%d,\"max_message_bytes\":%zu}",
             RCANVAS_PROTOCOL_VERSION, c->name, title, sz.width, sz.height, sz.pixel_ratio, codec, v->encoder, v->id,
             v->active ? "true" : "false", c->max_in_flight, v->srv->max_message_bytes);
    queue_text(v, msg);
}

/* Closes the viewer with code and reason after a grace period of CLOSE_GRACE_US in which its input is read and
 * discarded: a client that sent a burst (the usual case for junk) has then finished, so our close frame is read
 * by it instead of being lost to a TCP reset caused by unread data (which the browser reports as 1006). */
#define CLOSE_GRACE_US 50000
static void request_close(rc_viewer *v, int code, const char *reason) {
    if (v->close_code) return;
    v->close_code = code;
    snprintf(v->close_reason, sizeof v->close_reason, "%s", reason);
    lws_set_timer_usecs(v->wsi, CLOSE_GRACE_US);
}

static int can_send_more(const rc_viewer *v) { return v->n_inflight < v->canvas->max_in_flight; }

/* Takes the canvas's newest packets for this viewer (newest wins) and asks for a writable callback. */
static void service_viewer(rc_viewer *v) {
    rcanvas_canvas *c = v->canvas;
    rc_packet *take = NULL, *drop = NULL;
    char title_msg[256 * 6 + 40] = "";
    const char *encoder;
    pthread_mutex_lock(&c->mu);
    if (c->latest && c->latest->seq > v->given_seq) {
        /* a viewer that joins a still scene gets the lossless version straight away */
        int use_refined = c->refined && c->refined->seq == c->latest->seq;
        take = rc_packet_ref(use_refined ? c->refined : c->latest);
        v->given_seq = take->seq;
        if (take->flags & RC_FLAG_LOSSLESS) v->lossless_seq = take->seq;
    } else if (c->refined && c->refined->seq == v->given_seq && v->lossless_seq < c->refined->seq) {
        take = rc_packet_ref(c->refined);
        v->lossless_seq = take->seq;
    }
    if (c->title_version != v->title_version) {
        char esc[256 * 6 + 1];
        json_escape(esc, sizeof esc, c->title);
        snprintf(title_msg, sizeof title_msg, "{\"type\":\"title\",\"title\":\"%s\"}", esc);
        v->title_version = c->title_version;
    }
    encoder = encoder_name_locked(c);
    pthread_mutex_unlock(&c->mu);
    if (encoder != v->encoder) { /* codec changed, or a GPU encoder came or went */
        char enc_msg[64];
        snprintf(enc_msg, sizeof enc_msg, "{\"type\":\"encoder\",\"encoder\":\"%s\"}", encoder);
        v->encoder = encoder;
        queue_text(v, enc_msg);
    }
    if (take) {
        drop = v->pending;
        v->pending = take;
    }
    rc_packet_unref(drop);
    if (title_msg[0]) queue_text(v, title_msg);
    if ((v->pending && can_send_more(v)) || v->ntext) lws_callback_on_writable(v->wsi);
}

static void arm_refine(rcanvas_server *s);

static void refine_timer(lws_sorted_usec_list_t *sul) {
    rcanvas_server *s = lws_container_of(sul, rcanvas_server, refine_sul);
    arm_refine(s);
}

/* Starts due refinements and schedules the timer for the next one. Network thread. */
static void arm_refine(rcanvas_server *s) {
    rcanvas_canvas *list[MAX_CANVASES];
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->ncanvases; i++)
        if (!s->canvases[i].detaching) list[n++] = s->canvases[i].c;
    pthread_mutex_unlock(&s->mu);
    int64_t now = rc_now_us(), next = -1;
    for (int i = 0; i < n; i++) {
        int64_t d = rc_canvas_refine_check(list[i], now);
        if (d >= 0 && (next < 0 || d < next)) next = d;
    }
    if (next >= 0) lws_sul_schedule(s->ctx, 0, &s->refine_sul, refine_timer, next + 1000);
}

static void on_wake(rcanvas_server *s) {
    for (rc_viewer *v = s->viewers; v; v = v->next) {
        if (canvas_detaching(s, v->canvas)) request_close(v, LWS_CLOSE_STATUS_GOINGAWAY, "canvas closed");
        else service_viewer(v);
    }
    arm_refine(s);
}

/* Writes up to CHUNKS_PER_WRITABLE fragments of the frame being sent. Returns -1 to close. */
static int write_frame(rc_viewer *v) {
    for (int k = 0; k < CHUNKS_PER_WRITABLE && v->sending; k++) {
        rc_packet *pk = v->sending;
        const uint8_t *msg = rc_packet_tile_msg(pk, v->tile);
        size_t len = rc_packet_tile_msg_len(pk, v->tile);
        size_t n = len - v->off < CHUNK ? len - v->off : CHUNK;
        uint8_t *dst = v->chunk + LWS_PRE;
        memcpy(dst, msg + v->off, n);
        if (v->off == 0) { /* per-viewer field: this viewer's last round trip */
            uint32_t r = v->rtt_us;
            for (int i = 0; i < 4; i++) dst[48 + i] = (uint8_t)(r >> (8 * i));
        }
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

static int on_writable(rc_viewer *v) {
    if (v->close_code) {
        if (!v->close_now) return 0; /* grace period: LWS_CALLBACK_TIMER ends it */
        lws_close_reason(v->wsi, (enum lws_close_status)v->close_code, (unsigned char *)v->close_reason,
                         strlen(v->close_reason));
        return -1;
    }
    if (!v->sending) {
        if (v->ntext) { /* text goes only between binary messages, never inside a fragmented one */
            char *b = v->text[0];
            size_t n = v->text_len[0];
            memmove(v->text, v->text + 1, sizeof(v->text[0]) * (size_t)(v->ntext - 1));
            memmove(v->text_len, v->text_len + 1, sizeof(v->text_len[0]) * (size_t)(v->ntext - 1));
            v->ntext--;
            int w = lws_write(v->wsi, (unsigned char *)b + LWS_PRE, n, LWS_WRITE_TEXT);
            free(b);
            if (w < (int)n) return -1;
            if (v->ntext || v->pending) lws_callback_on_writable(v->wsi);
            return 0;
        }
        if (v->pending && can_send_more(v)) {
            v->sending = v->pending;
            v->pending = NULL;
            v->tile = 0;
            v->off = 0;
            int slot = (v->if_head + v->n_inflight) % MAX_INFLIGHT_TRACK;
            v->inflight[slot].seq = v->sending->seq;
            v->inflight[slot].present_us = v->sending->present_us;
            v->inflight[slot].sent_us = rc_now_us();
            v->n_inflight++;
            if (v->active && !can_send_more(v)) lws_set_timer_usecs(v->wsi, STALL_US); /* see demote_if_stalled */
        }
    }
    if (v->sending && write_frame(v)) return -1;
    if (v->sending || v->ntext || (v->pending && can_send_more(v))) lws_callback_on_writable(v->wsi);
    return 0;
}

static void handle_message(rc_viewer *v, const char *json, size_t len) {
    rc_client_msg m;
    const char *why = NULL;
    rcanvas_server *s = v->srv;
    if (rc_client_msg_parse(json, len, &m, &why) != RCANVAS_OK) {
        v->bad_msgs++;
        rc_log(&s->log, RCANVAS_LOG_WARN, "viewer %u: dropped message (%s); %d of %d allowed", v->id, why,
               v->bad_msgs, s->max_bad_messages);
        if (v->bad_msgs > s->max_bad_messages) request_close(v, LWS_CLOSE_STATUS_POLICY_VIOLATION, "too many malformed messages");
        return;
    }
    if (m.kind == RC_MSG_ACK) {
        int found = 0;
        int64_t now = rc_now_us();
        while (v->n_inflight > 0 && !found) {
            uint32_t seq = v->inflight[v->if_head].seq;
            int64_t t0 = v->inflight[v->if_head].present_us;
            if (seq > m.ack_seq) break;
            v->if_head = (v->if_head + 1) % MAX_INFLIGHT_TRACK;
            v->n_inflight--;
            if (seq == m.ack_seq) {
                found = 1;
                int64_t rtt = now - t0;
                v->rtt_us = rtt < 0 ? 0 : rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
            }
        }
        if (!found) {
            v->bad_msgs++;
            rc_log(&s->log, RCANVAS_LOG_WARN, "viewer %u: ack of seq %u that was not in flight", v->id, m.ack_seq);
            if (v->bad_msgs > s->max_bad_messages)
                request_close(v, LWS_CLOSE_STATUS_POLICY_VIOLATION, "too many malformed messages");
            return;
        }
        if (m.ack_seq > v->acked_seq) v->acked_seq = m.ack_seq;
        rc_canvas_ack(v->canvas, v->id, m.ack_seq);
        service_viewer(v); /* its window opened: take the newest packet (or a refinement made meanwhile) */
        return;
    }
    m.event.viewer_id = v->id;
    m.event.server_time_us = rc_now_us();
    if (m.event.type == RCANVAS_EVENT_RESIZE) {
        v->last_resize = m.event;
        v->have_resize = 1;
    }
    rc_canvas_push_event(v->canvas, &m.event);
}

static void release_viewer_slot(rcanvas_server *s) {
    pthread_mutex_lock(&s->mu);
    s->nviewers--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static rc_viewer *oldest_other(rcanvas_server *s, rc_viewer *v, int include_closing);

/* heir has just become the active viewer in the canvas: tell it, and apply its last resize. */
static void announce_active(rc_viewer *heir) {
    heir->active = 1;
    queue_text(heir, "{\"type\":\"role\",\"active\":true}");
    if (heir->have_resize) rc_canvas_push_event(heir->canvas, &heir->last_resize);
    lws_callback_on_writable(heir->wsi);
}

static void viewer_free(rcanvas_server *s, rc_viewer *v) {
    rc_viewer **pp = &s->viewers;
    while (*pp && *pp != v) pp = &(*pp)->next;
    if (*pp) *pp = v->next;
    rc_viewer *heir = NULL;
    if (v->active) { /* prefer a viewer that is not being closed; else any, so the canvas keeps one */
        heir = oldest_other(s, v, 0);
        if (!heir) heir = oldest_other(s, v, 1);
    }
    rc_canvas_viewer_leave(v->canvas, v->id, heir ? heir->id : 0, heir ? heir->acked_seq : 0);
    if (heir) announce_active(heir);
    rc_packet_unref(v->sending);
    rc_packet_unref(v->pending);
    for (int i = 0; i < v->ntext; i++) free(v->text[i]);
    free(v->rx);
    free(v);
    release_viewer_slot(s);
}

/* The oldest other viewer of v's canvas (skipping those being closed unless include_closing), or NULL. */
static rc_viewer *oldest_other(rcanvas_server *s, rc_viewer *v, int include_closing) {
    rc_viewer *heir = NULL;
    for (rc_viewer *o = s->viewers; o; o = o->next)
        if (o != v && o->canvas == v->canvas && (include_closing || !o->close_code) && (!heir || o->id < heir->id))
            heir = o;
    return heir;
}

/* Hands the active role from v to heir: the canvas then follows heir's acks and size. */
static void hand_over(rc_viewer *v, rc_viewer *heir) {
    v->active = 0;
    queue_text(v, "{\"type\":\"role\",\"active\":false}");
    lws_callback_on_writable(v->wsi);
    rc_canvas_set_active(heir->canvas, heir->id, heir->acked_seq);
    announce_active(heir);
}

/* Timer of an active viewer whose window filled up: if it is still full and its oldest frame has waited
 * STALL_US, another viewer becomes active. */
static void demote_if_stalled(rcanvas_server *s, rc_viewer *v) {
    if (!v->active || can_send_more(v) || v->n_inflight == 0) return;
    int64_t waited = rc_now_us() - v->inflight[v->if_head].sent_us;
    if (waited < STALL_US) {
        lws_set_timer_usecs(v->wsi, STALL_US - waited);
        return;
    }
    rc_viewer *heir = oldest_other(s, v, 0);
    if (!heir) {
        lws_set_timer_usecs(v->wsi, STALL_US); /* alone: nobody to hand over to; look again later */
        return;
    }
    rc_log(&s->log, RCANVAS_LOG_WARN, "viewer %u acked nothing for %lld ms; viewer %u becomes active", v->id,
           (long long)(waited / 1000), heir->id);
    hand_over(v, heir);
}

/* ---- HTTP ---- */

static const char k_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
                            "connect-src 'self'; base-uri 'none'; form-action 'none'";

static int send_body(struct lws *wsi, pss *p, const char *ctype, const char *cache, const void *data, size_t len) {
    uint8_t hb[LWS_PRE + 2048], *start = hb + LWS_PRE, *pos = start, *end = hb + sizeof hb - 1;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, ctype, (lws_filepos_t)len, &pos, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:", (const unsigned char *)cache,
                                    (int)strlen(cache), &pos, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"x-content-type-options:",
                                    (const unsigned char *)"nosniff", 7, &pos, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"referrer-policy:",
                                    (const unsigned char *)"no-referrer", 11, &pos, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"content-security-policy:",
                                    (const unsigned char *)k_csp, (int)strlen(k_csp), &pos, end) ||
        lws_finalize_write_http_header(wsi, start, &pos, end))
        return -1;
    p->body = malloc(LWS_PRE + len + 1);
    if (!p->body) return -1;
    memcpy(p->body + LWS_PRE, data, len);
    p->body_len = len;
    lws_callback_on_writable(wsi);
    return 0;
}

static const rc_asset *find_asset(const char *name) {
    for (const rc_asset *a = rc_assets; a->name; a++)
        if (!strcmp(a->name, name)) return a;
    return NULL;
}

static void html_escape(char *out, size_t cap, const char *s) {
    size_t o = 0;
    for (; *s && o + 7 < cap; s++) {
        const char *rep = NULL;
        switch (*s) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        }
        if (rep) {
            size_t n = strlen(rep);
            memcpy(out + o, rep, n);
            o += n;
        } else {
            out[o++] = *s;
        }
    }
    out[o] = '\0';
}

/* index.html with {{TITLE}} and {{CANVAS}} filled in; malloc'd, NUL-terminated. */
static char *render_page(rcanvas_canvas *c, size_t *len) {
    const rc_asset *tpl = find_asset("index.html");
    if (!tpl) return NULL;
    char title[256], esc[256 * 6 + 1];
    pthread_mutex_lock(&c->mu);
    memcpy(title, c->title, sizeof title);
    pthread_mutex_unlock(&c->mu);
    html_escape(esc, sizeof esc, title);
    size_t cap = tpl->len + 4 * (strlen(esc) + RC_NAME_MAX) + 1;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t o = 0;
    const char *src = (const char *)tpl->data;
    while (*src) {
        const char *rep = NULL;
        size_t skip = 0;
        if (!strncmp(src, "{{TITLE}}", 9)) rep = esc, skip = 9;
        else if (!strncmp(src, "{{CANVAS}}", 10)) rep = c->name, skip = 10;
        if (rep) {
            size_t n = strlen(rep);
            if (o + n >= cap) break;
            memcpy(out + o, rep, n);
            o += n;
            src += skip;
        } else {
            if (o + 1 >= cap) break;
            out[o++] = *src++;
        }
    }
    out[o] = '\0';
    *len = o;
    return out;
}

static int http_status(struct lws *wsi, unsigned code, const char *msg) {
    if (lws_return_http_status(wsi, code, msg)) return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int on_http(struct lws *wsi, rcanvas_server *s, pss *p, const char *path) {
    if (!strcmp(path, "/favicon.ico")) return http_status(wsi, HTTP_STATUS_NO_CONTENT, "");
    if (!strncmp(path, "/client/", 8)) {
        const rc_asset *a = find_asset(path + 8);
        if (!a || !strcmp(a->name, "index.html")) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
        return send_body(wsi, p, a->content_type, "no-cache", a->data, a->len);
    }
    const char *name;
    size_t nlen;
    if (parse_canvas_path(path, 0, &name, &nlen)) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
    int t = check_token(wsi, s);
    if (t == 401) return http_status(wsi, HTTP_STATUS_UNAUTHORIZED, "token required: open the URL the server printed");
    if (t == 403) return http_status(wsi, HTTP_STATUS_FORBIDDEN, "wrong token: open the URL the server printed");
    rcanvas_canvas *c = find_canvas(s, name, nlen);
    if (!c) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "no such canvas");
    size_t len = 0;
    char *page = render_page(c, &len);
    if (!page) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
    int r = send_body(wsi, p, "text/html; charset=utf-8", "no-store", page, len);
    free(page);
    return r;
}

/* ---- the lws protocol callback ---- */

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct lws_context *ctx = lws_get_context(wsi);
    rcanvas_server *s = ctx ? lws_context_user(ctx) : NULL;
    pss *p = user;
    switch (reason) {
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        if (s && !atomic_load(&s->stop)) on_wake(s);
        return 0;

    case LWS_CALLBACK_HTTP:
        return on_http(wsi, s, p, (const char *)in);

    case LWS_CALLBACK_HTTP_WRITEABLE: {
        if (!p || !p->body) return 0;
        int w = lws_write(wsi, p->body + LWS_PRE, p->body_len, LWS_WRITE_HTTP_FINAL);
        free(p->body);
        p->body = NULL;
        if (w < (int)p->body_len) return -1;
        return lws_http_transaction_completed(wsi) ? -1 : 0;
    }

    case LWS_CALLBACK_CLOSED_HTTP:
        if (p) {
            free(p->body);
            p->body = NULL;
        }
        return 0;

    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
        char path[256];
        const char *name;
        size_t nlen;
        if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) >= (int)sizeof path ||
            lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) < 0 || parse_canvas_path(path, 1, &name, &nlen)) {
            lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
            return -1;
        }
        int t = check_token(wsi, s);
        if (t) {
            rc_log(&s->log, RCANVAS_LOG_WARN, "WebSocket refused: %s token", t == 401 ? "missing" : "wrong");
            lws_return_http_status(wsi, (unsigned)t, t == 401 ? "token required" : "wrong token");
            return -1;
        }
        if (check_origin(wsi, s)) {
            rc_log(&s->log, RCANVAS_LOG_WARN, "WebSocket refused: Origin does not match the server");
            lws_return_http_status(wsi, HTTP_STATUS_FORBIDDEN, "origin not allowed");
            return -1;
        }
        rcanvas_canvas *c = find_canvas(s, name, nlen);
        if (!c) {
            lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, "no such canvas");
            return -1;
        }
        pthread_mutex_lock(&s->mu);
        int full = s->nviewers >= s->max_viewers;
        if (!full) s->nviewers++; /* reserved; released in CLOSED or if ESTABLISHED fails */
        pthread_mutex_unlock(&s->mu);
        if (full) {
            rc_log(&s->log, RCANVAS_LOG_WARN, "WebSocket refused: %d viewers already", s->max_viewers);
            lws_return_http_status(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "too many viewers");
            return -1;
        }
        p->canvas = c;
        p->reserved = 1;
        return 0;
    }

    case LWS_CALLBACK_ESTABLISHED: {
        rc_viewer *v = p->canvas && !canvas_detaching(s, p->canvas) ? calloc(1, sizeof(*v)) : NULL;
        if (v) v->rx = malloc(s->max_message_bytes);
        if (!v || !v->rx) {
            if (v) free(v);
            return -1; /* WSI_DESTROY releases the reservation */
        }
        p->reserved = 0; /* the viewer owns the slot now; viewer_free releases it */
        v->wsi = wsi;
        v->srv = s;
        v->canvas = p->canvas;
        v->id = ++s->next_viewer_id;
        v->next = s->viewers;
        s->viewers = v;
        p->v = v;
        v->active = rc_canvas_viewer_join(v->canvas, v->id);
        char peer[64] = "";
        lws_get_peer_simple(wsi, peer, sizeof peer);
        rc_log(&s->log, RCANVAS_LOG_INFO, "viewer %u connected from %s to canvas '%s'%s", v->id, peer,
               v->canvas->name, v->active ? " (active)" : "");
        queue_hello(v);
        service_viewer(v);
        lws_callback_on_writable(wsi);
        return 0;
    }

    case LWS_CALLBACK_TIMER:
        if (p && p->v && p->v->close_code) {
            p->v->close_now = 1;
            lws_callback_on_writable(wsi);
        } else if (p && p->v) {
            demote_if_stalled(s, p->v);
        }
        return 0;

    case LWS_CALLBACK_SERVER_WRITEABLE:
        return p && p->v ? on_writable(p->v) : 0;

    case LWS_CALLBACK_RECEIVE: {
        rc_viewer *v = p ? p->v : NULL;
        if (!v) return -1;
        if (v->close_code) return 0;
        /* Refusals close through the writable callback (close frame, then the peer's reply) rather than by
         * returning -1 here: dropping the TCP connection with client data unread makes the kernel send a reset,
         * and the browser would then see 1006 instead of our code and reason. Input after that is discarded. */
        if (lws_frame_is_binary(wsi)) {
            rc_log(&s->log, RCANVAS_LOG_WARN, "viewer %u: binary message, closing", v->id);
            request_close(v, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, "binary messages are not accepted");
            return 0;
        }
        size_t remaining = lws_remaining_packet_payload(wsi);
        if (len > s->max_message_bytes - v->rx_len || remaining > s->max_message_bytes - v->rx_len - len) {
            rc_log(&s->log, RCANVAS_LOG_WARN, "viewer %u: message over %zu bytes, closing", v->id,
                   s->max_message_bytes);
            char r[64];
            snprintf(r, sizeof r, "message larger than %zu bytes", s->max_message_bytes);
            request_close(v, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, r);
            return 0;
        }
        memcpy(v->rx + v->rx_len, in, len);
        v->rx_len += len;
        if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0) return 0;
        handle_message(v, (const char *)v->rx, v->rx_len);
        v->rx_len = 0;
        return 0;
    }

    case LWS_CALLBACK_CLOSED:
        if (p && p->v) {
            rc_log(&s->log, RCANVAS_LOG_INFO, "viewer %u disconnected", p->v->id);
            viewer_free(s, p->v);
            p->v = NULL;
        }
        return 0;

    case LWS_CALLBACK_WSI_DESTROY:
        /* An upgrade that passed the filter but never became a viewer still holds its reservation. */
        if (p && p->reserved) {
            p->reserved = 0;
            release_viewer_slot(s);
        }
        return 0;

    default:
        return 0;
    }
}

/* ---- lifecycle ---- */

void rcanvas_server_config_init(rcanvas_server_config *cfg) {
    if (!cfg) return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->host = "127.0.0.1";
    cfg->port = 8080;
    cfg->max_viewers = 16;
    cfg->max_message_bytes = 4096;
    cfg->max_bad_messages = 20;
    cfg->max_frame_dim = 8192;
    cfg->log_level = RCANVAS_LOG_INFO;
}

/* The token rule of rcanvas_server_config.token: NULL if t follows it, else what is wrong (for the log). */
static const char *token_problem(const char *t) {
    size_t n = strlen(t);
    if (n < 8) return "too short";
    if (n > 128) return "too long";
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-'))
            return "has a character that is not allowed";
    }
    return NULL;
}

/* Binds a throw-away socket to host:port as lws will (SO_REUSEADDR), so that a taken port comes back as
 * RCANVAS_EADDRINUSE with a plain reason rather than as lws's "ERROR on binding fd 5 to port 8090 (-1 98)".
 * Returns bind()'s errno, or 0 when it binds or cannot be tried (port 0; a host that is not a numeric address,
 * such as an interface name, which lws resolves itself). */
static int probe_bind(const char *host, int port) {
    if (port == 0) return 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    if (getaddrinfo(host, ps, &hints, &ai) || !ai) return 0;
    int err = 0, one = 1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen)) err = errno;
        close(fd);
    }
    freeaddrinfo(ai);
    return err;
}

static void *net_main(void *arg) {
    rcanvas_server *s = arg;
    while (!atomic_load(&s->stop))
        if (lws_service(s->ctx, 0) < 0) break;
    return NULL;
}

static void server_destroy(rcanvas_server *s) {
    if (s->ctx) {
        struct lws_context *ctx = s->ctx;
        lws_context_destroy(ctx); /* closes every connection: CLOSED callbacks free the viewers */
        s->ctx = NULL;
    }
    pthread_mutex_lock(&g_log_mu);
    if (g_lws_logger.user == s->log.user && g_lws_logger.fn == s->log.fn) g_lws_logger.fn = NULL;
    pthread_mutex_unlock(&g_log_mu);
    for (int i = 0; i < s->n_origins; i++) free(s->origins[i]);
    free(s->origins);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

int rcanvas_server_new(const rcanvas_server_config *cfg, rcanvas_server **out) {
    if (!cfg || !out) return RCANVAS_EINVAL;
    *out = NULL;
    if (cfg->port < 0 || cfg->port > 65535 || cfg->max_viewers < 1 || cfg->max_message_bytes < 256 ||
        cfg->max_message_bytes > (1u << 24) || cfg->max_bad_messages < 0 || cfg->encode_threads < 0 ||
        cfg->encode_threads > 256 || cfg->max_frame_dim < 1 || cfg->max_frame_dim > 65535 || cfg->n_allowed_origins < 0 ||
        (cfg->n_allowed_origins > 0 && !cfg->allowed_origins))
        return RCANVAS_EINVAL;
    const char *host = cfg->host ? cfg->host : "127.0.0.1";
    if (strlen(host) >= 256) return RCANVAS_EINVAL;
    const char *bad_token = cfg->token ? token_problem(cfg->token) : NULL;
    if (bad_token) { /* the length, not the token: it is a secret */
        rc_logger lg = {.fn = cfg->log, .user = cfg->log_user, .level = cfg->log_level};
        rc_log(&lg, RCANVAS_LOG_ERROR, "token refused: %s (%zu characters); a token is 8 to 128 characters of "
               "[A-Za-z0-9_-]", bad_token, strlen(cfg->token));
        return RCANVAS_EINVAL;
    }

    rcanvas_server *s = calloc(1, sizeof(*s));
    if (!s) return RCANVAS_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    snprintf(s->host, sizeof s->host, "%s", host);
    s->max_viewers = cfg->max_viewers;
    s->max_message_bytes = cfg->max_message_bytes;
    s->max_bad_messages = cfg->max_bad_messages;
    s->max_frame_dim = cfg->max_frame_dim;
    s->log = (rc_logger){.fn = cfg->log, .user = cfg->log_user, .level = cfg->log_level};
    if (cfg->token) snprintf(s->token, sizeof s->token, "%s", cfg->token);
    else if (rc_random_hex(s->token, 16)) {
        server_destroy(s);
        return RCANVAS_EIO;
    }
    if (cfg->n_allowed_origins > 0) {
        s->origins = calloc((size_t)cfg->n_allowed_origins, sizeof(char *));
        if (!s->origins) {
            server_destroy(s);
            return RCANVAS_ENOMEM;
        }
        for (int i = 0; i < cfg->n_allowed_origins; i++) {
            if (!cfg->allowed_origins[i] || !(s->origins[i] = strdup(cfg->allowed_origins[i]))) {
                s->n_origins = i;
                server_destroy(s);
                return cfg->allowed_origins[i] ? RCANVAS_ENOMEM : RCANVAS_EINVAL;
            }
            s->n_origins = i + 1;
        }
    }

    int bind_err = probe_bind(host, cfg->port);
    if (bind_err) { /* EADDRINUSE says it all to the caller; another errno is only said here */
        char eb[128];
        rc_log(&s->log, bind_err == EADDRINUSE ? RCANVAS_LOG_WARN : RCANVAS_LOG_ERROR, "cannot listen on %s:%d: %s",
               s->host, cfg->port,
               bind_err == EADDRINUSE ? "address already in use" : strerror_r(bind_err, eb, sizeof eb));
        server_destroy(s);
        return bind_err == EADDRINUSE ? RCANVAS_EADDRINUSE : RCANVAS_ENET;
    }

    pthread_mutex_lock(&g_log_mu);
    g_lws_logger = s->log;
    pthread_mutex_unlock(&g_log_mu);
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_emit);

    s->protocols[0] = (struct lws_protocols){
        .name = "rcanvas.v1", .callback = callback, .per_session_data_size = sizeof(pss), .rx_buffer_size = 4096};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = cfg->port; /* 0: the kernel picks a free port, read back below */
    info.iface = strcmp(s->host, "0.0.0.0") ? s->host : NULL;
    info.protocols = s->protocols;
    info.user = s;
    info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 | LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    if (!strchr(s->host, ':')) info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    info.count_threads = 1;
    info.max_http_header_data = 4096;
    info.timeout_secs = 10;
    s->ctx = lws_create_context(&info);
    if (!s->ctx) {
        rc_log(&s->log, RCANVAS_LOG_ERROR, "cannot listen on %s:%d", s->host, cfg->port);
        server_destroy(s);
        return RCANVAS_ENET;
    }
    struct lws_vhost *vh = lws_get_vhost_by_name(s->ctx, "default");
    s->port = vh ? lws_get_vhost_listen_port(vh) : cfg->port;

    int threads = cfg->encode_threads ? cfg->encode_threads : rc_cpu_count();
    int r = rc_pool_new(threads, &s->pool);
    if (r) {
        server_destroy(s);
        return r;
    }
    if (pthread_create(&s->thread, NULL, net_main, s)) {
        rc_pool_free(s->pool);
        server_destroy(s);
        return RCANVAS_ETHREAD;
    }
    s->thread_started = 1;
    rc_log(&s->log, RCANVAS_LOG_INFO, "listening on http://%s:%d/ with %d encoder threads", s->host, s->port,
           threads);
    *out = s;
    return RCANVAS_OK;
}

void rcanvas_server_free(rcanvas_server *s) {
    if (!s) return;
    /* 1. canvases stop accepting frames; waiters get RCANVAS_ECLOSED */
    pthread_mutex_lock(&s->mu);
    int n = s->ncanvases;
    rcanvas_canvas *list[MAX_CANVASES];
    for (int i = 0; i < n; i++) list[i] = s->canvases[i].c;
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&list[i]->mu);
        list[i]->closing = 1;
        pthread_cond_broadcast(&list[i]->cv);
        pthread_mutex_unlock(&list[i]->mu);
    }
    /* 1b. running encodes finish while the network thread can still be woken; none start after `closing` */
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&list[i]->mu);
        while (list[i]->encoding || list[i]->refine_running) pthread_cond_wait(&list[i]->cv, &list[i]->mu);
        pthread_mutex_unlock(&list[i]->mu);
    }
    /* 2. network thread stops; destroying the context closes every viewer (their packets are released) */
    atomic_store(&s->stop, 1);
    lws_cancel_service(s->ctx);
    pthread_join(s->thread, NULL);
    s->thread_started = 0;
    struct lws_context *ctx = s->ctx;
    s->ctx = NULL; /* encoder completions stop waking it */
    lws_context_destroy(ctx);
    /* 3. encoder threads stop (nothing is queued any more) */
    rc_pool_free(s->pool);
    s->pool = NULL;
    /* 4. canvases go */
    for (int i = 0; i < n; i++) rcanvas_canvas_free(list[i]);
    server_destroy(s);
}

int rcanvas_server_port(const rcanvas_server *s) { return s ? s->port : RCANVAS_EINVAL; }

const char *rcanvas_server_token(const rcanvas_server *s) { return s ? s->token : NULL; }

int rcanvas_server_url(const rcanvas_server *s, const char *name, char *buf, size_t cap) {
    if (!s || !buf) return RCANVAS_EINVAL;
    const char *host = strcmp(s->host, "0.0.0.0") ? s->host : "127.0.0.1";
    int bracket = strchr(host, ':') != NULL;
    int n;
    if (name && *name)
        n = snprintf(buf, cap, "http://%s%s%s:%d/c/%s?token=%s", bracket ? "[" : "", host, bracket ? "]" : "",
                     s->port, name, s->token);
    else
        n = snprintf(buf, cap, "http://%s%s%s:%d/?token=%s", bracket ? "[" : "", host, bracket ? "]" : "", s->port,
                     s->token);
    if (n < 0 || (size_t)n >= cap) return RCANVAS_EINVAL;
    return n;
}
