/*
 * ws_viewers.c — raw acking WebSocket viewers on one libwebsockets client context (see ws_viewers.h).
 *
 * Cheap on purpose, so that it is not what limits a fan-out benchmark: one thread for all viewers, reads of up to
 * RX_BYTES per recv (lws reads at most pt_serv_buf_size at once, 4 KiB by default), only the 56-byte header of
 * each tile is looked at, and payloads are copied only when a test asked to keep the last frame.
 */
#include "ws_viewers.h"

#include <libwebsockets.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RX_BYTES (256 * 1024)
#define HDR 56
#define MAX_PENDING 8 /* text messages waiting to go out: the resize and acks (at most max_in_flight of them) */

typedef struct viewer {
    struct wsv *w;
    int idx;
    struct lws *wsi;
    /* the message being received */
    size_t msg_len;
    int msg_binary;
    uint8_t hdr[HDR];
    char text_head[24];       /* first bytes of a text message: is it the hello? */
    /* keep_last: the tiles of the frame being received, and the last whole frame */
    uint8_t *cur, *last;
    size_t cur_len, cur_cap, last_len, last_cap;
    int cur_tiles, last_tiles;
    /* out: text messages with LWS_PRE head room */
    char pending[MAX_PENDING][LWS_PRE + 128];
    size_t pending_len[MAX_PENDING];
    int npending;
    wsv_viewer_stats st;      /* guarded by w->mu for readers on other threads */
} viewer;

struct wsv {
    wsv_config cfg;
    char path[600];
    char host[64];
    struct lws_context *ctx;
    struct lws_protocols protocols[2];
    pthread_t thread;
    int thread_started;
    atomic_int stop;
    pthread_mutex_t mu;
    viewer *v;
};

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void queue_text(viewer *v, const char *s) {
    if (v->npending == MAX_PENDING) return; /* cannot happen with max_in_flight <= 6; then it is a lost ack */
    size_t n = strlen(s);
    if (n > 127) return;
    memcpy(v->pending[v->npending] + LWS_PRE, s, n);
    v->pending_len[v->npending++] = n;
    lws_callback_on_writable(v->wsi);
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static void keep_bytes(viewer *v, const void *in, size_t len) {
    if (v->cur_len + len > v->cur_cap) {
        size_t cap = v->cur_cap ? v->cur_cap : 65536;
        while (cap < v->cur_len + len) cap *= 2;
        uint8_t *m = realloc(v->cur, cap);
        if (!m) return; /* the test then finds the frame short and says so */
        v->cur = m, v->cur_cap = cap;
    }
    memcpy(v->cur + v->cur_len, in, len);
    v->cur_len += len;
}

/* A whole message arrived. */
static void message_end(viewer *v) {
    wsv *w = v->w;
    if (!v->msg_binary) {
        if (!strncmp(v->text_head, "{\"type\":\"hello\"", 15) && !v->st.hello) {
            char msg[128];
            snprintf(msg, sizeof msg, "{\"event_type\":\"resize\",\"width\":%g,\"height\":%g,\"pixel_ratio\":%g}",
                     w->cfg.width, w->cfg.height, w->cfg.pixel_ratio);
            queue_text(v, msg);
            pthread_mutex_lock(&w->mu);
            v->st.hello = 1;
            pthread_mutex_unlock(&w->mu);
        }
        return;
    }
    if (v->msg_len < HDR || le32(v->hdr) != 0x46434352u) return;
    uint16_t flags = le16(v->hdr + 6);
    uint32_t seq = le32(v->hdr + 8);
    if (w->cfg.keep_last) v->cur_tiles++;
    pthread_mutex_lock(&w->mu);
    v->st.bytes += v->msg_len;
    if (flags & 2) { /* the last tile: the browser draws the frame now and acks it */
        v->st.frames++;
        v->st.last_seq = seq;
        if (!v->st.first_frame_us) {
            v->st.first_frame_us = now_us();
            v->st.first_seq = seq;
        }
        if (w->cfg.keep_last) { /* the two buffers swap roles; each grows to the largest frame */
            uint8_t *t = v->last;
            size_t tcap = v->last_cap;
            v->last = v->cur, v->last_cap = v->cur_cap, v->last_len = v->cur_len, v->last_tiles = v->cur_tiles;
            v->cur = t, v->cur_cap = tcap, v->cur_len = 0, v->cur_tiles = 0;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (flags & 2) {
        char ack[64];
        snprintf(ack, sizeof ack, "{\"type\":\"ack\",\"seq\":%u}", seq);
        queue_text(v, ack);
    }
}

static void set_state(viewer *v, int state, const char *why) {
    pthread_mutex_lock(&v->w->mu);
    if (v->st.state < 2) {
        v->st.state = state;
        if (why) snprintf(v->st.error, sizeof v->st.error, "%s", why);
    }
    pthread_mutex_unlock(&v->w->mu);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    viewer *v = user;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED: set_state(v, 1, NULL); return 0;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        char why[96];
        unsigned status = lws_http_client_http_response(wsi);
        if (status) snprintf(why, sizeof why, "HTTP %u", status);
        else snprintf(why, sizeof why, "%s", in ? (const char *)in : "connection error");
        if (v) set_state(v, 3, why);
        return 0;
    }
    case LWS_CALLBACK_CLIENT_CLOSED:
        if (v) set_state(v, 2, "closed");
        return 0;
    case LWS_CALLBACK_CLIENT_RECEIVE: {
        if (v->msg_len == 0) v->msg_binary = lws_frame_is_binary(wsi);
        if (v->msg_binary) {
            if (v->msg_len < HDR) {
                size_t k = HDR - v->msg_len < len ? HDR - v->msg_len : len;
                memcpy(v->hdr + v->msg_len, in, k);
            }
            if (v->w->cfg.keep_last) keep_bytes(v, in, len);
        } else if (v->msg_len < sizeof v->text_head - 1) {
            size_t k = sizeof v->text_head - 1 - v->msg_len < len ? sizeof v->text_head - 1 - v->msg_len : len;
            memcpy(v->text_head + v->msg_len, in, k);
            v->text_head[v->msg_len + k] = '\0';
        }
        v->msg_len += len;
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
            message_end(v);
            v->msg_len = 0;
        }
        return 0;
    }
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (v->npending) {
            size_t n = v->pending_len[0];
            char buf[LWS_PRE + 128];
            memcpy(buf, v->pending[0], LWS_PRE + n);
            memmove(v->pending, v->pending + 1, sizeof v->pending[0] * (size_t)(v->npending - 1));
            memmove(v->pending_len, v->pending_len + 1, sizeof v->pending_len[0] * (size_t)(v->npending - 1));
            v->npending--;
            if (lws_write(wsi, (unsigned char *)buf + LWS_PRE, n, LWS_WRITE_TEXT) < (int)n) return -1;
            if (v->npending) lws_callback_on_writable(wsi);
        }
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: return 0;
    default: return 0;
    }
}

static void connect_one(wsv *w, viewer *v) {
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof ci);
    ci.context = w->ctx;
    ci.address = "127.0.0.1";
    ci.port = w->cfg.port;
    ci.path = w->path;
    ci.host = w->host;
    ci.protocol = "rcanvas.v1";
    ci.userdata = v;
    ci.pwsi = &v->wsi;
    if (!lws_client_connect_via_info(&ci)) set_state(v, 3, "lws_client_connect_via_info failed");
}

static void *run(void *arg) {
    wsv *w = arg;
    for (int i = 0; i < w->cfg.n; i++) connect_one(w, &w->v[i]); /* on this thread: lws is not thread-safe */
    while (!atomic_load(&w->stop))
        if (lws_service(w->ctx, 0) < 0) break;
    return NULL;
}

int wsv_start(const wsv_config *cfg, wsv **out) {
    *out = NULL;
    if (!cfg || cfg->n < 1 || cfg->n > 4096 || cfg->port <= 0 || !cfg->token) return -1;
    wsv *w = calloc(1, sizeof(*w));
    if (!w) return -1;
    w->cfg = *cfg;
    if (w->cfg.width <= 0) w->cfg.width = 640;
    if (w->cfg.height <= 0) w->cfg.height = 480;
    if (w->cfg.pixel_ratio <= 0) w->cfg.pixel_ratio = 1;
    const char *c = cfg->canvas && *cfg->canvas ? cfg->canvas : NULL;
    snprintf(w->path, sizeof w->path, "%s%s/ws?token=%s%s%s", c ? "/c/" : "", c ? c : "", cfg->token,
             cfg->codecs ? "&codecs=" : "", cfg->codecs ? cfg->codecs : "");
    snprintf(w->host, sizeof w->host, "127.0.0.1:%d", cfg->port);
    pthread_mutex_init(&w->mu, NULL);
    w->v = calloc((size_t)cfg->n, sizeof(viewer));
    if (!w->v) {
        free(w);
        return -1;
    }
    for (int i = 0; i < cfg->n; i++) w->v[i].w = w, w->v[i].idx = i;
    w->protocols[0] = (struct lws_protocols){.name = "rcanvas.v1", .callback = callback, .rx_buffer_size = RX_BYTES};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = w->protocols;
    info.pt_serv_buf_size = RX_BYTES; /* recv() up to this much at once */
    info.user = w;
    info.timeout_secs = 20;
    lws_set_log_level(LLL_ERR, NULL);
    w->ctx = lws_create_context(&info);
    if (!w->ctx) {
        free(w->v);
        free(w);
        return -1;
    }
    if (pthread_create(&w->thread, NULL, run, w)) {
        lws_context_destroy(w->ctx);
        free(w->v);
        free(w);
        return -1;
    }
    w->thread_started = 1;
    *out = w;
    return 0;
}

void wsv_stats(wsv *w, int i, wsv_viewer_stats *out) {
    pthread_mutex_lock(&w->mu);
    *out = w->v[i].st;
    pthread_mutex_unlock(&w->mu);
}

void wsv_totals(wsv *w, uint64_t *frames, uint64_t *bytes, int *open, int *closed, int *refused) {
    uint64_t f = 0, b = 0;
    int o = 0, c = 0, r = 0;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->cfg.n; i++) {
        f += w->v[i].st.frames;
        b += w->v[i].st.bytes;
        o += w->v[i].st.state == 1;
        c += w->v[i].st.state == 2;
        r += w->v[i].st.state == 3;
    }
    pthread_mutex_unlock(&w->mu);
    if (frames) *frames = f;
    if (bytes) *bytes = b;
    if (open) *open = o;
    if (closed) *closed = c;
    if (refused) *refused = r;
}

int wsv_last_frame(wsv *w, int i, uint8_t **out, size_t *len, int *ntiles) {
    int r = -1;
    *out = NULL;
    pthread_mutex_lock(&w->mu);
    viewer *v = &w->v[i];
    if (v->last && v->last_len) {
        *out = malloc(v->last_len);
        if (*out) {
            memcpy(*out, v->last, v->last_len);
            *len = v->last_len;
            *ntiles = v->last_tiles;
            r = 0;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return r;
}

void wsv_stop(wsv *w) {
    if (!w) return;
    atomic_store(&w->stop, 1);
    if (w->thread_started) {
        lws_cancel_service(w->ctx);
        pthread_join(w->thread, NULL);
    }
    lws_context_destroy(w->ctx);
    for (int i = 0; i < w->cfg.n; i++) {
        free(w->v[i].cur);
        free(w->v[i].last);
    }
    pthread_mutex_destroy(&w->mu);
    free(w->v);
    free(w);
}
