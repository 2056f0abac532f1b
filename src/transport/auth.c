/* SPDX-License-Identifier: MIT */
/*
 * auth.c — roles by token, the session a page's token is traded for, the rate limit on wrong tokens, the Host
 * check and the base path (see auth.h).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"
#include "transport/auth.h"

/* ---- roles ---- */

int rc_auth_equal(const char *a, size_t alen, const char *b, size_t blen) {
    unsigned diff = (unsigned)(alen != blen);
    for (size_t i = 0; i < blen; i++) { /* b's length, whatever a's: a short guess takes as long as a long one */
        unsigned char ca = i < alen ? (unsigned char)a[i] : 0;
        diff |= ca ^ (unsigned char)b[i];
    }
    return diff == 0;
}

rc_role rc_auth_role(const char *token, const char *interactive, const char *view) {
    if (!token) return RC_ROLE_NONE;
    size_t n = strlen(token);
    int is_i = rc_auth_equal(token, n, interactive, strlen(interactive));
    int is_v = view[0] ? rc_auth_equal(token, n, view, strlen(view)) : 0;
    return is_i ? RC_ROLE_INTERACTIVE : is_v ? RC_ROLE_VIEW : RC_ROLE_WRONG;
}

int rc_auth_bearer(const char *h, char *out, size_t cap) {
    while (*h == ' ' || *h == '\t') h++;
    if (strncasecmp(h, "bearer", 6) || (h[6] != ' ' && h[6] != '\t')) return 0;
    h += 6;
    while (*h == ' ' || *h == '\t') h++;
    size_t n = strlen(h);
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t')) n--;
    if (n == 0 || n >= cap) return 0;
    memcpy(out, h, n);
    out[n] = '\0';
    return 1;
}

int rc_auth_cookie(const char *h, const char *name, char *out, size_t cap) {
    size_t nl = strlen(name);
    while (*h) {
        while (*h == ' ' || *h == '\t' || *h == ';') h++;
        const char *end = strchr(h, ';');
        size_t len = end ? (size_t)(end - h) : strlen(h);
        if (len > nl && !strncmp(h, name, nl) && h[nl] == '=') {
            const char *v = h + nl + 1;
            size_t vl = len - nl - 1;
            while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
            if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') v++, vl -= 2; /* RFC 6265 allows a quoted value */
            if (vl == 0 || vl >= cap) return 0;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return 1;
        }
        h += len;
    }
    return 0;
}

/* ---- the session ---- */

rc_role rc_auth_request_role(const rc_auth_request *rq, const char *interactive, const char *view,
                             const rc_auth_session *s, rc_token_source *src) {
    char v[RC_AUTH_VALUE_MAX];
    *src = RC_TOKEN_NONE;
    if (rq->query_token) {
        *src = RC_TOKEN_QUERY;
        return rc_auth_role(rq->query_token, interactive, view);
    }
    if (rq->authorization && rc_auth_bearer(rq->authorization, v, sizeof v)) {
        *src = RC_TOKEN_BEARER;
        return rc_auth_role(v, interactive, view);
    }
    /* the session's own credentials count under this process's secret path only: the browser sends the cookie
     * to every port and path its Path covers, and S in a query is no token anywhere */
    if (!rq->session) return RC_ROLE_NONE;
    if (rq->query_session) {
        *src = RC_TOKEN_SESSION_ARG;
        return rc_auth_role(rq->query_session, s->interactive, s->view);
    }
    if (rq->cookie && rc_auth_cookie(rq->cookie, RC_SESSION_COOKIE, v, sizeof v)) {
        *src = RC_TOKEN_SESSION;
        return rc_auth_role(v, s->interactive, s->view);
    }
    return RC_ROLE_NONE;
}

int rc_auth_session_new(rc_auth_session *s) {
    if (rc_random_hex(s->path, RC_SESSION_BYTES) || rc_random_hex(s->interactive, RC_SESSION_BYTES) ||
        rc_random_hex(s->view, RC_SESSION_BYTES))
        return -1;
    return 0;
}

const char *rc_auth_session_strip(const char *path, const char *secret, int *in, int *match) {
    *in = *match = 0;
    if (strncmp(path, "/s/", 3)) return path;
    const char *x = path + 3, *end = strchr(x, '/');
    size_t xl = end ? (size_t)(end - x) : strlen(x);
    if (xl == 0) return path; /* "/s/" or "/s//…": no segment, no session path (404) */
    *in = 1;
    *match = rc_auth_equal(x, xl, secret, strlen(secret));
    return x + xl; /* "/…", or "" for "/s/X" */
}

void rc_auth_session_cookie(const char *value, const char *base, const char *secret, int secure, char *out,
                            size_t cap) {
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/') bl--;
    snprintf(out, cap, "%s=%s; Path=%.*s/s/%s/; HttpOnly; SameSite=Lax%s", RC_SESSION_COOKIE, value, (int)bl,
             base, secret, secure ? "; Secure" : "");
}

/* 1 if arg ("name=value" or "name") is named "token". */
static int is_token_arg(const char *arg) { return !strncmp(arg, "token", 5) && (arg[5] == '=' || !arg[5]); }

int rc_auth_query(const char *const *args, int nargs, int drop_token, char *out, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    if (cap == 0) return -1;
    out[0] = '\0';
    for (int i = 0; i < nargs; i++) {
        if (!args[i] || (drop_token && is_token_arg(args[i]))) continue;
        if (n + 1 >= cap) return -1;
        char sep = n ? '&' : '?';
        out[n++] = sep;
        int eq = 0;
        for (const unsigned char *c = (const unsigned char *)args[i]; *c; c++) {
            if (isalnum(*c) || *c == '-' || *c == '.' || *c == '_' || *c == '~' || (*c == '=' && !eq++)) {
                if (n + 1 >= cap) return -1;
                out[n++] = (char)*c;
            } else {
                if (n + 3 >= cap) return -1;
                out[n++] = '%';
                out[n++] = hex[*c >> 4];
                out[n++] = hex[*c & 15];
            }
        }
    }
    out[n] = '\0';
    return 0;
}

int rc_auth_session_location(const char *path, const char *inner, const char *secret, const char *const *args,
                             int nargs, char *out, size_t cap) {
    char root[256], query[1024];
    /* inner is a page's path (routed, its canvas found): still, nothing that could end the header or start a
     * query or fragment goes into it, and it is a path ("/…") */
    if (inner[0] && inner[0] != '/') return -1;
    for (const unsigned char *c = (const unsigned char *)inner; *c; c++)
        if (*c <= ' ' || *c >= 0x7f || strchr("?#\\\"%", *c)) return -1;
    rc_auth_root_prefix(path, root, sizeof root);
    if (strlen(root) + 4 >= sizeof root) return -1; /* cut: a path deeper than any page (85 levels) */
    if (rc_auth_query(args, nargs, 1, query, sizeof query)) return -1;
    int n = snprintf(out, cap, "%ss/%s%s%s", strcmp(root, "./") ? root : "", secret, inner[0] ? inner : "/", query);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int rc_auth_forwarded_https(const char *v) {
    if (!v) return 0;
    while (*v == ' ' || *v == '\t') v++;
    if (strncasecmp(v, "https", 5)) return 0;
    for (v += 5; *v == ' ' || *v == '\t'; v++) {}
    return *v == '\0' || *v == ',';
}

/* ---- rate limit ---- */

void rc_auth_prefix(const char *addr, char *out, size_t cap) {
    unsigned char a[16];
    char tmp[INET6_ADDRSTRLEN];
    if (inet_pton(AF_INET, addr, a) == 1) {
        snprintf(out, cap, "%u.%u.%u.0/24", a[0], a[1], a[2]);
        return;
    }
    if (inet_pton(AF_INET6, addr, a) == 1) {
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (!memcmp(a, mapped, 12)) { /* ::ffff:a.b.c.d is IPv4 */
            snprintf(out, cap, "%u.%u.%u.0/24", a[12], a[13], a[14]);
            return;
        }
        memset(a + 8, 0, 8);
        if (inet_ntop(AF_INET6, a, tmp, sizeof tmp)) {
            snprintf(out, cap, "%s/64", tmp);
            return;
        }
    }
    snprintf(out, cap, "%s", addr); /* not an address (lws gave none): its own bucket */
}

static rc_auth_slot *find_slot(rc_auth_limiter *l, const char *key) {
    for (int i = 0; i < RC_AUTH_SLOTS; i++)
        if (l->slot[i].addr[0] && !strcmp(l->slot[i].addr, key)) return &l->slot[i];
    return NULL;
}

static void refill(rc_auth_slot *s, int64_t now_us, double burst, double refill_us) {
    if (now_us > s->last_us) {
        s->tokens += (double)(now_us - s->last_us) / refill_us;
        if (s->tokens > burst) s->tokens = burst;
    }
    s->last_us = now_us;
}

/* The server-wide bucket, started full on first use. */
static rc_auth_slot *global(rc_auth_limiter *l, int64_t now_us) {
    if (!l->global.addr[0]) {
        snprintf(l->global.addr, sizeof l->global.addr, "*");
        l->global.tokens = RC_AUTH_GLOBAL_BURST;
        l->global.last_us = now_us;
    }
    refill(&l->global, now_us, RC_AUTH_GLOBAL_BURST, RC_AUTH_GLOBAL_REFILL_US);
    return &l->global;
}

int rc_auth_limited(rc_auth_limiter *l, const char *addr, int64_t now_us) {
    char key[sizeof l->slot[0].addr];
    rc_auth_prefix(addr, key, sizeof key);
    rc_auth_slot *s = find_slot(l, key);
    if (s) refill(s, now_us, RC_AUTH_BURST, RC_AUTH_REFILL_US);
    if ((!s || s->tokens >= 1) && global(l, now_us)->tokens >= 1) return 0;
    l->limited++;
    return 1;
}

int rc_auth_failed(rc_auth_limiter *l, const char *addr, int64_t now_us) {
    char key[sizeof l->slot[0].addr];
    rc_auth_prefix(addr, key, sizeof key);
    rc_auth_slot *s = find_slot(l, key);
    if (!s) { /* a free slot, else the one that has refilled the most (least recently refused) */
        rc_auth_slot *best = &l->slot[0];
        for (int i = 0; i < RC_AUTH_SLOTS && best->addr[0]; i++) {
            rc_auth_slot *c = &l->slot[i];
            if (!c->addr[0] || c->last_us < best->last_us) best = c;
        }
        s = best;
        snprintf(s->addr, sizeof s->addr, "%s", key);
        s->tokens = RC_AUTH_BURST;
        s->last_us = now_us;
    }
    refill(s, now_us, RC_AUTH_BURST, RC_AUTH_REFILL_US);
    if (s->tokens >= 1) s->tokens -= 1;
    rc_auth_slot *g = global(l, now_us);
    if (g->tokens >= 1) g->tokens -= 1;
    return s->tokens < 1 || g->tokens < 1;
}

/* ---- Host check ---- */

int rc_auth_loopback_bind(const char *b) {
    return !strncmp(b, "127.", 4) || !strcmp(b, "::1") || !strcasecmp(b, "localhost");
}

/* The name part of a Host value: "[::1]:80" → "[::1]", "a.example:8080" → "a.example" (into out). 0 if malformed. */
static int host_name(const char *host, char *out, size_t cap) {
    size_t n;
    if (host[0] == '[') {
        const char *e = strchr(host, ']');
        if (!e) return 0;
        n = (size_t)(e - host) + 1;
        if (e[1] && e[1] != ':') return 0;
    } else {
        const char *c = strchr(host, ':');
        n = c ? (size_t)(c - host) : strlen(host);
    }
    const char *port = host + n;
    if (*port == ':')
        for (port++; *port; port++)
            if (!isdigit((unsigned char)*port)) return 0;
    if (n == 0 || n >= cap) return 0;
    memcpy(out, host, n);
    out[n] = '\0';
    if (n > 1 && out[n - 1] == '.' && out[0] != '[') out[n - 1] = '\0'; /* "localhost." is localhost */
    return 1;
}

/* name (from host_name) equals an allow-list entry, ignoring case, "[…]" around an IPv6 entry optional (only
 * there: "[localhost]" or "[127.0.0.1]" is no Host a browser sends; fuzz_auth found them accepted). */
static int name_is(const char *name, const char *entry) {
    if (!strcasecmp(name, entry)) return 1;
    size_t n = strlen(name);
    return name[0] == '[' && n > 2 && strchr(entry, ':') && strlen(entry) == n - 2 &&
           !strncasecmp(name + 1, entry, n - 2);
}

int rc_auth_check_host(const char *host, const char *bind_host, const char *const *allowed, int n_allowed) {
    if (!host || !*host) return 400;
    char name[256];
    if (!host_name(host, name, sizeof name)) return 403;
    for (int i = 0; i < n_allowed; i++)
        if (!strcmp(allowed[i], "*") || name_is(name, allowed[i])) return 0;
    if (rc_auth_loopback_bind(bind_host))
        return name_is(name, "localhost") || name_is(name, "127.0.0.1") || name_is(name, "::1") ? 0 : 403;
    /* another bind: its own address (not the wildcard: that is no name) */
    if (strcmp(bind_host, "0.0.0.0") && strcmp(bind_host, "::") && name_is(name, bind_host)) return 0;
    return 403;
}

/* ---- base path ---- */

int rc_auth_base_path_ok(const char *p) {
    if (!p[0] || !strcmp(p, "/")) return 1;
    size_t n = strlen(p);
    if (p[0] != '/' || n > 200) return 0;
    const char *seg = p + 1;
    for (const char *c = p + 1;; c++) {
        if (*c == '/' || !*c) {
            size_t sl = (size_t)(c - seg);
            if (sl == 0 && *c) return 0; /* "//" */
            if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.')) return 0;
            if (!*c) return 1;
            seg = c + 1;
            continue;
        }
        if (!isalnum((unsigned char)*c) && !strchr("._~-", *c)) return 0;
    }
}

const char *rc_auth_strip_base(const char *path, const char *base, char *tmp, size_t cap) {
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/') bl--;
    if (bl == 0 || strncmp(path, base, bl) || (path[bl] != '/' && path[bl] != '\0')) return path;
    if (!path[bl]) {
        snprintf(tmp, cap, "/");
        return tmp;
    }
    return path + bl;
}

void rc_auth_root_prefix(const char *path, char *out, size_t cap) {
    int depth = 0;
    for (const char *c = path + (path[0] == '/'); *c; c++) depth += *c == '/';
    size_t o = 0;
    out[0] = '\0';
    if (depth == 0) {
        snprintf(out, cap, "./");
        return;
    }
    for (int i = 0; i < depth && o + 4 <= cap; i++, o += 3) memcpy(out + o, "../", 4);
}
