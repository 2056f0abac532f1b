/* SPDX-License-Identifier: MIT */
/*
 * test_route — the HTTP routing decision (src/transport/route.c) without a server: each path shape goes to its
 * kind with the right canvas name, the token check answers 401/403/0 (a token in any argument position, "token"
 * without "=", a longer or shorter token), an upgrade's Origin is checked against Host and the allow-list, and a
 * canvas name over RC_NAME_MAX is 404. /metrics needs the token and is not an upgrade path. The embedded client
 * (cmake/embed.cmake) holds the viewer's modules but not the SFU page, which works only behind the Janus front.
 */
#include <string.h>

#include "stream/session.h"
#include "test.h"
#include "transport/assets.h"
#include "transport/route.h"

static const char *k_token = "s3cret-token-0123456789abcdef";

/* Routes path with the given arguments (NULL-terminated list) as a GET (upgrade 0) or an upgrade. */
static rc_route route(const char *path, int upgrade, const char *origin, const char *host, const char **args) {
    rc_http_request rq = {.method = "GET", .path = path, .upgrade = upgrade};
    int n = 0;
    while (args && args[n]) n++;
    rq.args = args;
    rq.nargs = n;
    rq.origin = origin;
    rq.origin_len = origin ? (int)strlen(origin) : 0;
    rq.host = host;
    rq.host_len = host ? (int)strlen(host) : 0;
    static const char *origins[] = {"https://allowed.example"};
    rc_route r;
    rc_http_route(&rq, k_token, origins, 1, &r);
    return r;
}

static int canvas_is(const rc_route *r, const char *name) {
    return r->canvas && r->canvas_len == strlen(name) && !memcmp(r->canvas, name, r->canvas_len);
}

static void test_paths(void) {
    const char *ok[] = {"token=s3cret-token-0123456789abcdef", NULL};
    rc_route r = route("/", 0, NULL, NULL, ok);
    CHECK_EQ_INT(r.kind, RC_ROUTE_PAGE);
    CHECK_EQ_INT(r.status, 200);
    CHECK(canvas_is(&r, ""));
    CHECK_EQ_INT(r.token, 0);
    r = route("/index.html", 0, NULL, NULL, ok);
    CHECK_EQ_INT(r.kind, RC_ROUTE_PAGE);
    r = route("/c/plot", 0, NULL, NULL, ok);
    CHECK_EQ_INT(r.kind, RC_ROUTE_PAGE);
    CHECK(canvas_is(&r, "plot"));
    r = route("/c/plot/", 0, NULL, NULL, ok);
    CHECK(canvas_is(&r, "plot"));
    r = route("/c/plot/ws", 1, NULL, NULL, ok);
    CHECK_EQ_INT(r.kind, RC_ROUTE_WEBSOCKET);
    CHECK(canvas_is(&r, "plot"));
    r = route("/ws", 1, NULL, NULL, ok);
    CHECK_EQ_INT(r.kind, RC_ROUTE_WEBSOCKET);
    CHECK(canvas_is(&r, ""));
    CHECK(r.codecs == NULL);
    /* no token needed */
    r = route("/favicon.ico", 0, NULL, NULL, NULL);
    CHECK_EQ_INT(r.kind, RC_ROUTE_EMPTY);
    CHECK_EQ_INT(r.status, 204);
    CHECK_EQ_INT(r.token, -1);
    r = route("/client/rcanvas.js", 0, NULL, NULL, NULL);
    CHECK_EQ_INT(r.kind, RC_ROUTE_CLIENT_FILE);
    CHECK(r.file && !strcmp(r.file, "rcanvas.js"));
    /* wrong shapes: 404 before the token is looked at */
    const char *bad[] = {"/c/", "/c//", "/c/a/b", "/x", "/ws/", "/c/a/ws", "", "/c", NULL};
    for (int i = 0; bad[i]; i++) {
        r = route(bad[i], 0, NULL, NULL, NULL);
        CHECK_MSG(r.kind == RC_ROUTE_REFUSE && r.status == 404 && r.token == -1, "GET %s: kind %d status %d",
                  bad[i], r.kind, r.status);
    }
    const char *bad_ws[] = {"/", "/c/ws", "/c//ws", "/c/a/b/ws", "/c/a/wss", "/favicon.ico", "/metrics", NULL};
    for (int i = 0; bad_ws[i]; i++) {
        r = route(bad_ws[i], 1, NULL, NULL, ok);
        CHECK_MSG(r.kind == RC_ROUTE_REFUSE && r.status == 404, "upgrade %s: kind %d status %d", bad_ws[i],
                  r.kind, r.status);
    }
    r = (rc_route){0};
    rc_http_request unreadable = {.path = NULL, .upgrade = 1};
    rc_http_route(&unreadable, k_token, NULL, 0, &r);
    CHECK_EQ_INT(r.status, 404);
    /* a canvas name at and over RC_NAME_MAX */
    char p[RC_NAME_MAX + 16];
    memset(p, 'n', sizeof p);
    memcpy(p, "/c/", 3);
    p[3 + RC_NAME_MAX] = '\0';
    r = route(p, 0, NULL, NULL, ok);
    CHECK_EQ_INT(r.kind, RC_ROUTE_PAGE);
    CHECK_EQ_INT(r.canvas_len, RC_NAME_MAX);
    p[3 + RC_NAME_MAX] = 'n';
    p[4 + RC_NAME_MAX] = '\0';
    r = route(p, 0, NULL, NULL, ok);
    CHECK_EQ_INT(r.kind, RC_ROUTE_REFUSE);
    CHECK_EQ_INT(r.status, 404);
    CHECK(!strcmp(r.reason, "no such canvas"));
}

static void test_token(void) {
    const char *none[] = {"a=1", NULL};
    rc_route r = route("/", 0, NULL, NULL, none);
    CHECK_EQ_INT(r.status, 401);
    CHECK_EQ_INT(r.token, 401);
    r = route("/", 0, NULL, NULL, NULL);
    CHECK_EQ_INT(r.status, 401);
    const char *wrong[] = {"token=s3cret-token-0123456789abcdeF", NULL};
    r = route("/", 0, NULL, NULL, wrong);
    CHECK_EQ_INT(r.status, 403);
    CHECK_EQ_INT(r.token, 403);
    const char *shorter[] = {"token=s3cret-token-0123456789abcde", NULL};
    CHECK_EQ_INT(route("/", 0, NULL, NULL, shorter).status, 403);
    const char *longer[] = {"token=s3cret-token-0123456789abcdefX", NULL};
    CHECK_EQ_INT(route("/", 0, NULL, NULL, longer).status, 403);
    const char *empty[] = {"token=", NULL};
    CHECK_EQ_INT(route("/", 0, NULL, NULL, empty).status, 403);
    const char *later[] = {"codecs=h264,jpeg", "x=", "token=s3cret-token-0123456789abcdef", NULL};
    r = route("/c/a/ws", 1, NULL, NULL, later);
    CHECK_EQ_INT(r.kind, RC_ROUTE_WEBSOCKET);
    CHECK(r.codecs && !strcmp(r.codecs, "h264,jpeg"));
    /* the first token= argument counts (lws's lookup) */
    const char *two[] = {"token=wrong", "token=s3cret-token-0123456789abcdef", NULL};
    CHECK_EQ_INT(route("/", 0, NULL, NULL, two).status, 403);
    CHECK_EQ_INT(rc_route_check_token(two + 1, 1, k_token), 0);
    CHECK_EQ_INT(rc_route_check_token(NULL, 0, k_token), 401);
    /* upgrade refusals say so for the log */
    r = route("/ws", 1, NULL, NULL, wrong);
    CHECK_EQ_INT(r.status, 403);
    CHECK(r.log && strstr(r.log, "wrong token"));
    r = route("/ws", 1, NULL, NULL, none);
    CHECK_EQ_INT(r.status, 401);
    CHECK(r.log && strstr(r.log, "missing token"));
    /* /metrics: token required, like the page */
    r = route("/metrics", 0, NULL, NULL, NULL);
    CHECK_EQ_INT(r.status, 401);
    r = route("/metrics", 0, NULL, NULL, wrong);
    CHECK_EQ_INT(r.status, 403);
    const char *ok[] = {"token=s3cret-token-0123456789abcdef", NULL};
    r = route("/metrics", 0, NULL, NULL, ok);
    CHECK_EQ_INT(r.kind, RC_ROUTE_METRICS);
    CHECK_EQ_INT(r.status, 200);
}

static void test_origin(void) {
    const char *ok[] = {"token=s3cret-token-0123456789abcdef", NULL};
    CHECK_EQ_INT(route("/ws", 1, "http://localhost:8080", "localhost:8080", ok).kind, RC_ROUTE_WEBSOCKET);
    CHECK_EQ_INT(route("/ws", 1, "HTTP://LocalHost:8080", "localhost:8080", ok).kind, RC_ROUTE_WEBSOCKET);
    rc_route r = route("/ws", 1, "http://evil.example", "localhost:8080", ok);
    CHECK_EQ_INT(r.status, 403);
    CHECK(!strcmp(r.reason, "origin not allowed"));
    CHECK_EQ_INT(route("/ws", 1, "http://localhost:8081", "localhost:8080", ok).status, 403);
    CHECK_EQ_INT(route("/ws", 1, "localhost:8080", "localhost:8080", ok).status, 403); /* no scheme */
    /* the scheme counts: https://… is another origin than this plain server's, and the other way round */
    CHECK_EQ_INT(route("/ws", 1, "https://localhost:8080", "localhost:8080", ok).status, 403);
    CHECK_EQ_INT(route("/ws", 1, "ftp://localhost:8080", "localhost:8080", ok).status, 403);
    {
        rc_http_request tq = {.method = "GET", .path = "/ws", .upgrade = 1, .args = ok, .nargs = 1, .tls = 1,
                              .origin = "https://localhost:8080", .origin_len = 22, .host = "localhost:8080",
                              .host_len = 14};
        rc_route tr;
        rc_http_route(&tq, k_token, NULL, 0, &tr);
        CHECK_EQ_INT(tr.kind, RC_ROUTE_WEBSOCKET);
        tq.origin = "http://localhost:8080";
        tq.origin_len = 21;
        rc_http_route(&tq, k_token, NULL, 0, &tr);
        CHECK_EQ_INT(tr.status, 403);
    }
    CHECK_EQ_INT(route("/ws", 1, "http://localhost:8080", NULL, ok).status, 403);      /* no Host */
    CHECK_EQ_INT(route("/ws", 1, "https://allowed.example", "other:1", ok).kind, RC_ROUTE_WEBSOCKET);
    CHECK_EQ_INT(route("/ws", 1, "https://ALLOWED.example", NULL, ok).kind, RC_ROUTE_WEBSOCKET);
    /* an Origin of 300 bytes or more is refused, as is one lws could not copy */
    char longo[320];
    memset(longo, 'a', sizeof longo);
    memcpy(longo, "http://", 7);
    longo[299] = '\0';
    CHECK_EQ_INT(route("/ws", 1, longo, longo + 7, ok).kind, RC_ROUTE_WEBSOCKET);
    longo[299] = 'a';
    longo[300] = '\0';
    CHECK_EQ_INT(route("/ws", 1, longo, longo + 7, ok).status, 403);
    rc_http_request rq = {.path = "/ws", .upgrade = 1, .args = ok, .nargs = 1, .origin = NULL, .origin_len = 10};
    rc_route rr;
    rc_http_route(&rq, k_token, NULL, 0, &rr);
    CHECK_EQ_INT(rr.status, 403);
    /* a page request does not look at Origin */
    CHECK_EQ_INT(route("/", 0, "http://evil.example", "localhost:8080", ok).kind, RC_ROUTE_PAGE);
    /* the token comes first: a wrong token with a wrong Origin is 403 "wrong token" */
    const char *wrong[] = {"token=x", NULL};
    CHECK(!strcmp(route("/ws", 1, "http://evil.example", "localhost", wrong).reason, "wrong token"));
}

/* /client/NAME serves rc_assets: the viewer's modules are there; sfu.html and sfu.js are not (they need Janus's
 * janus.js and a web front that proxies /janus: docs/sfu.md), so the server answers 404 for them. */
static void test_assets(void) {
    int view = 0, stats = 0, html = 0, sfu = 0;
    for (const rc_asset *a = rc_assets; a->name; a++) {
        view += !strcmp(a->name, "view.js");
        stats += !strcmp(a->name, "stats.js");
        html += !strcmp(a->name, "index.html");
        sfu += !strncmp(a->name, "sfu.", 4);
        CHECK_MSG(a->len > 0 && a->data[a->len] == 0, "%s: empty or not NUL-terminated", a->name);
    }
    CHECK(view == 1 && stats == 1 && html == 1);
    CHECK_MSG(sfu == 0, "%d sfu.* files embedded", sfu);
}

int main(void) {
    test_assets();
    test_paths();
    test_token();
    test_origin();
    TEST_MAIN_END();
}
