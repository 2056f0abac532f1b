/* SPDX-License-Identifier: MIT */
/*
 * ws_viewers.c — raw acking WebSocket viewers on one epoll thread (see ws_viewers.h).
 *
 * A minimal RFC 6455 client rather than libwebsockets' client: lws parses received payload one byte at a time
 * (measured: 89 % of this process's CPU in libwebsockets.so with 100 viewers at 55 fps, 69 % of a core), which
 * made the viewers, not the server, the limit of the fan-out benchmark. Here a recv() takes up to RX_BYTES, frame
 * headers are parsed in place, and payload bytes are only skipped over — except the first 56 of each message
 * (the rcanvas frame header) and, when a test asked for it, the last frame's tiles. Enough of the protocol for
 * an rcanvas server: the upgrade (the answer's status line is kept, so a 503 is seen as such), unmasked frames in
 * (text, binary, continuation, close, ping), masked text frames out.
 */
#include "ws_viewers.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RX_BYTES (256 * 1024)
#define HDR 56
#define OUT_CAP 2048 /* unsent text frames (resize, acks) */

enum { ST_CONNECTING, ST_OPEN, ST_CLOSED, ST_REFUSED };
enum { P_HTTP, P_FRAME_HEAD, P_PAYLOAD };

typedef struct viewer {
    struct wsv *w;
    int idx, fd;
    int want_out;             /* EPOLLOUT is on */
    /* receive state */
    int phase;
    char http[2048];          /* the upgrade answer until its blank line */
    size_t http_len;
    uint8_t fh[14];           /* the frame header being read */
    uint8_t close_payload[2]; /* the close code of the server's close frame (4503) */
    size_t close_len;
    size_t fh_len;
    int op;                   /* opcode of this frame */
    int fin;
    uint64_t remaining;       /* payload bytes of this frame still to come */
    int msg_op;               /* opcode of the message (1 text, 2 binary) the frames belong to */
    size_t msg_len;           /* bytes of the message so far */
    uint8_t hdr[HDR];         /* first bytes of a binary message: the rcanvas frame header */
    char text_head[24];       /* first bytes of a text message: is it the hello? */
    /* keep_last: the tiles of the frame being received, and the last whole frame */
    uint8_t *cur, *last;
    size_t cur_len, cur_cap, last_len, last_cap;
    int cur_tiles, last_tiles;
    /* out */
    uint8_t out[OUT_CAP];
    size_t out_len;
    wsv_viewer_stats st;      /* guarded by w->mu for readers on other threads */
} viewer;

struct wsv {
    wsv_config cfg;
    char request[1024];
    int ep, wake_fd;
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

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void set_state(viewer *v, int state, const char *why) {
    pthread_mutex_lock(&v->w->mu);
    if (v->st.state < ST_CLOSED) {
        v->st.state = state;
        if (why) snprintf(v->st.error, sizeof v->st.error, "%s", why);
    }
    pthread_mutex_unlock(&v->w->mu);
}

static void end_viewer(viewer *v, int state, const char *why) {
    set_state(v, state, why);
    if (v->fd >= 0) {
        epoll_ctl(v->w->ep, EPOLL_CTL_DEL, v->fd, NULL);
        close(v->fd);
        v->fd = -1;
    }
}

static void watch(viewer *v, int out) {
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0u), .data.ptr = v};
    epoll_ctl(v->w->ep, EPOLL_CTL_MOD, v->fd, &ev);
    v->want_out = out;
}

static void flush(viewer *v) {
    while (v->out_len && v->fd >= 0) {
        ssize_t n = send(v->fd, v->out, v->out_len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) break;
            end_viewer(v, ST_CLOSED, "send failed");
            return;
        }
        memmove(v->out, v->out + n, v->out_len - (size_t)n);
        v->out_len -= (size_t)n;
    }
    if (v->fd >= 0 && (v->out_len > 0) != v->want_out) watch(v, v->out_len > 0);
}

/* Queues one masked frame (opcode op, n < 126 bytes) and tries to send it. */
static void send_frame(viewer *v, int op, const void *data, size_t n) {
    if (n >= 126 || v->out_len + 6 + n > OUT_CAP) return; /* cannot happen for resize and acks */
    uint8_t *p = v->out + v->out_len;
    static const uint8_t mask[4] = {0x5a, 0xc3, 0x3c, 0xa5}; /* any mask will do: it is not a secret here */
    p[0] = (uint8_t)(0x80 | op);
    p[1] = (uint8_t)(0x80 | n);
    memcpy(p + 2, mask, 4);
    for (size_t i = 0; i < n; i++) p[6 + i] = ((const uint8_t *)data)[i] ^ mask[i & 3];
    v->out_len += 6 + n;
    flush(v);
}

static void send_text(viewer *v, const char *s) { send_frame(v, 1, s, strlen(s)); }

static void keep_bytes(viewer *v, const uint8_t *in, size_t len) {
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

/* Payload bytes of the current message. */
static void message_bytes(viewer *v, const uint8_t *in, size_t len) {
    if (v->msg_op == 2) {
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
}

/* A whole message arrived: the hello is answered with the viewer's size, the last tile of a frame with its ack. */
static void message_end(viewer *v) {
    wsv *w = v->w;
    if (v->msg_op == 1) {
        if (!strncmp(v->text_head, "{\"type\":\"hello\"", 15) && !v->st.hello) {
            char msg[128];
            snprintf(msg, sizeof msg, "{\"event_type\":\"resize\",\"width\":%g,\"height\":%g,\"pixel_ratio\":%g}",
                     w->cfg.width, w->cfg.height, w->cfg.pixel_ratio);
            send_text(v, msg);
            pthread_mutex_lock(&w->mu);
            v->st.hello = 1;
            pthread_mutex_unlock(&w->mu);
        }
        return;
    }
    if (v->msg_op != 2 || v->msg_len < HDR || le32(v->hdr) != 0x46434352u) return;
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
        send_text(v, ack);
    }
}

/* The upgrade answer, up to its blank line: 101 opens the viewer; anything else refuses it with its status. */
static int http_bytes(viewer *v, const uint8_t *in, size_t len, size_t *used) {
    size_t i = 0;
    for (; i < len; i++) {
        if (v->http_len + 1 >= sizeof v->http) {
            end_viewer(v, ST_REFUSED, "upgrade answer too long");
            return -1;
        }
        v->http[v->http_len++] = (char)in[i];
        v->http[v->http_len] = '\0';
        if (v->http_len >= 4 && !memcmp(v->http + v->http_len - 4, "\r\n\r\n", 4)) {
            i++;
            break;
        }
    }
    *used = i;
    if (v->http_len < 4 || memcmp(v->http + v->http_len - 4, "\r\n\r\n", 4)) return 0;
    int status = 0;
    if (sscanf(v->http, "HTTP/1.%*d %d", &status) != 1 || status != 101) { /* lws refuses in HTTP/1.0 */
        char why[64];
        snprintf(why, sizeof why, "HTTP %d", status);
        end_viewer(v, ST_REFUSED, why);
        return -1;
    }
    v->phase = P_FRAME_HEAD;
    set_state(v, ST_OPEN, NULL);
    return 0;
}

/* The current frame's payload is complete. -1 once the viewer has ended. */
static int frame_done(viewer *v) {
    v->phase = P_FRAME_HEAD;
    if (v->op <= 2 && v->fin) {
        message_end(v);
        if (v->fd < 0) return -1;
    } else if (v->op == 9) {
        send_frame(v, 10, NULL, 0); /* pong */
    } else if (v->op == 8) { /* close with a code: answer it and end, saying the code */
        char why[64];
        snprintf(why, sizeof why, "closed by the server (%d)", v->close_payload[0] << 8 | v->close_payload[1]);
        send_frame(v, 8, NULL, 0);
        end_viewer(v, ST_CLOSED, why);
        return -1;
    }
    return 0;
}

/* Consumes received bytes. -1 once the viewer has ended. */
static int consume(viewer *v, const uint8_t *in, size_t len) {
    while (len > 0) {
        if (v->phase == P_HTTP) {
            size_t used;
            if (http_bytes(v, in, len, &used)) return -1;
            in += used, len -= used;
        } else if (v->phase == P_FRAME_HEAD) {
            v->fh[v->fh_len++] = *in++, len--;
            if (v->fh_len < 2) continue;
            size_t need = 2 + ((v->fh[1] & 0x7f) == 126 ? 2 : (v->fh[1] & 0x7f) == 127 ? 8 : 0);
            if (v->fh[1] & 0x80) need += 4; /* a server never masks; read past it anyway */
            if (v->fh_len < need) continue;
            uint64_t n = v->fh[1] & 0x7f;
            if (n == 126) n = (uint64_t)v->fh[2] << 8 | v->fh[3];
            else if (n == 127) {
                n = 0;
                for (int i = 0; i < 8; i++) n = n << 8 | v->fh[2 + i];
            }
            v->op = v->fh[0] & 0x0f;
            v->fin = v->fh[0] & 0x80;
            v->remaining = n;
            v->fh_len = 0;
            if (v->op == 1 || v->op == 2) v->msg_op = v->op, v->msg_len = 0;
            if (v->op == 8 && n < 2) { /* close without a code: answer it and end */
                send_frame(v, 8, NULL, 0);
                end_viewer(v, ST_CLOSED, "closed by the server");
                return -1;
            }
            v->close_len = 0;
            v->phase = P_PAYLOAD;
            if (n == 0 && frame_done(v)) return -1;
        } else {
            size_t k = v->remaining < len ? (size_t)v->remaining : len;
            if (v->op <= 2) message_bytes(v, in, k); /* ping/pong payloads are skipped */
            for (size_t i = 0; v->op == 8 && i < k && v->close_len < 2; i++) v->close_payload[v->close_len++] = in[i];
            in += k, len -= k;
            v->remaining -= k;
            if (!v->remaining && frame_done(v)) return -1;
        }
    }
    return 0;
}

static void connect_one(wsv *w, viewer *v) {
    v->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (v->fd < 0) {
        set_state(v, ST_REFUSED, "socket() failed");
        return;
    }
    int one = 1;
    setsockopt(v->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* acks go out at once, as a browser's do */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)w->cfg.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(v->fd, (struct sockaddr *)&sa, sizeof sa) && errno != EINPROGRESS) {
        close(v->fd);
        v->fd = -1;
        set_state(v, ST_REFUSED, "connect() failed");
        return;
    }
    /* the request waits in the out buffer until the socket is writable (connected) */
    size_t n = strlen(w->request);
    memcpy(v->out, w->request, n);
    v->out_len = n;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = v};
    v->want_out = 1;
    epoll_ctl(w->ep, EPOLL_CTL_ADD, v->fd, &ev);
}

static void *run(void *arg) {
    wsv *w = arg;
    uint8_t *buf = malloc(RX_BYTES);
    if (!buf) return NULL;
    for (int i = 0; i < w->cfg.n; i++) connect_one(w, &w->v[i]);
    struct epoll_event evs[256];
    while (!atomic_load(&w->stop)) {
        int n = epoll_wait(w->ep, evs, 256, 1000);
        for (int k = 0; k < n; k++) {
            viewer *v = evs[k].data.ptr;
            if (!v) continue; /* the wake-up eventfd */
            if (v->fd < 0) continue;
            if (evs[k].events & EPOLLOUT) flush(v);
            if (v->fd < 0) continue;
            if (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                for (;;) {
                    ssize_t r = recv(v->fd, buf, RX_BYTES, 0);
                    if (r > 0) {
                        if (consume(v, buf, (size_t)r)) break;
                        if (r < RX_BYTES) break; /* drained: the next epoll_wait says when there is more */
                        continue;
                    }
                    if (r < 0 && errno == EINTR) continue;
                    if (r < 0 && errno == EAGAIN) break;
                    end_viewer(v, v->phase == P_HTTP ? ST_REFUSED : ST_CLOSED,
                               r == 0 ? "connection closed" : "connection error");
                    break;
                }
            }
        }
    }
    free(buf);
    return NULL;
}

int wsv_start(const wsv_config *cfg, wsv **out) {
    *out = NULL;
    if (!cfg || cfg->n < 1 || cfg->n > 4096 || cfg->port <= 0 || cfg->port > 65535 || !cfg->token) return -1;
    wsv *w = calloc(1, sizeof(*w));
    if (!w) return -1;
    w->cfg = *cfg;
    if (w->cfg.width <= 0) w->cfg.width = 640;
    if (w->cfg.height <= 0) w->cfg.height = 480;
    if (w->cfg.pixel_ratio <= 0) w->cfg.pixel_ratio = 1;
    const char *c = cfg->canvas && *cfg->canvas ? cfg->canvas : NULL;
    snprintf(w->request, sizeof w->request,
             "GET %s%s/ws?token=%s%s%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
             "Sec-WebSocket-Protocol: rcanvas.v1\r\n\r\n",
             c ? "/c/" : "", c ? c : "", cfg->token, cfg->codecs ? "&codecs=" : "", cfg->codecs ? cfg->codecs : "",
             cfg->port);
    pthread_mutex_init(&w->mu, NULL);
    w->v = calloc((size_t)cfg->n, sizeof(viewer));
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (!w->v || w->ep < 0 || w->wake_fd < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->wake_fd, &ev)) goto fail;
    for (int i = 0; i < cfg->n; i++) w->v[i].w = w, w->v[i].idx = i, w->v[i].fd = -1;
    if (pthread_create(&w->thread, NULL, run, w)) goto fail;
    w->thread_started = 1;
    *out = w;
    return 0;
fail:
    if (w->ep >= 0) close(w->ep);
    if (w->wake_fd >= 0) close(w->wake_fd);
    pthread_mutex_destroy(&w->mu);
    free(w->v);
    free(w);
    return -1;
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
        o += w->v[i].st.state == ST_OPEN;
        c += w->v[i].st.state == ST_CLOSED;
        r += w->v[i].st.state == ST_REFUSED;
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
        uint64_t one = 1;
        if (write(w->wake_fd, &one, sizeof one) < 0) {} /* epoll_wait returns; at worst its 1 s timeout does */
        pthread_join(w->thread, NULL);
    }
    for (int i = 0; i < w->cfg.n; i++) {
        if (w->v[i].fd >= 0) close(w->v[i].fd);
        free(w->v[i].cur);
        free(w->v[i].last);
    }
    close(w->ep);
    close(w->wake_fd);
    pthread_mutex_destroy(&w->mu);
    free(w->v);
    free(w);
}
