/* SPDX-License-Identifier: MIT */
/*
 * fuzz_route — libFuzzer target for the HTTP routing decision (rc_http_route, src/transport/route.c). The input
 * is a request in lines: a flags byte (bit 0: upgrade; bit 1: Origin present; bit 2: Host present), then the
 * path, the Origin, the Host and the query, whose '&'-separated parts are the arguments. Every decision must be
 * consistent: a known kind and status, the canvas name inside the path and at most RC_NAME_MAX bytes, a served
 * page, upgrade or /metrics only with the right token, an upgrade only for an upgrade request.
 * `make fuzz`, `make test-fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/session.h"
#include "transport/route.h"

#define REQUIRE(c) \
    do {           \
        if (!(c)) abort(); \
    } while (0)

#define TOKEN "fuzz-token-0123456789abcdef0123"
#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    unsigned flags = data[0];
    char *buf = malloc(size); /* the rest, NUL-terminated, split into lines */
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    char *field[4] = {buf, "", "", ""};
    char *p = buf;
    for (int i = 1; i < 4; i++) {
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        field[i] = p = nl + 1;
    }
    const char *args[MAX_ARGS];
    int nargs = 0;
    for (char *a = field[3]; *a && nargs < MAX_ARGS;) {
        args[nargs++] = a;
        char *amp = strchr(a, '&');
        if (!amp) break;
        *amp = '\0';
        a = amp + 1;
    }
    rc_http_request rq = {.method = "GET", .path = field[0], .args = args, .nargs = nargs, .upgrade = flags & 1,
                          .tls = (flags & 16) != 0}; /* an https server: Origin must be https:// */
    if (flags & 2) {
        rq.origin = field[1];
        rq.origin_len = (int)strlen(field[1]);
    }
    if (flags & 4) {
        rq.host = field[2];
        rq.host_len = (int)strlen(field[2]);
    }
    static const char *const origins[] = {"https://allowed.example", "http://localhost:8080"};
    rc_route r;
    rc_http_route(&rq, TOKEN, origins, (flags & 8) ? 2 : 0, &r);

    size_t plen = strlen(rq.path);
    switch (r.kind) {
    case RC_ROUTE_REFUSE:
        REQUIRE(r.status == 401 || r.status == 403 || r.status == 404);
        REQUIRE(r.reason && *r.reason);
        break;
    case RC_ROUTE_EMPTY: REQUIRE(!rq.upgrade && r.status == 204 && !strcmp(rq.path, "/favicon.ico")); break;
    case RC_ROUTE_CLIENT_FILE:
        REQUIRE(!rq.upgrade && r.file == rq.path + 8 && !strncmp(rq.path, "/client/", 8));
        break;
    case RC_ROUTE_METRICS: REQUIRE(!rq.upgrade && r.token == 0 && !strcmp(rq.path, "/metrics")); break;
    case RC_ROUTE_PAGE:
    case RC_ROUTE_WEBSOCKET:
        REQUIRE((r.kind == RC_ROUTE_WEBSOCKET) == (rq.upgrade != 0));
        REQUIRE(r.status == 200 && r.token == 0);
        REQUIRE(r.canvas_len <= RC_NAME_MAX);
        REQUIRE(r.canvas_len == 0 || (r.canvas >= rq.path && r.canvas + r.canvas_len <= rq.path + plen));
        REQUIRE(!memchr(r.canvas, '/', r.canvas_len));
        break;
    default: abort();
    }
    /* the token check agrees with a plain reading of the arguments */
    if (r.token == 0) {
        const char *v = NULL;
        for (int i = 0; i < nargs && !v; i++)
            if (!strncmp(args[i], "token=", 6)) v = args[i] + 6;
        for (int i = 0; i < nargs && !v; i++)
            if (!strncmp(args[i], "token", 5)) v = args[i] + 5;
        REQUIRE(v);
        if (*v == '=') v++; /* so "token==T" passes too, as it always has (route.c skips one '=' after the name) */
        REQUIRE(!strcmp(v, TOKEN));
    }
    free(buf);
    return 0;
}
