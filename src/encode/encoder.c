/*
 * encoder.c — dispatch of the encoder interface to the codec implementations (jpeg.c, png.c).
 * Each codec keeps its library handle and scratch rows in its own struct behind rc_encoder.
 */
#include "encode/encoder.h"
#include "encode/codecs.h"

#include <stdlib.h>

int rc_encoder_new(rcanvas_codec codec, rc_encoder **out) {
    if (!out) return RCANVAS_EINVAL;
    *out = NULL;
    rc_encoder *e = calloc(1, sizeof(*e));
    if (!e) return RCANVAS_ENOMEM;
    e->codec = codec;
    int r;
    switch (codec) {
    case RCANVAS_CODEC_JPEG: r = rc_jpeg_init(e); break;
    case RCANVAS_CODEC_PNG: r = rc_png_init(e); break;
    default: r = RCANVAS_EINVAL; break;
    }
    if (r) {
        free(e);
        return r;
    }
    *out = e;
    return RCANVAS_OK;
}

void rc_encoder_free(rc_encoder *e) {
    if (!e) return;
    if (e->codec == RCANVAS_CODEC_JPEG) rc_jpeg_fini(e);
    else if (e->codec == RCANVAS_CODEC_PNG) rc_png_fini(e);
    free(e);
}

int rc_encoder_encode(rc_encoder *e, const rc_image *img, const rc_encode_params *p, rc_buf *out) {
    if (!e || !img || !p || !out || !img->pixels) return RCANVAS_EINVAL;
    if (img->width == 0 || img->height == 0 || !rc_format_bpp(img->format)) return RCANVAS_EINVAL;
    if (img->pitch < (size_t)img->width * 4) return RCANVAS_EINVAL;
    if (p->codec != e->codec) return RCANVAS_EINVAL;
    e->err[0] = '\0';
    return e->codec == RCANVAS_CODEC_JPEG ? rc_jpeg_encode(e, img, p, out) : rc_png_encode(e, img, out);
}

const char *rc_encoder_error(const rc_encoder *e) { return e ? e->err : ""; }
