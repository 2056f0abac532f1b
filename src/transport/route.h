/* SPDX-License-Identifier: MIT */
/*
 * route.h — the pure part of the transport's HTTP side: what to do with a request, decided from its
 * method, path, query arguments and headers alone, without libwebsockets, so that it can be unit tested
 * (tests/transport/test_route.c) and fuzzed (tests/fuzz/fuzz_route.c). http.c gathers the request from lws,
 * calls rc_http_route, and carries out the decision (the page, a client file, the upgrade, an error status);
 * what needs the server's state (the registry's canvases, the viewer limit) stays there.
 */
#ifndef RC_ROUTE_H
#define RC_ROUTE_H

#include <stddef.h>

/* A request as lws gives it. Strings are NUL-terminated; none is kept after rc_http_route returns. */
typedef struct rc_http_request {
    const char *method;        /* "GET", …; NULL = unknown. Not used in routing yet (every method is routed alike) */
    const char *path;          /* the URI path as lws decoded it; NULL = unreadable (too long): 404 */
    const char *const *args;   /* the query's arguments in order, each "name=value" as lws splits and decodes them */
    int nargs;
    int upgrade;               /* a WebSocket upgrade request (Origin is checked, paths end in /ws) */
    /* headers: *_len is the header's length as lws counts it (≤ 0: absent); the string is NULL if it could not be
     * copied. Only an upgrade request looks at them. */
    const char *origin;
    int origin_len;
    const char *host;
    int host_len;
    int tls;                   /* the server speaks https: an Origin not on the allow-list must be https:// (else http://) */
} rc_http_request;

typedef enum rc_route_kind {
    RC_ROUTE_REFUSE = 0,       /* answer status and reason, nothing else */
    RC_ROUTE_EMPTY,            /* 204 without a body (/favicon.ico) */
    RC_ROUTE_CLIENT_FILE,      /* an embedded client file: `file` (not checked against the assets here) */
    RC_ROUTE_PAGE,             /* the page of canvas `canvas` (the registry says whether it exists) */
    RC_ROUTE_WEBSOCKET,        /* upgrade to a viewer of canvas `canvas` (registry and viewer limit: http.c) */
    RC_ROUTE_METRICS,          /* GET /metrics (Prometheus text) */
} rc_route_kind;

typedef struct rc_route {
    rc_route_kind kind;
    int status;                /* RC_ROUTE_REFUSE: the HTTP status (404, 401, 403); 204 for EMPTY; else 200 */
    const char *reason;        /* RC_ROUTE_REFUSE: its text for the client (static) */
    const char *log;           /* a line for the server's log about the refusal (static), or NULL */
    const char *file;          /* RC_ROUTE_CLIENT_FILE: the name after /client/ (points into path) */
    const char *canvas;        /* PAGE, WEBSOCKET: the canvas name, not NUL-terminated (into path); "" = default */
    size_t canvas_len;         /*   its length, ≤ RC_NAME_MAX */
    int token;                 /* the token check: 0 right, 401 missing, 403 wrong; -1 not checked (not needed) */
    const char *codecs;        /* WEBSOCKET: the value of the codecs= argument (into args), or NULL */
} rc_route;

/* The token check of every page, upgrade and /metrics request: the "token=" argument (or "token" with anything
 * after it, as lws's prefix lookup finds it; a leading '=' is skipped), compared with `token` in constant time.
 * Returns 0 (right), 401 (missing) or 403 (wrong). Pure; any thread. */
int rc_route_check_token(const char *const *args, int nargs, const char *token);

/* Decides what to do with rq: see rc_route. `token` is the server's token, or NULL when the caller checks the token
 * itself (the server does: auth.c, with roles, Bearer, cookies and a rate limit; out->token is then -1); `origins` its allow-list of Origin
 * values (compared ignoring case), besides the Origin of the request's own Host. The checks, in order: the path's
 * shape (404), the token (401, 403), for an upgrade the Origin (403), the canvas name's length (404). Pure: no
 * allocation, no global state; any thread; out's pointers point into rq's strings. */
void rc_http_route(const rc_http_request *rq, const char *token, const char *const *origins, int n_origins,
                   rc_route *out);

#endif /* RC_ROUTE_H */
