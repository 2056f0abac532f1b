/* SPDX-License-Identifier: MIT */
/*
 * http.c — the transport's HTTP side: the page of each canvas (index.html with its title filled in), the embedded
 * client files, /metrics, and the checks every request passes: with TLS, plain HTTP (400); the method (405 but
 * GET); Host (400 absent, 403 not a name of this server: DNS rebinding); the base path a proxy may keep in front
 * (stripped); the path's shape and, on upgrades, Origin (route.c, pure, fuzzed); token and role (401 missing, 403
 * wrong, 429 a wrong one while its network or the server has had too many; from ?token=, a Bearer header or,
 * under the session's secret path, the cookie a page's ?token= is traded for by a 303, or the ?session= of a page
 * that a frame of another site loaded: auth.c); the canvas and the viewer limit.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "transport/assets.h"
#include "transport/route.h"
#include "transport/transport_internal.h"

/* ---- the request as route.c sees it (its decision is carried out below) ---- */

#define RC_MAX_ARGS 256
typedef struct lws_request {
    rc_http_request rq;
    char path[256];
    const char *argv[RC_MAX_ARGS];
    char argbuf[8192];
    char origin[4100], host[4100];
} lws_request;

/* The query arguments as lws_get_urlarg_by_name sees them: fragments of WSI_TOKEN_HTTP_URI_ARGS in order, up to
 * the first that does not fit its 200-byte buffer. */
static void gather_args(struct lws *wsi, lws_request *r) {
    size_t used = 0;
    r->rq.args = r->argv;
    r->rq.nargs = 0;
    while (r->rq.nargs < RC_MAX_ARGS && used + 200 <= sizeof r->argbuf) {
        char *b = r->argbuf + used;
        int n = lws_hdr_copy_fragment(wsi, b, 200, WSI_TOKEN_HTTP_URI_ARGS, r->rq.nargs);
        if (n < 0) break;
        r->argv[r->rq.nargs++] = b;
        used += strlen(b) + 1;
    }
}

static void gather_header(struct lws *wsi, enum lws_token_indexes h, char *buf, size_t cap, const char **s,
                          int *len) {
    *len = lws_hdr_total_length(wsi, h);
    *s = *len > 0 && *len < (int)cap && lws_hdr_copy(wsi, buf, (int)cap, h) >= 0 ? buf : NULL;
}

/* Gathers the request from lws and routes it (route.h). path: the URI (HTTP callback), or NULL to read it from
 * the request (upgrade). */
static void route_request(struct lws *wsi, rc_transport *s, const char *path, int upgrade, lws_request *r,
                          rc_route *out) {
    memset(&r->rq, 0, sizeof r->rq);
    r->rq.upgrade = upgrade;
    if (path) r->rq.path = path;
    else if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) < (int)sizeof r->path &&
             lws_hdr_copy(wsi, r->path, sizeof r->path, WSI_TOKEN_GET_URI) >= 0)
        r->rq.path = r->path;
    r->rq.method = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) ? "GET"
                   : lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) ? "POST" : NULL;
    gather_args(wsi, r);
    r->rq.tls = s->tls;
    if (upgrade) {
        gather_header(wsi, WSI_TOKEN_ORIGIN, r->origin, sizeof r->origin, &r->rq.origin, &r->rq.origin_len);
        gather_header(wsi, WSI_TOKEN_HOST, r->host, sizeof r->host, &r->rq.host, &r->rq.host_len);
    }
    rc_http_route(&r->rq, NULL, (const char *const *)s->origins, s->n_origins, out); /* token: authorize() */
}

/* ---- who is asking: Host check, token and role, rate limit (the rules are in auth.c) ---- */

/* A copy of header h into buf (cap bytes): buf, or NULL if absent or too long. */
static const char *header(struct lws *wsi, enum lws_token_indexes h, char *buf, int cap) {
    int n = lws_hdr_total_length(wsi, h);
    if (n <= 0 || n >= cap || lws_hdr_copy(wsi, buf, cap, h) < 0) return NULL;
    return buf;
}

/* The Host check against DNS rebinding, before anything else is looked at: 0, or the status it answered (400 no
 * Host, 403 a name this server is not reached by) after answering it. */
static int check_host(struct lws *wsi, rc_transport *s) {
    char host[300];
    int n = lws_hdr_total_length(wsi, WSI_TOKEN_HOST);
    const char *h = header(wsi, WSI_TOKEN_HOST, host, (int)sizeof host);
    int r = n > 0 && !h ? 403 /* too long to be ours */
                        : rc_auth_check_host(h, s->host, (const char *const *)s->hosts, s->n_hosts);
    if (!r) return 0;
    rc_log_limited(&s->ratelog, s->log, r == 400 ? "no Host" : "Host refused", RCANVAS_LOG_WARN, "request refused: %s", r == 400 ? "no Host header" : "Host not allowed "
           "(DNS rebinding?); allow a name with --allow-host / allowed_hosts");
    lws_return_http_status(wsi, (unsigned)r, r == 400 ? "Host header required" : "Host not allowed");
    return r;
}

/* The role of a request (rc_auth_request_role) from what lws parsed of it: ?token=, the Authorization header and,
 * when session (the path is under this process's secret path: rc_auth_session_strip's match), ?session= and the
 * Cookie header. Nowhere else is a cookie or ?session= looked at. */
static rc_role find_role(struct lws *wsi, rc_transport *s, int session, rc_token_source *src) {
    char tok[RC_AUTH_VALUE_MAX], sess[RC_AUTH_VALUE_MAX], auth[300], cookies[4096];
    rc_auth_request rq = {0};
    /* lws gives the value after "name=", of the first argument that starts so */
    rq.query_token = lws_get_urlarg_by_name(wsi, "token=", tok, (int)sizeof tok);
    rq.authorization = header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, auth, (int)sizeof auth);
    rq.session = session;
    if (session) {
        rq.query_session = lws_get_urlarg_by_name(wsi, RC_SESSION_ARG "=", sess, (int)sizeof sess);
        rq.cookie = header(wsi, WSI_TOKEN_HTTP_COOKIE, cookies, (int)sizeof cookies);
    }
    return rc_auth_request_role(&rq, s->token, s->view_token, &s->session, src);
}

/* The role of a request's token: RC_ROLE_VIEW or RC_ROLE_INTERACTIVE, or 0 after a refusal it has answered with
 * *status set (401 no token, 403 wrong token, 429 too many wrong tokens). The token is compared first (constant
 * time): a right one is never refused by the guess limiter, whatever others sent from its network (an
 * attacker's wrong tokens at 20/s locked a legitimate client of the same address out). A wrong one is charged
 * against its network and the server-wide bucket (auth.c); while either is empty it is answered 429. A missing
 * token is no guess: 401, uncharged; so is a path under another secret than this process's (a page left open
 * across a restart), whatever cookie it carries, so that the answer tells nothing about the secret. */
static rc_role authorize(struct lws *wsi, rc_transport *s, int session, rc_token_source *src, unsigned *status,
                         const char *what) {
    char peer[64] = "";
    *status = 0;
    /* the session's cookie and ?session= hold S, compared with this process's two S as a token with the tokens (a
     * wrong one is a wrong token, rate limit included) */
    rc_role r = find_role(wsi, s, session, src);
    if (r == RC_ROLE_VIEW || r == RC_ROLE_INTERACTIVE) return r;
    if (!rc_transport_peer(wsi, peer, sizeof peer)) snprintf(peer, sizeof peer, "(gone)"); /* its own bucket */
    int64_t now = rc_now_us();
    if (r == RC_ROLE_WRONG && rc_auth_limited(&s->limiter, peer, now)) {
        rc_log_limited(&s->ratelog, s->log, "429", RCANVAS_LOG_WARN, "%s refused: too many wrong tokens from %s's network or in all (%llu answered 429 so far)",
                   what, peer, (unsigned long long)s->limiter.limited);
        *status = 429;
        lws_return_http_status(wsi, 429, "too many wrong tokens: wait a second");
        return RC_ROLE_NONE;
    }
    if (r == RC_ROLE_WRONG) rc_auth_failed(&s->limiter, peer, now);
    *status = r == RC_ROLE_NONE ? 401 : 403;
    rc_log_limited(&s->ratelog, s->log, r == RC_ROLE_NONE ? "token missing" : "token wrong",
                   r == RC_ROLE_NONE ? RCANVAS_LOG_INFO : RCANVAS_LOG_WARN, "%s refused: %s token from %s", what, r == RC_ROLE_NONE ? "missing" : "wrong",
           peer);
    return RC_ROLE_NONE;
}

/* The Set-Cookie value of the session a page's ?token= is traded for (auth.h), S of the token's role. Secure
 * with TLS here, or behind a proxy that terminated it and says so in X-Forwarded-Proto: never sent over plain
 * http then. */
static void session_cookie(struct lws *wsi, rc_transport *s, rc_role role, char *out, size_t cap) {
    static const char xfp_name[] = "x-forwarded-proto:";
    char xfp[64];
    int n = lws_hdr_custom_length(wsi, xfp_name, (int)sizeof xfp_name - 1);
    int forwarded = n > 0 && n < (int)sizeof xfp &&
                    lws_hdr_custom_copy(wsi, xfp, (int)sizeof xfp, xfp_name, (int)sizeof xfp_name - 1) >= 0 &&
                    rc_auth_forwarded_https(xfp);
    rc_auth_session_cookie(role == RC_ROLE_INTERACTIVE ? s->session.interactive : s->session.view, s->base,
                           s->session.path, s->tls || forwarded, out, cap);
}

/* A custom header's value (name with its colon, lower case) into buf, or "" if absent or too long. */
static const char *custom_header(struct lws *wsi, const char *name, char *buf, int cap) {
    int nl = (int)strlen(name), n = lws_hdr_custom_length(wsi, name, nl);
    if (n <= 0 || n >= cap || lws_hdr_custom_copy(wsi, buf, cap, name, nl) < 0) buf[0] = '\0';
    return buf;
}

/* A page that a frame of another site loads: the browser neither stores nor sends the session cookie there (a
 * third-party cookie; Fetch Metadata tells: Sec-Fetch-Dest iframe or frame, Sec-Fetch-Site cross-site), so it is
 * served directly, with the session's R and S in it instead of a cookie (auth.h, RC_SESSION_ARG). */
static int cross_site_frame(struct lws *wsi) {
    char dest[32], site[32];
    custom_header(wsi, "sec-fetch-dest:", dest, sizeof dest);
    custom_header(wsi, "sec-fetch-site:", site, sizeof site);
    return (!strcmp(dest, "iframe") || !strcmp(dest, "frame")) && !strcmp(site, "cross-site");
}

/* 303 See Other to location (relative, from rc_auth_session_location) with the session cookie: the page's token
 * leaves the address bar, and the page, its reloads and its WebSocket go by the cookie under the secret path. */
static int redirect_to_session(struct lws *wsi, const char *location, const char *cookie) {
    uint8_t hb[LWS_PRE + 2048], *start = hb + LWS_PRE, *pos = start, *end = hb + sizeof hb - 1;
    if (lws_add_http_header_status(wsi, HTTP_STATUS_SEE_OTHER, &pos, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_LOCATION, (const unsigned char *)location,
                                     (int)strlen(location), &pos, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"set-cookie:", (const unsigned char *)cookie,
                                    (int)strlen(cookie), &pos, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:", (const unsigned char *)"no-store",
                                    8, &pos, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"referrer-policy:",
                                    (const unsigned char *)"no-referrer", 11, &pos, end) ||
        lws_add_http_header_content_length(wsi, 0, &pos, end) ||
        lws_finalize_write_http_header(wsi, start, &pos, end))
        return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static const char k_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
                            "connect-src 'self'; base-uri 'none'; form-action 'none'";

/* cookie: a Set-Cookie value, or NULL. */
static int send_body(struct lws *wsi, rc_pss *p, const char *ctype, const char *cache, const void *data, size_t len,
                     const char *cookie) {
    uint8_t hb[LWS_PRE + 2048], *start = hb + LWS_PRE, *pos = start, *end = hb + sizeof hb - 1;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, ctype, (lws_filepos_t)len, &pos, end) ||
        (cookie && lws_add_http_header_by_name(wsi, (const unsigned char *)"set-cookie:", (const unsigned char *)cookie,
                                               (int)strlen(cookie), &pos, end)) ||
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

/* index.html with {{TITLE}}, {{CANVAS}}, {{ROOT}} (the relative way back to the server's root, for the script and
 * WebSocket URLs: rc_auth_root_prefix), {{SESSION}} ("1" when the page goes by a session, by its cookie or its
 * ?session=: the client then knows that a refusal means this server process is gone, its session with it),
 * {{SESSION_DIR}} ("s/R/" for a page served outside the secret path that goes by ?session=, else "": its WebSocket
 * and probe go under ROOT then this) and {{SESSION_KEY}} (S for a page that goes by ?session=, else "") filled in
 * (title: the canvas's, not escaped yet; the others are [A-Za-z0-9_./-] only); malloc'd, NUL-terminated. */
static char *render_page(const char *name, const char *title, const char *root, int session, const char *dir,
                         const char *key, size_t *len) {
    const rc_asset *tpl = find_asset("index.html");
    if (!tpl) return NULL;
    char esc[256 * 6 + 1];
    html_escape(esc, sizeof esc, title);
    size_t cap = tpl->len + 4 * (strlen(esc) + RC_NAME_MAX + strlen(root) + strlen(dir) + strlen(key)) + 1;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t o = 0;
    const char *src = (const char *)tpl->data;
    while (*src) {
        const char *rep = NULL;
        size_t skip = 0;
        if (!strncmp(src, "{{TITLE}}", 9)) rep = esc, skip = 9;
        else if (!strncmp(src, "{{CANVAS}}", 10)) rep = name, skip = 10;
        else if (!strncmp(src, "{{ROOT}}", 8)) rep = root, skip = 8;
        else if (!strncmp(src, "{{SESSION}}", 11)) rep = session ? "1" : "", skip = 11;
        else if (!strncmp(src, "{{SESSION_DIR}}", 15)) rep = dir, skip = 15;
        else if (!strncmp(src, "{{SESSION_KEY}}", 15)) rep = key, skip = 15;
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

/* With TLS, a plain-HTTP request on the port (let through by ALLOW_NON_SSL_ON_SSL_PORT, server.c) gets 400 and
 * nothing else: 1 when wsi is such a request (answered), else 0. TLS is asked of the network
 * connection, not of wsi: a stream multiplexed on a connection (HTTP/2) is a wsi of its own that lws_is_ssl()
 * answers 0 for whatever carries it. */
static int refuse_plain(struct lws *wsi, rc_transport *s) {
    struct lws *net = lws_get_network_wsi(wsi);
    if (!s->tls || lws_is_ssl(net ? net : wsi)) return 0;
    lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST, "this server speaks https: open the https:// URL");
    return 1;
}

/* Bounds: pages and client files are only read. A request with another method (POST, PUT, DELETE,
 * PATCH, OPTIONS) gets 405 with "Allow: GET"; one without a Host header gets 400 (HTTP/1.1 requires it; this
 * server does not tell HTTP/1.0 apart, whose clients send Host anyway). The Host allow-list is another check.
 * 1 if answered (*ret set), 0 to go on. */
static int refuse_method(struct lws *wsi, int *ret) {
    static const enum lws_token_indexes others[] = {WSI_TOKEN_POST_URI, WSI_TOKEN_PUT_URI, WSI_TOKEN_DELETE_URI,
                                                    WSI_TOKEN_PATCH_URI, WSI_TOKEN_OPTIONS_URI};
    int other = 0;
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (lws_hdr_total_length(wsi, others[i]) > 0) other = 1;
    if (!other) return 0;
    uint8_t hb[LWS_PRE + 512], *start = hb + LWS_PRE, *pos = start, *end = hb + sizeof hb - 1;
    static const char body[] = "method not allowed: GET only\n";
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED, "text/plain", sizeof body - 1, &pos, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"allow:", (const unsigned char *)"GET", 3, &pos,
                                    end) ||
        lws_finalize_write_http_header(wsi, start, &pos, end)) {
        *ret = -1;
        return 1;
    }
    uint8_t b[LWS_PRE + sizeof body];
    memcpy(b + LWS_PRE, body, sizeof body - 1);
    *ret = lws_write(wsi, b + LWS_PRE, sizeof body - 1, LWS_WRITE_HTTP_FINAL) < (int)sizeof body - 1 ||
                   lws_http_transaction_completed(wsi) ? -1 : 0;
    return 1;
}

/* The base path without its trailing "/" ("/viz"): 301 to "/viz/" with the same query, so that the page's relative
 * URLs resolve under the prefix (as a web server does for a directory). */
static int redirect_to_dir(struct lws *wsi, const char *path) {
    char loc[1024], frag[600], q[1024];
    int n = snprintf(loc, sizeof loc, "%s/", path);
    /* lws gives the arguments split at '&' and percent-decoded: rc_auth_query encodes each again */
    for (int i = 0; n > 0 && (size_t)n < sizeof loc &&
                    lws_hdr_copy_fragment(wsi, frag, sizeof frag, WSI_TOKEN_HTTP_URI_ARGS, i) > 0; i++) {
        const char *arg = frag;
        if (rc_auth_query(&arg, 1, 0, q, sizeof q) || (size_t)n + strlen(q) >= sizeof loc) {
            n = (int)sizeof loc; /* too long: not found, below */
            break;
        }
        if (i) q[0] = '&';
        memcpy(loc + n, q, strlen(q) + 1);
        n += (int)strlen(q);
    }
    if (n <= 0 || (size_t)n >= sizeof loc) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
    uint8_t hb[LWS_PRE + 1400], *start = hb + LWS_PRE, *pos = start, *end = hb + sizeof hb - 1;
    if (lws_http_redirect(wsi, HTTP_STATUS_MOVED_PERMANENTLY, (const unsigned char *)loc, (int)strlen(loc), &pos,
                          end) < 0)
        return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* A header that came more than once (lws keeps each as a fragment of the one token). */
static int header_repeated(struct lws *wsi, enum lws_token_indexes h) {
    return lws_hdr_fragment_length(wsi, h, 1) > 0 || lws_hdr_total_length(wsi, h) > lws_hdr_fragment_length(wsi, h, 0);
}

/* The request routed (rt, from inner: the path without base path and session prefix; path: without the base path
 * only), carried out: client files, the token or session check, /metrics, and the page, or the 303 that trades a
 * page's ?token= for the session. session: the path is under this process's secret. */
static int serve_routed(struct lws *wsi, rc_transport *s, rc_pss *p, const char *path, const char *inner,
                        int session, const lws_request *r, const rc_route *rt) {
    int ret;
    switch (rt->kind) {
    case RC_ROUTE_REFUSE: return http_status(wsi, (unsigned)rt->status, rt->reason);
    case RC_ROUTE_EMPTY: return http_status(wsi, HTTP_STATUS_NO_CONTENT, "");
    case RC_ROUTE_CLIENT_FILE: {
        const rc_asset *a = find_asset(rt->file);
        if (!a || !strcmp(a->name, "index.html")) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
        return send_body(wsi, p, a->content_type, "no-cache", a->data, a->len, NULL);
    }
    case RC_ROUTE_PAGE:
    case RC_ROUTE_METRICS: break;
    default: return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
    }
    unsigned st;
    rc_token_source src;
    rc_role role = authorize(wsi, s, session, &src, &st,
                             rt->kind == RC_ROUTE_METRICS ? "metrics" : "page");
    if (!role) {
        if (st == 429) return lws_http_transaction_completed(wsi) ? -1 : 0;
        return http_status(wsi, st, st == 401 ? "token required: open the URL the server printed"
                                              : "wrong token: open the URL the server printed");
    }
    if (rt->kind == RC_ROUTE_METRICS) { /* the interactive token only: a view-only one does not show the viewers */
        if (role != RC_ROLE_INTERACTIVE) return http_status(wsi, HTTP_STATUS_FORBIDDEN, "the interactive token is needed");
        size_t mlen = 0;
        char *m = rc_metrics_render(s, &mlen);
        if (!m) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
        ret = send_body(wsi, p, "text/plain; version=0.0.4; charset=utf-8", "no-store", m, mlen, NULL);
        free(m);
        return ret;
    }
    char title[256], cname[RC_NAME_MAX + 1];
    if (!rc_registry_lookup(s->registry, rt->canvas, rt->canvas_len, title, sizeof title))
        return http_status(wsi, HTTP_STATUS_NOT_FOUND, "no such canvas");
    memcpy(cname, rt->canvas, rt->canvas_len);
    cname[rt->canvas_len] = '\0';
    int framed = src == RC_TOKEN_QUERY && cross_site_frame(wsi);
    if (src == RC_TOKEN_QUERY && !framed) { /* the token is traded for the session */
        char loc[1400], cookie[512];
        if (rc_auth_session_location(path, inner, s->session.path, r->rq.args, r->rq.nargs, loc, sizeof loc))
            return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found"); /* a query too long to carry over */
        session_cookie(wsi, s, role, cookie, sizeof cookie);
        return redirect_to_session(wsi, loc, cookie);
    }
    size_t len = 0;
    char root[256], dir[RC_SESSION_CHARS + 4] = "";
    /* under s/R/, the way back to s/R/: the session's own root; the framed page, wherever it was asked for (under
     * another process's s/X/ too), the way back to the server's root, and s/R/ after it */
    rc_auth_root_prefix(framed ? path : inner, root, sizeof root);
    /* a page without a cookie (framed by another site: the right ?token= came with this very request; or asked
     * under s/R/ with ?session=, its probe) gets its role's S, and the framed one R too: nothing it asks for from
     * now on carries the token, and nothing it sends opens a later server process */
    const char *key = framed || src == RC_TOKEN_SESSION_ARG
                          ? (role == RC_ROLE_INTERACTIVE ? s->session.interactive : s->session.view)
                          : "";
    if (framed) snprintf(dir, sizeof dir, "s/%s/", s->session.path);
    char *page = render_page(cname, title, root, src == RC_TOKEN_SESSION || key[0], dir, key, &len);
    if (!page) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
    ret = send_body(wsi, p, "text/html; charset=utf-8", "no-store", page, len, NULL);
    free(page);
    return ret;
}


int rc_http_serve(struct lws *wsi, rc_transport *s, rc_pss *p, const char *path) {
    if (refuse_plain(wsi, s)) return -1;
    int ret;
    if (refuse_method(wsi, &ret)) return ret;
    /* Two Content-Length headers (RFC 9112 6.3: a message to refuse, the stuff of request smuggling behind a
     * proxy that reads the other one): 400, and the connection closed */
    if (header_repeated(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH)) {
        rc_log_limited(&s->ratelog, s->log, "two Content-Length", RCANVAS_LOG_WARN, "request refused: more than one Content-Length header");
        lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST, "more than one Content-Length header");
        return -1;
    }
    if (check_host(wsi, s)) return lws_http_transaction_completed(wsi) ? -1 : 0;
    if (s->base[0] && !strcmp(path, s->base)) return redirect_to_dir(wsi, path);
    char stripped[256];
    path = rc_auth_strip_base(path, s->base, stripped, sizeof stripped);
    /* under the session's path "/s/R/…" the rest is routed as it would be without it; the cookie counts only
     * there, and only under this process's R */
    int in_session, session;
    const char *inner = rc_auth_session_strip(path, s->session.path, &in_session, &session);
    lws_request *r = malloc(sizeof *r);
    if (!r) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
    rc_route rt;
    route_request(wsi, s, inner, 0, r, &rt);
    ret = serve_routed(wsi, s, p, path, inner, session, r, &rt);
    free(r); /* rt points into it and into path */
    return ret;
}

int rc_http_writable(struct lws *wsi, rc_pss *p) {
    if (!p || !p->body) return 0;
    int w = lws_write(wsi, p->body + LWS_PRE, p->body_len, LWS_WRITE_HTTP_FINAL);
    free(p->body);
    p->body = NULL;
    if (w < (int)p->body_len) return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* lws 4.1.6 (built with HTTP/2, as Debian's is) switches a connection to HTTP/2 on "Upgrade: h2c" (RFC 7540 §3.2)
 * after this callback says 0 (lib/roles/http/server/server.c, lws_handshake_server → upgrade_h2c), before any
 * request reaches rc_http_serve: the streams on it then skipped the TLS check (the stream's wsi is not the TLS
 * one) and each RFC 8441 extended CONNECT that rc_http_filter_upgrade refused leaked 240 bytes inside lws, with no
 * token needed (tests/transport/test_h2c.c). This server speaks HTTP/1.1 only (server.c: ALPN
 * "http/1.1"): every upgrade but websocket is answered 400 here and the connection closed, a plain request on the
 * TLS port the https refusal first. lws answers other Upgrade values 403 before asking. */
/* The WebSocket handshake's own headers (RFC 6455 4.2.1), checked before lws's upgrade code, which closed
 * without any status when the key was missing or no offered subprotocol was ours: NULL if fine, else the reason for a
 * 400. No Sec-WebSocket-Protocol is fine (rcanvas.v1 is the only one, and the default). */
static const char *bad_ws_handshake(struct lws *wsi) {
    char buf[300];
    int klen = lws_hdr_total_length(wsi, WSI_TOKEN_KEY);
    if (klen <= 0) return "no Sec-WebSocket-Key header";
    if (klen != 24 || header_repeated(wsi, WSI_TOKEN_KEY)) return "Sec-WebSocket-Key is not 16 bytes in base64";
    int vlen = lws_hdr_total_length(wsi, WSI_TOKEN_VERSION);
    if (vlen <= 0 || vlen >= (int)sizeof buf || lws_hdr_copy(wsi, buf, sizeof buf, WSI_TOKEN_VERSION) < 0 ||
        strcmp(buf, "13"))
        return "Sec-WebSocket-Version must be 13";
    int plen = lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL);
    if (plen <= 0) return NULL;
    if (plen >= (int)sizeof buf || lws_hdr_copy(wsi, buf, sizeof buf, WSI_TOKEN_PROTOCOL) < 0)
        return "Sec-WebSocket-Protocol too long";
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ' || *t == '\t') t++;
        size_t n = strlen(t);
        while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t')) t[--n] = '\0';
        if (!strcmp(t, "rcanvas.v1")) return NULL;
    }
    return "no offered Sec-WebSocket-Protocol is rcanvas.v1";
}

int rc_http_confirm_upgrade(struct lws *wsi, rc_transport *s, const char *upgrade) {
    if (upgrade && !strcasecmp(upgrade, "websocket")) {
        const char *why = refuse_plain(wsi, s) ? "" : bad_ws_handshake(wsi);
        if (!why) return 0;
        if (*why) {
            rc_log_limited(&s->ratelog, s->log, "bad handshake", RCANVAS_LOG_WARN, "WebSocket refused: %s", why);
            lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST, why);
        }
        return -1;
    }
    if (!refuse_plain(wsi, s))
        lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST,
                               "this server speaks HTTP/1.1 only: no upgrade to h2c");
    return -1; /* hang up after the answer: nothing else is read from this connection */
}

/* A browser's WebSocket never sees the HTTP status of a refused upgrade (its close code is 1006 either
 * way), so an rcanvas client (it asks for the rcanvas.v1 subprotocol) refused for its Origin (with the right token)
 * or because max_viewers is reached is accepted and closed at once with 4403 "origin not allowed" or 4503 "too many
 * viewers": no viewer, no session, nothing read or sent but the close frame. Other clients get the HTTP status. */
static int asks_rcanvas(struct lws *wsi) {
    char proto[128];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL) >= (int)sizeof proto ||
        lws_hdr_copy(wsi, proto, sizeof proto, WSI_TOKEN_PROTOCOL) < 0)
        return 0;
    char *save = NULL;
    for (char *tok = strtok_r(proto, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
        if (!strcmp(tok, "rcanvas.v1")) return 1;
    return 0;
}

static int refuse_by_close(rc_pss *p, int code, const char *reason) {
    p->refuse_code = code;
    p->refuse_reason = reason;
    return 0; /* accepted: rc_http_refused_established closes it */
}

int rc_http_refused_established(struct lws *wsi, rc_pss *p) {
    (void)p;
    lws_callback_on_writable(wsi);
    return 0;
}

int rc_http_refused_writable(struct lws *wsi, rc_pss *p) {
    lws_close_reason(wsi, (enum lws_close_status)p->refuse_code, (unsigned char *)p->refuse_reason,
                     strlen(p->refuse_reason));
    return -1;
}

int rc_http_filter_upgrade(struct lws *wsi, rc_transport *s, rc_pss *p) {
    if (refuse_plain(wsi, s)) return -1;
    if (check_host(wsi, s)) return -1;
    char raw[256], stripped[256];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) >= (int)sizeof raw ||
        lws_hdr_copy(wsi, raw, sizeof raw, WSI_TOKEN_GET_URI) < 0) {
        lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
        return -1;
    }
    const char *path = rc_auth_strip_base(raw, s->base, stripped, sizeof stripped);
    int in_session, session; /* the session cookie counts only under this process's secret path (auth.h) */
    path = rc_auth_session_strip(path, s->session.path, &in_session, &session);
    lws_request *r = malloc(sizeof *r);
    if (!r) {
        lws_return_http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
        return -1;
    }
    rc_route rt;
    route_request(wsi, s, path, 1, r, &rt);
    if (rt.kind != RC_ROUTE_WEBSOCKET) {
        if (rt.log) rc_log_limited(&s->ratelog, s->log, rt.log, RCANVAS_LOG_WARN, "%s", rt.log);
        if (rt.status == 403 && !strcmp(rt.reason, "origin not allowed") && asks_rcanvas(wsi)) {
            free(r);
            unsigned st;
            rc_token_source src;
            if (!authorize(wsi, s, session, &src, &st, "WebSocket")) { /* no token, no reason told */
                if (st != 429) lws_return_http_status(wsi, st, st == 401 ? "token required" : "wrong token");
                return -1;
            }
            return refuse_by_close(p, 4403, "origin not allowed");
        }
        lws_return_http_status(wsi, (unsigned)rt.status, rt.reason);
        free(r);
        return -1;
    }
    char codecs[200];
    snprintf(codecs, sizeof codecs, "%s", rt.codecs ? rt.codecs : "");
    int has_codecs = rt.codecs != NULL;
    size_t nlen = rt.canvas_len;
    memcpy(p->canvas, rt.canvas, nlen);
    p->canvas[nlen] = '\0';
    free(r); /* rt points into it */
    unsigned st;
    rc_token_source src;
    rc_role role = authorize(wsi, s, session, &src, &st, "WebSocket");
    if (!role) {
        if (st != 429) lws_return_http_status(wsi, st, st == 401 ? "token required" : "wrong token");
        return -1;
    }
    if (!rc_registry_lookup(s->registry, p->canvas, nlen, NULL, 0)) {
        lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, "no such canvas");
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    int full = s->nviewers >= s->max_viewers;
    if (!full) s->nviewers++; /* reserved; released in CLOSED or if ESTABLISHED fails */
    pthread_mutex_unlock(&s->mu);
    if (full) {
        rc_log_limited(&s->ratelog, s->log, "503", RCANVAS_LOG_WARN, "WebSocket refused: %d viewers already", s->max_viewers);
        if (asks_rcanvas(wsi)) return refuse_by_close(p, 4503, "too many viewers");
        lws_return_http_status(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "too many viewers");
        return -1;
    }
    p->reserved = 1;
    memset(&p->caps, 0, sizeof p->caps);
    if (has_codecs) {
        p->caps.codecs = rc_wire_codec_list(codecs); /* JPEG and PNG count as decodable anyway (session.c) */
        p->caps.protocol = 2;
    }
    p->caps.view_only = role == RC_ROLE_VIEW;
    return 0;
}

int rc_transport_peer(struct lws *wsi, char *out, size_t cap) {
    struct lws *net = lws_get_network_wsi(wsi);
    int fd = (int)lws_get_socket_fd(net ? net : wsi);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    out[0] = '\0';
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl)) return 0;
    const void *a = ss.ss_family == AF_INET    ? (const void *)&((struct sockaddr_in *)&ss)->sin_addr
                    : ss.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                                               : NULL;
    if (!a || !inet_ntop(ss.ss_family, a, out, (socklen_t)cap)) {
        out[0] = '\0';
        return 0;
    }
    return 1;
}

void rc_transport_release_slot(rc_transport *s) {
    pthread_mutex_lock(&s->mu);
    s->nviewers--;
    pthread_mutex_unlock(&s->mu);
}
