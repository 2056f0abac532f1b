/* SPDX-License-Identifier: MIT */
/*
 * codec.h — the codec interface: every encoder rcanvas has (JPEG through libturbojpeg, PNG through libspng, the
 * JPEG encoder in Vulkan compute shaders) is one rc_codec_type, a table of functions in the style of Redis'
 * ConnectionType or libuv's backends, listed once in codec.c. Adding a codec means its own file plus one line in
 * that table (and, for a new wire id, a row of rcanvas.h's RCANVAS_CODECS and the client's decoder). Encoders are
 * named apart from the wire codec they produce (FFmpeg's AVCodec .name and .id): "h264" (openh264) and "h264-gpu"
 * are two encoders of wire codec H264, and an app chooses the second by its name (rcanvas_canvas_set_encoder).
 *
 * In: an image view (pixels, width, height, row pitch, pixel format) and the canvas's codec options.
 * Out: compressed bytes appended to an rc_buf, and what the stream needs to know about them (keyframe or not).
 * Nothing here knows the wire format or the transport: the transport frames packets when it sends them.
 *
 * Threading: a codec instance is used by one thread at a time. Intra-only, stripe-parallel codecs (JPEG, PNG)
 * keep one instance per encoder worker (rc_worker_codec); a stateful codec (video, later) has one instance per
 * stream, owned by the canvas.
 */
#ifndef RC_CODEC_H
#define RC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/pool.h"
#include "rcanvas.h"

/* A read-only view of pixels; rows at pixels + r × pitch. Formats as rcanvas_pixel_format, 4 bytes per pixel. */
typedef struct rc_image {
    const uint8_t *pixels;
    uint32_t width, height;
    size_t pitch;
    rcanvas_pixel_format format;
    /* optional: the same pixels in a buffer on a Vulkan device (codec/gpu/gpu_device.h's rc_gpu_frame), which a
     * GPU encoder on that device reads instead of uploading them; NULL: none. A view of part of the image, or
     * of other pixels, must not keep it. */
    const struct rc_gpu_frame *gpu;
} rc_image;

/* The canvas's codec options (set with rcanvas_canvas_set_option). A codec reads those it knows. */
typedef struct rc_encode_params {
    rcanvas_codec codec;
    int quality;                     /* JPEG, WebP 1–100 */
    rcanvas_subsampling subsampling; /* JPEG (AUTO: per image, rc_jpeg_auto_subsampling) */
    int bitrate_kbps;                /* video: target bitrate, kbit/s */
    int keyframe_interval;           /* video: frames between periodic keyframes, 0 = none */
    int threads;                     /* video: encoder threads (≥ 1) */
    double fps;                      /* video: expected frame rate (rate control), > 0 */
    int paint;                       /* video: 1 = a paint-over of a still frame: the codec codes it
                                      * at its fixed high quality (h264: H264_PAINT_QP) instead of the rate
                                      * control's, as a P-frame; 0 = live (the rate control's); codecs that do
                                      * not know it ignore it */
    int screen;                      /* video: 1 = screen content (text, thin lines: rc_image_fine_detail): a
                                      * codec with a mode for it codes the frames in it (h264: openh264's
                                      * SCREEN_CONTENT_REAL_TIME, whose scroll detection finds a terminal's 36 px
                                      * a frame, made anew on a change: a keyframe; vp9: VP9E_CONTENT_SCREEN, set
                                      * on the running encoder); other codecs ignore it */
} rc_encode_params;

/* RCANVAS_SUBSAMP_AUTO's choice for img: RCANVAS_SUBSAMP_444 where 4:2:0 would lose colour detail, else _420
 * (src/codec/jpeg.c explains the measure). Reads the pixels once at most; any thread. */
int rc_jpeg_auto_subsampling(const rc_image *img);

/* rc_codec_type.flags */
#define RC_CODEC_INTRA 0x1u    /* every packet is a keyframe: it depends on no other packet */
#define RC_CODEC_STRIPES 0x2u  /* a frame may be cut into horizontal stripes, each encoded on its own */
#define RC_CODEC_STATEFUL 0x4u /* packets depend on earlier ones: one instance per stream, keyframes on request */
#define RC_CODEC_GPU 0x8u      /* runs on a Vulkan device: instances are made by the frame source, not per worker */
#define RC_CODEC_LOSSLESS 0x10u
#define RC_CODEC_ONE_THREAD 0x20u /* by default one encoder thread (RCANVAS_OPT_ENCODER_THREADS may ask for more) */
#define RC_CODEC_PAINT 0x40u   /* stateful: knows rc_encode_params.paint (a still frame re-coded sharper as a P-frame) */
#define RC_CODEC_SCREEN 0x80u  /* video: knows rc_encode_params.screen (a mode for text and thin lines) */
#define RC_CODEC_ALT 0x100u    /* another encoder of its wire codec than the default (rc_codec_for), chosen by its name
                                * (rcanvas_canvas_set_encoder); where it cannot run, the canvas falls back to the
                                * default */

typedef struct rc_codec rc_codec;
typedef struct rc_codec_type rc_codec_type;

/* What an encode produced besides the bytes. */
typedef struct rc_encode_info {
    int keyframe; /* 1: decodable alone */
} rc_encode_info;

struct rc_codec_type {
    const char *name;      /* "jpeg", "png", "jpeg-gpu": the encoder, as viewers are told in "encoder" messages */
    uint8_t wire_id;       /* the codec byte of the frame header: which decoder the client uses (rcanvas_codec) */
    const char *webcodecs; /* video: the WebCodecs codec string the client configures its decoder with; else NULL */
    unsigned flags;        /* RC_CODEC_* */
    /* Creates an instance. RCANVAS_OK, RCANVAS_ENOMEM, RCANVAS_ECODEC (library refused; message in *out's error
     * when *out is set), RCANVAS_EINVAL (this codec is not made this way, e.g. GPU codecs). */
    int (*create)(const rc_codec_type *type, rc_codec **out);
    /* Why the last create failed, for the log ("no device": a GPU codec's), or NULL where the code says it all. */
    const char *(*create_error)(void);
    /* Appends one encoded image to out. RCANVAS_OK, RCANVAS_EINVAL, RCANVAS_ENOMEM, RCANVAS_ECODEC. */
    int (*encode)(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out, rc_encode_info *info);
    /* The next packet is a keyframe (a viewer joined or skipped). NULL for intra-only codecs. */
    void (*request_keyframe)(rc_codec *c);
    void (*destroy)(rc_codec *c);
};

/* The common head of every instance. */
struct rc_codec {
    const rc_codec_type *type;
    char err[160]; /* last library message, "" if none */
};

/* The table. */
extern const rc_codec_type rc_codec_jpeg, rc_codec_png, rc_codec_jpeg_gpu;
extern const rc_codec_type rc_codec_h264, rc_codec_vp8, rc_codec_vp9, rc_codec_webp;
/* The lossless WebP for the refinement: wire id RCANVAS_CODEC_WEBP like rc_codec_webp, which rc_codec_for returns. */
extern const rc_codec_type rc_codec_webp_lossless;
extern const rc_codec_type rc_codec_av1;
/* JPEG an app encoded itself (rcanvas_present_encoded): "jpeg-wgpu" (rcanvas.jpeg_wgpu, on the app's wgpu
 * device) and "jpeg-app" (any other); no create (rcanvas never runs them), not in the table. */
extern const rc_codec_type rc_codec_jpeg_wgpu, rc_codec_jpeg_app;
/* 1 if d[0..n) is a baseline JPEG of w × h (SOI, SOF0 of that size before SOS, EOI; not the entropy-coded data). */
int rc_jpeg_check_baseline(const uint8_t *d, size_t n, uint32_t w, uint32_t h);
/* H.264 in Vulkan compute shaders (codec/gpu/h264_gpu.h): instances come from rc_gpu_h264_new, not create(). */
extern const rc_codec_type rc_codec_h264_gpu;

/* The default encoder of a public rcanvas_codec, a CPU one (JPEG → libturbojpeg, PNG → libspng), or NULL. */
const rc_codec_type *rc_codec_for(rcanvas_codec codec);
/* A codec by name ("jpeg", "png", "jpeg-gpu"), or NULL. */
const rc_codec_type *rc_codec_by_name(const char *name);
/* The encoders a canvas can be given by name: the wire codecs' defaults and the RC_CODEC_ALT ones, i = 0, 1, …
 * (NULL past the last), in the table's order. */
const rc_codec_type *rc_codec_live(int i);
/* t's place in the table (0 to RC_CODEC_MAX − 1: its bit in a canvas's set of failed encoders), or −1. */
int rc_codec_index(const rc_codec_type *t);
#define RC_CODEC_MAX 32
/* Adds t to the table (after the built-in ones), for a test's own codec: RCANVAS_OK, or RCANVAS_EINVAL (NULL, a
 * name taken, the table full). Before any canvas exists; not thread-safe. */
int rc_codec_register(const rc_codec_type *t);

/* Generic entry points (argument checks, then the type's function). Errors as in rc_codec_type. */
int rc_codec_new(const rc_codec_type *type, rc_codec **out);
int rc_codec_encode(rc_codec *c, const rc_image *img, const rc_encode_params *p, rc_buf *out, rc_encode_info *info);
void rc_codec_request_keyframe(rc_codec *c);
void rc_codec_free(rc_codec *c);
const char *rc_codec_error(const rc_codec *c);
/* What a failed create leaves to say: type's create_error, else "encoder creation failed". Never NULL. */
const char *rc_codec_create_error(const rc_codec_type *type);

/* The worker's instance of an intra-only CPU codec, created on first use and kept for the worker's life (so jobs
 * never create library handles), or NULL if creation failed. Worker thread only. */
rc_codec *rc_worker_codec(rc_worker *w, const rc_codec_type *type);

/* Bytes per pixel of a format (4), or 0 for an unknown one. */
static inline unsigned rc_format_bpp(rcanvas_pixel_format f) {
    return (f == RCANVAS_FORMAT_RGBA8 || f == RCANVAS_FORMAT_BGRA8 || f == RCANVAS_FORMAT_RGBX8) ? 4u : 0u;
}

/* ---- compatibility for tools and tests: one instance of a public codec ---- */
typedef rc_codec rc_encoder;
static inline int rc_encoder_new(rcanvas_codec codec, rc_encoder **out) {
    const rc_codec_type *t = rc_codec_for(codec);
    if (!t) {
        if (out) *out = NULL;
        return RCANVAS_EINVAL;
    }
    return rc_codec_new(t, out);
}
static inline void rc_encoder_free(rc_encoder *e) { rc_codec_free(e); }
static inline int rc_encoder_encode(rc_encoder *e, const rc_image *img, const rc_encode_params *p, rc_buf *out) {
    if (e && p && rc_codec_for(p->codec) != e->type) return RCANVAS_EINVAL;
    return rc_codec_encode(e, img, p, out, NULL);
}
static inline const char *rc_encoder_error(const rc_encoder *e) { return rc_codec_error(e); }

#endif
