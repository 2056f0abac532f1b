/* SPDX-License-Identifier: MIT */
/*
 * auth.h — private to src/transport/: who may talk to the server, as pure functions
 * on strings so that tests/transport/test_auth.c checks them without a socket:
 *  - roles by token: the interactive token and the view-only token, found in the query (?token=) or an
 *    `Authorization: Bearer` header, or by the session a page's ?token= is traded for (its ?session= or cookie,
 *    under the session's secret path only), in that order, compared in constant time;
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

/* Where a token came from: the query (a page request with it is moved under the session's path), an
 * Authorization header, the session cookie, or the session's ?session= (both under the session's path only; their
 * value is S, not a token). */
typedef enum rc_token_source {
    RC_TOKEN_NONE = 0,
    RC_TOKEN_QUERY,
    RC_TOKEN_BEARER,
    RC_TOKEN_SESSION,     /* the cookie RC_SESSION_COOKIE */
    RC_TOKEN_SESSION_ARG, /* ?session=S, from a page that a frame of another site loaded (no cookie there) */
} rc_token_source;

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

/* ---- the session a page's ?token= is traded for ----
 *
 * Browsers do not keep cookies of one host apart by port: a cookie that held the token went to every other
 * listener on 127.0.0.1, another user's included, and to whoever bound this port after the server exited (the
 * page's reconnects). So a page request with the right ?token= is answered 303 to the same page under s/R/, R a
 * secret path segment of this process, with the cookie RC_SESSION_COOKIE = S (one S per role, this process's too)
 * whose Path is BASE/s/R/: the browser sends it only under that path, which nothing but this server's pages name,
 * and R and S die with the process (a listener that takes the port over learns nothing that opens a later one). */

#define RC_SESSION_COOKIE "rcanvas_s"
#define RC_SESSION_BYTES 16                     /* 128 random bits each */
#define RC_SESSION_CHARS (2 * RC_SESSION_BYTES) /* in hex: [0-9a-f] */

typedef struct rc_auth_session {
    char path[RC_SESSION_CHARS + 1];        /* R: the secret path segment */
    char interactive[RC_SESSION_CHARS + 1]; /* S of the interactive role */
    char view[RC_SESSION_CHARS + 1];        /* S of the view-only role */
} rc_auth_session;

/* What a request carries that may say who it is, as found in it (NULL: absent). */
typedef struct rc_auth_request {
    const char *query_token;   /* the value of ?token= */
    const char *authorization; /* the Authorization header */
    const char *query_session; /* the value of ?session= */
    const char *cookie;        /* the Cookie header */
    int session;               /* the path is under this process's secret path (rc_auth_session_strip's match) */
} rc_auth_request;

/* The role of a request, and in *src where it came from, from the first found of: ?token=, `Authorization:
 * Bearer` (both compared with the tokens), then, only when rq->session, ?session= and the session cookie (both
 * compared with this process's two S, never with the tokens). Each comparison is rc_auth_role's: constant time,
 * and a wrong S is RC_ROLE_WRONG, a wrong token (charged by the rate limit). Under no secret path, or another
 * process's, ?session= and the cookie are not looked at: RC_ROLE_NONE (401, uncharged) if nothing else is there,
 * so the answer tells nothing about the secret. A Bearer value or cookie of cap (200) bytes or more counts as
 * absent. */
#define RC_AUTH_VALUE_MAX 200
rc_role rc_auth_request_role(const rc_auth_request *rq, const char *interactive, const char *view,
                             const rc_auth_session *s, rc_token_source *src);

/* New random secrets from getrandom(2) (never derived from the tokens). 0, or -1 if no randomness came. */
int rc_auth_session_new(rc_auth_session *s);

/* A page that a frame of another site loads (a notebook on localhost:8888 embedding 127.0.0.1:PORT/?token=T) gets
 * no cookie: Chromium neither stores nor sends it there (a third-party cookie). Such a page, answered to the request
 * that carried the right ?token=, is served directly with R and its role's S in it (its data- attributes), and
 * goes by URLs under s/R/ with ?session=S, never the token again: what its reconnects leave with whoever binds the
 * port after the server exited opens nothing either (rc_auth_request_role). */
#define RC_SESSION_ARG "session"

/* A path under "/s/X/" (base path already stripped): returns what follows X ("/s/X/c/a" → "/c/a", "/s/X/" → "/",
 * "/s/X" → ""), *in = 1, and *match = X is `secret` (compared in constant time); any other path is returned as it
 * is with *in = *match = 0. The server routes the rest as it routes a path without the prefix. */
const char *rc_auth_session_strip(const char *path, const char *secret, int *in, int *match);

/* The Set-Cookie value of the session, into out (cap bytes; 512 hold any base path):
 * "rcanvas_s=VALUE; Path=BASE/s/SECRET/; HttpOnly; SameSite=Lax" and "; Secure" when secure (RFC 6265 4.1.2.5:
 * never sent over plain http then). HttpOnly: no script reads it; the Path: no other path of the host (another
 * port's listener, whatever its site) gets it, and no page that does not know SECRET can name a URL it goes to.
 * SameSite=Lax, not Strict: a link from another site (a notebook on localhost opening 127.0.0.1, a chat) is a
 * navigation that site started, and Chromium then sends no Strict cookie to the 303's target, even one the 303
 * itself set: the page answered 401. Lax goes with top-level navigations only (not with other sites' frames,
 * fetches or forms that POST), and the secret path already keeps them from naming any URL it covers. */
void rc_auth_session_cookie(const char *value, const char *base, const char *secret, int secure, char *out,
                            size_t cap);

/* The query string of args ("name=value" each, decoded, as lws splits them) into out: "" when none is kept, else
 * "?" and the arguments joined by "&", every byte but unreserved characters and an argument's first "=" percent-
 * encoded (so nothing a request carries, CR, LF, '&', '#', reaches a header we write); with drop_token, arguments
 * named "token" are left out. 0, or -1 if it does not fit cap. */
int rc_auth_query(const char *const *args, int nargs, int drop_token, char *out, size_t cap);

/* The relative Location that moves a page request to the same page under the session's path: from the request's
 * path `path` (base path stripped, which may itself be under /s/X/), the way back to the root (rc_auth_root_prefix,
 * "./" left out), "s/SECRET", the page's own path `inner` (path without any /s/X prefix), then args less the token
 * (rc_auth_query). "/" → "s/R/", "/c/a" → "../s/R/c/a", "/s/X/c/a" → "../../../s/R/c/a". Relative, so that it
 * works whether a proxy passes the base path on or strips it. 0, or -1 if it does not fit cap or inner holds a
 * byte that has no place in it (controls, space, non-ASCII, ? # \ " %) or is no path ("/…" or ""). */
int rc_auth_session_location(const char *path, const char *inner, const char *secret, const char *const *args,
                             int nargs, char *out, size_t cap);

/* 1 if a reverse proxy that terminated TLS says so: an X-Forwarded-Proto value (the de facto header nginx's
 * `proxy_set_header X-Forwarded-Proto $scheme`, HAProxy and Caddy send) whose first entry is "https" (ignoring
 * case and spaces; a chain of proxies appends, so the first is the one the browser reached). NULL or anything
 * else: 0. Only the cookie's Secure flag follows it (behind a TLS proxy a cookie without Secure went out in
 * clear text on a visit to the site's http:// address); a client that forges it makes its own cookie
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
