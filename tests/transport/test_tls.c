/* SPDX-License-Identifier: MIT */
/*
 * test_tls — TLS on the server's one port: a self-signed certificate made with rcanvas_tls_self_signed
 * (in a temporary folder, so the test never depends on a shipped file that could expire) is kept and reused, names
 * localhost, 127.0.0.1 and ::1, and its key is 0600; a server given it serves the page over https (200, the page
 * itself; 403 for a wrong token) and upgrades wss (101), its URL says https and its fingerprint is the one the
 * client receives; a plain-HTTP request on that port gets 400 "this server speaks https" and the connection is
 * closed, after which https still works; ALPN picks HTTP/1.1 when h2 is offered too; bad certificate or key files
 * give RCANVAS_ETLS with a log line naming the file and the reason, and half a pair RCANVAS_EINVAL. The client
 * side is OpenSSL's (SSL over a TCP socket).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "rcanvas.h"
#include "test.h"

/* ---- log capture ---- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[8192];

static void log_cb(void *user, rcanvas_log_level level, const char *msg) {
    (void)user;
    pthread_mutex_lock(&g_mu);
    size_t n = strlen(g_log);
    snprintf(g_log + n, sizeof g_log - n, "%d %s\n", (int)level, msg);
    pthread_mutex_unlock(&g_mu);
}

static int log_has(const char *s) {
    pthread_mutex_lock(&g_mu);
    int r = strstr(g_log, s) != NULL;
    pthread_mutex_unlock(&g_mu);
    return r;
}

static void log_clear(void) {
    pthread_mutex_lock(&g_mu);
    g_log[0] = '\0';
    pthread_mutex_unlock(&g_mu);
}

/* ---- clients ---- */

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

/* 1 when resp (len bytes) holds whole headers and, with a Content-Length, the whole body. */
static int response_complete(const char *resp, size_t len) {
    const char *end = strstr(resp, "\r\n\r\n");
    if (!end) return 0;
    if (!strncmp(resp, "HTTP/1.1 101", 12)) return 1;
    const char *cl = strcasestr(resp, "content-length:");
    if (!cl || cl > end) return 0;
    return len >= (size_t)(end + 4 - resp) + strtoul(cl + 15, NULL, 10);
}

static char g_alpn[32]; /* the protocol the server picked by ALPN on the last https_request */

/* Sends req over TLS to 127.0.0.1:port and reads the response into resp (NUL-terminated). The server's
 * certificate comes back in *peer (caller frees) when peer is not NULL. Returns the bytes read, -1 if the TLS
 * handshake failed. */
static int https_request(int port, const char *req, char *resp, size_t cap, X509 **peer) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* self-signed: the fingerprint is checked instead */
    int fd = tcp_connect(port);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, "localhost");
    /* offered as a browser does: the server must pick HTTP/1.1 (its sends are not framed for h2) */
    static const unsigned char alpn[] = "\x02h2\x08http/1.1";
    SSL_set_alpn_protos(ssl, alpn, sizeof alpn - 1);
    int n = -1;
    if (fd >= 0 && SSL_connect(ssl) == 1) {
        const unsigned char *sel = NULL;
        unsigned sel_len = 0;
        SSL_get0_alpn_selected(ssl, &sel, &sel_len);
        snprintf(g_alpn, sizeof g_alpn, "%.*s", (int)sel_len, sel ? (const char *)sel : "");
        if (peer) *peer = SSL_get1_peer_certificate(ssl);
        SSL_write(ssl, req, (int)strlen(req));
        n = 0;
        while ((size_t)n + 1 < cap) {
            int r = SSL_read(ssl, resp + n, (int)(cap - 1 - (size_t)n));
            if (r <= 0) break;
            n += r;
            resp[n] = '\0';
            if (response_complete(resp, (size_t)n)) break;
        }
        resp[n] = '\0';
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    if (fd >= 0) close(fd);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return n;
}

/* A TLS 1.2 handshake offering only `cipher` (OpenSSL name): 1 if the server took it, 0 if it refused. */
static int tls12_accepts(int port, const char *cipher) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_security_level(ctx, 0); /* the client offers what it is told; the server is what is tested */
    int ok = SSL_CTX_set_cipher_list(ctx, cipher);
    CHECK_MSG(ok, "this OpenSSL has no cipher %s", cipher);
    int fd = tcp_connect(port);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    int r = ok && fd >= 0 && SSL_connect(ssl) == 1;
    if (r) {
        CHECK_MSG(!strcmp(SSL_get_cipher_name(ssl), cipher), "%s negotiated for %s", SSL_get_cipher_name(ssl), cipher);
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    if (fd >= 0) close(fd);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return r;
}

/* Plain HTTP to the TLS port: the response in resp; *closed = 1 when the server then closed the connection. */
static int plain_request(int port, const char *req, char *resp, size_t cap, int *closed) {
    int fd = tcp_connect(port);
    if (fd < 0) return -1;
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        close(fd);
        return -1;
    }
    size_t n = 0;
    *closed = 0;
    for (;;) {
        ssize_t r = read(fd, resp + n, cap - 1 - n);
        if (r == 0) *closed = 1;
        if (r <= 0) break;
        n += (size_t)r;
        if (n + 1 >= cap) break;
    }
    resp[n] = '\0';
    close(fd);
    return (int)n;
}

static void file_fingerprint(const char *path, char *out) {
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f) fclose(f);
    unsigned char md[32];
    unsigned n = 0;
    if (x && X509_digest(x, EVP_sha256(), md, &n) && n == 32)
        for (unsigned i = 0; i < n; i++) sprintf(out + 3 * i, i + 1 < n ? "%02X:" : "%02X", md[i]);
    X509_free(x);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* ---- tests ---- */

static rcanvas_server *start(const char *cert, const char *key, int *err) {
    rcanvas_server_config sc;
    rcanvas_server_config_init(&sc);
    sc.port = 0;
    sc.encode_threads = 1;
    sc.token = "tls-test-token-0123456789";
    sc.tls_cert = cert;
    sc.tls_key = key;
    sc.log = log_cb;
    rcanvas_server *s = NULL;
    *err = rcanvas_server_new(&sc, &s);
    return s;
}

int main(void) {
    char dir[] = "/tmp/rcanvas-test-tls-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[300], cert[400], key[400], cert2[400], key2[400];
    snprintf(sub, sizeof sub, "%s/state/rcanvas", dir); /* made with its parents */

    /* the self-signed pair: made once, kept, 0600 key, names the loopback names */
    int created = -1;
    CHECK_EQ_INT(rcanvas_tls_self_signed(sub, "rcanvas.test", log_cb, NULL, cert, key, sizeof cert, &created),
                 RCANVAS_OK);
    CHECK_EQ_INT(created, 1);
    struct stat st;
    CHECK(stat(key, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);
    char fp_file[100];
    file_fingerprint(cert, fp_file);
    CHECK_EQ_INT(strlen(fp_file), 95);
    CHECK_EQ_INT(rcanvas_tls_self_signed(sub, NULL, NULL, NULL, cert2, key2, sizeof cert2, &created), RCANVAS_OK);
    CHECK_EQ_INT(created, 0);
    char fp_again[100];
    file_fingerprint(cert2, fp_again);
    CHECK(!strcmp(fp_file, fp_again) && !strcmp(cert, cert2) && !strcmp(key, key2));
    /* an existing folder is made private: 0755 → 0700, a key readable by others → 0600, the pair kept */
    CHECK(chmod(sub, 0755) == 0 && chmod(key, 0644) == 0);
    log_clear();
    CHECK_EQ_INT(rcanvas_tls_self_signed(sub, NULL, log_cb, NULL, cert2, key2, sizeof cert2, &created), RCANVAS_OK);
    CHECK_EQ_INT(created, 0);
    CHECK(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(stat(key, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK_MSG(log_has("was mode 755: made 0700") && log_has("was mode 644: made 0600"), "%s", g_log);
    /* a folder of another user is refused (it could swap the key); needs root to make one */
    if (geteuid() == 0) {
        char theirs[400], tc[500], tk[500];
        snprintf(theirs, sizeof theirs, "%s/theirs", dir);
        CHECK(mkdir(theirs, 0755) == 0 && chown(theirs, 65534, 65534) == 0);
        log_clear();
        CHECK_EQ_INT(rcanvas_tls_self_signed(theirs, NULL, log_cb, NULL, tc, tk, sizeof tc, NULL), RCANVAS_EIO);
        CHECK_MSG(log_has("belongs to uid 65534, not to this user"), "%s", g_log);
        CHECK(stat(theirs, &st) == 0 && (st.st_mode & 0777) == 0755); /* left alone */
    } else {
        printf("test_tls: not root: the other user's folder is not tried\n");
    }
    {
        FILE *f = fopen(cert, "r");
        X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
        if (f) fclose(f);
        CHECK(x != NULL);
        if (x) {
            CHECK_EQ_INT(X509_check_host(x, "localhost", 0, 0, NULL), 1);
            CHECK_EQ_INT(X509_check_host(x, "rcanvas.test", 0, 0, NULL), 1);
            CHECK_EQ_INT(X509_check_host(x, "evil.example", 0, 0, NULL), 0);
            CHECK_EQ_INT(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
            CHECK_EQ_INT(X509_check_ip_asc(x, "::1", 0), 1);
            /* valid for years, not days: at least 9 from now */
            CHECK(X509_cmp_time(X509_get0_notAfter(x), &(time_t){time(NULL) + 9 * 365 * 86400L}) > 0);
            X509_free(x);
        }
    }
    CHECK_EQ_INT(rcanvas_tls_self_signed("", NULL, NULL, NULL, cert2, key2, sizeof cert2, NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(rcanvas_tls_self_signed(sub, NULL, NULL, NULL, cert2, key2, 10, NULL), RCANVAS_EINVAL);

    /* a server with it: https page, wss upgrade, the fingerprint, the URL */
    int err = 0;
    rcanvas_server *s = start(cert, key, &err);
    CHECK_EQ_INT(err, RCANVAS_OK);
    if (s) {
        rcanvas_canvas_config cc;
        rcanvas_canvas_config_init(&cc);
        cc.title = "tls page";
        rcanvas_canvas *cv = NULL;
        CHECK_EQ_INT(rcanvas_canvas_new(s, &cc, &cv), RCANVAS_OK);
        int port = rcanvas_server_port(s);
        char url[512], fp[100], want_url[512];
        rcanvas_server_url(s, NULL, url, sizeof url);
        snprintf(want_url, sizeof want_url, "https://127.0.0.1:%d/?token=tls-test-token-0123456789", port);
        CHECK_MSG(!strcmp(url, want_url), "%s", url);
        CHECK_EQ_INT(rcanvas_server_tls_fingerprint(s, fp, sizeof fp), 95);
        CHECK_MSG(!strcmp(fp, fp_file), "%s vs %s", fp, fp_file);
        CHECK_EQ_INT(rcanvas_server_tls_fingerprint(s, fp, 95), RCANVAS_EINVAL);
        CHECK(log_has("listening on https://127.0.0.1:"));
        /* TLS 1.2 takes ECDHE with AEAD only (CBC suites with SHA-1 were negotiated) */
        CHECK(tls12_accepts(port, "ECDHE-ECDSA-AES128-GCM-SHA256"));
        CHECK(tls12_accepts(port, "ECDHE-ECDSA-AES256-GCM-SHA384"));
        CHECK(tls12_accepts(port, "ECDHE-ECDSA-CHACHA20-POLY1305"));
        CHECK(!tls12_accepts(port, "ECDHE-ECDSA-AES128-SHA"));
        CHECK(!tls12_accepts(port, "ECDHE-ECDSA-AES256-SHA"));
        CHECK(!tls12_accepts(port, "ECDHE-ECDSA-AES128-SHA256"));
        CHECK(!tls12_accepts(port, "AES128-SHA"));

        static char resp[1 << 16];
        char req[512];
        X509 *peer = NULL;
        /* the page by a Bearer token (a tool's way) is served at once; by ?token= it is the 303 into the session,
         * whose cookie is Secure over TLS */
        snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "Authorization: Bearer tls-test-token-0123456789\r\nConnection: close\r\n\r\n", port);
        int n = https_request(port, req, resp, sizeof resp, &peer);
        CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 200", 12), "%.80s", n > 0 ? resp : "(no TLS)");
        CHECK(n > 0 && strstr(resp, "<title>tls page") != NULL);
        if (peer) X509_free(peer);
        peer = NULL;
        snprintf(req, sizeof req, "GET /?token=tls-test-token-0123456789 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "Connection: close\r\n\r\n", port);
        n = https_request(port, req, resp, sizeof resp, &peer);
        CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 303", 12), "%.80s", n > 0 ? resp : "(no TLS)");
        CHECK_MSG(n > 0 && strstr(resp, "HttpOnly; SameSite=Lax; Secure") != NULL, "the session cookie is Secure: %.600s",
                  n > 0 ? resp : "");
        CHECK_MSG(!strcmp(g_alpn, "http/1.1"), "ALPN picked '%s'", g_alpn);
        char fp_peer[100] = "";
        unsigned char md[32];
        unsigned mdn = 0;
        if (peer && X509_digest(peer, EVP_sha256(), md, &mdn))
            for (unsigned i = 0; i < mdn; i++) sprintf(fp_peer + 3 * i, i + 1 < mdn ? "%02X:" : "%02X", md[i]);
        CHECK_MSG(!strcmp(fp_peer, fp), "served %s, reported %s", fp_peer, fp);
        X509_free(peer);

        snprintf(req, sizeof req, "GET /?token=wrong-token-00000000 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "Connection: close\r\n\r\n", port);
        n = https_request(port, req, resp, sizeof resp, NULL);
        CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 403", 12), "%.80s", n > 0 ? resp : "(no TLS)");

        snprintf(req, sizeof req, "GET /ws?token=tls-test-token-0123456789 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: rcanvas.v1\r\n"
                 "Origin: https://127.0.0.1:%d\r\n\r\n", port, port);
        n = https_request(port, req, resp, sizeof resp, NULL);
        CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 101", 12), "%.80s", n > 0 ? resp : "(no TLS)");
        CHECK(n > 0 && strstr(resp, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") != NULL); /* RFC 6455's accept of that key */

        /* plain HTTP on the TLS port: 400 and closed, the page never sent; the same for an upgrade */
        int closed = 0;
        snprintf(req, sizeof req, "GET /?token=tls-test-token-0123456789 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
                 port);
        n = plain_request(port, req, resp, sizeof resp, &closed);
        CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 400", 12), "%.80s", n > 0 ? resp : "(nothing)");
        CHECK(strstr(resp, "this server speaks https") != NULL);
        CHECK(strstr(resp, "<canvas") == NULL && strstr(resp, "tls page") == NULL);
        CHECK_EQ_INT(closed, 1);
        snprintf(req, sizeof req, "GET /ws?token=tls-test-token-0123456789 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: rcanvas.v1\r\n\r\n", port);
        n = plain_request(port, req, resp, sizeof resp, &closed);
        CHECK_MSG(n > 0 && strstr(resp, " 400 ") && !strstr(resp, " 101 "), "%.80s", n > 0 ? resp : "(nothing)");
        CHECK_EQ_INT(closed, 1);
        /* and https still works after them */
        snprintf(req, sizeof req,
                 "GET /client/rcanvas.js HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", port);
        n = https_request(port, req, resp, sizeof resp, NULL);
        CHECK_MSG(n > 0 && !strncmp(resp, "HTTP/1.1 200", 12), "%.80s", n > 0 ? resp : "(no TLS)");
        rcanvas_server_free(s);
    }

    /* without TLS: http URL, no fingerprint */
    {
        rcanvas_server *p = start(NULL, NULL, &err);
        CHECK_EQ_INT(err, RCANVAS_OK);
        char url[512], fp[100] = "x";
        if (p) {
            rcanvas_server_url(p, NULL, url, sizeof url);
            CHECK(!strncmp(url, "http://127.0.0.1:", 17));
            CHECK_EQ_INT(rcanvas_server_tls_fingerprint(p, fp, sizeof fp), 0);
            CHECK_EQ_INT(fp[0], '\0');
        }
        rcanvas_server_free(p);
    }

    /* bad files: RCANVAS_ETLS, a log line naming the file and the reason; half a pair: RCANVAS_EINVAL */
    char missing[400], junk[400], other[400], ocert[400], okey[400];
    snprintf(missing, sizeof missing, "%s/missing.pem", dir);
    snprintf(junk, sizeof junk, "%s/junk.pem", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    write_file(junk, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
    CHECK_EQ_INT(rcanvas_tls_self_signed(other, NULL, NULL, NULL, ocert, okey, sizeof ocert, NULL), RCANVAS_OK);
    struct {
        const char *cert, *key, *log;
        int is_key; /* the file named is the key */
    } bad[] = {
        {missing, key, "cannot read it (No such file or directory)", 0},
        {junk, key, "not a PEM certificate", 0},
        {cert, missing, "cannot read it (No such file or directory)", 1},
        {cert, cert, "not a PEM private key", 1},
        {cert, junk, "not a PEM private key", 1},
        {cert, okey, "does not match the certificate", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        log_clear();
        rcanvas_server *b = start(bad[i].cert, bad[i].key, &err);
        CHECK_MSG(err == RCANVAS_ETLS && !b, "case %zu: %d", i, err);
        char want[600];
        snprintf(want, sizeof want, "%s %s: %s", bad[i].is_key ? "tls_key" : "tls_cert",
                 bad[i].is_key ? bad[i].key : bad[i].cert, bad[i].log);
        CHECK_MSG(log_has(want), "case %zu: want '%s' in:\n%s", i, want, g_log);
        rcanvas_server_free(b);
    }
    CHECK_EQ_INT(strcmp(rcanvas_err_name(RCANVAS_ETLS), "RCANVAS_ETLS"), 0);
    start(cert, NULL, &err);
    CHECK_EQ_INT(err, RCANVAS_EINVAL);
    start(NULL, key, &err);
    CHECK_EQ_INT(err, RCANVAS_EINVAL);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
