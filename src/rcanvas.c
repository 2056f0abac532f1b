/* SPDX-License-Identifier: MIT */
/*
 * rcanvas.c — the runtime: what an rcanvas_server is. It owns the encoder worker pool, the logger, the registry
 * of canvases and the transport, and wires them together: a canvas is given the pool, the logger and a notify
 * callback that wakes the transport; the transport is given the registry. Nothing below this file knows about
 * the others' existence beyond those seams (docs/architecture.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool.h"
#include "core/util.h"
#include "stream/canvas.h"
#include "stream/session.h"
#include "transport/rtp.h"
#include "transport/tls.h"
#include "transport/auth.h"
#include "transport/transport.h"

struct rcanvas_server {
    char host[256];
    char token[129];
    char view_token[129];
    char base_path[201];       /* "" = none; no trailing "/" */
    uint32_t max_frame_dim;
    uint64_t max_canvas_pixels;
    double max_pixel_ratio;
    rc_logger log;
    rc_pool *pool;
    rc_registry *registry;
    rc_transport *transport;
    pthread_mutex_t mu;        /* the list of canvases, for shutdown */
    rcanvas_canvas **canvases;
    int ncanvases, cap;
    /* RTP outputs, woken with the transport. rtp_mu is a leaf lock: taken under a canvas's lock (its notify) and around
     * nothing but this list. */
    pthread_mutex_t rtp_mu;
    rcanvas_rtp_output **rtp;
    int nrtp, rtp_cap;
};

void rcanvas_server_config_init(rcanvas_server_config *cfg) {
    if (!cfg) return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->host = "127.0.0.1";
    cfg->port = 8080;
    cfg->max_viewers = 256;
    cfg->max_message_bytes = 4096;
    cfg->max_bad_messages = 20;
    cfg->max_frame_dim = 8192;
    cfg->log_level = RCANVAS_LOG_INFO;
    cfg->max_canvas_pixels = 7680u * 4320u;
    cfg->max_pixel_ratio = 8;
    cfg->ping_ms = 5000;
    cfg->idle_timeout_ms = 20000;
}

/* The token rule of rcanvas_server_config.token: NULL if t follows it, else what is wrong (for the log). 22
 * characters of the 64 of base64url hold 132 bits: the least for the 128 bits an unguessable token needs. */
static const char *token_problem(const char *t) {
    size_t n = strlen(t);
    if (n < 22) return "too short";
    if (n > 128) return "too long";
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-'))
            return "has a character that is not allowed";
    }
    return NULL;
}

/* The bounds of rcanvas_server_config (docs/security.md, "Limits"): 1 if one is out of range. */
static int bad_bounds(const rcanvas_server_config *cfg) {
    if (cfg->max_canvas_pixels < 1 || cfg->max_canvas_pixels > (1ull << 32)) return 1;
    if (!(cfg->max_pixel_ratio > 0 && cfg->max_pixel_ratio <= 16)) return 1;
    if (cfg->ping_ms < 0 || cfg->idle_timeout_ms < 0 || cfg->ping_ms > 3600000 || cfg->idle_timeout_ms > 3600000)
        return 1;
    return cfg->idle_timeout_ms && (!cfg->ping_ms || cfg->idle_timeout_ms <= cfg->ping_ms); /* hang-up after a ping */
}

/* The access fields of cfg: tokens, allowed hosts, base path. 0, or -1 after logging what is wrong. */
static int check_access_config(const rcanvas_server_config *cfg) {
    rc_logger lg = {.fn = cfg->log, .user = cfg->log_user, .level = cfg->log_level};
    const char *const toks[2] = {cfg->token, cfg->view_token}, *const names[2] = {"token", "view_token"};
    for (int i = 0; i < 2; i++) {
        const char *bad = toks[i] ? token_problem(toks[i]) : NULL;
        if (bad) { /* the length, not the token: it is a secret */
            rc_log(&lg, RCANVAS_LOG_ERROR, "%s refused: %s (%zu characters); a token is 22 to 128 characters of "
                   "[A-Za-z0-9_-]", names[i], bad, strlen(toks[i]));
            return -1;
        }
    }
    if (cfg->token && cfg->view_token && !strcmp(cfg->token, cfg->view_token)) {
        rc_log(&lg, RCANVAS_LOG_ERROR, "view_token refused: it is the same as token");
        return -1;
    }
    if (cfg->n_allowed_hosts < 0 || (cfg->n_allowed_hosts > 0 && !cfg->allowed_hosts)) return -1;
    for (int i = 0; i < cfg->n_allowed_hosts; i++)
        if (!cfg->allowed_hosts[i] || !cfg->allowed_hosts[i][0] || strlen(cfg->allowed_hosts[i]) > 255) return -1;
    if (cfg->base_path && !rc_auth_base_path_ok(cfg->base_path)) {
        rc_log(&lg, RCANVAS_LOG_ERROR, "base_path refused: \"%s\" is not \"/\" then segments of [A-Za-z0-9._~-]",
               cfg->base_path);
        return -1;
    }
    return 0;
}

static void notify_transport(void *user) {
    rcanvas_server *s = user;
    if (s->transport) rc_transport_wake(s->transport);
    pthread_mutex_lock(&s->rtp_mu);
    for (int i = 0; i < s->nrtp; i++) rc_rtp_output_wake(s->rtp[i]);
    pthread_mutex_unlock(&s->rtp_mu);
}

/* Takes the outputs of canvas c (all of them if c is NULL) out of the list and frees them: their sessions close. */
static void free_rtp_outputs(rcanvas_server *s, rcanvas_canvas *c) {
    for (;;) {
        rcanvas_rtp_output *o = NULL;
        pthread_mutex_lock(&s->rtp_mu);
        for (int i = 0; i < s->nrtp && !o; i++)
            if (!c || rc_rtp_output_canvas(s->rtp[i]) == c) {
                o = s->rtp[i];
                s->rtp[i] = s->rtp[--s->nrtp];
            }
        pthread_mutex_unlock(&s->rtp_mu);
        if (!o) return;
        rc_rtp_output_free(o);
    }
}

static void server_destroy(rcanvas_server *s) {
    rc_transport_free(s->transport);
    rc_pool_free(s->pool);
    rc_registry_free(s->registry);
    free(s->canvases);
    free(s->rtp);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->rtp_mu);
    free(s);
}

int rcanvas_server_new(const rcanvas_server_config *cfg, rcanvas_server **out) {
    if (!cfg || !out) return RCANVAS_EINVAL;
    *out = NULL;
    if (cfg->port < 0 || cfg->port > 65535 || cfg->max_viewers < 1 || cfg->max_message_bytes < 256 ||
        cfg->max_message_bytes > (1u << 24) || cfg->max_bad_messages < 0 || cfg->encode_threads < 0 ||
        cfg->encode_threads > 256 || cfg->max_frame_dim < 1 || cfg->max_frame_dim > 65535 ||
        cfg->n_allowed_origins < 0 || (cfg->n_allowed_origins > 0 && !cfg->allowed_origins) || bad_bounds(cfg))
        return RCANVAS_EINVAL;
    for (int i = 0; i < cfg->n_allowed_origins; i++)
        if (!cfg->allowed_origins[i]) return RCANVAS_EINVAL;
    if (!cfg->tls_cert != !cfg->tls_key || (cfg->tls_cert && (!*cfg->tls_cert || !*cfg->tls_key))) {
        rc_logger lg = {.fn = cfg->log, .user = cfg->log_user, .level = cfg->log_level};
        rc_log(&lg, RCANVAS_LOG_ERROR, "TLS needs both tls_cert and tls_key (PEM files), or neither");
        return RCANVAS_EINVAL;
    }
    const char *host = cfg->host ? cfg->host : "127.0.0.1";
    if (strlen(host) >= 256) return RCANVAS_EINVAL;
    if (check_access_config(cfg)) return RCANVAS_EINVAL;

    rcanvas_server *s = calloc(1, sizeof(*s));
    if (!s) return RCANVAS_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->rtp_mu, NULL);
    snprintf(s->host, sizeof s->host, "%s", host);
    s->max_frame_dim = cfg->max_frame_dim;
    s->max_canvas_pixels = cfg->max_canvas_pixels;
    s->max_pixel_ratio = cfg->max_pixel_ratio;
    s->log = (rc_logger){.fn = cfg->log, .user = cfg->log_user, .level = cfg->log_level};
    if ((cfg->token ? (snprintf(s->token, sizeof s->token, "%s", cfg->token), 0) : rc_random_hex(s->token, 16)) ||
        (cfg->view_token ? (snprintf(s->view_token, sizeof s->view_token, "%s", cfg->view_token), 0)
                         : rc_random_hex(s->view_token, 16))) {
        server_destroy(s);
        return RCANVAS_EIO;
    }
    if (cfg->base_path) snprintf(s->base_path, sizeof s->base_path, "%s", cfg->base_path);
    for (size_t n = strlen(s->base_path); n > 0 && s->base_path[n - 1] == '/';) s->base_path[--n] = '\0';
    s->registry = rc_registry_new();
    if (!s->registry) {
        server_destroy(s);
        return RCANVAS_ENOMEM;
    }
    rc_transport_config tc = {.host = s->host, .port = cfg->port, .token = s->token, .view_token = s->view_token,
                              .allowed_origins = cfg->allowed_origins, .n_allowed_origins = cfg->n_allowed_origins,
                              .allowed_hosts = cfg->allowed_hosts, .n_allowed_hosts = cfg->n_allowed_hosts,
                              .base_path = s->base_path,
                              .max_viewers = cfg->max_viewers, .max_message_bytes = cfg->max_message_bytes,
                              .max_bad_messages = cfg->max_bad_messages, .registry = s->registry, .log = &s->log,
                              .tls_cert = cfg->tls_cert, .tls_key = cfg->tls_key,
                              .ping_ms = cfg->ping_ms, .idle_timeout_ms = cfg->idle_timeout_ms};
    int r = rc_transport_new(&tc, &s->transport);
    if (r) {
        server_destroy(s);
        return r;
    }
    int threads = cfg->encode_threads ? cfg->encode_threads : rc_cpu_count();
    r = rc_pool_new(threads, &s->pool);
    if (!r) r = rc_transport_start(s->transport);
    if (r) {
        server_destroy(s);
        return r;
    }
    rc_log(&s->log, RCANVAS_LOG_INFO, "listening on %s://%s:%d/ with %d encoder threads",
           rc_transport_tls_fingerprint(s->transport) ? "https" : "http", s->host, rc_transport_port(s->transport),
           threads);
    *out = s;
    return RCANVAS_OK;
}

void rcanvas_server_free(rcanvas_server *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    int n = s->ncanvases;
    rcanvas_canvas **list = s->canvases;
    s->canvases = NULL;
    s->ncanvases = s->cap = 0;
    pthread_mutex_unlock(&s->mu);
    /* 1. no new sessions; canvases stop accepting frames (waiters get RCANVAS_ECLOSED) and their running encodes
     *    finish while the transport can still be woken */
    for (int i = 0; i < n; i++) rc_registry_remove(s->registry, list[i]);
    for (int i = 0; i < n; i++) rc_canvas_close(list[i]);
    free_rtp_outputs(s, NULL); /* their threads stop, their sessions close */
    /* 2. the transport stops; closing its connections closes every session */
    rc_transport_free(s->transport);
    s->transport = NULL;
    /* 3. encoder threads stop (nothing is queued any more) */
    rc_pool_free(s->pool);
    s->pool = NULL;
    /* 4. canvases go */
    for (int i = 0; i < n; i++) rc_canvas_destroy(list[i]);
    free(list);
    server_destroy(s);
}

int rcanvas_server_port(const rcanvas_server *s) { return s ? rc_transport_port(s->transport) : RCANVAS_EINVAL; }

const char *rcanvas_server_token(const rcanvas_server *s) { return s ? s->token : NULL; }

const char *rcanvas_server_view_token(const rcanvas_server *s) { return s ? s->view_token : NULL; }

/* "SCHEME://HOST:PORT[BASE]/[PREFIX][c/NAME]?ARG=VALUE": a canvas's URL with its credential (PREFIX: "" or the
 * session's "s/R/"). */
static int canvas_url(const rcanvas_server *s, const char *prefix, const char *arg, const char *value,
                      const char *name, char *buf, size_t cap) {
    if (!s || !buf) return RCANVAS_EINVAL;
    const char *host = strcmp(s->host, "0.0.0.0") ? s->host : "127.0.0.1";
    int bracket = strchr(host, ':') != NULL;
    int port = rc_transport_port(s->transport);
    const char *scheme = rc_transport_tls_fingerprint(s->transport) ? "https" : "http";
    int named = name && *name;
    int n = snprintf(buf, cap, "%s://%s%s%s:%d%s/%s%s%s?%s=%s", scheme, bracket ? "[" : "", host, bracket ? "]" : "",
                     port, s->base_path, prefix, named ? "c/" : "", named ? name : "", arg, value);
    if (n < 0 || (size_t)n >= cap) return RCANVAS_EINVAL;
    return n;
}

static int server_url(const rcanvas_server *s, const char *token, const char *name, char *buf, size_t cap) {
    return canvas_url(s, "", "token", token, name, buf, cap);
}

int rcanvas_server_session_url(const rcanvas_server *s, const char *name, int view_only, char *buf, size_t cap) {
    if (!s || !buf) return RCANVAS_EINVAL;
    char prefix[RC_SESSION_CHARS + 4];
    snprintf(prefix, sizeof prefix, "s/%s/", rc_transport_session_path(s->transport));
    return canvas_url(s, prefix, "session", rc_transport_session_key(s->transport, view_only), name, buf, cap);
}

/* ---- TLS ---- */

int rcanvas_server_tls_fingerprint(const rcanvas_server *s, char *buf, size_t cap) {
    if (!s || !buf || cap == 0) return RCANVAS_EINVAL;
    const char *fp = rc_transport_tls_fingerprint(s->transport);
    if (!fp) {
        buf[0] = '\0';
        return 0;
    }
    size_t n = strlen(fp);
    if (n >= cap) return RCANVAS_EINVAL;
    memcpy(buf, fp, n + 1);
    return (int)n;
}

int rcanvas_tls_self_signed(const char *dir, const char *extra_name, rcanvas_log_fn log, void *log_user,
                            char *cert_path, char *key_path, size_t cap, int *created) {
    if (!dir || !*dir || !cert_path || !key_path || cap == 0) return RCANVAS_EINVAL;
    rc_logger lg = {.fn = log, .user = log_user, .level = RCANVAS_LOG_INFO};
    int made = 0;
    int r = rc_tls_self_signed(dir, extra_name, &lg, cert_path, key_path, cap, &made);
    if (created) *created = made;
    return r;
}

int rcanvas_server_url(const rcanvas_server *s, const char *name, char *buf, size_t cap) {
    return server_url(s, s ? s->token : NULL, name, buf, cap);
}

int rcanvas_server_view_url(const rcanvas_server *s, const char *name, char *buf, size_t cap) {
    return server_url(s, s ? s->view_token : NULL, name, buf, cap);
}

/* ---- canvases ---- */

int rcanvas_canvas_new(rcanvas_server *s, const rcanvas_canvas_config *cfg, rcanvas_canvas **out) {
    if (!s || !cfg || !out) return RCANVAS_EINVAL;
    *out = NULL;
    rc_canvas_env env = {.pool = s->pool, .log = &s->log, .max_frame_dim = s->max_frame_dim,
                         .max_canvas_pixels = s->max_canvas_pixels, .max_pixel_ratio = s->max_pixel_ratio,
                         .notify = notify_transport, .notify_user = s, .owner = s};
    rcanvas_canvas *c = NULL;
    int r = rc_canvas_create(&env, cfg, &c);
    if (r) return r;
    pthread_mutex_lock(&s->mu);
    if (s->ncanvases == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        rcanvas_canvas **l = realloc(s->canvases, (size_t)cap * sizeof(*l));
        if (l) s->canvases = l, s->cap = cap;
    }
    r = s->ncanvases < s->cap ? rc_registry_add(s->registry, c) : RCANVAS_ENOMEM;
    if (!r) s->canvases[s->ncanvases++] = c;
    pthread_mutex_unlock(&s->mu);
    if (r) {
        rc_canvas_destroy(c);
        return r;
    }
    *out = c;
    return RCANVAS_OK;
}

void rcanvas_canvas_free(rcanvas_canvas *c) {
    if (!c) return;
    rcanvas_server *s = rc_canvas_owner(c);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->ncanvases; i++)
        if (s->canvases[i] == c) {
            s->canvases[i] = s->canvases[--s->ncanvases];
            break;
        }
    pthread_mutex_unlock(&s->mu);
    rc_registry_remove(s->registry, c); /* no new sessions */
    rc_canvas_close(c);                 /* the transport closes its sessions with 1001 */
    free_rtp_outputs(s, c);             /* and the RTP outputs theirs */
    rc_canvas_wait_sessions(c);
    rc_canvas_destroy(c);
}

/* ---- RTP outputs (src/transport/rtp.c) ---- */

int rcanvas_canvas_add_rtp_output(rcanvas_canvas *c, const rcanvas_rtp_config *cfg, rcanvas_rtp_output **out) {
    if (!c || !cfg || !out) return RCANVAS_EINVAL;
    *out = NULL;
    rcanvas_server *s = rc_canvas_owner(c);
    pthread_mutex_lock(&s->rtp_mu);
    if (s->nrtp == s->rtp_cap) {
        int cap = s->rtp_cap ? 2 * s->rtp_cap : 4;
        rcanvas_rtp_output **l = realloc(s->rtp, (size_t)cap * sizeof(*l));
        if (l) s->rtp = l, s->rtp_cap = cap;
    }
    int room = s->nrtp < s->rtp_cap;
    pthread_mutex_unlock(&s->rtp_mu);
    if (!room) return RCANVAS_ENOMEM;
    rcanvas_rtp_output *o = NULL;
    int r = rc_rtp_output_new(c, cfg, &s->log, &o);
    if (r) return r;
    pthread_mutex_lock(&s->rtp_mu);
    if (s->nrtp < s->rtp_cap) s->rtp[s->nrtp++] = o;
    else r = RCANVAS_ENOMEM; /* another thread took the room meanwhile */
    pthread_mutex_unlock(&s->rtp_mu);
    if (r) {
        rc_rtp_output_free(o);
        return r;
    }
    rc_rtp_output_wake(o); /* a packet made before it was in the list */
    *out = o;
    return RCANVAS_OK;
}

void rcanvas_rtp_output_free(rcanvas_rtp_output *o) {
    if (!o) return;
    rcanvas_server *s = rc_canvas_owner(rc_rtp_output_canvas(o));
    int found = 0;
    pthread_mutex_lock(&s->rtp_mu);
    for (int i = 0; i < s->nrtp && !found; i++)
        if (s->rtp[i] == o) {
            s->rtp[i] = s->rtp[--s->nrtp];
            found = 1;
        }
    pthread_mutex_unlock(&s->rtp_mu);
    if (found) rc_rtp_output_free(o);
}

int rcanvas_rtp_output_stats(rcanvas_rtp_output *o, rcanvas_rtp_stats *st) { return rc_rtp_output_get_stats(o, st); }
