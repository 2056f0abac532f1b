/* SPDX-License-Identifier: MIT */
/*
 * server.c — the transport's frame: one libwebsockets context on its own network thread, the protocol callback
 * that dispatches to http.c (pages, upgrade checks), viewer.c (messages in, notices) and send.c (frames out),
 * the one wake-up other threads may use (lws_cancel_service), and the timer that runs the canvases' deadlines
 * (lossless refinement, stalled active viewers).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/util.h"
#include "transport/accept_backoff.h"
#include "transport/tls.h"
#include "transport/transport_internal.h"

/* ---- lws log routing: lws logs globally, so the newest transport's logger gets its lines ---- */

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static rc_logger g_lws_logger;
/* lws's lines are rate-limited: out of descriptors, lws 4.1 logs "accept: errno 24" on every poll round
 * (lib/roles/listen/ops-listen.c: the accept error is logged and the handler returns, the listening socket stays
 * readable); 508,906 lines in 10 s were measured before this. Keyed by the line with its numbers folded. */
static rc_ratelog g_lws_ratelog = {.mu = PTHREAD_MUTEX_INITIALIZER, .interval_us = RC_LOG_INTERVAL_US};
/* The errno of lws's last failed accept() on this thread (its network thread), for net_main's back-off. */
static __thread int tl_accept_errno;

int rc_lws_accept_errno(const char *line) {
    static const char what[] = "accept: errno ";
    const char *p = line ? strstr(line, what) : NULL;
    if (!p) return 0;
    char *end;
    long e = strtol(p + sizeof what - 1, &end, 10);
    return end > p + sizeof what - 1 && e > 0 && e < 4096 ? (int)e : 0;
}

int rc_lws_take_accept_errno(void) {
    int e = tl_accept_errno;
    tl_accept_errno = 0;
    return e;
}

static void lws_emit(int level, const char *line) {
    pthread_mutex_lock(&g_log_mu);
    rc_logger lg = g_lws_logger;
    pthread_mutex_unlock(&g_log_mu);
    int e = rc_lws_accept_errno(line);
    if (e) tl_accept_errno = e;
    char buf[400], key[RC_RATELOG_KEY];
    snprintf(buf, sizeof buf, "lws: %s", line);
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
    rc_ratelog_key(buf, key);
    rc_log_limited(&g_lws_ratelog, &lg, key, level == LLL_ERR ? RCANVAS_LOG_ERROR : RCANVAS_LOG_WARN, "%s", buf);
}

/* ---- out of descriptors: shed the waiting connections, pause accepting ---- */

/* lws 4.1 cannot accept() when the process is out of descriptors (EMFILE, or ENFILE system-wide): the connection
 * stays in the kernel's backlog, the listening socket stays readable, and every poll round tries again (the log
 * flood above, CPU doubled). So after such a round (net_main): (1) the spare descriptor kept open for this is
 * closed, the backlog accepted and closed at once (plain http: after a one-line 503), and the spare reopened, so
 * clients are answered instead of hanging; (2) POLLIN of the listening socket is taken off (lws_rx_flow_control
 * works on any wsi) for RC_ACCEPT_PAUSE_MIN_US, doubling up to RC_ACCEPT_PAUSE_MAX_US while it keeps happening,
 * and put back by a timer. Established viewers are served meanwhile: they need no new descriptor. The pause needs
 * the listening wsi, which lws 4.1 shows only at a successful accept (LWS_CALLBACK_FILTER_NETWORK_CONNECTION):
 * a process out of descriptors before its first connection only sheds (one failed round per new connection).
 * Such a round is known from the listening socket itself (rc_listener_starved: a connection waits, no descriptor
 * can be made), and from lws's log line where it says so: lws has no callback for a failed accept(), and its
 * line's form changes with the version (4.3 prefixes a timestamp: matched at the start, the line was missed and
 * the loop ran unchecked, 417,623 failed accepts in 9.9 s). The line also gives the errno of other failures. */
#define RC_ACCEPT_SHED_MAX 256 /* connections closed per round, at most */

int rc_listener_starved(int listen_fd) {
    struct pollfd pf = {.fd = listen_fd, .events = POLLIN};
    if (listen_fd < 0 || poll(&pf, 1, 0) != 1 || !(pf.revents & POLLIN)) return 0;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* a new open file, as accept() needs: ENFILE shows too */
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno == EMFILE || errno == ENFILE ? errno : 0;
}

int64_t rc_accept_pause_next(int64_t last_pause_us, int64_t last_end_us, int64_t now_us) {
    if (!last_pause_us || now_us - last_end_us >= 2 * last_pause_us) return RC_ACCEPT_PAUSE_MIN_US;
    return last_pause_us * 2 > RC_ACCEPT_PAUSE_MAX_US ? RC_ACCEPT_PAUSE_MAX_US : last_pause_us * 2;
}

static void accept_resume(lws_sorted_usec_list_t *sul) {
    rc_transport *t = lws_container_of(sul, rc_transport, accept_sul);
    if (t->listen_wsi) lws_rx_flow_control(t->listen_wsi, 1);
}

/* The listening socket's descriptor: the one that listens (SO_ACCEPTCONN) on our port; -1 if none is found. Once,
 * after the context is made (lws gives no public way to it in 4.1). */
static int find_listen_fd(int port) {
    struct rlimit rl;
    int max = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur > 65536 ? 65536 : (int)rl.rlim_cur;
    for (int fd = 0; fd < max; fd++) {
        int acc = 0;
        socklen_t sl = sizeof acc;
        struct sockaddr_storage ss;
        socklen_t al = sizeof ss;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &sl) || !acc) continue;
        if (getsockname(fd, (struct sockaddr *)&ss, &al)) continue;
        int p = ss.ss_family == AF_INET    ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                : ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                           : -1;
        if (p == port) return fd;
    }
    return -1;
}

/* Accepts and closes what waits in the backlog, with the spare descriptor's slot. Returns how many. */
static int shed_backlog(rc_transport *t) {
    if (t->spare_fd < 0 || t->listen_fd < 0) return 0;
    int lfd = t->listen_fd, n = 0;
    close(t->spare_fd);
    t->spare_fd = -1;
    static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 30\r\n"
                               "Connection: close\r\n\r\nserver out of file descriptors\n";
    for (; lfd >= 0 && n < RC_ACCEPT_SHED_MAX; n++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (!t->tls) (void)!send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
    }
    t->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* -1 if another thread took the slot: next time */
    return n;
}

static void accept_backoff(rc_transport *t, int err) {
    int64_t now = rc_now_us();
    int shed = (err == EMFILE || err == ENFILE) ? shed_backlog(t) : 0;
    t->accept_pause_us = rc_accept_pause_next(t->accept_pause_us, t->accept_pause_end_us, now);
    t->accept_pause_end_us = now + t->accept_pause_us;
    t->accept_pauses++;
    t->accept_shed += (uint64_t)shed;
    char eb[64];
    struct rlimit rl = {0};
    getrlimit(RLIMIT_NOFILE, &rl);
    rc_log_limited(&t->ratelog, t->log, "accept paused", RCANVAS_LOG_WARN,
                   "cannot accept connections: %s (ulimit -n %llu): %d waiting closed, accepting paused for %lld ms "
                   "(%llu pauses, %llu connections closed so far)",
                   strerror_r(err, eb, sizeof eb), (unsigned long long)rl.rlim_cur, shed,
                   (long long)(t->accept_pause_us / 1000), (unsigned long long)t->accept_pauses,
                   (unsigned long long)t->accept_shed);
    if (t->listen_wsi) {
        lws_rx_flow_control(t->listen_wsi, 0);
        lws_sul_schedule(t->ctx, 0, &t->accept_sul, accept_resume, t->accept_pause_us);
    }
}

/* Says the counts of rate-limited lines whose flood has stopped (ratelog.h), every RC_LOG_INTERVAL_US. */
static void log_flush_timer(lws_sorted_usec_list_t *sul) {
    rc_transport *t = lws_container_of(sul, rc_transport, log_sul);
    int64_t now = rc_now_us();
    rc_ratelog_flush(&t->ratelog, t->log, now);
    pthread_mutex_lock(&g_log_mu);
    rc_logger lg = g_lws_logger;
    pthread_mutex_unlock(&g_log_mu);
    rc_ratelog_flush(&g_lws_ratelog, &lg, now);
    lws_sul_schedule(t->ctx, 0, &t->log_sul, log_flush_timer, RC_LOG_INTERVAL_US);
}

/* The application-level heartbeat of viewers (RC_HEARTBEAT_US), every RC_HEARTBEAT_CHECK_US. */
static void heartbeat_timer(lws_sorted_usec_list_t *sul) {
    rc_transport *t = lws_container_of(sul, rc_transport, heartbeat_sul);
    int64_t now = rc_now_us();
    for (rc_viewer *v = t->viewers; v; v = v->next) rc_viewer_heartbeat(v, now);
    lws_sul_schedule(t->ctx, 0, &t->heartbeat_sul, heartbeat_timer, RC_HEARTBEAT_CHECK_US);
}

/* ---- wake-up and timers (network thread) ---- */

void rc_transport_wake(rc_transport *t) {
    if (t->ctx) lws_cancel_service(t->ctx);
}

static void tick(rc_transport *t);

static void tick_timer(lws_sorted_usec_list_t *sul) {
    rc_transport *t = lws_container_of(sul, rc_transport, tick_sul);
    tick(t);
}

/* Runs the canvases' deadlines and schedules the timer for the next one. */
static void tick(rc_transport *t) {
    int64_t next = rc_registry_tick(t->registry, rc_now_us());
    if (next >= 0) lws_sul_schedule(t->ctx, 0, &t->tick_sul, tick_timer, next + 1000);
}

/* Shutdown (network thread): each viewer gets its close frame, 1001 "going away", at once (no grace period). */
static void drain_viewers(rc_transport *t) {
    for (rc_viewer *v = t->viewers; v; v = v->next) {
        if (!v->close_code) rc_viewer_request_close(v, LWS_CLOSE_STATUS_GOINGAWAY, "server shutting down");
        v->close_now = 1;
        lws_callback_on_writable(v->wsi);
    }
}

static void on_wake(rc_transport *t) {
    if (atomic_load(&t->draining)) {
        drain_viewers(t);
        return;
    }
    for (rc_viewer *v = t->viewers; v; v = v->next) rc_viewer_service(v);
    tick(t);
}

/* ---- the lws protocol callback ---- */

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct lws_context *ctx = lws_get_context(wsi);
    rc_transport *t = ctx ? lws_context_user(ctx) : NULL;
    rc_pss *p = user;
    switch (reason) {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
        /* lws 4.1 calls this with the listening socket's wsi (ops-listen.c) after each accept(): kept for
         * accept_backoff, which pauses it (there is no other public way to it in 4.1) */
        if (t && !t->listen_wsi && (int)lws_get_socket_fd(wsi) == t->listen_fd) t->listen_wsi = wsi;
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        if (t && !atomic_load(&t->stop)) on_wake(t);
        return 0;
    case LWS_CALLBACK_HTTP: return rc_http_serve(wsi, t, p, (const char *)in);
    case LWS_CALLBACK_HTTP_WRITEABLE: return rc_http_writable(wsi, p);
    case LWS_CALLBACK_CLOSED_HTTP:
        if (p) {
            free(p->body);
            p->body = NULL;
        }
        return 0;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: return rc_http_confirm_upgrade(wsi, t, (const char *)in);
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: return rc_http_filter_upgrade(wsi, t, p);
    case LWS_CALLBACK_ESTABLISHED:
        if (p && p->refuse_code) return rc_http_refused_established(wsi, p);
        return rc_viewer_established(wsi, t, p);
    case LWS_CALLBACK_TIMER:
        if (p && p->v) rc_viewer_timer(p->v);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        if (p && p->refuse_code) return rc_http_refused_writable(wsi, p);
        return p && p->v ? rc_viewer_writable(p->v) : 0;
    case LWS_CALLBACK_RECEIVE: return p && p->v ? rc_viewer_receive(p->v, in, len) : -1;
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        /* A close frame's payload is empty or a 2-byte code then a reason (RFC 6455 5.5.1); lws 4.1 checks the code
         * but echoes a 1-byte payload back as it came (lib/roles/ws/ops-ws.c: "deal with the close packet contents
         * as a PONG"). Refused here with 1002: returning -1 makes lws send the close reason set now. */
        if (len == 1) {
            static const char why[] = "close payload of 1 byte";
            lws_close_reason(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, (unsigned char *)why, sizeof why - 1);
            return -1;
        }
        /* lws 4.1 turns the codes RFC 6455 7.4 forbids below 3000 into 1002 but echoed 5000 … 65535: those are refused
         * here the same way (3000–4999 are the registered and private ranges) */
        if (len >= 2 && ((const unsigned char *)in)[0] * 256 + ((const unsigned char *)in)[1] >= 5000) {
            static const char why[] = "close code above 4999";
            lws_close_reason(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, (unsigned char *)why, sizeof why - 1);
            return -1;
        }
        return 0;
    case LWS_CALLBACK_CLOSED:
        if (p && p->v) {
            rc_viewer_closed(p->v);
            p->v = NULL;
        }
        return 0;
    case LWS_CALLBACK_WSI_DESTROY:
        /* An upgrade that passed the filter but never became a viewer still holds its reservation. */
        if (p && p->reserved) {
            p->reserved = 0;
            rc_transport_release_slot(t);
        }
        return 0;
    default: return 0;
    }
}

/* ---- lifecycle ---- */

static void *net_main(void *arg) {
    rc_transport *t = arg;
    lws_sul_schedule(t->ctx, 0, &t->log_sul, log_flush_timer, RC_LOG_INTERVAL_US);
    lws_sul_schedule(t->ctx, 0, &t->heartbeat_sul, heartbeat_timer, RC_HEARTBEAT_CHECK_US);
    int64_t probed_us = 0;
    while (!atomic_load(&t->stop)) {
        if (lws_service(t->ctx, 0) < 0) break;
        int e = rc_lws_take_accept_errno(); /* lws's accept() failed in that round and said so (lws_emit) */
        /* else look at the listener, at most once a millisecond (a poll() per round would cost the busy server
         * more than the failures do), and not while accepting is paused: the backlog then waits on purpose */
        if (!e && lws_dll2_is_detached(&t->accept_sul.list)) {
            int64_t now = rc_now_us();
            if (now - probed_us >= 1000) {
                probed_us = now;
                e = rc_listener_starved(t->listen_fd);
            }
        }
        if (e) accept_backoff(t, e);
    }
    return NULL;
}

static void destroy(rc_transport *t) {
    if (t->ctx) {
        struct lws_context *ctx = t->ctx;
        t->ctx = NULL; /* encoder completions stop waking it */
        lws_context_destroy(ctx); /* closes every connection: CLOSED callbacks close the sessions */
    }
    pthread_mutex_lock(&g_log_mu);
    if (g_lws_logger.user == t->log->user && g_lws_logger.fn == t->log->fn) g_lws_logger.fn = NULL;
    pthread_mutex_unlock(&g_log_mu);
    if (t->spare_fd >= 0) close(t->spare_fd);
    rc_ratelog_destroy(&t->ratelog);
    for (int i = 0; i < t->n_origins; i++) free(t->origins[i]);
    free(t->origins);
    for (int i = 0; i < t->n_hosts; i++) free(t->hosts[i]);
    free(t->hosts);
    pthread_mutex_destroy(&t->mu);
    free(t);
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

/* Each viewer holds a file descriptor. Past the process's limit lws cannot accept() a connection at all: it waits
 * in the backlog, the network thread spins on EMFILE (measured: 73 % of a core) and the client hangs instead of
 * reading a 503. So the cap is lowered to what the limit holds, 64 descriptors left for the rest of the process
 * (listening socket, eventfd, the app's own files, and the connections being refused), and the log says so. */
static void fit_fd_limit(rc_transport *t) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY) return;
    if ((rlim_t)t->max_viewers + 64 <= rl.rlim_cur) return;
    int fit = rl.rlim_cur > 65 ? (int)(rl.rlim_cur - 64) : 1;
    rc_log(t->log, RCANVAS_LOG_WARN,
           "max_viewers %d lowered to %d: this process may open only %llu files (ulimit -n); raise that limit for "
           "more viewers", t->max_viewers, fit, (unsigned long long)rl.rlim_cur);
    t->max_viewers = fit;
}

/* TLS on the listening port: lws loads the files (checked by rc_tls_check before) into its OpenSSL
 * context; TLS 1.2 and up. A connection whose first byte is not a TLS handshake is let through as plain HTTP
 * (ALLOW_NON_SSL_ON_SSL_PORT with ALLOW_HTTP_ON_HTTPS_LISTENER) only so that http.c can answer it 400 "this
 * server speaks https" at once instead of lws's bare close ("empty reply"); nothing is served over it: every
 * request and upgrade passes refuse_plain() first (rc_http_serve, rc_http_filter_upgrade). */
static void set_tls(struct lws_context_creation_info *info, const rc_transport_config *cfg) {
    info->options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT | LWS_SERVER_OPTION_ALLOW_NON_SSL_ON_SSL_PORT |
                     LWS_SERVER_OPTION_ALLOW_HTTP_ON_HTTPS_LISTENER;
    info->ssl_cert_filepath = cfg->tls_cert;
    info->ssl_private_key_filepath = cfg->tls_key;
    info->ssl_options_set = SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
    /* TLS 1.2: ECDHE with AEAD only (Mozilla's "intermediate" list without DHE); OpenSSL's default also offered
     * CBC suites with SHA-1 and SHA-2 MACs (ECDHE-ECDSA-AES128-SHA was negotiated). TLS 1.3's suites are all AEAD
     * (OpenSSL's default list). */
    info->ssl_cipher_list = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
                            "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
    /* HTTP/1.1 only: lws offers h2 by ALPN by default, and over h2 a page or client file sent in one lws_write
     * (send_body) broke Chromium's load (ERR_HTTP2_FRAME_SIZE_ERROR on a 20 kB file); the WebSocket's tile
     * messages (up to RC_SEND_MAX in one write) and flow control are built for the HTTP/1.1 upgrade too. */
    info->alpn = "http/1.1";
}

/* Keep-alive of viewers through lws's idle policy: a viewer from which no pong (or the handshake) came for ping_ms
 * is sent a ping; one that still answers none idle_timeout_ms after its last pong is closed, which frees its slot
 * of max_viewers. This drops clients that never read (the ping waits behind the frames their full socket holds),
 * dead links, and frozen tabs, and the pings keep idle proxies from cutting a still scene. lws counts in whole
 * seconds (rounded up here) and needs the hang-up after the ping; without pings (ping_ms 0) there is no hang-up
 * either, since nothing else would prove an idle viewer alive. */
static void set_keepalive(rc_transport *t, const rc_transport_config *cfg, struct lws_context_creation_info *info) {
    memset(&t->keepalive, 0, sizeof t->keepalive);
    if (cfg->ping_ms <= 0) return; /* ping 0 and hang-up 0: lws keeps no validity timer */
    unsigned ping = (unsigned)(cfg->ping_ms + 999) / 1000;
    unsigned hup = cfg->idle_timeout_ms > 0 ? (unsigned)(cfg->idle_timeout_ms + 999) / 1000 : 65535;
    if (ping > 65534) ping = 65534;
    if (hup > 65535) hup = 65535;
    if (hup <= ping) hup = ping + 1;
    t->keepalive.secs_since_valid_ping = (uint16_t)ping;
    t->keepalive.secs_since_valid_hangup = (uint16_t)hup;
    info->retry_and_idle_policy = &t->keepalive;
}

/* Copies n strings into a malloc'd array (*out, *nout counts those copied, for destroy). 0 or -1 (no memory). */
static int copy_strings(const char *const *in, int n, char ***out, int *nout) {
    if (n <= 0) return 0;
    if (!(*out = calloc((size_t)n, sizeof(char *)))) return -1;
    for (int i = 0; i < n; i++) {
        if (!((*out)[i] = strdup(in[i]))) return -1;
        *nout = i + 1;
    }
    return 0;
}

int rc_transport_new(const rc_transport_config *cfg, rc_transport **out) {
    *out = NULL;
    rc_transport *t = calloc(1, sizeof(*t));
    if (!t) return RCANVAS_ENOMEM;
    pthread_mutex_init(&t->mu, NULL);
    rc_ratelog_init(&t->ratelog, RC_LOG_INTERVAL_US);
    t->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* given up when out of descriptors (shed_backlog) */
    t->listen_fd = -1;
    snprintf(t->host, sizeof t->host, "%s", cfg->host);
    snprintf(t->token, sizeof t->token, "%s", cfg->token);
    t->max_viewers = cfg->max_viewers;
    t->max_message_bytes = cfg->max_message_bytes;
    t->max_bad_messages = cfg->max_bad_messages;
    t->registry = cfg->registry;
    t->log = cfg->log;
    fit_fd_limit(t);
    if (cfg->view_token) snprintf(t->view_token, sizeof t->view_token, "%s", cfg->view_token);
    if (cfg->base_path && strcmp(cfg->base_path, "/")) snprintf(t->base, sizeof t->base, "%s", cfg->base_path);
    if (rc_auth_session_new(&t->session)) { /* the page's session: new secrets each process (auth.h) */
        rc_log(t->log, RCANVAS_LOG_ERROR, "no random bytes for the session secrets (getrandom)");
        destroy(t);
        return RCANVAS_EIO;
    }
    if (copy_strings(cfg->allowed_origins, cfg->n_allowed_origins, &t->origins, &t->n_origins) ||
        copy_strings(cfg->allowed_hosts, cfg->n_allowed_hosts, &t->hosts, &t->n_hosts)) {
        destroy(t);
        return RCANVAS_ENOMEM;
    }

    if (cfg->tls_cert) { /* before the port: a bad file is named, and nothing listens */
        int r = rc_tls_check(cfg->tls_cert, cfg->tls_key, t->log, t->tls_fingerprint, sizeof t->tls_fingerprint);
        if (r) {
            destroy(t);
            return r;
        }
        t->tls = 1;
    }

    int bind_err = probe_bind(t->host, cfg->port);
    if (bind_err) { /* EADDRINUSE says it all to the caller; another errno is only said here */
        char eb[128];
        rc_log(t->log, bind_err == EADDRINUSE ? RCANVAS_LOG_WARN : RCANVAS_LOG_ERROR, "cannot listen on %s:%d: %s",
               t->host, cfg->port,
               bind_err == EADDRINUSE ? "address already in use" : strerror_r(bind_err, eb, sizeof eb));
        destroy(t);
        return bind_err == EADDRINUSE ? RCANVAS_EADDRINUSE : RCANVAS_ENET;
    }

    pthread_mutex_lock(&g_log_mu);
    g_lws_logger = *t->log;
    pthread_mutex_unlock(&g_log_mu);
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_emit);

    t->protocols[0] = (struct lws_protocols){
        .name = "rcanvas.v1", .callback = callback, .per_session_data_size = sizeof(rc_pss), .rx_buffer_size = 4096,
        .tx_packet_size = RC_SEND_MAX};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = cfg->port; /* 0: the kernel picks a free port, read back below */
    info.iface = strcmp(t->host, "0.0.0.0") ? t->host : NULL;
    info.protocols = t->protocols;
    info.user = t;
    info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 | LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    if (!strchr(t->host, ':')) info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    info.count_threads = 1;
    info.max_http_header_data = 4096;
    info.timeout_secs = 10;
    if (t->tls) set_tls(&info, cfg);
    set_keepalive(t, cfg, &info);
    t->ctx = lws_create_context(&info);
    if (!t->ctx) {
        rc_log(t->log, RCANVAS_LOG_ERROR, "cannot listen on %s:%d", t->host, cfg->port);
        destroy(t);
        return RCANVAS_ENET;
    }
    struct lws_vhost *vh = lws_get_vhost_by_name(t->ctx, "default");
    t->port = vh ? lws_get_vhost_listen_port(vh) : cfg->port;
    t->listen_fd = find_listen_fd(t->port);
    *out = t;
    return RCANVAS_OK;
}

int rc_transport_start(rc_transport *t) {
    if (rc_thread_create(&t->thread, "rcanvas-net", net_main, t)) return RCANVAS_ETHREAD;
    t->thread_started = 1;
    return RCANVAS_OK;
}

int rc_transport_port(const rc_transport *t) { return t->port; }

const char *rc_transport_tls_fingerprint(const rc_transport *t) { return t->tls ? t->tls_fingerprint : NULL; }
const char *rc_transport_session_path(const rc_transport *t) { return t->session.path; }
const char *rc_transport_session_key(const rc_transport *t, int view_only) {
    return view_only ? t->session.view : t->session.interactive;
}
/* Sends every viewer its close frame (1001) and waits until their close handshakes end, at most
 * RC_DRAIN_MAX_US: a page then sees a clean close (wasClean, code 1001) rather than 1006 from a dropped socket. A
 * client that does not answer (it never reads) costs the whole wait; the context's destroy then cuts it. */
#define RC_DRAIN_MAX_US 1000000
static void drain(rc_transport *t) {
    atomic_store(&t->draining, 1);
    lws_cancel_service(t->ctx);
    int64_t end = rc_now_us() + RC_DRAIN_MAX_US;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        int n = t->nviewers;
        pthread_mutex_unlock(&t->mu);
        if (n == 0 || rc_now_us() >= end) break;
        usleep(2000);
    }
}

void rc_transport_free(rc_transport *t) {
    if (!t) return;
    if (t->thread_started) {
        drain(t);
        atomic_store(&t->stop, 1);
        lws_cancel_service(t->ctx);
        pthread_join(t->thread, NULL);
        t->thread_started = 0;
    }
    destroy(t);
}
