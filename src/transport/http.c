/*
 * http.c — the transport's HTTP side: the page of each canvas (index.html with its title filled in), the embedded
 * client files, and the checks every WebSocket upgrade passes: path, token (401 missing, 403 wrong, compared in
 * constant time), Origin (absent, the server's own, or allow-listed), the canvas, and the viewer limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/assets.h"
#include "transport/transport_internal.h"

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
static int check_token(struct lws *wsi, rc_transport *s) {
    char buf[200];
    const char *v = lws_get_urlarg_by_name(wsi, "token=", buf, (int)sizeof buf);
    if (!v) v = lws_get_urlarg_by_name(wsi, "token", buf, (int)sizeof buf);
    if (!v) return 401;
    if (*v == '=') v++;
    return rc_consttime_equal(v, strlen(v), s->token, strlen(s->token)) ? 0 : 403;
}

/* Origin must be absent, same host:port as Host, or allow-listed. */
static int check_origin(struct lws *wsi, rc_transport *s) {
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
    int ret;
    if (refuse_method(wsi, &ret) || refuse_no_host(wsi, &ret)) return ret;
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
    char title[256], cname[RC_NAME_MAX + 1];
    if (nlen > RC_NAME_MAX || !rc_registry_lookup(s->registry, name, nlen, title, sizeof title))
        return http_status(wsi, HTTP_STATUS_NOT_FOUND, "no such canvas");
    memcpy(cname, name, nlen);
    cname[nlen] = '\0';
    size_t len = 0;
    char *page = render_page(cname, title, &len);
    if (!page) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
    int r = send_body(wsi, p, "text/html; charset=utf-8", "no-store", page, len);
    free(page);
    return r;
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
        rc_log(s->log, RCANVAS_LOG_WARN, "WebSocket refused: %s token", t == 401 ? "missing" : "wrong");
        lws_return_http_status(wsi, (unsigned)t, t == 401 ? "token required" : "wrong token");
        return -1;
    }
    if (check_origin(wsi, s)) {
        rc_log(s->log, RCANVAS_LOG_WARN, "WebSocket refused: Origin does not match the server");
        lws_return_http_status(wsi, HTTP_STATUS_FORBIDDEN, "origin not allowed");
        return -1;
    }
    if (nlen > RC_NAME_MAX || !rc_registry_lookup(s->registry, name, nlen, NULL, 0)) {
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
    memcpy(p->canvas, name, nlen);
    p->canvas[nlen] = '\0';
    p->reserved = 1;
    char codecs[200];
    memset(&p->caps, 0, sizeof p->caps);
    const char *v = lws_get_urlarg_by_name(wsi, "codecs=", codecs, (int)sizeof codecs);
    if (v) { /* lws gives the value after "codecs=" */
        p->caps.codecs = rc_wire_codec_list(v); /* JPEG and PNG count as decodable anyway (session.c) */
        p->caps.protocol = 2;
    }
    return 0;
}

void rc_transport_release_slot(rc_transport *s) {
    pthread_mutex_lock(&s->mu);
    s->nviewers--;
    pthread_mutex_unlock(&s->mu);
}
