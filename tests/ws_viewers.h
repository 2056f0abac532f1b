/* SPDX-License-Identifier: MIT */
/*
 * ws_viewers.h — many raw WebSocket viewers of one rcanvas server on 127.0.0.1, all on one thread (epoll), for
 * the fan-out test and benchmark. Each viewer behaves as the browser client does on the wire (docs/protocol.md):
 * after the hello it sends its size (resize), and after the last tile of each frame it acks that frame's seq, so
 * the server's flow control runs as with real viewers; it does not decode (that is the browser's cost, not the
 * server's). Per viewer it counts frames, tiles and bytes, and on request keeps the last whole frame's tiles
 * (header + payload) for a test to decode.
 *
 * Threading: wsv_start() runs the viewers on their own thread; every other call may come from any one thread and
 * reads a consistent snapshot (one mutex). Not part of the library.
 */
#ifndef RC_WS_VIEWERS_H
#define RC_WS_VIEWERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct wsv_config {
    int port;                 /* the server's port on 127.0.0.1 */
    const char *token;        /* its token */
    const char *canvas;       /* NULL or "" = the default canvas */
    const char *codecs;       /* NULL: a protocol 1 viewer; else the upgrade URL's codecs= (protocol 2) */
    int n;                    /* viewers, 1..4096 */
    double width, height;     /* the resize each one sends after hello (CSS px); default 640 x 480 */
    double pixel_ratio;       /* default 1 */
    int keep_last;            /* keep the last whole frame of each viewer (wsv_last_frame) */
} wsv_config;

typedef struct wsv_viewer_stats {
    int state;                /* 0 connecting, 1 open, 2 closed, 3 refused / failed to connect */
    uint64_t frames;          /* whole frames received (last tile seen) and acked */
    uint64_t bytes;           /* binary bytes received (headers + payloads) */
    uint32_t last_seq;        /* seq of the last whole frame */
    uint32_t first_seq;       /* seq of its first whole frame */
    int64_t first_frame_us;   /* CLOCK_MONOTONIC µs when its first whole frame came; 0 = none yet */
    int hello;                /* the hello message came */
    char error[96];           /* why it was refused or closed ("" if it was not) */
} wsv_viewer_stats;

typedef struct wsv wsv;

/* Connects cfg->n viewers and serves them on a new thread. 0 and *out, or -1 (bad config, out of memory, no
 * thread). The viewers connect in the background: poll wsv_stats() for their state. */
int wsv_start(const wsv_config *cfg, wsv **out);
/* Stats of viewer i (0..n-1) now. */
void wsv_stats(wsv *w, int i, wsv_viewer_stats *out);
/* The sum over all viewers: frames and bytes; and how many are open, closed, refused. */
void wsv_totals(wsv *w, uint64_t *frames, uint64_t *bytes, int *open, int *closed, int *refused);
/* With keep_last: copies viewer i's last whole frame (every tile's message: 56-byte header + payload, back to
 * back) into a new malloc'd buffer (*out, *len; *ntiles tiles). 0, or -1 if it has none yet. */
int wsv_last_frame(wsv *w, int i, uint8_t **out, size_t *len, int *ntiles);
/* Closes every viewer, joins the thread, frees. NULL ignored. */
void wsv_stop(wsv *w);

#endif
