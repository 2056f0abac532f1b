/* SPDX-License-Identifier: MIT */
/*
 * rcanvas.h — the public header of rcanvas: a live canvas, rendered by a C program on the CPU or a GPU, shown in
 * any web browser over WebSockets, with input events sent back. GPU (Vulkan) frames: <rcanvas_vk.h>.
 *
 * Data path: rcanvas_present() copies a CPU frame (rcanvas_present_vk() reads a Vulkan image back into a ring of
 * staging buffers instead, and may JPEG-encode it on the GPU) → a pool of encoder threads encodes it once per
 * codec its viewers use: JPEG (libturbojpeg) or WebP in horizontal stripes on all cores, or video (H.264,
 * VP8/VP9, AV1) as one picture on the stream's own encoder → the network thread (libwebsockets) sends the newest
 * encoded frame to each viewer whose flow-control window allows (never a video frame whose reference it lacks) →
 * the browser client decodes (createImageBitmap, or WebCodecs for video), draws and acks it → events (pointer,
 * wheel, keys, resize) come back as JSON and queue up for the app. A still picture is refined losslessly (PNG or
 * WebP lossless).
 *
 * Conventions (see docs/architecture.md for the thread model):
 *  - Every function that can fail returns int: RCANVAS_OK (0) or a negative rcanvas_error; rcanvas_strerror() names it.
 *  - Handles are opaque. Structs passed in are copied; strings in them are copied too.
 *  - Sizes are in pixels, pitches in bytes, times in microseconds (µs) or milliseconds (ms) as named.
 *  - The library never prints: it logs through the callback in rcanvas_server_config.
 *  - Signals: rcanvas installs no handler. Its own threads (network, encoders, GPU readback, and the threads
 *    codec libraries start from them) block the asynchronous signals (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD,
 *    SIGUSR1, …; not the fault signals nor SIGPROF), so a Ctrl-C is delivered to one of the app's threads.
 *    No call is interrupted by a signal (none returns EINTR): to stop on Ctrl-C, set a flag in the handler and
 *    call rcanvas_wait() with a timeout (≤ 100 ms), as examples/hello does.
 */
#ifndef RCANVAS_H
#define RCANVAS_H

#include <stddef.h>
#include <stdint.h>

#include "rcanvas_export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RCANVAS_VERSION_MAJOR 0
#define RCANVAS_VERSION_MINOR 1
#define RCANVAS_PROTOCOL_VERSION 2 /* the newest wire protocol (docs/protocol.md); version 1 clients still work */

/* ---- Errors ------------------------------------------------------------------------------------------------ */

/* Every error: X(NAME, value, description). rcanvas_strerror() returns the description, rcanvas_err_name() the
 * name ("RCANVAS_EBUSY"); both come from this one table. */
#define RCANVAS_ERRORS(X)                                                                                        \
    X(OK, 0, "success")                                                                                          \
    X(EINVAL, -1, "invalid argument")                     /* NULL handle, out-of-range value */                  \
    X(ENOMEM, -2, "out of memory")                                                                               \
    X(EFRAME_SIZE, -3, "frame width or height is zero or above the maximum")                                     \
    X(EPITCH, -4, "row pitch is smaller than width times bytes per pixel")                                       \
    X(EFORMAT, -5, "unknown pixel format")                                                                       \
    X(ENULL, -6, "pixel pointer is NULL")                                                                        \
    X(ENET, -7, "cannot listen on the given host and port")  /* bad host, no permission */                      \
    X(ETHREAD, -8, "cannot start a thread")                                                                      \
    X(ECODEC, -9, "encoder library error")                /* libturbojpeg, libspng, … reported an error */       \
    X(ECLOSED, -10, "server or canvas is closing")                                                               \
    X(EEXIST, -11, "a canvas with this name exists")                                                             \
    X(ENAME, -12, "canvas name must be 0-64 characters of [A-Za-z0-9_-]")                                        \
    X(EIO, -13, "input/output error")                     /* reading or writing a file failed (tools) */         \
    X(EBUSY, -14, "every frame slot or staging buffer is in use; the frame was not taken")                       \
    X(EDEVICE_LOST, -15, "the Vulkan device was lost")    /* the rcanvas_vk must be freed */                     \
    X(EVULKAN, -16, "Vulkan error")                       /* out of device/host memory, unsupported device */    \
    X(EADDRINUSE, -17, "address already in use")          /* the port is taken by another program */          \
    X(ETLS, -18, "TLS certificate or key cannot be used") /* unreadable, not PEM, expired, key does not match */ \
    X(ENOTUSED, -19, "the encoded frame was not taken: present its pixels instead")                             \
    X(EDATA, -20, "encoded data is not a frame of the given codec and size")                                     \
    X(ESTALE, -21, "the frame referred to is no longer the newest")

typedef enum rcanvas_error {
#define RCANVAS_ERROR_ENUM_(name, value, text) RCANVAS_##name = value,
    RCANVAS_ERRORS(RCANVAS_ERROR_ENUM_)
#undef RCANVAS_ERROR_ENUM_
} rcanvas_error;

/* A static English description of an rcanvas_error ("unknown error" for other values). Any thread. */
RCANVAS_API const char *rcanvas_strerror(int err);
/* The name of an rcanvas_error, e.g. "RCANVAS_EBUSY" ("RCANVAS_UNKNOWN" for other values). Any thread. */
RCANVAS_API const char *rcanvas_err_name(int err);

/* ---- Logging ----------------------------------------------------------------------------------------------- */

typedef enum rcanvas_log_level {
    RCANVAS_LOG_ERROR = 0,
    RCANVAS_LOG_WARN = 1,
    RCANVAS_LOG_INFO = 2,
    RCANVAS_LOG_DEBUG = 3,
} rcanvas_log_level;

/* Called from any rcanvas thread (network, encoder or the caller's), never with a lock of the caller's held;
 * messages are one line without a trailing newline. Must be thread-safe and must not call back into rcanvas. */
typedef void (*rcanvas_log_fn)(void *user, rcanvas_log_level level, const char *message);

/* A log queue: a log function that never blocks the thread that logs, for a callback that could wait on a lock
 * the app holds (a language binding's interpreter lock: Python's ctypes callbacks take the GIL, so a Python log
 * callback stalled rcanvas' network thread, and every viewer with it, while the app ran a long C call). Pass
 * rcanvas_log_queue_fn as rcanvas_server_config.log with the queue as log_user; lines are copied into a bounded
 * queue, and another thread takes them with rcanvas_log_queue_pop. When the queue is full a line is dropped and
 * counted; the count comes with the next line popped. Any number of servers may share one queue. */
typedef struct rcanvas_log_queue rcanvas_log_queue;

/* A queue of at most max_lines lines (1..65536) of at most 1023 bytes each (longer ones are cut; the library's
 * lines are shorter). Returns RCANVAS_OK and *out, RCANVAS_EINVAL (out NULL, max_lines out of range) or
 * RCANVAS_ENOMEM. */
RCANVAS_API int rcanvas_log_queue_new(int max_lines, rcanvas_log_queue **out);

/* The rcanvas_log_fn of a queue (user: the rcanvas_log_queue). Copies the line under the queue's mutex, which no
 * other call holds for longer than a copy of one line; never waits for the reader. Any thread. */
RCANVAS_API void rcanvas_log_queue_fn(void *user, rcanvas_log_level level, const char *message);

/* Takes the oldest line: its text into buf (cap bytes, NUL-terminated, cut to fit), its level into *level and the
 * number of lines dropped since the previous pop (queue full) into *dropped (either pointer may be NULL). Waits
 * up to timeout_ms for one (0: no wait; < 0: until rcanvas_log_queue_close). Returns 1 (a line), 0 (none within
 * the timeout; *dropped still says what was dropped), RCANVAS_ECLOSED (closed and empty) or RCANVAS_EINVAL
 * (q or buf NULL, cap 0). One reader at a time is the intended use; several are safe. */
RCANVAS_API int rcanvas_log_queue_pop(rcanvas_log_queue *q, int timeout_ms, rcanvas_log_level *level, char *buf,
                                      size_t cap, uint64_t *dropped);

/* Wakes the readers and makes pop return RCANVAS_ECLOSED once the queue is empty; later lines are dropped. Any
 * thread. */
RCANVAS_API void rcanvas_log_queue_close(rcanvas_log_queue *q);

/* Frees the queue. Only once no server logs into it (after rcanvas_server_free of each) and no pop is under
 * way. NULL is a no-op. */
RCANVAS_API void rcanvas_log_queue_free(rcanvas_log_queue *q);

/* ---- Server ------------------------------------------------------------------------------------------------ */

typedef struct rcanvas_server rcanvas_server;
typedef struct rcanvas_canvas rcanvas_canvas;

typedef struct rcanvas_server_config {
    const char *host;             /* address to bind; default "127.0.0.1" (loopback only) */
    int port;                     /* TCP port; default 8080; 0 = any free port (read it back: rcanvas_server_port) */
    const char *token;            /* interactive access token: input, may become the active viewer. [A-Za-z0-9_-],
                                     22–128 bytes (≥ 128 bits of base64url); NULL (default) = 128 random bits, hex
                                     (32 characters) from getrandom(2). Accepted as ?token=, as an
                                     `Authorization: Bearer` header, or as the HttpOnly, SameSite=Strict cookie
                                     that a page request with ?token= sets (docs/security.md) */
    const char *view_token;       /* view-only token: its viewers get frames, their input is dropped and they never
                                     become active. Same rule as token, must differ from it; NULL (default) =
                                     128 random bits, as token */
    const char *const *allowed_origins; /* extra Origin values accepted on the WebSocket upgrade, e.g.
                                     "https://notebook.example.org"; the server's own origin (same Host) is always
                                     accepted; default NULL */
    int n_allowed_origins;
    const char *const *allowed_hosts; /* Host header names accepted (any port), against DNS rebinding: a request
                                     with another Host gets 403, one without 400. Bound to loopback (127.x, ::1,
                                     localhost) the server takes localhost, 127.0.0.1 and [::1] without a list;
                                     another bind takes its own address, and the names a browser reaches it by
                                     must be listed here (e.g. "viz.example.org"); "*" = any (only behind a proxy
                                     that checks Host itself). Default NULL */
    int n_allowed_hosts;
    const char *base_path;        /* URL prefix a reverse proxy serves the server under, e.g. "/viz": requests
                                     under it are served as if it were not there (a proxy may keep or strip it),
                                     rcanvas_server_url includes it, the cookie is scoped to it. "/"-separated
                                     segments of [A-Za-z0-9._~-]; NULL or "" (default) = none. The page asks for
                                     its script and WebSocket by relative URLs in any case */
    int max_viewers;              /* simultaneous WebSocket viewers over all canvases; one more is refused with
                                     HTTP 503 "too many viewers" (the browser client retries). Default 256. Each
                                     viewer holds one file descriptor and about 11 KiB of memory, plus its socket's
                                     buffers (at most max_in_flight frames queued); the server's CPU per
                                     viewer-frame is in docs/benchmarks.md (bench-fanout). A value that the
                                     process's file limit cannot hold is lowered to `ulimit -n` − 64 with a
                                     warning in the log (so that one more viewer still gets its 503 rather than a
                                     connection that is never accepted); raise the limit for more. */
    size_t max_message_bytes;     /* largest client→server message (bytes); larger closes the connection with
                                     1009; default 4096 */
    int max_bad_messages;         /* malformed client messages tolerated per connection before it is closed
                                     with 1008 (each is dropped; logged at most once per 5 s over all
                                     viewers, the rest counted); default 20 */
    int encode_threads;           /* encoder worker threads; 0 (default) = number of online cores */
    uint32_t max_frame_dim;       /* largest frame width or height accepted (pixels); default 8192 */
    rcanvas_log_fn log;           /* default NULL = no logging. Lines a peer can repeat at will (refusals, bad
                                     messages, libwebsockets' own) come at most once per kind per 5 s, then with
                                     a count of those left out (issue 11) */
    void *log_user;
    rcanvas_log_level log_level;  /* most verbose level passed to log; default RCANVAS_LOG_INFO */
    /* TLS (issue 11): both set = the one port speaks https and wss only (libwebsockets with OpenSSL; TLS 1.2 and
     * up); a plain-HTTP request on it is answered 400 "this server speaks https" and closed. Both NULL (default) =
     * plain http and ws. Paths of PEM files, read once by rcanvas_server_new (a renewed certificate needs a new
     * server): tls_cert holds the server's certificate, then any intermediate certificates; tls_key its private
     * key, unencrypted (keep it 0600). A file that cannot be read, is not PEM, a certificate that has expired or
     * a key that does not belong to it makes rcanvas_server_new return RCANVAS_ETLS, with a log line naming the
     * file and the reason. rcanvas_tls_self_signed() makes a pair for testing or a private network. */
    const char *tls_cert;
    const char *tls_key;
    /* Bounds (docs/security.md, "Limits"). A viewer's resize asks for logical size × pixel_ratio physical
     * pixels; the canvas renders at most this: pixel_ratio is first capped at max_pixel_ratio, then lowered
     * (keeping the aspect) until width × height ≤ max_canvas_pixels, each side ≤ max_frame_dim and the canvas's
     * codec can encode the frame (H.264: 36864 macroblocks; a codec change clamps again). The resize event the
     * app gets carries the ratio actually used (logical size unchanged), rcanvas_canvas_get_size too. */
    uint64_t max_canvas_pixels;   /* physical pixels of one canvas, 1..2^32; default 7680 × 4320 (33.2 Mpx: an 8K
                                     screen, or 3840 × 2160 at ratio 2): ≈ 133 MB per RGBA frame */
    double max_pixel_ratio;       /* physical/logical ratio, (0, 16]; default 8 */
    int ping_ms;                  /* a viewer silent this long (ms) is sent a WebSocket ping (so idle proxies keep
                                     the connection); 0 = never. Default 5000. libwebsockets counts in whole
                                     seconds: rounded up */
    int idle_timeout_ms;          /* a viewer that answers no ping (no pong) for this long (ms) is dropped, its slot
                                     freed: a stuck client, one that never reads (its socket's buffers full), or a
                                     dead link. > ping_ms (and ping_ms > 0); 0 = never. Default 20000; whole
                                     seconds, rounded up */
} rcanvas_server_config;

/* Fills *cfg with the defaults above. */
RCANVAS_API void rcanvas_server_config_init(rcanvas_server_config *cfg);

/* Creates a server, binds and listens, and starts its network thread and encoder threads.
 * Returns RCANVAS_OK and *out, or RCANVAS_EINVAL (bad config; a refused token is logged with the rule),
 * RCANVAS_EADDRINUSE (the port is taken on that host: another server listens there), RCANVAS_ENET (cannot listen
 * for another reason, e.g. an address not of this machine or a port below 1024 without privilege; logged),
 * RCANVAS_ENOMEM, RCANVAS_ETHREAD. Call from any thread; one server is independent of another. */
RCANVAS_API int rcanvas_server_new(const rcanvas_server_config *cfg, rcanvas_server **out);

/* Stops the network thread (closing every viewer with 1001 "going away") and the encoder threads, frees all
 * canvases still attached, and frees the server. Blocks until every thread has joined (typically < 50 ms).
 * Any rcanvas_wait() blocked on one of its canvases returns RCANVAS_ECLOSED before the canvas is freed, so the
 * app must stop calling into those canvases first (join its render threads). NULL is ignored. */
RCANVAS_API void rcanvas_server_free(rcanvas_server *server);

/* The TCP port actually bound (useful with port 0), or RCANVAS_EINVAL for a NULL server. */
RCANVAS_API int rcanvas_server_port(const rcanvas_server *server);

/* The interactive access token (NUL-terminated, owned by the server). */
RCANVAS_API const char *rcanvas_server_token(const rcanvas_server *server);
/* The view-only token (NUL-terminated, owned by the server). */
RCANVAS_API const char *rcanvas_server_view_token(const rcanvas_server *server);

/* Writes the URL of a canvas ("http://HOST:PORT[BASE]/[c/NAME]?token=TOKEN"; https:// with TLS; the interactive
 * token) into buf (cap bytes, NUL-terminated). name NULL or "" = the default canvas. Returns the length, or
 * RCANVAS_EINVAL if cap is too small. */
RCANVAS_API int rcanvas_server_url(const rcanvas_server *server, const char *name, char *buf, size_t cap);
/* The same with the view-only token. */
RCANVAS_API int rcanvas_server_view_url(const rcanvas_server *server, const char *name, char *buf, size_t cap);

/* The URL of a canvas by this server process's session instead of a token:
 * "http://HOST:PORT[BASE]/s/R/[c/NAME]?session=S", R the process's secret path segment and S the session key of the
 * role (view_only 0: interactive), both random per server process (docs/security.md). For a client that opens the
 * canvas from another origin and can keep no cookie (a notebook widget): what it sends, reconnects included, opens
 * nothing once this process has ended, so a listener that takes the port over learns nothing reusable, where a
 * token (which a --token-file or a notebook kernel keeps across restarts) would open the next server. Into buf (cap
 * bytes, NUL-terminated); returns the length, or RCANVAS_EINVAL (NULL server or buf, cap too small). Any thread. */
RCANVAS_API int rcanvas_server_session_url(const rcanvas_server *server, const char *name, int view_only, char *buf,
                                           size_t cap);

/* ---- TLS (issue 11) -------------------------------------------------------------------------------------- */

/* The SHA-256 fingerprint of the certificate the server presents, as `openssl x509 -noout -fingerprint -sha256`
 * prints it ("AB:CD:…", 95 characters), so that a user can check what the browser shows before accepting a
 * self-signed certificate. Writes it into buf (cap ≥ 96 bytes). Returns its length, RCANVAS_EINVAL (NULL
 * server or buf, cap too small), or 0 and "" when the server has no TLS. Any thread. */
RCANVAS_API int rcanvas_server_tls_fingerprint(const rcanvas_server *server, char *buf, size_t cap);

/* A self-signed certificate kept in dir, for rcanvas_server_config.tls_cert/tls_key: DIR/cert.pem and
 * DIR/key.pem (0600). Made at the first call (an EC P-256 key; valid 10 years; subjectAltName localhost,
 * 127.0.0.1, ::1, this machine's host name and extra_name, an address or DNS name such as the host the server
 * binds; NULL for none) and kept: later calls return the same files while the certificate has not expired.
 * dir is created (0700) with its parents; an existing dir is made 0700 (and a key.pem readable by others 0600), with
 * a warning, and one owned by another user is refused (RCANVAS_EIO). The paths come back in cert_path and key_path (cap bytes each);
 * *created (may be NULL) says whether the files were made now. log/log_user: as in rcanvas_server_config (NULL
 * = silent); a failure is logged with the path and the reason. Returns RCANVAS_OK, RCANVAS_EINVAL (NULL or empty
 * dir, cap too small), RCANVAS_EIO (cannot create or secure the folder, or write a file), RCANVAS_ETLS (OpenSSL failed).
 * Any thread; two processes racing on one dir may each write a pair, and the last one wins. */
RCANVAS_API int rcanvas_tls_self_signed(const char *dir, const char *extra_name, rcanvas_log_fn log,
                                        void *log_user, char *cert_path, char *key_path, size_t cap,
                                        int *created);

/* ---- Canvases ---------------------------------------------------------------------------------------------- */

/* When a draw is due (rcanvas_wait). Same modes as rendercanvas. */
typedef enum rcanvas_update_mode {
    RCANVAS_UPDATE_MANUAL = 0,     /* never due; the app presents when it likes */
    RCANVAS_UPDATE_ONDEMAND = 1,   /* due after rcanvas_request_draw(), a resize, or a first viewer; ≤ max_fps */
    RCANVAS_UPDATE_CONTINUOUS = 2, /* due every 1/max_fps s while a viewer watches and flow control allows */
    RCANVAS_UPDATE_FASTEST = 3,    /* due whenever flow control allows; max_fps ignored */
} rcanvas_update_mode;

/* Every codec: X(NAME, value, "name", wire), the one list of codec names (rcanvas_codec_name and _from_name read
 * it, and the demo's --codec; the Python package's and the browser client's tables are checked against it by
 * tests). wire 1: the value is also a codec id of the frame header (docs/protocol.md), the name one a viewer may
 * list among the codecs it decodes; 0: not (AUTO). A codec is what the viewer decodes; which encoder makes it is a
 * choice of its own, by name (rcanvas_canvas_set_encoder: "h264-gpu" codes H264 on the GPU).
 *   AUTO      per viewer, the first it decodes of H.264, VP9, VP8 (those built in), else JPEG
 *   JPEG      libturbojpeg; lossy; quality and subsampling apply
 *   PNG       libspng; lossless; RGB8, filter none, zlib level 1
 *   H264      openh264 (or the encoder "h264-gpu"); constrained baseline, no B-frames: decoded by the browser's
 *             WebCodecs
 *   VP8       libvpx, real-time
 *   VP9       libvpx, real-time, row-mt
 *   AV1       libaom real-time; opt-in (not in AUTO): 3.5–5× H.264's CPU at 1080p
 *   WEBP      libwebp, lossy image; quality applies */
#define RCANVAS_CODECS(X)                                                                                        \
    X(AUTO, 0, "auto", 0)                                                                                        \
    X(JPEG, 1, "jpeg", 1)                                                                                        \
    X(PNG, 2, "png", 1)                                                                                          \
    X(H264, 3, "h264", 1)                                                                                        \
    X(VP8, 4, "vp8", 1)                                                                                          \
    X(VP9, 5, "vp9", 1)                                                                                          \
    X(AV1, 6, "av1", 1)                                                                                          \
    X(WEBP, 7, "webp", 1)

typedef enum rcanvas_codec {
#define RCANVAS_CODEC_ENUM_(name, value, text, wire) RCANVAS_CODEC_##name = value,
    RCANVAS_CODECS(RCANVAS_CODEC_ENUM_)
#undef RCANVAS_CODEC_ENUM_
} rcanvas_codec;

/* A codec's name ("jpeg", "h264"), or NULL for a value not in RCANVAS_CODECS. Any thread. */
RCANVAS_API const char *rcanvas_codec_name(int codec);
/* The codec of that name (as rcanvas_codec_name gives it), or RCANVAS_EINVAL (NULL, unknown name). Any thread. */
RCANVAS_API int rcanvas_codec_from_name(const char *name);

typedef enum rcanvas_subsampling {
    RCANVAS_SUBSAMP_420 = 0,  /* chroma halved both ways (smallest) */
    RCANVAS_SUBSAMP_444 = 1,  /* full chroma (sharp colored text and lines; about 1.4x the bytes of a plot) */
    RCANVAS_SUBSAMP_AUTO = 2, /* default: per stripe or tile, from its pixels: 4:4:4 where 4:2:0 would blur
                                 colour detail (thin coloured lines, coloured text), else 4:2:0 (src/codec/jpeg.c,
                                 chroma_needs_444). The GPU JPEG encoder takes AUTO as 4:2:0. */
} rcanvas_subsampling;

typedef struct rcanvas_canvas_config {
    const char *name;          /* "" or NULL (default) = the default canvas at "/"; else served at "/c/NAME" */
    const char *title;         /* shown in the page; default "rcanvas" */
    uint32_t width, height;    /* initial logical size (CSS pixels) until a viewer reports its own; 640×480 */
    double pixel_ratio;        /* initial physical/logical ratio; default 1.0 */
    rcanvas_update_mode update_mode; /* default RCANVAS_UPDATE_ONDEMAND */
    double max_fps;            /* cap for ONDEMAND and CONTINUOUS (frames/s, 0–1000); 0 = no cap: a draw is due
                                  whenever flow control allows (as in FASTEST); default 60 */
    int max_in_flight;         /* frames sent to the active viewer and not yet acked before no draw is due; 2 */
    rcanvas_codec codec;       /* codec of live frames; default RCANVAS_CODEC_JPEG */
    int quality;               /* JPEG quality 1–100; default 85 */
    rcanvas_subsampling subsampling; /* JPEG chroma subsampling; default RCANVAS_SUBSAMP_AUTO */
    int refine_ms;             /* after this many ms without a new frame, the last frame is sent again as PNG to
                                  each viewer that has only its lossy version; 0 = never; default 300 */
} rcanvas_canvas_config;

/* Fills *cfg with the defaults above. */
RCANVAS_API void rcanvas_canvas_config_init(rcanvas_canvas_config *cfg);

/* Adds a canvas to the server. Returns RCANVAS_OK and *out, RCANVAS_EINVAL (bad config value), RCANVAS_ENAME,
 * RCANVAS_EEXIST, RCANVAS_ENOMEM. Any thread. The canvas lives until rcanvas_canvas_free() or the server's free. */
RCANVAS_API int rcanvas_canvas_new(rcanvas_server *server, const rcanvas_canvas_config *cfg, rcanvas_canvas **out);

/* Detaches the canvas (its viewers are closed with 1001) and frees it. Waits for its encodes to finish. NULL is
 * ignored. No other thread may be inside a call on this canvas. */
RCANVAS_API void rcanvas_canvas_free(rcanvas_canvas *canvas);

/* Sets the title (≤ 255 bytes UTF-8; longer is cut at a character boundary); viewers are told at once.
 * RCANVAS_OK, or RCANVAS_EINVAL (NULL canvas or title). Any thread. */
RCANVAS_API int rcanvas_canvas_set_title(rcanvas_canvas *canvas, const char *title);

/* Sets the mouse cursor viewers see over the canvas (issue 12, for rendercanvas' set_cursor): a CSS cursor
 * keyword such as "default", "pointer", "crosshair", "grab", "ns-resize" or "none" (1–31 bytes of [a-z-]; the
 * browser shows its default for a keyword it does not know). Viewers are told at once ({"type":"cursor"}), a
 * viewer that connects later with its hello. RCANVAS_OK, or RCANVAS_EINVAL (NULL canvas, NULL or empty cursor,
 * another character or length: nothing changes). Any thread. */
RCANVAS_API int rcanvas_canvas_set_cursor(rcanvas_canvas *canvas, const char *cursor);

/* Chooses the encoder of the following frames by its name (rcanvas_encoder_name lists this build's): the canvas's
 * codec becomes the one it produces, as with RCANVAS_OPT_CODEC, and quality and subsampling stay. "h264-gpu" is
 * H.264 coded in Vulkan compute shaders on the first GPU (rcanvas's own device), for GPUs without a video engine;
 * the canvas falls back to its codec's default encoder (openh264) where none runs it (a CPU device such as lavapipe
 * only with RCANVAS_GPU_CODEC_DEVICE=any) or a frame fails. A codec's name ("h264", "jpeg", "auto") chooses that
 * codec with its default encoder. RCANVAS_OK, or RCANVAS_EINVAL (NULL, a name this build has no encoder of: nothing
 * changes). Any thread. */
RCANVAS_API int rcanvas_canvas_set_encoder(rcanvas_canvas *canvas, const char *name);
/* The name of this build's encoder i that rcanvas_canvas_set_encoder takes (i = 0, 1, …: "jpeg", "png", "h264",
 * "h264-gpu", …), or NULL past the last. Any thread. */
RCANVAS_API const char *rcanvas_encoder_name(int i);
/* The encoder a canvas's live frames come from for viewers of its codec (a name of rcanvas_encoder_name's; its
 * codec's default where the one chosen cannot run), or NULL (NULL canvas, codec AUTO). A change of encoder takes
 * effect when no encode is running: until then this names the one before. Any thread. */
RCANVAS_API const char *rcanvas_canvas_encoder(rcanvas_canvas *canvas);

/* Changes the codec and its parameters for the following frames (quality 1–100): the same as setting
 * RCANVAS_OPT_CODEC, _QUALITY and _SUBSAMPLING (rcanvas_canvas_set_option), at once. RCANVAS_OK, or RCANVAS_EINVAL
 * (NULL canvas, a value out of range: nothing changes). Any thread. */
RCANVAS_API int rcanvas_canvas_set_codec(rcanvas_canvas *canvas, rcanvas_codec codec, int quality,
                                         rcanvas_subsampling ss);

/* Codec and stream options, set one at a time (in the style of tj3Set / spng_set_option), so new codecs add
 * options without changing signatures. Values are ints in the units named. */
/* Every option: X(NAME, value, "name"), the one list of option names (rcanvas_option_name and _from_name read it;
 * the Python package's table is checked against it by a test).
 *   CODEC              rcanvas_codec of live frames
 *   QUALITY            JPEG quality 1–100
 *   SUBSAMPLING        rcanvas_subsampling
 *   REFINE_MS          ms still before the lossless refinement, ≥ 0 (0 = never)
 *   MAX_IN_FLIGHT      1–16 frames
 *   UPDATE_MODE        rcanvas_update_mode
 *   MAX_FPS            frames/s, 0–1000 (0 = no cap); get rounds a fractional config value
 *   BITRATE_KBPS       the video bitrate's top, kbit/s, 100–200000 (default 50000): each tier's encoder aims at its
 *                      viewers' link up to it
 *   KEYFRAME_INTERVAL  video: a keyframe every N frames, 0 (default) = only when a viewer needs one
 *   ENCODER_THREADS    video encoder threads, 0 (default) = the server's encode_threads (VP8: 1)
 *   REFINE_CODEC       the lossless refinement: RCANVAS_CODEC_PNG (default; libspng, fast) or RCANVAS_CODEC_WEBP
 *                      (WebP lossless: about half the bytes, 5× the CPU)
 *   RATE_ADAPT         1 (default): each viewer's frames follow the link it is on (quality or video bitrate, then
 *                      frame rate, then size: docs/protocol.md, "Rate adaptation"); 0: the configured quality,
 *                      bitrate and size whatever the link (flow control still keeps a few frames in flight)
 *   LIVE_QUALITY       read only: the JPEG quality (1–100) the next live frame is coded at for the viewers of the
 *                      canvas's codec (the rate adaptation's, ≤ RCANVAS_OPT_QUALITY), or 0 while the adaptation
 *                      shrinks or caps their frames or their codec is not JPEG: what an app that encodes its own
 *                      frames (rcanvas_present_encoded) codes at. Setting it is RCANVAS_EINVAL */
#define RCANVAS_OPTIONS(X)                                                                                       \
    X(CODEC, 1, "codec")                                                                                         \
    X(QUALITY, 2, "quality")                                                                                     \
    X(SUBSAMPLING, 3, "subsampling")                                                                             \
    X(REFINE_MS, 4, "refine_ms")                                                                                 \
    X(MAX_IN_FLIGHT, 5, "max_in_flight")                                                                         \
    X(UPDATE_MODE, 6, "update_mode")                                                                             \
    X(MAX_FPS, 7, "max_fps")                                                                                     \
    X(BITRATE_KBPS, 8, "bitrate_kbps")                                                                           \
    X(KEYFRAME_INTERVAL, 9, "keyframe_interval")                                                                 \
    X(ENCODER_THREADS, 10, "encoder_threads")                                                                    \
    X(REFINE_CODEC, 11, "refine_codec")                                                                          \
    X(RATE_ADAPT, 12, "rate_adapt")                                                                              \
    X(LIVE_QUALITY, 13, "live_quality")

typedef enum rcanvas_option {
#define RCANVAS_OPTION_ENUM_(name, value, text) RCANVAS_OPT_##name = value,
    RCANVAS_OPTIONS(RCANVAS_OPTION_ENUM_)
#undef RCANVAS_OPTION_ENUM_
} rcanvas_option;

/* An option's name ("max_in_flight"), or NULL for a value not in RCANVAS_OPTIONS. Any thread. */
RCANVAS_API const char *rcanvas_option_name(int option);
/* The option of that name, or RCANVAS_EINVAL (NULL, unknown name). Any thread. */
RCANVAS_API int rcanvas_option_from_name(const char *name);

/* Sets an option for the following frames. RCANVAS_OK, or RCANVAS_EINVAL (NULL canvas, unknown option, value out
 * of range: nothing changes). Any thread. */
RCANVAS_API int rcanvas_canvas_set_option(rcanvas_canvas *canvas, rcanvas_option option, int value);
/* Reads an option into *value. RCANVAS_OK or RCANVAS_EINVAL. Any thread. */
RCANVAS_API int rcanvas_canvas_get_option(rcanvas_canvas *canvas, rcanvas_option option, int *value);

/* Size the app should render at: the active viewer's logical size (CSS pixels), its devicePixelRatio, and the
 * physical size = round(logical × ratio), clamped to max_frame_dim. Any thread. */
typedef struct rcanvas_size {
    double width, height;      /* logical */
    double pixel_ratio;
    uint32_t physical_width, physical_height;
} rcanvas_size;
RCANVAS_API void rcanvas_canvas_get_size(rcanvas_canvas *canvas, rcanvas_size *out);

/* Number of viewers connected to this canvas right now (≥ 0), or RCANVAS_EINVAL for a NULL canvas. Any thread. */
RCANVAS_API int rcanvas_canvas_viewer_count(rcanvas_canvas *canvas);

/* ---- Frames in --------------------------------------------------------------------------------------------- */

typedef enum rcanvas_pixel_format {
    RCANVAS_FORMAT_RGBA8 = 1, /* bytes R,G,B,A; alpha ignored (frames are shown opaque) */
    RCANVAS_FORMAT_BGRA8 = 2, /* bytes B,G,R,A */
    RCANVAS_FORMAT_RGBX8 = 3, /* bytes R,G,B,unused */
} rcanvas_pixel_format;

/* A CPU frame: width × height pixels, row r starting at pixels + r × pitch. */
typedef struct rcanvas_frame {
    const void *pixels;
    uint32_t width, height;        /* pixels, 1..max_frame_dim, and what the canvas's codec encodes: JPEG (and
                                      AUTO) 65500 a side, WebP and VP8 16383, H.264 36864 macroblocks (16 × 16)
                                      a frame, e.g. 4096 × 2304; else RCANVAS_EFRAME_SIZE at once */
    size_t pitch;                  /* bytes from one row to the next, ≥ width × 4 */
    rcanvas_pixel_format format;
    int64_t timestamp_us;          /* the app's time for this frame (µs); optional, 0 if unused. Not sent to viewers
                                      in protocol 1: the wire header carries the server's present time instead */
} rcanvas_frame;

/* Hands a frame to rcanvas. The pixels are copied before it returns (≈ 1–2 ms for 1920×1080 on one core), so the
 * app may reuse its buffer at once; it never waits on the network or on an encoder. A newer frame replaces one
 * that has not started encoding. Any thread, but at most one thread at a time per canvas.
 * Errors (nothing is changed): RCANVAS_EINVAL (NULL canvas/frame), RCANVAS_ENULL, RCANVAS_EFRAME_SIZE,
 * RCANVAS_EPITCH, RCANVAS_EFORMAT, RCANVAS_ENOMEM, RCANVAS_ECLOSED, RCANVAS_EBUSY (all frame slots taken: the
 * canvas keeps 5 — one being filled, one pending, one encoding, the newest encoded and one being refined — so
 * this happens only when several threads present on one canvas at once, which the threading rule forbids; the
 * same code as rcanvas_present_vk() when its ring is full). */
RCANVAS_API int rcanvas_present(rcanvas_canvas *canvas, const rcanvas_frame *frame);

/* A frame the app encoded itself, e.g. JPEG on the GPU it renders with (Python: rcanvas.jpeg_wgpu, "jpeg-wgpu"),
 * so that only the encoded bytes leave the GPU. */
typedef struct rcanvas_encoded_frame {
    const void *data;          /* one complete baseline (SOF0) JFIF file, SOI to EOI; copied before the call returns */
    size_t size;               /* bytes, 4 .. 256 MiB */
    uint32_t width, height;    /* the picture's size in pixels (the SOF0's), within max_frame_dim */
    rcanvas_codec codec;       /* RCANVAS_CODEC_JPEG (the only one for now) */
    int quality;               /* the quality it was coded at, 1–100: the bytes serve while the canvas asks for at
                                  least that (RCANVAS_OPT_LIVE_QUALITY; never above RCANVAS_OPT_QUALITY) */
    const char *encoder;       /* the encoder's name viewers are told ("encoder" message, stats): "jpeg-wgpu", or
                                  NULL for "jpeg-app" */
} rcanvas_encoded_frame;

/* Hands an encoded frame to rcanvas. It is taken (RCANVAS_OK) when it can be sent as it is: the canvas's codec is
 * the frame's, all its viewers share one encoder setting (one rate group: a viewer on a much slower link has its
 * own), the rate adaptation asks for at least the frame's quality at full size and rate, no encode of an earlier
 * frame is running, and the frame is not one small enough to go lossless. Otherwise RCANVAS_ENOTUSED, and nothing
 * changed: present the same frame's pixels with rcanvas_present() instead (the next frame may be taken again). A
 * taken frame's pixels are not in rcanvas: when it needs them (the lossless refinement of a still picture, a
 * keyframe for a viewer of another rate group), rcanvas_wait() returns RCANVAS_WAKE_PIXELS once for that frame, and
 * the app hands them over with rcanvas_present_pixels().
 * Errors (nothing changed): RCANVAS_EINVAL (NULL canvas/frame/data, size, quality or codec out of range, an
 * encoder name other than "jpeg-wgpu"), RCANVAS_EDATA (not a baseline JPEG of width × height: SOI, SOF0 and EOI
 * are checked, not the entropy-coded data), RCANVAS_EFRAME_SIZE, RCANVAS_ENOMEM, RCANVAS_ECLOSED, RCANVAS_EBUSY
 * (as rcanvas_present). Threading: rcanvas_present, rcanvas_present_encoded, rcanvas_present_pixels and a frame
 * source's presents (rcanvas_present_vk) are one at a time per canvas, from any thread. */
RCANVAS_API int rcanvas_present_encoded(rcanvas_canvas *canvas, const rcanvas_encoded_frame *frame);

/* The pixels of the newest frame, which came encoded without them (rcanvas_present_encoded), after
 * RCANVAS_WAKE_PIXELS: they are copied (as rcanvas_present does) and serve its lossless refinement and any viewer
 * that needs it encoded again; the frame is not sent again. The size must be the encoded frame's.
 * RCANVAS_OK; RCANVAS_ESTALE when the newest frame is another one (a newer frame came, or it already has its
 * pixels): nothing to do; RCANVAS_EFRAME_SIZE (not the frame's size), and rcanvas_present's other errors.
 * Threading: one at a time with the canvas's other presents (rcanvas_present_encoded). */
RCANVAS_API int rcanvas_present_pixels(rcanvas_canvas *canvas, const rcanvas_frame *frame);

/* ---- Scheduling -------------------------------------------------------------------------------------------- */

/* Bits returned by rcanvas_wait(). */
#define RCANVAS_WAKE_DRAW 1   /* a draw is due: render and rcanvas_present() now */
#define RCANVAS_WAKE_EVENTS 2 /* events are queued: drain them with rcanvas_poll_event() */
#define RCANVAS_WAKE_PIXELS 4 /* the newest frame came encoded (rcanvas_present_encoded) and its pixels are needed:
                                 rcanvas_present_pixels() them (returned once per frame) */

/* Blocks until a draw is due or events are queued (or, for an app that presents encoded frames, their pixels are
 * needed: RCANVAS_WAKE_PIXELS), at most timeout_ms (−1 = no limit, 0 = just check).
 * Returns a mask of RCANVAS_WAKE_* (a returned draw is consumed: the next call waits for the next one), 0 on
 * timeout, or RCANVAS_ECLOSED once the server is stopping. A draw is due per the update mode and max_fps, only
 * while at least one viewer is connected, and only while the active viewer holds fewer than max_in_flight
 * frames that it has not acked (frames still encoding count as in flight). The app's render loop is:
 *     for (;;) { int w = rcanvas_wait(c, -1); if (w < 0) break;
 *                while (rcanvas_poll_event(c, &ev) == 1) handle(&ev);
 *                if (w & RCANVAS_WAKE_DRAW) { render(); rcanvas_present(c, &frame); } }
 * RCANVAS_EINVAL for a NULL canvas. One thread at a time per canvas. A signal handler running meanwhile does
 * not end the wait (it goes on to its deadline): wait with a timeout where a signal must stop the loop. */
RCANVAS_API int rcanvas_wait(rcanvas_canvas *canvas, int timeout_ms);

/* Asks for a draw (ONDEMAND mode; in MANUAL mode it is ignored). Any thread; wakes rcanvas_wait(). */
RCANVAS_API void rcanvas_request_draw(rcanvas_canvas *canvas);

/* ---- Events (renderview spec, as in rendercanvas / jupyter_rfb) ------------------------------------------- */

/* Every event type: X(NAME, value, "name"), the one list of event names: the spec's event_type strings, which the
 * client sends and rcanvas_event_type_name gives back (the Python package's and the browser client's tables are
 * checked against it by tests). */
#define RCANVAS_EVENTS(X)                                                                                        \
    X(POINTER_DOWN, 1, "pointer_down")                                                                           \
    X(POINTER_UP, 2, "pointer_up")                                                                               \
    X(POINTER_MOVE, 3, "pointer_move")                                                                           \
    X(POINTER_ENTER, 4, "pointer_enter")                                                                         \
    X(POINTER_LEAVE, 5, "pointer_leave")                                                                         \
    X(DOUBLE_CLICK, 6, "double_click")                                                                           \
    X(WHEEL, 7, "wheel")                                                                                         \
    X(KEY_DOWN, 8, "key_down")                                                                                   \
    X(KEY_UP, 9, "key_up")                                                                                       \
    X(CHAR, 10, "char")                                                                                          \
    X(RESIZE, 11, "resize")                                                                                      \
    X(CLOSE, 12, "close")

typedef enum rcanvas_event_type {
#define RCANVAS_EVENT_ENUM_(name, value, text) RCANVAS_EVENT_##name = value,
    RCANVAS_EVENTS(RCANVAS_EVENT_ENUM_)
#undef RCANVAS_EVENT_ENUM_
} rcanvas_event_type;

/* Modifier bits (spec: modifiers is a list of "Shift", "Control", "Alt", "Meta"). */
#define RCANVAS_MOD_SHIFT 1u
#define RCANVAS_MOD_CONTROL 2u
#define RCANVAS_MOD_ALT 4u
#define RCANVAS_MOD_META 8u

/* Buttons as in the spec: 0 none, 1 left, 2 right, 3 middle, 4 back, 5 forward. The spec's `buttons` list is the
 * bit mask `buttons` here: bit (1 << b) set while button b is held. */
#define RCANVAS_MAX_TOUCHES 10
typedef struct rcanvas_touch {
    int32_t id;
    double x, y;      /* logical pixels */
    double pressure;  /* 0..1 */
} rcanvas_touch;

typedef struct rcanvas_event {
    rcanvas_event_type type;
    double time_stamp;          /* seconds, the browser's clock (spec field time_stamp) */
    int64_t server_time_us;     /* when the server received it (CLOCK_MONOTONIC, µs) */
    uint32_t viewer_id;         /* which viewer sent it (1, 2, …); 0 for events rcanvas made (close) */
    /* pointer_*, double_click, wheel: position in logical pixels from the canvas's top-left */
    double x, y;
    int button;                 /* pointer_* and double_click */
    uint32_t buttons;           /* bit mask, see above */
    uint32_t modifiers;         /* RCANVAS_MOD_* bits; also for key_* and char */
    int ntouches;
    rcanvas_touch touches[RCANVAS_MAX_TOUCHES];
    double dx, dy;              /* wheel: logical pixels; merged wheel events are summed */
    char key[32];               /* key_down/key_up: KeyboardEvent.key, e.g. "a", "Enter", "ArrowLeft" (UTF-8) */
    char data[32];              /* char: the text typed (UTF-8) */
    double width, height;       /* resize: logical size */
    double pixel_ratio;         /* resize */
} rcanvas_event;

/* Takes the oldest queued event into *out. Returns 1 if one was taken, 0 if the queue is empty, RCANVAS_EINVAL.
 * Consecutive pointer_move events (same buttons, modifiers, ntouches) and wheel events (same modifiers) are merged
 * while they wait, as rendercanvas does: a move keeps the newest position, wheels sum dx/dy. Resize events merge
 * too. The queue holds at most 1024 events; when full the oldest is dropped (logged). Any thread. */
RCANVAS_API int rcanvas_poll_event(rcanvas_canvas *canvas, rcanvas_event *out);

/* Name of an event type as in the spec ("pointer_down", …), or "unknown". */
RCANVAS_API const char *rcanvas_event_type_name(rcanvas_event_type type);


/* ---- RTP output (issue 20) ---------------------------------------------------------------------------------
 * A canvas's H.264 or VP8 stream sent as plain RTP over UDP (RFC 3550) to one address, e.g. a Janus streaming
 * mountpoint (docs/sfu.md, "RTP output"), beside its WebSocket viewers. The output is a view-only viewer of the
 * canvas: it shares the encoder (tier) of its codec and rate rung with the WebSocket viewers there (one encode per
 * frame, not one more), never becomes the active viewer, never resizes the canvas, and counts in
 * rcanvas_canvas_viewer_count(). Its rate is configured, not measured (UDP has no acks): `kbps` is its link target,
 * so it shares a tier with WebSocket viewers whose links fall in the same rung and never pulls those of another rung
 * up or down. RTP goes to host:port and an RTCP sender report (RFC 3550 §6.4.1) to host:port+1 about once a
 * second, both from one local UDP socket; a PLI (RFC 4585 §6.3.1) or FIR (RFC 5104 §4.3.1) sent back to that socket
 * (Janus's videortcpport answers to where the RTCP came from) from the host's address asks for a keyframe. */
typedef struct rcanvas_rtp_output rcanvas_rtp_output;

typedef struct rcanvas_rtp_config {
    const char *host;           /* where to send: an IPv4/IPv6 literal or a name that resolves (the first address);
                                   required */
    int port;                   /* RTP port, 1–65534 (RTCP goes to port + 1); required */
    rcanvas_codec codec;        /* RCANVAS_CODEC_H264 (default) or RCANVAS_CODEC_VP8, if built in */
    int payload_type;           /* RTP payload type, 96–127 (dynamic, RFC 3551 §6); default 96 */
    int mtu;                    /* the most RTP payload bytes a packet carries (the FU-A or VP8 fragment size),
                                   RC_RTP_MTU_MIN 64 – 65000; default 1200 (below a 1500-byte path with headers) */
    int kbps;                   /* the rate the output's frames aim at, kbit/s, 100–200000; default 4000 */
    uint32_t ssrc;              /* RTP SSRC; 0 (default) = random (getrandom) */
    int keyframe_ms;            /* a keyframe at least every this many ms, 0–3600000; default 0 = only when a PLI or
                                   FIR asks (set it when the receiver sends no RTCP) */
} rcanvas_rtp_config;

/* The defaults above; host NULL and port 0, which the caller must set. NULL ignored. */
RCANVAS_API void rcanvas_rtp_config_init(rcanvas_rtp_config *cfg);

/* Starts an RTP output of canvas: resolves host, binds a UDP socket on the local address that reaches it (port
 * chosen by the system) and starts the output's thread; frames go out as the canvas encodes them. The first one is
 * a keyframe, with its SPS and PPS in band for H.264 (every IDR carries them). Returns RCANVAS_OK and *out;
 * RCANVAS_EINVAL (NULL argument, a field out of range, codec neither H.264 nor VP8), RCANVAS_ECODEC (this build
 * has no encoder for the codec), RCANVAS_ENET (host does not resolve, or no socket/route to it), RCANVAS_ECLOSED
 * (the canvas is closing), RCANVAS_ENOMEM, RCANVAS_ETHREAD. Any thread. The output lives until
 * rcanvas_rtp_output_free, rcanvas_canvas_free or rcanvas_server_free, whichever comes first. */
RCANVAS_API int rcanvas_canvas_add_rtp_output(rcanvas_canvas *canvas, const rcanvas_rtp_config *cfg,
                                              rcanvas_rtp_output **out);

/* Stops and frees an output: its thread ends, its socket closes (no BYE is sent). NULL ignored. Any thread, not
 * after its canvas was freed (rcanvas_canvas_free and rcanvas_server_free free their canvases' outputs). */
RCANVAS_API void rcanvas_rtp_output_free(rcanvas_rtp_output *out);

/* What an output has done so far. */
typedef struct rcanvas_rtp_stats {
    uint32_t ssrc;              /* its SSRC */
    int local_port;             /* the UDP port it sends from and reads RTCP on */
    uint64_t packets;           /* RTP packets sent */
    uint64_t octets;            /* RTP payload bytes sent (headers not counted, as in the SR, RFC 3550 §6.4.1) */
    uint64_t frames;            /* frames (access units) sent */
    uint64_t keyframes;         /* ... of which keyframes (IDR, VP8 key frames) */
    uint64_t skipped;           /* packets of the session not sent: another codec (its tier fell back to JPEG) */
    uint64_t send_errors;       /* RTP packets the socket refused (sendmsg failed) */
    uint64_t sr_sent;           /* RTCP sender reports sent */
    uint64_t rtcp_received;     /* RTCP datagrams read (from the host's address) */
    uint64_t rtcp_bad;          /* ... of which malformed, or from another address: ignored */
    uint64_t pli, fir;          /* PLIs and new FIR requests for its SSRC */
    size_t max_payload;         /* the largest RTP payload sent, bytes (at most mtu) */
} rcanvas_rtp_stats;
/* Copies the counters into *stats. RCANVAS_OK, or RCANVAS_EINVAL (NULL). Any thread. */
RCANVAS_API int rcanvas_rtp_output_stats(rcanvas_rtp_output *out, rcanvas_rtp_stats *stats);

/* ---- GPU frames (Vulkan) ------------------------------------------------------------------------------------
 * rcanvas_present_vk() and the readback ring are declared in <rcanvas_vk.h> (it includes <vulkan/vulkan.h>).
 * A program that only presents CPU frames needs neither that header nor -lvulkan. */


#ifdef __cplusplus
}
#endif
#endif /* RCANVAS_H */
