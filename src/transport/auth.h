/* SPDX-License-Identifier: MIT */
/*
 * auth.h — private to src/transport/: who may talk to the server (issue 11, points 2, 3 and 6), as pure functions
 * on strings so that tests/transport/test_auth.c checks them without a socket:
 *  - roles by token: the interactive token and the view-only token, found in the query (?token=), an
 *    `Authorization: Bearer` header or the session cookie (in that order), compared in constant time;
 *  - a rate limit on wrong tokens per network (/24, /64) and server-wide (token buckets in a fixed-size table);
 *  - the Host check against DNS rebinding;
 *  - the base path a reverse proxy serves the server under.
 * Network thread only (no locks).
 */
#ifndef RC_AUTH_H
#define RC_AUTH_H

#include <stddef.h>
#include <stdint.h>

/* ---- roles ---- */

typedef enum rc_role {
    RC_ROLE_NONE = 0,        /* no token given */
    RC_ROLE_WRONG = 1,       /* a token that is neither */
    RC_ROLE_VIEW = 2,        /* the view-only token: frames, no input, never active */
    RC_ROLE_INTERACTIVE = 3, /* the interactive token: input, may become active */
} rc_role;

/* Where a token came from (the page request with a query token sets the cookie). */
typedef enum rc_token_source { RC_TOKEN_NONE = 0, RC_TOKEN_QUERY, RC_TOKEN_BEARER, RC_TOKEN_COOKIE } rc_token_source;

/* 1 if a and b are equal; the time depends only on the length of b (the secret), never on where they differ. */
int rc_auth_equal(const char *a, size_t alen, const char *b, size_t blen);

/* The role of a token (NULL = none given) against the two tokens (view may be "" = no view-only token). Both are
 * always compared, so the time does not say which one nearly matched. */
rc_role rc_auth_role(const char *token, const char *interactive, const char *view);

/* The token of "Bearer TOKEN" (an Authorization header's value; scheme case-insensitive, spaces around the
 * token ignored) into out (cap bytes). 1 if found, 0 if the header is of another scheme, empty or too long. */
int rc_auth_bearer(const char *header, char *out, size_t cap);

/* The value of cookie `name` in a Cookie header ("a=1; b=2") into out (cap bytes). 1 if found, else 0. */
int rc_auth_cookie(const char *header, const char *name, char *out, size_t cap);

/* The cookie's name for the server on this port: rcanvas_token_PORT (cookies do not separate ports, so two
 * servers on one host keep theirs apart). */
void rc_auth_cookie_name(int port, char *out, size_t cap);

/* The Set-Cookie value that trades a page's ?token= for the cookie, into out (cap bytes; 512 hold any token of
 * 128 characters and any base path): "rcanvas_token_PORT=TOKEN; Path=BASE; HttpOnly; SameSite=Strict", and
 * "; Secure" when secure (RFC 6265 4.1.2.5: the browser then never sends it over plain http). HttpOnly: no
 * script reads it; SameSite=Strict: no other site's page sends it. base "" is Path=/. */
void rc_auth_token_cookie(int port, const char *token, const char *base, int secure, char *out, size_t cap);

/* 1 if a reverse proxy that terminated TLS says so: an X-Forwarded-Proto value (the de facto header nginx's
 * `proxy_set_header X-Forwarded-Proto $scheme`, HAProxy and Caddy send) whose first entry is "https" (ignoring
 * case and spaces; a chain of proxies appends, so the first is the one the browser reached). NULL or anything
 * else: 0. Only the cookie's Secure flag follows it (issue 20: behind a TLS proxy the cookie lacked Secure and
 * went out in clear text on a visit to the site's http:// address); a client that forges it makes its own cookie
 * only stricter, so nothing here needs the proxy to be trusted. */
int rc_auth_forwarded_https(const char *x_forwarded_proto);

/* ---- rate limit on wrong tokens ---- */

/* Wrong tokens are counted per network, not per address: an IPv4 address's /24, an IPv6 address's /64 (one host
 * or one subscriber has that many addresses; 127.0.0.0/8 is all one machine's, so loopback is counted once more by
 * the server-wide bucket), and in a server-wide bucket on top. A right token is never refused by them (http.c
 * compares it first and charges the buckets only for wrong ones). */
#define RC_AUTH_BURST 10       /* wrong tokens a network may send at once */
#define RC_AUTH_REFILL_US 1000000 /* then one more per second */
#define RC_AUTH_GLOBAL_BURST 20   /* wrong tokens all networks together may send at once */
#define RC_AUTH_GLOBAL_REFILL_US 500000 /* then two more per second */
#define RC_AUTH_SLOTS 256      /* networks remembered; the least recently refused one is forgotten first */

typedef struct rc_auth_slot {
    char addr[48];             /* the network ("192.0.2.0/24", "2001:db8::/64"); "" = free */
    double tokens;             /* guesses left (0 … burst) */
    int64_t last_us;           /* last refill */
} rc_auth_slot;

typedef struct rc_auth_limiter {
    rc_auth_slot slot[RC_AUTH_SLOTS];
    rc_auth_slot global;       /* the server-wide bucket (addr "*" once used) */
    uint64_t limited;          /* requests answered 429 (for the log) */
} rc_auth_limiter;

/* The network an address is counted under, into out: "a.b.c.0/24" (IPv4, also ::ffff:a.b.c.d), "x:x:x:x::/64"
 * (IPv6); a string that is no numeric address is its own. */
void rc_auth_prefix(const char *addr, char *out, size_t cap);
/* 1 if addr's network, or the server as a whole, has no guess left now (a wrong token is answered 429), else 0. */
int rc_auth_limited(rc_auth_limiter *l, const char *addr, int64_t now_us);
/* Counts a wrong token from addr against its network and the server-wide bucket; 1 if either is now empty. */
int rc_auth_failed(rc_auth_limiter *l, const char *addr, int64_t now_us);

/* ---- Host check ---- */

/* 1 if the server bound to bind_host listens on loopback only (127.0.0.0/8, ::1, localhost). */
int rc_auth_loopback_bind(const char *bind_host);
/* The Host header check against DNS rebinding. host: the header's value (NULL = absent). A loopback bind takes
 * localhost, 127.0.0.1 and [::1] (any port); every bind takes the names in allowed[] (any port; "*" = any Host).
 * Another bind also takes its own address. Returns 0 (allowed), 400 (no Host) or 403. */
int rc_auth_check_host(const char *host, const char *bind_host, const char *const *allowed, int n_allowed);

/* ---- base path ---- */

/* 1 if p is a valid base path: "" or "/" (none), or "/" then segments of [A-Za-z0-9._~-], no trailing slash
 * needed ("/viz", "/a/b"), at most 200 bytes, no "." or ".." segment. */
int rc_auth_base_path_ok(const char *p);
/* path with the base path stripped when it starts with it ("/viz/ws" → "/ws", "/viz" → "/"); other paths are
 * returned unchanged (the server answers both, so a proxy may strip the prefix or not). */
const char *rc_auth_strip_base(const char *path, const char *base, char *tmp, size_t cap);

/* "../" once per directory level of path below the root ("/" → "./", "/c/x" → "../", "/c/x/" → "../../"): the
 * relative prefix from a page at path back to the server's root, so the page asks for its script
 * and WebSocket relative to where it was served (behind a proxy's prefix too). */
void rc_auth_root_prefix(const char *path, char *out, size_t cap);

#endif
