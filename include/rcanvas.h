/*
 * rcanvas.h — the one public header of rcanvas: a live canvas, rendered by a C program on the CPU (or, later, a GPU),
 * shown in any web browser over WebSockets, with input events sent back.
 *
 * Data path: rcanvas_present() copies a frame → a pool of encoder threads encodes it (JPEG through libturbojpeg,
 * PNG through libspng) in horizontal stripes → the network thread (libwebsockets) sends the newest encoded frame to
 * each viewer whose flow-control window allows → the browser client draws it and acks it → events (pointer, wheel,
 * keys, resize) come back as JSON and queue up for the app.
 *
 * Conventions (see docs/architecture.md for the thread model):
 *  - Every function that can fail returns int: RCANVAS_OK (0) or a negative rcanvas_error; rcanvas_strerror() names it.
 *  - Handles are opaque. Structs passed in are copied; strings in them are copied too.
 *  - Sizes are in pixels, pitches in bytes, times in microseconds (µs) or milliseconds (ms) as named.
 *  - The library never prints: it logs through the callback in rcanvas_server_config.
 */
#ifndef RCANVAS_H
#define RCANVAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RCANVAS_VERSION_MAJOR 0
#define RCANVAS_VERSION_MINOR 1
#define RCANVAS_PROTOCOL_VERSION 1

/* ---- Errors ------------------------------------------------------------------------------------------------ */

typedef enum rcanvas_error {
    RCANVAS_OK = 0,
    RCANVAS_EINVAL = -1,       /* an argument is invalid (NULL handle, out-of-range value) */
    RCANVAS_ENOMEM = -2,       /* an allocation failed */
    RCANVAS_EFRAME_SIZE = -3,  /* frame width/height is 0 or larger than the configured maximum */
    RCANVAS_EPITCH = -4,       /* row pitch is smaller than width × bytes per pixel */
    RCANVAS_EFORMAT = -5,      /* unknown pixel format */
    RCANVAS_ENULL = -6,        /* NULL pixel pointer */
    RCANVAS_ENET = -7,         /* the server could not listen (bad host, port not permitted; logged) */
    RCANVAS_ETHREAD = -8,      /* a thread could not be started */
    RCANVAS_ECODEC = -9,       /* an encoder (libturbojpeg, libspng) reported an error */
    RCANVAS_ECLOSED = -10,     /* the server or canvas is shutting down */
    RCANVAS_EEXIST = -11,      /* a canvas with that name exists already */
    RCANVAS_ENAME = -12,       /* canvas name not made of [A-Za-z0-9_-], or longer than 64 bytes */
    RCANVAS_EIO = -13,         /* reading or writing a file failed (tools) */
    RCANVAS_EBUSY = -14,       /* every frame slot (or staging buffer of the readback ring) is in use: the frame
                                  was not taken; present a later frame */
    RCANVAS_EDEVICE_LOST = -15,/* the Vulkan device was lost; the rcanvas_vk must be freed */
    RCANVAS_EVULKAN = -16,     /* another Vulkan error (out of device/host memory, unsupported device) */
    RCANVAS_EADDRINUSE = -17,  /* the server could not listen: another socket has that host and port */
} rcanvas_error;

/* Returns a static English description of an rcanvas_error (or "unknown error"). Any thread. */
const char *rcanvas_strerror(int err);

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

/* ---- Server ------------------------------------------------------------------------------------------------ */

typedef struct rcanvas_server rcanvas_server;
typedef struct rcanvas_canvas rcanvas_canvas;

typedef struct rcanvas_server_config {
    const char *host;             /* address to bind; default "127.0.0.1" (loopback only) */
    int port;                     /* TCP port; default 8080; 0 = any free port (read it back: rcanvas_server_port) */
    const char *token;            /* access token, [A-Za-z0-9_-], 8–128 bytes; NULL (default) = 128 random bits,
                                     hex (32 characters) from getrandom(2) */
    const char *const *allowed_origins; /* extra Origin values accepted on the WebSocket upgrade, e.g.
                                     "https://notebook.example.org"; the server's own origin (same Host) is always
                                     accepted; default NULL */
    int n_allowed_origins;
    int max_viewers;              /* simultaneous WebSocket viewers over all canvases; default 16 */
    size_t max_message_bytes;     /* largest client→server message (bytes); larger closes the connection with
                                     1009; default 4096 */
    int max_bad_messages;         /* malformed client messages tolerated per connection before it is closed
                                     with 1008 (each is dropped with a log line); default 20 */
    int encode_threads;           /* encoder worker threads; 0 (default) = number of online cores */
    uint32_t max_frame_dim;       /* largest frame width or height accepted (pixels); default 8192 */
    rcanvas_log_fn log;           /* default NULL = no logging */
    void *log_user;
    rcanvas_log_level log_level;  /* most verbose level passed to log; default RCANVAS_LOG_INFO */
} rcanvas_server_config;

/* Fills *cfg with the defaults above. */
void rcanvas_server_config_init(rcanvas_server_config *cfg);

/* Creates a server, binds and listens, and starts its network thread and encoder threads.
 * Returns RCANVAS_OK and *out, or RCANVAS_EINVAL (bad config; a refused token is logged with the rule),
 * RCANVAS_EADDRINUSE (the port is taken on that host: another server listens there), RCANVAS_ENET (cannot listen
 * for another reason, e.g. an address not of this machine or a port below 1024 without privilege; logged),
 * RCANVAS_ENOMEM, RCANVAS_ETHREAD. Call from any thread; one server is independent of another. */
int rcanvas_server_new(const rcanvas_server_config *cfg, rcanvas_server **out);

/* Stops the network thread (closing every viewer with 1001 "going away") and the encoder threads, frees all
 * canvases still attached, and frees the server. Blocks until every thread has joined (typically < 50 ms).
 * Any rcanvas_wait() blocked on one of its canvases returns RCANVAS_ECLOSED before the canvas is freed, so the
 * app must stop calling into those canvases first (join its render threads). NULL is ignored. */
void rcanvas_server_free(rcanvas_server *server);

/* The TCP port actually bound (useful with port 0). */
int rcanvas_server_port(const rcanvas_server *server);

/* The access token (NUL-terminated, owned by the server). */
const char *rcanvas_server_token(const rcanvas_server *server);

/* Writes the URL of a canvas ("http://HOST:PORT/[c/NAME]?token=TOKEN") into buf (cap bytes, NUL-terminated).
 * name NULL or "" = the default canvas. Returns the length, or RCANVAS_EINVAL if cap is too small. */
int rcanvas_server_url(const rcanvas_server *server, const char *name, char *buf, size_t cap);

/* ---- Canvases ---------------------------------------------------------------------------------------------- */

/* When a draw is due (rcanvas_wait). Same modes as rendercanvas. */
typedef enum rcanvas_update_mode {
    RCANVAS_UPDATE_MANUAL = 0,     /* never due; the app presents when it likes */
    RCANVAS_UPDATE_ONDEMAND = 1,   /* due after rcanvas_request_draw(), a resize, or a first viewer; ≤ max_fps */
    RCANVAS_UPDATE_CONTINUOUS = 2, /* due every 1/max_fps s while a viewer watches and flow control allows */
    RCANVAS_UPDATE_FASTEST = 3,    /* due whenever flow control allows; max_fps ignored */
} rcanvas_update_mode;

typedef enum rcanvas_codec {
    RCANVAS_CODEC_JPEG = 1, /* libturbojpeg; lossy; quality and subsampling apply */
    RCANVAS_CODEC_PNG = 2,  /* libspng; lossless; RGB8, filter none, zlib level 1 */
} rcanvas_codec;

typedef enum rcanvas_subsampling {
    RCANVAS_SUBSAMP_420 = 0, /* chroma halved both ways (smallest, default) */
    RCANVAS_SUBSAMP_444 = 1, /* full chroma (sharp colored text and lines) */
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
    rcanvas_subsampling subsampling; /* JPEG chroma subsampling; default RCANVAS_SUBSAMP_420 */
    int refine_ms;             /* after this many ms without a new frame, the last frame is sent again as PNG to
                                  each viewer that has only its lossy version; 0 = never; default 300 */
} rcanvas_canvas_config;

/* Fills *cfg with the defaults above. */
void rcanvas_canvas_config_init(rcanvas_canvas_config *cfg);

/* Adds a canvas to the server. Returns RCANVAS_OK and *out, RCANVAS_EINVAL (bad config value), RCANVAS_ENAME,
 * RCANVAS_EEXIST, RCANVAS_ENOMEM. Any thread. The canvas lives until rcanvas_canvas_free() or the server's free. */
int rcanvas_canvas_new(rcanvas_server *server, const rcanvas_canvas_config *cfg, rcanvas_canvas **out);

/* Detaches the canvas (its viewers are closed with 1001) and frees it. Waits for its encodes to finish. NULL is
 * ignored. No other thread may be inside a call on this canvas. */
void rcanvas_canvas_free(rcanvas_canvas *canvas);

/* Sets the title (≤ 255 bytes UTF-8; longer is cut at a character boundary); viewers are told at once. */
int rcanvas_canvas_set_title(rcanvas_canvas *canvas, const char *title);

/* Changes the codec and its parameters for the following frames (quality 1–100). Any thread. */
int rcanvas_canvas_set_codec(rcanvas_canvas *canvas, rcanvas_codec codec, int quality, rcanvas_subsampling ss);

/* Size the app should render at: the active viewer's logical size (CSS pixels), its devicePixelRatio, and the
 * physical size = round(logical × ratio), clamped to max_frame_dim. Any thread. */
typedef struct rcanvas_size {
    double width, height;      /* logical */
    double pixel_ratio;
    uint32_t physical_width, physical_height;
} rcanvas_size;
void rcanvas_canvas_get_size(rcanvas_canvas *canvas, rcanvas_size *out);

/* Number of viewers connected to this canvas right now. Any thread. */
int rcanvas_canvas_viewer_count(rcanvas_canvas *canvas);

/* ---- Frames in --------------------------------------------------------------------------------------------- */

typedef enum rcanvas_pixel_format {
    RCANVAS_FORMAT_RGBA8 = 1, /* bytes R,G,B,A; alpha ignored (frames are shown opaque) */
    RCANVAS_FORMAT_BGRA8 = 2, /* bytes B,G,R,A */
    RCANVAS_FORMAT_RGBX8 = 3, /* bytes R,G,B,unused */
} rcanvas_pixel_format;

/* A CPU frame: width × height pixels, row r starting at pixels + r × pitch. */
typedef struct rcanvas_frame {
    const void *pixels;
    uint32_t width, height;        /* pixels, 1..max_frame_dim */
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
int rcanvas_present(rcanvas_canvas *canvas, const rcanvas_frame *frame);

/* ---- Scheduling -------------------------------------------------------------------------------------------- */

/* Bits returned by rcanvas_wait(). */
#define RCANVAS_WAKE_DRAW 1   /* a draw is due: render and rcanvas_present() now */
#define RCANVAS_WAKE_EVENTS 2 /* events are queued: drain them with rcanvas_poll_event() */

/* Blocks until a draw is due or events are queued, at most timeout_ms (−1 = no limit, 0 = just check).
 * Returns a mask of RCANVAS_WAKE_* (a returned draw is consumed: the next call waits for the next one), 0 on
 * timeout, or RCANVAS_ECLOSED once the server is stopping. A draw is due per the update mode and max_fps, only
 * while at least one viewer is connected, and only while the active viewer holds fewer than max_in_flight
 * frames that it has not acked (frames still encoding count as in flight). The app's render loop is:
 *     for (;;) { int w = rcanvas_wait(c, -1); if (w < 0) break;
 *                while (rcanvas_poll_event(c, &ev) == 1) handle(&ev);
 *                if (w & RCANVAS_WAKE_DRAW) { render(); rcanvas_present(c, &frame); } }
 * One thread at a time per canvas. */
int rcanvas_wait(rcanvas_canvas *canvas, int timeout_ms);

/* Asks for a draw (ONDEMAND mode; in MANUAL mode it is ignored). Any thread; wakes rcanvas_wait(). */
void rcanvas_request_draw(rcanvas_canvas *canvas);

/* ---- Events (renderview spec, as in rendercanvas / jupyter_rfb) ------------------------------------------- */

typedef enum rcanvas_event_type {
    RCANVAS_EVENT_POINTER_DOWN = 1,
    RCANVAS_EVENT_POINTER_UP,
    RCANVAS_EVENT_POINTER_MOVE,
    RCANVAS_EVENT_POINTER_ENTER,
    RCANVAS_EVENT_POINTER_LEAVE,
    RCANVAS_EVENT_DOUBLE_CLICK,
    RCANVAS_EVENT_WHEEL,
    RCANVAS_EVENT_KEY_DOWN,
    RCANVAS_EVENT_KEY_UP,
    RCANVAS_EVENT_CHAR,
    RCANVAS_EVENT_RESIZE,
    RCANVAS_EVENT_CLOSE,
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
int rcanvas_poll_event(rcanvas_canvas *canvas, rcanvas_event *out);

/* Name of an event type as in the spec ("pointer_down", …), or "unknown". */
const char *rcanvas_event_type_name(rcanvas_event_type type);


/* ---- GPU frames (Vulkan) ------------------------------------------------------------------------------------
 * Declared when <vulkan/vulkan.h> is included before this header. A rcanvas_vk reads Vulkan images back into a
 * ring of host-visible staging buffers (host-cached memory where the device has it) and hands the mapped memory
 * straight to the canvas's encoders: no copy of the frame on the CPU. Link with -lvulkan.
 *
 * Queue access: rcanvas_present_vk() records and submits on the given queue from the calling thread and touches
 * the queue nowhere else (its readback thread only waits on fences). Vulkan requires queue submissions to be
 * externally synchronized, so the app must not submit on that queue from another thread during the call. */
#if defined(VK_VERSION_1_0)
typedef struct rcanvas_vk rcanvas_vk;

typedef struct rcanvas_vk_config {
    /* The app's objects; all NULL (default) = rcanvas creates its own instance and device (first discrete GPU,
     * else the first device; a queue family with compute), reachable through rcanvas_vk_device() & co. */
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family;
    VkQueue queue;
    /* Staging buffers in the ring (1..16). Each one in flight is a frame the viewer sees later when the network
     * is the bottleneck; flow control keeps at most max_in_flight + 1 of them busy with a well-behaved app, so
     * the default 4 never stalls the renderer and adds no latency beyond that. Depth 1 serializes GPU copy and
     * encode (no pipelining). */
    int ring_depth;
    /* Row pitch alignment of the staging buffers (bytes, power of two); 0 (default) = the device's
     * optimalBufferCopyRowPitchAlignment. */
    uint32_t row_pitch_alignment;
    int validation; /* own device only: enable VK_LAYER_KHRONOS_validation if installed and count its errors */
    int gpu_jpeg;   /* 1 (default): while the canvas's codec is JPEG, encode on the GPU (Vulkan compute, codec
                       "jpeg-gpu": plain baseline JPEG for the browser), one frame at a time; a frame that comes
                       while it is busy, or one it cannot take, is encoded on the CPU. The staged pixels still
                       serve the lossless refinement. 0 = CPU encoders only. */
} rcanvas_vk_config;

void rcanvas_vk_config_init(rcanvas_vk_config *cfg);

/* Creates the readback ring for one canvas. Returns RCANVAS_OK and *out, RCANVAS_EINVAL, RCANVAS_ENOMEM,
 * RCANVAS_ETHREAD or RCANVAS_EVULKAN (no usable device, or a Vulkan call failed; logged). Staging buffers are
 * allocated on first use and grow on resize only. Any thread. */
int rcanvas_vk_new(rcanvas_canvas *canvas, const rcanvas_vk_config *cfg, rcanvas_vk **out);

/* Waits for copies in flight (fences), returns the staging buffers once the encoders are done with them, stops
 * the readback thread, and frees everything rcanvas created (its own device too). Free it before its canvas.
 * It calls vkDeviceWaitIdle: no other thread may use the device's queues during the call. */
void rcanvas_vk_free(rcanvas_vk *vk);

/* The objects in use (the app's, or rcanvas's own). */
VkInstance rcanvas_vk_instance(const rcanvas_vk *vk);
VkPhysicalDevice rcanvas_vk_physical_device(const rcanvas_vk *vk);
VkDevice rcanvas_vk_device(const rcanvas_vk *vk);
VkQueue rcanvas_vk_queue(const rcanvas_vk *vk);
uint32_t rcanvas_vk_queue_family(const rcanvas_vk *vk);

typedef struct rcanvas_vk_frame {
    VkImage image;               /* created with VK_IMAGE_USAGE_TRANSFER_SRC_BIT, one mip level, one layer */
    VkFormat format;             /* R8G8B8A8 or B8G8R8A8, _UNORM or _SRGB (bytes are sent as they are) */
    uint32_t width, height;      /* pixels, 1..max_frame_dim */
    VkImageLayout layout;        /* the image's layout when the copy runs (after wait_semaphore) */
    VkImageLayout final_layout;  /* its layout after the copy; VK_IMAGE_LAYOUT_UNDEFINED (0) = same as layout */
    VkSemaphore wait_semaphore;  /* optional (VK_NULL_HANDLE): the copy waits for it */
    VkPipelineStageFlags wait_stage; /* stage that waits; 0 = VK_PIPELINE_STAGE_TRANSFER_BIT */
    VkSemaphore signal_semaphore;/* optional: signalled when the copy (and the layout change) is done */
    int64_t timestamp_us;        /* the app's time, optional */
} rcanvas_vk_frame;

/* Records the copy of f->image into a free staging buffer (with the layout transitions around it), submits it on
 * the queue and returns at once; the readback thread hands the buffer to the encoders when its fence signals.
 * Errors: RCANVAS_EINVAL (NULL, bad format or layout), RCANVAS_EFRAME_SIZE, RCANVAS_EBUSY (no free staging
 * buffer: nothing was submitted, the semaphores and the image are untouched — only when the app presents past
 * flow control or the ring is too shallow), RCANVAS_EDEVICE_LOST, RCANVAS_EVULKAN (out of memory growing a
 * staging buffer; the ring keeps working at the old size), RCANVAS_ECLOSED. One thread at a time per rcanvas_vk,
 * with the queue rule above. */
int rcanvas_present_vk(rcanvas_vk *vk, const rcanvas_vk_frame *f);

/* Validation-layer errors counted so far (own device with cfg.validation; else 0). */
int rcanvas_vk_validation_errors(const rcanvas_vk *vk);
#endif /* VK_VERSION_1_0 */

#ifdef __cplusplus
}
#endif
#endif /* RCANVAS_H */
