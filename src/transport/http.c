/*
 * http.c — the transport's HTTP side: the page of each canvas (index.html with its title filled in), the embedded
 * client files, and the checks every WebSocket upgrade passes: path, token (401 missing, 403 wrong, compared in
 * constant time), Origin (absent, the server's own, or allow-listed), the canvas, and the viewer limit. The checks
 * that need only the request (path, token, Origin) are decided in route.c, without lws; here the request is
 * gathered from lws and the decision carried out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    if (upgrade) {
        gather_header(wsi, WSI_TOKEN_ORIGIN, r->origin, sizeof r->origin, &r->rq.origin, &r->rq.origin_len);
        gather_header(wsi, WSI_TOKEN_HOST, r->host, sizeof r->host, &r->rq.host, &r->rq.host_len);
    }
    rc_http_route(&r->rq, s->token, (const char *const *)s->origins, s->n_origins, out);
}

static const char k_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
                            "connect-src 'self'; base-uri 'none'; form-action 'none'";

static int send_body(struct lws *wsi, rc_pss *p, const char *ctype, const char *cache, const void *data, size_t len) {
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

/* index.html with {{TITLE}} and {{CANVAS}} filled in (title: the canvas's, not escaped yet); malloc'd,
 * NUL-terminated. */
static char *render_page(const char *name, const char *title, size_t *len) {
    const rc_asset *tpl = find_asset("index.html");
    if (!tpl) return NULL;
    char esc[256 * 6 + 1];
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
        else if (!strncmp(src, "{{CANVAS}}", 10)) rep = name, skip = 10;
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
 * nothing else: 1 when wsi is such a request (answered), else 0 (issue 11). */
static int refuse_plain(struct lws *wsi, rc_transport *s) {
    if (!s->tls || lws_is_ssl(wsi)) return 0;
    lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST, "this server speaks https: open the https:// URL");
    return 1;
}

/* Bounds (issue 11): pages and client files are only read. A request with another method (POST, PUT, DELETE,
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

static int refuse_no_host(struct lws *wsi, int *ret) {
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HOST) > 0) return 0;
    *ret = http_status(wsi, HTTP_STATUS_BAD_REQUEST, "Host header required");
    return 1;
}

int rc_http_serve(struct lws *wsi, rc_transport *s, rc_pss *p, const char *path) {
    if (refuse_plain(wsi, s)) return -1;
    int ret;
    if (refuse_method(wsi, &ret) || refuse_no_host(wsi, &ret)) return ret;
    lws_request *r = malloc(sizeof *r);
    if (!r) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
    rc_route rt;
    route_request(wsi, s, path, 0, r, &rt);
    free(r); /* rt points into path only (file, canvas) */
    switch (rt.kind) {
    case RC_ROUTE_REFUSE: return http_status(wsi, (unsigned)rt.status, rt.reason);
    case RC_ROUTE_EMPTY: return http_status(wsi, HTTP_STATUS_NO_CONTENT, "");
    case RC_ROUTE_CLIENT_FILE: {
        const rc_asset *a = find_asset(rt.file);
        if (!a || !strcmp(a->name, "index.html")) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
        return send_body(wsi, p, a->content_type, "no-cache", a->data, a->len);
    }
    case RC_ROUTE_PAGE: break;
    case RC_ROUTE_METRICS: { /* issue 11: the interactive token was checked (route.c) */
        size_t mlen = 0;
        char *m = rc_metrics_render(s, &mlen);
        if (!m) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
        ret = send_body(wsi, p, "text/plain; version=0.0.4; charset=utf-8", "no-store", m, mlen);
        free(m);
        return ret;
    }
    default: return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
    }
    char title[256], cname[RC_NAME_MAX + 1];
    if (!rc_registry_lookup(s->registry, rt.canvas, rt.canvas_len, title, sizeof title))
        return http_status(wsi, HTTP_STATUS_NOT_FOUND, "no such canvas");
    memcpy(cname, rt.canvas, rt.canvas_len);
    cname[rt.canvas_len] = '\0';
    size_t len = 0;
    char *page = render_page(cname, title, &len);
    if (!page) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
    ret = send_body(wsi, p, "text/html; charset=utf-8", "no-store", page, len);
    free(page);
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

int rc_http_filter_upgrade(struct lws *wsi, rc_transport *s, rc_pss *p) {
    if (refuse_plain(wsi, s)) return -1;
    lws_request *r = malloc(sizeof *r);
    if (!r) {
        lws_return_http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
        return -1;
    }
    rc_route rt;
    route_request(wsi, s, NULL, 1, r, &rt);
    if (rt.kind != RC_ROUTE_WEBSOCKET) {
        if (rt.log) rc_log(s->log, RCANVAS_LOG_WARN, "%s", rt.log);
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
    if (!rc_registry_lookup(s->registry, p->canvas, nlen, NULL, 0)) {
        lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, "no such canvas");
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    int full = s->nviewers >= s->max_viewers;
    if (!full) s->nviewers++; /* reserved; released in CLOSED or if ESTABLISHED fails */
    pthread_mutex_unlock(&s->mu);
    if (full) {
        rc_log(s->log, RCANVAS_LOG_WARN, "WebSocket refused: %d viewers already", s->max_viewers);
        lws_return_http_status(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "too many viewers");
        return -1;
    }
    p->reserved = 1;
    memset(&p->caps, 0, sizeof p->caps);
    if (has_codecs) {
        p->caps.codecs = rc_wire_codec_list(codecs); /* JPEG and PNG count as decodable anyway (session.c) */
        p->caps.protocol = 2;
    }
    return 0;
}

void rc_transport_release_slot(rc_transport *s) {
    pthread_mutex_lock(&s->mu);
    s->nviewers--;
    pthread_mutex_unlock(&s->mu);
}
