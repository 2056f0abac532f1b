// SPDX-License-Identifier: MIT
/*
 * test_h2c — the HTTP/2 door stays shut. libwebsockets 4.1.6 is built with HTTP/2, and before this test
 * a request with "Upgrade: h2c" got "101 Switching Protocols" on the plain port and, in the clear, on the TLS port;
 * its streams were then served without the TLS check (pages, /metrics), and each RFC 8441 extended CONNECT stream
 * (":protocol websocket") that the upgrade filter refused leaked 224 bytes inside lws, before any token check.
 * Checked here, on a plain server and on a TLS server, as raw sockets (and OpenSSL for the TLS side) send them:
 *   - an h2c upgrade of GET /metrics with the right token gets an HTTP/1.1 error naming the reason, never 101,
 *     never the metrics; plain text on the TLS port still gets 400 "this server speaks https";
 *   - an h2c upgrade inside TLS gets the same refusal;
 *   - the HTTP/2 connection preface sent first ("prior knowledge") gets no HTTP/2 frame back;
 *   - ALPN offering only h2 does not get h2;
 *   - the leak: 2000 extended-CONNECT streams (preface and HEADERS in separate sends, the way the leak showed)
 *     leave the process's heap within 64 kB of where it was (224 B a stream would be 448 kB), measured with
 *     mallinfo2 (plain build) or the sanitizer's allocator counter (ASan build);
 *   - after all of it the server still serves a plain page and a WebSocket upgrade.
 */
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rcanvas.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* <sanitizer/allocator_interface.h>, not in gcc 12's */
#define RC_HEAP_BYTES() ((long long)__sanitizer_get_current_allocated_bytes())
#else
#define RC_HEAP_BYTES() ((long long)mallinfo2().uordblks)
#endif

#define TOKEN "h2c-test-token-0123456789"

/* ---- a connection: TCP, with TLS on top when ssl is set ---- */

typedef struct {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
} conn;

static int tcp_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* alpn: NULL for a plain connection, else the ALPN list to offer (wire format) and TLS on top. 0 or -1. */
static int conn_open(conn *c, int port, const char *alpn, size_t alpn_len) {
    memset(c, 0, sizeof *c);
    c->fd = tcp_connect(port);
    if (c->fd < 0) return -1;
    if (!alpn) return 0;
    c->ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_NONE, NULL); /* self-signed; test_tls checks the certificate */
    c->ssl = SSL_new(c->ctx);
    SSL_set_fd(c->ssl, c->fd);
    SSL_set_tlsext_host_name(c->ssl, "localhost");
    SSL_set_alpn_protos(c->ssl, (const unsigned char *)alpn, (unsigned)alpn_len);
    return SSL_connect(c->ssl) == 1 ? 0 : -1;
}

static int conn_send(conn *c, const void *p, size_t n) {
    if (c->ssl) return SSL_write(c->ssl, p, (int)n) == (int)n ? 0 : -1;
    return write(c->fd, p, n) == (ssize_t)n ? 0 : -1;
}

/* Reads until the peer closes, cap - 1 bytes, or 5 s without data; NUL-terminates; the byte count. */
static size_t conn_read_all(conn *c, char *buf, size_t cap) {
    size_t n = 0;
    while (n + 1 < cap) {
        int r = c->ssl ? SSL_read(c->ssl, buf + n, (int)(cap - 1 - n)) : (int)read(c->fd, buf + n, cap - 1 - n);
        if (r <= 0) break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    return n;
}

static void conn_close(conn *c) {
    if (c->ssl) SSL_free(c->ssl);
    if (c->ctx) SSL_CTX_free(c->ctx);
    if (c->fd >= 0) close(c->fd);
    ERR_clear_error();
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

/* ---- HTTP/2 by hand (RFC 9113): the preface, an empty SETTINGS frame, and HEADERS of an RFC 8441 extended
 * CONNECT in HPACK literals without Huffman coding (RFC 7541 §6.2.2; static-table indexes 1 :authority, 2 :method,
 * 4 :path, 6 :scheme http) ---- */

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static size_t h2_frame(uint8_t *out, uint8_t type, uint8_t flags, uint32_t stream, const uint8_t *payload,
                       size_t len) {
    out[0] = (uint8_t)(len >> 16), out[1] = (uint8_t)(len >> 8), out[2] = (uint8_t)len;
    out[3] = type, out[4] = flags;
    out[5] = (uint8_t)(stream >> 24 & 0x7f), out[6] = (uint8_t)(stream >> 16), out[7] = (uint8_t)(stream >> 8);
    out[8] = (uint8_t)stream;
    if (len) memcpy(out + 9, payload, len);
    return 9 + len;
}

static size_t hpack_lit(uint8_t *out, uint8_t name_index, const char *name, const char *value) {
    size_t o = 0;
    out[o++] = name_index; /* 0000xxxx: literal without indexing, name by index xxxx (0: a literal name follows) */
    if (!name_index) {
        out[o++] = (uint8_t)strlen(name);
        memcpy(out + o, name, strlen(name));
        o += strlen(name);
    }
    out[o++] = (uint8_t)strlen(value);
    memcpy(out + o, value, strlen(value));
    return o + strlen(value);
}

/* HEADERS (END_HEADERS) of an extended CONNECT to /ws on stream id; the frame's bytes in out. */
static size_t h2_ws_connect(uint8_t *out, uint32_t stream, int port) {
    uint8_t hb[256];
    char auth[64];
    snprintf(auth, sizeof auth, "127.0.0.1:%d", port);
    size_t n = hpack_lit(hb, 2, NULL, "CONNECT");
    hb[n++] = 0x86; /* :scheme http, indexed */
    n += hpack_lit(hb + n, 4, NULL, "/ws?token=" TOKEN);
    n += hpack_lit(hb + n, 1, NULL, auth);
    n += hpack_lit(hb + n, 0, ":protocol", "websocket");
    n += hpack_lit(hb + n, 0, "sec-websocket-version", "13");
    return h2_frame(out, 0x1, 0x4, stream, hb, n);
}

/* 1 when buf (n bytes) starts with something an HTTP/2 server sends first: a SETTINGS frame (type 4, stream 0). */
static int looks_h2(const char *buf, size_t n) {
    const uint8_t *b = (const uint8_t *)buf;
    return n >= 9 && b[3] == 0x4 && !(b[5] | b[6] | b[7] | b[8]);
}

static char resp[1 << 16];

/* The h2c upgrade of GET path; the whole response (the server closes after its refusal) in resp. */
static size_t h2c_upgrade(int port, const char *alpn, size_t alpn_len, const char *path) {
    conn c;
    resp[0] = '\0';
    if (conn_open(&c, port, alpn, alpn_len)) {
        conn_close(&c);
        return 0;
    }
    char req[512];
    snprintf(req, sizeof req,
             "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
             "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
             path, port);
    size_t n = 0;
    if (!conn_send(&c, req, strlen(req))) {
        /* a client that got 101 goes on with the preface: send it, so an open door shows its h2 frames */
        uint8_t pre[64];
        memcpy(pre, PREFACE, sizeof PREFACE - 1);
        size_t pn = sizeof PREFACE - 1 + h2_frame(pre + sizeof PREFACE - 1, 0x4, 0, 0, NULL, 0);
        usleep(50 * 1000);
        conn_send(&c, pre, pn);
        n = conn_read_all(&c, resp, sizeof resp);
    }
    conn_close(&c);
    return n;
}

/* Reads from c into buf (at *n of cap bytes) until want(buf, *n, arg) holds, the peer closes or 5 s pass without
 * data; 1 when want held. Each step of the streams below waits for the server's answer to the one before, so
 * the preface and each HEADERS frame arrive in sends of their own (the way the leak showed). */
static int read_until(conn *c, char *buf, size_t *n, size_t cap, int (*want)(const char *, size_t, unsigned),
                      unsigned arg) {
    while (!want(buf, *n, arg)) {
        if (*n + 1 >= cap) *n = 0; /* only the newest bytes matter to want() */
        int r = c->ssl ? SSL_read(c->ssl, buf + *n, (int)(cap - 1 - *n)) : (int)read(c->fd, buf + *n, cap - 1 - *n);
        if (r <= 0) return 0;
        *n += (size_t)r;
        buf[*n] = '\0';
    }
    return 1;
}

static int have_headers(const char *b, size_t n, unsigned arg) {
    (void)arg;
    return n >= 4 && memmem(b, n, "\r\n\r\n", 4) != NULL;
}

/* The HTTP/2 frames after the 101's header block: 1 when one of type arg >> 24 on stream arg & 0xffffff came. */
static int have_frame(const char *b, size_t n, unsigned arg) {
    const char *e = memmem(b, n, "\r\n\r\n", 4);
    size_t o = e ? (size_t)(e + 4 - b) : 0;
    const uint8_t *u = (const uint8_t *)b;
    while (o + 9 <= n) {
        size_t len = (size_t)u[o] << 16 | (size_t)u[o + 1] << 8 | u[o + 2];
        unsigned sid = ((unsigned)u[o + 5] & 0x7f) << 24 | (unsigned)u[o + 6] << 16 | (unsigned)u[o + 7] << 8 |
                       u[o + 8];
        if (u[o + 3] == arg >> 24 && sid == (arg & 0xffffff)) return 1;
        o += 9 + len;
    }
    return 0;
}

/* Extended-CONNECT streams over n_conn connections, streams_per each: the h2c upgrade; once answered, the preface
 * and SETTINGS; once the server's SETTINGS came, each HEADERS after the server's RST_STREAM of the one before (what
 * the upgrade filter's refusal of such a stream ends with). Returns how many streams the server answered. */
static int ws_connect_streams(int port, int n_conn, int streams_per) {
    static char buf[1 << 16];
    int answered = 0;
    for (int k = 0; k < n_conn; k++) {
        conn c;
        if (conn_open(&c, port, NULL, 0)) {
            conn_close(&c);
            continue;
        }
        char req[512];
        snprintf(req, sizeof req,
                 "GET /?token=" TOKEN " HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                 "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
                 port);
        size_t n = 0;
        conn_send(&c, req, strlen(req));
        if (read_until(&c, buf, &n, sizeof buf, have_headers, 0) && !strncmp(buf, "HTTP/1.1 101", 12)) {
            uint8_t pre[64], f[300];
            memcpy(pre, PREFACE, sizeof PREFACE - 1);
            size_t pn = sizeof PREFACE - 1 + h2_frame(pre + sizeof PREFACE - 1, 0x4, 0, 0, NULL, 0);
            conn_send(&c, pre, pn);
            int ok = read_until(&c, buf, &n, sizeof buf, have_frame, 0x4u << 24);
            for (int s = 0; ok && s < streams_per; s++) {
                unsigned sid = 3 + 2 * (unsigned)s;
                size_t fn = h2_ws_connect(f, sid, port);
                ok = !conn_send(&c, f, fn) && read_until(&c, buf, &n, sizeof buf, have_frame, 0x0u << 24 | sid);
                answered += ok;
            }
        }
        conn_close(&c);
    }
    return answered;
}

static size_t plain_get(int port, const char *path, const char *extra) {
    conn c;
    resp[0] = '\0';
    if (conn_open(&c, port, NULL, 0)) {
        conn_close(&c);
        return 0;
    }
    char req[768];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n", path, port,
             extra ? extra : "Connection: close\r\n");
    size_t n = 0;
    if (!conn_send(&c, req, strlen(req))) {
        if (extra) read_until(&c, resp, &n, sizeof resp, have_headers, 0); /* an upgrade stays open */
        else n = conn_read_all(&c, resp, sizeof resp);
    }
    conn_close(&c);
    return n;
}

static rcanvas_server *start(const char *cert, const char *key) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.encode_threads = 1;
    sc.token = TOKEN;
    sc.tls_cert = cert;
    sc.tls_key = key;
    rcanvas_server *s = NULL;
    CHECK_EQ_INT(rcanvas_server_new(&sc, &s), RCANVAS_OK);
    return s;
}

static const char WS_UPGRADE[] = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: rcanvas.v1\r\n";

/* "HTTP/1.x 400": lws writes its status answers as HTTP/1.0 */
static int is_400(const char *r) {
    return !strncmp(r, "HTTP/1.", 7) && !strncmp(r + 8, " 400 ", 5);
}

static void check_refused(size_t n, const char *where) {
    CHECK_MSG(n > 0 && strncmp(resp, "HTTP/1.1 101", 12) != 0, "%s: %.60s", where, n ? resp : "(nothing)");
    CHECK_MSG(!strstr(resp, "rcanvas_"), "%s: metrics served: %.200s", where, resp);
    CHECK_MSG(!looks_h2(resp, n), "%s: HTTP/2 frames came back", where);
}

int main(void) {
    /* plain server */
    rcanvas_server *s = start(NULL, NULL);
    if (!s) TEST_MAIN_END();
    rcanvas_canvas_config cc;
    rcanvas_canvas_config_init(&cc);
    rcanvas_canvas *cv = NULL;
    CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &cv), RCANVAS_OK);
    int port = rcanvas_server_port(s);

    size_t n = h2c_upgrade(port, NULL, 0, "/metrics?token=" TOKEN);
    check_refused(n, "plain h2c");
    CHECK_MSG(is_400(resp) && strstr(resp, "HTTP/1.1 only"), "plain h2c: %.300s", resp);

    /* prior knowledge: the preface first */
    {
        conn c;
        CHECK(conn_open(&c, port, NULL, 0) == 0);
        uint8_t pre[64];
        memcpy(pre, PREFACE, sizeof PREFACE - 1);
        size_t pn = sizeof PREFACE - 1 + h2_frame(pre + sizeof PREFACE - 1, 0x4, 0, 0, NULL, 0);
        conn_send(&c, pre, pn);
        n = conn_read_all(&c, resp, sizeof resp);
        CHECK_MSG(!looks_h2(resp, n), "prior-knowledge preface answered in HTTP/2");
        conn_close(&c);
    }

    /* the leak: warm up (lws's pools, the rate-log table), then 2000 streams against the heap */
    ws_connect_streams(port, 20, 10);
    long long before = RC_HEAP_BYTES();
    int answered = ws_connect_streams(port, 200, 10);
    long long grown = RC_HEAP_BYTES() - before;
    printf("heap after 2000 extended-CONNECT streams (%d answered in HTTP/2): %+lld bytes\n", answered, grown);
    CHECK_EQ_INT(answered, 0);
    CHECK_MSG(grown < 64 * 1024, "heap grew %lld bytes over 2000 streams (a leak of %lld B/stream)", grown,
              grown / 2000);

    /* still serving */
    /* the page by the token in the URL: the 303 into the session's path; by a Bearer header: the page itself */
    n = plain_get(port, "/?token=" TOKEN, NULL);
    CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 303", 12), "page after: %.60s", resp);
    n = plain_get(port, "/", "Authorization: Bearer " TOKEN "\r\nConnection: close\r\n");
    CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 200", 12), "page by Bearer after: %.60s", resp);
    n = plain_get(port, "/ws?token=" TOKEN, WS_UPGRADE);
    CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 101", 12), "ws after: %.60s", resp);
    rcanvas_server_free(s);

    /* TLS server */
    char dir[] = "/tmp/rcanvas-test-h2c-XXXXXX", cert[400], key[400];
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ_INT(rcanvas_tls_self_signed(dir, NULL, NULL, NULL, cert, key, sizeof cert, NULL), RCANVAS_OK);
    s = start(cert, key);
    if (s) {
        CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &cv), RCANVAS_OK);
        port = rcanvas_server_port(s);
        /* in the clear on the TLS port: the https refusal, not 101 */
        n = h2c_upgrade(port, NULL, 0, "/metrics?token=" TOKEN);
        check_refused(n, "cleartext h2c on the TLS port");
        CHECK_MSG(strstr(resp, "speaks https") != NULL, "cleartext h2c on TLS: %.120s", resp);
        /* inside TLS */
        static const char h1[] = "\x08http/1.1", h2[] = "\x02h2";
        n = h2c_upgrade(port, h1, sizeof h1 - 1, "/metrics?token=" TOKEN);
        check_refused(n, "h2c inside TLS");
        CHECK_MSG(is_400(resp) && strstr(resp, "HTTP/1.1 only"), "h2c inside TLS: %.300s", resp);
        /* ALPN h2 alone: no h2 (the handshake fails or picks nothing), and a preface gets no h2 frames */
        {
            conn c;
            int ok = conn_open(&c, port, h2, sizeof h2 - 1) == 0;
            const unsigned char *sel = NULL;
            unsigned sel_len = 0;
            if (ok) SSL_get0_alpn_selected(c.ssl, &sel, &sel_len);
            CHECK_MSG(!(sel_len == 2 && !memcmp(sel, "h2", 2)), "ALPN picked h2");
            if (ok) {
                uint8_t pre[64];
                memcpy(pre, PREFACE, sizeof PREFACE - 1);
                size_t pn = sizeof PREFACE - 1 + h2_frame(pre + sizeof PREFACE - 1, 0x4, 0, 0, NULL, 0);
                conn_send(&c, pre, pn);
                n = conn_read_all(&c, resp, sizeof resp);
                CHECK_MSG(!looks_h2(resp, n), "TLS preface answered in HTTP/2");
            }
            conn_close(&c);
        }
        rcanvas_server_free(s);
    }
    TEST_MAIN_END();
}
