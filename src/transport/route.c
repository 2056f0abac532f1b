/* SPDX-License-Identifier: MIT */
/*
 * route.c — the pure part of the HTTP side (route.h): path shapes, the token check and the Origin check, as
 * http.c did them inline before (behaviour unchanged), now without lws so that they are unit tested and fuzzed.
 */
#include "transport/route.h"

#include <string.h>
#include <strings.h>

#include "core/util.h"
#include "stream/session.h"

#define RC_HDR_MAX 300 /* Origin and Host longer than this are refused (as before: http.c's buffers) */

/* Parses "/ws" or "/c/NAME/ws" (ws = 1) or "/", "/index.html", "/c/NAME", "/c/NAME/" (ws = 0) into the canvas
 * name. Returns 0 and name/len, or -1 if the path is not of that shape. */
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

/* lws_get_urlarg_by_name (lws 4.1): the first argument that starts with `name`, and what follows the name. */
static const char *find_arg(const char *const *args, int nargs, const char *name) {
    size_t sl = strlen(name);
    for (int i = 0; i < nargs; i++)
        if (args[i] && !strncmp(args[i], name, sl)) return args[i] + sl;
    return NULL;
}

int rc_route_check_token(const char *const *args, int nargs, const char *token) {
    const char *v = find_arg(args, nargs, "token=");
    if (!v) v = find_arg(args, nargs, "token");
    if (!v) return 401;
    if (*v == '=') v++;
    return rc_consttime_equal(v, strlen(v), token, strlen(token)) ? 0 : 403;
}

/* Origin must be absent, the same scheme (http, or https on a TLS server) and host:port as Host, or
 * allow-listed. 0 or -1. The scheme too: https://host:port is another origin than http://host:port. */
static int check_origin(const rc_http_request *rq, const char *const *origins, int n_origins) {
    if (rq->origin_len <= 0) return 0;
    if (rq->origin_len >= RC_HDR_MAX || !rq->origin) return -1;
    for (int i = 0; i < n_origins; i++)
        if (!strcasecmp(rq->origin, origins[i])) return 0;
    if (rq->host_len <= 0 || rq->host_len >= RC_HDR_MAX || !rq->host) return -1;
    const char *scheme = rq->tls ? "https://" : "http://";
    size_t sl = strlen(scheme);
    if (strncasecmp(rq->origin, scheme, sl)) return -1;
    const char *o = rq->origin + sl;
    return strcasecmp(o, rq->host) ? -1 : 0;
}

static void refuse(rc_route *out, int status, const char *reason, const char *log) {
    out->kind = RC_ROUTE_REFUSE;
    out->status = status;
    out->reason = reason;
    out->log = log;
}

void rc_http_route(const rc_http_request *rq, const char *token, const char *const *origins, int n_origins,
                   rc_route *out) {
    memset(out, 0, sizeof *out);
    out->token = -1;
    const char *path = rq->path;
    if (!path) return refuse(out, 404, "not found", NULL);
    if (!rq->upgrade) {
        if (!strcmp(path, "/favicon.ico")) {
            out->kind = RC_ROUTE_EMPTY;
            out->status = 204;
            return;
        }
        if (!strncmp(path, "/client/", 8)) {
            out->kind = RC_ROUTE_CLIENT_FILE;
            out->status = 200;
            out->file = path + 8;
            return;
        }
    }
    int metrics = !rq->upgrade && !strcmp(path, "/metrics");
    if (!metrics && parse_canvas_path(path, rq->upgrade, &out->canvas, &out->canvas_len))
        return refuse(out, 404, "not found", NULL);
    if (token) out->token = rc_route_check_token(rq->args, rq->nargs, token); /* NULL: the caller authorizes */
    if (rq->upgrade) {
        if (out->token == 401) return refuse(out, 401, "token required", "WebSocket refused: missing token");
        if (out->token == 403) return refuse(out, 403, "wrong token", "WebSocket refused: wrong token");
        if (check_origin(rq, origins, n_origins))
            return refuse(out, 403, "origin not allowed", "WebSocket refused: Origin does not match the server");
    } else {
        if (out->token == 401) return refuse(out, 401, "token required: open the URL the server printed", NULL);
        if (out->token == 403) return refuse(out, 403, "wrong token: open the URL the server printed", NULL);
    }
    if (metrics) {
        out->kind = RC_ROUTE_METRICS;
        out->status = 200;
        return;
    }
    if (out->canvas_len > RC_NAME_MAX) return refuse(out, 404, "no such canvas", NULL);
    out->kind = rq->upgrade ? RC_ROUTE_WEBSOCKET : RC_ROUTE_PAGE;
    out->status = 200;
    if (rq->upgrade) out->codecs = find_arg(rq->args, rq->nargs, "codecs=");
}
