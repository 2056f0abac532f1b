/*
 * encoder.h — the encoder interface: one handle per codec per worker thread, reused across frames.
 * In: an image view (pixels, width, height, row pitch, pixel format). Out: compressed bytes appended to an rc_buf
 * (whose reserved head room the transport later fills with the WebSocket and frame headers).
 */
#ifndef RC_ENCODER_H
#define RC_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "rcanvas.h"
#include "core/buf.h"

/* A read-only view of pixels; rows at pixels + r × pitch. Formats as rcanvas_pixel_format, 4 bytes per pixel. */
typedef struct rc_image {
    const uint8_t *pixels;
    uint32_t width, height;
    size_t pitch;
    rcanvas_pixel_format format;
} rc_image;

typedef struct rc_encode_params {
    rcanvas_codec codec;
    int quality;                     /* JPEG 1–100 */
    rcanvas_subsampling subsampling; /* JPEG */
} rc_encode_params;

typedef struct rc_encoder rc_encoder;

/* Creates an encoder for one codec. Returns RCANVAS_OK, RCANVAS_EINVAL, RCANVAS_ENOMEM or RCANVAS_ECODEC. */
int rc_encoder_new(rcanvas_codec codec, rc_encoder **out);
void rc_encoder_free(rc_encoder *enc);

/* Encodes img, appending the compressed stream (a complete JPEG or PNG file) to out. The encoder keeps its
 * scratch memory between calls. Returns RCANVAS_OK, RCANVAS_EINVAL, RCANVAS_ENOMEM or RCANVAS_ECODEC (the
 * library's message is in rc_encoder_error()). Not thread-safe: one thread uses one encoder at a time. */
int rc_encoder_encode(rc_encoder *enc, const rc_image *img, const rc_encode_params *p, rc_buf *out);

/* The last library error message of this encoder ("" if none). */
const char *rc_encoder_error(const rc_encoder *enc);

/* Bytes per pixel of a format (4), or 0 for an unknown one. */
static inline unsigned rc_format_bpp(rcanvas_pixel_format f) {
    return (f == RCANVAS_FORMAT_RGBA8 || f == RCANVAS_FORMAT_BGRA8 || f == RCANVAS_FORMAT_RGBX8) ? 4u : 0u;
}

#endif
