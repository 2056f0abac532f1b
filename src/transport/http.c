/*
 * http.c — the transport's HTTP side: the page of each canvas (index.html with its title filled in), the embedded
 * client files, and the checks every request passes: Host (400 absent, 403 not a name of this server: DNS
 * rebinding), the base path a proxy may keep in front (stripped), token and role (401 missing, 403 wrong, 429 too
 * many wrong ones from one address; from ?token=, a Bearer header or the cookie a page's ?token= is traded for;
 * auth.c), and on WebSocket upgrades Origin (absent, the server's own, or allow-listed), the canvas, and the
 * viewer limit.
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

/* ---- who is asking (issue 11): Host check, token and role, rate limit (the rules are in auth.c) ---- */

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
    rc_log(s->log, RCANVAS_LOG_WARN, "request refused: %s", r == 400 ? "no Host header" : "Host not allowed "
           "(DNS rebinding?); allow a name with --allow-host / allowed_hosts");
    lws_return_http_status(wsi, (unsigned)r, r == 400 ? "Host header required" : "Host not allowed");
    return r;
}

/* The token of a request, from (first found) ?token=, `Authorization: Bearer`, or the cookie; into buf. */
static const char *find_token(struct lws *wsi, rc_transport *s, char *buf, size_t cap, rc_token_source *src) {
    char h[300], name[40];
    *src = RC_TOKEN_NONE;
    const char *v = lws_get_urlarg_by_name(wsi, "token=", buf, (int)cap); /* lws gives the value after "token=" */
    if (v) {
        *src = RC_TOKEN_QUERY;
        memmove(buf, v, strlen(v) + 1);
        return buf;
    }
    if (header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, h, (int)sizeof h) && rc_auth_bearer(h, buf, cap)) {
        *src = RC_TOKEN_BEARER;
        return buf;
    }
    char cookies[4096];
    rc_auth_cookie_name(s->port, name, sizeof name);
    if (header(wsi, WSI_TOKEN_HTTP_COOKIE, cookies, (int)sizeof cookies) && rc_auth_cookie(cookies, name, buf, cap)) {
        *src = RC_TOKEN_COOKIE;
        return buf;
    }
    return NULL;
}

/* The role of a request's token: RC_ROLE_VIEW or RC_ROLE_INTERACTIVE, or 0 after a refusal it has answered with
 * *status set (401 no token, 403 wrong token, 429 too many wrong tokens from this address). A wrong token counts
 * against the address (auth.c: RC_AUTH_BURST, then one per second); while it has none left every request of it is
 * answered 429 without its token being compared. */
static rc_role authorize(struct lws *wsi, rc_transport *s, rc_token_source *src, char *token, size_t cap,
                         unsigned *status, const char *what) {
    char peer[64] = "";
    lws_get_peer_simple(wsi, peer, sizeof peer);
    int64_t now = rc_now_us();
    *status = 0;
    if (rc_auth_limited(&s->limiter, peer, now)) {
        if (s->limiter.limited % 100 == 1) /* one line per 100 refusals */
            rc_log(s->log, RCANVAS_LOG_WARN, "%s refused: too many wrong tokens from %s (%llu answered 429 so far)",
                   what, peer, (unsigned long long)s->limiter.limited);
        *status = 429;
        lws_return_http_status(wsi, 429, "too many wrong tokens: wait a second");
        return RC_ROLE_NONE;
    }
    rc_role r = rc_auth_role(find_token(wsi, s, token, cap, src), s->token, s->view_token);
    if (r == RC_ROLE_VIEW || r == RC_ROLE_INTERACTIVE) return r;
    if (r == RC_ROLE_WRONG) rc_auth_failed(&s->limiter, peer, now);
    *status = r == RC_ROLE_NONE ? 401 : 403;
    rc_log(s->log, r == RC_ROLE_NONE ? RCANVAS_LOG_INFO : RCANVAS_LOG_WARN, "%s refused: %s token from %s", what, r == RC_ROLE_NONE ? "missing" : "wrong",
           peer);
    return RC_ROLE_NONE;
}

/* The Set-Cookie value that trades a page's ?token= for the cookie (HttpOnly: no script reads it; SameSite=Strict:
 * no other site's page sends it), so that the client can drop the token from the address bar. */
static void token_cookie(rc_transport *s, const char *token, char *out, size_t cap) {
    char name[40];
    rc_auth_cookie_name(s->port, name, sizeof name);
    snprintf(out, cap, "%s=%s; Path=%s; HttpOnly; SameSite=Strict", name, token, s->base[0] ? s->base : "/");
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
 * WebSocket URLs: rc_auth_root_prefix) and {{COOKIE}} ("1" when this response sets the token cookie, so the client
 * drops ?token= from the address bar) filled in (title: the canvas's, not escaped yet); malloc'd, NUL-terminated. */
static char *render_page(const char *name, const char *title, const char *root, int cookie, size_t *len) {
    const rc_asset *tpl = find_asset("index.html");
    if (!tpl) return NULL;
    char esc[256 * 6 + 1];
    html_escape(esc, sizeof esc, title);
    size_t cap = tpl->len + 4 * (strlen(esc) + RC_NAME_MAX + strlen(root)) + 1;
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
        else if (!strncmp(src, "{{COOKIE}}", 10)) rep = cookie ? "1" : "", skip = 10;
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

/* The base path without its trailing "/" ("/viz"): 301 to "/viz/" with the same query, so that the page's relative
 * URLs resolve under the prefix (as a web server does for a directory). */
static int redirect_to_dir(struct lws *wsi, const char *path) {
    char loc[1024], frag[600];
    int n = snprintf(loc, sizeof loc, "%s/", path);
    for (int i = 0; n > 0 && (size_t)n < sizeof loc &&
                    lws_hdr_copy_fragment(wsi, frag, sizeof frag, WSI_TOKEN_HTTP_URI_ARGS, i) > 0; i++)
        n += snprintf(loc + n, sizeof loc - (size_t)n, "%c%s", i ? '&' : '?', frag); /* lws split them at '&' */
    if (n <= 0 || (size_t)n >= sizeof loc) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
    uint8_t hb[LWS_PRE + 1400], *start = hb + LWS_PRE, *pos = start, *end = hb + sizeof hb - 1;
    if (lws_http_redirect(wsi, HTTP_STATUS_MOVED_PERMANENTLY, (const unsigned char *)loc, (int)strlen(loc), &pos,
                          end) < 0)
        return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

int rc_http_serve(struct lws *wsi, rc_transport *s, rc_pss *p, const char *path) {
    if (check_host(wsi, s)) return lws_http_transaction_completed(wsi) ? -1 : 0;
    if (s->base[0] && !strcmp(path, s->base)) return redirect_to_dir(wsi, path);
    char stripped[256];
    path = rc_auth_strip_base(path, s->base, stripped, sizeof stripped);
    if (!strcmp(path, "/favicon.ico")) return http_status(wsi, HTTP_STATUS_NO_CONTENT, "");
    if (!strncmp(path, "/client/", 8)) {
        const rc_asset *a = find_asset(path + 8);
        if (!a || !strcmp(a->name, "index.html")) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
        return send_body(wsi, p, a->content_type, "no-cache", a->data, a->len, NULL);
    }
    const char *name;
    size_t nlen;
    if (parse_canvas_path(path, 0, &name, &nlen)) return http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
    char token[200];
    unsigned st;
    rc_token_source src;
    if (!authorize(wsi, s, &src, token, sizeof token, &st, "page")) {
        if (st == 429) return lws_http_transaction_completed(wsi) ? -1 : 0;
        return http_status(wsi, st, st == 401 ? "token required: open the URL the server printed"
                                              : "wrong token: open the URL the server printed");
    }
    char title[256], cname[RC_NAME_MAX + 1];
    if (nlen > RC_NAME_MAX || !rc_registry_lookup(s->registry, name, nlen, title, sizeof title))
        return http_status(wsi, HTTP_STATUS_NOT_FOUND, "no such canvas");
    memcpy(cname, name, nlen);
    cname[nlen] = '\0';
    size_t len = 0;
    char root[256], cookie[512];
    rc_auth_root_prefix(path, root, sizeof root);
    if (src == RC_TOKEN_QUERY) token_cookie(s, token, cookie, sizeof cookie);
    char *page = render_page(cname, title, root, src == RC_TOKEN_QUERY, &len);
    if (!page) return http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
    int r = send_body(wsi, p, "text/html; charset=utf-8", "no-store", page, len,
                      src == RC_TOKEN_QUERY ? cookie : NULL);
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
    char raw[256], stripped[256];
    const char *name, *path = raw;
    size_t nlen;
    if (check_host(wsi, s)) return -1;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) >= (int)sizeof raw ||
        lws_hdr_copy(wsi, raw, sizeof raw, WSI_TOKEN_GET_URI) < 0 ||
        parse_canvas_path((path = rc_auth_strip_base(raw, s->base, stripped, sizeof stripped)), 1, &name, &nlen)) {
        lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, "not found");
        return -1;
    }
    char token[200];
    unsigned st;
    rc_token_source src;
    rc_role role = authorize(wsi, s, &src, token, sizeof token, &st, "WebSocket");
    if (!role) {
        if (st != 429) lws_return_http_status(wsi, st, st == 401 ? "token required" : "wrong token");
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
    p->caps.view_only = role == RC_ROLE_VIEW;
    return 0;
}

void rc_transport_release_slot(rc_transport *s) {
    pthread_mutex_lock(&s->mu);
    s->nviewers--;
    pthread_mutex_unlock(&s->mu);
}
