/* SPDX-License-Identifier: MIT */
/*
 * transport_internal.h — private to src/transport/: the transport, its viewers and the per-connection state,
 * shared by server.c (context, thread, dispatch, timers), http.c (pages, client files, token and Origin checks),
 * viewer.c (WebSocket viewers: messages in, notices out, closing) and send.c (frames out, straight from the
 * packets' buffers).
 * Viewer objects belong to the network thread alone.
 */
#ifndef RC_TRANSPORT_INTERNAL_H
#define RC_TRANSPORT_INTERNAL_H

#include <libwebsockets.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/ratelog.h"
#include "transport/auth.h"
#include "transport/transport.h"
#include "transport/wire.h"

#define RC_SEND_BUDGET (256 * 1024) /* bytes of tiles per writable callback (at least one tile), so that one
                                       viewer's big frame never holds up the others for long */
#define RC_SEND_MAX (16u << 20)     /* the most one send() may take (lws tx_packet_size): a tile message goes to
                                       the kernel in one call; only what the socket does not take is copied (by lws,
                                       into its buffer list). lws's default (rx_buffer_size, 4 KiB) copied nearly
                                       every byte and sent it 4 KiB per poll round */
#define RC_MAX_TEXT_QUEUE 8
#define RC_LOG_INTERVAL_US 5000000  /* repeated warnings (a peer can repeat them at will): one line per kind per 5 s,
                                       the rest counted (core/ratelog.h) */
#define RC_CLOSE_GRACE_US 50000     /* see rc_viewer_request_close */

/* The link fields' JSON (viewer.c, link_fields): about 190 bytes with every field at a large value; room kept. */
#define RC_LINK_FIELDS_MAX 320

typedef struct rc_viewer rc_viewer;
/* A viewer is told of its link's state (a {"type":"link"} notice) when it changed, at most this often. */
#define RC_LINK_NOTICE_US 500000
/* A viewer to which nothing (frame, notice) went out for this long is sent {"type":"ping"}, so that a
 * client can tell a silently dead link (a proxy that stopped forwarding) from a still scene: browsers do not show
 * WebSocket pings to pages. Checked every RC_HEARTBEAT_CHECK_US. The hello says it ("heartbeat_ms"). */
#define RC_HEARTBEAT_US 2000000
#define RC_HEARTBEAT_CHECK_US 500000
struct rc_viewer {
    struct lws *wsi;
    rc_transport *t;
    rc_session *session;
    rc_viewer *next;
    uint32_t id;              /* the session id (per canvas), for log lines */
    /* sending: the packet being sent and its next tile (each tile is one message, written whole) */
    rc_packet *sending;
    int tile;
    /* what this viewer has been told */
    int told_active;
    int told_title_version;
    int told_cursor_version;  /* 0 until the canvas sets a cursor, then the version told */
    const rc_codec_type *told_encoder;
    char told_link[RC_LINK_FIELDS_MAX]; /* the link fields last sent (link_fields) */
    int64_t told_link_us;     /* when they were last looked at (printed, sent or not) */
    int64_t last_out_us;      /* when a message last went out to it (the heartbeat) */
    double told_width, told_height, told_ratio; /* the canvas size last told (hello or {"type":"size"}) */
    /* input */
    uint8_t *rx;
    size_t rx_len;
    int bad_msgs;
    int view_only;            /* its token is the view-only one: its events are dropped */
    uint64_t dropped_input;   /* events dropped for that; logged at the first */
    /* text out: each buffer has LWS_PRE head room */
    char *text[RC_MAX_TEXT_QUEUE];
    size_t text_len[RC_MAX_TEXT_QUEUE];
    int ntext;
    /* close */
    int close_code;
    int close_now;            /* grace period over: send the close frame */
    char close_reason[100];
    /* counters for /metrics (metrics.c): network thread only, like the rest */
    uint64_t frames_sent;     /* packets whose every tile went out */
    uint64_t bytes_sent;      /* frame messages' bytes (headers and payloads) */
};

/* Per-connection data of lws (HTTP and WebSocket). */
typedef struct rc_pss {
    rc_viewer *v;              /* WebSocket, once established */
    char canvas[RC_NAME_MAX + 1]; /* the canvas named in the upgrade request */
    rc_session_caps caps;      /* from the upgrade URL's codecs= (protocol 2 clients); view_only from its token */
    int reserved;              /* holds one of max_viewers until it becomes a viewer */
    unsigned char *body;       /* HTTP response body with LWS_PRE head room */
    size_t body_len;
    int refuse_code;           /* accepted only to be closed at once with this code (4403, 4503) */
    const char *refuse_reason; /*   and this reason (static) */
} rc_pss;

struct rc_transport {
    char host[256];
    char token[129];
    char view_token[129];      /* "" = no view-only token */
    char **origins;
    int n_origins;
    char **hosts;              /* allowed Host names (auth.c) */
    int n_hosts;
    char base[201];            /* base path, "" = none */
    rc_auth_session session;   /* the secret path and cookie a page's ?token= is traded for (auth.h): this process's */
    rc_auth_limiter limiter;   /* wrong tokens per network (/24, /64) and server-wide */
    int max_viewers;
    size_t max_message_bytes;
    int max_bad_messages;
    rc_registry *registry;
    const rc_logger *log;
    int tls;                   /* https/wss only: plain HTTP on the port is answered 400 */
    char tls_fingerprint[96];  /* SHA-256 of the served certificate, "AB:CD:…" */

    struct lws_context *ctx;
    struct lws_protocols protocols[2];
    lws_retry_bo_t keepalive;  /* ping and pong timeout of viewers (set_keepalive in server.c); outlives ctx */
    int port;
    pthread_t thread;
    int thread_started;
    atomic_int stop;
    atomic_int draining;       /* shutting down: every viewer is sent its 1001 close now (rc_transport_free) */
    lws_sorted_usec_list_t tick_sul;

    pthread_mutex_t mu;        /* nviewers (taken at upgrade filtering, released on close) */
    int nviewers;

    rc_viewer *viewers;        /* network thread only */

    /* rate-limited logging and the accept back-off when out of descriptors (server.c) */
    rc_ratelog ratelog;        /* repeated warnings of this transport: refused requests, bad messages */
    lws_sorted_usec_list_t log_sul; /* flushes the counts of floods that stopped */
    lws_sorted_usec_list_t heartbeat_sul; /* {"type":"ping"} to viewers sent nothing for a while */
    int listen_fd;             /* the listening socket (find_listen_fd), -1 = not found */
    struct lws *listen_wsi;    /* its wsi, seen at the first accept (LWS_CALLBACK_FILTER_NETWORK_CONNECTION) */
    int spare_fd;              /* /dev/null, closed to free one slot for shedding the backlog; -1 = none */
    lws_sorted_usec_list_t accept_sul; /* re-arms accepting after a pause */
    int64_t accept_pause_us;   /* the last pause's length */
    int64_t accept_pause_end_us;
    uint64_t accept_pauses, accept_shed;
};

/* http.c */
int rc_http_serve(struct lws *wsi, rc_transport *t, rc_pss *p, const char *path);
int rc_http_writable(struct lws *wsi, rc_pss *p);
/* Checks an upgrade request (path, token, Origin, canvas, viewer limit): 0 and p->canvas set and a viewer slot
 * reserved, or -1 after answering it with an HTTP error. */
/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: 0 for "websocket"; any other upgrade (h2c) is answered 400 and -1 returned
 * (lws hangs up). upgrade: the Upgrade header's value, NUL-terminated. Network thread. */
int rc_http_confirm_upgrade(struct lws *wsi, rc_transport *t, const char *upgrade);
int rc_http_filter_upgrade(struct lws *wsi, rc_transport *t, rc_pss *p);
/* An upgrade accepted only to be closed with p->refuse_code: ESTABLISHED and WRITEABLE of it. */
int rc_http_refused_established(struct lws *wsi, rc_pss *p);
int rc_http_refused_writable(struct lws *wsi, rc_pss *p);
void rc_transport_release_slot(rc_transport *t);
/* The peer's numeric address into out (cap bytes, 46 hold any): 1, or 0 with out "" when the peer is already gone
 * (getpeername fails: it reset the connection). lws_get_peer_simple wrote its error text instead ("getpeername:
 * Transport endpoint is not connected"), which reached the log as an address. */
int rc_transport_peer(struct lws *wsi, char *out, size_t cap);

/* viewer.c */
int rc_viewer_established(struct lws *wsi, rc_transport *t, rc_pss *p);
int rc_viewer_receive(rc_viewer *v, const void *in, size_t len);
void rc_viewer_timer(rc_viewer *v);
/* Queues {"type":"ping"} if nothing went out to the viewer for RC_HEARTBEAT_US. Network thread. */
void rc_viewer_heartbeat(rc_viewer *v, int64_t now_us);
void rc_viewer_closed(rc_viewer *v);
/* Brings v up to date with its session: role, title, encoder notices, closing, and asks for a writable
 * callback when there is something to send. */
void rc_viewer_service(rc_viewer *v);
void rc_viewer_queue_text(rc_viewer *v, const char *json);
void rc_viewer_request_close(rc_viewer *v, int code, const char *reason);

/* metrics.c: the Prometheus text of GET /metrics (malloc'd, *len bytes), or NULL (out of memory). Network
 * thread. */
char *rc_metrics_render(rc_transport *t, size_t *len);

/* send.c */
int rc_viewer_writable(rc_viewer *v);

#endif
