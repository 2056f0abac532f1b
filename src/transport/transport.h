/* SPDX-License-Identifier: MIT */
/*
 * transport.h — private: the WebSocket transport as the runtime sees it. One libwebsockets context on its own
 * network thread serves the page, the embedded client and the WebSockets of every canvas in a registry. It
 * reaches the stream only through sessions (stream/session.h); the stream reaches it only through
 * rc_transport_wake().
 */
#ifndef RC_TRANSPORT_H
#define RC_TRANSPORT_H

#include <stddef.h>

#include "core/util.h"
#include "stream/session.h"

typedef struct rc_transport rc_transport;

typedef struct rc_transport_config {
    const char *host;                  /* address to bind */
    int port;                          /* 0 = any free port */
    const char *token;                 /* interactive access token (already validated) */
    const char *view_token;            /* view-only token (already validated; "" or NULL = none) */
    const char *const *allowed_origins;
    int n_allowed_origins;
    const char *const *allowed_hosts;  /* Host names accepted besides the bind's own (auth.h) */
    int n_allowed_hosts;
    const char *base_path;             /* prefix a proxy serves it under ("" or NULL = none; validated) */
    int max_viewers;                   /* WebSocket connections over all canvases */
    size_t max_message_bytes;
    int max_bad_messages;
    rc_registry *registry;             /* where canvases are found (outlives the transport) */
    const rc_logger *log;              /* outlives the transport */
    const char *tls_cert, *tls_key;    /* PEM files: https/wss only on the port; both NULL: plain */
    int ping_ms, idle_timeout_ms;      /* keep-alive ping and pong timeout (rcanvas_server_config); 0 = off */
} rc_transport_config;

/* Binds and listens (nothing is served until rc_transport_start). RCANVAS_OK and *out, RCANVAS_EADDRINUSE (the
 * port is taken), RCANVAS_ENET (other bind failure: bad host, no permission), RCANVAS_ETLS (a certificate or key
 * file that cannot be used; logged with the file), RCANVAS_ENOMEM. */
int rc_transport_new(const rc_transport_config *cfg, rc_transport **out);
/* Starts the network thread. RCANVAS_OK or RCANVAS_ETHREAD. */
int rc_transport_start(rc_transport *t);
/* The port actually bound. */
int rc_transport_port(const rc_transport *t);
/* The served certificate's SHA-256 fingerprint ("AB:CD:…"), or NULL without TLS. */
const char *rc_transport_tls_fingerprint(const rc_transport *t);
/* This process's session (auth.h): the secret path segment R and the session key S of a role (view_only 0:
 * interactive), NUL-terminated strings owned by the transport, fixed for its life. */
const char *rc_transport_session_path(const rc_transport *t);
const char *rc_transport_session_key(const rc_transport *t, int view_only);
/* Wakes the network thread: it asks every session for packets and state changes and runs the canvases' timers.
 * Any thread, any locks held; cheap (an eventfd write). */
void rc_transport_wake(rc_transport *t);
/* Stops the network thread and closes every connection (their sessions close), then frees. NULL ignored. */
void rc_transport_free(rc_transport *t);

#endif
